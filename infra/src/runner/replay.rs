//! The in-process pipeline `streamdex replay` drives: recorded stream
//! records through both consumers, in Lambda-sized batches.
//!
//! - [`Local`], the embedded default: the indexer writes into the in-memory
//!   store, the router publishes to an in-memory bus, and the events of
//!   `reap` routes go straight to the TTL reaper, whose deletes flow back
//!   through both consumers (as they would through the stream). The store
//!   follows the recording: before a batch is handled, its records are
//!   applied to the store's copy of the source tables (as the real table
//!   would already hold them), so node restores and conditional set updates
//!   behave as they do against DynamoDB.
//! - [`replay_batch_to`]: into real tables and a real bus (an endpoint, or AWS);
//!   the source tables are taken to hold the data the recording came from.
//!
//! A table read from a Kinesis data stream may come reordered and
//! repeated: a record older than the change its item last took is not
//! applied to the store's tables (the table holds the newest change), and
//! the pipeline's own writes fed back get creation times after the newest
//! the recording has shown, as DynamoDB would stamp them.
//!
//! What the consumers did is summed up in a [`Summary`]; the command
//! (`cli::replay`) prints it.

use std::sync::{Arc, Mutex};

use event_router::{Entry, Ledger, MemoryLedger, MemoryPublisher, Publisher, Reaper, Router, RouterStats};
use model::config::{Config, TableConfig};
use model::edge;
use model::ledger::Entry as LedgerEntry;
use model::outcome::Outcome;
use model::record::{ChangeRecord, EventKind, Received};
use model::value::Attrs;
use model::{Planner, Version};
use serde_json::Value as Json;
use stream_indexer::batch::Quarantined;
use stream_indexer::store::memory::{ReadyItem, StreamEntry};
use stream_indexer::store::Store;
use stream_indexer::{Backoff, BatchStats, Indexer, MemoryQuarantine, MemoryStore, Options};

use super::graph::StoreGraph;
use newest::{Recorded, Stamped};

mod newest;

/// Rounds of feeding the pipeline's and the reaper's own writes back
/// through the consumers after one batch, before giving up on a loop.
const MAX_FEEDBACK_ROUNDS: usize = 50;
/// What a replay did.
#[derive(Debug, Default)]
pub struct Summary {
    pub records: usize,
    pub batches: usize,
    /// The indexer's figures, and the router's.
    pub stats: BatchStats,
    pub routed: RouterStats,
    /// Nodes the reaper reaped, and the edges it deleted.
    pub reaped: usize,
    pub reaper_deletes: usize,
    /// Records quarantined, with the consumer that did.
    pub quarantined: Vec<(&'static str, Quarantined)>,
    /// Where batches failed and why: the consumer, and "from sequence
    /// number N: the fault".
    pub failed: Vec<(&'static str, String)>,
    /// Every event published, in order (unless [`Local::keep_events`] is off).
    pub events: Vec<Entry>,
}

/// The embedded pipeline: both consumers and the reaper over one in-memory
/// store, the events on an in-memory bus.
pub struct Local {
    indexer: Indexer<Arc<MemoryStore>, MemoryQuarantine>,
    router: Router<MemoryPublisher, MemoryQuarantine>,
    reaper: Reaper<StoreGraph>,
    keep_events: bool,
    /// Buffers for the pipeline's own writes fed back after a batch, kept
    /// from batch to batch so a replay does not allocate them anew.
    feedback: Mutex<(Vec<StreamEntry>, Vec<Received<'static>>)>,
    /// For tables read from Kinesis (see [`newest`]): each item's newest
    /// recorded change, kept by whoever makes records ready (replay's
    /// reading thread), and the pipeline's writes, by the handling thread.
    recorded: Mutex<Recorded>,
    stamped: Mutex<Stamped>,
}

impl Local {
    pub fn new(config: Arc<Config>) -> Local {
        // Records of a DynamoDB stream come in order and nothing writes
        // guarded: no tombstones, so the store stays the size of the
        // tables, not of the history. A Kinesis stream's may not: their
        // writes are guarded, and deletes leave tombstones.
        let store = MemoryStore::new(config.clone());
        let store = Arc::new(if config.reads_kinesis() {
            store
        } else {
            store.without_tombstones()
        });
        let ledger = MemoryLedger::for_config(&config).map(|l| l as Arc<dyn Ledger>);
        Local {
            indexer: Indexer::new(
                config.clone(),
                store.clone(),
                MemoryQuarantine::new(),
                Options::default(),
            ),
            router: Router::new(
                config.clone(),
                MemoryPublisher::new(),
                MemoryQuarantine::new(),
                event_router::Options::default(),
            )
            .with_ledger(ledger.clone()),
            reaper: Reaper::new(config, StoreGraph(store), Backoff::default()).with_ledger(ledger),
            keep_events: true,
            feedback: Mutex::default(),
            recorded: Mutex::default(),
            stamped: Mutex::default(),
        }
    }

    /// The in-memory tables: the source tables as replayed, and the derived data.
    pub fn store(&self) -> &MemoryStore {
        self.reaper.graph()
    }

    pub fn config(&self) -> &Arc<Config> {
        self.indexer.config()
    }

    /// Keeps every event published in [`Summary::events`] (the default), or
    /// only counts them (so a long replay's memory does not grow with them).
    pub fn keep_events(mut self, keep: bool) -> Local {
        self.keep_events = keep;
        self
    }

    /// Replays `records` in batches of `batch_size` (see the module doc).
    pub async fn replay<I: Attrs>(&self, records: &[Received<'_, I>], batch_size: usize) -> Summary {
        let mut summary = Summary::default();
        for batch in records.chunks(batch_size.max(1)) {
            self.replay_batch(batch, &mut summary).await;
        }
        summary
    }

    /// Replays one batch (see the module doc), adding to `summary`.
    pub async fn replay_batch<I: Attrs>(&self, batch: &[Received<'_, I>], summary: &mut Summary) {
        self.replay_ready_batch(batch, &mut [], summary).await;
    }

    /// [`Local::replay_batch`], with what the batch's records need made
    /// ready ahead ([`Local::ready`], one per record, in order; fewer, and the
    /// rest are made here).
    pub async fn replay_ready_batch<I: Attrs>(
        &self,
        batch: &[Received<'_, I>],
        ready: &mut [Ready],
        summary: &mut Summary,
    ) {
        let store = self.store();
        let planner = Planner::new(self.config());
        summary.records += batch.len();
        store.record_stream(false);
        let kinesis = self.config().reads_kinesis();
        for (at, received) in batch.iter().enumerate() {
            if let Ok(record) = &received.record {
                let ready = ready.get_mut(at).map(std::mem::take).unwrap_or_default();
                let newest = !kinesis
                    || planner
                        .table_of(record)
                        .is_ok_and(|table| self.is_newest(table, record, ready.judged));
                if newest {
                    materialize(store, &planner, record, ready.item);
                }
            }
        }
        // From here on the pipeline's own writes (set updates, the
        // reaper's deletes) are recorded and fed back, as the stream would,
        // as typed records (never through JSON).
        store.record_stream(true);
        summary.batches += 1;
        self.handle(batch, summary).await;
        let (mut written, mut more) = std::mem::take(&mut *self.lock_feedback());
        for _ in 0..MAX_FEEDBACK_ROUNDS {
            store.take_stream_into(&mut written);
            if written.is_empty() {
                break;
            }
            more.clear();
            if kinesis {
                let mut stamped = lock(&self.stamped);
                let config = self.config();
                more.extend(
                    written
                        .drain(..)
                        .map(|e| Received::typed(stamped.stamp(config, e.record))),
                );
            } else {
                more.extend(written.drain(..).map(|e| Received::typed(e.record)));
            }
            self.handle(&more, summary).await;
        }
        more.clear();
        *self.lock_feedback() = (written, more);
        store.record_stream(false);
    }

    /// Whether `record`, of `table`, is the newest change of its item so
    /// far (and so is applied to the store's tables). `judged`: how it
    /// compares with its item's recorded changes, when worked out ahead
    /// ([`Local::ready`]).
    fn is_newest<I: Attrs>(&self, table: &TableConfig, record: &ChangeRecord<I>, judged: Option<Judged>) -> bool {
        let entry_of = || model::ledger::entry_of(table, record);
        let (version, recorded, entry) = match judged {
            Some(Judged { version, newer }) => (version, newer, None),
            None => {
                let Some(entry) = entry_of() else { return true };
                let newer = lock(&self.recorded).is_newer(&entry);
                (entry.version.clone(), newer, Some(entry))
            }
        };
        let mut stamped = lock(&self.stamped);
        stamped.saw(record.created);
        // The pipeline writes the nodes of an edge set's table, and the
        // reaper deletes edges of a reaped one; no other item has writes to
        // look up. The item's text is made again only when they are.
        let config = self.config();
        let written = config.edge_set(&table.name).is_some() || config.reaps(&table.name);
        if !recorded || !written || stamped.is_newer_than_all(&version) {
            return recorded;
        }
        let Some(item) = entry.or_else(entry_of).map(|e| e.item) else {
            return true;
        };
        if stamped.is_newer(&version, &item) {
            return true;
        }
        // The pipeline updated the item after this change. A node's
        // deletion still stands: the pipeline only updates a node that
        // exists, so against the table its update would have found the node
        // gone. The update is forgotten, and a later change of the node
        // applies.
        let removes_node = record.kind == EventKind::Remove && edge::is_node(config, table, &record.keys);
        if removes_node {
            stamped.forget(&item);
        }
        removes_node
    }

    /// What [`Local::replay_ready_batch`] takes for `record`, made ready
    /// ahead of it (on replay's reading thread, in the records' order),
    /// and the record's ledger entry when its table is read from Kinesis
    /// (for the router: `model::event::classify_ahead_with`).
    pub fn ready<I: Attrs>(&self, planner: &Planner<'_>, record: &ChangeRecord<I>) -> (Ready, Option<LedgerEntry>) {
        let Ok(table) = planner.table_of(record) else {
            return (Ready::default(), None);
        };
        let item = match (&record.kind, &record.new) {
            (EventKind::Remove, _) | (_, None) => None,
            (_, Some(new)) => ReadyItem::new(table, new).ok(),
        };
        let entry = model::ledger::entry_of(table, record);
        let judged = entry.as_ref().map(|entry| Judged {
            version: entry.version.clone(),
            newer: lock(&self.recorded).is_newer(entry),
        });
        (Ready { item, judged }, entry)
    }

    fn lock_feedback(&self) -> std::sync::MutexGuard<'_, (Vec<StreamEntry>, Vec<Received<'static>>)> {
        lock(&self.feedback)
    }

    /// One batch through both consumers; the reap events to the reaper.
    async fn handle<I: Attrs>(&self, batch: &[Received<'_, I>], summary: &mut Summary) {
        let routed = self.router.handle_received(batch).await;
        let indexed = self.indexer.handle_received(batch).await;
        absorb(summary, indexed, routed);
        for entry in self.router.publisher().take() {
            // The rule of a reap route matches its detail type and table.
            let reap_routes = || {
                self.config()
                    .routes
                    .iter()
                    .filter(|r| r.reap && r.detail_type == entry.detail_type)
            };
            let reaps = reap_routes().next().is_some() && {
                let table = serde_json::from_str::<Json>(&entry.detail)
                    .ok()
                    .and_then(|d| d["table"].as_str().map(str::to_owned));
                reap_routes().any(|r| table.as_deref() == Some(r.table.as_str()))
            };
            if reaps {
                match self.reaper.reap(entry.delivered().as_bytes()).await {
                    Ok(reaped) => {
                        summary.reaped += usize::from(reaped.deleted > 0);
                        summary.reaper_deletes += reaped.deleted;
                    }
                    Err(e) => summary.failed.push(("reaper", e.to_string())),
                }
            }
            if self.keep_events {
                summary.events.push(entry);
            }
        }
    }
}

fn absorb(summary: &mut Summary, indexed: Outcome<BatchStats>, routed: Outcome<RouterStats>) {
    summary.stats.add(&indexed.stats);
    summary.routed.add(&routed.stats);
    summary
        .quarantined
        .extend(indexed.quarantined.into_iter().map(|q| ("stream-indexer", q)));
    summary
        .quarantined
        .extend(routed.quarantined.into_iter().map(|q| ("event-router", q)));
    summary.failed.extend(
        indexed
            .failed
            .map(|f| ("stream-indexer", failure_text(&f, &indexed.failures))),
    );
    summary.failed.extend(
        routed
            .failed
            .map(|f| ("event-router", failure_text(&f, &routed.failures))),
    );
}

/// "from sequence number N: why" (the first failure's fault).
fn failure_text(failed: &model::settlement::Failed, failures: &[model::settlement::Failure]) -> String {
    let from = match failed.sequence_number() {
        Some(seq) => format!("from sequence number {seq}"),
        None => "the whole batch".to_owned(),
    };
    match failures.first() {
        Some(failure) => format!("{from}: {}", failure.fault),
        None => from,
    }
}

/// Replays one batch into real tables and a real bus (nothing is
/// materialized; no reaper runs here), adding to `summary`.
pub async fn replay_batch_to<S: Store, P: Publisher, I: Attrs>(
    indexer: &Indexer<S, MemoryQuarantine>,
    router: &Router<P, MemoryQuarantine>,
    batch: &[Received<'_, I>],
    summary: &mut Summary,
) {
    summary.records += batch.len();
    summary.batches += 1;
    let routed = router.handle_received(batch).await;
    let indexed = indexer.handle_received(batch).await;
    absorb(summary, indexed, routed);
}

/// What [`Local::replay_ready_batch`] takes for a record, made ready
/// ahead: it depends on the record and the config alone, so replay makes it
/// on its reading thread.
#[derive(Default)]
pub struct Ready {
    /// The item the record puts into its source table (see [`ReadyItem`]).
    item: Option<ReadyItem>,
    /// For a table read from Kinesis: how the record compares with its
    /// item's recorded changes.
    judged: Option<Judged>,
}

/// A record of a table read from Kinesis, against its item's recorded
/// changes before it.
struct Judged {
    /// Its version.
    version: Version,
    /// Whether it is newer than every one of them.
    newer: bool,
}

/// Applies a record to the store's copy of its source table. A MODIFY whose
/// images both lack a node's pipeline-owned attributes (a fixture recorded
/// without streamdex) keeps the stored ones, as an UpdateItem would; images
/// that show them vanishing (a PutItem overwrite) replace the item whole.
fn materialize<I: Attrs>(
    store: &MemoryStore,
    planner: &Planner<'_>,
    record: &ChangeRecord<I>,
    ready: Option<ReadyItem>,
) {
    let Ok(table) = planner.table_of(record) else { return };
    match (&record.kind, &record.new) {
        (EventKind::Remove, _) => {
            let _ = store.remove_item(&table.name, &record.keys);
        }
        (_, Some(new)) => {
            // The node's pipeline-owned attributes, when neither image shows them.
            let owned = planner
                .config()
                .edge_sets
                .iter()
                .find(|e| e.table == table.name)
                .map(|set| [set.attribute.as_str(), set.complete_attribute.as_str()])
                .filter(|owned| {
                    let shows = |image: &I| owned.iter().any(|a| image.contains_key(a));
                    !record.old.as_ref().is_some_and(shows) && !shows(new)
                });
            let keep: &[&str] = owned.as_ref().map_or(&[], |owned| owned);
            let _ = match ready {
                Some(ready) => store.put_ready_keeping(&table.name, new, ready, keep),
                None => store.put_item_keeping(&table.name, new, keep),
            };
        }
        (_, None) => {}
    }
}

/// `mutex`'s guard (a panic elsewhere while holding it leaves whole data).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
