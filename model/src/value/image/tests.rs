//! The image against a `HashMap` doing the same operations.

use std::collections::HashMap;

use proptest::prelude::*;

use super::*;
use crate::testing::attribute_value;

#[derive(Debug, Clone)]
enum Op {
    Insert(String, Value),
    Remove(String),
    GetOrInsert(String, Value),
}

/// 23 bytes: with a suffix of up to 2, a name is held inline (up to 24
/// bytes) or on the heap, so both kinds of `Name` meet in one image.
const LONG: &str = "a_name_of_twenty_three_";

/// Few distinct names, so that they repeat; some short, some either side
/// of the inline limit.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-d]{0,2}",
        1 => "[a-d]{0,2}".prop_map(|suffix| format!("{LONG}{suffix}")),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (name(), attribute_value()).prop_map(|(n, v)| Op::Insert(n, v)),
        1 => name().prop_map(Op::Remove),
        1 => (name(), attribute_value()).prop_map(|(n, v)| Op::GetOrInsert(n, v)),
    ]
}

fn sorted(map: &HashMap<String, Value>) -> Vec<(String, Value)> {
    let mut entries: Vec<_> = map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries
}

proptest! {
    #[test]
    fn behaves_as_a_hash_map_and_iterates_by_name(ops in proptest::collection::vec(op(), 0..40)) {
        let mut image = Image::new();
        let mut model = HashMap::new();
        for op in ops {
            match op {
                Op::Insert(n, v) => prop_assert_eq!(image.insert(n.clone(), v.clone()), model.insert(n, v)),
                Op::Remove(n) => prop_assert_eq!(image.remove(&n), model.remove(&n)),
                Op::GetOrInsert(n, v) => {
                    let got = image.get_or_insert_with(&n, || v.clone()).clone();
                    prop_assert_eq!(&got, model.entry(n).or_insert(v));
                }
            }
            prop_assert_eq!(image.len(), model.len());
            let (long_a, long_ab) = (format!("{LONG}a"), format!("{LONG}ab"));
            for name in ["", "a", "ab", "d", "dd", "e", LONG, &long_a, &long_ab] {
                prop_assert_eq!(image.get(name), model.get(name));
                prop_assert_eq!(image.contains_key(name), model.contains_key(name));
            }
            let entries: Vec<(String, Value)> = image.iter().map(|(k, v)| (k.to_owned(), v.clone())).collect();
            prop_assert_eq!(&entries, &sorted(&model));
        }
        prop_assert_eq!(&Image::from(model.clone()), &image);
        prop_assert_eq!(image.clone().into_map(), model);
    }

    /// Both ways of building: by insertion (up to `SMALL` entries) and by sorting.
    #[test]
    fn built_from_entries_in_any_order_the_last_of_a_name_wins(
        entries in prop_oneof![
            proptest::collection::vec((name(), attribute_value()), 0..20),
            proptest::collection::vec(("[a-z]{1,2}", attribute_value()), 60..150),
        ]
    ) {
        let mut model = HashMap::new();
        for (n, v) in entries.clone() {
            model.insert(n, v);
        }
        let image: Image = entries.into_iter().collect();
        prop_assert_eq!(image.into_iter().map(|(n, v)| (n.into_string(), v)).collect::<Vec<_>>(), sorted(&model));
    }

    #[test]
    fn from_distinct_names_the_first_repeat_in_the_order_given(
        names in prop_oneof![
            proptest::collection::vec(name(), 0..12),
            proptest::collection::vec("[a-z]{1,2}", 60..100),
            proptest::collection::hash_set("[a-z]{1,3}", 60..100).prop_map(|set| set.into_iter().collect()),
        ]
    ) {
        let entries: Vec<(Name, Value)> = names.iter().map(|n| (Name::from(n.as_str()), Value::Null(true))).collect();
        let first_repeat = names.iter().enumerate().find(|(i, n)| names[..*i].contains(n)).map(|(_, n)| n.clone());
        match (Image::from_distinct(entries), first_repeat) {
            (Err(repeated), Some(expected)) => prop_assert_eq!(repeated.name, expected),
            (Ok(image), None) => {
                let mut expected = names.clone();
                expected.sort();
                prop_assert_eq!(image.keys().map(str::to_owned).collect::<Vec<_>>(), expected);
            }
            (got, expected) => prop_assert!(false, "got {got:?}, expected the repeat {expected:?}"),
        }
    }

    #[test]
    fn equal_images_are_equal_whatever_the_order_of_insertion(
        entries in proptest::collection::hash_map(name(), attribute_value(), 0..8)
    ) {
        let forward: Image = entries.clone().into_iter().collect();
        let mut backward = Image::new();
        let mut list: Vec<_> = entries.into_iter().collect();
        list.reverse();
        for (n, v) in list {
            backward.insert(n, v);
        }
        prop_assert_eq!(forward, backward);
    }
}

#[test]
fn serializes_as_a_json_object_by_name_and_reads_back() {
    let image = Image::from([
        ("b".to_owned(), Value::N("1.50".to_owned())),
        ("a".to_owned(), Value::S("x".to_owned())),
    ]);
    let json = serde_json::to_string(&image).expect("serialize");
    assert_eq!(json, r#"{"a":{"S":"x"},"b":{"N":"1.50"}}"#);
    let back: Image = serde_json::from_str(r#"{"b":{"N":"1.50"},"a":{"S":"x"}}"#).expect("deserialize");
    assert_eq!(back, image);
}

/// Every length up to past the longest compared in place, and a change at
/// every position of it: `same_name` says what `==` says.
#[test]
fn same_name_sees_a_change_at_every_position() {
    for len in 0..=40 {
        let name: String = (0..len).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        assert!(same_name(&name, &name.clone()), "{name}");
        for at in 0..len {
            let mut other = name.clone().into_bytes();
            other[at] = b'_';
            let other = String::from_utf8(other).expect("ASCII");
            assert!(!same_name(&name, &other), "{name} against {other}");
        }
        assert!(!same_name(&name, &format!("{name}_")), "{name} against a longer name");
    }
}

proptest! {
    /// Names from a two-letter alphabet, so that many pairs are equal or
    /// differ in one place: `same_name` is `==`.
    #[test]
    fn same_name_is_equality(a in "[ab]{0,20}", b in "[ab]{0,20}") {
        prop_assert_eq!(same_name(&a, &b), a == b);
    }
}
