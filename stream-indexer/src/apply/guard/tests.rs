//! Out-of-order delivery against the in-memory store: guarded writes never
//! let an old record overwrite newer derived data, and any delivery that
//! brings every item's records in order at least once (with duplicates,
//! reordering across partition keys and old ranges redelivered after newer
//! records) converges to the from-scratch state.

use std::collections::BTreeMap;
use std::sync::Arc;

use model::config::Config;
use model::delivery::lambda_event;
use model::record::ChangeRecord;
use model::testing::{self, Tables};
use model::{Image, Value};
use proptest::prelude::*;

use crate::store::memory::{MemoryStore, Origin};
use crate::{Backoff, Indexer, MemoryQuarantine, Options};

use super::Guard;
use crate::test_support::{block, example};

pub(super) type TestIndexer = Indexer<Arc<MemoryStore>, MemoryQuarantine>;

pub(super) fn indexer(store: &Arc<MemoryStore>, guard: Guard) -> TestIndexer {
    let options = Options {
        backoff: Backoff::immediate(3),
        guard,
        ..Options::default()
    };
    Indexer::new(store.config().clone(), store.clone(), MemoryQuarantine::new(), options)
}

/// Handles `records` as one batch, which must succeed whole.
fn deliver(ix: &TestIndexer, records: &[ChangeRecord]) -> model::outcome::Outcome<crate::BatchStats> {
    let outcome = block(ix.handle(&lambda_event(records))).unwrap_or_else(|e| panic!("{e}"));
    assert!(outcome.failed.is_none(), "{:?}", outcome.failures);
    outcome
}

/// The memory store as the history's tables.
struct History<'a>(&'a MemoryStore);

impl Tables for History<'_> {
    fn get(&self, table: &str, key: &Image) -> Option<Image> {
        self.0.get_item(table, key).ok().flatten()
    }
    fn put(&mut self, table: &str, item: Image) {
        let _ = self.0.put_item(table, item);
    }
    fn delete(&mut self, table: &str, key: &Image) {
        let _ = self.0.delete_item(table, key);
    }
    fn keys(&self) -> Vec<(String, Image)> {
        let config = self.0.config().clone();
        config
            .tables
            .iter()
            .flat_map(|t| {
                self.0
                    .items(&t.name)
                    .into_iter()
                    .filter_map(|item| Some((t.name.clone(), key_of(t, &item)?)))
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

fn key_of(table: &model::config::TableConfig, item: &Image) -> Option<Image> {
    table
        .primary_key()
        .into_iter()
        .map(|k| Some((k.to_owned(), item.get(k)?.clone())))
        .collect()
}

/// Writes `history` to a fresh store; returns it and the records the writes
/// made (the pipeline's own writes are not recorded: they never change
/// derived data).
fn written(history: &[testing::Write]) -> (Arc<MemoryStore>, Vec<ChangeRecord>) {
    written_in(example(), history)
}

/// [`written`] under `config`.
pub(super) fn written_in(config: Arc<Config>, history: &[testing::Write]) -> (Arc<MemoryStore>, Vec<ChangeRecord>) {
    let store = Arc::new(MemoryStore::new(config));
    store.record_stream(true);
    // Sequence numbers of growing length: compared as strings they would
    // sort wrong.
    store.grow_sequence_numbers(Some(2));
    let mut tables = History(&store);
    for write in history {
        write.apply(&mut tables);
    }
    let records = store
        .take_stream()
        .into_iter()
        .filter(|e| e.origin == Origin::User)
        .map(|e| e.record)
        .collect();
    store.record_stream(false);
    (store, records)
}

/// The partition-key group of a record: its records share an order.
fn group(config: &Config, record: &ChangeRecord) -> String {
    let table = config
        .table_of_record(record)
        .map(|t| t.name.clone())
        .unwrap_or_default();
    let pk = config
        .table(&table)
        .and_then(|t| record.keys.get(&t.partition_key))
        .map(|v| format!("{v:?}"))
        .unwrap_or_default();
    format!("{table}/{pk}")
}

/// A delivery of `records`: every group's records in order, groups
/// interleaved at random, with duplicates and old ranges of a group
/// redelivered after newer records of it.
fn schedule(config: &Config, records: &[ChangeRecord], seed: u64) -> Vec<ChangeRecord> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut groups: BTreeMap<String, Vec<&ChangeRecord>> = BTreeMap::new();
    for r in records {
        groups.entry(group(config, r)).or_default().push(r);
    }
    let mut cursors: Vec<(Vec<&ChangeRecord>, usize)> = groups.into_values().map(|g| (g, 0)).collect();
    let mut out = Vec::new();
    loop {
        let live: Vec<usize> = (0..cursors.len())
            .filter(|&i| cursors[i].1 < cursors[i].0.len())
            .collect();
        if live.is_empty() {
            break;
        }
        let (g, at) = &mut cursors[live[rng.usize(..live.len())]];
        let record = g[*at];
        *at += 1;
        out.push(record.clone());
        if rng.u8(..4) == 0 {
            out.push(record.clone()); // a duplicate
        }
        if rng.u8(..5) == 0 {
            // An old range of this group, after newer records of it.
            let start = rng.usize(..*at);
            let end = rng.usize(start..*at) + 1;
            out.extend(g[start..end].iter().map(|r| (*r).clone()));
        }
    }
    out
}

pub(super) fn batches<T>(records: &[T], seed: u64) -> Vec<&[T]> {
    let mut rng = fastrand::Rng::with_seed(seed ^ 0x5eed);
    let mut out = Vec::new();
    let mut rest = records;
    while !rest.is_empty() {
        let n = rng.usize(1..=rest.len().min(12));
        let (batch, tail) = rest.split_at(n);
        out.push(batch);
        rest = tail;
    }
    out
}

fn row_writes(config: &Config, records: &[ChangeRecord]) -> usize {
    let planner = model::Planner::new(config);
    records
        .iter()
        .map(|r| {
            planner
                .plan(r)
                .mutations
                .iter()
                .filter(|m| matches!(m, model::Mutation::PutRow { .. } | model::Mutation::DeleteRow { .. }))
                .count()
        })
        .sum()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Any delivery that brings every group's records in order at least once,
    /// whatever duplicates, interleaving across groups and old ranges come
    /// with it, converges to the from-scratch state under `Guard::Newer`;
    /// and when the live stream ran first (in order), replaying the whole
    /// history again changes nothing and counts every row write skipped.
    #[test]
    fn guarded_deliveries_converge_whatever_the_order(
        history in proptest::collection::vec(testing::write(), 1..40),
        seed in any::<u64>(),
        live_first in any::<bool>(),
    ) {
        let (store, records) = written(&history);
        let config = store.config().clone();
        if live_first {
            let live = indexer(&store, Guard::InOrder);
            for batch in batches(&records, seed) {
                let _ = deliver(&live, batch);
            }
            prop_assert_eq!(store.snapshot(), store.recompute(), "the in-order stream converges");
            let before = store.snapshot();
            let replay = indexer(&store, Guard::Newer);
            let (mut stale, mut written) = (0, 0);
            for batch in batches(&records, seed.rotate_left(7)) {
                let outcome = deliver(&replay, batch);
                stale += outcome.stats.apply.stale;
                written += outcome.stats.apply.applied.put_row + outcome.stats.apply.applied.delete_row;
            }
            prop_assert_eq!(store.snapshot(), before, "a replay of the history changes nothing");
            prop_assert_eq!(written, 0, "no row write of an old record gets through");
            let planned = row_writes(&config, &records);
            prop_assert!(stale >= planned, "every row write is counted skipped ({} < {})", stale, planned);
        }
        let delivery = schedule(&config, &records, seed);
        let guarded = indexer(&store, Guard::Newer);
        for batch in batches(&delivery, seed) {
            let outcome = deliver(&guarded, batch);
            prop_assert!(outcome.failed.is_none(), "{:?}", outcome.failures);
        }
        prop_assert_eq!(store.snapshot(), store.recompute());
    }
}

fn v(n: u128) -> model::Version {
    model::Version::of_sequence(&n.to_string()).unwrap_or_else(|e| panic!("{e}"))
}

fn s(text: &str) -> Value {
    Value::S(text.to_owned())
}

/// One record by hand: an issue INSERT, MODIFY or REMOVE, its one custom
/// field named `old` / `new`.
fn issue_record(seq: u128, old: Option<&str>, new: Option<&str>) -> ChangeRecord {
    let image = |field: &str| {
        Image::from([
            ("id".to_owned(), s("issue-9")),
            ("rel".to_owned(), s("project-1")),
            ("name".to_owned(), s("n")),
            ("num".to_owned(), Value::N("1".to_owned())),
            (
                "custom_fields".to_owned(),
                Value::M([(field.to_owned(), s("x"))].into_iter().collect()),
            ),
        ])
    };
    let kind = match (old, new) {
        (None, Some(_)) => model::EventKind::Insert,
        (Some(_), Some(_)) => model::EventKind::Modify,
        _ => model::EventKind::Remove,
    };
    ChangeRecord {
        event_id: Some(format!("e{seq}")),
        kind,
        table: Some("issues".into()),
        source_arn: Some(model::delivery::stream_arn("issues").into()),
        keys: Image::from([("id".to_owned(), s("issue-9")), ("rel".to_owned(), s("project-1"))]),
        old: old.map(image),
        new: new.map(image),
        sequence_number: seq.to_string(),
        created: None,
        size_bytes: None,
        view_type: Some(model::record::ViewType::NewAndOldImages),
        ttl_expiry: false,
    }
}

#[test]
fn a_deleted_row_keeps_a_tombstone_that_an_older_record_cannot_pass() {
    let store = Arc::new(MemoryStore::new(example()));
    let live = indexer(&store, Guard::InOrder);
    // 99 < 100 as numbers, not as strings.
    let insert = issue_record(99, None, Some("a"));
    let moved = issue_record(100, Some("a"), Some("b"));
    let _ = deliver(&live, &[insert.clone(), moved]);
    let rows = store.rows(0);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].0.partition, "b");
    assert_eq!(store.tombstones(), 1, "the row of `a` left a tombstone");

    // The old INSERT again, guarded: its row `a` stays deleted.
    let replay = indexer(&store, Guard::Newer);
    let outcome = deliver(&replay, std::slice::from_ref(&insert));
    assert_eq!(outcome.stats.apply.stale, 1);
    assert_eq!(outcome.stats.apply.requests.put_row_if, 1);
    assert_eq!(outcome.stats.apply.requests.write_rows, 0);
    assert_eq!(store.rows(0), rows, "nothing came back");

    // Unguarded, it would have: the guard is what holds.
    let unguarded = indexer(&store, Guard::InOrder);
    let _ = deliver(&unguarded, &[insert]);
    assert_eq!(store.rows(0).len(), 2, "an unguarded old record resurrects the row");
}

#[test]
fn a_newer_record_passes_the_guard_and_versions_compare_as_numbers() {
    let store = Arc::new(MemoryStore::new(example()));
    let replay = indexer(&store, Guard::Newer);
    let outcome = deliver(&replay, &[issue_record(99, None, Some("a"))]);
    assert_eq!((outcome.stats.apply.stale, outcome.stats.apply.applied.put_row), (0, 1));
    let key = store.rows(0)[0].0.clone();
    assert_eq!(store.row_version(0, &key), Some(v(99)));
    let outcome = deliver(&replay, &[issue_record(100, Some("a"), None)]);
    assert_eq!(
        (outcome.stats.apply.stale, outcome.stats.apply.applied.delete_row),
        (0, 1)
    );
    assert!(store.rows(0).is_empty());
    assert_eq!(
        store.row_version(0, &key),
        Some(v(100)),
        "the tombstone holds the delete's version"
    );
}

fn node(id: &str) -> Image {
    Image::from([("source".to_owned(), s(id)), ("target".to_owned(), s(id))])
}

fn edge(node: &str, user: u8) -> Image {
    Image::from([
        ("source".to_owned(), s(node)),
        ("target".to_owned(), s(&format!("GOALMEMBERSHIP-USER-{user}"))),
        ("gsi0".to_owned(), s("500-LEAD")),
    ])
}

fn mark_of(store: &MemoryStore, id: &str) -> Option<Value> {
    store
        .get_item("records", &node(id))
        .ok()
        .flatten()
        .and_then(|n| n.get(model::version::EDGE_MARK_ATTRIBUTE).cloned())
}

#[test]
fn a_node_s_mark_skips_older_set_changes_and_counts_them() {
    let store = Arc::new(MemoryStore::new(example()));
    store.record_stream(true);
    let _ = store.put_item("records", node("GOAL-1"));
    let _ = store.put_item("records", edge("GOAL-1", 1));
    let _ = store.delete_item("records", &edge("GOAL-1", 1));
    let records: Vec<ChangeRecord> = store.take_stream().into_iter().map(|e| e.record).collect();
    store.record_stream(false);
    let live = indexer(&store, Guard::InOrder);
    let _ = deliver(&live, &records);
    assert_eq!(store.snapshot(), store.recompute());
    let last = records.last().map(|r| r.sequence_number.clone()).unwrap_or_default();
    let last = model::Version::of_sequence(&last).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        mark_of(&store, "GOAL-1"),
        Some(Value::S(last.as_str().to_owned())),
        "the mark is the last record applied"
    );
    // The edge's INSERT again: older than the mark, skipped.
    let replay = indexer(&store, Guard::Newer);
    let outcome = deliver(&replay, &records[1..2]);
    assert_eq!(outcome.stats.apply.stale, 1);
    assert_eq!(outcome.stats.apply.applied.add_member, 0);
    assert_eq!(
        store.snapshot(),
        store.recompute(),
        "the deleted edge's member stays out"
    );
}

#[test]
fn the_in_order_mark_never_claims_a_record_not_fully_applied() {
    // One lane: r1 changes a role (ADD the new member, DELETE the old one),
    // r2 adds another edge. Coalesced: ADD(r1's new, r2's), then DELETE(r1's
    // old). The DELETE fails for good here: the ADD, which finished r2 but
    // not r1, must not have set the mark to r2, or a later guarded
    // redelivery of r1 would be skipped and r1's DELETE lost.
    use crate::store::faulty::{Call, Fault, FaultyStore};
    use crate::store::SetChange;
    let memory = Arc::new(MemoryStore::new(example()));
    let _ = memory.put_item("records", node("GOAL-2"));
    memory.record_stream(true);
    let mut lead = edge("GOAL-2", 1);
    let _ = memory.put_item("records", lead.clone());
    let setup: Vec<ChangeRecord> = memory.take_stream().into_iter().map(|e| e.record).collect();
    let _ = deliver(&indexer(&memory, Guard::InOrder), &setup);
    let setup_mark = mark_of(&memory, "GOAL-2");
    assert!(setup_mark.is_some());
    lead.insert("gsi0".to_owned(), s("400-CONTRIBUTOR"));
    let _ = memory.put_item("records", lead);
    let _ = memory.put_item("records", edge("GOAL-2", 2));
    let batch: Vec<ChangeRecord> = memory
        .take_stream()
        .into_iter()
        .filter(|e| e.origin == Origin::User)
        .map(|e| e.record)
        .collect();
    memory.record_stream(false);
    assert_eq!(batch.len(), 2);

    let deletes_fail = |call: &Call<'_>| match call {
        Call::UpdateSet {
            change: SetChange::Remove(_),
            ..
        } => Fault::Throttle,
        _ => Fault::None,
    };
    let faulty = Indexer::new(
        memory.config().clone(),
        FaultyStore::new(memory.clone(), deletes_fail),
        MemoryQuarantine::new(),
        Options {
            backoff: Backoff::immediate(2),
            ..Options::default()
        },
    );
    let outcome = block(faulty.handle(&lambda_event(&batch))).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        outcome.failed_at(),
        Some(batch[0].sequence_number.as_str()),
        "r1 is unfinished"
    );
    assert_eq!(
        mark_of(&memory, "GOAL-2"),
        setup_mark,
        "the ADD finished r2 only: no mark past r1"
    );

    // Redelivered guarded (say, after the failure destination), r1 is not skipped.
    let replay = indexer(&memory, Guard::Newer);
    let outcome = deliver(&replay, &batch);
    assert_eq!(outcome.stats.apply.stale, 0);
    assert_eq!(memory.snapshot(), memory.recompute());
    let last = model::Version::of_sequence(&batch[1].sequence_number).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(mark_of(&memory, "GOAL-2"), Some(Value::S(last.as_str().to_owned())));
}
