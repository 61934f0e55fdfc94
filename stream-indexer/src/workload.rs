//! A deterministic workload shaped like the example config's traffic, for
//! benchmarks and figures: goal, team and user nodes; membership edges whose
//! roles change and which get deleted; issues with ten custom fields that
//! change one or two at a time; short-lived layers.
//!
//! The writes are made on a [`MemoryStore`] with stream recording on, so the
//! records carry genuine old and new images, and the store ends holding the
//! final table (as DynamoDB would while the consumer lags).

use std::sync::Arc;

use model::record::{ChangeRecord, CreationTime};
use model::EventKind;
use model::{Config, Image, Value};

use crate::store::memory::{lambda_event, MemoryStore};

fn s(v: impl Into<String>) -> Value {
    Value::S(v.into())
}

fn image(pairs: Vec<(&str, Value)>) -> Image {
    pairs.into_iter().collect()
}

const ROLES: [&str; 4] = ["300-MEMBER", "310-MANAGER", "400-CONTRIBUTOR", "500-LEAD"];
const STATES: [&str; 3] = ["open", "in-progress", "closed"];

/// Writes about `records` changes on `store`, whose config must be the example
/// config (tables `records`, `issues`, `layers`).
pub fn write_history(store: &MemoryStore, records: usize, seed: u64) {
    write_mix(store, records, seed, false);
}

/// [`write_history`], and with `node_deletes` one change in a hundred
/// deletes a node (its edges stay: what a TTL expiry leaves for the reaper).
pub fn write_mix(store: &MemoryStore, records: usize, seed: u64, node_deletes: bool) {
    mix(store, records, records, usize::MAX, seed, node_deletes);
}

/// [`write_mix`] over the keys of a `keyspace`-change history: its nodes
/// (`keyspace / 20`), issues (`keyspace / 10`) and at most `keyspace / 4`
/// live edges (at the cap, an edge is deleted instead of added). A history
/// longer than its key space changes the same items again, so its tables
/// stop growing: what a long-lived table's stream looks like.
pub fn write_mix_over(store: &MemoryStore, records: usize, keyspace: usize, seed: u64, node_deletes: bool) {
    mix(store, records, keyspace, (keyspace / 4).max(1), seed, node_deletes);
}

fn mix(store: &MemoryStore, records: usize, keyspace: usize, max_edges: usize, seed: u64, node_deletes: bool) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let uuid = |rng: &mut fastrand::Rng| {
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            rng.u32(..),
            rng.u16(..),
            rng.u16(..0xfff),
            rng.u16(..0xfff),
            rng.u64(..1 << 48)
        )
    };
    let nodes: Vec<String> = (0..keyspace.div_ceil(20).max(4))
        .map(|i| match i % 3 {
            0 => format!("GOAL-{}", uuid(&mut rng)),
            1 => format!("TEAM-{}", uuid(&mut rng)),
            _ => format!("USER-{}", uuid(&mut rng)),
        })
        .collect();
    let users: Vec<String> = (0..50).map(|_| uuid(&mut rng)).collect();
    let issues: Vec<String> = (0..keyspace.div_ceil(10).max(2))
        .map(|i| format!("issue-{i:05x}"))
        .collect();
    let mut edges: Vec<(String, String)> = Vec::new();
    let mut layers: Vec<String> = Vec::new();
    let field_value = |rng: &mut fastrand::Rng, i: u32| match i % 4 {
        0 => Value::N(format!("{}.{}", rng.i32(-5000..5000), rng.u8(0..100))),
        1 => s(["Approved", "Rejected", "Pending", "Needs review"][rng.usize(..4)]),
        2 => s(format!("2023-{:02}-{:02}", rng.u8(1..13), rng.u8(1..29))),
        _ => Value::Bool(rng.bool()),
    };
    let issue_item = |rng: &mut fastrand::Rng, id: &str| {
        let fields = (0..10u32).map(|i| (format!("f{i:03x}"), field_value(rng, i))).collect();
        image(vec![
            ("id", s(id)),
            ("rel", s(id)),
            ("name", s(format!("Issue {id}: girder needs replacing"))),
            ("num", Value::N(rng.u32(1..100_000).to_string())),
            ("state", s(STATES[rng.usize(..3)])),
            ("custom_fields", Value::M(fields)),
        ])
    };
    store.record_stream(true);
    let mut written = 0;
    while written < records {
        let roll = rng.u8(..100);
        let ok = match roll {
            // a node appears or is updated
            0..=7 => {
                let node = &nodes[rng.usize(..nodes.len())];
                let item = image(vec![
                    ("source", s(node)),
                    ("target", s(node)),
                    ("name", s(format!("Node {}", rng.u16(..)))),
                ]);
                store.put_item("records", item).is_ok()
            }
            // an edge is deleted (or one is, instead of an add, at the cap)
            8..=34 | 50..=55 if !edges.is_empty() && (roll >= 50 || edges.len() >= max_edges) => {
                let (node, target) = edges.swap_remove(rng.usize(..edges.len()));
                store
                    .delete_item("records", &image(vec![("source", s(node)), ("target", s(target))]))
                    .is_ok()
            }
            // a membership edge is added
            8..=34 => {
                let node = nodes[rng.usize(..nodes.len())].clone();
                let kind = if node.starts_with("TEAM") {
                    "TEAMMEMBERSHIP"
                } else {
                    "GOALMEMBERSHIP"
                };
                let target = format!("{kind}-USER-{}", users[rng.usize(..users.len())]);
                let role = ROLES[rng.usize(..ROLES.len())];
                let item = image(vec![
                    ("source", s(&node)),
                    ("target", s(&target)),
                    ("memberRole", s(&role[4..])),
                    ("date", s("2020-07-01")),
                    ("gsi0", s(role)),
                ]);
                edges.push((node, target));
                store.put_item("records", item).is_ok()
            }
            // a role changes
            35..=49 if !edges.is_empty() => {
                let (node, target) = &edges[rng.usize(..edges.len())];
                let key = image(vec![("source", s(node)), ("target", s(target))]);
                match store.get_item("records", &key) {
                    Ok(Some(mut item)) => {
                        let role = ROLES[rng.usize(..ROLES.len())];
                        item.insert("gsi0", s(role));
                        item.insert("memberRole", s(&role[4..]));
                        store.put_item("records", item).is_ok()
                    }
                    _ => false,
                }
            }
            // an issue is created
            56..=65 => {
                let id = &issues[rng.usize(..issues.len())];
                store.put_item("issues", issue_item(&mut rng, id)).is_ok()
            }
            // one or two custom fields of an issue change
            66..=91 => {
                let id = &issues[rng.usize(..issues.len())];
                let key = image(vec![("id", s(id)), ("rel", s(id))]);
                match store.get_item("issues", &key) {
                    Ok(Some(mut item)) => {
                        if let Some(Value::M(fields)) = item.get_mut("custom_fields") {
                            for _ in 0..rng.usize(1..3) {
                                let i = rng.u32(..10);
                                fields.insert(format!("f{i:03x}"), field_value(&mut rng, i));
                            }
                        }
                        store.put_item("issues", item).is_ok()
                    }
                    _ => false,
                }
            }
            // a node goes (expires), leaving its edges to the reaper
            99 if node_deletes => {
                let node = &nodes[rng.usize(..nodes.len())];
                matches!(
                    store.delete_item("records", &image(vec![("source", s(node)), ("target", s(node))])),
                    Ok(Some(_))
                )
            }
            // a layer is published or removed
            _ => {
                if rng.bool() || layers.is_empty() {
                    let name = format!("lyr#eu-west-1.pkg{}", rng.u16(..));
                    let item = image(vec![
                        ("pk", s(&name)),
                        ("sk", s("lyrVrsn#v1")),
                        (
                            "arn",
                            s(format!("arn:aws:lambda:eu-west-1:123456789012:layer:{}:1", &name[4..])),
                        ),
                        ("ttl", Value::N("1763722740".into())),
                    ]);
                    layers.push(name);
                    store.put_item("layers", item).is_ok()
                } else {
                    let name = layers.swap_remove(rng.usize(..layers.len()));
                    store
                        .delete_item("layers", &image(vec![("pk", s(name)), ("sk", s("lyrVrsn#v1"))]))
                        .is_ok()
                }
            }
        };
        written += usize::from(ok);
    }
}

/// A store holding the final table, and Lambda payloads of `batch` records
/// each (the last may be shorter) for a history of `records` changes.
pub fn example_batches(config: Arc<Config>, records: usize, batch: usize, seed: u64) -> (MemoryStore, Vec<Vec<u8>>) {
    let store = MemoryStore::new(config);
    write_history(&store, records, seed);
    let stream: Vec<_> = store.take_stream().into_iter().map(|e| e.record).collect();
    store.record_stream(false);
    let batches = stream
        .chunks(batch.max(1))
        .map(|chunk| lambda_event(chunk.iter()))
        .collect();
    (store, batches)
}

/// A store holding the final table, and one Lambda payload of as many records
/// of the history as fit in `max_bytes` (Lambda's limit is 6 MB).
pub fn example_payload_of_size(config: Arc<Config>, max_bytes: usize, seed: u64) -> (MemoryStore, Vec<u8>, usize) {
    let store = MemoryStore::new(config);
    // About 1 KB a record; write more than needed, then take what fits.
    write_history(&store, max_bytes / 400, seed);
    let stream: Vec<_> = store.take_stream().into_iter().map(|e| e.record).collect();
    store.record_stream(false);
    let (mut lo, mut hi) = (0, stream.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if lambda_event(stream[..mid].iter()).len() <= max_bytes {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    (store, lambda_event(stream[..lo].iter()), lo)
}

/// Marks every REMOVE of a node (of `records`) or a layer as the TTL
/// service's, so that the example config's routes fire and the reaper has
/// nodes to reap.
pub fn as_expiries(records: &mut [ChangeRecord]) {
    for record in records {
        let table = record.table.as_deref().unwrap_or_default();
        let is_node = record.keys.contains_key("source") && record.keys.get("source") == record.keys.get("target");
        if record.kind == EventKind::Remove && (table == "layers" || (table == "records" && is_node)) {
            record.ttl_expiry = true;
        }
    }
}

/// The records with creation times 50 µs apart, reordered within `window`
/// places, one in twenty repeated (a deterministic xorshift of `seed`).
pub fn as_kinesis_delivers(records: Vec<ChangeRecord>, window: usize, seed: u64) -> Vec<ChangeRecord> {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut keyed = Vec::with_capacity(records.len() + records.len() / 16);
    for (i, mut record) in records.into_iter().enumerate() {
        let micros = i as u64 * 50;
        record.created = Some(CreationTime {
            seconds: 1_763_719_200 + i64::try_from(micros / 1_000_000).unwrap_or(0),
            nanos: u32::try_from(micros % 1_000_000).unwrap_or(0) * 1000,
        });
        let at = |n: u64| i + usize::try_from(n % (window as u64 + 1)).unwrap_or(0);
        if next() % 20 == 0 {
            keyed.push((at(next()), keyed.len(), record.clone()));
        }
        keyed.push((at(next()), keyed.len(), record));
    }
    keyed.sort_by_key(|(at, n, _)| (*at, *n));
    keyed.into_iter().map(|(_, _, record)| record).collect()
}
