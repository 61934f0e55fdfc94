//! `streamdex replay FILE...`: feed recorded stream records through both
//! consumers (the indexer and the event router), in Lambda-sized batches,
//! and show what they did and what the derived data became.
//!
//! Files may be a Lambda event (`{"Records": [...]}`), a DynamoDB Streams
//! `GetRecords` response, or JSON Lines with one record per line. Records are
//! replayed in the order given.
//!
//! The pipeline itself (the embedded default, or real tables and a real
//! bus) is `runner::replay`'s; this module reads the files, runs it and
//! prints what it did.

use std::io::{IsTerminal, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

use clap::{Args, ValueEnum};
use event_router::ledger::dynamo::DynamoLedger;
use event_router::publish::eventbridge::{eventbridge_client, EventBridgePublisher};
use event_router::Router;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use model::config::{self, Config};
use model::plan::SharedProjections;
use model::record::BorrowedReceived;
use model::validate;
use serde_json::{json, Value as Json};
use stream_indexer::apply::Guard;
use stream_indexer::store::dynamo::{dynamodb_client, DynamoStore};
use stream_indexer::{Indexer, MemoryQuarantine, Options};

use super::exit;
use crate::derived::derived_json;
use crate::runner::replay::{replay_batch_to, Local, Ready, Summary};

mod source;
mod summary;
mod tally;

use source::{each_batch, SourceError};
use summary::{events_json, print_summary, print_unmatched};
use tally::Tally;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamdex replay tests/fixtures/example-history.jsonl\n  \
    streamdex replay --batch-size 10 --dump json tests/fixtures/router-history.jsonl > derived.json\n  \
    streamdex replay --config streamdex.toml recorded-*.jsonl\n  \
    streamdex replay --config streamdex.toml --endpoint-url http://127.0.0.1:5005 recorded.jsonl\n\n\
    Exit codes: 0 every record handled; 1 a batch failed (the summary says from which\n\
    record) or AWS could not be reached; 2 a bad config, file or flag.")]
pub struct ReplayArgs {
    /// Recorded stream files: Lambda events, GetRecords responses or JSON Lines.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The pipeline config; default: the embedded example config
    /// (`streamdex config example` prints it).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Records per invocation, as a Lambda event source mapping's BatchSize.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub batch_size: u32,
    /// Also print the resulting index rows, edge sets and events to stdout
    /// (against an endpoint: read back from its tables).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub dump: Option<Dump>,
    /// Replay into DynamoDB and EventBridge at this endpoint (e.g. a local
    /// moto server, after `streamdex up`) instead of the embedded store.
    #[arg(long, value_name = "URL", conflicts_with = "aws", value_parser = super::stack::endpoint_url)]
    pub endpoint_url: Option<String>,
    /// Replay into AWS as the environment configures it (AWS_REGION,
    /// AWS_PROFILE, AWS_ENDPOINT_URL, ...) instead of the embedded store.
    #[arg(long)]
    pub aws: bool,
    /// The AWS region with --endpoint-url or --aws (default: the environment's).
    #[arg(long, value_name = "REGION")]
    pub region: Option<String>,
    /// No progress bar (drawn on stderr only when it is a terminal).
    #[arg(long)]
    pub no_progress: bool,
}

impl ReplayArgs {
    /// Arguments for replaying `files` on the embedded default.
    pub fn embedded(files: Vec<PathBuf>) -> ReplayArgs {
        ReplayArgs {
            files,
            config: None,
            batch_size: 100,
            dump: None,
            endpoint_url: None,
            aws: false,
            region: None,
            no_progress: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Dump {
    /// One JSON object: index tables (rows in key order), edge sets and events.
    Json,
}

/// Runs `streamdex replay`, printing to stdout and stderr.
pub fn run(args: &ReplayArgs) -> ExitCode {
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    let result = run_with(args, &mut out, &mut err);
    ExitCode::from(outcome(result, &mut err))
}

/// The exit code of [`run_with`]'s `result`, its error said on `err`. When
/// the reader of the output went away (`--dump json | head`), the run ends
/// quietly, with success: what was wanted was read.
pub fn outcome(result: anyhow::Result<u8>, err: &mut dyn Write) -> u8 {
    exit::of_result(result, "streamdex replay", err)
}

/// Runs `streamdex replay`; returns the exit code (0, or 1 if a batch failed, 2 for bad input).
pub fn run_with(args: &ReplayArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<u8> {
    let config = match &args.config {
        Some(path) => match config::load(path) {
            Ok(config) => config,
            Err(e) => {
                writeln!(err, "{e}")?;
                return Ok(exit::BAD_INPUT);
            }
        },
        None => config::parse(config::EXAMPLE_CONFIG, "the embedded example config")?,
    };
    let config = Arc::new(config);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let total_bytes = args
        .files
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum();
    let bar = progress_bar(!args.no_progress, total_bytes);
    let mut summary = Summary::default();
    let replayed = if args.endpoint_url.is_some() || args.aws {
        replay_to_tables(args, &config, &runtime, &bar, &mut summary, err)?
    } else {
        replay_in_memory(args, &config, &runtime, &bar, &mut summary, err)?
    };
    let Some((tally, derived)) = replayed else {
        return Ok(exit::BAD_INPUT);
    };
    bar.finish_and_clear();
    print_summary(&summary, &config, err)?;
    print_unmatched(&tally, err)?;
    if args.dump == Some(Dump::Json) {
        let mut whole = derived.unwrap_or_else(|| json!({}));
        whole["events"] = events_json(&summary.events);
        serde_json::to_writer_pretty(&mut *out, &whole)?;
        writeln!(out)?;
    }
    if summary.failed.is_empty() {
        return Ok(exit::OK);
    }
    writeln!(
        err,
        "streamdex replay: stopped at the first failed batch; the records after it were not replayed"
    )?;
    Ok(exit::FAILURE)
}

/// What a replay read (`None`: a file was refused) and, with `--dump
/// json`, the derived data it left.
type Replayed = Option<(Tally, Option<Json>)>;

/// Replays into real tables and a real bus (`--endpoint-url` or `--aws`),
/// every file checked whole first.
fn replay_to_tables(
    args: &ReplayArgs,
    config: &Arc<Config>,
    runtime: &tokio::runtime::Runtime,
    bar: &ProgressBar,
    summary: &mut Summary,
    err: &mut dyn Write,
) -> anyhow::Result<Replayed> {
    // Real tables take writes for good: refuse a bad file before any.
    let checked = each_file(
        &Reading::of(args, config, Ahead::Check),
        &ProgressBar::hidden(),
        summary,
        err,
        |_, _, _| {},
    )?;
    if checked.is_none() {
        return Ok(None);
    }
    let sdk = runtime.block_on(crate::stack::sdk_config(
        args.endpoint_url.as_deref(),
        args.region.as_deref(),
    ));
    let dynamodb = dynamodb_client(&sdk);
    let store = DynamoStore::new(dynamodb.clone(), config.clone());
    // Tables that have moved on: a recorded record must never overwrite
    // newer derived data (conditional writes, older ones skipped).
    let guarded = Options {
        guard: Guard::Newer,
        ..Options::default()
    };
    let indexer = Indexer::new(config.clone(), store.clone(), MemoryQuarantine::new(), guarded);
    let router = Router::new(
        config.clone(),
        EventBridgePublisher::new(eventbridge_client(&sdk), config.events.bus.clone()),
        MemoryQuarantine::new(),
        event_router::Options::default(),
    )
    .with_ledger(DynamoLedger::for_config(&dynamodb, config));
    let replayed = each_file(
        &Reading::of(args, config, Ahead::Consumers),
        bar,
        summary,
        err,
        |batch, _, summary| {
            runtime.block_on(replay_batch_to(&indexer, &router, batch, summary));
        },
    )?;
    let Some(tally) = replayed else {
        return Ok(None);
    };
    let derived = match args.dump {
        Some(Dump::Json) => Some(runtime.block_on(derived_json(&store, config))?),
        None => None,
    };
    Ok(Some((tally, derived)))
}

/// Replays on the embedded default: both consumers and the reaper over
/// the in-memory store.
fn replay_in_memory(
    args: &ReplayArgs,
    config: &Arc<Config>,
    runtime: &tokio::runtime::Runtime,
    bar: &ProgressBar,
    summary: &mut Summary,
    err: &mut dyn Write,
) -> anyhow::Result<Replayed> {
    // Nothing outlives the process here: a bad file is refused when met,
    // and nothing of the replay so far is shown.
    let local = Local::new(config.clone()).keep_events(args.dump.is_some());
    let replayed = each_file(
        &Reading::of(args, config, Ahead::InMemory(&local)),
        bar,
        summary,
        err,
        |batch, ready, summary| {
            runtime.block_on(local.replay_ready_batch(batch, ready, summary));
        },
    )?;
    let Some(tally) = replayed else {
        return Ok(None);
    };
    let derived = match args.dump {
        Some(Dump::Json) => Some(runtime.block_on(derived_json(local.store(), config))?),
        None => None,
    };
    // Freeing the tables item by item takes a noticeable share of a
    // replay's time; a thread does it while the summary prints (the
    // process may exit first, and the OS reclaims it all at once).
    std::thread::spawn(move || drop(local));
    Ok(Some((tally, derived)))
}

/// What the reading thread does with each record, ahead of the handling
/// thread: the work on a record that does not depend on the tables (the
/// record keeps the answers; the consumers take them).
#[derive(Clone, Copy)]
enum Ahead<'a> {
    /// Checks it as both consumers will ([`validate::poison`]): the file
    /// is only being checked.
    Check,
    /// Checks it, plans it for the indexer and classifies it for the router.
    Consumers,
    /// All that, makes ready for the in-memory pipeline what it needs of
    /// the record ([`Local::ready`]: the item it puts into a source table,
    /// and whether it is its item's newest change), and gives the rows it
    /// plans the one copy kept of each projection
    /// (`model::plan::SharedProjections`).
    InMemory(&'a Local),
}

/// What the reading thread plans with: the planner, and for
/// [`Ahead::InMemory`] the projections the in-memory rows will share.
struct Planning<'a> {
    planner: model::Planner<'a>,
    /// One thread prepares a file's records (the reading thread, or the
    /// calling one for a file read whole), so the lock is never waited on.
    shared: Mutex<SharedProjections>,
}

/// Does `ahead`'s work on a record; what is made ready, for [`Ahead::InMemory`].
fn prepare_ahead(received: &BorrowedReceived<'_>, planning: &Planning<'_>, ahead: Ahead<'_>) -> Ready {
    let planner = &planning.planner;
    let config = planner.config();
    let Ok(record) = &received.record else {
        return Ready::default();
    };
    // Every record reaches the source tables, poison or not.
    let (ready, entry) = match ahead {
        Ahead::InMemory(local) => local.ready(planner, record),
        Ahead::Check | Ahead::Consumers => (Ready::default(), None),
    };
    if let Ok(table) = model::event::table_of(config, record) {
        if validate::poison(received, table).is_some() {
            // Neither consumer plans or classifies a poison record.
            return ready;
        }
    }
    match ahead {
        Ahead::Check => return ready,
        Ahead::Consumers => planner.plan_ahead(received),
        // Equal projections become one copy before the rows keep them.
        Ahead::InMemory(_) => planner.plan_ahead_with(received, |plan| {
            let mut shared = planning.shared.lock().unwrap_or_else(PoisonError::into_inner);
            shared.share(plan);
        }),
    }
    model::event::classify_ahead_with(config, received, entry);
    ready
}

/// What [`each_file`] reads, and what is done with each record ahead.
struct Reading<'a> {
    files: &'a [PathBuf],
    /// Records per batch.
    batch_size: usize,
    config: &'a Config,
    ahead: Ahead<'a>,
}

impl<'a> Reading<'a> {
    /// The files and batch size `args` name, read under `config`.
    fn of(args: &'a ReplayArgs, config: &'a Config, ahead: Ahead<'a>) -> Reading<'a> {
        Reading {
            files: &args.files,
            batch_size: args.batch_size as usize,
            config,
            ahead,
        }
    }
}

/// Hands the records of `files` to `handle` a batch at a time, in order,
/// counting them; stops at the first failed batch (what comes after it
/// would land out of order: Lambda, too, retries a failed batch before going
/// on). A file that does not parse, or cannot be a stream of the config's
/// tables, is refused once read, with the reason on `err`: `None` (exit 2).
/// An unreadable file is an error.
fn each_file(
    reading: &Reading<'_>,
    bar: &ProgressBar,
    summary: &mut Summary,
    err: &mut dyn Write,
    mut handle: impl FnMut(&[BorrowedReceived<'_>], &mut [Ready], &mut Summary),
) -> anyhow::Result<Option<Tally>> {
    let &Reading {
        files,
        batch_size,
        config,
        ahead,
    } = reading;
    let mut tally = Tally::default();
    let mut done = 0;
    let planning = Planning {
        planner: model::Planner::new(config),
        shared: Mutex::new(SharedProjections::default()),
    };
    for path in files {
        let mut file = Tally::default();
        let read = each_batch(
            path,
            batch_size,
            config,
            &|received| prepare_ahead(received, &planning, ahead),
            |batch, ready, bytes| {
                file.count(batch, config);
                handle(batch, ready, summary);
                bar.set_position(done + bytes);
                if summary.failed.is_empty() {
                    ControlFlow::Continue(())
                } else {
                    ControlFlow::Break(())
                }
            },
        );
        match read {
            Ok(()) => {}
            Err(refused @ SourceError::Parse { .. }) => {
                bar.finish_and_clear();
                writeln!(err, "{refused}")?;
                writeln!(
                    err,
                    "streamdex replay: refused {}: not a stream record file",
                    path.display()
                )?;
                return Ok(None);
            }
            Err(unreadable) => return Err(unreadable.into()),
        }
        if let Some(reason) = file.refusal(config) {
            bar.finish_and_clear();
            writeln!(err, "streamdex replay: refused {}: {reason}", path.display())?;
            return Ok(None);
        }
        tally.add(&file);
        done += std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        if !summary.failed.is_empty() {
            break;
        }
    }
    Ok(Some(tally))
}

/// A bar of `total` bytes of input on stderr when `wanted` and stderr is a
/// terminal (hidden otherwise, so pipes and tests see only the summary).
fn progress_bar(wanted: bool, total: u64) -> ProgressBar {
    if !wanted || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}
