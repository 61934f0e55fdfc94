//! The TTL reaper's decisions: which node an expiry event names, where its
//! edges are, and which items to delete. Pure; `event-router`'s reaper reads
//! and deletes.
//!
//! A route with `reap = true` sends its events (removed or expired nodes of
//! a table with an edge set) to the reaper. For the node `N` (partition key
//! value = sort key value = `N`) the reaper deletes:
//!
//! - its **out-edges**: every other item of partition `N` (a Query);
//! - its **in-edges** of the included edge types: for each type `T`, the
//!   items whose sort key is `T-N` (a Query of the edge set's
//!   `target_index`, the GSI keyed by the sort key).
//!
//! Those deletes flow through the stream like any delete, so the indexer
//! removes the members from the edge sets of the nodes on the other side.
//! A node that exists again (written after it expired) is left alone: the
//! event is stale. Deleting is idempotent, so a redelivered event finds
//! nothing more to delete.

use serde::Deserialize;

use crate::config::{Config, EdgeSetConfig, TableConfig};
use crate::edge::{self, GraphItem};
use crate::value::Image;

/// The node an event asks to reap.
#[derive(Debug, Clone, PartialEq)]
pub struct Reap {
    /// The source table.
    pub table: String,
    /// The node's id: its partition (and sort) key value.
    pub node: String,
    /// The node's primary key.
    pub key: Image,
    /// The stream record the event came from (for logs).
    pub sequence_number: String,
    /// When the node was removed (`detail.approximateCreationTime`): a
    /// change of an edge newer than this is kept (see [`crate::ledger`]).
    pub removed: Option<crate::record::CreationTime>,
}

/// Why an event cannot be reaped. Each names what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReapError {
    #[error("the event is not JSON of an EventBridge event with a streamdex detail: {0}")]
    Malformed(String),
    #[error("event for record {sequence_number}: table `{table}` is not declared in the config")]
    UnknownTable { sequence_number: String, table: String },
    #[error("event for record {sequence_number}: table `{table}` has no edge set, so there are no edges to reap")]
    NoEdgeSet { sequence_number: String, table: String },
    #[error("event for record {sequence_number}: the item is not a node of table `{table}` (its sort key differs from its partition key){detail}")]
    NotANode {
        sequence_number: String,
        table: String,
        detail: String,
    },
}

/// The part of an EventBridge event the reaper reads: `detail.table`,
/// `detail.keys`, `detail.sequenceNumber` (see [`crate::event`]).
#[derive(Deserialize)]
struct Envelope {
    detail: EventDetail,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EventDetail {
    table: String,
    keys: Image,
    #[serde(default)]
    sequence_number: String,
    #[serde(default)]
    approximate_creation_time: Option<String>,
}

/// The node an EventBridge event (as delivered to a rule's target: the
/// envelope with `detail`) asks to reap.
pub fn target(config: &Config, event: &[u8]) -> Result<Reap, ReapError> {
    let envelope: Envelope = serde_json::from_slice(event).map_err(|e| ReapError::Malformed(e.to_string()))?;
    let EventDetail {
        table,
        keys,
        sequence_number,
        approximate_creation_time,
    } = envelope.detail;
    let removed = match approximate_creation_time {
        None => None,
        Some(text) => {
            let json = serde_json::to_string(&text).unwrap_or_default();
            Some(
                crate::record::parse_creation_time(&json)
                    .map_err(|e| ReapError::Malformed(format!("detail.approximateCreationTime: {e}")))?,
            )
        }
    };
    let Some(table_config) = config.table(&table) else {
        return Err(ReapError::UnknownTable { sequence_number, table });
    };
    let Some(set) = config.edge_set(&table) else {
        return Err(ReapError::NoEdgeSet { sequence_number, table });
    };
    let node = match edge::classify(set, table_config, &keys) {
        Ok(GraphItem::Node { id }) => id.to_owned(),
        Ok(_) => {
            return Err(ReapError::NotANode {
                sequence_number,
                table,
                detail: String::new(),
            })
        }
        Err(e) => {
            return Err(ReapError::NotANode {
                sequence_number,
                table,
                detail: format!(": {e}"),
            })
        }
    };
    Ok(Reap {
        table,
        node,
        key: keys,
        sequence_number,
        removed,
    })
}

/// The GSI partitions (`target_index` key values) holding the edges of the
/// included types that point at `node`: `T-node` for each type `T`.
pub fn in_edge_partitions(set: &EdgeSetConfig, node: &str) -> Vec<String> {
    set.include.iter().map(|t| format!("{t}-{node}")).collect()
}

/// The primary keys to delete: every item found (the node's partition, and
/// the in-edges the GSI gave) but the node itself, each once, in the order
/// found. Items lacking a key attribute are left out.
pub fn deletions(table: &TableConfig, reap: &Reap, found: impl IntoIterator<Item = Image>) -> Vec<Image> {
    let mut keys: Vec<Image> = Vec::new();
    for item in found {
        let key: Option<Image> = table
            .primary_key()
            .into_iter()
            .map(|name| item.get(name).map(|v| (name, v.clone())))
            .collect();
        let Some(key) = key else { continue };
        if key == reap.key || keys.contains(&key) {
            continue;
        }
        keys.push(key);
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{self, Config};
    use crate::value::Value;

    fn example() -> Config {
        config::parse(config::EXAMPLE_CONFIG, "example").expect("example")
    }

    fn event(detail: serde_json::Value) -> Vec<u8> {
        serde_json::json!({
            "version": "0",
            "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
            "detail-type": "Node Expired",
            "source": "streamdex",
            "detail": detail,
        })
        .to_string()
        .into_bytes()
    }

    fn s(v: &str) -> Value {
        Value::S(v.to_owned())
    }

    fn key(source: &str, target: &str) -> Image {
        [("source".to_owned(), s(source)), ("target".to_owned(), s(target))]
            .into_iter()
            .collect()
    }

    #[test]
    fn an_expiry_event_names_its_node() {
        let config = example();
        let reap = target(
            &config,
            &event(serde_json::json!({
                "table": "records",
                "keys": {"source": {"S": "USER-42"}, "target": {"S": "USER-42"}},
                "expired": true,
                "sequenceNumber": "100",
            })),
        )
        .expect("a node");
        assert_eq!(reap.node, "USER-42");
        assert_eq!(reap.table, "records");
        assert_eq!(reap.sequence_number, "100");
        let set = config.edge_set("records").expect("edge set");
        assert_eq!(
            in_edge_partitions(set, &reap.node),
            ["GOALMEMBERSHIP-USER-42", "TEAMMEMBERSHIP-USER-42"]
        );
    }

    #[test]
    fn events_that_name_no_node_are_refused_with_the_reason() {
        let config = example();
        let cases = [
            (b"not json".to_vec(), "not JSON"),
            (event(serde_json::json!({"keys": {}})), "missing field `table`"),
            (
                event(serde_json::json!({"table": "nope", "keys": {}, "sequenceNumber": "7"})),
                "record 7: table `nope` is not declared",
            ),
            (
                event(serde_json::json!({"table": "layers", "keys": {"pk": {"S": "a"}, "sk": {"S": "a"}}})),
                "table `layers` has no edge set",
            ),
            (
                event(
                    serde_json::json!({"table": "records", "keys": {"source": {"S": "A"}, "target": {"S": "GOALMEMBERSHIP-B"}}}),
                ),
                "not a node",
            ),
            (
                event(serde_json::json!({"table": "records", "keys": {"source": {"N": "1"}, "target": {"N": "1"}}})),
                "must be a String",
            ),
        ];
        for (bytes, want) in cases {
            let err = target(&config, &bytes).expect_err(want);
            assert!(err.to_string().contains(want), "{err} / {want}");
        }
    }

    #[test]
    fn deletions_are_every_item_found_but_the_node_once_each() {
        let config = example();
        let table = config.table("records").expect("records");
        let reap = Reap {
            table: "records".to_owned(),
            node: "USER-42".to_owned(),
            key: key("USER-42", "USER-42"),
            sequence_number: "1".to_owned(),
            removed: None,
        };
        let mut edge = key("USER-42", "TEAMMEMBERSHIP-TEAM-1");
        edge.insert("gsi0".to_owned(), s("member"));
        let found = vec![
            key("USER-42", "USER-42"),
            edge,
            key("GOAL-7", "GOALMEMBERSHIP-USER-42"),
            key("GOAL-7", "GOALMEMBERSHIP-USER-42"),
            [("source".to_owned(), s("x"))].into_iter().collect(),
        ];
        assert_eq!(
            deletions(table, &reap, found),
            [
                key("USER-42", "TEAMMEMBERSHIP-TEAM-1"),
                key("GOAL-7", "GOALMEMBERSHIP-USER-42")
            ]
        );
    }
}
