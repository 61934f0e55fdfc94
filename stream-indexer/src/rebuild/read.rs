//! What repair reads, in the order that makes its writes safe beside the
//! live consumers (optimistic concurrency, see `apply::guard`): the derived
//! data and its versions first, the source after.
//!
//! A repair write is conditioned on the version it read (a row's, a
//! tombstone's, a node's edge mark) and keeps it. Every stream record that
//! changes that derived data writes its own, newer version. So if such a
//! record lands between the read and the write, the condition fails and the
//! record's write stands (the skip is counted); if it lands after, its
//! version beats the kept one. And because the derived data was read
//! *before* the source, a record whose derived write landed before that
//! read had its source write land before it too: the source read sees it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use model::config::{EdgeSetConfig, TableConfig};
use model::index::RowKey;
use model::{version, Image, Value};

use super::*;
use crate::apply::ReadVersions;

/// Reads of the source item a key set may take before it settles.
const MAX_READ_ROUNDS: usize = 3;

/// The rows of `keys` (index `i`) as stored, in chunks of [`MAX_BATCH_READS`].
pub(super) async fn read_rows<S: Scan>(
    store: &S,
    i: usize,
    table: &str,
    keys: &[RowKey],
    options: &Options,
    requests: &mut u64,
) -> Result<BTreeMap<RowKey, Image>, RebuildError> {
    let mut actual = BTreeMap::new();
    for chunk in keys.chunks(MAX_BATCH_READS) {
        let mut resend = Resend::new(&options.backoff, chunk.to_vec(), Vec::len);
        while let Some((_, pending)) = resend.next_attempt() {
            *requests += 1;
            let partial = match store.read_rows(i, pending.clone()).await {
                Ok(read) => {
                    actual.extend(read.found);
                    let still = StoreError::transient("BatchGetItem kept returning UnprocessedKeys");
                    Partial::Left(read.unprocessed, still)
                }
                Err(e) => Partial::Failed(pending, e),
            };
            resend.sent(partial).await;
        }
        resend.finish().map_err(|(source, _)| RebuildError::Read {
            what: format!("rows of table `{table}`"),
            source,
        })?;
    }
    Ok(actual)
}

/// One source item's rows, read safely: the rows (with their versions)
/// before the item. Under [`Mode::Rederive`] the keys the item produces are
/// compared too; when the item read names keys not read yet, those are read
/// and the item again (at most [`MAX_READ_ROUNDS`] times; keys still unread
/// are left to the next pass).
pub(super) struct RowsRead {
    /// The keys read, each with what the item produces (`expected`) and
    /// what is there for readers (`actual`: `None` also for a tombstone).
    pub keys: Vec<RowKey>,
    pub expected: BTreeMap<RowKey, Image>,
    pub actual: BTreeMap<RowKey, Image>,
    pub versions: Arc<ReadVersions>,
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn rows_then_item<S: Store + Scan>(
    store: &S,
    i: usize,
    index: &IndexConfig,
    table: &TableConfig,
    source: Option<&Image>,
    mut keys: BTreeSet<RowKey>,
    mode: Mode,
    options: &Options,
    requests: &mut u64,
) -> Result<RowsRead, RebuildError> {
    let mut stored: BTreeMap<RowKey, Option<Image>> = BTreeMap::new();
    let mut expected: BTreeMap<RowKey, Image> = BTreeMap::new();
    for round in 0..MAX_READ_ROUNDS {
        let unread: Vec<RowKey> = keys.iter().filter(|k| !stored.contains_key(*k)).cloned().collect();
        let mut found = read_rows(store, i, &index.table, &unread, options, requests).await?;
        for key in unread {
            let row = found.remove(&key);
            stored.insert(key, row);
        }
        // The source item, as it is now: after the rows.
        let item = match source {
            Some(key) => {
                *requests += 1;
                retry(&options.backoff, || store.read_item(&table.name, key))
                    .await
                    .map_err(|source| RebuildError::Read {
                        what: format!("item {key:?} of table `{}`", table.name),
                        source,
                    })?
            }
            None => None,
        };
        // What it produces (an item that cannot be indexed produces nothing, as in the planner).
        expected.clear();
        if let Some(item) = &item {
            if let Ok(rows) = index::rows(index, table, item) {
                for key in rows.keys {
                    expected.insert(key, rows.projection.clone());
                }
            }
        }
        if mode != Mode::Rederive {
            break;
        }
        let before = keys.len();
        keys.extend(expected.keys().cloned());
        if keys.len() == before || round + 1 == MAX_READ_ROUNDS {
            break;
        }
    }
    let mut versions = ReadVersions::default();
    let mut actual = BTreeMap::new();
    for (key, row) in &stored {
        versions
            .rows
            .insert((i, key.clone()), row.as_ref().and_then(version::row_version));
        if let Some(live) = row.clone().and_then(version::live_row) {
            actual.insert(key.clone(), live);
        }
    }
    Ok(RowsRead {
        keys: stored.into_keys().collect(),
        expected,
        actual,
        versions: Arc::new(versions),
    })
}

/// A node's edge mark, read (with a GetItem of the node) before its partition.
pub(super) async fn node_mark<S: Scan>(
    store: &S,
    set: &EdgeSetConfig,
    table: &TableConfig,
    node: &str,
    options: &Options,
    requests: &mut u64,
) -> Result<Option<model::Version>, RebuildError> {
    let mut key = Image::from([(table.partition_key.clone(), Value::S(node.to_owned()))]);
    if let Some(sort_key) = &table.sort_key {
        key.insert(sort_key.clone(), Value::S(node.to_owned()));
    }
    *requests += 1;
    let item = retry(&options.backoff, || store.read_item(&set.table, &key))
        .await
        .map_err(|source| RebuildError::Read {
            what: format!("node `{node}` of table `{}`", table.name),
            source,
        })?;
    Ok(item.and_then(|item| match item.get(version::EDGE_MARK_ATTRIBUTE) {
        Some(Value::S(text)) => model::Version::parse_stored(text),
        _ => None,
    }))
}
