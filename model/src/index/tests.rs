use super::*;
use crate::value::Value;

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

mod tail {
    use proptest::prelude::*;

    use super::*;
    use crate::config::SortColumn;
    use crate::sortkey::{Column, ColumnType, Direction};

    /// An attribute value as an item or an entry may hold it: numbers
    /// that encode and numbers that do not, strings (a date among them),
    /// and the types an N or S column refuses.
    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            "-?[0-9]{1,4}(\\.[0-9]{1,2})?".prop_map(Value::N),
            Just(Value::N("1E+200".to_owned())),
            Just(Value::N("not a number".to_owned())),
            "[a-c]{0,3}".prop_map(Value::S),
            Just(Value::S("2023-04-05".to_owned())),
            any::<bool>().prop_map(Value::Bool),
            Just(Value::Null(true)),
            Just(Value::Ss(vec!["x".to_owned()])),
        ]
    }

    /// An issue item: its key, maybe `num` and `state` of any type, and
    /// `custom_fields` with up to 8 entries.
    fn item() -> impl Strategy<Value = Image> {
        (
            proptest::option::of(value()),
            proptest::option::of(value()),
            proptest::collection::btree_map("f[0-9]{1,2}", value(), 0..8),
        )
            .prop_map(|(num, state, fields)| {
                let mut item: Image = [
                    ("id", Value::S("issue-1".to_owned())),
                    ("rel", Value::S("issue-1".to_owned())),
                ]
                .into_iter()
                .collect();
                if let Some(num) = num {
                    item.insert("num", num);
                }
                if let Some(state) = state {
                    item.insert("state", state);
                }
                item.insert("custom_fields", Value::M(fields.into_iter().collect()));
                item
            })
    }

    /// Sort columns: entry and item references in several orders, the
    /// item's after the entry's (a shared tail), before them (none), or
    /// only the item's.
    fn sort() -> impl Strategy<Value = Vec<SortColumn>> {
        let reference = prop_oneof![
            Just(ValueRef::EntryValue),
            Just(ValueRef::EntryKey),
            Just(ValueRef::Attribute("num".to_owned())),
            Just(ValueRef::Attribute("state".to_owned())),
        ];
        let ty = prop_oneof![
            Just(ColumnType::Any),
            Just(ColumnType::N),
            Just(ColumnType::S),
            Just(ColumnType::Date)
        ];
        let direction = prop_oneof![Just(Direction::Asc), Just(Direction::Desc)];
        proptest::collection::vec((reference, ty, direction), 1..4).prop_map(|columns| {
            columns
                .into_iter()
                .map(|(value, ty, direction)| SortColumn {
                    value,
                    column: Column::new(ty, direction),
                })
                .collect()
        })
    }

    proptest! {
        /// The end of the sort key that is the same for every entry,
        /// encoded once per item, gives exactly the keys and the problems
        /// of encoding every column for every entry.
        #[test]
        fn a_shared_tail_gives_the_keys_and_problems_of_each_entry_encoded_whole(
            item in item(),
            sort in sort(),
        ) {
            let config = crate::config::parse(crate::config::EXAMPLE_CONFIG, "example").unwrap();
            let table = config.table("issues").unwrap();
            let mut index = config.index("issue-attrib").unwrap().clone();
            index.sort = sort;
            let shared = row_keys_with(&index, table, &item, None, Tail::Shared);
            let whole = row_keys_with(&index, table, &item, None, Tail::PerEntry);
            prop_assert_eq!(shared, whole);
        }

        /// Two images give the same projection exactly when `same_projection`
        /// says so, without building it, in either image form. The projected
        /// attributes (`num`, `state`) take few values, so equal ones are common.
        #[test]
        fn same_projection_is_the_projections_compared(
            a in proptest::option::of(item()),
            b in proptest::option::of(item()),
        ) {
            let config = crate::config::parse(crate::config::EXAMPLE_CONFIG, "example").unwrap();
            let table = config.table("issues").unwrap();
            let mut index = config.index("issue-attrib").unwrap().clone();
            index.project = vec!["num".to_owned(), "state".to_owned()];
            let built = |i: Option<&Image>| i.map(|i| projection(&index, table, i));
            let expected = built(a.as_ref()) == built(b.as_ref());
            prop_assert_eq!(same_projection(&index, table, a.as_ref(), b.as_ref()), expected);
            let borrow = |i: &Option<Image>| i.clone().map(crate::value::borrowed::Image::from);
            let (a, b) = (borrow(&a), borrow(&b));
            prop_assert_eq!(same_projection(&index, table, a.as_ref(), b.as_ref()), expected);
        }
    }
}

/// The entries of an owned M (a hash map, in no order) are derived by
/// name, so an item with several entries that cannot be indexed gives
/// their problems in one order (the quarantine's reason is then the same
/// on every run, and in both image forms).
#[test]
fn problems_of_several_entries_come_by_entry_name() {
    let config = crate::config::parse(crate::config::EXAMPLE_CONFIG, "example").unwrap();
    let table = config.table("issues").unwrap();
    let index = config.index("issue-attrib").unwrap();
    let names: Vec<String> = (0..24).map(|i| format!("f{:02}", (i * 7) % 24)).collect();
    let fields: std::collections::HashMap<String, Value> =
        names.iter().map(|name| (name.clone(), Value::L(Vec::new()))).collect();
    let item: Image = [
        ("id".to_owned(), Value::S("issue-1".to_owned())),
        ("rel".to_owned(), Value::S("issue-1".to_owned())),
        ("num".to_owned(), Value::N("1".to_owned())),
        ("custom_fields".to_owned(), Value::M(fields)),
    ]
    .into_iter()
    .collect();
    let derived = row_keys(index, table, &item, None).unwrap();
    let labels: Vec<String> = derived
        .problems
        .iter()
        .map(|p| match p {
            IndexError::SortColumn { entry, .. } => entry.to_string(),
            other => panic!("an entry's sort column: {other}"),
        })
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    let expected: Vec<String> = sorted.iter().map(|n| format!("entry `custom_fields.{n}`: ")).collect();
    assert_eq!(labels, expected);
}
