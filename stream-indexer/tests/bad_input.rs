//! A corpus of bad input in one batch with good records: nothing panics,
//! every bad record is quarantined with a reason that names its sequence
//! number (and the attribute, where one is at fault), the good ones are
//! applied, and the batch succeeds.

use std::sync::Arc;

use model::config::{self, Config};
use serde_json::{json, Value as Json};
use stream_indexer::store::memory::MemoryStore;
use stream_indexer::{Backoff, Indexer, MemoryQuarantine, Options};

fn example() -> Arc<Config> {
    Arc::new(config::parse(config::EXAMPLE_CONFIG, "streamdex.example.toml").expect("valid"))
}

fn arn(table: &str) -> String {
    format!("arn:aws:dynamodb:eu-central-1:210987654321:table/{table}/stream/2025-11-20T16:42:07.518")
}

fn record(seq: &str, event: &str, table: &str, keys: Json, new: Option<Json>, old: Option<Json>) -> Json {
    let mut dynamodb = json!({
        "ApproximateCreationDateTime": 1763730000,
        "Keys": keys,
        "SequenceNumber": seq,
        "SizeBytes": 100,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    });
    if let Some(new) = new {
        dynamodb["NewImage"] = new;
    }
    if let Some(old) = old {
        dynamodb["OldImage"] = old;
    }
    json!({
        "eventID": format!("event-{seq}"),
        "eventName": event,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "eu-central-1",
        "dynamodb": dynamodb,
        "eventSourceARN": arn(table),
    })
}

fn issue_keys(id: &str) -> Json {
    json!({"id": {"S": id}, "rel": {"S": id}})
}

fn issue(id: &str, fields: Json) -> Json {
    json!({
        "id": {"S": id},
        "rel": {"S": id},
        "num": {"N": "7"},
        "name": {"S": "an issue"},
        "custom_fields": fields,
    })
}

#[tokio::test]
async fn bad_records_are_quarantined_and_good_ones_applied() {
    let config = example();
    let store = MemoryStore::new(config.clone());
    // The table as it is now: the node and its edge (the indexer reads it to restore sets).
    let item = |pairs: &[(&str, &str)]| -> model::Image {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), model::Value::S((*v).to_owned())))
            .collect()
    };
    store
        .put_item("records", item(&[("source", "GOAL-1"), ("target", "GOAL-1")]))
        .expect("put");
    let edge_item = item(&[
        ("source", "GOAL-1"),
        ("target", "GOALMEMBERSHIP-USER-1"),
        ("gsi0", "400-C"),
    ]);
    store.put_item("records", edge_item).expect("put");
    let options = Options {
        concurrency: 3,
        backoff: Backoff::immediate(3),
        ..Options::default()
    };
    let indexer = Indexer::new(config, store, MemoryQuarantine::new(), options);

    let node_keys = json!({"source": {"S": "GOAL-1"}, "target": {"S": "GOAL-1"}});
    let node = json!({"source": {"S": "GOAL-1"}, "target": {"S": "GOAL-1"}, "name": {"S": "a goal"}});
    let edge_keys = json!({"source": {"S": "GOAL-1"}, "target": {"S": "GOALMEMBERSHIP-USER-1"}});
    let edge = json!({"source": {"S": "GOAL-1"}, "target": {"S": "GOALMEMBERSHIP-USER-1"}, "gsi0": {"S": "400-C"}});
    let big_map: serde_json::Map<String, Json> = (0..10_000)
        .map(|i| (format!("k{i:05}"), json!({"N": i.to_string()})))
        .collect();
    let long = "x".repeat(1100);

    // (sequence number, record, what the reason must mention) — None: a good record.
    let corpus: Vec<(&str, Json, Option<&[&str]>)> = vec![
        (
            "100",
            record("100", "INSERT", "records", node_keys.clone(), Some(node), None),
            None,
        ),
        (
            "101",
            record("101", "INSERT", "records", edge_keys.clone(), Some(edge), None),
            None,
        ),
        (
            "102",
            record(
                "102",
                "INSERT",
                "issues",
                issue_keys("issue-1"),
                Some(issue("issue-1", json!({"M": {"f1": {"N": "42"}}}))),
                None,
            ),
            None,
        ),
        // U+0000 is a valid character: it indexes fine, in values and in map keys.
        (
            "103",
            record(
                "103",
                "INSERT",
                "issues",
                issue_keys("issue-\u{0}nul"),
                Some(issue("issue-\u{0}nul", json!({"M": {"f\u{0}2": {"S": "a\u{0}b"}}}))),
                None,
            ),
            None,
        ),
        // Missing keys.
        (
            "104",
            json!({"eventName": "INSERT", "eventSourceARN": arn("issues"), "dynamodb": {"SequenceNumber": "104", "NewImage": issue("issue-x", json!({"M": {}}))}}),
            Some(&["104", "Keys"]),
        ),
        // A number given as a JSON number.
        (
            "105",
            record(
                "105",
                "INSERT",
                "issues",
                issue_keys("issue-7"),
                Some(json!({"id": {"S": "issue-7"}, "rel": {"S": "issue-7"}, "rank": {"N": 5}})),
                None,
            ),
            Some(&["105", "rank"]),
        ),
        // A wrong type for the index: `custom_fields` must be a map, list or set.
        (
            "106",
            record(
                "106",
                "INSERT",
                "issues",
                issue_keys("issue-6"),
                Some(issue("issue-6", json!({"S": "not a map"}))),
                None,
            ),
            Some(&["106", "custom_fields"]),
        ),
        // A number with 39 significant digits (DynamoDB holds 38).
        (
            "107",
            record(
                "107",
                "INSERT",
                "issues",
                issue_keys("issue-3"),
                Some(issue(
                    "issue-3",
                    json!({"M": {"f1": {"N": "123456789012345678901234567890123456789"}}}),
                )),
                None,
            ),
            Some(&["107", "custom_fields"]),
        ),
        // A good issue, then the same issue with a sort key over 1024 bytes:
        // its old row is deleted, then it is quarantined.
        (
            "108",
            record(
                "108",
                "INSERT",
                "issues",
                issue_keys("issue-4"),
                Some(issue("issue-4", json!({"M": {"f1": {"S": "short"}}}))),
                None,
            ),
            None,
        ),
        (
            "109",
            record(
                "109",
                "MODIFY",
                "issues",
                issue_keys("issue-4"),
                Some(issue("issue-4", json!({"M": {"f1": {"S": long}}}))),
                Some(issue("issue-4", json!({"M": {"f1": {"S": "short"}}}))),
            ),
            Some(&["109", "custom_fields", "1024"]),
        ),
        // A KEYS_ONLY stream record.
        (
            "110",
            json!({"eventName": "MODIFY", "eventSourceARN": arn("records"), "dynamodb": {"Keys": edge_keys, "SequenceNumber": "110", "StreamViewType": "KEYS_ONLY"}}),
            Some(&["110", "KEYS_ONLY"]),
        ),
        // An unknown event name.
        (
            "111",
            record(
                "111",
                "UPSERT",
                "issues",
                issue_keys("issue-9"),
                Some(issue("issue-9", json!({"M": {}}))),
                None,
            ),
            Some(&["111", "UPSERT"]),
        ),
        // A map with 10,000 entries: over the rows-per-item limit.
        (
            "112",
            record(
                "112",
                "INSERT",
                "issues",
                issue_keys("issue-5"),
                Some(issue("issue-5", json!({"M": big_map}))),
                None,
            ),
            Some(&["112", "custom_fields", "10000"]),
        ),
        // An edge whose member part has the wrong type.
        (
            "113",
            record(
                "113",
                "INSERT",
                "records",
                json!({"source": {"S": "GOAL-1"}, "target": {"S": "GOALMEMBERSHIP-USER-2"}}),
                Some(json!({"source": {"S": "GOAL-1"}, "target": {"S": "GOALMEMBERSHIP-USER-2"}, "gsi0": {"L": []}})),
                None,
            ),
            Some(&["113", "gsi0"]),
        ),
        // A table the config does not declare.
        (
            "114",
            record(
                "114",
                "INSERT",
                "elsewhere",
                json!({"pk": {"S": "a"}}),
                Some(json!({"pk": {"S": "a"}})),
                None,
            ),
            Some(&["114", "elsewhere"]),
        ),
        // Not an object at all, and a record without a sequence number.
        ("", json!(42), Some(&["Records[15]", "not a JSON object"])),
        (
            "",
            json!({"eventName": "INSERT", "dynamodb": {"Keys": issue_keys("issue-8")}}),
            Some(&["Records[16]", "SequenceNumber"]),
        ),
    ];
    let payload = json!({"Records": corpus.iter().map(|(_, r, _)| r.clone()).collect::<Vec<_>>()}).to_string();

    let outcome = indexer.handle(payload.as_bytes()).await.expect("a batch");
    assert_eq!(outcome.failed, None, "{:?}", outcome.failures);
    assert_eq!(outcome.response_json(), r#"{"batchItemFailures":[]}"#);

    let quarantined = indexer.quarantine().entries();
    let bad: Vec<&(&str, Json, Option<&[&str]>)> = corpus.iter().filter(|(_, _, m)| m.is_some()).collect();
    assert_eq!(quarantined.len(), bad.len(), "{quarantined:#?}");
    assert_eq!(outcome.stats.quarantined, bad.len());
    for ((seq, raw, mentions), entry) in bad.into_iter().zip(&quarantined) {
        let expected_seq = (!seq.is_empty()).then(|| (*seq).to_owned());
        assert_eq!(entry.sequence_number, expected_seq);
        for m in mentions.unwrap_or_default() {
            assert!(
                entry.reason.contains(m),
                "the reason for {seq:?} should mention {m:?}: {}",
                entry.reason
            );
        }
        let back: Json = serde_json::from_str(&entry.raw).expect("raw JSON");
        assert_eq!(&back, raw, "the raw record is kept as delivered");
        assert!(entry.reason.len() < 2000, "reasons stay short: {}", entry.reason.len());
    }

    // The good records were applied.
    let memory = indexer.store();
    let sets = memory.node_sets(0);
    assert_eq!(
        sets["GOAL-1"].members.iter().collect::<Vec<_>>(),
        vec!["GOALMEMBERSHIP-USER-1#400-C"]
    );
    let partitions: Vec<String> = memory.rows(0).into_iter().map(|(k, _)| k.partition).collect();
    assert_eq!(
        partitions,
        vec!["f\u{0}2".to_owned(), "f1".to_owned()],
        "the NUL issue and issue-1; issue-4's row is gone"
    );
}
