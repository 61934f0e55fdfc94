//! The Kinesis fixtures (`tests/fixtures/kinesis-event.json`, and
//! `kinesis-changes.jsonl`, the same changes as DynamoDB writes them) are
//! the Lambda fixtures of the three tables sent through Kinesis: unwrapped,
//! each record must read as its DynamoDB-stream twin, but for its sequence
//! number and its creation time.

use std::path::Path;

use super::*;
use crate::config::{self, KinesisSource};
use crate::record::{parse_batch, ChangeRecord, CreationTime};

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The example config with every table read from Kinesis in `precision`.
fn kinesis_config(precision: Precision) -> Config {
    let mut config = config::parse(config::EXAMPLE_CONFIG, "example").unwrap_or_else(|e| panic!("{e}"));
    for table in &mut config.tables {
        table.stream = ChangeSource::Kinesis(KinesisSource {
            precision,
            retention_hours: 24,
        });
    }
    config
}

fn records(batch: &str) -> Vec<ChangeRecord> {
    parse_batch(batch.as_bytes())
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(|r| r.record.unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// The twins: the three Lambda fixtures' records, in the Kinesis fixture's order.
fn twins() -> Vec<ChangeRecord> {
    ["records", "issues", "layers"]
        .iter()
        .flat_map(|t| {
            let text = String::from_utf8(fixture(&format!("lambda-{t}.json"))).unwrap_or_default();
            records(&text)
        })
        .collect()
}

fn same_change(got: &ChangeRecord, twin: &ChangeRecord) {
    assert_eq!(got.kind, twin.kind);
    assert_eq!(got.keys, twin.keys);
    assert_eq!(got.old, twin.old);
    assert_eq!(got.new, twin.new);
    assert_eq!(got.event_id, twin.event_id);
    assert_eq!(got.ttl_expiry, twin.ttl_expiry, "{:?}", got.keys);
    assert_eq!(got.table, twin.table);
    assert_eq!(got.size_bytes, twin.size_bytes);
}

#[test]
fn a_lambda_kinesis_event_reads_as_its_dynamodb_twin() {
    let payload = fixture("kinesis-event.json");
    assert!(is_kinesis_event(&payload));
    assert!(!is_kinesis_event(&fixture("lambda-records.json")));
    assert!(!is_kinesis_event(&fixture("getrecords-issues.json")));
    assert!(!is_kinesis_event(b"not json"));
    let unwrapped = unwrap_event(&payload, &kinesis_config(Precision::Microsecond)).unwrap_or_else(|e| panic!("{e}"));
    assert!(unwrapped.unusable.is_empty(), "{:?}", unwrapped.unusable);
    let got = records(&unwrapped.batch);
    let twins = twins();
    let sent: serde_json::Value = serde_json::from_slice(&payload).unwrap_or_default();
    let sequence_numbers: Vec<&str> = sent["Records"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|r| r["kinesis"]["sequenceNumber"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(got.len(), twins.len());
    assert!(got.iter().any(|r| r.ttl_expiry), "the fixture holds a TTL deletion");
    for (i, (got, twin)) in got.iter().zip(&twins).enumerate() {
        same_change(got, twin);
        assert_eq!(
            Some(got.sequence_number.as_str()),
            sequence_numbers.get(i).copied(),
            "the Kinesis sequence number"
        );
        let twin_seconds = twin.created.map(|c| c.seconds).unwrap_or_default();
        let micros = 1000 + i as u32 * 137;
        assert_eq!(
            got.created,
            Some(CreationTime {
                seconds: twin_seconds,
                nanos: micros * 1000
            }),
            "the creation time, to the microsecond"
        );
    }
}

#[test]
fn json_lines_of_changes_read_as_the_event_does() {
    let text = String::from_utf8(fixture("kinesis-changes.jsonl")).unwrap_or_default();
    assert!(text.lines().all(is_kinesis_change));
    let lambda = String::from_utf8(fixture("lambda-records.json")).unwrap_or_default();
    assert!(!is_kinesis_change(&lambda));
    let config = kinesis_config(Precision::Microsecond);
    let lines = unwrap_lines(&text, &config);
    assert!(lines.unusable.is_empty(), "{:?}", lines.unusable);
    let payload = fixture("kinesis-event.json");
    let event = unwrap_event(&payload, &config).unwrap_or_else(|e| panic!("{e}"));
    let (from_lines, from_event) = (records(&lines.batch), records(&event.batch));
    assert_eq!(from_lines.len(), from_event.len());
    for (i, (a, b)) in from_lines.iter().zip(&from_event).enumerate() {
        same_change(a, b);
        assert_eq!(a.created, b.created);
        assert_eq!(
            a.sequence_number,
            (i + 1).to_string(),
            "a line's number is its sequence number"
        );
    }
}

#[test]
fn milliseconds_are_read_in_milliseconds_and_a_wrong_precision_is_named() {
    let text = String::from_utf8(fixture("kinesis-changes.jsonl")).unwrap_or_default();
    let line = text.lines().next().unwrap_or_default();
    let micros = line.to_owned();
    let millis = {
        let at = micros.find("ApproximateCreationDateTime\":").unwrap_or(0) + "ApproximateCreationDateTime\":".len();
        let end = at + micros[at..].find(',').unwrap_or(0);
        format!("{}{}{}", &micros[..at], &micros[at..end - 3], &micros[end..])
    };
    let read = |line: &str, precision| {
        let out = unwrap_lines(line, &kinesis_config(precision));
        (
            out.batch.clone(),
            out.unusable
                .iter()
                .map(|(_, r)| r.record.clone().err().map(|e| e.to_string()))
                .collect::<Vec<_>>(),
        )
    };
    let (batch, unusable) = read(&millis, Precision::Millisecond);
    assert!(unusable.is_empty(), "{unusable:?}");
    let created = records(&batch)[0].created;
    assert_eq!(created.map(|c| c.nanos % 1_000_000), Some(0), "whole milliseconds");
    // Microseconds read as milliseconds, and the other way round, are named.
    for (line, precision, says) in [
        (&micros, Precision::Millisecond, "precision = \"microsecond\""),
        (&millis, Precision::Microsecond, "precision = \"millisecond\""),
    ] {
        let (_, unusable) = read(line, precision);
        let message = unusable.first().cloned().flatten().unwrap_or_default();
        assert!(message.contains(says) && message.contains("record 1"), "{message}");
    }
}

#[test]
fn bad_data_is_unusable_with_its_reason_and_the_rest_goes_on() {
    let config = kinesis_config(Precision::Microsecond);
    let good = String::from_utf8(fixture("kinesis-changes.jsonl")).unwrap_or_default();
    let good = good.lines().next().unwrap_or_default();
    let encode = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let record = |seq: &str, data: &str| {
        format!(
            r#"{{"kinesis":{{"sequenceNumber":"{seq}","data":"{data}"}},"eventSource":"aws:kinesis","eventSourceARN":"arn:aws:kinesis:eu-central-1:123456789012:stream/s"}}"#
        )
    };
    let undeclared = good.replace("\"tableName\":\"records\"", "\"tableName\":\"elsewhere\"");
    let cases = [
        (record("11", "%%%"), "not base64"),
        (record("12", &encode("{\"tableName\":")), "not a DynamoDB change"),
        (
            record("13", &encode(&good.replace("\"tableName\":\"records\",", ""))),
            "no `tableName`",
        ),
        (
            record(
                "14",
                &encode(&good.replace("\"tableName\":\"records\"", "\"tableName\":\"a/b\"")),
            ),
            "not a DynamoDB table name",
        ),
        (r#"{"kinesis":{"sequenceNumber":"15"}}"#.to_owned(), "no `kinesis.data`"),
        (r#"{"kinesis":"no"}"#.to_owned(), "not a Kinesis record"),
    ];
    let mut payload = format!("{{\"Records\":[{}", record("10", &encode(good)));
    for (text, _) in &cases {
        payload.push(',');
        payload.push_str(text);
    }
    payload.push(',');
    payload.push_str(&record("16", &encode(&undeclared)));
    payload.push_str("]}");
    assert!(is_kinesis_event(payload.as_bytes()));
    let out = unwrap_event(payload.as_bytes(), &config).unwrap_or_else(|e| panic!("{e}"));
    let usable = records(&out.batch);
    assert_eq!(usable.len(), 2, "the good one and the undeclared table's go on");
    assert_eq!(usable[1].table.as_deref(), Some("elsewhere"));
    assert_eq!(out.unusable.len(), cases.len());
    for ((position, received), (i, (text, says))) in out.unusable.iter().zip(cases.iter().enumerate()) {
        assert_eq!(*position, i + 1);
        let message = received.record.clone().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains(says), "{message}");
        assert!(
            matches!(received.raw, Raw::Json(raw) if raw == text),
            "kept whole for the quarantine"
        );
        if i < 4 {
            assert_eq!(received.sequence_number.as_deref(), Some((11 + i).to_string().as_str()));
            assert!(message.starts_with(&format!("record {}", 11 + i)), "{message}");
        }
    }
    // A table the config reads from its DynamoDB stream is named.
    let mut dynamodb = config.clone();
    dynamodb
        .tables
        .iter_mut()
        .for_each(|t| t.stream = ChangeSource::DynamoDb);
    let out = unwrap_event(payload.as_bytes(), &dynamodb).unwrap_or_else(|e| panic!("{e}"));
    let message = out.unusable[0]
        .1
        .record
        .clone()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        message.contains("set stream = \"kinesis\" in [table.records]"),
        "{message}"
    );
    // Not JSON at all is the payload's error.
    assert!(unwrap_event(b"{\"Records\": [", &config).is_err());
}

/// The ledger entry worked out ahead (on replay's reading thread) with a
/// record's classification is the one the router would make, for every
/// change it notes, and only the config it was made with takes it.
#[test]
fn a_ledger_entry_worked_out_ahead_is_the_one_made_now() {
    let config = kinesis_config(Precision::Microsecond);
    let other = kinesis_config(Precision::Microsecond);
    let bytes = fixture("kinesis-event.json");
    let unwrapped = unwrap_event(&bytes, &config).unwrap_or_else(|e| panic!("{e}"));
    let received = parse_batch(unwrapped.batch.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let mut entries = 0;
    for r in &received {
        let Ok(record) = &r.record else { continue };
        let Ok(table) = config.table_of_record(record) else {
            continue;
        };
        let now = crate::ledger::entry_of(table, record);
        crate::event::classify_ahead(&config, r);
        let ahead = crate::event::classify_received(&config, table, r, record);
        if ahead.noted {
            entries += 1;
            assert!(now.is_some());
            assert_eq!(ahead.entry.map(|e| *e), now);
        } else {
            assert_eq!(ahead.entry, None);
        }
        // Taken: asked again, or by another config, it is not worked out
        // ahead (the router makes the entry then).
        assert_eq!(crate::event::classify_received(&config, table, r, record).entry, None);
        crate::event::classify_ahead(&other, r);
        assert_eq!(crate::event::classify_received(&config, table, r, record).entry, None);
    }
    assert!(entries > 0, "the fixture has changes the router notes");
}

/// Texts near a change as DynamoDB writes it to Kinesis: most of them
/// changes it writes, their members in any order; now and then a member
/// missing, repeated, `null` or of another type, an unknown member, an
/// escape, whitespace, or something after the object.
fn change_line() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    // Mostly the first value (or one of the good ones), now and then another.
    let value = |good: &[&str], bad: &[&str]| {
        let owned = |values: &[&str]| values.iter().map(|v| (*v).to_owned()).collect::<Vec<_>>();
        prop_oneof![
            60 => prop::sample::select(owned(good)),
            1 => prop::sample::select(owned(bad)),
        ]
        .boxed()
    };
    let image = || {
        let plain = prop::sample::select(vec![
            r#"{"S":"x"}"#,
            r#"{"N":"-1.5e3"}"#,
            r#"{"BOOL":true}"#,
            r#"{"NULL":true}"#,
            r#"{"SS":["a","b"]}"#,
            r#"{"L":[{"S":"y"},{"N":"2"}]}"#,
            r#"{"M":{"q":{"N":"7"}}}"#,
        ])
        .prop_map(str::to_owned);
        let attribute = prop_oneof![
            6 => plain,
            1 => crate::testing::attribute_value().prop_map(|v| serde_json::json!(v).to_string()),
        ];
        proptest::collection::btree_map("[a-c]{1,2}", attribute, 0..4)
            .prop_map(|map| {
                let mut members = vec![r#""pk":{"S":"p1"}"#.to_owned()];
                members.extend(map.iter().map(|(name, value)| format!("\"{name}\":{value}")));
                format!("{{{}}}", members.join(","))
            })
            .boxed()
    };
    // Each member present most of the time, now and then one twice.
    let members = |each: Vec<(&'static str, BoxedStrategy<String>)>| {
        let again = prop::sample::select(each.clone()).prop_flat_map(|(name, value)| (Just(name), value));
        let each: Vec<_> = each
            .into_iter()
            .map(|(name, value)| prop::option::weighted(0.98, (Just(name), value)))
            .collect();
        (each, prop::option::weighted(0.03, again))
            .prop_map(|(each, again)| each.into_iter().flatten().chain(again).collect::<Vec<_>>())
            .prop_shuffle()
    };
    let object = |members: &[(&str, String)], gap: &str| {
        let members: Vec<String> = members.iter().map(|(n, v)| format!("{gap}\"{n}\":{gap}{v}")).collect();
        format!("{{{}{gap}}}", members.join(","))
    };
    let dynamodb = members(vec![
        (
            "ApproximateCreationDateTime",
            value(
                &["1763719200123456", "1763719200123", "1763719200000000"],
                &["0", "\"1763719200000000\"", "1763719200.5", "null", "-1"],
            ),
        ),
        (
            "Keys",
            value(
                &[r#"{"pk":{"S":"p1"}}"#],
                &[r#"{"pk":{"S":"p2"}}"#, r#"{"pk":{"N":"x"}}"#, "null", "{}"],
            ),
        ),
        ("NewImage", image()),
        ("OldImage", image()),
        ("SizeBytes", value(&["42"], &["4.2", "null", "-1"])),
        ("Other", value(&["1", "{\"a\":[]}"], &["null"])),
        (
            "StreamViewType",
            value(&["\"NEW_AND_OLD_IMAGES\""], &["\"KEYS_ONLY\"", "\"x\""]),
        ),
        ("SequenceNumber", value(&["\"7\""], &["null"])),
    ]);
    let gap = || prop::sample::select(vec!["", "", "", " ", "\n"]);
    let dynamodb = (dynamodb, gap())
        .prop_map(move |(members, gap)| {
            // Mostly without a sequence number, as DynamoDB writes it.
            let members: Vec<_> = members
                .into_iter()
                .filter(|(name, _)| *name != "SequenceNumber" || gap == "\n")
                .collect();
            object(&members, gap)
        })
        .boxed();
    let top = members(vec![
        ("eventID", value(&["\"e1\""], &["\"\"", "null", "5"])),
        (
            "eventName",
            value(&["\"INSERT\"", "\"MODIFY\"", "\"REMOVE\""], &["\"x\"", "null", "1"]),
        ),
        (
            "awsRegion",
            value(&["\"eu-west-1\""], &["\"a\\\"b\"", "null", "1", "\"\""]),
        ),
        (
            "userIdentity",
            value(
                &["null", r#"{"type":"Service","principalId":"dynamodb.amazonaws.com"}"#],
                &[
                    r#"{"Type":"Service","PrincipalId":"dynamodb.amazonaws.com"}"#,
                    r#"{"type":1}"#,
                ],
            ),
        ),
        (
            "tableName",
            value(
                &["\"records\"", "\"issues\"", "\"layers\""],
                &["\"elsewhere\"", "\"a/b\"", "null", "\"r\\u0065cords\""],
            ),
        ),
        ("recordFormat", value(&["\"application/json\""], &["[1]"])),
        ("eventSource", value(&["\"aws:dynamodb\""], &["{}"])),
        ("dynamodb", dynamodb),
    ]);
    (
        top,
        gap(),
        prop_oneof![20 => Just(""), 1 => prop::sample::select(vec![" ", " x", "}"])],
    )
        .prop_map(move |(members, gap, after)| format!("{}{after}", object(&members, gap)))
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]

    /// A line of changes read straight reads as the line rewritten into
    /// the DynamoDB stream's shape and read: the same record or the same
    /// reason, the same sequence number, the same text for the quarantine.
    #[test]
    fn a_change_read_straight_reads_as_the_change_rewritten(
        line in change_line(),
        number in 1usize..100_000,
        millis in proptest::prelude::any::<bool>(),
    ) {
        let config = kinesis_config(if millis { Precision::Millisecond } else { Precision::Microsecond });
        let straight = read_change_line(&line, number, &config);
        let rewritten = rewritten(&line, number, &config);
        proptest::prop_assert_eq!(&straight.sequence_number, &rewritten.sequence_number);
        match (&straight.record, &rewritten.record) {
            (Ok(a), Ok(b)) => proptest::prop_assert_eq!(a, b),
            (Err(a), Err(b)) => proptest::prop_assert_eq!(a.to_string(), b.to_string()),
            (a, b) => proptest::prop_assert!(false, "{line}: {a:?} against {b:?}"),
        }
        proptest::prop_assert_eq!(straight.raw_json().text(), rewritten.raw_json().text());
    }
}

/// Changes as DynamoDB writes them, of the fixtures' records, are read
/// straight (not rewritten first), to their twins; a quarantined one is
/// kept in the Lambda shape, its creation time exact.
#[test]
fn changes_as_dynamodb_writes_them_are_read_straight() {
    let text = String::from_utf8(fixture("kinesis-changes.jsonl")).unwrap_or_default();
    let config = kinesis_config(Precision::Microsecond);
    let payload = fixture("kinesis-event.json");
    let event = unwrap_event(&payload, &config).unwrap_or_else(|e| panic!("{e}"));
    let twins = records(&event.batch);
    assert_eq!(text.lines().count(), twins.len());
    let mut straight = 0;
    for (i, (line, twin)) in text.lines().zip(&twins).enumerate() {
        // The scan gives up on binary values (and escapes), as it does in a
        // DynamoDB stream record; the others are read straight.
        let binary = line.contains("\"B\"") || line.contains("\"BS\"") || line.contains('\\');
        straight += usize::from(scanned(line, i + 1, &config).is_some());
        assert!(binary || scanned(line, i + 1, &config).is_some(), "not scanned: {line}");
        let scanned = read_change_line(line, i + 1, &config);
        let record = scanned.record.clone().unwrap_or_else(|e| panic!("{e}"));
        let record = record.map_images(|image| crate::value::Attrs::to_image(&image));
        same_change(&record, twin);
        assert_eq!(record.created, twin.created);
        assert!(matches!(scanned.raw, Raw::Kinesis(raw) if raw == line));
        // The quarantine's text reads back to the same record.
        let kept = scanned.raw_json().text().into_owned();
        let batch = format!("{{\"Records\":[{kept}]}}");
        let again = parse_batch(batch.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        let again = again[0].record.clone().unwrap_or_else(|e| panic!("{e}"));
        // Rendered with the view type a Kinesis change has: both images.
        let record = ChangeRecord {
            view_type: record.view_type.or(Some(crate::record::ViewType::NewAndOldImages)),
            ..record
        };
        assert_eq!(again, record, "{kept}");
    }
    assert!(
        straight > twins.len() / 2,
        "{straight} of {} read straight",
        twins.len()
    );
}

proptest::proptest! {
    /// A change's source is refused exactly when the ARN made of it would
    /// not read back to its table.
    #[test]
    fn a_source_is_refused_when_its_arn_would_not_name_its_table(
        table in "[a-c:/._-]{0,4}",
        region in "[a:/]{0,3}",
        account in "[1:/]{0,3}",
    ) {
        let config = kinesis_config(Precision::Microsecond);
        let arn = format!("arn:aws:dynamodb:{region}:{account}:table/{table}");
        let read = source_of(&table, &region, &account, &config);
        proptest::prop_assert_eq!(read.is_ok(), super::super::table_from_arn(&arn) == Some(table.as_str()));
        if let Ok((made, _)) = read {
            proptest::prop_assert_eq!(made, arn);
        }
    }
}
