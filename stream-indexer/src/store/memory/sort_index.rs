//! One source table's items by sort key value: what a GSI keyed by the
//! sort key (like an edge set's `target_index`) finds without a scan. A
//! hash of the sort key values, each holding the partition keys of its
//! items: most hold one (a node, or the one edge that points at a target),
//! kept inline; a target many edges point at (a user on every goal) keeps
//! them in a hash set, so a write costs two hashes, never a walk down a
//! tree of strings (a B-tree's writes cost more, mostly in the walk's string
//! compares; see `docs/PERFORMANCE.md`). Reads, rare (the reaper's, one per
//! expired node), sort what they find into key order.
//!
//! A table's index is made the first time it is asked for (from the items
//! the table holds then) and kept from then on: tables no one reads by sort
//! key (in replay, every table but the edge sets') cost nothing to write.

use foldhash::{HashMap, HashSet};

use super::table::Table;
use super::KeyValue;

/// The partition keys of the items that share one sort key value.
enum Partitions {
    One(KeyValue),
    Many(HashSet<KeyValue>),
}

#[derive(Default)]
pub(super) struct SortIndex {
    by_sort: HashMap<KeyValue, Partitions>,
}

impl SortIndex {
    /// The index of what `table` holds now.
    pub(super) fn of(table: &Table) -> SortIndex {
        let mut index = SortIndex::default();
        for (partition, sort) in table.sorted_keys() {
            index.insert(sort, partition);
        }
        index
    }

    /// Notes the item `(partition, sort)`; noting it twice changes nothing.
    pub(super) fn insert(&mut self, sort: KeyValue, partition: KeyValue) {
        match self.by_sort.entry(sort) {
            std::collections::hash_map::Entry::Vacant(vacant) => {
                vacant.insert(Partitions::One(partition));
            }
            std::collections::hash_map::Entry::Occupied(mut occupied) => match occupied.get_mut() {
                Partitions::One(one) if *one == partition => {}
                Partitions::One(one) => {
                    let one = std::mem::replace(one, KeyValue::S(String::new()));
                    occupied.insert(Partitions::Many(HashSet::from_iter([one, partition])));
                }
                Partitions::Many(many) => {
                    many.insert(partition);
                }
            },
        }
    }

    /// Forgets the item `(partition, sort)`.
    pub(super) fn remove(&mut self, sort: &KeyValue, partition: &KeyValue) {
        let empty = match self.by_sort.get_mut(sort) {
            None => return,
            Some(Partitions::One(one)) => one == partition,
            Some(Partitions::Many(many)) => {
                many.remove(partition);
                many.is_empty()
            }
        };
        if empty {
            self.by_sort.remove(sort);
        }
    }

    /// The partition keys of the items whose sort key is `sort`, in order.
    pub(super) fn partitions(&self, sort: &KeyValue) -> Vec<&KeyValue> {
        match self.by_sort.get(sort) {
            None => Vec::new(),
            Some(Partitions::One(one)) => vec![one],
            Some(Partitions::Many(many)) => {
                let mut sorted: Vec<&KeyValue> = many.iter().collect();
                sorted.sort_unstable();
                sorted
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    fn key(n: u8) -> KeyValue {
        KeyValue::S(format!("k{n}"))
    }

    proptest! {
        /// Any run of inserts and removes answers as a set of (sort, partition) pairs does.
        #[test]
        fn answers_as_an_ordered_set_of_pairs(ops in proptest::collection::vec((any::<bool>(), 0u8..6, 0u8..6), 0..200)) {
            let mut index = SortIndex::default();
            let mut model: BTreeSet<(KeyValue, KeyValue)> = BTreeSet::new();
            for (insert, sort, partition) in ops {
                if insert {
                    index.insert(key(sort), key(partition));
                    model.insert((key(sort), key(partition)));
                } else {
                    index.remove(&key(sort), &key(partition));
                    model.remove(&(key(sort), key(partition)));
                }
            }
            for sort in 0..6 {
                let expected: Vec<KeyValue> = model.iter().filter(|(s, _)| *s == key(sort)).map(|(_, p)| p.clone()).collect();
                prop_assert_eq!(index.partitions(&key(sort)).into_iter().cloned().collect::<Vec<_>>(), expected);
            }
            let held = index.by_sort.values().map(|p| match p {
                Partitions::One(_) => 1,
                Partitions::Many(many) => many.len(),
            });
            prop_assert_eq!(held.sum::<usize>(), model.len());
        }
    }
}
