//! The derived data on the moto server: feeding the streams to the indexer
//! until they run dry, and checking every index row and edge set against a
//! from-scratch recomputation over the final tables (invariant 1).

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{anyhow, ensure, Result};
use aws_kit::quarantine::Quarantine;
use model::edge::{self, GraphItem};
use model::index::{self, RowKey};
use model::{Config, Image, Value};
use stream_indexer::store::dynamo::DynamoStore;
use stream_indexer::Indexer;

use crate::moto::{lambda_event, Moto, StreamReader};

/// Feeds every table's unread stream records to the indexer, in payloads of
/// varying sizes, until no stream has anything new: the indexer's own
/// edge-set writes come back as MODIFY records and are fed too. Returns the
/// number of records fed.
pub async fn drain<Q: Quarantine>(
    moto: &Moto,
    indexer: &Indexer<DynamoStore, Q>,
    readers: &mut [StreamReader],
    sizes: &mut impl Iterator<Item = usize>,
) -> Result<usize> {
    let mut fed = 0;
    for round in 0.. {
        ensure!(
            round < 8,
            "the streams never ran dry: the indexer's own writes keep producing work"
        );
        let mut new = 0;
        for reader in readers.iter_mut() {
            let records = reader.read_new(moto).await?;
            new += records.len();
            let mut rest = &records[..];
            while !rest.is_empty() {
                let size = sizes.next().unwrap_or(1).clamp(1, rest.len());
                let (batch, tail) = rest.split_at(size);
                rest = tail;
                let outcome = indexer
                    .handle(&lambda_event(batch))
                    .await
                    .map_err(|e| anyhow!("batch of {} from {}: {e:?}", batch.len(), reader.table))?;
                ensure!(
                    outcome.failed.is_none(),
                    "batch of {} records from {} reported a failure at {:?}",
                    batch.len(),
                    reader.table,
                    outcome.failed
                );
            }
        }
        eprintln!("drain round {round}: {new} new stream records");
        if new == 0 {
            break;
        }
        fed += new;
    }
    Ok(fed)
}

/// Checks the derived data against a from-scratch recomputation over the
/// final tables. Returns the number of index rows found.
pub async fn verify(moto: &Moto, config: &Config) -> Result<usize> {
    let mut found_rows = 0;
    // Edge sets.
    for (e, set) in config.edge_sets.iter().enumerate() {
        let table = config
            .table(&set.table)
            .ok_or_else(|| anyhow!("no table {}", set.table))?;
        let items = moto.scan(&set.table).await?;
        let mut expected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut nodes: BTreeMap<String, &Image> = BTreeMap::new();
        for item in &items {
            match edge::classify(set, table, item)? {
                GraphItem::Node { id } => {
                    nodes.insert(id.to_owned(), item);
                }
                GraphItem::Edge { node, .. } => {
                    if let Some(member) = edge::member(set, item)? {
                        expected.entry(node.to_owned()).or_default().insert(member);
                    }
                }
                GraphItem::Skipped => {}
            }
        }
        // A ghost: a node item holding only its keys and what the pipeline writes.
        let owned = [
            table.partition_key.as_str(),
            table.sort_key.as_deref().unwrap_or(&table.partition_key),
            &set.attribute,
            &set.complete_attribute,
            model::version::EDGE_MARK_ATTRIBUTE,
        ];
        for (id, item) in &nodes {
            ensure!(
                item.keys()
                    .any(|name| !owned.contains(&name) && !model::version::is_version_attribute(name)),
                "edge set #{e}: ghost node {id}: {item:?}"
            );
            let actual: BTreeSet<String> = match item.get(&set.attribute) {
                None => BTreeSet::new(),
                Some(Value::Ss(members)) => members.iter().cloned().collect(),
                Some(other) => return Err(anyhow!("node {id}: `{}` is not a String Set: {other:?}", set.attribute)),
            };
            let want = expected.get(id).cloned().unwrap_or_default();
            ensure!(actual == want, "node {id}: edge set {actual:?}, recomputed {want:?}");
            ensure!(
                item.get(&set.complete_attribute) == Some(&Value::Bool(true)),
                "node {id}: `{}` is {:?}, not true",
                set.complete_attribute,
                item.get(&set.complete_attribute)
            );
        }
    }
    // Index tables.
    for index in &config.indexes {
        let table = config
            .table(&index.source.table)
            .ok_or_else(|| anyhow!("no table {}", index.source.table))?;
        let mut expected: BTreeMap<RowKey, Image> = BTreeMap::new();
        for item in moto.scan(&index.source.table).await? {
            // An item that cannot be indexed (a quarantined record) has no rows.
            let Ok(rows) = index::rows(index, table, &item) else {
                continue;
            };
            for key in rows.keys {
                expected.insert(key, rows.projection.clone());
            }
        }
        let mut actual: BTreeMap<RowKey, Image> = BTreeMap::new();
        for row in moto.scan(&index.table).await? {
            // A tombstone (a deleted row's version) is no row; a version is not data.
            let Some(mut row) = model::version::live_row(row) else {
                continue;
            };
            let key = match (row.remove(&index.partition_key), row.remove(&index.sort_key)) {
                (Some(Value::S(partition)), Some(Value::S(sort))) => RowKey { partition, sort },
                other => return Err(anyhow!("index {}: row with a bad key {other:?}", index.name)),
            };
            actual.insert(key, row);
        }
        let missing: Vec<_> = expected.keys().filter(|k| !actual.contains_key(*k)).collect();
        let extra: Vec<_> = actual.keys().filter(|k| !expected.contains_key(*k)).collect();
        ensure!(
            missing.is_empty() && extra.is_empty(),
            "index {}: missing rows {missing:?}, extra rows {extra:?}",
            index.name
        );
        found_rows += actual.len();
        for (key, want) in &expected {
            ensure!(
                actual.get(key) == Some(want),
                "index {}: row {key:?} is {:?}, recomputed {want:?}",
                index.name,
                actual.get(key)
            );
        }
    }
    Ok(found_rows)
}
