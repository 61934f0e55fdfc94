//! `streamdex replay FILE...`: feed recorded stream records through the
//! indexer, in Lambda-sized batches, into the embedded in-memory store, and
//! show what it did and what the derived data became.
//!
//! Files may be a Lambda event (`{"Records": [...]}`), a DynamoDB Streams
//! `GetRecords` response, or JSON Lines with one record per line. Records are
//! replayed in the order given.
//!
//! The in-memory store follows the stream: before a batch is indexed, its
//! records are applied to the store's copy of the source tables (as the real
//! table would already hold them), so node restores and conditional set
//! updates behave as they do against DynamoDB.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, ValueEnum};
use model::config::{self, Config};
use model::record::{parse_any, ChangeRecord, EventKind, Received};
use model::{Image, Planner, Value};
use serde_json::{json, Map, Value as Json};
use stream_indexer::batch::Quarantined;
use stream_indexer::{BatchStats, Indexer, MemoryQuarantine, MemoryStore, Options};

use super::exit;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamdex replay tests/fixtures/example-history.jsonl\n  \
    streamdex replay --batch-size 10 --dump json tests/fixtures/example-history.jsonl > derived.json\n  \
    streamdex replay --config streamdex.toml recorded-*.jsonl")]
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
    /// Also print the resulting index rows and edge sets to stdout.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub dump: Option<Dump>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Dump {
    /// One JSON object: index tables (rows in key order) and edge sets.
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
    pub stats: BatchStats,
    pub quarantined: Vec<Quarantined>,
    pub failed: Vec<String>,
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
    let store = MemoryStore::new(config.clone());
    let indexer = Indexer::new(config.clone(), store, MemoryQuarantine::default(), Options::default());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let summary = runtime.block_on(replay(&indexer, records, args.batch_size as usize));
    print_summary(&summary, &config, err)?;
    if args.dump == Some(Dump::Json) {
        serde_json::to_writer_pretty(&mut *out, &dump(&config, indexer.store()))?;
        writeln!(out)?;
    }
    Ok(if summary.failed.is_empty() {
        exit::OK
    } else {
        exit::FAILURE
    })
}

/// Replays `records` in batches of `batch_size`.
pub async fn replay(
    indexer: &Indexer<MemoryStore, MemoryQuarantine>,
    records: Vec<Received>,
    batch_size: usize,
) -> Summary {
    let mut summary = Summary {
        records: records.len(),
        ..Summary::default()
    };
    let planner = Planner::new(indexer.config());
    let mut records = records.into_iter().peekable();
    while records.peek().is_some() {
        let batch: Vec<Received> = records.by_ref().take(batch_size.max(1)).collect();
        for received in &batch {
            if let Ok(record) = &received.record {
                materialize(indexer.store(), &planner, record);
            }
        }
        let outcome = indexer.handle_received(batch).await;
        summary.batches += 1;
        summary.stats.add(&outcome.stats);
        summary.quarantined.extend(outcome.quarantined);
        summary.failed.extend(outcome.failed);
    }
    summary
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
        "replayed {} records in {} batches ({} tables, {} indexes, {} edge sets)",
        summary.records,
        summary.batches,
        config.tables.len(),
        config.indexes.len(),
        config.edge_sets.len()
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
    writeln!(err, "  quarantined: {}", summary.quarantined.len())?;
    for q in &summary.quarantined {
        writeln!(
            err,
            "    {}: {}",
            q.sequence_number.as_deref().unwrap_or("(no sequence number)"),
            q.reason
        )?;
    }
    if !summary.failed.is_empty() {
        writeln!(err, "  failed from sequence numbers: {}", summary.failed.join(", "))?;
    }
    Ok(())
}

/// The derived data as JSON: `{"indexes": {TABLE: [row...]}, "edge_sets": {TABLE.ATTR: {node: {...}}}}`.
/// Rows are in key order, attribute values in DynamoDB JSON (numbers exact).
pub fn dump(config: &Config, store: &MemoryStore) -> Json {
    let mut indexes = Map::new();
    for (i, index) in config.indexes.iter().enumerate() {
        let rows: Vec<Json> = store
            .rows(i)
            .into_iter()
            .map(|(key, attributes)| {
                let mut row: BTreeMap<String, Value> = attributes.into_iter().collect();
                row.insert(index.partition_key.clone(), Value::S(key.partition));
                row.insert(index.sort_key.clone(), Value::S(key.sort));
                json!(row)
            })
            .collect();
        indexes.insert(index.table.clone(), Json::Array(rows));
    }
    let mut sets = Map::new();
    for (e, set) in config.edge_sets.iter().enumerate() {
        let nodes: Map<String, Json> = store
            .node_sets(e)
            .into_iter()
            .map(|(node, s)| {
                (
                    node,
                    json!({ "members": s.members, set.complete_attribute.clone(): s.complete }),
                )
            })
            .collect();
        sets.insert(format!("{}.{}", set.table, set.attribute), Json::Object(nodes));
    }
    json!({ "indexes": indexes, "edge_sets": sets })
}
