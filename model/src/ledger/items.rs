//! A map from items (the texts [`super::item_of`] makes) to a value each,
//! for what is kept per item for a whole stream: the ledger in memory, and
//! replay's newest change per item. The items' texts sit one after another
//! in one string, and the table holds where each is, so a new item costs
//! its bytes and a slot, not an allocation of its own; an item removed
//! leaves its text behind (removals are rare where this map is used).

use std::hash::BuildHasher;

use hashbrown::hash_table::{Entry, HashTable};

/// Each item's value (see the module doc).
pub struct ItemMap<V> {
    slots: HashTable<Slot<V>>,
    /// Every item's text, one after another.
    texts: String,
    hasher: foldhash::fast::RandomState,
}

/// An item: where its text is in `texts`, and its value.
struct Slot<V> {
    start: usize,
    len: usize,
    value: V,
}

impl<V> Default for ItemMap<V> {
    fn default() -> Self {
        ItemMap {
            slots: HashTable::new(),
            texts: String::new(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }
}

/// The text of the item in `slot`.
fn text<'t, V>(texts: &'t str, slot: &Slot<V>) -> &'t str {
    texts.get(slot.start..slot.start + slot.len).unwrap_or_default()
}

impl<V> ItemMap<V> {
    /// The value of `item`.
    pub fn get(&self, item: &str) -> Option<&V> {
        let hash = self.hasher.hash_one(item);
        self.slots
            .find(hash, |slot| text(&self.texts, slot) == item)
            .map(|slot| &slot.value)
    }

    /// The value of `item`, made by `make` when the item is new; and
    /// whether it was. One lookup finds the item or its place.
    pub fn get_or_insert_with(&mut self, item: &str, make: impl FnOnce() -> V) -> (&mut V, bool) {
        let (texts, hasher) = (&self.texts, &self.hasher);
        let hash = hasher.hash_one(item);
        let entry = self.slots.entry(
            hash,
            |slot| text(texts, slot) == item,
            |slot| hasher.hash_one(text(texts, slot)),
        );
        match entry {
            Entry::Occupied(slot) => (&mut slot.into_mut().value, false),
            Entry::Vacant(place) => {
                let start = self.texts.len();
                self.texts.push_str(item);
                let slot = place.insert(Slot {
                    start,
                    len: item.len(),
                    value: make(),
                });
                (&mut slot.into_mut().value, true)
            }
        }
    }

    /// Removes `item`; its value.
    pub fn remove(&mut self, item: &str) -> Option<V> {
        let hash = self.hasher.hash_one(item);
        let texts = &self.texts;
        let (slot, _) = self
            .slots
            .find_entry(hash, |slot| text(texts, slot) == item)
            .ok()?
            .remove();
        Some(slot.value)
    }

    /// How many items it holds.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Every value, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.slots.iter().map(|slot| &slot.value)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    enum Op {
        /// Adds to the item's value (made 0 when new).
        Add(String, u32),
        Remove(String),
    }

    /// Items that share prefixes and may be empty, so that texts side by
    /// side could be mistaken for one another.
    fn item() -> impl Strategy<Value = String> {
        prop_oneof![Just(String::new()), "[ab]{1,3}", "t\nS[0-9]:[ab]{0,4}"]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (item(), 0u32..100).prop_map(|(i, n)| Op::Add(i, n)),
            1 => item().prop_map(Op::Remove),
        ]
    }

    proptest! {
        /// Any sequence of updates and removals leaves what a `BTreeMap`
        /// given the same leaves, and every call answers as it does.
        #[test]
        fn behaves_as_a_map(ops in proptest::collection::vec(op(), 0..300), asked in proptest::collection::vec(item(), 1..20)) {
            let mut map = ItemMap::default();
            let mut model: BTreeMap<String, u32> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Add(item, n) => {
                        let (value, new) = map.get_or_insert_with(&item, || 0);
                        prop_assert_eq!(new, !model.contains_key(&item));
                        *value += n;
                        *model.entry(item).or_insert(0) += n;
                    }
                    Op::Remove(item) => prop_assert_eq!(map.remove(&item), model.remove(&item)),
                }
                prop_assert_eq!(map.len(), model.len());
            }
            for item in &asked {
                prop_assert_eq!(map.get(item), model.get(item));
            }
            let mut values: Vec<u32> = map.values().copied().collect();
            let mut expected: Vec<u32> = model.values().copied().collect();
            values.sort_unstable();
            expected.sort_unstable();
            prop_assert_eq!(values, expected);
        }
    }
}
