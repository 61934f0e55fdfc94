//! Figures for a batch at Lambda's 6 MB payload limit, printed, not asserted:
//!
//! - the indexer's handling time and peak RSS in a fresh process (payload,
//!   parse, plan and apply against a store that only counts requests, as
//!   DynamoDB would be remote), median of several runs;
//! - the router's, the same way (parse, classify, size, pack and publish to
//!   the in-memory publisher);
//! - the parse floor, the same way: the payload read by serde_json into a
//!   borrowed typed struct and nothing else (see `floor`), what the
//!   consumers' times are set against;
//! - DynamoDB requests per batch against the minimum (index writes / 25, plus
//!   one call per touched node), on the in-memory store holding the table.
//!
//! Run: `cargo run --release -p streamdex-tests --features testing --example batch_figures`
//! (`... -- generate FILE` writes the payload; `... -- measure FILE [N]` has the
//! indexer handle it once cold and N times warm (9), `... -- route FILE [N]`
//! the router, `... -- floor FILE [N]` the parse floor; `... -- versus-index
//! FILE [N]` and `versus-route` alternate the parse floor and the consumer in
//! one process for N rounds (41) and print the floor's median, the
//! consumer's, and the median ratio: the figure this machine's drifting
//! speed does not move.)

#[path = "batch_figures/floor.rs"]
mod floor;

use std::collections::BTreeSet;
#[global_allocator]
static ALLOCATOR: aws_kit::alloc::Allocator = aws_kit::alloc::Allocator;

use std::sync::Arc;
use std::time::{Duration, Instant};

use event_router::{MemoryPublisher, Options as RouterOptions, Router};
use model::config::{self, EXAMPLE_CONFIG};
use model::record::parse_batch;
use model::{Image, Mutation, Planner};
use stream_indexer::store::{RowGuard, RowOutcome, RowWrite, SetChange, SetOutcome, SetStamp, Store, StoreError};
use stream_indexer::workload::example_payload_of_size;
use stream_indexer::{Indexer, MemoryQuarantine, Options};

const RUNS: usize = 7;
/// Handlings after the first in each child process (a warm Lambda's).
const WARM_RUNS: usize = 9;
const SIX_MB: usize = 6 * 1024 * 1024;

/// A store that answers every request at once, as if DynamoDB were remote.
struct CountingStore;

impl Store for CountingStore {
    async fn write_rows(&self, _writes: &[RowWrite]) -> Result<Vec<RowWrite>, StoreError> {
        Ok(Vec::new())
    }
    async fn put_row_if(&self, _write: &RowWrite, _guard: &RowGuard) -> Result<RowOutcome, StoreError> {
        Ok(RowOutcome::Written)
    }
    async fn update_set_stamped(
        &self,
        _e: usize,
        _node: &str,
        _change: &SetChange,
        _stamp: SetStamp<'_>,
    ) -> Result<SetOutcome, StoreError> {
        Ok(SetOutcome::Applied)
    }
    async fn query_partition(&self, _table: &str, _partition: &str) -> Result<Vec<Image>, StoreError> {
        Ok(Vec::new())
    }
    async fn set_marker_stamped(
        &self,
        _e: usize,
        _node: &str,
        _complete: bool,
        _stamp: SetStamp<'_>,
    ) -> Result<SetOutcome, StoreError> {
        Ok(SetOutcome::Applied)
    }
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn config() -> Arc<model::Config> {
    Arc::new(config::parse(EXAMPLE_CONFIG, "streamdex.example.toml").expect("example config"))
}

/// A child's start: the allocator tuned as the functions tune it, the
/// payload in FILE read, and a runtime to handle it on.
fn child_start(path: &str) -> (Vec<u8>, tokio::runtime::Runtime) {
    aws_kit::lambda::tune_allocator();
    let payload = std::fs::read(path).expect("payload file");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    (payload, runtime)
}

/// Child: the indexer (`measure`) or the router (`route`) handles the
/// payload in FILE once, as a Lambda would; prints "ms rss_kib".
fn measure(mode: &str, path: &str, warm_runs: usize) {
    let (payload, runtime) = child_start(path);
    // The first handling is the cold one (every page touched for the first
    // time); the ones after it are a warm Lambda's, in the same process.
    let mut times = Vec::with_capacity(1 + warm_runs);
    if mode == "floor" {
        for _ in 0..=warm_runs {
            let started = Instant::now();
            let records = floor::parse(&payload);
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            assert!(records > 0, "no records in the payload");
        }
    } else if mode == "route" {
        let router = Router::new(
            config(),
            MemoryPublisher::new(),
            MemoryQuarantine::default(),
            RouterOptions::default(),
        );
        for _ in 0..=warm_runs {
            let started = Instant::now();
            let outcome = runtime.block_on(router.handle(&payload)).expect("routed");
            drop(outcome);
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            drop(router.publisher().take());
        }
    } else {
        let indexer = Indexer::new(config(), CountingStore, MemoryQuarantine::default(), Options::default());
        for _ in 0..=warm_runs {
            let started = Instant::now();
            let outcome = runtime.block_on(indexer.handle(&payload)).expect("handled");
            drop(outcome);
            times.push(started.elapsed().as_secs_f64() * 1000.0);
        }
    }
    let cold = times[0];
    let warm = median(times.split_off(1));
    println!("{cold:.2} {} {warm:.2}", peak_rss_kib());
}

/// Rounds of `versus`: each handles the payload once with the parse floor
/// and once with the consumer.
const VERSUS_ROUNDS: usize = 41;

/// Each consumer against the parse floor in one process, in turn (floor,
/// consumer; a round each time, after one to warm up), so that both meet
/// the same machine: this machine's speed drifts by a factor of two between
/// hours, so figures taken one after the other do not compare. The indexer
/// and the router are measured apart, each in a process of its own, as each
/// Lambda runs alone (run in the same rounds as the router, the indexer
/// took about a third longer). Prints each consumer's median time, the floor's in
/// its rounds, and the median of the rounds' ratios to the floor.
fn versus(router: bool, path: &str, rounds: usize) {
    let (payload, runtime) = child_start(path);
    let rounds_of = |consumer: &mut dyn FnMut()| {
        let timed = |work: &mut dyn FnMut()| {
            let started = Instant::now();
            work();
            started.elapsed().as_secs_f64() * 1000.0
        };
        let (mut floors, mut times, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..=rounds {
            let floor = timed(&mut || assert!(floor::parse(&payload) > 0, "no records in the payload"));
            let time = timed(consumer);
            if round > 0 {
                floors.push(floor);
                times.push(time);
                ratios.push(time / floor);
            }
        }
        (median(floors), median(times), median(ratios))
    };
    let (floor, time, ratio) = if router {
        let router = Router::new(
            config(),
            MemoryPublisher::new(),
            MemoryQuarantine::default(),
            RouterOptions::default(),
        );
        rounds_of(&mut || {
            drop(runtime.block_on(router.handle(&payload)).expect("routed"));
            drop(router.publisher().take());
        })
    } else {
        let indexer = Indexer::new(config(), CountingStore, MemoryQuarantine::default(), Options::default());
        rounds_of(&mut || drop(runtime.block_on(indexer.handle(&payload)).expect("handled")))
    };
    println!("{floor:.2} {time:.2} {ratio:.3}");
}

/// `RUNS` fresh processes of `mode` on the payload at `path`: the median
/// cold time in ms (each process's first handling), peak RSS in MB, and
/// the median warm time in ms (the medians of each process's later ones).
fn in_fresh_processes(mode: &str, path: &std::path::Path) -> (f64, f64, f64) {
    let (mut times, mut rss, mut warm) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let [cold, rss_kib, warm_ms] = child_figures(mode, path);
        times.push(cold);
        rss.push(rss_kib / 1024.0);
        warm.push(warm_ms);
    }
    (median(times), median(rss), median(warm))
}

/// The three figures a child `mode` process prints (NaN for any it did
/// not print as a number).
fn child_figures(mode: &str, path: &std::path::Path) -> [f64; 3] {
    let text = child_output(mode, path);
    let mut figures = text.split_whitespace().map(|t| t.parse::<f64>().unwrap_or(f64::NAN));
    [(); 3].map(|()| figures.next().unwrap_or(f64::NAN))
}

/// How long one child may take (a batch takes well under a second; the
/// `versus` children, 84 handlings, a few seconds).
const CHILD_PATIENCE: Duration = Duration::from_secs(60);

/// What a child `mode` process prints for the payload at `path`; it is
/// killed, and the figures say so, if it takes longer than `CHILD_PATIENCE`.
fn child_output(mode: &str, path: &std::path::Path) -> String {
    let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
        .args([mode, &path.to_string_lossy()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("child");
    let started = Instant::now();
    while child.try_wait().expect("child").is_none() {
        if started.elapsed() > CHILD_PATIENCE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the `{mode}` child did not finish within {CHILD_PATIENCE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut text = String::new();
    if let Some(mut out) = child.stdout.take() {
        std::io::Read::read_to_string(&mut out, &mut text).expect("child output");
    }
    text
}

/// The median, NaN for none (`measure FILE 0` has no warm handling).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, mode, path, rest @ ..] = args.as_slice() {
        // `measure FILE [N]`: more warm runs make a profile of them.
        let count = match rest.first().map(|n| n.parse::<usize>()) {
            None => None,
            Some(Ok(n)) => Some(n),
            Some(Err(_)) => {
                eprintln!("batch_figures {mode} FILE [N]: N, the warm handlings or rounds, must be a whole number");
                std::process::exit(2);
            }
        };
        match mode.as_str() {
            "measure" | "route" | "floor" => return measure(mode, path, count.unwrap_or(WARM_RUNS)),
            "versus-index" | "versus-route" => {
                return versus(mode == "versus-route", path, count.unwrap_or(VERSUS_ROUNDS))
            }
            "generate" => {
                let (_, payload, _) = example_payload_of_size(config(), SIX_MB, 7);
                return std::fs::write(path, payload).expect("write payload");
            }
            _ => {}
        }
    }
    let config = config();
    let (store, payload, records) = example_payload_of_size(config.clone(), SIX_MB, 7);
    let path = std::env::temp_dir().join(format!("streamdex-batch-{}.json", std::process::id()));
    std::fs::write(&path, &payload).expect("write payload");
    println!("payload: {records} records, {:.2} MB", payload.len() as f64 / 1e6);

    let (ms, rss, warm) = in_fresh_processes("measure", &path);
    println!(
        "handle 6 MB batch (parse + plan + apply, counting store): cold (a fresh process's first) median {ms:.1} ms over {RUNS} processes ({:.0} records/s); warm (the {WARM_RUNS} after it, in process) median {warm:.1} ms ({:.0} records/s); peak RSS median {rss:.1} MB",
        records as f64 / (ms / 1000.0),
        records as f64 / (warm / 1000.0),
    );
    let (ms, rss, warm) = in_fresh_processes("route", &path);
    println!(
        "route the same batch (parse + classify + size + pack + publish in memory): cold median {ms:.1} ms over {RUNS} processes ({:.0} records/s); warm median {warm:.1} ms ({:.0} records/s); peak RSS median {rss:.1} MB",
        records as f64 / (ms / 1000.0),
        records as f64 / (warm / 1000.0),
    );
    let (ms, rss, warm) = in_fresh_processes("floor", &path);
    println!(
        "parse floor (serde_json into a borrowed typed struct, nothing else): cold median {ms:.1} ms over {RUNS} processes ({:.0} records/s); warm median {warm:.1} ms ({:.0} records/s); peak RSS median {rss:.1} MB",
        records as f64 / (ms / 1000.0),
        records as f64 / (warm / 1000.0),
    );
    for (mode, name) in [("versus-index", "indexer"), ("versus-route", "router")] {
        let [floor, time, ratio] = child_figures(mode, &path);
        println!(
            "{name} and parse floor in turn ({VERSUS_ROUNDS} rounds in one process, medians; the ratio is the rounds' median): {name} {time:.1} ms, floor {floor:.1} ms, {ratio:.2}x the floor"
        );
    }
    let _ = std::fs::remove_file(&path);

    // Requests against the minimum, on the in-memory store that holds the table.
    let planner = Planner::new(&config);
    let (mut writes, mut nodes, mut restores) = (0usize, BTreeSet::new(), 0usize);
    // The minimum counts one UpdateItem per touched node *and operator* (ADD, DELETE).
    let mut node_ops = BTreeSet::new();
    for received in parse_batch(&payload).expect("payload") {
        let Ok(record) = received.record else { continue };
        for m in planner.plan(&record).mutations {
            match m {
                Mutation::PutRow { .. } | Mutation::DeleteRow { .. } => writes += 1,
                Mutation::AddMember { edge_set, node, .. } => {
                    node_ops.insert((edge_set, node.clone(), "ADD"));
                    nodes.insert((edge_set, node));
                }
                Mutation::RemoveMember { edge_set, node, .. } => {
                    node_ops.insert((edge_set, node.clone(), "DELETE"));
                    nodes.insert((edge_set, node));
                }
                Mutation::RestoreSet { edge_set, node } => {
                    restores += 1;
                    node_ops.insert((edge_set, node.clone(), "ADD"));
                    nodes.insert((edge_set, node));
                }
                // Repair's; the planner never plans it.
                Mutation::SetMarker { edge_set, node, .. } => {
                    nodes.insert((edge_set, node));
                }
            }
        }
    }
    let minimum = writes.div_ceil(25) + nodes.len();
    let indexer = Indexer::new(config.clone(), store, MemoryQuarantine::default(), Options::default());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let outcome = runtime.block_on(indexer.handle(&payload)).expect("handled");
    let r = &outcome.stats.apply.requests;
    println!(
        "requests: {} (BatchWriteItem {}, UpdateItem {}, Query {}); minimum {minimum} ({writes} index writes / 25 + {} touched nodes); ratio {:.2} ({:.2} counting each restore's Query as necessary: {restores} restores)",
        r.total(),
        r.write_rows,
        r.update_set,
        r.query_partition,
        nodes.len(),
        r.total() as f64 / minimum as f64,
        r.total() as f64 / (minimum + restores) as f64,
    );
    let per_operator = writes.div_ceil(25) + node_ops.len() + restores;
    println!(
        "requests against the issue's minimum (writes / 25 + one UpdateItem per touched node and operator: {} + each restore's Query: {restores}): {per_operator}; ratio {:.2}",
        node_ops.len(),
        r.total() as f64 / per_operator as f64,
    );

    // The same batch guarded (as replay into tables and redrive write):
    // one conditional PutItem per row write, one record per set UpdateItem.
    let (store, _, _) = example_payload_of_size(config.clone(), SIX_MB, 7);
    let guarded = Options {
        guard: stream_indexer::apply::Guard::Newer,
        ..Options::default()
    };
    let indexer = Indexer::new(config, store, MemoryQuarantine::default(), guarded);
    let outcome = runtime.block_on(indexer.handle(&payload)).expect("handled");
    let g = &outcome.stats.apply.requests;
    println!(
        "guarded (Guard::Newer): requests {} (PutItem {}, BatchWriteItem {}, UpdateItem {}, Query {}); {:.2}x the in-order path; skipped as stale {}",
        g.total(),
        g.put_row_if,
        g.write_rows,
        g.update_set,
        g.query_partition,
        g.total() as f64 / r.total() as f64,
        outcome.stats.apply.stale,
    );
}
