//! Packing a batch's events into PutEvents calls.
//!
//! The events come in batch order, each with its partition-key group and
//! its entry size (`model::event::entry_size`). Each joins the earliest call
//! that
//!
//! 1. is the call holding its group's previous event, or a later one,
//! 2. holds fewer than `max_entries` entries,
//! 3. and has room for its size within `budget` bytes,
//!
//! or a new call at the end. So the events of one group sit in calls of
//! non-decreasing position, in order within a call; events of different
//! groups fill the same calls. A call holding an event whose group's
//! previous event is in an earlier call depends on that call
//! ([`Packed::after`]): it is sent only once that call succeeded, so a
//! group's events go out in stream order, and a group whose call failed
//! sends nothing after it.
//!
//! The caller never passes an event larger than `budget` (it drops the
//! images first, or quarantines the event).

/// One planned PutEvents call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Packed {
    /// Its events, as positions in the input, in order.
    pub events: Vec<usize>,
    /// Their total size in bytes.
    pub bytes: usize,
    /// Earlier calls holding the previous event of one of its groups (distinct).
    pub after: Vec<usize>,
}

/// Packs events given as `(group, size)` in batch order. See the module doc.
pub fn pack(events: &[(usize, usize)], max_entries: usize, budget: usize) -> Vec<Packed> {
    let max_entries = max_entries.max(1);
    let mut calls: Vec<Packed> = Vec::new();
    // Per group: the call holding its latest event.
    let mut last: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    // Every call before this one is full by count.
    let mut first_open = 0;
    for (position, &(group, size)) in events.iter().enumerate() {
        let previous = last.get(&group).copied();
        let floor = previous.map_or(first_open, |p| p.max(first_open));
        let fits = |c: &Packed| c.events.len() < max_entries && c.bytes.saturating_add(size) <= budget;
        let at = match (floor..calls.len()).find(|&c| fits(&calls[c])) {
            Some(at) => at,
            None => {
                calls.push(Packed::default());
                calls.len() - 1
            }
        };
        let call = &mut calls[at];
        call.events.push(position);
        call.bytes += size;
        if let Some(p) = previous.filter(|&p| p != at) {
            if !call.after.contains(&p) {
                call.after.push(p);
            }
        }
        last.insert(group, at);
        while calls.get(first_open).is_some_and(|c| c.events.len() >= max_entries) {
            first_open += 1;
        }
    }
    calls
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_events_of_many_groups_fill_calls_of_ten() {
        let events: Vec<(usize, usize)> = (0..1000).map(|i| (i, 500)).collect();
        let calls = pack(&events, 10, 256 * 1024);
        assert_eq!(calls.len(), 100);
        assert!(calls.iter().all(|c| c.events.len() == 10 && c.after.is_empty()));
    }

    #[test]
    fn one_groups_events_share_calls_in_order() {
        let events: Vec<(usize, usize)> = (0..25).map(|_| (7, 100)).collect();
        let calls = pack(&events, 10, 256 * 1024);
        let sizes: Vec<usize> = calls.iter().map(|c| c.events.len()).collect();
        assert_eq!(sizes, [10, 10, 5]);
        assert_eq!(calls[1].after, [0]);
        assert_eq!(calls[2].after, [1]);
    }

    #[test]
    fn the_budget_splits_calls() {
        // Three events of 100 KB: two fit in 256 KB, the third does not.
        let events = [(0, 100_000), (1, 100_000), (2, 100_000)];
        let calls = pack(&events, 10, 256 * 1024);
        let held: Vec<Vec<usize>> = calls.iter().map(|c| c.events.clone()).collect();
        assert_eq!(held, [vec![0, 1], vec![2]]);
        // A small event after them still joins the first call with room.
        let calls = pack(&[(0, 100_000), (1, 100_000), (2, 100_000), (3, 1_000)], 10, 256 * 1024);
        assert_eq!(calls[0].events, [0, 1, 3]);
    }

    proptest! {
        #[test]
        fn calls_respect_the_limits_and_each_groups_order(
            events in proptest::collection::vec((0usize..6, 1usize..=1000), 0..200),
            max_entries in 1usize..=10,
            budget in 1000usize..=4000,
        ) {
            let calls = pack(&events, max_entries, budget);
            let mut seen = vec![0usize; events.len()];
            let mut call_of = vec![usize::MAX; events.len()];
            for (c, call) in calls.iter().enumerate() {
                prop_assert!(!call.events.is_empty());
                prop_assert!(call.events.len() <= max_entries);
                let bytes: usize = call.events.iter().map(|&e| events[e].1).sum();
                prop_assert_eq!(bytes, call.bytes);
                prop_assert!(bytes <= budget);
                prop_assert!(call.events.windows(2).all(|w| w[0] < w[1]), "in batch order within a call");
                for &e in &call.events {
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
}
