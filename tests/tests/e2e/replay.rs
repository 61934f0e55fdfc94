//! `streamdex replay` on the embedded default: the recorded example history,
//! in every batch size, ends with the derived data a from-scratch
//! recomputation gives, and bad files are refused with where and why.

use std::path::PathBuf;
use std::sync::Arc;

use infra::cli::replay::{self, Dump, ReplayArgs};
use model::config;
use model::record::parse_any;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(name)
}

fn args(files: Vec<PathBuf>, batch_size: u32) -> ReplayArgs {
    ReplayArgs {
        batch_size,
        dump: Some(Dump::Json),
        ..ReplayArgs::embedded(files)
    }
}

#[tokio::test]
async fn every_batch_size_converges_to_the_recomputation() {
    let bytes = std::fs::read(fixture("example-history.jsonl")).expect("fixture");
    let config = Arc::new(config::parse(config::EXAMPLE_CONFIG, "example").expect("config"));
    for batch_size in [1, 2, 3, 5, 8, 100] {
        let records = parse_any(&bytes).expect("parses");
        assert_eq!(records.len(), 17);
        let local = infra::runner::replay::Local::new(config.clone());
        let summary = local.replay(&records, batch_size).await;
        assert!(
            summary.failed.is_empty() && summary.quarantined.is_empty(),
            "batch size {batch_size}: {summary:?}"
        );
        let store = local.store();
        assert_eq!(store.snapshot(), store.recompute(), "batch size {batch_size}");
        let sets = store.node_sets(0);
        let goal = &sets["GOAL-cb421e73"];
        assert_eq!(
            goal.members.iter().collect::<Vec<_>>(),
            ["GOALMEMBERSHIP-USER-alice#500-LEAD"]
        );
        assert_eq!(goal.complete, Some(true));
        assert!(
            !sets.contains_key("GOAL-missing"),
            "an edge without its node creates no node"
        );
        let partitions: Vec<String> = store.rows(0).into_iter().map(|(k, _)| k.partition).collect();
        assert_eq!(
            partitions,
            ["3fe6", "882a"],
            "issue-af34's two fields; issue-b001 deleted, bug-17 not an issue-"
        );
    }
}

#[test]
fn the_dump_lists_rows_in_key_order_and_the_summary_says_what_happened() {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = replay::run_with(&args(vec![fixture("example-history.jsonl")], 4), &mut out, &mut err).expect("runs");
    assert_eq!(code, 0);
    let dump: serde_json::Value = serde_json::from_slice(&out).expect("JSON dump");
    let rows = dump["indexes"]["IssueAttribIndex"].as_array().expect("rows");
    let keys: Vec<(&str, &str)> = rows
        .iter()
        .filter_map(|r| Some((r["pk"]["S"].as_str()?, r["sk"]["S"].as_str()?)))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    assert_eq!(
        dump["edge_sets"]["records.edges"]["TEAM-0807"]["members"][0],
        "TEAMMEMBERSHIP-USER-alice#310-MANAGER"
    );
    let summary = String::from_utf8(err).expect("utf-8");
    assert!(summary.contains("replayed 17 records in 5 batches"), "{summary}");
}

/// Output whose reader goes away after `room` bytes, failing as a closed
/// pipe does, or as `kind` says.
struct Closing {
    room: usize,
    kind: std::io::ErrorKind,
}

impl std::io::Write for Closing {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.room == 0 {
            return Err(std::io::Error::from(self.kind));
        }
        let taken = bytes.len().min(self.room);
        self.room -= taken;
        Ok(taken)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_dump_whose_reader_goes_away_ends_quietly_and_other_write_errors_do_not() {
    let files = vec![fixture("example-history.jsonl")];
    let mut out = Closing {
        room: 100,
        kind: std::io::ErrorKind::BrokenPipe,
    };
    let mut err = Vec::new();
    let result = replay::run_with(&args(files.clone(), 4), &mut out, &mut err);
    assert!(result.is_err(), "the dump was cut short");
    let mut said = Vec::new();
    assert_eq!(replay::outcome(result, &mut said), 0);
    assert!(said.is_empty(), "{}", String::from_utf8_lossy(&said));

    let mut out = Closing {
        room: 100,
        kind: std::io::ErrorKind::StorageFull,
    };
    let result = replay::run_with(&args(files, 4), &mut out, &mut err);
    let mut said = Vec::new();
    assert_eq!(replay::outcome(result, &mut said), 1);
    let said = String::from_utf8(said).expect("utf-8");
    assert!(said.starts_with("streamdex replay: "), "{said}");
}

#[test]
fn a_file_that_does_not_parse_is_refused_with_its_line() {
    let dir = std::env::temp_dir().join(format!("streamdex-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let bad = dir.join("bad.jsonl");
    let good = std::fs::read_to_string(fixture("example-history.jsonl")).expect("fixture");
    let first = good.lines().next().expect("a line");
    std::fs::write(&bad, format!("{first}\n{{\"eventName\": \n")).expect("write");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = replay::run_with(&args(vec![bad.clone()], 10), &mut out, &mut err).expect("runs");
    let message = String::from_utf8(err).expect("utf-8");
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("bad.jsonl:2:"), "names the file and line: {message}");
    assert!(out.is_empty(), "nothing dumped for a refused file");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn files_that_cannot_be_a_stream_of_the_configs_tables_are_refused() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let good = std::fs::read_to_string(fixture("example-history.jsonl")).expect("fixture");
    let first = good.lines().next().expect("a line");
    let undeclared = first.replace("table/records/", "table/elsewhere/");
    assert_ne!(undeclared, first, "the fixture's first record names the records table");
    let cases = [
        ("empty.jsonl", String::new(), "no records"),
        ("foo.jsonl", "{\"foo\": 1}\n".to_owned(), "none of its 1 JSON values"),
        ("elsewhere.jsonl", format!("{undeclared}\n"), "elsewhere (1 record)"),
    ];
    for (name, text, expected) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = replay::run_with(&args(vec![path], 10), &mut out, &mut err).expect("runs");
        let message = String::from_utf8(err).expect("utf-8");
        assert_eq!(code, 2, "{name}: {message}");
        assert!(
            message.contains(&format!("refused {}", dir.path().join(name).display())),
            "{message}"
        );
        assert!(message.contains(expected), "{name}: {message}");
    }
    // A mix replays, and says how many records matched nothing.
    let mix = dir.path().join("mix.jsonl");
    std::fs::write(&mix, format!("{first}\n{undeclared}\n")).expect("write");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = replay::run_with(&args(vec![mix], 10), &mut out, &mut err).expect("runs");
    let message = String::from_utf8(err).expect("utf-8");
    assert_eq!(code, 0, "{message}");
    assert!(
        message.contains("matched no declared table: 1 records (of elsewhere (1 record))"),
        "{message}"
    );
}

/// The keys and the image of an item of the example `records` table: a
/// node when `source` is `target`, else an edge with a role.
pub(super) fn graph_item(source: &str, target: &str) -> (serde_json::Value, serde_json::Value) {
    let keys = serde_json::json!({"source": {"S": source}, "target": {"S": target}});
    let mut image = keys.clone();
    if source != target {
        image["gsi0"] = serde_json::json!({"S": "100-MEMBER"});
    }
    (keys, image)
}

/// The `userIdentity` of a deletion by the TTL service.
pub(super) fn ttl_identity() -> serde_json::Value {
    serde_json::json!({"type": "Service", "principalId": "dynamodb.amazonaws.com"})
}

/// A JSON Lines record of the example `records` table.
fn graph_line(seq: u32, event: &str, source: &str, target: &str, ttl: bool) -> String {
    let (keys, image) = graph_item(source, target);
    let mut dynamodb = serde_json::json!({
        "Keys": keys,
        "SequenceNumber": format!("{seq:021}"),
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    });
    dynamodb[if event == "REMOVE" { "OldImage" } else { "NewImage" }] = image;
    let mut record = serde_json::json!({
        "eventName": event,
        "eventSourceARN": "arn:aws:dynamodb:eu-west-1:123456789012:table/records/stream/x",
        "dynamodb": dynamodb,
    });
    if ttl {
        record["userIdentity"] = ttl_identity();
    }
    record.to_string()
}

#[test]
fn an_expiry_replays_through_the_router_and_the_reaper() {
    let dir = std::env::temp_dir().join(format!("streamdex-replay-reap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("expiry.jsonl");
    let lines = [
        graph_line(1, "INSERT", "TEAM-2", "TEAM-2", false),
        graph_line(2, "INSERT", "USER-9", "USER-9", false),
        graph_line(3, "INSERT", "TEAM-2", "TEAMMEMBERSHIP-USER-9", false),
        graph_line(4, "INSERT", "USER-9", "TEAMMEMBERSHIP-TEAM-2", false),
        graph_line(5, "REMOVE", "USER-9", "USER-9", true),
    ];
    std::fs::write(&file, lines.join("\n")).expect("write");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = replay::run_with(&args(vec![file], 2), &mut out, &mut err).expect("runs");
    let summary = String::from_utf8(err).expect("utf-8");
    assert_eq!(code, 0, "{summary}");
    assert!(summary.contains("Node Expired: 1"), "{summary}");
    assert!(summary.contains("1 expired nodes reaped, 2 edges deleted"), "{summary}");

    let dump: serde_json::Value = serde_json::from_slice(&out).expect("JSON dump");
    // The reaper deleted TEAM-2's membership edge; the indexer followed.
    let team = &dump["edge_sets"]["records.edges"]["TEAM-2"];
    assert_eq!(team["members"], serde_json::json!([]), "{team}");
    assert!(dump["edge_sets"]["records.edges"].get("USER-9").is_none());
    let events = dump["events"].as_array().expect("events");
    let expired: Vec<&serde_json::Value> = events.iter().filter(|e| e["detailType"] == "Node Expired").collect();
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0]["detail"]["keys"]["source"]["S"], "USER-9");
    assert_eq!(expired[0]["detail"]["expired"], true);
    let _ = std::fs::remove_dir_all(&dir);
}
