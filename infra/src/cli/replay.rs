//! `streamdex replay FILE...`: feed recorded stream records through both
//! consumers (the indexer and the event router), in Lambda-sized batches,
//! and show what they did and what the derived data became.
//!
//! Files may be a Lambda event (`{"Records": [...]}`), a DynamoDB Streams
//! `GetRecords` response, or JSON Lines with one record per line. Records are
//! replayed in the order given.
//!
//! # The embedded default
//!
//! Without `--endpoint-url` or `--aws`, everything runs in memory: the
//! indexer writes into the in-memory store, the router publishes to an
//! in-memory bus, and the events of `reap` routes go straight to the TTL
//! reaper, whose deletes flow back through both consumers (as they would
//! through the stream). The store follows the recording: before a batch is
//! handled, its records are applied to the store's copy of the source
//! tables (as the real table would already hold them), so node restores and
//! conditional set updates behave as they do against DynamoDB.
//!
//! # Against AWS (or moto)
//!
//! With `--endpoint-url URL` (or `--aws` for the usual AWS environment) the
//! indexer writes to the real index tables and edge sets, and the router
//! puts the events on the config's bus, where the rules route them (to the
//! reaper, on AWS; to the rules' queues, locally). The source tables are
//! not written: they are taken to hold the data the recording came from.
//! Quarantined records are printed, not sent to a queue.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use crate::runner::graph::StoreGraph;
use anyhow::Context;
use clap::{Args, ValueEnum};
use event_router::publish::eventbridge::{eventbridge_client, EventBridgePublisher};
use event_router::{Entry, MemoryPublisher, Publisher, Reaper, Router, RouterStats};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use model::config::{self, Config};
use model::record::{parse_any, ChangeRecord, EventKind, Received};
use model::{Image, Planner};
use serde_json::{json, Value as Json};
use stream_indexer::batch::Quarantined;
use stream_indexer::store::dynamo::{dynamodb_client, DynamoStore};
use stream_indexer::store::memory::lambda_event;
use stream_indexer::store::Store;
use stream_indexer::{Backoff, BatchStats, Indexer, MemoryQuarantine, MemoryStore, Options};

use super::exit;
use crate::derived::derived_json;

/// Rounds of feeding the pipeline's and the reaper's own writes back
/// through the consumers after one batch, before giving up on a loop.
const MAX_FEEDBACK_ROUNDS: usize = 50;

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
    #[arg(long, value_name = "URL", conflicts_with = "aws")]
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
    match run_with(args, &mut out, &mut err) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            let _ = writeln!(err, "streamdex replay: {e:#}");
            ExitCode::from(exit::FAILURE)
        }
    }
}

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
    /// Where batches failed: the consumer and the sequence number.
    pub failed: Vec<(&'static str, String)>,
    /// Every event published, in order.
    pub events: Vec<Entry>,
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
    let mut records = Vec::new();
    for path in &args.files {
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        match parse_any(&bytes) {
            Ok(parsed) => records.extend(parsed),
            Err(e) => {
                writeln!(err, "{}:{}:{}: {}", path.display(), e.line, e.column, e.message)?;
                writeln!(
                    err,
                    "streamdex replay: refused {}: not a stream record file",
                    path.display()
                )?;
                return Ok(exit::BAD_INPUT);
            }
        }
    }
    let config = Arc::new(config);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let batch_size = args.batch_size as usize;
    let bar = progress_bar(!args.no_progress, records.len());
    let (summary, derived) = if args.endpoint_url.is_some() || args.aws {
        let sdk = runtime.block_on(crate::stack::sdk_config(
            args.endpoint_url.as_deref(),
            args.region.as_deref(),
        ));
        let store = DynamoStore::new(dynamodb_client(&sdk), config.clone());
        let indexer = Indexer::new(
            config.clone(),
            store.clone(),
            MemoryQuarantine::new(),
            Options::default(),
        );
        let router = Router::new(
            config.clone(),
            EventBridgePublisher::new(eventbridge_client(&sdk), config.events.bus.clone()),
            MemoryQuarantine::new(),
            event_router::Options::default(),
        );
        let summary = runtime.block_on(replay_to(&indexer, &router, records, batch_size, &bar));
        let derived = match args.dump {
            Some(Dump::Json) => Some(runtime.block_on(derived_json(&store, &config))?),
            None => None,
        };
        (summary, derived)
    } else {
        let local = Local::new(config.clone());
        let summary = runtime.block_on(local.replay_with(records, batch_size, &bar));
        let derived = runtime.block_on(derived_json(local.store(), &config))?;
        (summary, Some(derived))
    };
    bar.finish_and_clear();
    print_summary(&summary, &config, err)?;
    if args.dump == Some(Dump::Json) {
        let mut whole = derived.unwrap_or_else(|| json!({}));
        whole["events"] = events_json(&summary.events);
        serde_json::to_writer_pretty(&mut *out, &whole)?;
        writeln!(out)?;
    }
    Ok(if summary.failed.is_empty() {
        exit::OK
    } else {
        exit::FAILURE
    })
}

/// The embedded pipeline: both consumers and the reaper over one in-memory
/// store, the events on an in-memory bus.
pub struct Local {
    indexer: Indexer<Arc<MemoryStore>, MemoryQuarantine>,
    router: Router<MemoryPublisher, MemoryQuarantine>,
    reaper: Reaper<StoreGraph>,
}

impl Local {
    pub fn new(config: Arc<Config>) -> Local {
        let store = Arc::new(MemoryStore::new(config.clone()));
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
            ),
            reaper: Reaper::new(config, StoreGraph(store), Backoff::default()),
        }
    }

    /// The in-memory tables: the source tables as replayed, and the derived data.
    pub fn store(&self) -> &MemoryStore {
        self.reaper.graph()
    }

    pub fn config(&self) -> &Arc<Config> {
        self.indexer.config()
    }

    /// Replays `records` in batches of `batch_size` (see the module doc).
    pub async fn replay(&self, records: Vec<Received>, batch_size: usize) -> Summary {
        self.replay_with(records, batch_size, &ProgressBar::hidden()).await
    }

    /// [`Local::replay`], advancing `bar` by the records of each batch.
    pub async fn replay_with(&self, records: Vec<Received>, batch_size: usize, bar: &ProgressBar) -> Summary {
        let mut summary = Summary {
            records: records.len(),
            ..Summary::default()
        };
        let store = self.store();
        let planner = Planner::new(self.config());
        let mut records = records.into_iter().peekable();
        while records.peek().is_some() {
            let batch: Vec<Received> = records.by_ref().take(batch_size.max(1)).collect();
            store.record_stream(false);
            for received in &batch {
                if let Ok(record) = &received.record {
                    materialize(store, &planner, record);
                }
            }
            // From here on the pipeline's own writes (set updates, the
            // reaper's deletes) are recorded and fed back, as the stream would.
            store.record_stream(true);
            summary.batches += 1;
            bar.inc(batch.len() as u64);
            self.handle(batch, &mut summary).await;
            for _ in 0..MAX_FEEDBACK_ROUNDS {
                let written = store.take_stream();
                if written.is_empty() {
                    break;
                }
                let payload = lambda_event(written.iter().map(|e| &e.record));
                match model::record::parse_batch(&payload) {
                    Ok(more) => self.handle(more, &mut summary).await,
                    Err(e) => summary
                        .failed
                        .push(("replay", format!("the pipeline's own records: {e}"))),
                }
            }
            store.record_stream(false);
        }
        summary
    }

    /// One batch through both consumers; the reap events to the reaper.
    async fn handle(&self, batch: Vec<Received>, summary: &mut Summary) {
        let routed = self.router.handle_received(batch.clone()).await;
        let indexed = self.indexer.handle_received(batch).await;
        absorb(summary, indexed, routed);
        for entry in self.router.publisher().take() {
            // The rule of a reap route matches its detail type and table.
            let table = serde_json::from_str::<Json>(&entry.detail)
                .ok()
                .and_then(|d| d["table"].as_str().map(str::to_owned));
            let reaps =
                self.config().routes.iter().any(|r| {
                    r.reap && r.detail_type == entry.detail_type && table.as_deref() == Some(r.table.as_str())
                });
            if reaps {
                match self.reaper.reap(entry.delivered().as_bytes()).await {
                    Ok(reaped) => {
                        summary.reaped += usize::from(reaped.deleted > 0);
                        summary.reaper_deletes += reaped.deleted;
                    }
                    Err(e) => summary.failed.push(("reaper", e.to_string())),
                }
            }
            summary.events.push(entry);
        }
    }
}

fn absorb(summary: &mut Summary, indexed: stream_indexer::BatchOutcome, routed: event_router::RouterOutcome) {
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
            .map(|f| ("stream-indexer", f.sequence_number().unwrap_or_default().to_owned())),
    );
    summary.failed.extend(
        routed
            .failed
            .map(|f| ("event-router", f.sequence_number().unwrap_or_default().to_owned())),
    );
}

/// Replays `records` in batches of `batch_size` into real tables and a real
/// bus (nothing is materialized; no reaper runs here).
pub async fn replay_to<S: Store, P: Publisher>(
    indexer: &Indexer<S, MemoryQuarantine>,
    router: &Router<P, MemoryQuarantine>,
    records: Vec<Received>,
    batch_size: usize,
    bar: &ProgressBar,
) -> Summary {
    let mut summary = Summary {
        records: records.len(),
        ..Summary::default()
    };
    let mut records = records.into_iter().peekable();
    while records.peek().is_some() {
        let batch: Vec<Received> = records.by_ref().take(batch_size.max(1)).collect();
        summary.batches += 1;
        bar.inc(batch.len() as u64);
        let routed = router.handle_received(batch.clone()).await;
        let indexed = indexer.handle_received(batch).await;
        absorb(&mut summary, indexed, routed);
    }
    summary
}

/// A bar of `total` records on stderr when `wanted` and stderr is a
/// terminal (hidden otherwise, so pipes and tests see only the summary).
fn progress_bar(wanted: bool, total: usize) -> ProgressBar {
    if !wanted || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} records ({per_sec}, {eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// Applies a record to the store's copy of its source table. A MODIFY whose
/// images both lack a node's pipeline-owned attributes (a fixture recorded
/// without streamdex) keeps the stored ones, as an UpdateItem would; images
/// that show them vanishing (a PutItem overwrite) replace the item whole.
fn materialize(store: &MemoryStore, planner: &Planner<'_>, record: &ChangeRecord) {
    let Ok(table) = planner.table_of(record) else { return };
    match (&record.kind, &record.new) {
        (EventKind::Remove, _) => {
            let _ = store.delete_item(&table.name, &record.keys);
        }
        (_, Some(new)) => {
            let mut item: Image = new.clone();
            if let Some(set) = planner.config().edge_sets.iter().find(|e| e.table == table.name) {
                let owned = [&set.attribute, &set.complete_attribute];
                let old_has = record
                    .old
                    .as_ref()
                    .is_some_and(|o| owned.iter().any(|a| o.contains_key(*a)));
                let new_has = owned.iter().any(|a| new.contains_key(*a));
                if !old_has && !new_has {
                    if let Ok(Some(stored)) = store.get_item(&table.name, &record.keys) {
                        for a in owned {
                            if let Some(v) = stored.get(a) {
                                item.insert(a.clone(), v.clone());
                            }
                        }
                    }
                }
            }
            let _ = store.put_item(&table.name, item);
        }
        (_, None) => {}
    }
}

fn print_summary(summary: &Summary, config: &Config, err: &mut dyn Write) -> std::io::Result<()> {
    let s = &summary.stats;
    let a = &s.apply.applied;
    writeln!(
        err,
        "replayed {} records in {} batches ({} tables, {} indexes, {} edge sets, {} routes)",
        summary.records,
        summary.batches,
        config.tables.len(),
        config.indexes.len(),
        config.edge_sets.len(),
        config.routes.len()
    )?;
    writeln!(err, "  index rows: {} put, {} deleted", a.put_row, a.delete_row)?;
    writeln!(
        err,
        "  edge sets:  {} members added, {} removed, {} sets restored ({} updates found no node, {} nodes flagged)",
        a.add_member, a.remove_member, a.restore_set, s.apply.node_missing, s.apply.flagged
    )?;
    writeln!(
        err,
        "  requests:   {} (BatchWriteItem {}, UpdateItem {}, Query {})",
        s.apply.requests.total(),
        s.apply.requests.write_rows,
        s.apply.requests.update_set,
        s.apply.requests.query_partition
    )?;
    let r = &summary.routed;
    let by_type: Vec<String> = r.published_by_type.iter().map(|(t, n)| format!("{t}: {n}")).collect();
    writeln!(
        err,
        "  events:     {} published in {} PutEvents calls{}{}",
        r.published,
        r.calls,
        if by_type.is_empty() {
            String::new()
        } else {
            format!(" ({})", by_type.join(", "))
        },
        if r.images_omitted > 0 {
            format!(", {} without their images", r.images_omitted)
        } else {
            String::new()
        }
    )?;
    if summary.reaped > 0 || summary.reaper_deletes > 0 {
        writeln!(
            err,
            "  reaper:     {} expired nodes reaped, {} edges deleted",
            summary.reaped, summary.reaper_deletes
        )?;
    }
    writeln!(err, "  quarantined: {}", summary.quarantined.len())?;
    for (consumer, q) in &summary.quarantined {
        writeln!(
            err,
            "    {consumer} {}: {}",
            q.sequence_number.as_deref().unwrap_or("(no sequence number)"),
            q.reason
        )?;
    }
    for (consumer, failed) in &summary.failed {
        writeln!(err, "  FAILED ({consumer}): from sequence number {failed}")?;
    }
    Ok(())
}

/// The events as JSON: `[{"source", "detailType", "detail"}]`, in order.
pub fn events_json(events: &[Entry]) -> Json {
    Json::Array(
        events
            .iter()
            .map(|e| {
                let detail: Json = serde_json::from_str(&e.detail).unwrap_or(Json::String(e.detail.clone()));
                json!({"source": e.source, "detailType": e.detail_type, "detail": detail})
            })
            .collect(),
    )
}
