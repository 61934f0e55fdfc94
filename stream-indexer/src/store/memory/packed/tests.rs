use proptest::prelude::*;

use super::*;

fn image() -> impl Strategy<Value = Image> {
    proptest::collection::hash_map(".{0,6}", model::testing::attribute_value(), 0..8).prop_map(Image::from)
}

proptest! {
    #[test]
    fn an_item_unpacks_as_it_was_packed(item in image()) {
        let packed = Packed::pack(&item);
        prop_assert_eq!(packed.unpack(), item.clone());
        for (name, value) in &item {
            prop_assert_eq!(packed.get(name), Some(value.clone()));
        }
        prop_assert_eq!(packed.get("not an attribute name at all"), None);
    }

    #[test]
    fn entries_carry_over_into_another_item(from in image(), into in image()) {
        let from_packed = Packed::pack(&from);
        let moved: Vec<&str> = from.keys().filter(|k| !into.contains_key(k)).collect();
        let extra: Vec<&[u8]> = moved.iter().filter_map(|k| from_packed.entry(k)).collect();
        prop_assert_eq!(extra.len(), moved.len());
        let mut expected = into.clone();
        for k in &moved {
            expected.insert(*k, from[*k].clone());
        }
        prop_assert_eq!(Packed::pack_with(&into, &extra).unpack(), expected);
    }
}

#[test]
fn lengths_past_one_byte_of_varint() {
    let long = "x".repeat(20_000);
    let item = Image::from([
        (long.clone(), Value::S(long.clone())),
        ("set".to_owned(), Value::Ss((0..300).map(|i| i.to_string()).collect())),
    ]);
    let packed = Packed::pack(&item);
    assert_eq!(packed.unpack(), item);
    assert_eq!(packed.get(&long), Some(Value::S(long)));
}

#[test]
fn a_packed_item_is_smaller_than_its_map() {
    // A typical edge: keys, a type, a user, a date, a number.
    let item = Image::from([
        ("pk".to_owned(), Value::S("GOAL-00012".to_owned())),
        ("sk".to_owned(), Value::S("GOALMEMBERSHIP-USER-00345".to_owned())),
        ("type".to_owned(), Value::S("GoalMembership".to_owned())),
        ("user".to_owned(), Value::S("USER-00345".to_owned())),
        ("joined".to_owned(), Value::S("2026-11-25T10:00:00Z".to_owned())),
        ("score".to_owned(), Value::N("12.5".to_owned())),
    ]);
    let text: usize = item
        .iter()
        .map(|(k, v)| k.len() + serde_json::to_string(v).map_or(0, |j| j.len()))
        .sum();
    let packed = Packed::pack(&item).len();
    assert!(
        packed <= text,
        "{packed} bytes packed, {text} bytes of names and values as JSON"
    );
}

proptest! {
    /// Attributes kept aside are read as any other, but by the shown
    /// image; a repack keeps them, but those it sets again, and adds the
    /// new ones.
    #[test]
    fn aside_attributes_are_kept_and_read_but_not_shown(
        item in image(),
        first in proptest::collection::btree_map("_[a-c]", "[0-9]{1,3}", 0..4),
        then in proptest::collection::btree_map("_[a-d]", "[0-9]{1,3}", 0..4),
    ) {
        let as_set = |m: &std::collections::BTreeMap<String, String>| -> Vec<(String, Value)> {
            m.iter()
                .filter(|(k, _)| !item.contains_key(k))
                .map(|(k, v)| (k.clone(), Value::S(v.clone())))
                .collect()
        };
        let once = Packed::pack(&item).split().1.pack(&item, &as_set(&first));
        let twice = once.split().1.pack(&item, &as_set(&then));
        let mut expected = item.clone();
        for (name, value) in as_set(&first).into_iter().chain(as_set(&then)) {
            expected.insert(name, value);
        }
        prop_assert_eq!(twice.split().0, item.clone());
        prop_assert_eq!(twice.unpack(), expected.clone());
        prop_assert_eq!(twice.with_aside(item.clone()), expected.clone());
        for (name, value) in &expected {
            prop_assert_eq!(twice.get(name), Some(value.clone()));
        }
        prop_assert_eq!(twice.get("not an attribute name at all"), None);
        let aside = twice.split().1;
        for (name, value) in as_set(&first).into_iter().chain(as_set(&then)) {
            let rest = name.strip_prefix('_').unwrap_or_default();
            prop_assert!(aside.has("_", rest), "{}", name);
            prop_assert_eq!(aside.text("_", rest), match &expected[name.as_str()] {
                Value::S(text) => Some(text.as_str()),
                _ => None,
            });
            prop_assert!(matches!(value, Value::S(_)));
        }
        for shown in item.keys() {
            prop_assert!(!aside.has("", shown), "{}", shown);
        }
    }
}
