//! Per-shard pacing: a shard that returned records is read again at once,
//! an idle one backs off on its own up to the poll interval, iterators are
//! kept while they are valid, and a round says how long the caller may
//! sleep. Time is the manual clock's.

use std::collections::BTreeMap;

use super::*;
use crate::runner::poller::{FIRST_IDLE_WAIT_MS, ITERATOR_REFRESH_MS};
use crate::runner::stream::{Page, ShardInfo, StreamError, StreamSource};

/// The memory streams, with the time of every GetRecords and the number of
/// GetShardIterator calls per shard.
struct Counting {
    inner: Arc<MemoryStreams>,
    clock: Arc<ManualClock>,
    reads: Mutex<BTreeMap<String, Vec<u64>>>,
    iterators: Mutex<BTreeMap<String, usize>>,
}

impl Counting {
    fn reads(&self, shard: &str) -> Vec<u64> {
        self.reads.lock().unwrap().get(shard).cloned().unwrap_or_default()
    }

    fn iterators(&self, shard: &str) -> usize {
        self.iterators.lock().unwrap().get(shard).copied().unwrap_or(0)
    }
}

impl StreamSource for Counting {
    fn stream_arn<'a>(&'a self, table: &'a str) -> BoxFuture<'a, Result<String, StreamError>> {
        self.inner.stream_arn(table)
    }

    fn shards<'a>(&'a self, stream: &'a str) -> BoxFuture<'a, Result<Vec<ShardInfo>, StreamError>> {
        self.inner.shards(stream)
    }

    fn iterator<'a>(
        &'a self,
        stream: &'a str,
        shard: &'a str,
        position: &'a Position,
    ) -> BoxFuture<'a, Result<String, StreamError>> {
        *self.iterators.lock().unwrap().entry(shard.to_owned()).or_default() += 1;
        self.inner.iterator(stream, shard, position)
    }

    fn records<'a>(
        &'a self,
        stream: &'a str,
        shard: &'a str,
        iterator: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Page, StreamError>> {
        self.reads
            .lock()
            .unwrap()
            .entry(shard.to_owned())
            .or_default()
            .push(self.clock.now_ms());
        self.inner.records(stream, shard, iterator, limit)
    }
}

fn runner(rig: &Rig, source: Arc<Counting>) -> Runner {
    let mut runner = Runner::new(
        source,
        rig.clock.clone(),
        RunnerOptions {
            discover_every_ms: 600_000,
            poll_interval_ms: POLL_MS,
            thresholds: Thresholds {
                warn_ms: 300_000,
                page_ms: 3_600_000,
            },
        },
        Checkpoints::default(),
    );
    runner.add_mapping(MappingSpec {
        table: "t".to_owned(),
        consumer: Consumer::Indexer,
        settings: settings(10),
        filters: Vec::new(),
        function: rig.function.clone(),
        on_failure: rig.on_failure.clone(),
        retention_ms: crate::runner::age::STREAM_RETENTION_MS,
    });
    runner
}

fn counting(rig: &Rig) -> Arc<Counting> {
    Arc::new(Counting {
        inner: rig.streams.clone(),
        clock: rig.clock.clone(),
        reads: Mutex::default(),
        iterators: Mutex::default(),
    })
}

/// A rig whose table `t` has `shards`, read through a counting source by a
/// runner of one mapping.
fn rigged(shards: &[&str]) -> (Rig, Arc<Counting>, Runner) {
    let rig = Rig::new();
    for shard in shards {
        rig.streams.add_shard("t", shard, None);
    }
    let source = counting(&rig);
    let runner = runner(&rig, source.clone());
    (rig, source, runner)
}

/// Runs `n` rounds, moving the clock on by each round's wait.
async fn rounds(rig: &Rig, runner: &mut Runner, n: usize) {
    for _ in 0..n {
        let round = runner.round().await;
        rig.clock.advance(round.wait_ms);
    }
}

/// Runs rounds as `rounds` does until the runner is idle (fewer than 10).
async fn until_idle(rig: &Rig, runner: &mut Runner) {
    let mut n = 0;
    while !runner.idle() {
        rounds(rig, runner, 1).await;
        n += 1;
        assert!(n < 10, "never idle again");
    }
}

#[tokio::test]
async fn a_busy_shard_is_read_at_once_and_an_idle_one_backs_off_on_its_own() {
    let (rig, source, mut runner) = rigged(&["busy", "quiet"]);
    // Two seconds in 5 ms steps; the busy shard gets a record before every round.
    for step in 0..400u64 {
        rig.push("t", "busy", &format!("{}", 1000 + step), "k");
        let round = runner.round().await;
        assert!(round.busy, "a shard with records keeps the runner busy");
        rig.clock.advance(5);
    }
    let busy = source.reads("busy");
    assert_eq!(busy.len(), 400, "the busy shard is read every round");
    let quiet = source.reads("quiet");
    let gaps: Vec<u64> = quiet.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps.first()
            .is_some_and(|g| *g >= FIRST_IDLE_WAIT_MS && *g < FIRST_IDLE_WAIT_MS + 5),
        "the first wait is the shortest: {gaps:?}"
    );
    assert!(gaps.windows(2).all(|w| w[0] <= w[1]), "the waits grow: {gaps:?}");
    assert!(
        gaps.iter().all(|g| *g < POLL_MS + 5) && gaps.last().is_some_and(|g| *g >= POLL_MS),
        "up to the poll interval: {gaps:?}"
    );
    assert!(
        quiet.len() < 20,
        "the quiet shard is not read every round: {} reads",
        quiet.len()
    );
    assert_eq!(source.iterators("busy"), 1, "a shard with records keeps its iterator");
    let refreshes = 2000 / ITERATOR_REFRESH_MS;
    assert!(
        source.iterators("quiet") <= 1 + refreshes as usize,
        "a quiet shard takes a new iterator at most every {ITERATOR_REFRESH_MS} ms: {}",
        source.iterators("quiet")
    );
    assert_eq!(rig.function.delivered().len(), 400);
}

#[tokio::test]
async fn an_idle_runner_says_when_the_next_read_is_due_and_a_record_ends_the_back_off() {
    let (rig, source, mut runner) = rigged(&["s"]);
    let round = runner.round().await;
    assert!(!round.busy);
    assert_eq!(
        round.wait_ms, FIRST_IDLE_WAIT_MS,
        "the first empty read waits the least"
    );
    // Nothing is due before then: a round now reads nothing.
    runner.round().await;
    assert_eq!(source.reads("s").len(), 1);
    // Let the shard back off to the poll interval.
    for _ in 0..20 {
        let round = runner.round().await;
        rig.clock.advance(round.wait_ms);
    }
    let round = runner.round().await;
    assert_eq!(round.wait_ms, POLL_MS, "backed off to the poll interval");
    rig.clock.advance(round.wait_ms);
    rig.push("t", "s", "1", "k");
    rig.push("t", "s", "2", "k");
    let round = runner.round().await;
    assert!(round.busy);
    assert_eq!(rig.function.delivered(), ["1", "2"]);
    let before = source.reads("s").len();
    let round = runner.round().await;
    assert_eq!(
        source.reads("s").len(),
        before + 1,
        "read again at once, at the same time"
    );
    assert_eq!(round.wait_ms, FIRST_IDLE_WAIT_MS, "and the back-off starts over");
}

#[tokio::test]
async fn exit_when_idle_needs_a_look_after_the_last_busy_round() {
    let (rig, source, mut runner) = rigged(&["a", "b"]);
    rounds(&rig, &mut runner, 10).await;
    assert!(runner.idle());
    // A record on `a` only (as a consumer's own write would come back); `b` is backing off.
    rig.clock.advance(POLL_MS);
    rig.push("t", "a", "1", "k");
    let round = runner.round().await;
    assert!(round.busy);
    assert!(
        !runner.idle(),
        "shards that have not looked since a busy round are not idle"
    );
    until_idle(&rig, &mut runner).await;
    let last_busy = source.reads("a").len();
    assert!(last_busy >= 2 && !source.reads("b").is_empty());
}

#[tokio::test]
async fn after_look_again_idle_needs_a_read_of_what_was_written_since() {
    let (rig, _source, mut runner) = rigged(&["a"]);
    rounds(&rig, &mut runner, 10).await;
    let round = runner.round().await;
    assert!(runner.idle() && round.wait_ms > 0);
    // A write from outside, while the shard backs off: its next read is not due.
    rig.push("t", "a", "1", "k");
    let round = runner.round().await;
    assert!(
        !round.busy && runner.idle(),
        "without a fresh look the write goes unseen"
    );
    runner.look_again();
    assert!(!runner.idle(), "a look taken before the write does not count");
    until_idle(&rig, &mut runner).await;
    assert_eq!(
        rig.function.delivered(),
        ["1"],
        "idle again only once the write is applied"
    );
}
