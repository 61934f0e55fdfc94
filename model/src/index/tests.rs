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
