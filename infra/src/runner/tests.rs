//! The runner on streams in memory, with a scripted function and a manual
//! clock: lineage, filters, checkpoints across a restart, discards to the
//! on-failure destination, and the iterator-age alarm raised and cleared.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use futures::FutureExt;
use model::filter::{Allowed, Consumer, Pattern};

use super::age::{Level, Thresholds};
use super::checkpoint::Checkpoints;
use super::failure::MemoryOnFailure;
use super::function::{Function, Invocation, Response};
use super::mapping::{Condition, Settings};
use super::stream::memory::{stream_arn, MemoryStreams};
use super::stream::Position;
use super::*;
use aws_kit::clock::{Clock, ManualClock};

/// A function that records what it was given and fails when told to.
#[derive(Default)]
struct Scripted {
    batches: Mutex<Vec<Vec<String>>>,
    /// Fail every invocation (a function error).
    failing: Mutex<bool>,
    /// Sequence numbers that always fail (reported as batchItemFailures).
    poison: Mutex<Vec<String>>,
}

impl Scripted {
    fn batches(&self) -> Vec<Vec<String>> {
        self.batches.lock().unwrap().clone()
    }

    fn delivered(&self) -> Vec<String> {
        self.batches().into_iter().flatten().collect()
    }

    fn set_failing(&self, failing: bool) {
        *self.failing.lock().unwrap() = failing;
    }
}

impl Function for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    fn invoke<'a>(&'a self, payload: &'a [u8], _now_ms: u64) -> BoxFuture<'a, Invocation> {
        let json: serde_json::Value = serde_json::from_slice(payload).unwrap();
        let seqs: Vec<String> = json["Records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["dynamodb"]["SequenceNumber"].as_str().unwrap().to_owned())
            .collect();
        self.batches.lock().unwrap().push(seqs.clone());
        let poison = self.poison.lock().unwrap().clone();
        let response = if *self.failing.lock().unwrap() {
            Response::Error("failing on purpose".to_owned())
        } else if let Some(bad) = seqs.iter().find(|s| poison.contains(s)) {
            Response::FailedFrom(bad.clone())
        } else {
            Response::Success
        };
        async move {
            Invocation {
                response,
                emf: Some("{\"_aws\":{}}".to_owned()),
                failures: Vec::new(),
                quarantined: 0,
            }
        }
        .boxed()
    }
}

fn record(table: &str, seq: &str, pk: &str) -> String {
    serde_json::json!({
        "eventName": "INSERT",
        "eventSourceARN": stream_arn(table),
        "dynamodb": {"Keys": {"pk": {"S": pk}}, "NewImage": {"pk": {"S": pk}}, "SequenceNumber": seq},
    })
    .to_string()
}

const T0: u64 = 1_000_000_000;
const POLL_MS: u64 = 250;

struct Rig {
    streams: Arc<MemoryStreams>,
    clock: Arc<ManualClock>,
    function: Arc<Scripted>,
    on_failure: Arc<MemoryOnFailure>,
}

impl Rig {
    fn new() -> Rig {
        Rig {
            streams: Arc::new(MemoryStreams::new()),
            clock: Arc::new(ManualClock::at(T0)),
            function: Arc::new(Scripted::default()),
            on_failure: Arc::new(MemoryOnFailure::new()),
        }
    }

    fn push(&self, table: &str, shard: &str, seq: &str, pk: &str) {
        self.streams
            .push(shard, seq, Some(self.clock.now_ms()), record(table, seq, pk));
    }

    fn runner(&self, settings: Settings, filters: Vec<Pattern>, checkpoints: Checkpoints) -> Runner {
        let mut runner = Runner::new(
            self.streams.clone(),
            self.clock.clone(),
            RunnerOptions {
                discover_every_ms: 10_000,
                poll_interval_ms: POLL_MS,
                thresholds: Thresholds {
                    warn_ms: 300_000,
                    page_ms: 3_600_000,
                },
            },
            checkpoints,
        );
        runner.add_mapping(MappingSpec {
            table: "t".to_owned(),
            consumer: Consumer::Indexer,
            settings,
            filters,
            function: self.function.clone(),
            on_failure: self.on_failure.clone(),
            retention_ms: super::age::STREAM_RETENTION_MS,
        });
        runner
    }
}

fn settings(batch_size: usize) -> Settings {
    Settings {
        batch_size,
        window_ms: 0,
        max_retry_attempts: None,
        max_record_age_ms: None,
        bisect_on_error: true,
    }
}

/// Rounds until the runner is idle (at most 50), first moving the clock on
/// by the poll interval (every shard is due for a look at what the test
/// did), then to the next turn after each round that did nothing, as
/// `streamdex run` sleeps.
async fn settle(rig: &Rig, runner: &mut Runner) -> Vec<RunEvent> {
    let mut events = Vec::new();
    rig.clock.advance(POLL_MS);
    for _ in 0..50 {
        let round = runner.round().await;
        events.extend(round.events);
        if !round.busy && runner.idle() {
            return events;
        }
        if !round.busy {
            rig.clock.advance(round.wait_ms);
        }
    }
    panic!("the runner never became idle: {events:#?}");
}

/// moto numbers a stream record by its shard's length when it is written, so
/// two writes at once can get one number, and `AFTER_SEQUENCE_NUMBER` that
/// number then hands out the second of them again on every read (seen
/// against a loaded moto: `streamdex run --exit-when-idle` re-read one record
/// every round and never went idle). Each record is delivered once, the
/// runner goes idle, and what is written next is read.
#[tokio::test]
async fn a_record_handed_out_again_is_delivered_once_and_the_runner_goes_idle() {
    let rig = Rig::new();
    rig.streams.add_shard("t", "s", None);
    rig.streams.iterate_like_moto();
    rig.push("t", "s", "100", "a");
    rig.push("t", "s", "101", "b");
    rig.push("t", "s", "101", "c");
    let mut runner = rig.runner(settings(10), Vec::new(), Checkpoints::default());
    settle(&rig, &mut runner).await;
    assert_eq!(rig.function.delivered(), ["100", "101", "101"]);
    let reads = rig.streams.reads();
    settle(&rig, &mut runner).await;
    assert!(rig.streams.reads() > reads, "it looked again");
    assert_eq!(rig.function.delivered(), ["100", "101", "101"], "and found nothing new");

    rig.push("t", "s", "103", "d");
    settle(&rig, &mut runner).await;
    assert_eq!(rig.function.delivered(), ["100", "101", "101", "103"]);
    let position = runner.checkpoints().get(&stream_arn("t"), "s", Consumer::Indexer);
    assert_eq!(position.sequence_number.as_deref(), Some("103"));
}

#[tokio::test]
async fn a_parent_shard_is_processed_before_its_children() {
    let rig = Rig::new();
    rig.streams.add_shard("t", "parent", None);
    rig.streams.add_shard("t", "left", Some("parent"));
    rig.streams.add_shard("t", "right", Some("parent"));
    rig.streams.add_shard("t", "grandchild", Some("left"));
    rig.push("t", "parent", "100", "a");
    rig.push("t", "parent", "101", "b");
    rig.push("t", "left", "200", "a");
    rig.push("t", "right", "300", "b");
    rig.push("t", "grandchild", "400", "a");
    let mut runner = rig.runner(settings(10), Vec::new(), Checkpoints::default());
    settle(&rig, &mut runner).await;
    assert_eq!(
        rig.function.delivered(),
        ["100", "101"],
        "children wait while the parent is open"
    );

    rig.streams.close("parent");
    rig.streams.close("left");
    let events = settle(&rig, &mut runner).await;
    let delivered = rig.function.delivered();
    let at = |seq: &str| delivered.iter().position(|s| s == seq).unwrap();
    assert!(at("101") < at("200") && at("101") < at("300"));
    assert!(at("200") < at("400"), "the grandchild after its parent: {delivered:?}");
    assert_eq!(delivered.len(), 5);
    let finished: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::ShardFinished { shard, .. } => Some(shard.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(finished, ["parent", "left"]);
    let finished = runner.checkpoints().finished(&stream_arn("t"), Consumer::Indexer);
    assert!(finished.contains("parent") && finished.contains("left") && !finished.contains("right"));
}

#[tokio::test]
async fn filtered_records_never_reach_the_function_but_are_checkpointed() {
    let rig = Rig::new();
    rig.streams.add_shard("t", "s", None);
    for (seq, pk) in [("1", "keep-1"), ("2", "drop-2"), ("3", "keep-3"), ("4", "drop-4")] {
        rig.push("t", "s", seq, pk);
    }
    let mut pattern = Pattern::default();
    pattern.fields.insert(
        ["dynamodb", "Keys", "pk", "S"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect(),
        vec![Allowed::Prefix("keep".to_owned())],
    );
    let mut runner = rig.runner(settings(10), vec![pattern], Checkpoints::default());
    settle(&rig, &mut runner).await;
    assert_eq!(rig.function.batches(), [vec!["1".to_owned(), "3".to_owned()]]);
    let position = runner.checkpoints().get(&stream_arn("t"), "s", Consumer::Indexer);
    assert_eq!(
        position.sequence_number.as_deref(),
        Some("4"),
        "the dropped tail is done too"
    );
}

#[tokio::test]
async fn a_restart_resumes_from_the_saved_checkpoints() {
    let rig = Rig::new();
    rig.streams.add_shard("t", "s", None);
    for seq in ["1", "2", "3"] {
        rig.push("t", "s", seq, "k");
    }
    let path = std::env::temp_dir().join(format!("streamdex-runner-restart-{}.json", std::process::id()));
    let mut runner = rig.runner(settings(2), Vec::new(), Checkpoints::default());
    settle(&rig, &mut runner).await;
    assert!(runner.take_changed());
    runner.checkpoints().save(&path).unwrap();
    drop(runner);

    for seq in ["4", "5"] {
        rig.push("t", "s", seq, "k");
    }
    let mut again = rig.runner(settings(2), Vec::new(), Checkpoints::load(&path).unwrap());
    let events = settle(&rig, &mut again).await;
    assert_eq!(
        rig.function.delivered(),
        ["1", "2", "3", "4", "5"],
        "nothing twice, nothing lost"
    );
    assert!(events
        .iter()
        .any(|e| matches!(e, RunEvent::ShardStarted { from: Position::After(seq), .. } if seq == "3")));
    let _ = std::fs::remove_file(path);
}

#[tokio::test]
async fn a_poison_record_is_bisected_out_and_reported_to_the_on_failure_queue() {
    let rig = Rig::new();
    rig.streams.add_shard("t", "s", None);
    for i in 1..=8 {
        rig.push("t", "s", &format!("{i}"), "k");
    }
    rig.function.poison.lock().unwrap().push("5".to_owned());
    let mut s = settings(8);
    s.max_retry_attempts = Some(2);
    let mut runner = rig.runner(s, Vec::new(), Checkpoints::default());
    let events = settle(&rig, &mut runner).await;
    let notices = rig.on_failure.notices();
    assert_eq!(notices.len(), 1, "{events:#?}");
    let n = &notices[0];
    assert_eq!(
        (n.start_sequence_number.as_str(), n.end_sequence_number.as_str()),
        ("5", "5")
    );
    assert_eq!(
        (n.condition, n.attempts, n.batch_size),
        (Condition::RetryAttemptsExhausted, 3, 1)
    );
    assert_eq!(n.stream_arn, stream_arn("t"));
    let delivered = rig.function.delivered();
    for seq in ["1", "2", "3", "4", "6", "7", "8"] {
        assert!(
            delivered.iter().any(|d| d == seq),
            "{seq} never delivered: {delivered:?}"
        );
    }
    // Three failed invocations of 5 alone: the first try and two retries.
    let alone = rig
        .function
        .batches()
        .iter()
        .filter(|b| *b == &vec!["5".to_owned()])
        .count();
    assert_eq!(alone, 3);
    let position = runner.checkpoints().get(&stream_arn("t"), "s", Consumer::Indexer);
    assert_eq!(position.sequence_number.as_deref(), Some("8"));
}

#[tokio::test]
async fn a_failed_delivery_keeps_the_records_until_it_succeeds() {
    let rig = Rig::new();
    rig.streams.add_shard("t", "s", None);
    rig.push("t", "s", "1", "k");
    rig.function.set_failing(true);
    rig.on_failure.set_failing(true);
    let mut s = settings(1);
    s.max_retry_attempts = Some(0);
    let mut runner = rig.runner(s, Vec::new(), Checkpoints::default());
    for _ in 0..3 {
        runner.round().await;
    }
    assert!(rig.on_failure.notices().is_empty());
    let position = runner.checkpoints().get(&stream_arn("t"), "s", Consumer::Indexer);
    assert_eq!(position.sequence_number, None, "not checkpointed while undelivered");
    rig.on_failure.set_failing(false);
    settle(&rig, &mut runner).await;
    assert_eq!(rig.on_failure.notices().len(), 1);
    assert_eq!(
        runner
            .checkpoints()
            .get(&stream_arn("t"), "s", Consumer::Indexer)
            .sequence_number
            .as_deref(),
        Some("1")
    );
}

#[tokio::test]
async fn records_past_the_maximum_age_go_to_the_on_failure_queue() {
    let rig = Rig::new();
    rig.streams.add_shard("t", "s", None);
    rig.push("t", "s", "1", "k");
    rig.push("t", "s", "2", "k");
    rig.clock.advance(61_000);
    rig.push("t", "s", "3", "k");
    let mut s = settings(10);
    s.max_record_age_ms = Some(60_000);
    let mut runner = rig.runner(s, Vec::new(), Checkpoints::default());
    settle(&rig, &mut runner).await;
    let notices = rig.on_failure.notices();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].condition, Condition::RecordAgeExceeded);
    assert_eq!(notices[0].batch_size, 2);
    assert_eq!(rig.function.delivered(), ["3"]);
}

#[tokio::test]
async fn an_unreadable_iterator_is_replaced_without_losing_records() {
    let rig = Rig::new();
    rig.streams.add_shard("t", "s", None);
    rig.push("t", "s", "1", "k");
    let mut runner = rig.runner(settings(10), Vec::new(), Checkpoints::default());
    settle(&rig, &mut runner).await;
    rig.push("t", "s", "2", "k");
    rig.streams.fail_next_reads(2);
    let events = settle(&rig, &mut runner).await;
    assert!(events
        .iter()
        .any(|e| matches!(e, RunEvent::Problem { error, .. } if error.contains("no longer valid"))));
    assert_eq!(rig.function.delivered(), ["1", "2"]);
}

/// The consumer falls behind on purpose (its function fails) while the
/// clock moves; the alarm goes to warn, then page, and clears once it
/// catches up. Time is the manual clock's: nothing sleeps.
#[tokio::test]
async fn the_iterator_age_alarm_is_raised_and_cleared() {
    let rig = Rig::new();
    rig.streams.add_shard("t", "s", None);
    let mut runner = rig.runner(settings(10), Vec::new(), Checkpoints::default());
    let mut transitions: Vec<(Level, Level)> = Vec::new();
    let mut record = |events: Vec<RunEvent>| {
        for e in events {
            if let RunEvent::Alarm { transition, .. } = e {
                transitions.push((transition.from, transition.to));
            }
        }
    };
    record(settle(&rig, &mut runner).await);
    rig.function.set_failing(true);
    rig.push("t", "s", "1", "k");
    let mut ages = BTreeMap::new();
    for minute in 0..=70u64 {
        record(runner.round().await.events);
        ages.insert(minute, runner.max_age_ms());
        rig.clock.advance(60_000);
    }
    assert_eq!(ages[&4], 240_000, "the age grows with the clock while the batch fails");
    assert_eq!(ages[&5], 300_000);
    rig.function.set_failing(false);
    record(settle(&rig, &mut runner).await);
    assert_eq!(runner.max_age_ms(), 0);
    assert_eq!(
        transitions,
        [
            (Level::Ok, Level::Warn),
            (Level::Warn, Level::Page),
            (Level::Page, Level::Ok)
        ]
    );
    let alarm = |retention_ms| {
        RunEvent::Alarm {
            table: "t".to_owned(),
            consumer: Consumer::Indexer,
            shard: "s".to_owned(),
            transition: super::age::Transition {
                from: Level::Ok,
                to: Level::Warn,
                age_ms: 301_000,
            },
            thresholds: Thresholds {
                warn_ms: 300_000,
                page_ms: 3_600_000,
            },
            retention_ms,
        }
        .to_string()
    };
    assert_eq!(
        alarm(super::age::STREAM_RETENTION_MS),
        "ALARM (warn) iterator age of t indexer shard s: 5 min 1 s ≥ 5 min 0 s (was OK); \
         23 h 54 min left before the stream trims the oldest unread record"
    );
    // A Kinesis data stream keeping records 48 hours.
    assert!(alarm(48 * 3_600_000).ends_with("; 47 h 54 min left before the stream trims the oldest unread record"));
}

#[tokio::test]
async fn a_table_without_a_stream_is_reported_missing_not_retried_as_a_problem() {
    let rig = Rig::new();
    // No shard was ever added for table `t`: the source knows no stream of it.
    let mut runner = rig.runner(settings(10), Vec::new(), Checkpoints::default());
    let round = runner.round().await;
    assert_eq!(round.missing.len(), 1, "{round:?}");
    assert!(
        round.missing[0].contains("`t`"),
        "names the table: {}",
        round.missing[0]
    );
    assert!(
        round.missing[0].contains("streamdex up"),
        "says what fixes it: {}",
        round.missing[0]
    );
    assert!(
        !round.events.iter().any(|e| matches!(e, RunEvent::Problem { .. })),
        "not a problem to retry: {:?}",
        round.events
    );
}

mod pacing;
