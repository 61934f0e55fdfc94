//! Tests for the stream record parsers, on the fixtures in `tests/fixtures/`
//! (three tables, three shapes), the broken set in `tests/fixtures/broken/`,
//! the shared captures in `../../shared/fixtures/` when present, and inline
//! records for the finer cases.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::value::RawValue;

use super::time::parse_creation_time;
use super::*;
use crate::value::Value;

/// The payload's records read whole, owned.
fn read_batch(bytes: &[u8]) -> Result<BatchReader<'_>, ParseError> {
    super::read_batch(bytes, Mode::Whole)
}

/// The payload's records read whole, borrowed.
fn read_batch_borrowed(bytes: &[u8]) -> Result<BatchReader<'_, borrowed::Image<'_>>, ParseError> {
    super::read_batch(bytes, Mode::Whole)
}

fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// A fixture's bytes, leaked so that records parsed from it may outlive
/// the call (records borrow their text).
fn fixture(name: &str) -> &'static [u8] {
    let path = fixture_path(name);
    std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .leak()
}

fn ok<'r>(received: &'r Received<'_>) -> &'r ChangeRecord {
    match &received.record {
        Ok(record) => record,
        Err(e) => panic!("expected a record, got: {e}"),
    }
}

fn err<'r>(received: &'r Received<'_>) -> &'r RecordError {
    match &received.record {
        Ok(record) => panic!("expected an error, got {record:?}"),
        Err(e) => e,
    }
}

fn s(text: &str) -> Value {
    Value::S(text.to_owned())
}

fn n(text: &str) -> Value {
    Value::N(text.to_owned())
}

fn time(seconds: i64, nanos: u32) -> Option<CreationTime> {
    Some(CreationTime { seconds, nanos })
}

/// A minimal valid record in the Lambda spelling, to edit per test.
fn base_record() -> serde_json::Value {
    serde_json::json!({
        "eventID": "e0f1a2b3",
        "eventName": "MODIFY",
        "eventSource": "aws:dynamodb",
        "awsRegion": "eu-central-1",
        "dynamodb": {
            "ApproximateCreationDateTime": 1763730000,
            "Keys": {"id": {"S": "issue-5c1d"}, "rel": {"S": "project-91ab"}},
            "NewImage": {"id": {"S": "issue-5c1d"}, "rel": {"S": "project-91ab"}, "num": {"N": "18"}},
            "OldImage": {"id": {"S": "issue-5c1d"}, "rel": {"S": "project-91ab"}, "num": {"N": "17"}},
            "SequenceNumber": "777000000000000000001",
            "SizeBytes": 120,
            "StreamViewType": "NEW_AND_OLD_IMAGES"
        },
        "eventSourceARN": "arn:aws:dynamodb:eu-central-1:210987654321:table/issues/stream/2025-11-20T16:42:07.518"
    })
}

/// Parses `value` as one record (its text is leaked: a test's few bytes).
fn parse_value(value: &serde_json::Value) -> Received<'static> {
    let text = value.to_string();
    let raw: Box<RawValue> = serde_json::from_str(&text).expect("test JSON");
    parse_record(Box::leak(raw))
}

/// Parses `base_record()` with `edit` applied to its `dynamodb` part.
fn with_dynamodb(edit: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>)) -> Received<'static> {
    let mut record = base_record();
    edit(record["dynamodb"].as_object_mut().expect("object"));
    parse_value(&record)
}

// ---------------------------------------------------------------------------
// The three shapes, three tables
// ---------------------------------------------------------------------------

#[test]
fn lambda_event_graph_records_table() {
    let received = parse_batch(fixture("lambda-records.json")).expect("batch");
    assert_eq!(received.len(), 6);
    let kinds: Vec<_> = received.iter().map(|r| ok(r).kind).collect();
    use EventKind::*;
    assert_eq!(kinds, [Insert, Insert, Modify, Insert, Modify, Remove]);

    let node = ok(&received[0]);
    let goal = "GOAL-3b9f6c1e-8a2d-4e57-9c10-5f7e2a4d8b61";
    assert_eq!(node.event_id.as_deref(), Some("3f0c9a7e1b2d4c5e8f90a1b2c3d4e5f6"));
    assert_eq!(node.table.as_deref(), Some("records"));
    assert_eq!(
        node.source_arn.as_deref(),
        Some("arn:aws:dynamodb:eu-central-1:210987654321:table/records/stream/2025-11-20T16:42:07.518")
    );
    assert_eq!(
        node.keys,
        Image::from([("source".to_owned(), s(goal)), ("target".to_owned(), s(goal))])
    );
    assert_eq!(
        node.new.as_ref().and_then(|i| i.get("name")),
        Some(&s("Ship the stream indexer"))
    );
    assert_eq!(node.old, None);
    assert_eq!(node.sequence_number, "5130100000000000021938771001");
    assert_eq!(
        received[0].sequence_number.as_deref(),
        Some("5130100000000000021938771001")
    );
    assert_eq!(node.created, time(1763730000, 0));
    assert_eq!(node.size_bytes, Some(233));
    assert_eq!(node.view_type, Some(ViewType::NewAndOldImages));
    assert!(!node.ttl_expiry);

    // The pipeline's own edge-set update on the node.
    let update = ok(&received[2]);
    assert_eq!(
        update.new.as_ref().and_then(|i| i.get("edges")),
        Some(&Value::Ss(vec![
            "GOALMEMBERSHIP-USER-a4c2e9d0-71b3-4f6e-8d25-0e9b3c7a1f42#500-OWNER".to_owned()
        ]))
    );
    assert!(update.old.as_ref().is_some_and(|i| !i.contains_key("edges")));

    // A user's delete is not a TTL expiry.
    let removed = ok(&received[5]);
    assert_eq!(
        (removed.new.is_none(), removed.old.is_some(), removed.ttl_expiry),
        (true, true, false)
    );
}

#[test]
fn lambda_event_issues_table_keeps_every_type_and_exact_numbers() {
    let received = parse_batch(fixture("lambda-issues.json")).expect("batch");
    assert_eq!(received.len(), 4);
    assert!(received.iter().all(|r| ok(r).table.as_deref() == Some("issues")));
    let insert = ok(&received[0]);
    let new = insert.new.as_ref().expect("NewImage");
    let Some(Value::M(fields)) = new.get("custom_fields") else {
        panic!("custom_fields is not a map")
    };
    // 38 significant digits, kept as text.
    assert_eq!(fields.get("3fe6"), Some(&n("12345678901234567890123456789012345678")));
    assert_eq!(
        fields.get("9b10"),
        Some(&Value::Ns(vec!["1.5".into(), "-2".into(), "300".into()]))
    );
    assert_eq!(fields.get("a7c3"), Some(&Value::Bool(true)));
    assert_eq!(fields.get("c0de"), Some(&Value::Null(true)));
    assert_eq!(fields.get("e5a2"), Some(&Value::B(vec![0, 1, 2, 255])));
    let Some(Value::L(list)) = fields.get("d4f1") else {
        panic!("d4f1 is not a list")
    };
    assert_eq!(list[..2], [s("pump"), n("2")]);
    assert!(matches!(&list[2], Value::M(m) if m.get("qty") == Some(&n("4"))));
    let Some(Value::M(measure)) = fields.get("f6b3") else {
        panic!("f6b3 is not a map")
    };
    assert_eq!(
        measure.get("value"),
        Some(&n("-0.000000000000000000000000000000000000001"))
    );
    assert_eq!(
        new.get("attachments"),
        Some(&Value::Bs(vec![b"\x89PNG\r\n\x1a\n".to_vec(), b"%PDF-1.7".to_vec()]))
    );

    let modify = ok(&received[1]);
    let Some(Value::M(after)) = modify.new.as_ref().and_then(|i| i.get("custom_fields")) else {
        panic!("custom_fields is not a map")
    };
    assert_eq!(after.get("3fe6"), Some(&n("-98765432109876543210987654321098765.432")));
    assert!(!after.contains_key("47e5"));
    assert_eq!(ok(&received[3]).kind, EventKind::Remove);
}

#[test]
fn lambda_event_layers_table_ttl_expiry_lower_case_identity() {
    let received = parse_batch(fixture("lambda-layers.json")).expect("batch");
    let ttl: Vec<_> = received.iter().map(|r| ok(r).ttl_expiry).collect();
    assert_eq!(ttl, [false, false, true]);
    let expired = ok(&received[2]);
    assert_eq!(expired.kind, EventKind::Remove);
    assert_eq!(expired.table.as_deref(), Some("layers"));
    assert_eq!(expired.old.as_ref().and_then(|i| i.get("ttl")), Some(&n("1763730000")));
    assert_eq!(expired.keys.get("sk"), Some(&s("lyrVrsn#v29")));
}

#[test]
fn getrecords_response_fractions_and_capitalised_identity() {
    let received = parse_batch(fixture("getrecords-records.json")).expect("batch");
    assert_eq!(received.len(), 3);
    let created: Vec<_> = received.iter().map(|r| ok(r).created).collect();
    assert_eq!(
        created,
        [
            time(1763733010, 482_913_000),
            time(1763733600, 0),
            time(1763733601, 900_000_000)
        ]
    );
    for r in &received {
        let record = ok(r);
        assert_eq!((record.table.as_deref(), record.source_arn.as_deref()), (None, None));
    }
    assert!(ok(&received[1]).ttl_expiry);
    assert!(!ok(&received[0]).ttl_expiry);

    let issues = parse_batch(fixture("getrecords-issues.json")).expect("batch");
    assert_eq!(ok(&issues[0]).created, time(1763734800, 125_000));
    assert_eq!(ok(&issues[1]).created, time(1763734861, 0));
    assert_eq!(
        ok(&issues[1]).new.as_ref().and_then(|i| i.get("custom_fields")),
        Some(&Value::M(Default::default()))
    );

    let layers = parse_batch(fixture("getrecords-layers.json")).expect("batch");
    assert_eq!(ok(&layers[0]).created, time(1763735110, 250_731_000));
    assert!(ok(&layers[0]).ttl_expiry);
    assert_eq!(ok(&layers[1]).created, time(1763735170, 500_000_000));
}

#[test]
fn json_lines_with_blank_lines_and_both_spellings() {
    let text = String::from_utf8(fixture("records.jsonl").to_vec()).expect("utf-8");
    let lines = parse_json_lines(&text).expect("lines");
    let numbers: Vec<_> = lines.iter().map(|(line, _)| *line).collect();
    assert_eq!(numbers, [1, 2, 4, 5, 7]);
    let ttl: Vec<_> = lines.iter().map(|(_, r)| ok(r).ttl_expiry).collect();
    assert_eq!(ttl, [false, false, false, true, false]);
    // The same records as the batches they were taken from.
    let lambda = parse_batch(fixture("lambda-records.json")).expect("batch");
    let get = parse_batch(fixture("getrecords-records.json")).expect("batch");
    assert_eq!(ok(&lines[0].1), ok(&lambda[0]));
    assert_eq!(ok(&lines[2].1), ok(&get[0]));
    assert_eq!(ok(&lines[3].1), ok(&get[1]));

    let issues = String::from_utf8(fixture("issues.jsonl").to_vec()).expect("utf-8");
    let issues = parse_json_lines(&issues).expect("lines");
    assert_eq!(issues.iter().map(|(line, _)| *line).collect::<Vec<_>>(), [1, 3, 4, 5]);
    assert_eq!(ok(&issues[1].1).created, time(1763734800, 125_000));

    let layers = String::from_utf8(fixture("layers.jsonl").to_vec()).expect("utf-8");
    let layers = parse_json_lines(&layers).expect("lines");
    assert_eq!(layers.iter().map(|(line, _)| *line).collect::<Vec<_>>(), [2, 3, 5, 6]);
    assert_eq!(layers.iter().filter(|(_, r)| ok(r).ttl_expiry).count(), 2);
}

#[test]
fn json_lines_crlf_bom_and_whitespace_only_lines() {
    let line = base_record().to_string();
    let text = format!("\u{feff}{line}\r\n  \t\r\n\r\n{line}\r\n");
    let lines = parse_json_lines(&text).expect("lines");
    assert_eq!(lines.iter().map(|(line, _)| *line).collect::<Vec<_>>(), [1, 4]);
    assert!(lines.iter().all(|(_, r)| r.record.is_ok()));
    let any = parse_any(text.as_bytes()).expect("any");
    assert_eq!(any.len(), 2);
    assert!(parse_json_lines("").expect("empty").is_empty());
}

#[test]
fn parse_any_detects_every_shape() {
    let files = [
        ("lambda-records.json", 6),
        ("lambda-issues.json", 4),
        ("lambda-layers.json", 3),
        ("getrecords-records.json", 3),
        ("getrecords-issues.json", 2),
        ("getrecords-layers.json", 2),
        ("records.jsonl", 5),
        ("issues.jsonl", 4),
        ("layers.jsonl", 4),
    ];
    for (name, count) in files {
        let bytes = fixture(name);
        let any = parse_any(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(any.len(), count, "{name}");
        let specific: Vec<Received> = if name.ends_with(".jsonl") {
            let text = std::str::from_utf8(bytes).expect("utf-8");
            parse_json_lines(text)
                .expect("lines")
                .into_iter()
                .map(|(_, r)| r)
                .collect()
        } else {
            parse_batch(bytes).expect("batch")
        };
        for (a, b) in any.iter().zip(&specific) {
            assert_eq!(ok(a), ok(b), "{name}");
            assert_eq!(a.raw_json().text(), b.raw_json().text(), "{name}");
            assert_eq!(a.sequence_number, b.sequence_number, "{name}");
        }
    }
    // Nothing at all is no records.
    assert!(parse_any(b"").expect("empty").is_empty());
    assert!(parse_any(b" \n\r\n\t").expect("blank").is_empty());
}

#[test]
fn parse_any_single_record_even_pretty_printed() {
    let record = base_record();
    for text in [record.to_string(), serde_json::to_string_pretty(&record).expect("json")] {
        let text = format!("\n{text}\n");
        let received = parse_any(text.as_bytes()).expect("one record");
        assert_eq!(received.len(), 1);
        assert_eq!(ok(&received[0]).sequence_number, "777000000000000000001");
    }
}

#[test]
fn raw_text_is_kept_exactly() {
    let bytes = fixture("lambda-issues.json");
    let text = std::str::from_utf8(bytes).expect("utf-8");
    for r in parse_batch(bytes).expect("batch") {
        let Raw::Json(raw) = r.raw else {
            panic!("a parsed record borrows its text");
        };
        assert!(raw.starts_with("{\n      \"eventID\""));
        assert!(text.contains(raw));
        // The raw text parses again to the same record.
        let raw: &RawValue = serde_json::from_str(raw).expect("the raw text is JSON");
        assert_eq!(parse_record(raw).record, r.record);
    }
    let lines = String::from_utf8(fixture("issues.jsonl").to_vec()).expect("utf-8");
    for ((line, r), text) in parse_json_lines(&lines)
        .expect("lines")
        .iter()
        .zip(lines.lines().filter(|l| !l.is_empty()))
    {
        assert_eq!(r.raw_json().text(), text, "line {line}");
    }
}

#[test]
fn shared_fixtures_when_present() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures");
    let lambda = dir.join("lambda-event.json");
    let get = dir.join("getrecords-response.json");
    if !lambda.exists() || !get.exists() {
        eprintln!("skipped: the shared fixtures are not at {}", dir.display());
        return;
    }
    let bytes = std::fs::read(&lambda).expect("read");
    let received = parse_batch(&bytes).expect("lambda event");
    assert_eq!(received.len(), 4);
    let tables: Vec<_> = received
        .iter()
        .map(|r| ok(r).table.as_deref().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(tables, ["records", "records", "issues", "layers"]);
    assert_eq!(
        received.iter().map(|r| ok(r).ttl_expiry).collect::<Vec<_>>(),
        [false, false, false, true]
    );
    assert_eq!(ok(&received[3]).created, time(1763722800, 0));
    assert_eq!(parse_any(&bytes).expect("any").len(), 4);

    let bytes = std::fs::read(&get).expect("read");
    let received = parse_batch(&bytes).expect("getrecords response");
    assert_eq!(received.len(), 1);
    let record = ok(&received[0]);
    assert!(record.ttl_expiry);
    assert_eq!(record.created, time(1763722800, 0));
    assert_eq!(record.table, None);
    assert_eq!(record.sequence_number, "4421586000000000017450447999");
}

// ---------------------------------------------------------------------------
// userIdentity
// ---------------------------------------------------------------------------

#[test]
fn ttl_expiry_in_both_spellings_and_only_for_the_ttl_service() {
    let cases = [
        (
            serde_json::json!({"type": "Service", "principalId": "dynamodb.amazonaws.com"}),
            true,
        ),
        (
            serde_json::json!({"PrincipalId": "dynamodb.amazonaws.com", "Type": "Service"}),
            true,
        ),
        (
            serde_json::json!({"type": "Service", "principalId": "lambda.amazonaws.com"}),
            false,
        ),
        (
            serde_json::json!({"Type": "User", "PrincipalId": "dynamodb.amazonaws.com"}),
            false,
        ),
        (serde_json::json!({"type": "Service"}), false),
        (serde_json::json!({}), false),
        (serde_json::Value::Null, false),
    ];
    for (identity, expected) in cases {
        let mut record = base_record();
        record["eventName"] = "REMOVE".into();
        record["userIdentity"] = identity.clone();
        let received = parse_value(&record);
        assert_eq!(ok(&received).ttl_expiry, expected, "{identity}");
    }
    let mut record = base_record();
    record["userIdentity"] = serde_json::json!("Service");
    assert!(matches!(err(&parse_value(&record)), RecordError::Malformed { .. }));
}

// ---------------------------------------------------------------------------
// ApproximateCreationDateTime
// ---------------------------------------------------------------------------

#[test]
fn creation_time_exact_forms() {
    let cases: &[(&str, i64, u32)] = &[
        ("1763722800", 1763722800, 0),
        ("1763722800.0", 1763722800, 0),
        ("1763722800.123456", 1763722800, 123_456_000),
        ("1763722800.000000001", 1763722800, 1),
        ("1763722800.1234567899", 1763722800, 123_456_789),
        ("1763722800.999999999999", 1763722800, 999_999_999),
        ("1.7637228001234567E9", 1763722800, 123_456_700),
        ("1.763722800123456e+9", 1763722800, 123_456_000),
        ("17637228001234560e-7", 1763722800, 123_456_000),
        ("1763722800123456E-6", 1763722800, 123_456_000),
        ("0.5e1", 5, 0),
        ("5e-1", 0, 500_000_000),
        ("5e-10", 0, 0),
        ("1e-999999999999999999999", 0, 0),
        ("0", 0, 0),
        ("-0", 0, 0),
        ("0.0e99999999999", 0, 0),
        ("000001763722800.5", 1763722800, 500_000_000),
        ("9223372036854775807", i64::MAX, 0),
        ("9223372036854775807.999999999", i64::MAX, 999_999_999),
        ("\"1763722800.123456\"", 1763722800, 123_456_000),
        ("\"2025-11-21T11:00:00Z\"", 1763722800, 0),
        ("\"2025-11-21T10:00:00.123+01:00\"", 1763715600, 123_000_000),
        ("\"2025-11-21 10:00:00.123456789123-0100\"", 1763722800, 123_456_789),
        ("\"2024-02-29T23:59:59-05:30\"", 1709270999, 0),
        ("\"1970-01-01T00:00:00Z\"", 0, 0),
    ];
    for &(raw, seconds, nanos) in cases {
        assert_eq!(parse_creation_time(raw), Ok(CreationTime { seconds, nanos }), "{raw}");
    }
}

#[test]
fn creation_time_rejects_garbage() {
    for raw in [
        "-1",
        "-1763722800.5",
        "9223372036854775808",
        "1e19",
        "9.3e18",
        "1e",
        "1e+",
        "1.2.3",
        "--1",
        "true",
        "null",
        "{}",
        "[1763722800]",
        "\"\"",
        "\"yesterday\"",
        "\"0x1763\"",
        "\"2025-02-30T00:00:00Z\"",
        "\"2025-11-21T10:00:00\"",
        "\"2025-11-21T24:00:00Z\"",
        "\"2025-11-21T10:00:00+25:00\"",
        "\"2025-11-21T10:00:00.Z\"",
        "\"2025-11-21T10:00:00Zjunk\"",
        "\"1969-12-31T23:59:59Z\"",
        "",
    ] {
        let result = parse_creation_time(raw);
        assert!(result.is_err(), "{raw} gave {result:?}");
    }
    let received = with_dynamodb(|d| {
        d.insert("ApproximateCreationDateTime".into(), "soon".into());
    });
    let e = err(&received);
    assert!(matches!(e, RecordError::BadCreationTime { .. }), "{e}");
    assert!(e.to_string().contains("777000000000000000001"), "{e}");
}

// ---------------------------------------------------------------------------
// Record errors, from the broken fixtures
// ---------------------------------------------------------------------------

/// Parses a one-record file of the broken set.
fn broken(name: &str) -> Received<'static> {
    let mut received = parse_any(fixture(&format!("broken/{name}"))).expect("JSON");
    assert_eq!(received.len(), 1, "{name}");
    received.remove(0)
}

#[test]
fn broken_records_name_their_sequence_number_and_reason() {
    use ImagePart::{Keys, NewImage, OldImage};
    let seq = |suffix: &str| format!("5130900000000000021939{suffix}");
    type Check = fn(&RecordError) -> bool;
    let cases: &[(&str, &str, Check)] = &[
        ("no-dynamodb.json", "", |e| matches!(e, RecordError::NoDynamodb { .. })),
        ("no-keys.json", "000102", |e| matches!(e, RecordError::NoKeys { .. })),
        ("empty-keys.json", "000103", |e| matches!(e, RecordError::NoKeys { .. })),
        ("keys-wrong-type.json", "000120", |e| {
            matches!(e, RecordError::NotAnImage { part: Keys, .. })
        }),
        ("no-sequence-number.json", "", |e| {
            matches!(e, RecordError::MissingSequenceNumber { .. })
        }),
        ("bad-sequence-number.json", "", |e| {
            matches!(e, RecordError::BadSequenceNumber { .. })
        }),
        (
            "unknown-event-name.json",
            "000105",
            |e| matches!(e, RecordError::UnknownEventName { name, .. } if name == "FOO"),
        ),
        ("insert-without-new-image.json", "000106", |e| {
            matches!(
                e,
                RecordError::MissingImage {
                    kind: EventKind::Insert,
                    part: NewImage,
                    ..
                }
            )
        }),
        ("modify-without-old-image.json", "000107", |e| {
            matches!(
                e,
                RecordError::MissingImage {
                    kind: EventKind::Modify,
                    part: OldImage,
                    ..
                }
            )
        }),
        ("remove-without-old-image.json", "000108", |e| {
            matches!(
                e,
                RecordError::MissingImage {
                    kind: EventKind::Remove,
                    part: OldImage,
                    ..
                }
            )
        }),
        ("keys-only-remove.json", "000109", |e| {
            matches!(
                e,
                RecordError::ViewTypeLacksImage {
                    view_type: ViewType::KeysOnly,
                    part: OldImage,
                    ..
                }
            )
        }),
        ("new-image-view-modify.json", "000110", |e| {
            matches!(
                e,
                RecordError::ViewTypeLacksImage {
                    view_type: ViewType::NewImage,
                    part: OldImage,
                    ..
                }
            )
        }),
        ("old-image-view-insert.json", "000111", |e| {
            matches!(
                e,
                RecordError::ViewTypeLacksImage {
                    view_type: ViewType::OldImage,
                    part: NewImage,
                    ..
                }
            )
        }),
        ("key-missing-in-image.json", "000112", |e| {
            matches!(e, RecordError::KeyMismatch { part: NewImage, attribute, problem: KeyProblem::Missing, .. }
                if attribute == "target")
        }),
        ("key-differs-in-image.json", "000113", |e| {
            matches!(e, RecordError::KeyMismatch { part: OldImage, attribute, problem: KeyProblem::Different, .. }
                if attribute == "target")
        }),
        (
            "number-not-string.json",
            "000114",
            |e| matches!(e, RecordError::BadAttribute { part: NewImage, attribute, .. } if attribute == "rank"),
        ),
        (
            "unknown-type-tag.json",
            "000115",
            |e| matches!(e, RecordError::BadAttribute { part: OldImage, attribute, .. } if attribute == "memberRole"),
        ),
        (
            "nested-bad-number.json",
            "000116",
            |e| matches!(e, RecordError::BadAttribute { part: NewImage, attribute, .. } if attribute == "custom_fields"),
        ),
        (
            "two-type-tags.json",
            "000119",
            |e| matches!(e, RecordError::BadAttribute { part: NewImage, attribute, .. } if attribute == "date"),
        ),
        ("bad-creation-time.json", "000117", |e| {
            matches!(e, RecordError::BadCreationTime { .. })
        }),
    ];
    for &(name, suffix, check) in cases {
        let received = broken(name);
        let e = err(&received);
        assert!(check(e), "{name}: unexpected {e:?}");
        let message = e.to_string();
        if suffix.is_empty() {
            // No (usable) sequence number: named by eventID.
            assert_eq!(
                e.record(),
                &RecordId::EventId("d4e5f6a7b8c94dae0f1a2b3c4d5e6f7a".into()),
                "{name}"
            );
            assert!(
                message.contains("d4e5f6a7b8c94dae0f1a2b3c4d5e6f7a"),
                "{name}: {message}"
            );
            assert_eq!(received.sequence_number, None, "{name}");
        } else {
            assert_eq!(e.record(), &RecordId::Sequence(seq(suffix)), "{name}");
            assert!(message.contains(&seq(suffix)), "{name}: {message}");
            assert_eq!(received.sequence_number, Some(seq(suffix)), "{name}");
        }
        // No item contents in the message.
        for content in [
            "GOAL-3b9f",
            "GOALMEMBERSHIP",
            "REVIEWER",
            "CONTRIBUTOR",
            "2025-11-2",
            "forty-two",
            "\"y\"",
        ] {
            assert!(!message.contains(content), "{name}: {message}");
        }
    }
}

#[test]
fn view_type_message_asks_for_new_and_old_images() {
    for name in [
        "keys-only-remove.json",
        "new-image-view-modify.json",
        "old-image-view-insert.json",
    ] {
        let message = err(&broken(name)).to_string();
        assert!(message.contains("must be NEW_AND_OLD_IMAGES"), "{message}");
    }
    let message = err(&broken("number-not-string.json")).to_string();
    assert!(
        message.contains("`rank`") && message.contains("`N`") && message.contains("not a string"),
        "{message}"
    );
    let message = err(&broken("unknown-type-tag.json")).to_string();
    assert!(
        message.contains("`memberRole`") && message.contains("unknown type tag `X`"),
        "{message}"
    );
}

#[test]
fn a_bad_record_among_good_ones() {
    let received = parse_batch(fixture("broken/bad-among-good.json")).expect("batch");
    assert_eq!(received.len(), 7);
    for i in [0, 2, 6] {
        assert!(received[i].record.is_ok(), "record {i}");
    }
    assert!(matches!(err(&received[1]), RecordError::BadAttribute { attribute, .. } if attribute == "rank"));
    assert_eq!(
        received[1].sequence_number.as_deref(),
        Some("5130900000000000021939000201")
    );
    assert!(matches!(err(&received[3]), RecordError::UnknownEventName { .. }));
    assert!(err(&received[3]).to_string().contains("5130900000000000021939000202"));
    assert_eq!(
        err(&received[4]),
        &RecordError::NotAnObject {
            record: RecordId::Index(4)
        }
    );
    assert_eq!(received[4].raw_json().text(), "42");
    assert!(err(&received[4]).to_string().contains("Records[4]"));
    assert!(matches!(
        err(&received[5]),
        RecordError::MissingSequenceNumber {
            record: RecordId::EventId(_)
        }
    ));
    assert_eq!(received[5].sequence_number, None);
    // The same through parse_any.
    let any = parse_any(fixture("broken/bad-among-good.json")).expect("batch");
    assert_eq!(
        any.iter().map(|r| r.record.is_ok()).collect::<Vec<_>>(),
        [true, false, true, false, false, false, true]
    );
}

#[test]
fn record_position_names_records_without_sequence_number_or_event_id() {
    let mut record = base_record();
    record.as_object_mut().expect("object").remove("eventID");
    record["dynamodb"]
        .as_object_mut()
        .expect("object")
        .remove("SequenceNumber");
    let text = format!("{{\"Records\": [{record}, {record}]}}");
    let received = parse_batch(text.as_bytes()).expect("batch");
    assert_eq!(
        err(&received[1]),
        &RecordError::MissingSequenceNumber {
            record: RecordId::Index(1)
        }
    );
    assert!(err(&received[1]).to_string().contains("Records[1]"));
    let text = format!("{record}\n\n{record}\n");
    let lines = parse_json_lines(&text).expect("lines");
    assert_eq!(
        err(&lines[1].1),
        &RecordError::MissingSequenceNumber {
            record: RecordId::Line(3)
        }
    );
    assert!(err(&lines[1].1).to_string().contains("line 3"));
}

// ---------------------------------------------------------------------------
// Attribute values
// ---------------------------------------------------------------------------

#[test]
fn malformed_attribute_values_name_the_attribute() {
    let cases: &[(serde_json::Value, &str)] = &[
        (serde_json::json!({"N": 5}), "not a string"),
        (serde_json::json!({"N": "5 apples"}), "not a decimal number"),
        (serde_json::json!({"N": ""}), "not a decimal number"),
        (serde_json::json!({"N": "NaN"}), "not a decimal number"),
        (serde_json::json!({"X": "y"}), "unknown type tag `X`"),
        (
            serde_json::json!({"a very long and strange tag": "y"}),
            "unknown type tag (",
        ),
        (serde_json::json!({}), "no type tag"),
        (serde_json::json!({"S": "a", "N": "1"}), "more than one type tag"),
        (serde_json::json!({"S": 1}), "not a string"),
        (serde_json::json!({"S": {"S": "inner-secret"}}), "not a string"),
        (serde_json::json!({"B": "not base64!"}), "not base64"),
        (serde_json::json!({"BOOL": "true"}), "not true or false"),
        (serde_json::json!({"NULL": 1}), "not true or false"),
        (serde_json::json!({"SS": ["a", 1]}), "not an array of strings"),
        (serde_json::json!({"SS": "a"}), "not an array of strings"),
        (serde_json::json!({"NS": ["1", "x"]}), "not a decimal number"),
        (serde_json::json!({"BS": ["%%%"]}), "not base64"),
        (serde_json::json!({"M": []}), "not an object"),
        (
            serde_json::json!({"M": {"inner": {"N": 5}}}),
            "nested value that has a `N` value that is not a string",
        ),
        (
            serde_json::json!({"L": [{"S": "ok"}, {"Q": "?"}]}),
            "nested value that has an unknown type tag",
        ),
        (serde_json::json!({"L": {"S": "x"}}), "not an array"),
        (
            serde_json::json!({"M": {"a": {"L": [{"M": {"b": {"N": true}}}]}}}),
            "nested value that has a `N`",
        ),
        (serde_json::json!("plain text"), "not a DynamoDB JSON value"),
        (serde_json::json!(7), "not a DynamoDB JSON value"),
        (serde_json::json!(null), "not a DynamoDB JSON value"),
    ];
    for (value, reason) in cases {
        let received = with_dynamodb(|d| {
            d["NewImage"]["secret_field"] = value.clone();
        });
        let e = err(&received);
        assert!(
            matches!(e, RecordError::BadAttribute { part: ImagePart::NewImage, attribute, .. } if attribute == "secret_field"),
            "{value}: {e:?}"
        );
        let message = e.to_string();
        assert!(message.contains(reason), "{value}: {message}");
        assert!(message.contains("777000000000000000001"), "{message}");
        for content in ["apples", "plain text", "inner-secret", "not base64!", "%%%", "inner"] {
            assert!(!message.contains(content), "{value}: {message}");
        }
    }
}

#[test]
fn valid_attribute_values_of_every_type() {
    let received = with_dynamodb(|d| {
        d["NewImage"]["all"] = serde_json::json!({"M": {
            "s": {"S": "x\"y\\z\u{e9}"}, "n": {"N": "-1.5E+3"}, "b": {"B": ""}, "t": {"BOOL": false},
            "z": {"NULL": true}, "l": {"L": []}, "ss": {"SS": []}, "ns": {"NS": ["+1", ".5", "5."]},
            "bs": {"BS": ["AA=="]}, "m": {"M": {}}
        }});
    });
    let record = ok(&received);
    let Some(Value::M(all)) = record.new.as_ref().and_then(|i| i.get("all")) else {
        panic!("no map")
    };
    assert_eq!(all.get("s"), Some(&s("x\"y\\z\u{e9}")));
    assert_eq!(all.get("n"), Some(&n("-1.5E+3")));
    assert_eq!(all.get("b"), Some(&Value::B(vec![])));
    assert_eq!(
        all.get("ns"),
        Some(&Value::Ns(vec!["+1".into(), ".5".into(), "5.".into()]))
    );
    assert_eq!(all.get("bs"), Some(&Value::Bs(vec![vec![0]])));
    assert_eq!(all.len(), 10);
}

#[test]
fn numbers_with_38_digits_are_kept_exactly() {
    let numbers = [
        "12345678901234567890123456789012345678",
        "-12345678901234567890123456789012345678",
        "9.9999999999999999999999999999999999999E+125",
        "0.00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001",
        "1234567890123456789012345.6789012345678",
    ];
    for number in numbers {
        let received = with_dynamodb(|d| {
            d["NewImage"]["big"] = serde_json::json!({"N": number});
            d["NewImage"]["set"] = serde_json::json!({"NS": [number, "1"]});
        });
        let new = ok(&received).new.clone().expect("NewImage");
        assert_eq!(new.get("big"), Some(&n(number)));
        assert_eq!(
            new.get("set"),
            Some(&Value::Ns(vec![number.to_owned(), "1".to_owned()]))
        );
    }
}

#[test]
fn duplicate_attribute_and_bad_key_type() {
    let text = base_record()
        .to_string()
        .replace(r#""num":{"N":"18"}"#, r#""num":{"N":"18"},"num":{"N":"19"}"#);
    assert!(text.contains(r#""num":{"N":"19"}"#), "{text}");
    let raw: Box<RawValue> = serde_json::from_str(&text).expect("json");
    let e = err(&parse_record(&raw)).clone();
    assert!(
        matches!(&e, RecordError::BadAttribute { attribute, .. } if attribute == "num"),
        "{e}"
    );
    assert!(e.to_string().contains("more than once"));

    let received = with_dynamodb(|d| {
        d["Keys"]["rel"] = serde_json::json!({"BOOL": true});
    });
    let e = err(&received);
    assert!(
        matches!(e, RecordError::BadAttribute { part: ImagePart::Keys, attribute, .. } if attribute == "rel"),
        "{e}"
    );
    assert!(e.to_string().contains("must be S, N or B"));
}

#[test]
fn images_follow_the_event_kind() {
    // An INSERT's OldImage and a REMOVE's NewImage are dropped.
    let mut record = base_record();
    record["eventName"] = "INSERT".into();
    let insert = parse_value(&record);
    assert!(ok(&insert).old.is_none() && ok(&insert).new.is_some());
    record["eventName"] = "REMOVE".into();
    let remove = parse_value(&record);
    assert!(ok(&remove).new.is_none() && ok(&remove).old.is_some());

    // NEW_IMAGE has what an INSERT needs; OLD_IMAGE what a REMOVE needs.
    let mut record = base_record();
    record["eventName"] = "INSERT".into();
    record["dynamodb"]["StreamViewType"] = "NEW_IMAGE".into();
    record["dynamodb"].as_object_mut().expect("object").remove("OldImage");
    assert_eq!(ok(&parse_value(&record)).view_type, Some(ViewType::NewImage));
    let mut record = base_record();
    record["eventName"] = "REMOVE".into();
    record["dynamodb"]["StreamViewType"] = "OLD_IMAGE".into();
    record["dynamodb"].as_object_mut().expect("object").remove("NewImage");
    assert!(ok(&parse_value(&record)).old.is_some());

    // No view type and no image: missing, not a view type problem.
    let received = with_dynamodb(|d| {
        d.remove("StreamViewType");
        d.insert("OldImage".into(), serde_json::Value::Null);
    });
    assert!(matches!(
        err(&received),
        RecordError::MissingImage {
            part: ImagePart::OldImage,
            ..
        }
    ));

    // An empty image lacks the keys.
    let received = with_dynamodb(|d| {
        d.insert("NewImage".into(), serde_json::json!({}));
    });
    assert!(matches!(
        err(&received),
        RecordError::KeyMismatch {
            problem: KeyProblem::Missing,
            ..
        }
    ));

    // A key of another type is "different".
    let received = with_dynamodb(|d| {
        d["OldImage"]["id"] = serde_json::json!({"N": "5"});
    });
    assert!(matches!(
        err(&received),
        RecordError::KeyMismatch {
            problem: KeyProblem::Different,
            ..
        }
    ));
}

#[test]
fn other_record_errors() {
    let mut record = base_record();
    record.as_object_mut().expect("object").remove("eventName");
    assert!(matches!(
        err(&parse_value(&record)),
        RecordError::MissingEventName { .. }
    ));

    let received = with_dynamodb(|d| {
        d.insert("StreamViewType".into(), "EVERYTHING".into());
    });
    assert!(matches!(err(&received), RecordError::UnknownViewType { view_type, .. } if view_type == "EVERYTHING"));

    let received = with_dynamodb(|d| {
        d.insert("SequenceNumber".into(), "".into());
    });
    assert!(matches!(
        err(&received),
        RecordError::MissingSequenceNumber {
            record: RecordId::EventId(_)
        }
    ));

    // Wrong JSON types of record fields: malformed, still named.
    let mut record = base_record();
    record["eventName"] = 5.into();
    let received = parse_value(&record);
    assert!(matches!(err(&received), RecordError::Malformed { .. }));
    assert!(err(&received).to_string().contains("777000000000000000001"));
    assert_eq!(received.sequence_number.as_deref(), Some("777000000000000000001"));

    let received = with_dynamodb(|d| {
        d.insert("SizeBytes".into(), (-3).into());
    });
    assert!(matches!(err(&received), RecordError::Malformed { .. }));
    assert!(err(&received).to_string().contains("777000000000000000001"));

    let mut record = base_record();
    record["dynamodb"] = "elsewhere".into();
    let received = parse_value(&record);
    assert!(matches!(
        err(&received),
        RecordError::Malformed {
            record: RecordId::EventId(_),
            ..
        }
    ));

    // A whole batch where a record was expected.
    let batch = serde_json::json!({"Records": [base_record()]});
    let text = format!("{batch}\n");
    let lines = parse_json_lines(&text).expect("lines");
    assert!(err(&lines[0].1).to_string().contains("whole batch"));

    // JSON that only the second pass rejects (a lone surrogate in a string).
    let text = base_record()
        .to_string()
        .replace(r#"{"N":"18"}"#, r#"{"S":"a\ud800b"}"#);
    let raw: Box<RawValue> = serde_json::from_str(&text).expect("json");
    let received = parse_record(&raw);
    assert!(
        matches!(
            err(&received),
            RecordError::Malformed {
                record: RecordId::Sequence(_),
                ..
            }
        ),
        "{:?}",
        received.record
    );

    // Nesting deeper than serde_json's limit: an error, not a crash.
    let deep = format!("{}{{\"S\":\"x\"}}{}", "{\"L\":[".repeat(300), "]}".repeat(300));
    let text = base_record().to_string().replace(r#"{"N":"18"}"#, &deep);
    let raw: Box<RawValue> = serde_json::from_str(&text).expect("json");
    assert!(matches!(err(&parse_record(&raw)), RecordError::Malformed { .. }));
}

// ---------------------------------------------------------------------------
// Document errors
// ---------------------------------------------------------------------------

#[test]
fn unparsable_documents_give_line_and_column() {
    let e = parse_batch(fixture("broken/not-json.json")).expect_err("syntax error");
    assert_eq!((e.line, e.column), (45, 11), "{e}");
    assert_eq!(parse_any(fixture("broken/not-json.json")).expect_err("syntax error"), e);

    let e = parse_batch(fixture("broken/no-records.json")).expect_err("no Records");
    assert_eq!((e.line, e.column), (1, 1));
    assert!(e.message.contains("without a `Records` array"), "{e}");

    let e = parse_batch(fixture("broken/records-not-array.json")).expect_err("Records not an array");
    assert!(e.message.contains("an array of records, found an object"), "{e}");
    // Where the parser noticed: just inside the object.
    assert!((2..=3).contains(&e.line), "{e}");

    let text = String::from_utf8(fixture("broken/bad-line.jsonl").to_vec()).expect("utf-8");
    let e = parse_json_lines(&text).expect_err("line 3");
    assert_eq!(e.line, 3, "{e}");
    assert!(e.to_string().starts_with("line 3, column "), "{e}");
    assert_eq!(parse_any(text.as_bytes()).expect_err("line 3"), e);

    let e = parse_batch(b"[1, 2]").expect_err("array");
    assert!(e.message.contains("not a JSON object"), "{e}");
    let e = parse_batch(b"").expect_err("empty");
    assert_eq!(e.line, 1);
    let e = parse_batch(br#"{"Records": []} {}"#).expect_err("trailing");
    assert_eq!((e.line, e.column), (1, 17), "{e}");
    assert_eq!(parse_any(br#"{"Records": []} x"#).expect_err("trailing").line, 1);
    assert!(parse_batch(br#"{"Records": [], "Records": []}"#).is_err());
    assert!(parse_batch(br#"{"Records": null}"#)
        .expect_err("null")
        .message
        .contains("found null"));
    assert!(parse_batch(br#"{"NextShardIterator": null, "Records": []}"#)
        .expect("empty batch")
        .is_empty());

    // A pretty-printed document with an error deep inside is reported there,
    // not as JSON Lines.
    let e = parse_any(b"{\n  \"Records\": [\n    {\"eventID\": }\n  ]\n}").expect_err("syntax");
    assert_eq!(e.line, 3, "{e}");
}

#[test]
fn invalid_utf8_is_a_parse_error_with_position() {
    let mut bytes = b"{\"Records\": [\n  {\"eventID\": \"".to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe]);
    bytes.extend_from_slice(b"\"}]}");
    for e in [
        parse_batch(&bytes).expect_err("utf-8"),
        parse_any(&bytes).expect_err("utf-8"),
    ] {
        assert_eq!((e.line, e.column), (2, 16), "{e}");
    }
    // A byte-order mark is skipped.
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(fixture("lambda-layers.json"));
    assert_eq!(parse_batch(&bytes).expect("batch").len(), 3);
    assert_eq!(parse_any(&bytes).expect("batch").len(), 3);
}

// ---------------------------------------------------------------------------
// ARNs
// ---------------------------------------------------------------------------

#[test]
fn table_names_from_arns() {
    let cases = [
        (
            "arn:aws:dynamodb:eu-west-1:123456789012:table/records/stream/2025-11-21T09:00:00.000",
            Some("records"),
        ),
        (
            "arn:aws:dynamodb:eu-west-1:123456789012:table/my.table-1_x",
            Some("my.table-1_x"),
        ),
        (
            "arn:aws-cn:dynamodb:cn-north-1:123456789012:table/layers/stream/label",
            Some("layers"),
        ),
        (
            "arn:aws:dynamodb:ddblocal:000000000000:table/issues/stream/2025",
            Some("issues"),
        ),
        ("arn:aws:dynamodb:eu-west-1:123456789012:table//stream/x", None),
        ("arn:aws:dynamodb:eu-west-1:123456789012:table/bad name/stream/x", None),
        ("arn:aws:kinesis:eu-west-1:123456789012:stream/records", None),
        ("arn:aws:dynamodb:eu-west-1:123456789012:index/records", None),
        ("arn:aws:dynamodb:eu-west-1:123456789012", None),
        ("records", None),
        ("", None),
    ];
    for (arn, expected) in cases {
        assert_eq!(table_from_arn(arn), expected, "{arn}");
    }
    // A record's table is its ARN's: every ARN twice in a row, then in turn, twice.
    let record = |arn: &str| {
        let value = serde_json::json!({
            "eventName": "INSERT",
            "eventSourceARN": arn,
            "dynamodb": {"Keys": {"pk": {"S": "a"}}, "NewImage": {"pk": {"S": "a"}}, "SequenceNumber": "1"}
        });
        parse_value(&value).record.expect("a record").table
    };
    for (arn, expected) in cases.iter().flat_map(|case| [case, case]).chain(&cases).chain(&cases) {
        assert_eq!(record(arn).as_deref(), *expected, "{arn}");
    }
}

// ---------------------------------------------------------------------------
// aws_lambda_events
// ---------------------------------------------------------------------------

#[cfg(feature = "lambda-events")]
#[test]
fn from_aws_lambda_events_matches_the_raw_parser() {
    use aws_lambda_events::event::dynamodb::Event;
    for name in ["lambda-records.json", "lambda-issues.json", "lambda-layers.json"] {
        let bytes = fixture(name);
        let event: Event = serde_json::from_slice(bytes).expect("aws_lambda_events");
        let raw = parse_batch(bytes).expect("batch");
        for (record, received) in event.records.into_iter().zip(&raw) {
            let converted = ChangeRecord::try_from(record).expect("record");
            assert_eq!(&converted, ok(received), "{name}");
        }
    }
    // A fraction is dropped rather than mis-read.
    let bytes = fixture("getrecords-records.json");
    let event: Event = serde_json::from_slice(bytes).expect("aws_lambda_events");
    let converted = ChangeRecord::try_from(event.records[0].clone()).expect("record");
    assert_eq!(converted.created, time(1763733010, 0));
    // Errors are the raw parser's.
    let bytes = fixture("broken/bad-among-good.json");
    let mut value: serde_json::Value = serde_json::from_slice(bytes).expect("json");
    let bad = value["Records"][3].take();
    let record: aws_lambda_events::event::dynamodb::EventRecord = serde_json::from_value(bad).expect("record");
    let e = ChangeRecord::try_from(record).expect_err("FOO");
    assert!(matches!(e, RecordError::UnknownEventName { .. }));
    assert!(e.to_string().contains("5130900000000000021939000202"));
}

// ---------------------------------------------------------------------------
// No panics
// ---------------------------------------------------------------------------

/// Strings made of JSON-ish tokens, to get past the first bytes more often
/// than arbitrary text does.
fn json_ish() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just(",".to_owned()),
        Just(":".to_owned()),
        Just("\n".to_owned()),
        Just("\"Records\"".to_owned()),
        Just("\"dynamodb\"".to_owned()),
        Just("\"Keys\"".to_owned()),
        Just("\"NewImage\"".to_owned()),
        Just("\"OldImage\"".to_owned()),
        Just("\"eventName\"".to_owned()),
        Just("\"INSERT\"".to_owned()),
        Just("\"REMOVE\"".to_owned()),
        Just("\"SequenceNumber\"".to_owned()),
        Just("\"ApproximateCreationDateTime\"".to_owned()),
        Just("\"S\"".to_owned()),
        Just("\"N\"".to_owned()),
        Just("\"M\"".to_owned()),
        Just("\"L\"".to_owned()),
        Just("\"B\"".to_owned()),
        Just("\"NS\"".to_owned()),
        Just("null".to_owned()),
        Just("true".to_owned()),
        "-?[0-9]{0,25}(\\.[0-9]{0,12})?([eE][+-]?[0-9]{0,22})?",
        "\"[a-zA-Z0-9 #:._-]{0,12}\"",
    ];
    proptest::collection::vec(token, 0..80).prop_map(|tokens| tokens.concat())
}

/// What reading one record gives: its text, sequence number and record or error.
type Read = (String, Option<String>, Result<ChangeRecord, RecordError>);

/// What a reading of a batch gives: each record's; or why the payload is no batch.
type Reading = Result<Vec<Read>, ParseError>;

fn reading<'a>(records: impl IntoIterator<Item = Result<(RawJson<'a>, Received<'a>), ParseError>>) -> Reading {
    records
        .into_iter()
        .map(|read| read.map(|(raw, r)| (raw.text().into_owned(), r.sequence_number, r.record)))
        .collect()
}

/// The strict way: every record's text found by serde_json first, then each read.
fn strictly(bytes: &[u8]) -> Reading {
    let (text, bom) = super::document::decode(bytes)?;
    let records = super::document::strict(text, bom)?;
    reading(
        records
            .into_iter()
            .enumerate()
            .map(|(i, raw)| Ok((RawJson::Text(raw.get()), super::one::received(raw, RecordId::Index(i))))),
    )
}

/// The one pass of `read_batch` (or the strict way, where it gives up).
fn in_one_pass(bytes: &[u8]) -> Reading {
    reading(read_batch(bytes)?)
}

/// The one pass, each record lent to a closure (`for_each_lent`) instead of
/// given by the iterator.
fn lent_in_one_pass(bytes: &[u8]) -> Reading {
    let mut reads = Vec::new();
    read_batch(bytes)?.for_each_lent(|raw, r| {
        reads.push((raw.text().into_owned(), r.sequence_number.clone(), r.record.clone()));
    })?;
    Ok(reads)
}

const BATCHES: [&str; 6] = [
    "lambda-issues.json",
    "lambda-records.json",
    "lambda-layers.json",
    "getrecords-records.json",
    "getrecords-issues.json",
    "broken/bad-among-good.json",
];

#[test]
fn a_batch_is_read_in_one_pass_as_the_strict_way_reads_it() {
    for name in BATCHES {
        let bytes = fixture(name);
        let mut reader = read_batch(bytes).expect("a batch");
        let mut count = 0;
        while let Some(read) = reader.next() {
            assert!(
                read.is_ok() && !reader.is_strict(),
                "{name}: read in one pass, record {count}"
            );
            count += 1;
        }
        assert!(count > 0, "{name}");
        assert_eq!(in_one_pass(bytes), strictly(bytes), "{name}");
        assert_eq!(lent_in_one_pass(bytes), strictly(bytes), "{name}");
    }
    // Every broken fixture, batch or not, reads (or fails) the same way.
    for entry in std::fs::read_dir(fixture_path("broken")).expect("fixtures") {
        let path = entry.expect("entry").path();
        let bytes = std::fs::read(&path).expect("fixture");
        assert_eq!(in_one_pass(&bytes), strictly(&bytes), "{}", path.display());
        assert_eq!(lent_in_one_pass(&bytes), strictly(&bytes), "{}", path.display());
    }
}

#[test]
fn the_one_pass_reads_odd_elements_and_members_as_the_strict_way() {
    let good = serde_json::to_string(&base_record()).expect("json");
    let cases = [
        format!(r#"{{"Records":[{good},42,[1,2],"x",null,{{}},{{"eventID":5}},{good}]}}"#),
        format!(r#" {{ "NextShardIterator" : "abc" , "Records" : [ {good} , {good} ] , "other": {{"a":[1]}} }} "#),
        format!("{{\n\"Records\":\n[\n{good}\n]\n}}\n"),
        r#"{"Records":[]}"#.to_owned(),
        format!(r#"{{"Records":[{good}],"Records":[]}}"#),
        format!(r#"{{"Records":[{good}]}} x"#),
        format!(r#"{{"Records":[{good}}}"#),
        format!(r#"{{"Records":[{good},]}}"#),
        format!(r#"{{"Records":[{good} {good}]}}"#),
        format!(r#"{{"Records":[{good}]"#),
        r#"{"a":1}"#.to_owned(),
        format!(r#"{{"Records":{good}}}"#),
        format!(r#"[{good}]"#),
        format!("\u{feff}{{\"Records\":[{good}]}}"),
    ];
    for case in &cases {
        assert_eq!(in_one_pass(case.as_bytes()), strictly(case.as_bytes()), "{case}");
        assert_eq!(lent_in_one_pass(case.as_bytes()), strictly(case.as_bytes()), "{case}");
    }
}

/// The records read borrowed, each record's images made owned.
fn borrowed_in_one_pass(bytes: &[u8]) -> Reading {
    read_batch_borrowed(bytes)?
        .map(|read| {
            read.map(|(raw, r)| {
                let record = r
                    .record
                    .map(|record| record.map_images(|image| crate::value::Attrs::to_image(&image)));
                (raw.text().into_owned(), r.sequence_number, record)
            })
        })
        .collect()
}

/// Every string of a borrowed value that is a slice of `text`.
fn borrowed_strings(value: &crate::value::borrowed::Value<'_>, text: &str, out: &mut Vec<bool>) {
    use crate::value::borrowed::Value as B;
    let range = text.as_bytes().as_ptr_range();
    let mut slice = |s: &Cow<'_, str>| out.push(matches!(s, Cow::Borrowed(b) if range.contains(&b.as_ptr())));
    match value {
        B::S(s) | B::N(s) => slice(s),
        B::Ss(members) | B::Ns(members) => members.iter().for_each(slice),
        B::L(list) => list.iter().for_each(|v| borrowed_strings(v, text, out)),
        B::M(map) => crate::value::Attrs::iter(map).for_each(|(_, v)| borrowed_strings(v, text, out)),
        B::B(_) | B::Bs(_) | B::Bool(_) | B::Null(_) => {}
    }
}

#[test]
fn a_batch_read_borrowed_is_the_batch_read_owned() {
    for name in BATCHES {
        let bytes = fixture(name);
        assert_eq!(borrowed_in_one_pass(bytes), in_one_pass(bytes), "{name}");
    }
    for entry in std::fs::read_dir(fixture_path("broken")).expect("fixtures") {
        let path = entry.expect("entry").path();
        let bytes = std::fs::read(&path).expect("fixture");
        assert_eq!(borrowed_in_one_pass(&bytes), in_one_pass(&bytes), "{}", path.display());
    }
}

/// A record the scan reads (no escape, no B or BS value: it leaves those
/// to serde_json, whose images are owned, then moved into the borrowed form).
fn scanned(text: &str) -> bool {
    !text.contains('\\') && !text.contains(r#""B":"#) && !text.contains(r#""BS":"#)
}

#[test]
fn a_batch_read_borrowed_copies_no_string_the_scan_reads() {
    let mut strings = Vec::new();
    for name in ["lambda-issues.json", "lambda-records.json", "lambda-layers.json"] {
        let bytes = fixture(name);
        let text = std::str::from_utf8(bytes).expect("utf-8");
        for read in read_batch_borrowed(bytes).expect("a batch") {
            let (raw, received) = read.expect("a record");
            let record = received.record.expect("usable");
            if !scanned(&raw.text()) {
                continue;
            }
            let images = [Some(&record.keys), record.old.as_ref(), record.new.as_ref()];
            for image in images.into_iter().flatten() {
                for (_, value) in crate::value::Attrs::iter(image) {
                    borrowed_strings(value, text, &mut strings);
                }
            }
        }
    }
    assert!(
        strings.len() > 50,
        "the fixtures' images hold strings: {}",
        strings.len()
    );
    assert!(
        strings.iter().all(|&borrowed| borrowed),
        "every string is a slice of the payload"
    );
}

#[test]
fn a_string_with_an_escape_is_owned_and_decoded() {
    let good = serde_json::to_string(&base_record()).expect("json");
    let escaped = good.replacen(r#""NewImage":{"#, r#""NewImage":{"note":{"S":"a\"b\u00e9"},"#, 1);
    assert_ne!(escaped, good, "the base record has a NewImage");
    let batch = format!(r#"{{"Records":[{escaped}]}}"#);
    assert_eq!(borrowed_in_one_pass(batch.as_bytes()), in_one_pass(batch.as_bytes()));
    let (_, received) = read_batch_borrowed(batch.as_bytes())
        .expect("a batch")
        .next()
        .expect("one")
        .expect("read");
    let record = received.record.expect("usable");
    let note = record
        .new
        .as_ref()
        .and_then(|new| crate::value::Attrs::get(new, "note"));
    assert_eq!(
        note.map(crate::value::Attr::to_value),
        Some(Value::S("a\"b\u{e9}".to_owned()))
    );
}

/// A line of JSON Lines read the strict way: its value found first, then read.
fn line_strictly(line: &str) -> Result<Option<Read>, String> {
    if line.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
        return Ok(None);
    }
    let raw: &RawValue = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let r = super::one::received(raw, RecordId::Line(3));
    Ok(Some((raw.get().to_owned(), r.sequence_number, r.record)))
}

fn line_in_one_pass(line: &str) -> Result<Option<Read>, String> {
    let read = read_line::<Image>(line, 3, 0, Mode::Whole).map_err(|e| e.to_string())?;
    Ok(read.map(|r| (r.raw_json().text().into_owned(), r.sequence_number, r.record)))
}

#[test]
fn a_line_is_read_in_one_pass_as_the_strict_way_reads_it() {
    let good = serde_json::to_string(&base_record()).expect("json");
    let lines = [
        good.clone(),
        format!("  {good} \r"),
        format!("{good} x"),
        format!("{good}}}"),
        format!("{good},"),
        "42".to_owned(),
        "{\"eventID\": 5}".to_owned(),
        "{\"eventID\": ".to_owned(),
        " \t".to_owned(),
    ];
    for line in &lines {
        let strict = line_strictly(line);
        match line_in_one_pass(line) {
            // Errors are worded by position in the file; that they are errors is what matters here.
            Err(_) => assert!(strict.is_err(), "{line}"),
            read => assert_eq!(read, strict, "{line}"),
        }
    }
    let text = std::str::from_utf8(fixture("records.jsonl")).expect("utf-8");
    for line in text.lines() {
        assert_eq!(line_in_one_pass(line), line_strictly(line), "{line}");
    }
}

proptest! {
    #[test]
    fn the_one_pass_reads_json_ish_lines_as_the_strict_way(text in json_ish()) {
        let line = text.replace('\n', " ");
        match line_in_one_pass(&line) {
            Err(_) => prop_assert!(line_strictly(&line).is_err()),
            read => prop_assert_eq!(read, line_strictly(&line)),
        }
    }

    #[test]
    fn the_one_pass_reads_mutated_batches_as_the_strict_way(
        file in 0usize..BATCHES.len(),
        at in any::<prop::sample::Index>(),
        len in 0usize..12,
        insert in "[ -~\\n]{0,8}",
    ) {
        let mut bytes = fixture(BATCHES[file]).to_vec();
        let start = at.index(bytes.len());
        let end = (start + len).min(bytes.len());
        bytes.splice(start..end, insert.bytes());
        prop_assert_eq!(in_one_pass(&bytes), strictly(&bytes));
        prop_assert_eq!(lent_in_one_pass(&bytes), strictly(&bytes));
        prop_assert_eq!(borrowed_in_one_pass(&bytes), strictly(&bytes));
    }

    #[test]
    fn the_one_pass_reads_json_ish_text_as_the_strict_way(text in json_ish()) {
        prop_assert_eq!(in_one_pass(text.as_bytes()), strictly(text.as_bytes()));
        let batch = format!("{{\"Records\":[{text}]}}");
        prop_assert_eq!(in_one_pass(batch.as_bytes()), strictly(batch.as_bytes()));
        prop_assert_eq!(lent_in_one_pass(batch.as_bytes()), strictly(batch.as_bytes()));
        prop_assert_eq!(borrowed_in_one_pass(batch.as_bytes()), strictly(batch.as_bytes()));
    }
}

proptest! {
    #[test]
    fn no_panic_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = parse_batch(&bytes);
        let _ = parse_any(&bytes);
        if let Ok(text) = std::str::from_utf8(&bytes) {
            let _ = parse_json_lines(text);
        }
    }

    #[test]
    fn no_panic_on_arbitrary_strings(text in any::<String>()) {
        let _ = parse_batch(text.as_bytes());
        let _ = parse_any(text.as_bytes());
        let _ = parse_json_lines(&text);
        let _ = parse_creation_time(&text);
        let _ = table_from_arn(&text);
    }

    #[test]
    fn no_panic_on_json_ish_text(text in json_ish()) {
        let _ = parse_batch(text.as_bytes());
        let _ = parse_any(text.as_bytes());
        let _ = parse_json_lines(&text);
        let _ = parse_creation_time(&text);
        if let Ok(raw) = serde_json::from_str::<Box<RawValue>>(&text) {
            let _ = parse_record(&raw);
        }
    }

    #[test]
    fn no_panic_on_mutated_fixtures(
        file in 0usize..4,
        at in any::<prop::sample::Index>(),
        len in 0usize..12,
        insert in "[ -~\\n]{0,8}",
    ) {
        let name = ["lambda-issues.json", "getrecords-records.json", "layers.jsonl", "broken/bad-among-good.json"][file];
        let mut bytes = fixture(name).to_vec();
        let start = at.index(bytes.len());
        let end = (start + len).min(bytes.len());
        bytes.splice(start..end, insert.bytes());
        let _ = parse_batch(&bytes);
        let _ = parse_any(&bytes);
        if let Ok(text) = std::str::from_utf8(&bytes) {
            let _ = parse_json_lines(text);
        }
    }

    #[test]
    fn creation_time_whole_and_fraction(seconds in 0i64..=i64::MAX, nanos in 0u32..1_000_000_000) {
        let raw = format!("{seconds}.{nanos:09}");
        prop_assert_eq!(parse_creation_time(&raw), Ok(CreationTime { seconds, nanos }));
        prop_assert_eq!(parse_creation_time(&seconds.to_string()), Ok(CreationTime { seconds, nanos: 0 }));
        let digits = format!("{seconds}{nanos:09}");
        let exponent = format!("{digits}e-9");
        prop_assert_eq!(parse_creation_time(&exponent), Ok(CreationTime { seconds, nanos }));
    }
}

#[test]
fn creation_time_underflow_and_its_sign() {
    use super::time::parse_creation_time;
    assert_eq!(parse_creation_time("1e-999"), Ok(CreationTime { seconds: 0, nanos: 0 }));
    assert!(
        parse_creation_time("-1e-999").is_err_and(|e| e.to_string().contains("negative")),
        "a negative time is refused"
    );
    assert!(parse_creation_time("1e999").is_err_and(|e| e.to_string().contains("too large")));
    assert_eq!(
        parse_creation_time("1763722800.1234567891"),
        Ok(CreationTime {
            seconds: 1_763_722_800,
            nanos: 123_456_789
        })
    );
}
