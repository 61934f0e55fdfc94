//! A hash map whose spare slots cost a word, not an entry: the entries sit
//! densely in a vector, or in chunks for a map that only grows (see
//! `entries`; a removed one's place is taken by the last), and a hash table
//! holds only their positions.
//!
//! Why not a `HashMap` of the entries: with churn (rows written and deleted
//! all the time, as a replay does), a hash map's deleted slots count against
//! its capacity until it rehashes, and it doubles whenever more than half of
//! it is live; so it settles at two to four times its live entries, each
//! slot the size of a whole entry, and for a moment holds the old and the
//! new table at once. The index rows of a long replay would grow with the
//! history that way, not with the key space (see `docs/PERFORMANCE.md`).
//! Here the vector holds only live entries (at most twice the most ever
//! live, as any vector), and the table's spare slots are a `usize` each.
//!
//! Each entry's hash is kept beside it (a `u64` in a vector of their own):
//! the table grows without hashing every key again (and reading every
//! entry to do it), and a removal finds the slot of the entry that takes
//! the removed one's place without hashing its key.

use std::hash::{BuildHasher, Hash};

use hashbrown::hash_table::{Entry, HashTable};

use super::entries::Entries;

pub(super) struct DenseMap<K, V> {
    /// Positions in `entries`, by the hash of the entry's key.
    slots: HashTable<usize>,
    entries: Entries<(K, V)>,
    /// The hash of each entry's key, at the entry's position.
    hashes: Vec<u64>,
    hasher: foldhash::fast::RandomState,
}

impl<K, V> Default for DenseMap<K, V> {
    fn default() -> Self {
        DenseMap {
            slots: HashTable::new(),
            entries: Entries::flat(),
            hashes: Vec::new(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }
}

impl<K, V> DenseMap<K, V> {
    /// A map that only grows (its entries never removed, or seldom): its
    /// entries in chunks, never copied as it grows (see [`Entries`]).
    pub(super) fn growing() -> Self {
        DenseMap {
            entries: Entries::chunked(),
            ..DenseMap::default()
        }
    }
}

impl<K: Hash + Eq, V> DenseMap<K, V> {
    /// The value at the key `like`, given as anything that hashes as the
    /// key does (a tuple of references for a tuple key), with `is` telling
    /// the key apart.
    pub(super) fn get<Q: Hash>(&self, like: Q, is: impl Fn(&K) -> bool) -> Option<&V> {
        let hash = self.hasher.hash_one(like);
        let (entries, hashes) = (&self.entries, &self.hashes);
        let at = *self.slots.find(hash, |&i| {
            hashes.get(i) == Some(&hash) && entries.get(i).is_some_and(|(k, _)| is(k))
        })?;
        entries.get(at).map(|(_, v)| v)
    }

    /// Inserts or replaces the value at the key `like` (given as for
    /// [`DenseMap::get`]); the key is made (`make`) only when it is new.
    /// Returns the value replaced.
    pub(super) fn insert_by<Q: Hash>(
        &mut self,
        like: Q,
        is: impl Fn(&K) -> bool,
        make: impl FnOnce() -> K,
        value: V,
    ) -> Option<V> {
        let hash = self.hasher.hash_one(like);
        match slot(&mut self.slots, &self.entries, &self.hashes, hash, is) {
            Entry::Occupied(slot) => self
                .entries
                .get_mut(*slot.get())
                .map(|(_, stored)| std::mem::replace(stored, value)),
            Entry::Vacant(slot) => {
                slot.insert(self.entries.len());
                self.entries.push((make(), value));
                self.hashes.push(hash);
                None
            }
        }
    }

    /// [`DenseMap::insert_by`], only where `replaces` says yes of the value
    /// there (`None`: no entry): one lookup for the check and the write.
    /// Returns whether it inserted.
    pub(super) fn insert_if<Q: Hash>(
        &mut self,
        like: Q,
        is: impl Fn(&K) -> bool,
        make: impl FnOnce() -> K,
        replaces: impl FnOnce(Option<&V>) -> bool,
        value: impl FnOnce() -> V,
    ) -> bool {
        let hash = self.hasher.hash_one(like);
        match slot(&mut self.slots, &self.entries, &self.hashes, hash, is) {
            Entry::Occupied(slot) => match self.entries.get_mut(*slot.get()) {
                Some((_, stored)) if replaces(Some(stored)) => {
                    *stored = value();
                    true
                }
                _ => false,
            },
            Entry::Vacant(slot) => {
                if !replaces(None) {
                    return false;
                }
                slot.insert(self.entries.len());
                self.entries.push((make(), value()));
                self.hashes.push(hash);
                true
            }
        }
    }

    /// Removes the entry at the key `like` (given as for [`DenseMap::get`]);
    /// returns its value. The last entry takes its place.
    pub(super) fn remove_by<Q: Hash>(&mut self, like: Q, is: impl Fn(&K) -> bool) -> Option<V> {
        let hash = self.hasher.hash_one(like);
        let (entries, hashes) = (&self.entries, &self.hashes);
        let (at, _) = self
            .slots
            .find_entry(hash, |&i| {
                hashes.get(i) == Some(&hash) && entries.get(i).is_some_and(|(k, _)| is(k))
            })
            .ok()?
            .remove();
        let last = self.entries.len().checked_sub(1)?;
        if at != last {
            // The last entry moves to `at`: its slot follows it.
            let moved = self.hashes.get(last).copied();
            if let Some(slot) = moved.and_then(|hash| self.slots.find_mut(hash, |&i| i == last)) {
                *slot = at;
            }
        }
        self.hashes.swap_remove(at);
        self.entries.swap_remove(at).map(|(_, v)| v)
    }

    /// Inserts or replaces; returns the value replaced.
    #[cfg(test)]
    fn insert(&mut self, key: K, value: V) -> Option<V>
    where
        K: Clone,
    {
        let like = &key;
        self.insert_by(like, |k| k == like, || like.clone(), value)
    }

    /// Removes the entry at `key`; returns its value.
    #[cfg(test)]
    fn remove(&mut self, key: &K) -> Option<V> {
        self.remove_by(key, |k| k == key)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.entries.len() == 0
    }

    /// Every entry, in no particular order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }
}

/// The table's slot for the key hashing to `hash` that `is` tells apart
/// (found, or free to take), making room first when the table is full.
fn slot<'t, K, V>(
    slots: &'t mut HashTable<usize>,
    entries: &Entries<(K, V)>,
    hashes: &[u64],
    hash: u64,
    is: impl Fn(&K) -> bool,
) -> Entry<'t, usize> {
    slots.entry(
        hash,
        |&i| hashes.get(i) == Some(&hash) && entries.get(i).is_some_and(|(k, _)| is(k)),
        |&i| hashes.get(i).copied().unwrap_or(0),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u8, u32),
        Remove(u8),
        /// Inserts only over a smaller value (or none).
        InsertIfGreater(u8, u32),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (any::<u8>(), any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
            any::<u8>().prop_map(Op::Remove),
            (any::<u8>(), any::<u32>()).prop_map(|(k, v)| Op::InsertIfGreater(k, v)),
        ]
    }

    proptest! {
        /// In either layout, any sequence of inserts and removes leaves the
        /// same entries as a `BTreeMap` given the same, and every call
        /// answers as it does.
        #[test]
        fn behaves_as_a_map(ops in proptest::collection::vec(op(), 0..400)) {
            for mut dense in [DenseMap::default(), DenseMap::growing()] {
                let mut model = BTreeMap::new();
                for op in ops.iter().cloned() {
                    match op {
                        Op::Insert(k, v) => prop_assert_eq!(dense.insert(k, v), model.insert(k, v)),
                        Op::Remove(k) => prop_assert_eq!(dense.remove(&k), model.remove(&k)),
                        Op::InsertIfGreater(k, v) => {
                            let inserted = dense.insert_if(k, |x| *x == k, || k, |old| old.is_none_or(|o| *o < v), || v);
                            let expected = model.get(&k).is_none_or(|o| *o < v);
                            if expected {
                                model.insert(k, v);
                            }
                            prop_assert_eq!(inserted, expected);
                        }
                    }
                    prop_assert_eq!(dense.len(), model.len());
                }
                for k in 0..=u8::MAX {
                    prop_assert_eq!(dense.get(k, |x| *x == k), model.get(&k));
                }
                let mut all: Vec<(u8, u32)> = dense.iter().map(|(k, v)| (*k, *v)).collect();
                all.sort_unstable();
                prop_assert_eq!(all, model.into_iter().collect::<Vec<_>>());
            }
        }
    }
}
