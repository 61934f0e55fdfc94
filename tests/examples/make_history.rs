//! Writes a history of the example mix as JSON Lines in the Lambda record
//! shape that `streamdex replay` reads: goal, team and user nodes and their
//! membership edges (added, re-roled, deleted), issues whose custom fields
//! change, layers; one change in a hundred deletes a node. Every REMOVE of a
//! node or a layer is marked as the TTL service's (`userIdentity`), so the
//! routes of the example config fire and the reaper has nodes to reap.
//!
//! `cargo run --release -p streamdex-tests --features testing --example make_history -- RECORDS [SEED] [KEYSPACE] [--kinesis WINDOW] > history.jsonl`
//!
//! With `--kinesis WINDOW`, the same history as a Kinesis data stream
//! delivers it: each change as DynamoDB writes it to Kinesis (creation
//! times in microseconds, 50 µs apart), reordered within WINDOW places,
//! one in twenty repeated. Replay it under `streamdex config example
//! --stream kinesis`.
//!
//! KEYSPACE (default: RECORDS) sizes the tables: the nodes, issues and
//! live edges of a KEYSPACE-change history. A history longer than its key
//! space changes the same items again, so its tables stop growing (see
//! `workload::write_mix_over`).
//!
//! The history holds only the users' writes: replay feeds the pipeline's own
//! writes (edge-set updates, the reaper's deletes) back through the
//! consumers as DynamoDB's stream would.

use std::io::{BufWriter, Write};
use std::sync::Arc;

use model::config::Precision;
use model::delivery::{kinesis_change, lambda_record};
use model::record::ChangeRecord;
use stream_indexer::workload::{as_expiries, as_kinesis_delivers, write_mix, write_mix_over};
use stream_indexer::MemoryStore;

fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: make_history RECORDS [SEED] [KEYSPACE] [--kinesis WINDOW]";
    let kinesis: Option<usize> = match args.iter().position(|a| a == "--kinesis") {
        Some(at) => {
            let window = args.get(at + 1).ok_or_else(|| anyhow::anyhow!(usage))?.parse()?;
            args.drain(at..at + 2);
            Some(window)
        }
        None => None,
    };
    let mut args = args.into_iter();
    let records: usize = args.next().ok_or_else(|| anyhow::anyhow!(usage))?.parse()?;
    let seed: u64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(7);
    let keyspace: Option<usize> = args.next().map(|s| s.parse()).transpose()?;
    let config = Arc::new(model::config::parse(
        model::config::EXAMPLE_CONFIG,
        "streamdex.example.toml",
    )?);
    let store = MemoryStore::new(config);
    match keyspace {
        None => write_mix(&store, records, seed, true),
        Some(keyspace) => write_mix_over(&store, records, keyspace, seed, true),
    }
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut records: Vec<ChangeRecord> = store.take_stream().into_iter().map(|e| e.record).collect();
    as_expiries(&mut records);
    match kinesis {
        None => {
            for record in &records {
                serde_json::to_writer(&mut out, &lambda_record(record))?;
                out.write_all(b"\n")?;
            }
        }
        Some(window) => {
            for record in &as_kinesis_delivers(records, window, seed) {
                serde_json::to_writer(&mut out, &kinesis_change(record, Precision::Microsecond))?;
                out.write_all(b"\n")?;
            }
        }
    }
    out.flush()?;
    Ok(())
}
