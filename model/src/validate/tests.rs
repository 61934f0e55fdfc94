//! Each rule, table-driven: a valid issue record, then one change at a time
//! that DynamoDB would never stream.

use super::*;
use crate::config::{self, EXAMPLE_CONFIG};
use crate::record::CreationTime;
use crate::value::{Image, Value};

fn s(v: &str) -> Value {
    Value::S(v.to_owned())
}

fn n(v: &str) -> Value {
    Value::N(v.to_owned())
}

fn issue() -> ChangeRecord {
    let keys: Image = [("id".to_owned(), s("i1")), ("rel".to_owned(), s("i1"))].into();
    let mut new = keys.clone();
    new.insert("num".to_owned(), n("42"));
    new.insert("tags".to_owned(), Value::Ss(vec!["a".into(), "b".into()]));
    ChangeRecord {
        event_id: None,
        kind: EventKind::Modify,
        table: Some("issues".into()),
        source_arn: None,
        keys: keys.clone(),
        old: Some(keys),
        new: Some(new),
        sequence_number: "1".to_owned(),
        created: Some(CreationTime {
            seconds: 1_763_719_200,
            nanos: 0,
        }),
        size_bytes: None,
        view_type: None,
        ttl_expiry: false,
    }
}

fn check_issue(record: &ChangeRecord) -> Result<(), Invalid> {
    let config = config::parse(EXAMPLE_CONFIG, "example").expect("the example config");
    let table = config.table("issues").expect("the issues table").clone();
    check(record, &table)
}

fn with_new(attribute: &str, value: Value) -> ChangeRecord {
    let mut record = issue();
    if let Some(new) = record.new.as_mut() {
        new.insert(attribute.to_owned(), value);
    }
    record
}

#[test]
fn a_valid_record_passes() {
    assert_eq!(check_issue(&issue()), Ok(()));
    // Numbers at DynamoDB's limits are fine.
    for number in [
        "1E-130",
        "9.9999999999999999999999999999999999999E+125",
        "-0",
        "12345678901234567890123456789012345678",
    ] {
        assert_eq!(check_issue(&with_new("x", n(number))), Ok(()), "{number}");
    }
}

#[test]
fn each_rule_refuses_what_dynamodb_never_streams() {
    let cases: Vec<(&str, ChangeRecord, &str)> = vec![
        ("a number too large", with_new("x", n("1E+126")), "NewImage.x"),
        (
            "39 significant digits",
            with_new("x", n("123456789012345678901234567890123456789")),
            "38 significant",
        ),
        (
            "a number too small",
            with_new("x", n("1E-131")),
            "not a number DynamoDB can hold",
        ),
        (
            "deep in a map",
            with_new("m", Value::M([("k".to_owned(), n("1E+200"))].into())),
            "NewImage.m.k",
        ),
        (
            "in a list",
            with_new("l", Value::L(vec![s("a"), n("x")])),
            "NewImage.l[1]",
        ),
        ("an empty set", with_new("x", Value::Ss(Vec::new())), "empty set"),
        (
            "a duplicate string",
            with_new("x", Value::Ss(vec!["a".into(), "a".into()])),
            "twice",
        ),
        (
            "numbers equal by value",
            with_new("x", Value::Ns(vec!["1".into(), "1.0".into()])),
            "\"1.0\" twice",
        ),
        ("NULL false", with_new("x", Value::Null(false)), "NULL is false"),
        (
            "an image too large",
            with_new("x", s(&"x".repeat(MAX_ITEM_BYTES))),
            "item limit",
        ),
    ];
    for (what, record, expected) in cases {
        let error = check_issue(&record).expect_err(what).to_string();
        assert!(error.contains(expected), "{what}: {error}");
    }
}

#[test]
fn keys_must_be_the_tables_and_agree_with_the_images() {
    let mut record = issue();
    record.keys.remove("rel");
    assert!(matches!(check_issue(&record), Err(Invalid::MissingKey { attribute, .. }) if attribute == "rel"));

    let mut record = issue();
    record.keys.insert("num".to_owned(), n("1"));
    assert!(matches!(check_issue(&record), Err(Invalid::ExtraKey { attribute, .. }) if attribute == "num"));

    let mut record = issue();
    if let Some(new) = record.new.as_mut() {
        new.insert("id".to_owned(), s("i2"));
    }
    assert!(matches!(
        check_issue(&record),
        Err(Invalid::KeyMismatch { image: "NewImage", .. })
    ));

    let mut record = issue();
    if let Some(old) = record.old.as_mut() {
        old.remove("id");
    }
    assert!(matches!(
        check_issue(&record),
        Err(Invalid::KeyMismatch { image: "OldImage", .. })
    ));
}

#[test]
fn ttl_deletions_are_removes_and_times_are_seconds() {
    let mut record = issue();
    record.ttl_expiry = true;
    assert!(matches!(
        check_issue(&record),
        Err(Invalid::TtlNotRemove { kind: "MODIFY" })
    ));
    record.kind = EventKind::Remove;
    record.new = None;
    assert_eq!(check_issue(&record), Ok(()));

    let mut record = issue();
    record.created = Some(CreationTime {
        seconds: 1_763_719_200_000,
        nanos: 0,
    });
    let error = check_issue(&record).expect_err("milliseconds").to_string();
    assert!(error.contains("milliseconds"), "{error}");
}

#[test]
fn poison_is_checked_once_per_record_and_table() {
    let config = config::parse(EXAMPLE_CONFIG, "example").expect("the example config");
    let (issues, records) = (
        config.table("issues").expect("the issues table"),
        config.table("records").expect("the records table"),
    );
    let mut bad = issue();
    if let Some(new) = bad.new.as_mut() {
        new.insert("num".to_owned(), n("1E+126"));
    }
    let line = crate::delivery::lambda_record(&bad).to_string();
    let received = crate::record::read_line::<crate::value::Image>(&line, 1, 0, crate::record::Mode::Whole)
        .expect("a record line")
        .expect("not blank");
    let first = poison(&received, issues).expect("a number out of range is poison");
    assert!(first.to_string().contains("NewImage.num"), "{first}");
    assert_eq!(poison(&received, issues), Some(first.clone()), "the same answer again");
    // Asked for another table, it is checked for that table (its keys differ).
    let other = poison(&received, records).expect("the wrong keys for records");
    assert_ne!(other, first);
    assert_eq!(poison(&received, issues), Some(first), "the first answer is kept");
}

/// The size the limit is checked against, as it was computed before it
/// was taken in the check's own walk: names and values, numbers by their
/// text, 3 bytes a list or map and 1 an element (an M's names counted).
fn reference_bytes(image: &Image) -> usize {
    fn value(v: &Value) -> usize {
        match v {
            Value::S(s) | Value::N(s) => s.len(),
            Value::B(b) => b.len(),
            Value::Bool(_) | Value::Null(_) => 1,
            Value::Ss(m) | Value::Ns(m) => m.iter().map(String::len).sum(),
            Value::Bs(m) => m.iter().map(Vec::len).sum(),
            Value::L(items) => 3 + items.iter().map(|v| 1 + value(v)).sum::<usize>(),
            Value::M(map) => 3 + map.iter().map(|(k, v)| 1 + k.len() + value(v)).sum::<usize>(),
        }
    }
    image.iter().map(|(name, v)| name.len() + value(v)).sum()
}

proptest::proptest! {
    /// A valid image's size comes out of the check's walk as the plain sum
    /// gives it, in either form of the image; an invalid one is refused in
    /// both forms.
    #[test]
    fn the_checks_walk_sizes_an_image_as_the_plain_sum_does(
        entries in proptest::collection::vec(("[a-z]{1,6}", crate::testing::attribute_value()), 0..8),
    ) {
        let image: Image = entries.into_iter().collect();
        let borrowed = crate::value::borrowed::Image::from(image.clone());
        let owned = checked_bytes(&image, "NewImage");
        proptest::prop_assert_eq!(&checked_bytes(&borrowed, "NewImage"), &owned);
        if let Ok(bytes) = owned {
            proptest::prop_assert_eq!(bytes, reference_bytes(&image));
        }
    }
}
