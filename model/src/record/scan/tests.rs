//! The scan against serde_json: whatever the scan reads, serde_json reads
//! to the same text and fields; and the scan reads the shapes AWS sends.

use proptest::prelude::*;

use super::{record, Scanned, ScannedKeys};
use crate::record::attr::{BorrowedField, ImageField};
use crate::record::glance::image::ImageGlance;
use crate::record::one::leading_serde;
use crate::record::raw::RawRecord;
use crate::testing::attribute_value;

/// The record the glance's scan reads from `text`, if it does.
fn glance_record(text: &str) -> Option<(&str, RawRecord<'_, ImageGlance<'_>>)> {
    record(text)
}

/// Images compared: an M's map has no order, so its `Debug` has none.
trait Same {
    fn same(&self, other: &Self) -> bool;
}

impl Same for ImageField {
    fn same(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Same for BorrowedField<'_> {
    fn same(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Same for ImageGlance<'_> {
    fn same(&self, other: &Self) -> bool {
        format!("{self:?}") == format!("{other:?}")
    }
}

/// Checks `text` read both ways, its images as `I` and its keys as `K`;
/// answers whether the scan read it.
fn agree_as<'a, I, K>(text: &'a str) -> Result<bool, TestCaseError>
where
    I: Scanned<'a> + serde::Deserialize<'a> + std::fmt::Debug + Same,
    K: ScannedKeys<'a> + serde::Deserialize<'a> + std::fmt::Debug,
{
    let Some((own, mut scanned)) = record::<I, K>(text) else {
        return Ok(false);
    };
    let Some((serde_own, mut read)) = leading_serde::<I, K>(text) else {
        return Err(TestCaseError::fail(format!(
            "the scan read what serde_json refuses: {text}"
        )));
    };
    prop_assert_eq!(own, serde_own);
    let images =
        |raw: &mut RawRecord<'a, I, K>| raw.dynamodb.as_mut().map(|d| [d.new_image.take(), d.old_image.take()]);
    let (scanned_images, read_images) = (images(&mut scanned), images(&mut read));
    prop_assert_eq!(format!("{scanned:?}"), format!("{read:?}"), "{}", text);
    let same = match (scanned_images, read_images) {
        (Some(scanned), Some(read)) => scanned.iter().zip(&read).all(|pair| match pair {
            (Some(a), Some(b)) => a.same(b),
            (a, b) => a.is_none() && b.is_none(),
        }),
        (scanned, read) => scanned.is_none() && read.is_none(),
    };
    prop_assert!(same, "the images differ: {}", text);
    Ok(true)
}

/// Checks `text` read both ways, glanced at and whole; answers whether
/// the glance's scan read it.
fn agree(text: &str) -> Result<bool, TestCaseError> {
    let whole = agree_as::<ImageField, ImageField>(text)?;
    let glanced = agree_as::<ImageGlance<'_>, ImageField>(text)?;
    // The borrowed reading is the whole one, its strings slices of the text.
    let borrowed = agree_as::<BorrowedField<'_>, BorrowedField<'_>>(text)?;
    prop_assert_eq!(borrowed, whole, "read borrowed as read whole: {}", text);
    // The glance is surer of nothing than the whole reading.
    prop_assert!(whole || !glanced, "glanced at but not read whole: {}", text);
    Ok(glanced)
}

/// A record in the shape Lambda sends, with `new` as its `NewImage`.
fn lambda(new: &str) -> String {
    format!(
        r#"{{"awsRegion":"eu-west-1","dynamodb":{{"ApproximateCreationDateTime":1763719200,"Keys":{{"pk":{{"S":"a"}},"sk":{{"N":"1"}}}},"NewImage":{new},"SequenceNumber":"100","SizeBytes":42,"StreamViewType":"NEW_AND_OLD_IMAGES"}},"eventID":"e1","eventName":"INSERT","eventSource":"aws:dynamodb","eventSourceARN":"arn:aws:dynamodb:local:000000000000:table/tee/stream/x","eventVersion":"1.1","userIdentity":{{"type":"Service","principalId":"dynamodb.amazonaws.com"}}}}"#
    )
}

#[test]
fn the_fixtures_are_scanned_as_serde_json_reads_them() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut scanned = 0;
    for name in ["lambda-records.json", "lambda-issues.json", "lambda-layers.json"] {
        let text = std::fs::read_to_string(dir.join(name)).expect("fixture");
        let batch: serde_json::Value = serde_json::from_str(&text).expect("json");
        for record in batch["Records"].as_array().expect("records") {
            // Compact, as Lambda sends it, and followed by the next one.
            let compact = format!("{record},{{}}]");
            scanned += usize::from(agree(&compact).expect("the same"));
            agree(&serde_json::to_string_pretty(record).expect("json")).expect("the same");
        }
    }
    assert!(scanned > 10, "only {scanned} fixture records were scanned");
}

#[test]
fn what_the_scan_gives_up_on() {
    for new in [
        r#"{"a":{"S":"\u0061"}}"#,
        r#"{"a":{"S":"x","N":"1"}}"#,
        r#"{"a":{"N":"1e999"}}"#,
        r#"{"a":{"B":"YQ=="}}"#,
        r#"{"a":{"S":"x"},"a":{"S":"y"}}"#,
        r#"{"a":{"M":{"b":{"S":"x"},"b":{"S":"y"}}}}"#,
        r#"{"a":{"SS":["x","x"]}}"#,
        r#"{"a":{"NULL":false}}"#,
        "null",
        "[]",
    ] {
        let text = lambda(new);
        assert!(glance_record(&text).is_none(), "{new} was scanned");
        assert!(!agree(&text).expect("no scan"));
    }
    for record in [
        lambda(r#"{"a":{"S":"x"}}"#).replace(r#""eventID":"e1""#, r#""eventID":"e1","eventID":"e2""#),
        lambda(r#"{"a":{"S":"x"}}"#).replace(r#""eventID":"e1""#, r#""eventID":null"#),
        lambda(r#"{"a":{"S":"x"}}"#).replace(r#""SizeBytes":42"#, r#""SizeBytes":4.2"#),
        lambda(r#"{"a":{"S":"x"}}"#).replace(r#""SizeBytes":42"#, r#""SizeBytes":042"#),
        lambda(r#"{"a":{"S":"x"}}"#).replace(r#""type":"Service""#, r#""type":"Service","Type":"Service""#),
        lambda(r#"{"a":{"S":"x"}}"#).replace(r#""awsRegion""#, r#""Records":[],"awsRegion""#),
        lambda(r#"{"a":{"S":"x"}}"#).replace(r#""eventVersion":"1.1""#, r#""eventVersion":[01]"#),
        lambda(r#"{"a":{"S":"x"}}"#).replace(r#""NEW_AND_OLD_IMAGES"}"#, r#""NEW_AND_OLD_IMAGES",}"#),
    ] {
        assert!(glance_record(&record).is_none(), "{record} was scanned");
    }
    assert!(agree(&lambda(r#"{"a":{"S":"x"}}"#)).expect("the same"));
}

/// Whitespace JSON allows between tokens.
fn space() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["", "", "", " ", "\n  ", "\t"])
}

/// An attribute value's JSON without escapes, nested a little.
fn plain_value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        "[a-z0-9 é]{0,12}".prop_map(|s| format!(r#"{{"S":"{s}"}}"#)),
        prop::sample::select(vec!["0", "-1.5", "12e3", "1E-2", "007", "1e200"])
            .prop_map(|n| format!(r#"{{"N":"{n}"}}"#)),
        any::<bool>().prop_map(|b| format!(r#"{{"BOOL":{b}}}"#)),
        Just(r#"{"NULL":true}"#.to_owned()),
        proptest::collection::btree_set("[a-c]{1,2}", 1..4).prop_map(|set| format!(
            r#"{{"SS":[{}]}}"#,
            set.iter().map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(",")
        )),
        Just(r#"{"NS":["1","2.5"]}"#.to_owned()),
    ];
    leaf.prop_recursive(3, 12, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(|list| format!(r#"{{"L":[{}]}}"#, list.join(","))),
            proptest::collection::btree_map("[a-e]{1,2}", inner, 0..4).prop_map(|map| {
                let members: Vec<_> = map.iter().map(|(name, value)| format!(r#""{name}":{value}"#)).collect();
                format!(r#"{{"M":{{{}}}}}"#, members.join(","))
            }),
        ]
    })
}

/// An attribute value's JSON: plain, generated, or one the glance is
/// unsure of.
fn value_json() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => plain_value(),
        2 => attribute_value().prop_map(|v| serde_json::json!(v).to_string()),
        1 => prop::sample::select(vec![
            r#"{"N":"abc"}"#,
            r#"{"NS":["1","x"]}"#,
            r#"{"S":5}"#,
            r#"{"S":null}"#,
            r#"{}"#,
            r#"{"FOO":1}"#,
            r#"{"SS":[]}"#, r#"{"SS":["a",1]}"#, r#"{"BOOL":1}"#, r#"{"L":{}}"#, r#""S""#,
            r#"{"M":{"a":{"NULL":true},"b":{"L":[{"N":"-0.5e3"}]}}}"#, "{\"S\":\"a raw\ttab\"}",
        ])
        .prop_map(str::to_owned),
    ]
}

/// A JSON object from members, with `gap` between its tokens.
fn object(members: &[(String, String)], gap: &str) -> String {
    let members: Vec<String> = members
        .iter()
        .map(|(name, value)| format!("{gap}\"{name}\"{gap}:{gap}{value}"))
        .collect();
    format!("{{{}{gap}}}", members.join(","))
}

/// Text as JSON strings.
fn quoted(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|text| format!("\"{text}\"")).collect()
}

/// A value for a record's member `name`: mostly of the type AWS sends,
/// now and then one the scan gives up on.
fn member_json(name: &'static str) -> BoxedStrategy<(String, String)> {
    let owned = |texts: &[&str]| texts.iter().map(|text| (*text).to_owned()).collect::<Vec<_>>();
    let image = || {
        (
            proptest::collection::btree_map(prop::sample::select(vec!["a", "b", "pk", "c d"]), value_json(), 0..5),
            space(),
        )
            .prop_map(|(members, gap)| {
                let members: Vec<_> = members.into_iter().map(|(n, v)| (n.to_owned(), v)).collect();
                object(&members, gap)
            })
            .boxed()
    };
    let (good, bad): (BoxedStrategy<String>, Vec<String>) = match name {
        "ApproximateCreationDateTime" => (
            prop::sample::select(owned(&[
                "1763719200",
                "1763719200.5",
                r#""2025-11-21T10:00:00Z""#,
                "-1",
                "1e3",
            ]))
            .boxed(),
            owned(&["01", "1.", "[]"]),
        ),
        "SizeBytes" => (
            prop::sample::select(owned(&["42", "0", "18446744073709551615"])).boxed(),
            owned(&["18446744073709551616", "-1", "4.2", "042", "\"42\""]),
        ),
        "Keys" => (
            prop::sample::select(owned(&[
                r#"{"pk":{"S":"a"},"sk":{"N":"1"}}"#,
                r#"{"sk":{"N":"-1.5e3"},"pk":{"S":"é"}}"#,
                r#"{"pk":{"S":"a"}}"#,
                "{}",
            ]))
            .boxed(),
            owned(&[
                r#"{"pk":{"N":"x"}}"#,
                r#"{"pk":{"B":"YQ=="}}"#,
                r#"{"pk":{"S":"a"},"pk":{"S":"b"}}"#,
                r#"{"pk":{"S":"a","N":"1"}}"#,
                r#"{"pk":{"BOOL":true}}"#,
            ]),
        ),
        "NewImage" | "OldImage" => (
            image(),
            owned(&[
                r#"{"a":{"S":"x"},"a":{"S":"y"}}"#,
                r#"{"a":{"S":"x"},"b":{"S":"\u0061"}}"#,
                "[]",
            ]),
        ),
        "userIdentity" => (
            prop::sample::select(owned(&[
                r#"{"type":"Service","principalId":"dynamodb.amazonaws.com"}"#,
                r#"{"Type":"Service","PrincipalId":"dynamodb.amazonaws.com","x":[1,{"y":null}]}"#,
            ]))
            .boxed(),
            owned(&[r#"{"type":"Service","Type":"Service"}"#, r#"{"type":1}"#]),
        ),
        _ => (
            prop::sample::select(quoted(&["INSERT", "MODIFY", "REMOVE", "x", "7", "é ü"])).boxed(),
            owned(&[
                "1",
                "-0.25E+2",
                "true",
                "[]",
                "{}",
                r#"[1,{"a":[null]}]"#,
                "01",
                "1.",
                "tru",
                r#""a\"b""#,
                "\"a raw\nnewline\"",
            ]),
        ),
    };
    let bad = prop::sample::select([bad, owned(&["null"])].concat());
    (Just(name.to_owned()), prop_oneof![24 => good, 1 => bad]).boxed()
}

/// An object's members, each of `names` present most of the time, in any
/// order, now and then one of them twice.
fn members(names: &'static [&'static str]) -> impl Strategy<Value = Vec<(String, String)>> {
    let each: Vec<_> = names
        .iter()
        .map(|&name| prop::option::weighted(0.85, member_json(name)))
        .collect();
    let again = prop::sample::select(names).prop_flat_map(member_json);
    (each, prop::option::weighted(0.1, again))
        .prop_map(|(each, again)| each.into_iter().flatten().chain(again).collect::<Vec<_>>())
        .prop_shuffle()
}

/// A record's text: members in any order, some repeated or unknown, some
/// of another type, whitespace between tokens, and what follows it.
fn record_text() -> impl Strategy<Value = String> {
    const STREAM: &[&str] = &[
        "ApproximateCreationDateTime",
        "Keys",
        "NewImage",
        "OldImage",
        "SequenceNumber",
        "SizeBytes",
        "StreamViewType",
        "Other",
    ];
    const RECORD: &[&str] = &[
        "eventID",
        "eventName",
        "eventSourceARN",
        "userIdentity",
        "awsRegion",
        "eventVersion",
    ];
    (
        members(STREAM),
        members(RECORD),
        prop::option::weighted(0.05, member_json("Records")),
        space(),
        prop::sample::select(vec!["", ",{}]", " ]", "x", "}"]),
        0usize..40,
    )
        .prop_map(|(stream, mut record, records, gap, after, cut)| {
            record.push(("dynamodb".to_owned(), object(&stream, gap)));
            record.extend(records);
            let text = format!("{}{after}", object(&record, gap));
            // Now and then cut short.
            match cut {
                0 => text.chars().take(text.chars().count() / 2).collect(),
                _ => text,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn what_the_scan_reads_serde_json_reads_the_same(text in record_text()) {
        agree(&text)?;
    }

    #[test]
    fn a_record_of_generated_values_is_scanned(
        image in proptest::collection::vec(("[a-c]{1,3}", attribute_value()), 0..6),
        gap in space(),
    ) {
        let mut members: Vec<(String, String)> =
            image.into_iter().map(|(name, value)| (name, serde_json::json!(value).to_string())).collect();
        members.sort();
        members.dedup_by(|a, b| a.0 == b.0);
        let text = lambda(&object(&members, gap));
        let sure = agree(&text)?;
        // The glance is unsure of B, NS and BS values, and of numbers
        // DynamoDB cannot hold; the scan gives up on escapes; everything
        // else is scanned.
        let unsure = ["\"B\"", "\"NS\"", "\"BS\"", "\\"].iter().any(|tag| text.contains(tag))
            || glance_record(&text).is_none() && leading_serde::<ImageGlance<'_>, ImageField>(&text).is_some_and(|(_, r)| {
                r.dynamodb.and_then(|d| d.new_image).is_some_and(|i| !i.is_sure())
            });
        prop_assert!(sure || unsure, "not scanned: {}", text);
    }
}

proptest! {
    #[test]
    fn a_string_ends_where_a_byte_at_a_time_says(
        bytes in prop_oneof![
            // Ends early, often.
            proptest::collection::vec(prop_oneof![4 => any::<u8>(), 1 => Just(b'"'), 1 => Just(b'\\'), 1 => 0u8..0x20], 0..40),
            // Ends anywhere in up to eighty bytes: in any of the sixteen
            // bytes (or eight) read at once, in a later chunk, or in the
            // tail read a byte at a time.
            proptest::collection::vec(prop_oneof![120 => 0x5du8.., 1 => Just(b'"'), 1 => Just(b'\\'), 1 => 0u8..0x20], 0..80),
        ],
        skip in 0usize..8,
    ) {
        let bytes = &bytes[skip.min(bytes.len())..];
        let expected = bytes.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20);
        prop_assert_eq!(super::token::string_end(bytes), expected);
        // The path of targets without SSE2, and of the last bytes.
        prop_assert_eq!(super::token::string_end_by_words(bytes), expected);
    }
}

proptest! {
    /// `Scan::tag` reads what `{`, a string and `:` read token by token,
    /// and stops at the same place, whether its fast path takes the text
    /// (compact, one to four capitals) or not (whitespace, other letters,
    /// longer tags, an escape, text cut short).
    #[test]
    fn a_tag_reads_as_its_three_tokens(
        pieces in proptest::collection::vec(
            prop_oneof![
                Just("{"), Just("\""), Just(":"), Just(" "), Just("S"), Just("N"),
                Just("BOOL"), Just("NULL"), Just("s"), Just("\\"), Just("X"), Just("}"),
            ],
            0..10,
        ),
        compact in any::<bool>(),
        colon in prop_oneof![4 => Just(":"), 1 => Just(" :"), 1 => Just("}"), 1 => Just("")],
    ) {
        let text = if compact {
            // Mostly the shape AWS writes (a tag of capitals, then `":`),
            // with what follows.
            let tag: String = pieces.iter().filter(|p| p.chars().all(|c| c.is_ascii_uppercase())).copied().collect();
            format!("{{\"{tag}\"{colon}{}", pieces.concat())
        } else {
            pieces.concat()
        };
        let mut fast = super::token::Scan::new(&text);
        let mut tokens = super::token::Scan::new(&text);
        let by_tokens = (|| {
            tokens.eat(b'{')?;
            let tag = tokens.string()?;
            tokens.eat(b':')?;
            Some(tag)
        })();
        let by_tag = fast.tag();
        prop_assert_eq!(by_tag, by_tokens, "{}", text);
        if by_tag.is_some() {
            prop_assert_eq!(fast.read(), tokens.read(), "{}", text);
        }
    }
}
