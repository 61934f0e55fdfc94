//! `streamdex replay` of histories as a Kinesis data stream delivers them:
//! reordered within a window and repeated, under a config that reads every
//! table from Kinesis. The derived data and the events end as the same
//! history's in-order delivery leaves them.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use infra::cli::replay::{self, Dump, ReplayArgs};
use model::config::{self, Precision};
use model::delivery::{kinesis_change, lambda_record};
use model::record::ChangeRecord;
use proptest::prelude::*;
use serde_json::Value as Json;
use stream_indexer::workload::{as_expiries, as_kinesis_delivers, write_mix};

use super::replay::{graph_item, ttl_identity};

/// The example mix's changes: `size` of them from `seed`, with one in a
/// hundred deleting a node, and those deletions the TTL service's when
/// `expiries`.
fn history(size: usize, seed: u64, expiries: bool) -> Vec<ChangeRecord> {
    let config = Arc::new(config::parse(config::EXAMPLE_CONFIG, "example").expect("config"));
    let store = stream_indexer::MemoryStore::new(config);
    write_mix(&store, size, seed, true);
    let mut records: Vec<ChangeRecord> = store.take_stream().into_iter().map(|e| e.record).collect();
    if expiries {
        as_expiries(&mut records);
    }
    records
}

fn write_lines(dir: &Path, name: &str, lines: impl IntoIterator<Item = String>) -> PathBuf {
    let path = dir.join(name);
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    for line in lines {
        writeln!(file, "{line}").expect("write");
    }
    file.flush().expect("flush");
    path
}

/// `records` as DynamoDB writes them to Kinesis, one a line.
fn kinesis_lines(records: &[ChangeRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| kinesis_change(r, Precision::Microsecond).to_string())
        .collect()
}

/// The dump (`--dump json`) and the summary of a replay of `files`.
fn dump(files: Vec<PathBuf>, config: Option<PathBuf>, batch_size: u32) -> (Json, String) {
    let args = ReplayArgs {
        batch_size,
        dump: Some(Dump::Json),
        config,
        ..ReplayArgs::embedded(files)
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = replay::run_with(&args, &mut out, &mut err).expect("runs");
    let summary = String::from_utf8_lossy(&err).into_owned();
    assert_eq!(code, 0, "{summary}");
    (serde_json::from_slice(&out).expect("JSON dump"), summary)
}

/// The first few entries of `want`'s index tables or edge sets (`part`)
/// that `got` holds otherwise, as "table key: got / want".
fn differing(part: &str, got: &Json, want: &Json) -> Vec<String> {
    let (got, want) = (&got[part], &want[part]);
    let mut differ: Vec<String> = Vec::new();
    for (name, entries) in want.as_object().into_iter().flatten() {
        for (key, value) in entries.as_object().into_iter().flatten() {
            if got[name][key] != *value {
                differ.push(format!("{name} {key}: {} / {value}", got[name][key]));
            }
        }
    }
    if differ.is_empty() && got != want {
        differ.push(format!("entries that only the first holds: {got} / {want}"));
    }
    differ.truncate(5);
    differ
}

/// How many times each event was published, its detail without the
/// sequence number (a Kinesis line's number: it moves with the order).
fn events(dump: &Json) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for event in dump["events"].as_array().into_iter().flatten() {
        let mut event = event.clone();
        if let Some(detail) = event["detail"].as_object_mut() {
            detail.remove("sequenceNumber");
        }
        *counts.entry(event.to_string()).or_insert(0) += 1;
    }
    counts
}

/// A history replayed as its Kinesis data stream would deliver it
/// (reordered, repeated) ends with the derived data of the same history
/// replayed from its DynamoDB stream. Without expiries: a DynamoDB stream's
/// reaper deletes the edges it finds, even one written after the expiry in
/// the same batch, which the Kinesis-read reaper keeps (the test below
/// holds the reaper to the in-order Kinesis delivery).
#[test]
fn a_kinesis_delivery_replays_to_what_the_dynamodb_stream_does() {
    let records = history(3000, 11, false);
    assert!(records.iter().all(|r| !r.ttl_expiry));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dynamodb = write_lines(
        dir.path(),
        "dynamodb.jsonl",
        records.iter().map(|r| lambda_record(r).to_string()),
    );
    let delivered = as_kinesis_delivers(records.clone(), 12, 5);
    assert!(delivered.len() > records.len(), "some records come twice");
    let kinesis = write_lines(dir.path(), "kinesis.jsonl", kinesis_lines(&delivered));
    let kinesis_config = write_lines(dir.path(), "kinesis.toml", [infra::cli::config::kinesis_example()]);

    let (from_dynamodb, _) = dump(vec![dynamodb], None, 100);
    let (from_kinesis, summary) = dump(vec![kinesis], Some(kinesis_config), 100);
    assert!(
        summary.contains("changes with events delivered again: not published again"),
        "the repeats are counted: {summary}"
    );
    let noted: usize = summary
        .lines()
        .find_map(|l| l.trim().strip_prefix("ledger:"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a ledger line: {summary}"));
    assert!(noted > 0, "the ledger's notes are counted: {summary}");
    for part in ["indexes", "edge_sets"] {
        let differ = differing(part, &from_kinesis, &from_dynamodb);
        assert!(differ.is_empty(), "{part} differs (Kinesis / DynamoDB): {differ:#?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any history, its node deletions the TTL service's (so the reaper
    /// reaps), delivered reordered within a window and repeated, replays
    /// in any batch size to the index rows and events of its in-order
    /// delivery: each event published once, with the same creation time.
    /// Not the edge sets: replay's tables do not yet hold a change that
    /// comes late, as a real table would (see `docs/kinesis.md`; the
    /// pipeline's own property test, against tables that do, compares
    /// them: `stream-indexer/src/apply/guard/kinesis_tests.rs`).
    #[test]
    fn a_reordered_repeated_delivery_replays_to_the_in_order_one(
        size in 200usize..1500,
        seed in any::<u64>(),
        window in 1usize..100,
        batch_size in prop::sample::select(vec![3u32, 25, 100]),
    ) {
        let records = history(size, seed, true);
        prop_assume!(records.iter().any(|r| r.ttl_expiry));
        let mut in_order = as_kinesis_delivers(records.clone(), 0, seed);
        in_order.dedup_by(|a, b| a.event_id == b.event_id);
        prop_assert_eq!(in_order.len(), records.len());
        let delivered = as_kinesis_delivers(records, window, seed);

        let dir = tempfile::tempdir().expect("a temporary directory");
        let config = write_lines(dir.path(), "kinesis.toml", [infra::cli::config::kinesis_example()]);
        let in_order = write_lines(dir.path(), "in-order.jsonl", kinesis_lines(&in_order));
        let delivered = write_lines(dir.path(), "delivered.jsonl", kinesis_lines(&delivered));
        let (want, _) = dump(vec![in_order], Some(config.clone()), batch_size);
        let (got, _) = dump(vec![delivered], Some(config), batch_size);
        let differ = differing("indexes", &got, &want);
        prop_assert!(differ.is_empty(), "index rows differ (reordered / in order): {:#?}", differ);
        prop_assert_eq!(events(&got), events(&want), "the events (reordered / in order)");
    }
}

/// A change of the example `records` table as DynamoDB writes it to
/// Kinesis, created `micros` after a fixed instant.
fn kinesis_line(micros: u64, event: &str, source: &str, target: &str, ttl: bool) -> String {
    let (keys, image) = graph_item(source, target);
    let mut dynamodb = serde_json::json!({
        "ApproximateCreationDateTime": 1_763_719_200_000_000u64 + micros,
        "Keys": keys,
    });
    dynamodb[if event == "REMOVE" { "OldImage" } else { "NewImage" }] = image;
    let identity = ttl.then(ttl_identity);
    serde_json::json!({
        "awsRegion": "eu-west-1",
        "eventID": format!("{micros}"),
        "eventName": event,
        "eventSource": "aws:dynamodb",
        "recordFormat": "application/json",
        "tableName": "records",
        "userIdentity": identity,
        "dynamodb": dynamodb,
    })
    .to_string()
}

/// A node's expiry that comes after the pipeline updated the node's edge
/// set still deletes the node: the update, made later, would have found
/// the node gone. So the reaper reaps it, as in the in-order delivery.
#[test]
fn a_late_expiry_deletes_a_node_the_pipeline_updated_since() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = write_lines(dir.path(), "kinesis.toml", [infra::cli::config::kinesis_example()]);
    let lines = [
        kinesis_line(100, "INSERT", "TEAM-2", "TEAM-2", false),
        kinesis_line(110, "INSERT", "USER-9", "USER-9", false),
        kinesis_line(120, "INSERT", "GOAL-5", "GOAL-5", false),
        // The edge sets of TEAM-2 and USER-9 are updated after this batch,
        // whose newest change (GOAL-6) is newer than USER-9's expiry.
        kinesis_line(200, "INSERT", "TEAM-2", "TEAMMEMBERSHIP-USER-9", false),
        kinesis_line(250, "INSERT", "USER-9", "TEAMMEMBERSHIP-TEAM-2", false),
        kinesis_line(400, "INSERT", "GOAL-6", "GOAL-6", false),
        kinesis_line(300, "REMOVE", "USER-9", "USER-9", true),
    ];
    let late = write_lines(dir.path(), "late.jsonl", lines.iter().cloned());
    let mut ordered = lines.to_vec();
    ordered.swap(5, 6);
    let in_order = write_lines(dir.path(), "in-order.jsonl", ordered);

    for (file, order) in [(late, "late"), (in_order, "in order")] {
        let (dump, summary) = dump(vec![file], Some(config.clone()), 3);
        assert!(
            summary.contains("1 expired nodes reaped, 2 edges deleted"),
            "{order}: {summary}"
        );
        let sets = &dump["edge_sets"]["records.edges"];
        assert_eq!(sets["TEAM-2"]["members"], serde_json::json!([]), "{order}: {sets}");
        assert!(sets.get("USER-9").is_none(), "{order}: USER-9 is gone: {sets}");
    }
}
