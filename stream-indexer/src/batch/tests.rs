//! Batch semantics: targeted cases, and a property test that runs random
//! histories through the indexer over a faulty store while emulating
//! Lambda's retry rules.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use model::config::Config;
use model::index::RowKey;
use model::record::ChangeRecord;
use model::{Image, Mutation, Planner, Value};
use proptest::prelude::*;

use super::*;
use crate::apply::Backoff;
use crate::store::faulty::{Call, Fault, FaultyStore, RandomFaults, Script};
use crate::store::memory::{lambda_event, MemoryStore, Origin, StreamEntry};
use aws_kit::quarantine::memory::MemoryQuarantine;

type TestIndexer = Indexer<FaultyStore<MemoryStore>, MemoryQuarantine>;

fn s(v: &str) -> Value {
    Value::S(v.to_owned())
}

fn indexer(script: impl crate::store::faulty::Script + 'static, options: Options) -> TestIndexer {
    let config = example();
    let store = MemoryStore::new(config.clone());
    store.record_stream(true);
    Indexer::new(
        config,
        FaultyStore::new(store, script),
        MemoryQuarantine::new(),
        options,
    )
}

fn quick() -> Options {
    Options {
        concurrency: 4,
        backoff: Backoff::immediate(3),
        ..Options::default()
    }
}

fn memory(ix: &TestIndexer) -> &MemoryStore {
    ix.store().inner()
}

fn node(id: &str) -> Image {
    Image::from([
        ("source".to_owned(), s(id)),
        ("target".to_owned(), s(id)),
        ("name".to_owned(), s("n")),
    ])
}

fn edge(node: &str, target: &str, role: &str) -> Image {
    Image::from([
        ("source".to_owned(), s(node)),
        ("target".to_owned(), s(target)),
        ("gsi0".to_owned(), s(role)),
    ])
}

fn issue(id: &str, fields: Vec<(&str, Value)>) -> Image {
    let map = fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    Image::from([
        ("id".to_owned(), s(id)),
        ("rel".to_owned(), s(id)),
        ("num".to_owned(), Value::N("7".into())),
        ("custom_fields".to_owned(), Value::M(map)),
    ])
}

/// Takes the stream so far and handles it as one batch.
fn deliver(ix: &TestIndexer) -> (Vec<StreamEntry>, Outcome<BatchStats>) {
    let entries = memory(ix).take_stream();
    let payload = lambda_event(entries.iter().map(|e| &e.record));
    let outcome = block(ix.handle(&payload)).expect("a batch");
    (entries, outcome)
}

#[test]
fn the_response_lists_the_failure_or_nothing() {
    let ok = Outcome::<BatchStats>::default();
    assert_eq!(ok.response_json(), r#"{"batchItemFailures":[]}"#);
    let failed = Outcome::<BatchStats> {
        failed: Some(Failed::From("4200".into())),
        ..Outcome::<BatchStats>::default()
    };
    assert_eq!(
        failed.response_json(),
        r#"{"batchItemFailures":[{"itemIdentifier":"4200"}]}"#
    );
    let whole = Outcome::<BatchStats> {
        failed: Some(Failed::WholeBatch),
        ..Outcome::<BatchStats>::default()
    };
    assert!(whole.is_whole_batch_failure());
    assert_eq!(
        whole.response_json(),
        r#"{"batchItemFailures":[{"itemIdentifier":""}]}"#
    );
}

#[test]
fn a_payload_that_is_not_a_batch_is_an_error() {
    let ix = indexer(|_: &Call<'_>| Fault::None, quick());
    assert!(matches!(block(ix.handle(b"[1, 2]")), Err(ParseError { line: 1, .. })));
    assert!(matches!(
        block(ix.handle(b"{\"Records\": 5}")),
        Err(ParseError { line: 1, .. })
    ));
}

#[test]
fn a_batch_builds_rows_and_sets_and_loops_back_quietly() {
    let ix = indexer(|_: &Call<'_>| Fault::None, quick());
    let m = memory(&ix);
    m.put_item("records", edge("GOAL-1", "GOALMEMBERSHIP-U1", "400-C"))
        .expect("put");
    m.put_item("records", node("GOAL-1")).expect("put");
    m.put_item("records", edge("GOAL-1", "GOALMEMBERSHIP-U2", "300-M"))
        .expect("put");
    m.put_item("records", edge("GOAL-1", "GOALMEMBERSHIP-U1", "500-L"))
        .expect("put");
    m.put_item(
        "issues",
        issue("issue-1", vec![("f1", Value::N("1".into())), ("f2", s("x\u{0}y"))]),
    )
    .expect("put");
    let (_, outcome) = deliver(&ix);
    assert_eq!(outcome.failed, None);
    assert!(outcome.quarantined.is_empty(), "{:?}", outcome.quarantined);
    assert_eq!(outcome.stats.groups, 2);
    assert_eq!(outcome.stats.apply.applied.put_row, 2);
    // The pipeline's own writes come back and plan nothing.
    let (entries, again) = deliver(&ix);
    assert!(!entries.is_empty() && entries.iter().all(|e| e.origin == Origin::Pipeline));
    assert_eq!(again.stats.planned.total(), 0);
    assert!(memory(&ix).take_stream().is_empty());
    assert_eq!(m.snapshot(), m.recompute());
}

#[test]
fn the_lowest_failure_is_compared_as_a_number() {
    let down: HashSet<&str> = HashSet::from(["A", "B"]);
    let ix = indexer(
        move |call: &Call<'_>| match call {
            Call::Query { partition, .. } | Call::UpdateSet { node: partition, .. } if down.contains(partition) => {
                Fault::Throttle
            }
            _ => Fault::None,
        },
        quick(),
    );
    let m = memory(&ix);
    m.set_next_sequence_number(98);
    m.put_item("records", node("C")).expect("put"); // 98: fine
    m.put_item("records", node("A")).expect("put"); // 99: fails
    m.put_item("records", node("B")).expect("put"); // 100: fails
    let (_, outcome) = deliver(&ix);
    assert_eq!(outcome.failed_at(), Some("99"));
    assert_eq!(outcome.stats.failed_groups, 2);
    assert_eq!(outcome.failures.len(), 2);
    assert!(outcome.failures.iter().all(|f| f.fault.is_transient()));
    assert_eq!(
        outcome.response_json(),
        r#"{"batchItemFailures":[{"itemIdentifier":"99"}]}"#
    );
    assert_eq!(m.node_sets(0)["C"].complete, Some(true));
}

#[test]
fn poison_is_applied_then_quarantined_and_counts_as_handled() {
    let ix = indexer(|_: &Call<'_>| Fault::None, quick());
    let m = memory(&ix);
    m.put_item("issues", issue("issue-1", vec![("f1", Value::N("1".into()))]))
        .expect("put");
    let _ = deliver(&ix);
    assert_eq!(m.rows(0).len(), 1);
    // The field becomes a list: the `any` column refuses it.
    m.put_item("issues", issue("issue-1", vec![("f1", Value::L(vec![]))]))
        .expect("put");
    m.put_item("issues", issue("issue-2", vec![("f9", Value::Bool(true))]))
        .expect("put");
    let (entries, outcome) = deliver(&ix);
    assert_eq!(outcome.failed, None);
    assert_eq!(outcome.stats.quarantined, 1);
    let q = ix.quarantine().entries();
    assert_eq!(q.len(), 1);
    assert_eq!(
        q[0].sequence_number.as_deref(),
        Some(entries[0].record.sequence_number.as_str())
    );
    assert_eq!(q[0].table.as_deref(), Some("issues"));
    assert_eq!(q[0].consumer, "stream-indexer");
    assert!(q[0].reason.contains("custom_fields") && q[0].reason.contains(&entries[0].record.sequence_number));
    assert!(q[0].raw.contains("\"SequenceNumber\""));
    // Its old row is gone, the good record's row is there.
    let rows: Vec<String> = m.rows(0).into_iter().map(|(k, _)| k.partition).collect();
    assert_eq!(rows, vec!["f9"]);
}

#[test]
fn a_quarantine_failure_fails_its_record() {
    let ix = indexer(|_: &Call<'_>| Fault::None, quick());
    let m = memory(&ix);
    m.put_item("issues", issue("issue-1", vec![("f1", Value::L(vec![]))]))
        .expect("put");
    m.put_item("issues", issue("issue-2", vec![("f2", s("ok"))]))
        .expect("put");
    m.put_item("issues", issue("issue-3", vec![("f3", Value::L(vec![]))]))
        .expect("put");
    ix.quarantine().set_failing(true);
    let (entries, outcome) = deliver(&ix);
    assert_eq!(outcome.failed_at(), Some(entries[0].record.sequence_number.as_str()));
    assert_eq!(outcome.failures.len(), 1);
    assert_eq!(outcome.failures[0].stage, model::settlement::Stage::Quarantine);
    assert_eq!(outcome.stats.quarantined, 0);
    assert!(outcome.quarantined.is_empty());
    // The good record was applied all the same (and will be replayed harmlessly).
    assert_eq!(m.rows(0).len(), 1);
}

#[test]
fn poison_at_or_after_the_failure_waits_for_redelivery() {
    let ix = indexer(
        |call: &Call<'_>| match call {
            Call::Query { partition: "A", .. } | Call::UpdateSet { node: "A", .. } => Fault::Throttle,
            _ => Fault::None,
        },
        quick(),
    );
    let m = memory(&ix);
    m.put_item("issues", issue("issue-1", vec![("f1", Value::L(vec![]))]))
        .expect("put"); // poison, before
    m.put_item("records", node("A")).expect("put"); // fails
    m.put_item("issues", issue("issue-2", vec![("f1", Value::L(vec![]))]))
        .expect("put"); // poison, after
    let (entries, outcome) = deliver(&ix);
    assert_eq!(outcome.failed_at(), Some(entries[1].record.sequence_number.as_str()));
    let q = ix.quarantine().entries();
    assert_eq!(q.len(), 1);
    assert_eq!(
        q[0].sequence_number.as_deref(),
        Some(entries[0].record.sequence_number.as_str())
    );
}

#[test]
fn a_refused_mutation_quarantines_its_record_only() {
    let ix = indexer(
        |call: &Call<'_>| match call {
            Call::WriteRows(w) if w.iter().any(|w| w.key.partition == "big") => Fault::Refused("item too large".into()),
            _ => Fault::None,
        },
        quick(),
    );
    let m = memory(&ix);
    m.put_item(
        "issues",
        issue("issue-1", vec![("a", s("1")), ("big", s("2")), ("c", s("3"))]),
    )
    .expect("put");
    m.put_item("issues", issue("issue-2", vec![("d", s("4"))]))
        .expect("put");
    let (entries, outcome) = deliver(&ix);
    assert_eq!(outcome.failed, None);
    assert_eq!(outcome.stats.apply.refused, 1);
    assert_eq!(outcome.quarantined.len(), 1);
    assert_eq!(
        outcome.quarantined[0].sequence_number.as_deref(),
        Some(entries[0].record.sequence_number.as_str())
    );
    assert!(
        outcome.quarantined[0].reason.to_string().contains("item too large"),
        "{:?}",
        outcome.quarantined
    );
    assert_eq!(m.rows(0).len(), 3, "a, c and d");
}

#[test]
fn a_deployment_error_fails_the_batch_from_its_record() {
    let ix = indexer(
        |call: &Call<'_>| match call {
            Call::WriteRows(_) => Fault::Deployment("ResourceNotFoundException: IssueAttribIndex".into()),
            _ => Fault::None,
        },
        quick(),
    );
    let m = memory(&ix);
    m.put_item("records", node("A")).expect("put");
    m.put_item("issues", issue("issue-1", vec![("a", s("1"))]))
        .expect("put");
    let (entries, outcome) = deliver(&ix);
    assert_eq!(outcome.failed_at(), Some(entries[1].record.sequence_number.as_str()));
    assert_eq!(outcome.failures[0].fault.class(), model::Class::Deployment);
    assert_eq!(outcome.stats.apply.requests.write_rows, 1, "not retried");
    assert_eq!(m.node_sets(0)["A"].complete, Some(true), "other groups go on");
}

#[test]
fn records_without_a_sequence_number_fail_the_whole_batch_if_they_cannot_be_quarantined() {
    let ix = indexer(|_: &Call<'_>| Fault::None, quick());
    let m = memory(&ix);
    m.put_item("issues", issue("issue-1", vec![("a", s("1"))]))
        .expect("put");
    let record = m.take_stream().remove(0).record;
    let good = crate::store::memory::lambda_record(&record);
    let payload =
        serde_json::json!({"Records": [good, {"eventName": "INSERT", "dynamodb": {"Keys": {"id": {"S": "x"}}}}]});
    let bytes = payload.to_string().into_bytes();
    ix.quarantine().set_failing(true);
    let outcome = block(ix.handle(&bytes)).expect("a batch");
    assert!(outcome.is_whole_batch_failure(), "{outcome:?}");
    assert_eq!(
        outcome.response_json(),
        r#"{"batchItemFailures":[{"itemIdentifier":""}]}"#
    );
    ix.quarantine().set_failing(false);
    let outcome = block(ix.handle(&bytes)).expect("a batch");
    assert_eq!(outcome.failed, None);
    let q = ix.quarantine().entries();
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].sequence_number, None);
    assert!(
        q[0].reason.contains("Records[1]") && q[0].reason.contains("SequenceNumber"),
        "{}",
        q[0].reason
    );
}

/// Everything a handled batch leaves behind in the indexer's store and quarantine.
fn left_behind(ix: &TestIndexer) -> impl PartialEq + std::fmt::Debug {
    let m = memory(ix);
    let config = m.config().clone();
    let rows: Vec<_> = (0..config.indexes.len()).map(|i| m.rows(i)).collect();
    let sets: Vec<_> = (0..config.edge_sets.len()).map(|e| m.node_sets(e)).collect();
    (rows, sets, m.take_stream(), ix.quarantine().entries())
}

#[test]
fn a_payload_read_record_by_record_is_handled_as_its_parsed_records_are() {
    // Good records of every kind, and every way a record can be poison or
    // unreadable, in one payload.
    let source = indexer(|_: &Call<'_>| Fault::None, quick());
    let m = memory(&source);
    m.put_item("records", node("A")).expect("put");
    m.put_item("records", edge("A", "B", "LEAD")).expect("put");
    m.put_item("records", edge("A", "C", "MEMBER")).expect("put");
    m.put_item("issues", issue("issue-1", vec![("f1", Value::N("1".into()))]))
        .expect("put");
    m.put_item("issues", issue("issue-1", vec![("f1", Value::L(vec![]))]))
        .expect("put");
    m.delete_item("records", &edge("A", "C", "MEMBER")).expect("delete");
    let mut records: Vec<serde_json::Value> = m
        .take_stream()
        .iter()
        .map(|e| crate::store::memory::lambda_record(&e.record))
        .collect();
    let mut unknown_table = records[0].clone();
    unknown_table["eventSourceARN"] = "arn:aws:dynamodb:local:000000000000:table/nowhere/stream/x".into();
    unknown_table["dynamodb"]["SequenceNumber"] = "999".into();
    records.insert(2, unknown_table);
    records.insert(
        3,
        serde_json::json!({"eventName": "INSERT", "dynamodb": {"SequenceNumber": "1000"}}),
    );
    records.insert(4, serde_json::json!([1, 2]));
    let payload = serde_json::json!({ "Records": records }).to_string().into_bytes();

    let streamed = indexer(|_: &Call<'_>| Fault::None, quick());
    let outcome = block(streamed.handle(&payload)).expect("a batch");
    let parsed = indexer(|_: &Call<'_>| Fault::None, quick());
    let received = model::record::parse_batch(&payload).expect("a batch");
    let expected = block(parsed.handle_received(&received));

    assert_eq!(outcome, expected);
    assert_eq!(left_behind(&streamed), left_behind(&parsed));
    assert_eq!(outcome.stats.quarantined, 4, "{outcome:?}");
    assert!(outcome.stats.apply.requests.total() > 0, "{outcome:?}");
}

#[test]
fn a_payload_read_ahead_is_handled_as_one_read_here() {
    // Several of the reader's chunks of records (see `batch::reader`, whose
    // tests compare the records handed over either way). Read ahead, the
    // batch's row writes are packed on a second thread too (see
    // `apply::split`, whose tests compare the calls and lanes either way).
    let (_, batches) = crate::workload::example_batches(example(), 400, 400, 5);
    let payload = batches.first().cloned().unwrap_or_default();
    let read = |from| {
        indexer(
            |_: &Call<'_>| Fault::None,
            Options {
                read_ahead_from: from,
                ..quick()
            },
        )
    };
    let (here, mut ahead) = (read(None), read(Some(0)));
    // Read ahead on any machine, one core or more.
    ahead.cores = 2;
    let expected = block(here.handle(&payload)).expect("a batch");
    let outcome = block(ahead.handle(&payload)).expect("a batch");
    assert_eq!(outcome, expected);
    assert_eq!(left_behind(&ahead), left_behind(&here));
    assert!(outcome.stats.records > 300, "{outcome:?}");
    assert!(outcome.stats.apply.requests.total() > 0, "{outcome:?}");
}

#[test]
fn the_handler_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let ix = indexer(|_: &Call<'_>| Fault::None, quick());
    let future = ix.handle(b"{}");
    assert_send(&future);
}

// ---------------------------------------------------------------------------
// The property: random histories, random faults, Lambda's retry rules.
// ---------------------------------------------------------------------------

use crate::test_support::{block, example};
use model::testing::{self, Tables, Write, ISSUES, NODES};

/// Every group of the histories: (table, partition key value).
fn all_groups() -> Vec<GroupId> {
    NODES
        .iter()
        .map(|n| ("records".to_owned(), (*n).to_owned()))
        .chain(ISSUES.iter().map(|i| ("issues".to_owned(), (*i).to_owned())))
        .collect()
}

type GroupId = (String, String);

/// A step of a batch history: a user write, or Lambda invocations.
#[derive(Debug, Clone)]
enum Step {
    Write(Write),
    Invoke { count: usize },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        23 => testing::write().prop_map(Step::Write),
        4 => (1usize..4).prop_map(|count| Step::Invoke { count }),
    ]
}

/// Which groups are down, while the outage lasts; and which group each row key belongs to.
#[derive(Default)]
struct Outage {
    active: bool,
    down: HashSet<GroupId>,
    rows: HashMap<(usize, RowKey), GroupId>,
}

/// A row write as the independent accounting packs it: its key, the
/// sequence number of its record, and whether its group is down.
type OracleWrite = ((usize, RowKey), u128, bool);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The groups a call touches: a row call may hold writes of several groups.
fn call_groups(outage: &Outage, call: &Call<'_>) -> Vec<GroupId> {
    match call {
        Call::WriteRows(writes) => writes
            .iter()
            .filter_map(|w| outage.rows.get(&(w.index, w.key.clone())).cloned())
            .collect(),
        Call::UpdateSet { edge_set, node, .. } | Call::SetMarker { edge_set, node, .. } => {
            vec![(example_edge_table(*edge_set), (*node).to_owned())]
        }
        Call::Query { table, partition } => vec![((*table).to_owned(), (*partition).to_owned())],
    }
}

fn example_edge_table(edge_set: usize) -> String {
    debug_assert_eq!(edge_set, 0);
    "records".to_owned()
}

fn group_of(config: &Config, record: &ChangeRecord) -> GroupId {
    let table = record.table.as_deref().unwrap_or_default().to_owned();
    let pk = config
        .table(&table)
        .map(|t| t.partition_key.clone())
        .unwrap_or_default();
    let value = match record.keys.get(&pk) {
        Some(Value::S(v)) => v.clone(),
        other => format!("{other:?}"),
    };
    (table, value)
}

fn seq(record: &ChangeRecord) -> u128 {
    record
        .sequence_number
        .parse()
        .expect("the memory store's sequence numbers are numbers")
}

/// The shard as Lambda reads it: every record so far, a checkpoint, and the
/// size limit of a retried batch when bisecting.
struct Shard {
    records: Vec<StreamEntry>,
    cursor: usize,
    retry_limit: Option<usize>,
}

struct Harness {
    config: Arc<Config>,
    indexer: TestIndexer,
    outage: Arc<Mutex<Outage>>,
    shard: Shard,
    batch_size: usize,
    bisect: bool,
    invocations: usize,
    outage_invocations: usize,
    runtime: tokio::runtime::Runtime,
}

impl Harness {
    fn memory(&self) -> &MemoryStore {
        self.indexer.store().inner()
    }

    fn put(&self, table: &str, item: Image) {
        self.memory()
            .put_item(table, item)
            .expect("declared table, string keys");
    }

    fn delete(&self, table: &str, key: Image) {
        self.memory()
            .delete_item(table, &key)
            .expect("declared table, string keys");
    }

    fn get(&self, table: &str, key: &Image) -> Option<Image> {
        self.memory().get_item(table, key).expect("declared table, string keys")
    }

    /// One Lambda invocation; false when there is nothing to deliver.
    fn invoke(&mut self) -> bool {
        self.shard.records.extend(self.memory().take_stream());
        let len = self.shard.records.len();
        if self.shard.cursor >= len {
            return false;
        }
        let limit = self.retry_limit().max(1);
        let batch: Vec<ChangeRecord> = self.shard.records[self.shard.cursor..len.min(self.shard.cursor + limit)]
            .iter()
            .map(|e| e.record.clone())
            .collect();

        // The independent accounting. With the outage on, every request
        // touching a down group fails; nothing else may fail (random faults
        // never outlast the retries). So, with the outage on:
        // - a down group's set lane fails at its first request, which holds
        //   the group's first record with an edge-set mutation;
        // - the batch's index row writes are packed in batch order, each into
        //   the earliest call that comes after every call holding an earlier
        //   write to its key and has fewer than 25 writes; a call fails if it
        //   holds a write of a down group, or if the last earlier call holding
        //   one of its keys failed (then it is never sent); every record with
        //   a write in a failed call is not fully applied, whatever its group.
        // The batch fails at the lowest record not fully applied.
        let planner = Planner::new(&self.config);
        let expected = {
            let mut outage = lock(&self.outage);
            outage.active = self.invocations < self.outage_invocations;
            let mut unfinished: Vec<u128> = Vec::new();
            let mut lanes_failed: HashSet<GroupId> = HashSet::new();
            let mut calls: Vec<Vec<OracleWrite>> = Vec::new();
            let mut last_call: HashMap<(usize, RowKey), usize> = HashMap::new();
            for record in &batch {
                let group = group_of(&self.config, record);
                let down = outage.active && outage.down.contains(&group);
                for m in planner.plan(record).mutations {
                    match m {
                        Mutation::PutRow { index, key, .. } | Mutation::DeleteRow { index, key } => {
                            outage.rows.insert((index, key.clone()), group.clone());
                            let floor = last_call.get(&(index, key.clone())).map_or(0, |c| c + 1);
                            let at = match (floor..calls.len()).find(|&c| calls[c].len() < 25) {
                                Some(at) => at,
                                None => {
                                    calls.push(Vec::new());
                                    calls.len() - 1
                                }
                            };
                            calls[at].push(((index, key.clone()), seq(record), down));
                            last_call.insert((index, key), at);
                        }
                        _ => {
                            if down && lanes_failed.insert(group.clone()) {
                                unfinished.push(seq(record));
                            }
                        }
                    }
                }
            }
            // Whether the last call so far holding a key failed.
            let mut key_failed: HashMap<&(usize, RowKey), bool> = HashMap::new();
            for call in &calls {
                let failed = call
                    .iter()
                    .any(|(key, _, down)| *down || key_failed.get(key).copied().unwrap_or(false));
                for (key, record, _) in call {
                    key_failed.insert(key, failed);
                    if failed {
                        unfinished.push(*record);
                    }
                }
            }
            unfinished.into_iter().min()
        };

        let payload = lambda_event(batch.iter());
        let outcome = self
            .runtime
            .block_on(self.indexer.handle(&payload))
            .expect("a well-formed batch");
        self.invocations += 1;
        let failed = outcome
            .failed_at()
            .map(|f| f.parse::<u128>().expect("a sequence number"));
        assert_eq!(
            failed,
            expected,
            "batch {:?}..: {:?}",
            batch.first().map(|r| &r.sequence_number),
            outcome.failures
        );
        match failed {
            None => {
                self.shard.cursor += batch.len();
                self.shard.retry_limit = None;
            }
            Some(f) => {
                let at = batch
                    .iter()
                    .position(|r| seq(r) == f)
                    .expect("the failure is a record of the batch");
                // Lambda checkpoints before the failed record and retries from it.
                self.shard.cursor += at;
                self.shard.retry_limit = self.bisect.then(|| ((batch.len() - at) / 2).max(1));
            }
        }
        true
    }

    fn retry_limit(&self) -> usize {
        self.shard.retry_limit.unwrap_or(self.batch_size).min(self.batch_size)
    }

    fn drain(&mut self) {
        let mut n = 0;
        while self.invoke() {
            n += 1;
            assert!(n < 20_000, "the stream never drains");
        }
    }

    fn run(&mut self, step: &Step) {
        match step {
            Step::Write(write) => write.apply(self),
            Step::Invoke { count } => {
                for _ in 0..*count {
                    self.invoke();
                }
            }
        }
    }
}

impl Tables for Harness {
    fn get(&self, table: &str, key: &Image) -> Option<Image> {
        Harness::get(self, table, key)
    }

    fn put(&mut self, table: &str, item: Image) {
        Harness::put(self, table, item);
    }

    fn delete(&mut self, table: &str, key: &Image) {
        Harness::delete(self, table, key.clone());
    }

    fn keys(&self) -> Vec<(String, Image)> {
        let config = self.memory().config().clone();
        config
            .tables
            .iter()
            .flat_map(|t| {
                self.memory()
                    .items(&t.name)
                    .into_iter()
                    .map(|item| {
                        let key: Image = t
                            .primary_key()
                            .iter()
                            .filter_map(|k| item.get(k).map(|v| ((*k).to_owned(), v.clone())))
                            .collect();
                        (t.name.clone(), key)
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

struct Setup {
    batch_size: usize,
    concurrency: usize,
    bisect: bool,
    seed: u64,
    down: u8,
    outage_invocations: usize,
}

fn setup() -> impl Strategy<Value = Setup> {
    (
        1usize..12,
        1usize..5,
        any::<bool>(),
        any::<u64>(),
        any::<u8>(),
        0usize..5,
    )
        .prop_map(
            |(batch_size, concurrency, bisect, seed, down, outage_invocations)| Setup {
                batch_size,
                concurrency,
                bisect,
                seed,
                down,
                outage_invocations,
            },
        )
}

impl std::fmt::Debug for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "batch_size {} concurrency {} bisect {} seed {} down {:08b} outage {}",
            self.batch_size, self.concurrency, self.bisect, self.seed, self.down, self.outage_invocations
        )
    }
}

fn harness(setup: &Setup) -> Harness {
    let config = example();
    let outage = Arc::new(Mutex::new(Outage {
        active: false,
        down: all_groups()
            .into_iter()
            .enumerate()
            .filter(|(i, _)| setup.down & (1 << i) != 0)
            .map(|(_, g)| g)
            .collect(),
        rows: HashMap::new(),
    }));
    let mut random = RandomFaults::transient(setup.seed, 0.1, 0.05, 0.2, 2);
    let shared = outage.clone();
    let script = move |call: &Call<'_>| {
        {
            let outage = lock(&shared);
            if outage.active && call_groups(&outage, call).iter().any(|g| outage.down.contains(g)) {
                return Fault::Throttle;
            }
        }
        random.fault(call)
    };
    let store = MemoryStore::new(config.clone());
    store.record_stream(true);
    // Sequence numbers gain a digit every ~20 records: a string comparison would get them wrong.
    store.set_next_sequence_number(900_000_000_000_000_000_000);
    store.grow_sequence_numbers(Some(3));
    let options = Options {
        concurrency: setup.concurrency,
        backoff: Backoff::immediate(4),
        ..Options::default()
    };
    let indexer = Indexer::new(
        config.clone(),
        FaultyStore::new(store, script),
        MemoryQuarantine::new(),
        options,
    );
    Harness {
        config,
        indexer,
        outage,
        shard: Shard {
            records: Vec::new(),
            cursor: 0,
            retry_limit: None,
        },
        batch_size: setup.batch_size,
        bisect: setup.bisect,
        invocations: 0,
        outage_invocations: setup.outage_invocations,
        runtime: tokio::runtime::Builder::new_current_thread().build().expect("runtime"),
    }
}

fn check_converged(h: &Harness) {
    let memory = h.memory();
    let snapshot = memory.snapshot();
    let expected = memory.recompute();
    assert_eq!(snapshot.rows, expected.rows, "index rows differ from the recomputation");
    assert_eq!(snapshot.sets, expected.sets, "edge sets differ from the recomputation");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn lambda_retries_over_faults_converge(steps in proptest::collection::vec(step(), 1..50), setup in setup(), from in any::<usize>()) {
        let mut h = harness(&setup);
        for step in &steps {
            h.run(step);
        }
        h.drain();
        check_converged(&h);

        // Loop-free: the pipeline's own writes plan nothing.
        let planner = Planner::new(&h.config);
        for entry in h.shard.records.iter().filter(|e| e.origin == Origin::Pipeline) {
            let plan = planner.plan(&entry.record);
            prop_assert!(plan.mutations.is_empty() && plan.problems.is_empty(), "{:?}", plan);
        }
        // Every poison record reached the quarantine (at least once).
        let quarantined: HashSet<String> =
            h.indexer.quarantine().entries().into_iter().filter_map(|e| e.sequence_number).collect();
        for entry in &h.shard.records {
            if !planner.plan(&entry.record).problems.is_empty() {
                prop_assert!(quarantined.contains(&entry.record.sequence_number));
            }
        }

        // At-least-once is harmless: redelivering any suffix of the shard
        // (faults and all) leaves the same derived data and the same items.
        let before = h.memory().snapshot();
        let items: Vec<Vec<Image>> = ["records", "issues"].iter().map(|t| h.memory().items(t)).collect();
        let len = h.shard.records.len();
        if len > 0 {
            h.shard.cursor = from % len;
            h.shard.retry_limit = None;
            h.drain();
            prop_assert_eq!(&h.memory().snapshot(), &before);
            let after: Vec<Vec<Image>> = ["records", "issues"].iter().map(|t| h.memory().items(t)).collect();
            prop_assert_eq!(after, items);
        }
    }
}

#[test]
fn batch_stats_add_up_and_keep_the_oldest_record() {
    let mut total = BatchStats {
        records: 2,
        oldest_created: Some(CreationTime { seconds: 20, nanos: 0 }),
        ..BatchStats::default()
    };
    let mut other = BatchStats {
        records: 3,
        quarantined: 1,
        oldest_created: Some(CreationTime { seconds: 10, nanos: 5 }),
        ..BatchStats::default()
    };
    other.apply.applied.put_row = 4;
    other.apply.requests.write_rows = 1;
    total.add(&other);
    assert_eq!(
        (
            total.records,
            total.quarantined,
            total.apply.applied.put_row,
            total.apply.requests.total()
        ),
        (5, 1, 4, 1)
    );
    assert_eq!(total.oldest_created, Some(CreationTime { seconds: 10, nanos: 5 }));
}
