//! A glance against the whole reading: a record glanced at reads as the
//! whole reading reads it but without its images, and `validate::check`
//! says the same of both; a record the glance is unsure of is read whole.

use proptest::prelude::*;

use crate::config::{self, Config, EXAMPLE_CONFIG};
use crate::delivery::lambda_record;
use crate::event;
use crate::record::{
    read_batch as read, BatchReader, ChangeRecord, CreationTime, EventKind, Mode, ParseError, RawJson, Received,
};
use crate::value::{borrowed, Image};

fn glance_batch(bytes: &[u8]) -> Result<BatchReader<'_>, ParseError> {
    read(bytes, Mode::Glance)
}

fn glance_batch_borrowed(bytes: &[u8]) -> Result<BatchReader<'_, borrowed::Image<'_>>, ParseError> {
    read(bytes, Mode::Glance)
}

fn read_batch(bytes: &[u8]) -> Result<BatchReader<'_, Image>, ParseError> {
    read(bytes, Mode::Whole)
}
use crate::testing::attribute_value;
use crate::validate;
use crate::value::Value;

/// The generated records' table.
fn tee() -> Config {
    config::parse("[table.tee]\npartition_key = \"pk\"\nsort_key = \"sk\"\n", "tee.toml").expect("a config")
}

/// What a batch reads to, record by record.
fn read_all<'a>(
    reader: impl Iterator<Item = Result<(RawJson<'a>, Received<'a>), ParseError>>,
) -> Vec<Result<Received<'a>, ParseError>> {
    reader.map(|read| read.map(|(_, received)| received)).collect()
}

/// `record` without its images.
fn without_images(record: &ChangeRecord) -> ChangeRecord {
    ChangeRecord {
        new: None,
        old: None,
        ..record.clone()
    }
}

/// The router's reading, keys borrowed: each record as the glance reads
/// it owned (made owned again), glanced at or read whole alike.
fn compare_borrowed(bytes: &[u8]) -> Result<(), TestCaseError> {
    let owned = glance_batch(bytes).and_then(|reader| {
        reader
            .map(|read| {
                read.map(|(raw, received)| (raw.text().into_owned(), received.has_whole_images(), received.record))
            })
            .collect::<Result<Vec<_>, ParseError>>()
    });
    let borrowed = glance_batch_borrowed(bytes).map(|reader| {
        reader.map(|read| {
            read.map(|(raw, received)| {
                let whole = received.has_whole_images();
                let record = received
                    .record
                    .map(|r| r.map_images(|i| crate::value::Attrs::to_image(&i)));
                (raw.text().into_owned(), whole, record)
            })
        })
    });
    let borrowed: Result<Vec<_>, ParseError> = borrowed.and_then(|reader| reader.collect());
    prop_assert_eq!(borrowed, owned);
    Ok(())
}

/// Checks a batch read both ways (see the module doc), records checked
/// against their table in `config`; answers how many records were glanced
/// at (not read whole).
fn compare(bytes: &[u8], config: &Config) -> Result<usize, TestCaseError> {
    compare_borrowed(bytes)?;
    let (glanced, whole) = match (glance_batch(bytes), read_batch(bytes)) {
        (Ok(glanced), Ok(whole)) => (read_all(glanced), read_all(whole)),
        (glanced, whole) => {
            prop_assert_eq!(glanced.err(), whole.err());
            return Ok(0);
        }
    };
    prop_assert_eq!(glanced.len(), whole.len());
    let mut sure = 0;
    for (g, w) in glanced.iter().zip(&whole) {
        let (g, w) = match (g, w) {
            (Ok(g), Ok(w)) => (g, w),
            (g, w) => {
                prop_assert_eq!(g.as_ref().err(), w.as_ref().err());
                continue;
            }
        };
        prop_assert_eq!(g.raw_json().text(), w.raw_json().text());
        prop_assert_eq!(&g.sequence_number, &w.sequence_number);
        prop_assert_eq!(&g.whole().record, &w.record);
        if g.has_whole_images() {
            prop_assert_eq!(&g.record, &w.record);
            continue;
        }
        sure += 1;
        let full = match &w.record {
            Ok(full) => full,
            Err(error) => {
                prop_assert_eq!(g.record.as_ref().err(), Some(error));
                continue;
            }
        };
        let glanced = without_images(full);
        prop_assert_eq!(g.record.as_ref().ok(), Some(&glanced));
        if let Ok(table) = event::table_of(config, full) {
            prop_assert_eq!(validate::check(&glanced, table), validate::check(full, table));
        }
    }
    Ok(sure)
}

/// An attribute value as DynamoDB JSON, or one of the ways it can be
/// malformed or poison that the generated values do not reach.
fn attr_json() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => attribute_value().prop_map(|v| serde_json::json!(v).to_string()),
        2 => prop::sample::select(vec![
            r#"{"N":"abc"}"#,
            r#"{"N":"1e999"}"#,
            r#"{"N":" 1"}"#,
            r#"{"S":5}"#,
            r#"{"S":null}"#,
            r#"{}"#,
            r#"{"S":"x","N":"1"}"#,
            r#"{"FOO":1}"#,
            r#"{"B":"!!"}"#,
            r#"{"NS":["1","1.0"]}"#,
            r#"{"SS":[]}"#,
            r#"{"SS":["a","a"]}"#,
            r#"{"SS":["a",1]}"#,
            r#"{"SS":["a\u0062","ab"]}"#,
            r#"{"NULL":false}"#,
            r#"{"NULL":"yes"}"#,
            r#"{"BOOL":1}"#,
            r#"{"M":{"a":{"S":"x"},"a":{"S":"y"}}}"#,
            r#"{"M":{"a":{"NULL":false}}}"#,
            r#"{"M":[]}"#,
            r#"{"L":[{"S":"x"},{"N":"x"}]}"#,
            r#"{"L":{}}"#,
            r#""S""#,
            r#"[1,2]"#,
        ])
        .prop_map(str::to_owned),
    ]
}

/// A key value: mostly one of a few, sometimes escaped or a number.
fn key_json() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        r#"{"S":"a"}"#,
        r#"{"S":"b"}"#,
        r#"{"S":"\u0061"}"#,
        r#"{"N":"1"}"#,
        r#"{"N":"1.0"}"#,
        r#"{"B":"YQ=="}"#,
    ])
    .prop_map(str::to_owned)
}

/// Another value of the same type as the key value `key` (a
/// [`key_json`]): a digit more before its closing quote, or another
/// binary.
fn sibling(key: &str) -> String {
    match key.strip_suffix("\"}") {
        Some(_) if key.starts_with(r#"{"B""#) => r#"{"B":"Yg=="}"#.to_owned(),
        Some(open) => format!("{open}1\"}}"),
        None => key.to_owned(),
    }
}

/// An image's text: its key attributes (mostly as `Keys` has them), and
/// other attributes, names sometimes repeated. A `clean` image draws few
/// other attributes, and only generated values, so that most of its
/// records are glanced at.
fn image_json(pk: String, sk: String, clean: bool) -> impl Strategy<Value = Option<String>> {
    let names = prop::sample::select(vec!["a", "b", "pk", "sk", "name with \\\" quote", "é"]);
    let value = move || {
        if clean {
            attribute_value().prop_map(|v| serde_json::json!(v).to_string()).boxed()
        } else {
            attr_json().boxed()
        }
    };
    let key = move || prop::option::weighted(0.9, prop_oneof![3 => key_json(), 1 => value()]);
    (
        key(),
        key(),
        0u8..3,
        proptest::collection::vec((names, value()), 0..if clean { 2 } else { 5 }),
        0u8..20,
    )
        .prop_map(move |(other_pk, other_sk, keys, attrs, shape)| {
            let mut parts = Vec::new();
            let (pk, sk) = match keys {
                0 => (Some(pk.clone()), Some(sk.clone())),
                // One key's value changed, its type kept.
                1 if shape % 2 == 0 => (Some(sibling(&pk)), Some(sk.clone())),
                1 => (Some(pk.clone()), Some(sibling(&sk))),
                _ => (other_pk, other_sk),
            };
            if let Some(pk) = pk {
                parts.push(format!(r#""pk":{pk}"#));
            }
            if let Some(sk) = sk {
                parts.push(format!(r#""sk":{sk}"#));
            }
            parts.extend(attrs.into_iter().map(|(name, value)| format!(r#""{name}":{value}"#)));
            match shape {
                0 => None,
                1 => Some("null".to_owned()),
                2 => Some("[]".to_owned()),
                _ => Some(format!("{{{}}}", parts.join(","))),
            }
        })
}

/// A record's text in the Lambda shape, its images as drawn.
fn record_json() -> impl Strategy<Value = String> {
    (key_json(), key_json(), 0u8..4, any::<bool>(), 1u64..1000, any::<bool>())
        .prop_flat_map(|(pk, sk, kind, ttl, seq, clean)| {
            (
                Just((pk.clone(), sk.clone(), kind, ttl, seq)),
                image_json(pk.clone(), sk.clone(), clean),
                image_json(pk, sk, clean),
            )
        })
        .prop_map(|((pk, sk, kind, ttl, seq), new, old)| {
            let kind = ["INSERT", "MODIFY", "REMOVE", "UPSERT"][usize::from(kind)];
            let mut dynamodb = vec![format!(r#""Keys":{{"pk":{pk},"sk":{sk}}}"#)];
            if let Some(new) = new {
                dynamodb.push(format!(r#""NewImage":{new}"#));
            }
            if let Some(old) = old {
                dynamodb.push(format!(r#""OldImage":{old}"#));
            }
            // Now and then no usable sequence number: the record is then
            // named by its position.
            match seq % 50 {
                0 => {}
                1 => dynamodb.push(r#""SequenceNumber":"x1""#.to_owned()),
                _ => dynamodb.push(format!(r#""SequenceNumber":"{seq}""#)),
            }
            dynamodb.push(r#""StreamViewType":"NEW_AND_OLD_IMAGES","ApproximateCreationDateTime":1763719200"#.to_owned());
            let identity = if ttl { r#""userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"},"# } else { "" };
            format!(
                r#"{{"eventName":"{kind}",{identity}"eventSourceARN":"arn:aws:dynamodb:local:000000000000:table/tee/stream/x","dynamodb":{{{}}}}}"#,
                dynamodb.join(",")
            )
        })
}

/// A record made from generated values, rendered as the pipeline renders one.
fn typed_record_json() -> impl Strategy<Value = String> {
    let image = || proptest::collection::vec(("[a-c]", attribute_value()), 0..5);
    (0u8..3, image(), image(), any::<bool>()).prop_map(|(kind, new, old, ttl)| {
        let keys: Image = [
            ("pk".to_owned(), Value::S("a".into())),
            ("sk".to_owned(), Value::S("a".into())),
        ]
        .into();
        let with_keys = |attrs: Vec<(String, Value)>| {
            let mut image: Image = attrs.into_iter().collect();
            image.extend(keys.clone());
            image
        };
        let kind = [EventKind::Insert, EventKind::Modify, EventKind::Remove][usize::from(kind)];
        let record = ChangeRecord {
            event_id: None,
            kind,
            table: Some("tee".into()),
            source_arn: None,
            keys: keys.clone(),
            new: (kind != EventKind::Remove).then(|| with_keys(new)),
            old: (kind != EventKind::Insert).then(|| with_keys(old)),
            sequence_number: "7".to_owned(),
            created: Some(CreationTime {
                seconds: 1_763_719_200,
                nanos: 0,
            }),
            size_bytes: None,
            view_type: None,
            ttl_expiry: ttl && kind == EventKind::Remove,
        };
        lambda_record(&record).to_string()
    })
}

fn batch(records: &[String]) -> Vec<u8> {
    format!(r#"{{"Records":[{}]}}"#, records.join(",")).into_bytes()
}

#[test]
fn the_fixtures_are_glanced_at_as_they_read_whole() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let bytes = std::fs::read(dir.join("lambda-records.json")).expect("fixture");
    let config = config::parse(EXAMPLE_CONFIG, "streamdex.example.toml").expect("the example config");
    let sure = compare(&bytes, &config).expect("the same records");
    assert!(sure > 0, "no fixture record was glanced at");
}

#[test]
fn a_value_the_glance_is_unsure_of_reads_whole() {
    for value in [
        r#"{"N":"1e999"}"#,
        r#"{"NULL":false}"#,
        r#"{"SS":["a","a"]}"#,
        r#"{"B":"YQ=="}"#,
    ] {
        let record = format!(
            r#"{{"eventName":"INSERT","eventSourceARN":"arn:aws:dynamodb:local:000000000000:table/tee/stream/x","dynamodb":{{"Keys":{{"pk":{{"S":"a"}},"sk":{{"S":"a"}}}},"NewImage":{{"pk":{{"S":"a"}},"sk":{{"S":"a"}},"v":{value}}},"SequenceNumber":"1"}}}}"#
        );
        let bytes = batch(&[record]);
        let read: Vec<_> = glance_batch(&bytes).expect("a batch").collect();
        let [Ok((_, received))] = read.as_slice() else {
            panic!("one record: {read:?}")
        };
        assert!(received.has_whole_images(), "{value} was glanced at");
        assert_eq!(compare(&bytes, &tee()).expect("the same records"), 0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_glance_is_sure_only_of_what_reads_whole_and_is_not_poison(
        records in proptest::collection::vec(prop_oneof![record_json(), typed_record_json()], 1..6)
    ) {
        compare(&batch(&records), &tee())?;
    }
}

#[test]
fn a_key_attribute_of_another_type_in_an_image_is_a_different_key_as_read_whole() {
    for value in [r#"{"BOOL":true}"#, r#"{"L":[]}"#, r#"{"SS":["a"]}"#, r#"{"NULL":true}"#] {
        let record = format!(
            r#"{{"eventName":"INSERT","eventSourceARN":"arn:aws:dynamodb:local:000000000000:table/tee/stream/x","dynamodb":{{"Keys":{{"pk":{{"S":"a"}},"sk":{{"S":"a"}}}},"NewImage":{{"pk":{value},"sk":{{"S":"a"}}}},"SequenceNumber":"1"}}}}"#
        );
        compare(&batch(&[record]), &tee()).expect("the same records");
    }
}

#[test]
fn an_image_whose_key_has_another_value_of_the_same_type_reads_whole() {
    for (image_pk, image_sk) in [(r#"{"S":"b"}"#, r#"{"N":"1"}"#), (r#"{"S":"a"}"#, r#"{"N":"1.0"}"#)] {
        let record = format!(
            r#"{{"eventName":"INSERT","eventSourceARN":"arn:aws:dynamodb:local:000000000000:table/tee/stream/x","dynamodb":{{"Keys":{{"pk":{{"S":"a"}},"sk":{{"N":"1"}}}},"NewImage":{{"pk":{image_pk},"sk":{image_sk}}},"SequenceNumber":"1"}}}}"#
        );
        let bytes = batch(&[record]);
        let read = read_all(glance_batch(&bytes).expect("a batch"));
        let received = read[0].as_ref().expect("a record");
        assert!(received.has_whole_images(), "{image_pk} {image_sk} was glanced at");
        assert!(received.record.is_err(), "{image_pk} {image_sk}: the keys differ");
        compare(&bytes, &tee()).expect("the same records");
    }
}
