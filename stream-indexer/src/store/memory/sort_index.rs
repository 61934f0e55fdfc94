//! One source table's items by sort key value: what a GSI keyed by the
//! sort key (like an edge set's `target_index`) finds without a scan. A
//! hash of the sort key values, each holding the partition keys of its
//! items in order (a handful: a node and the edges that point at it), so a
//! write costs one hash and a short binary search rather than a walk down
//! a B-tree that compares whole keys at every level.

use foldhash::HashMap;

use super::KeyValue;

#[derive(Default)]
pub(super) struct SortIndex {
    by_sort: HashMap<KeyValue, Vec<KeyValue>>,
}

impl SortIndex {
    /// Notes the item `(partition, sort)`; noting it twice changes nothing.
    pub(super) fn insert(&mut self, sort: KeyValue, partition: KeyValue) {
        let partitions = self.by_sort.entry(sort).or_default();
        if let Err(at) = partitions.binary_search(&partition) {
            partitions.insert(at, partition);
        }
    }

    /// Forgets the item `(partition, sort)`.
    pub(super) fn remove(&mut self, sort: &KeyValue, partition: &KeyValue) {
        let Some(partitions) = self.by_sort.get_mut(sort) else {
            return;
        };
        if let Ok(at) = partitions.binary_search(partition) {
            partitions.remove(at);
        }
        if partitions.is_empty() {
            self.by_sort.remove(sort);
        }
    }

    /// The partition keys of the items whose sort key is `sort`, in order.
    pub(super) fn partitions(&self, sort: &KeyValue) -> &[KeyValue] {
        self.by_sort.get(sort).map_or(&[], Vec::as_slice)
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
                prop_assert_eq!(index.partitions(&key(sort)), expected.as_slice());
            }
            prop_assert_eq!(index.by_sort.values().map(Vec::len).sum::<usize>(), model.len());
        }
    }
}
