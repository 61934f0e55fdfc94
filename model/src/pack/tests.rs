//! The packer: limits, per-key order and dependencies, with both key rules.
//! (The row writes' own promises are tested with the indexer's packing, in
//! `stream-indexer/src/apply/rows/tests.rs`.)

use super::*;
use proptest::prelude::*;

/// Packs events given as `(group, size)` as the router does: groups may
/// share a call.
fn pack_events(events: &[(usize, usize)], max_entries: usize, budget: usize) -> Vec<Packed> {
    let limits = Limits {
        max_items: max_entries,
        max_bytes: budget,
        same_key: SameKey::SameOrLater,
    };
    pack(events.iter().map(|&(g, s)| (g as u64, s)), limits)
}

#[test]
fn small_events_of_many_groups_fill_calls_of_ten() {
    let events: Vec<(usize, usize)> = (0..1000).map(|i| (i, 500)).collect();
    let calls = pack_events(&events, 10, 256 * 1024);
    assert_eq!(calls.len(), 100);
    assert!(calls.iter().all(|c| c.items.len() == 10 && c.after.is_empty()));
}

#[test]
fn one_groups_events_share_calls_in_order() {
    let events: Vec<(usize, usize)> = (0..25).map(|_| (7, 100)).collect();
    let calls = pack_events(&events, 10, 256 * 1024);
    let sizes: Vec<usize> = calls.iter().map(|c| c.items.len()).collect();
    assert_eq!(sizes, [10, 10, 5]);
    assert_eq!(calls[1].after, [0]);
    assert_eq!(calls[2].after, [1]);
}

#[test]
fn the_budget_splits_calls() {
    // Three events of 100 KB: two fit in 256 KB, the third does not.
    let events = [(0, 100_000), (1, 100_000), (2, 100_000)];
    let calls = pack_events(&events, 10, 256 * 1024);
    let held: Vec<Vec<usize>> = calls.iter().map(|c| c.items.clone()).collect();
    assert_eq!(held, [vec![0, 1], vec![2]]);
    // A small event after them still joins the first call with room.
    let calls = pack_events(&[(0, 100_000), (1, 100_000), (2, 100_000), (3, 1_000)], 10, 256 * 1024);
    assert_eq!(calls[0].items, [0, 1, 3]);
}

proptest! {
    #[test]
    fn calls_respect_the_limits_and_each_groups_order(
        events in proptest::collection::vec((0usize..6, 1usize..=1000), 0..200),
        max_entries in 1usize..=10,
        budget in 1000usize..=4000,
    ) {
        let calls = pack_events(&events, max_entries, budget);
        let mut seen = vec![0usize; events.len()];
        let mut call_of = vec![usize::MAX; events.len()];
        for (c, call) in calls.iter().enumerate() {
            prop_assert!(!call.items.is_empty());
            prop_assert!(call.items.len() <= max_entries);
            let bytes: usize = call.items.iter().map(|&e| events[e].1).sum();
            prop_assert_eq!(bytes, call.bytes);
            prop_assert!(bytes <= budget);
            prop_assert!(call.items.windows(2).all(|w| w[0] < w[1]), "in batch order within a call");
            for &e in &call.items {
                seen[e] += 1;
                call_of[e] = c;
            }
            for &d in &call.after {
                prop_assert!(d < c);
            }
        }
        prop_assert!(seen.iter().all(|&n| n == 1), "every event exactly once");
        // A group's events: calls non-decreasing, and a later call
        // depends on the call of the group's previous event.
        for (i, &(group, _)) in events.iter().enumerate() {
            let previous = (0..i).rev().find(|&j| events[j].0 == group);
            if let Some(j) = previous {
                prop_assert!(call_of[j] <= call_of[i]);
                if call_of[j] < call_of[i] {
                    prop_assert!(calls[call_of[i]].after.contains(&call_of[j]));
                }
            }
        }
        // When the budget never binds, only the last call is short.
        if events.iter().all(|e| e.1 * max_entries <= budget) {
            prop_assert_eq!(calls.len(), events.len().div_ceil(max_entries));
        }
    }
}

#[test]
fn with_later_call_a_key_never_shares_a_call() {
    let limits = Limits {
        max_items: 25,
        max_bytes: usize::MAX,
        same_key: SameKey::LaterCall,
    };
    let calls = pack([(1, 0), (2, 0), (1, 0), (1, 0)], limits);
    let items: Vec<Vec<usize>> = calls.iter().map(|c| c.items.clone()).collect();
    assert_eq!(items, [vec![0, 1], vec![2], vec![3]]);
    assert_eq!(calls[1].after, [0]);
    assert_eq!(calls[2].after, [1]);
}

/// First fit by a scan of every call from the key's floor: the definition
/// the packer's tree of rooms must reproduce exactly.
fn first_fit_by_scan(items: &[(u64, usize)], limits: Limits) -> Vec<Packed> {
    let max_items = limits.max_items.max(1);
    let mut calls: Vec<Packed> = Vec::new();
    let mut last: HashMap<u64, usize> = HashMap::default();
    for (position, &(key, size)) in items.iter().enumerate() {
        let previous = last.get(&key).copied();
        let floor = match (previous, limits.same_key) {
            (Some(p), SameKey::LaterCall) => p + 1,
            (Some(p), SameKey::SameOrLater) => p,
            (None, _) => 0,
        };
        let fits = |c: &Packed| c.items.len() < max_items && c.bytes + size <= limits.max_bytes;
        let at = (floor..calls.len()).find(|&c| fits(&calls[c])).unwrap_or_else(|| {
            calls.push(Packed::default());
            calls.len() - 1
        });
        let call = &mut calls[at];
        call.items.push(position);
        call.bytes += size;
        if let Some(p) = previous.filter(|&p| p != at) {
            if !call.after.contains(&p) {
                call.after.push(p);
            }
        }
        last.insert(key, at);
    }
    calls
}

proptest! {
    #[test]
    fn the_packer_is_first_fit(
        // Sizes that fill calls to the byte exactly, and empty items that
        // still fit a call with no bytes left, drawn often.
        items in proptest::collection::vec((0u64..8, prop_oneof![2 => 0usize..=1000, 1 => Just(0), 1 => Just(250)]), 0..300),
        max_items in 1usize..=25,
        max_bytes in prop_oneof![1000usize..=5000, Just(1000), Just(2000)],
        later in any::<bool>(),
    ) {
        let limits = Limits {
            max_items,
            max_bytes,
            same_key: if later { SameKey::LaterCall } else { SameKey::SameOrLater },
        };
        prop_assert_eq!(pack(items.iter().copied(), limits), first_fit_by_scan(&items, limits));
    }
}

#[test]
fn calls_that_fill_by_bytes_pack_to_their_budget() {
    // Every call is full by bytes after two items and never by count: the
    // case where a scan from the first open call was quadratic.
    let limits = Limits {
        max_items: 1_000,
        max_bytes: 10,
        same_key: SameKey::SameOrLater,
    };
    let items: Vec<(u64, usize)> = (0..20_000).map(|i| (i, 5)).collect();
    let calls = pack(items.iter().copied(), limits);
    assert_eq!(calls.len(), 10_000);
    assert!(calls.iter().all(|c| c.bytes == 10 && c.items.len() == 2));
}

#[test]
fn an_empty_item_joins_a_call_with_no_bytes_left() {
    let limits = Limits {
        max_items: 5,
        max_bytes: 10,
        same_key: SameKey::SameOrLater,
    };
    let items = [(0, 10), (1, 5), (2, 0)];
    let calls = pack(items, limits);
    assert_eq!(calls, first_fit_by_scan(&items, limits));
    assert_eq!(calls[0].items, [0, 2]);
}
