use super::*;

fn map(pairs: &[(&str, &str)]) -> Value {
    Value::M(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Value::N((*v).to_owned())))
            .collect(),
    )
}

fn keys(f: &EntryFilter<'_>) -> Vec<String> {
    match f {
        EntryFilter::Keys(k) => k.iter().map(|s| (*s).to_owned()).collect(),
        EntryFilter::Positions(p) => p.iter().map(|i| i.to_string()).collect(),
    }
}

/// (old value, new value, entries changed in old, entries changed in new)
type Case = (
    Option<Value>,
    Option<Value>,
    &'static [&'static str],
    &'static [&'static str],
);

#[test]
fn changed_entries_name_what_differs_on_each_side() {
    let cases: &[Case] = &[
        (
            Some(map(&[("a", "1"), ("b", "2")])),
            Some(map(&[("a", "1"), ("b", "2")])),
            &[],
            &[],
        ),
        (
            Some(map(&[("a", "1"), ("b", "2")])),
            Some(map(&[("a", "1"), ("b", "3")])),
            &["b"],
            &["b"],
        ),
        (
            Some(map(&[("a", "1")])),
            Some(map(&[("a", "1"), ("c", "1")])),
            &[],
            &["c"],
        ),
        (
            Some(map(&[("a", "1"), ("z", "1")])),
            Some(map(&[("b", "1")])),
            &["a", "z"],
            &["b"],
        ),
        (None, Some(map(&[("a", "1")])), &[], &["a"]),
        (Some(map(&[("a", "1")])), Some(Value::Null(true)), &["a"], &[]),
        (
            Some(Value::L(vec![Value::N("1".into()), Value::N("2".into())])),
            Some(Value::L(vec![
                Value::N("1".into()),
                Value::N("5".into()),
                Value::N("6".into()),
            ])),
            &["1"],
            &["1", "2"],
        ),
    ];
    for (old, new, in_old, in_new) in cases {
        let (a, b) = changed_entries(old.as_ref(), new.as_ref()).expect("comparable");
        assert_eq!(
            (keys(&a), keys(&b)),
            (
                in_old.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>(),
                in_new.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>()
            ),
            "{old:?} -> {new:?}"
        );
    }
    let set = Value::Ss(vec!["a".into()]);
    assert_eq!(changed_entries(Some(&set), Some(&set)), None, "sets are derived whole");
    assert_eq!(changed_entries(Some(&map(&[])), Some(&Value::L(vec![]))), None);
}

/// A sharded index puts each item's rows in `{rendered}#{shard}`, the shard
/// taken from the item's key (the sort key's suffix); the sort keys are the
/// unsharded ones, and one shard is the unsharded index.
#[test]
fn sharded_rows_carry_their_shard() {
    let config = crate::config::parse(crate::config::EXAMPLE_CONFIG, "example").unwrap();
    let table = config.table("issues").unwrap();
    let mut sharded = config.index("issue-attrib").unwrap().clone();
    sharded.shards = 16;
    let item = |i: usize| -> Image {
        [
            ("id".to_owned(), Value::S(format!("issue-{i}"))),
            ("rel".to_owned(), Value::S(format!("issue-{i}"))),
            ("num".to_owned(), Value::N(i.to_string())),
            ("custom_fields".to_owned(), map(&[("prio", "1"), ("size", "2")])),
        ]
        .into_iter()
        .collect()
    };
    let mut shards_seen = std::collections::BTreeSet::new();
    for i in 0..64 {
        let plain = rows(config.index("issue-attrib").unwrap(), table, &item(i)).unwrap();
        let split = rows(&sharded, table, &item(i)).unwrap();
        assert_eq!(plain.projection, split.projection);
        // The suffix of the sort key is the CSS1 of the item's key: `S issue-i \1` twice.
        let source_key = format!("Sissue-{i}\u{1}Sissue-{i}\u{1}");
        let shard = shard::shard_of(&source_key, 16);
        shards_seen.insert(shard);
        let expected: Vec<RowKey> = plain
            .keys
            .iter()
            .map(|k| {
                assert!(k.sort.ends_with(&source_key), "{k:?}");
                RowKey {
                    partition: format!("{}#{shard}", k.partition),
                    sort: k.sort.clone(),
                }
            })
            .collect();
        let mut got = split.keys.clone();
        got.sort_by(|a, b| (&a.sort, &a.partition).cmp(&(&b.sort, &b.partition)));
        let mut expected = expected;
        expected.sort_by(|a, b| (&a.sort, &a.partition).cmp(&(&b.sort, &b.partition)));
        assert_eq!(got, expected);
    }
    assert!(shards_seen.len() > 8, "64 items over 16 shards: {shards_seen:?}");

    // The suffix counts against the partition key's limit.
    let mut long = item(1);
    let name = "p".repeat(MAX_PARTITION_BYTES - 1);
    long.insert(
        "custom_fields",
        Value::M([(name, Value::N("1".into()))].into_iter().collect()),
    );
    assert!(rows(config.index("issue-attrib").unwrap(), table, &long)
        .unwrap()
        .problems
        .is_empty());
    let split = rows(&sharded, table, &long).unwrap();
    assert!(split.keys.is_empty());
    assert!(
        matches!(split.problems.as_slice(), [IndexError::PartitionTooLong { bytes, .. }] if *bytes > MAX_PARTITION_BYTES),
        "{:?}",
        split.problems
    );
}
