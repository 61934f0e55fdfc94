//! The drift report as JSON (`--output json`).

use super::*;

pub(super) fn image_json(image: &Image) -> Json {
    let sorted: BTreeMap<&str, &Value> = image.iter().collect();
    json!(sorted)
}

/// A finding as JSON: kind, target, correction, source item key, what was found.
pub fn finding_json(config: &Config, f: &Finding) -> Json {
    let mut o = Map::new();
    o.insert("kind".into(), f.kind.as_str().into());
    o.insert("target".into(), target_json(config, &f.correction.target()));
    let mut c = Map::new();
    c.insert("action".into(), f.correction.kind().into());
    match &f.correction {
        Correction::PutRow { attributes, .. } => {
            c.insert("attributes".into(), image_json(attributes));
        }
        Correction::AddMember { member, .. } | Correction::RemoveMember { member, .. } => {
            c.insert("member".into(), member.clone().into());
        }
        Correction::SetMarker { complete, .. } => {
            c.insert("complete".into(), (*complete).into());
        }
        Correction::DeleteRow { .. } | Correction::RestoreSet { .. } => {}
    }
    o.insert("correction".into(), Json::Object(c));
    if let Some(source) = &f.source {
        o.insert("source".into(), image_json(source));
    }
    if let Some(found) = &f.found {
        o.insert("found".into(), image_json(found));
    }
    Json::Object(o)
}

pub(super) fn target_json(config: &Config, target: &Target) -> Json {
    match target {
        Target::Row { index, key } => {
            let i = config.indexes.get(*index);
            json!({
                "index": i.map(|i| i.name.clone()),
                "table": i.map(|i| i.table.clone()),
                "partition": key.partition,
                "sort": key.sort,
            })
        }
        Target::Node { edge_set, node } => {
            let e = config.edge_sets.get(*edge_set);
            json!({
                "table": e.map(|e| e.table.clone()),
                "attribute": e.map(|e| e.attribute.clone()),
                "node": node,
            })
        }
    }
}

pub(super) fn notice_json(n: &Notice) -> Json {
    json!({ "kind": n.kind.as_str(), "about": n.about, "key": image_json(&n.key), "detail": n.detail })
}

/// The whole report as JSON (see `--output json`).
pub fn report_json(config: &Config, report: &Report, repaired: Option<&RepairStats>, examples: usize) -> Json {
    let counts: Map<String, Json> = report
        .counts()
        .into_iter()
        .map(|(k, n)| (k.as_str().to_owned(), n.into()))
        .collect();
    let mut by_kind = Map::new();
    for kind in DriftKind::ALL {
        let list: Vec<Json> = report
            .findings
            .iter()
            .filter(|f| f.kind == kind)
            .take(examples)
            .map(|f| finding_json(config, f))
            .collect();
        if !list.is_empty() {
            by_kind.insert(kind.as_str().to_owned(), Json::Array(list));
        }
    }
    let notice_counts: Map<String, Json> = report
        .notice_counts()
        .into_iter()
        .map(|(k, n)| (k.as_str().to_owned(), n.into()))
        .collect();
    let mut notices = Map::new();
    for kind in report.notice_counts().into_keys() {
        let list: Vec<Json> = report
            .notices
            .iter()
            .filter(|n| n.kind == kind)
            .take(examples)
            .map(notice_json)
            .collect();
        notices.insert(kind.as_str().to_owned(), Json::Array(list));
    }
    let mut o = json!({
        "clean": report.is_clean(),
        "scanned": {
            "items": report.scanned.items,
            "rows": report.scanned.rows,
            "nodes": report.scanned.nodes,
        },
        "findings": report.findings.len(),
        "counts": counts,
        "examples": by_kind,
        "notice_counts": notice_counts,
        "notices": notices,
    });
    if let (Some(r), Some(map)) = (repaired, o.as_object_mut()) {
        map.insert("repair".into(), repair_json(r));
    }
    o
}

/// Repair statistics as JSON.
pub fn repair_json(r: &RepairStats) -> Json {
    let written: Map<String, Json> = DriftKind::ALL
        .iter()
        .map(|k| (k.as_str().to_owned(), r.written.get(*k).into()))
        .collect();
    json!({
        "written": r.written.total(),
        "written_by_kind": written,
        "skipped": r.skipped,
        "stale": r.stale,
        "node_missing": r.node_missing,
        "items_written": r.items_written,
        "requests": r.requests,
    })
}
