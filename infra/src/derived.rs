//! The derived data of a deployment as one JSON object, read through the
//! [`Scan`] port (DynamoDB, or the in-memory store): what `streamdex show`
//! prints and `streamdex replay --dump json` includes.
//!
//! ```json
//! {"indexes": {"IssueAttribIndex": [{"pk": {"S": "..."}, "sk": {"S": "..."}, "name": {"S": "..."}}]},
//!  "edge_sets": {"records.edges": {"GOAL-7": {"members": ["..."], "edgesComplete": true}}}}
//! ```
//!
//! Rows are in key order (partition, then sort string), attribute values in
//! DynamoDB JSON (numbers exact); nodes in id order, members sorted, the
//! completeness marker as stored (`null` when absent).

use std::collections::BTreeMap;

use model::config::Config;
use model::edge::{self, GraphItem};
use model::index::RowKey;
use model::{Image, Value};
use serde_json::{json, Map, Value as Json};
use stream_indexer::store::scan::{Scan, Segment};
use stream_indexer::store::StoreError;

/// Items per Scan page.
const PAGE: u32 = 1000;

/// Every page of one whole-table scan.
async fn all<T, F, Fut>(mut page: F) -> Result<Vec<T>, StoreError>
where
    F: FnMut(Option<Image>) -> Fut,
    Fut: std::future::Future<Output = Result<stream_indexer::store::scan::Page<T>, StoreError>>,
{
    let mut out = Vec::new();
    let mut start = None;
    loop {
        let p = page(start.take()).await?;
        out.extend(p.items);
        match p.next {
            Some(next) => start = Some(next),
            None => return Ok(out),
        }
    }
}

/// The index rows and edge sets of `config`'s deployment (see the module doc).
pub async fn derived_json<S: Scan>(store: &S, config: &Config) -> Result<Json, StoreError> {
    let mut indexes = Map::new();
    for (i, index) in config.indexes.iter().enumerate() {
        let mut rows: Vec<(RowKey, Image)> = all(|start| store.scan_rows(i, Segment::WHOLE, start, PAGE)).await?;
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        let rows = rows
            .into_iter()
            .filter_map(|(key, attributes)| Some((key, model::version::live_row(attributes)?)))
            .map(|(key, attributes)| {
                let mut row: BTreeMap<String, Value> =
                    attributes.into_iter().map(|(n, v)| (n.into_string(), v)).collect();
                row.insert(index.partition_key.clone(), Value::S(key.partition));
                row.insert(index.sort_key.clone(), Value::S(key.sort));
                json!(row)
            })
            .collect();
        indexes.insert(index.table.clone(), Json::Array(rows));
    }
    let mut sets = Map::new();
    for set in &config.edge_sets {
        let Some(table) = config.table(&set.table) else {
            continue;
        };
        let items = all(|start| store.scan_items(&set.table, Segment::WHOLE, start, PAGE)).await?;
        let mut nodes: BTreeMap<String, Json> = BTreeMap::new();
        for item in &items {
            let Ok(GraphItem::Node { id }) = edge::classify(set, table, item) else {
                continue;
            };
            let mut members: Vec<&String> = match item.get(&set.attribute) {
                Some(Value::Ss(members)) => members.iter().collect(),
                _ => Vec::new(),
            };
            members.sort();
            let complete = match item.get(&set.complete_attribute) {
                Some(Value::Bool(b)) => Json::Bool(*b),
                _ => Json::Null,
            };
            nodes.insert(
                id.to_owned(),
                json!({ "members": members, set.complete_attribute.clone(): complete }),
            );
        }
        sets.insert(
            format!("{}.{}", set.table, set.attribute),
            Json::Object(nodes.into_iter().collect()),
        );
    }
    Ok(json!({ "indexes": indexes, "edge_sets": sets }))
}
