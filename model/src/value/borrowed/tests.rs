//! The borrowed forms against the owned ones: the same answers through
//! [`Attr`] and [`Attrs`], and the same value when made owned again.

use std::collections::HashMap;

use proptest::prelude::*;

use super::*;
use crate::testing::attribute_value;
use crate::value::{Image as OwnedImage, Scalar, Value as OwnedValue};

fn image() -> impl Strategy<Value = OwnedImage> {
    proptest::collection::hash_map("[a-z]{0,3}|[a-z]{20,26}", attribute_value(), 0..24).prop_map(OwnedImage::from)
}

/// Every answer of [`Attrs`] and [`Attr`], each value's owned form.
fn answers<I: Attrs>(image: &I, names: &[String]) -> Vec<(String, Option<OwnedValue>, Option<String>, bool)> {
    names
        .iter()
        .map(|name| {
            let value = image.get(name);
            let scalar = value.map(|v| format!("{:?}", v.scalar()));
            (
                name.clone(),
                value.map(Attr::to_value),
                scalar,
                image.contains_key(name),
            )
        })
        .collect()
}

proptest! {
    #[test]
    fn moved_to_borrowed_and_back_is_the_same(value in attribute_value()) {
        let borrowed = Value::from(value.clone());
        prop_assert_eq!(borrowed.to_value(), value.clone());
        prop_assert_eq!(borrowed.type_name(), value.type_name());
        prop_assert_eq!(format!("{:?}", borrowed.scalar()), format!("{:?}", value.scalar()));
    }

    #[test]
    fn an_image_answers_as_the_owned_one(owned in image(), extra in "[a-z]{0,3}") {
        let borrowed = Image::from(owned.clone());
        let mut names: Vec<String> = owned.keys().map(str::to_owned).collect();
        names.push(extra);
        prop_assert_eq!(answers(&borrowed, &names), answers(&owned, &names));
        prop_assert_eq!(Attrs::len(&borrowed), owned.len());
        let by_name: Vec<&str> = Attrs::iter(&borrowed).map(|(n, _)| n).collect();
        let owned_names: Vec<&str> = owned.keys().collect();
        prop_assert_eq!(by_name, owned_names);
        prop_assert_eq!(borrowed.to_image(), owned);
    }

    #[test]
    fn equal_when_the_owned_forms_are(a in attribute_value(), b in attribute_value()) {
        prop_assert_eq!(Value::from(a.clone()) == Value::from(b.clone()), a == b);
    }

    /// Each name keeps its own value (its place in the order given) as
    /// the entries are sorted; up to 30 distinct names, so that both
    /// sorted and repeating lists are common.
    #[test]
    fn from_distinct_sorts_or_names_the_repeat(names in proptest::collection::vec("[a-e]{1,2}", 0..24)) {
        let entries = names
            .iter()
            .enumerate()
            .map(|(i, n)| (Cow::Owned(n.clone()), Value::N(Cow::Owned(i.to_string()))))
            .collect();
        let first_repeat = names.iter().enumerate().find(|(i, n)| names[..*i].contains(n)).map(|(_, n)| n.clone());
        match Image::from_distinct(entries) {
            Ok(image) => {
                prop_assert_eq!(first_repeat, None);
                let got: Vec<(&str, &Value)> = Attrs::iter(&image).collect();
                let mut sorted: Vec<(&str, String)> =
                    names.iter().enumerate().map(|(i, n)| (n.as_str(), i.to_string())).collect();
                sorted.sort_unstable();
                let sorted: Vec<(&str, Value)> =
                    sorted.into_iter().map(|(n, i)| (n, Value::N(Cow::Owned(i)))).collect();
                let sorted: Vec<(&str, &Value)> = sorted.iter().map(|(n, v)| (*n, v)).collect();
                prop_assert_eq!(got, sorted);
            }
            Err(repeat) => prop_assert_eq!(Some(repeat.name), first_repeat),
        }
    }
}

#[test]
fn a_nested_map_is_sorted_by_name() {
    let map: HashMap<String, OwnedValue> = ["b", "a", "c"]
        .into_iter()
        .map(|n| (n.to_owned(), OwnedValue::S(n.to_owned())))
        .collect();
    let Value::M(m) = Value::from(OwnedValue::M(map)) else {
        panic!("an M stays an M");
    };
    let names: Vec<&str> = Attrs::iter(&m).map(|(n, _)| n).collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(m.get("b").map(Attr::scalar), Some(Scalar::S("b")));
}
