//! The packer: distinct keys per call, calls of at most 25, per-key order,
//! writes of many small groups sharing calls.

use std::collections::{HashMap, HashSet};

use model::index::RowKey;
use proptest::prelude::*;

use super::*;

fn key(p: &str) -> RowKey {
    RowKey {
        partition: p.to_owned(),
        sort: format!("{p}-sort"),
    }
}

/// Packs `(index, key)` rows in order as the executor does; each call lists
/// its writes' positions.
fn pack<'a>(keys: impl IntoIterator<Item = (usize, &'a RowKey)>) -> Vec<Packed> {
    let mut rows = Rows::default();
    for (index, key) in keys {
        rows.push(
            0,
            RowWrite {
                index,
                key: key.clone(),
                put: None,
                version: model::Version::zero(),
            },
        );
    }
    rows.finish().0
}

/// Packs keys named by strings (all of index 0); returns each call's key names.
fn pack_names(names: &[&str]) -> (Vec<Vec<String>>, Vec<Packed>) {
    let keys: Vec<RowKey> = names.iter().map(|n| key(n)).collect();
    let calls = pack(keys.iter().map(|k| (0, k)));
    let named = calls
        .iter()
        .map(|c| c.items.iter().map(|&i| names[i].to_owned()).collect())
        .collect();
    (named, calls)
}

/// The packer's promises, for any input.
fn check(keys: &[(usize, RowKey)], calls: &[Packed]) -> Result<(), TestCaseError> {
    let mut seen = vec![false; keys.len()];
    let mut last: HashMap<&(usize, RowKey), usize> = HashMap::new();
    // Where each write went, in input order.
    let mut call_of = vec![usize::MAX; keys.len()];
    for (c, call) in calls.iter().enumerate() {
        prop_assert!(!call.items.is_empty() && call.items.len() <= MAX_BATCH_WRITES);
        let distinct: HashSet<&(usize, RowKey)> = call.items.iter().map(|&i| &keys[i]).collect();
        prop_assert_eq!(distinct.len(), call.items.len(), "two writes to one key in call {}", c);
        prop_assert!(call.items.windows(2).all(|w| w[0] < w[1]), "a call keeps list order");
        for &i in &call.items {
            prop_assert!(!std::mem::replace(&mut seen[i], true), "write {} packed twice", i);
            call_of[i] = c;
        }
    }
    prop_assert!(seen.iter().all(|s| *s), "every write is packed");
    for (i, k) in keys.iter().enumerate() {
        if let Some(&previous) = last.get(k) {
            prop_assert!(
                call_of[i] > previous,
                "per-key order: write {} goes after call {}",
                i,
                previous
            );
            prop_assert!(
                calls[call_of[i]].after.contains(&previous),
                "call {} waits for {}",
                call_of[i],
                previous
            );
        }
        last.insert(k, call_of[i]);
    }
    for (c, call) in calls.iter().enumerate() {
        let mut after = call.after.clone();
        after.sort_unstable();
        after.dedup();
        prop_assert_eq!(after.len(), call.after.len(), "distinct dependencies");
        prop_assert!(call.after.iter().all(|&d| d < c), "dependencies are earlier calls");
    }
    Ok(())
}

#[test]
fn distinct_keys_fill_calls_of_25() {
    let names: Vec<String> = (0..60).map(|i| format!("k{i:02}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let (calls, packed) = pack_names(&names);
    let sizes: Vec<usize> = calls.iter().map(Vec::len).collect();
    assert_eq!(sizes, vec![25, 25, 10]);
    assert!(packed.iter().all(|p| p.after.is_empty()));
    assert_eq!(calls[0][0], "k00");
    assert_eq!(calls[2][9], "k59");
}

#[test]
fn a_second_write_to_a_key_goes_in_a_later_call_without_closing_the_open_one() {
    let (calls, packed) = pack_names(&["a", "b", "a", "c", "a", "d"]);
    assert_eq!(calls, vec![vec!["a", "b", "c", "d"], vec!["a"], vec!["a"]]);
    assert_eq!(packed[0].after, Vec::<usize>::new());
    assert_eq!(packed[1].after, vec![0]);
    assert_eq!(packed[2].after, vec![1]);
}

#[test]
fn writes_of_many_small_groups_share_calls() {
    // 100 issues (groups), each deleting one row and putting two: 300
    // writes, all distinct keys, in 12 full calls (per group: 100 calls).
    let mut names = Vec::new();
    for issue in 0..100 {
        for field in ["old", "new", "other"] {
            names.push(format!("{field}#issue-{issue}"));
        }
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let (calls, _) = pack_names(&names);
    assert_eq!(calls.len(), 12);
    assert!(calls.iter().all(|c| c.len() == 25));
    // Batch order: group 0's writes lead the first call.
    assert_eq!(&calls[0][..3], &["old#issue-0", "new#issue-0", "other#issue-0"]);
}

#[test]
fn a_repeated_key_goes_to_the_earliest_open_call_after_its_last_write() {
    // The repeat comes while call 0 has room: it opens call 1, and call 0
    // keeps filling with the keys after it.
    let (calls, packed) = pack_names(&["x", "y", "x", "z", "w"]);
    assert_eq!(calls, vec![vec!["x", "y", "z", "w"], vec!["x"]]);
    assert_eq!(packed[1].after, vec![0]);
    // "x", 29 other keys (call 0 full, call 1 holds 5), "x" again (joins
    // call 1), 20 more keys: calls 1 and 2 fill in order.
    let mut names: Vec<String> = vec!["x".to_owned()];
    names.extend((0..29).map(|i| format!("k{i:02}")));
    names.push("x".to_owned());
    names.extend((29..49).map(|i| format!("k{i:02}")));
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let (calls, packed) = pack_names(&names);
    let sizes: Vec<usize> = calls.iter().map(Vec::len).collect();
    assert_eq!(sizes, vec![25, 25, 1]);
    assert_eq!(calls[1][5], "x");
    assert_eq!(packed[1].after, vec![0]);
}

#[test]
fn a_key_written_many_times_gets_one_call_per_write() {
    let names = vec!["hot"; 4];
    let (calls, packed) = pack_names(&names);
    assert_eq!(calls.len(), 4);
    let after: Vec<Vec<usize>> = packed.iter().map(|p| p.after.clone()).collect();
    assert_eq!(after, vec![vec![], vec![0], vec![1], vec![2]]);
}

#[test]
fn keys_of_other_index_tables_are_other_keys() {
    let k = key("same");
    let calls = pack([(0, &k), (1, &k)]);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].items, vec![0, 1]);
}

#[test]
fn nothing_to_pack_is_no_call() {
    assert!(pack(std::iter::empty()).is_empty());
}

proptest! {
    #[test]
    fn packing_keeps_its_promises(picks in proptest::collection::vec((0usize..2, 0usize..40), 0..400)) {
        let keys: Vec<(usize, RowKey)> = picks.iter().map(|(i, k)| (*i, key(&format!("k{k}")))).collect();
        let calls = pack(keys.iter().map(|(i, k)| (*i, k)));
        check(&keys, &calls)?;
        // Near the minimum: the extra calls come from repeated keys only.
        let mut counts: HashMap<&(usize, RowKey), usize> = HashMap::new();
        for k in &keys {
            *counts.entry(k).or_default() += 1;
        }
        let most = counts.values().copied().max().unwrap_or(0);
        prop_assert!(
            calls.len() <= keys.len().div_ceil(MAX_BATCH_WRITES) + most.saturating_sub(1),
            "{} calls for {} writes (a key written {} times)", calls.len(), keys.len(), most
        );
    }
}
