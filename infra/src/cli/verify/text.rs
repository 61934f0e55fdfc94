//! The drift report as text: counts by kind, examples, notices, what repair did.

use super::*;

/// `name=value` pairs of a key, sorted by name; S and N values bare.
pub fn key_text(key: &Image) -> String {
    let mut parts: Vec<(&str, &Value)> = key.iter().collect();
    parts.sort_by(|a, b| a.0.cmp(b.0));
    parts
        .into_iter()
        .map(|(k, v)| match v {
            Value::S(s) => format!("{k}={s:?}"),
            Value::N(n) => format!("{k}={n}"),
            other => format!("{k}={}", json!(other)),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Where a finding is, for people.
pub fn target_text(config: &Config, target: &Target) -> String {
    match target {
        Target::Row { index, key } => match config.indexes.get(*index) {
            Some(i) => format!(
                "{} {}={:?} {}={:?}",
                i.table, i.partition_key, key.partition, i.sort_key, key.sort
            ),
            None => format!("index #{index} {key:?}"),
        },
        Target::Node { edge_set, node } => match config.edge_sets.get(*edge_set) {
            Some(e) => format!("{}.{} node {node:?}", e.table, e.attribute),
            None => format!("edge set #{edge_set} node {node:?}"),
        },
    }
}

pub(super) fn correction_text(c: &Correction) -> String {
    match c {
        Correction::PutRow { attributes, .. } => format!("put the row with {}", key_text(attributes)),
        Correction::DeleteRow { .. } => "delete the row".to_owned(),
        Correction::AddMember { member, .. } => format!("add member {member:?}"),
        Correction::RemoveMember { member, .. } => format!("remove member {member:?}"),
        Correction::SetMarker { complete, .. } => format!("set the marker to {complete}"),
        Correction::RestoreSet { .. } => "restore the set from the node's partition".to_owned(),
    }
}

pub(super) fn write_text(
    config: &Config,
    report: &Report,
    repaired: Option<&RepairStats>,
    examples: usize,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let s = &report.scanned;
    writeln!(
        out,
        "scanned {} source items, {} index rows, {} nodes",
        s.items, s.rows, s.nodes
    )?;
    let counts = report.counts();
    if report.is_clean() {
        writeln!(out, "no drift")?;
    } else {
        writeln!(out, "drift: {} findings", report.findings.len())?;
    }
    for kind in DriftKind::ALL {
        let n = counts.get(&kind).copied().unwrap_or(0);
        writeln!(out, "  {:<17} {n:>8}  {}", kind.as_str(), kind.describe())?;
        for f in report.findings.iter().filter(|f| f.kind == kind).take(examples) {
            let from = f
                .source
                .as_ref()
                .map(|k| format!(" (item {})", key_text(k)))
                .unwrap_or_default();
            writeln!(
                out,
                "      {}{from}: {}",
                target_text(config, &f.correction.target()),
                correction_text(&f.correction)
            )?;
            if let Some(found) = &f.found {
                writeln!(out, "        found {}", key_text(found))?;
            }
        }
    }
    let notices = report.notice_counts();
    if !notices.is_empty() {
        writeln!(out, "notices (not drift):")?;
        for (kind, n) in &notices {
            writeln!(out, "  {:<17} {n:>8}", kind.as_str())?;
            for notice in report.notices.iter().filter(|x| x.kind == *kind).take(examples) {
                writeln!(
                    out,
                    "      {} item {}: {}",
                    notice.about,
                    key_text(&notice.key),
                    notice.detail
                )?;
            }
        }
    }
    if let Some(r) = repaired {
        writeln!(
            out,
            "repaired: {} corrections written ({} items, {} requests), {} skipped (changed since the scan), \
             {} lost to newer stream writes, {} nodes gone",
            r.written.total(),
            r.items_written,
            r.requests,
            r.skipped,
            r.stale,
            r.node_missing
        )?;
        if r.skipped > 0 || r.stale > 0 {
            writeln!(out, "run verify again: the data changed under some findings")?;
        }
    }
    Ok(())
}
