//! One source table of the in-memory store: items by partition key in a
//! hash map (a Query or a point read is one hash, where a B-tree of the
//! whole table compares long keys a dozen times), and within a partition a
//! vector sorted by sort key, as DynamoDB keeps them (a partition holds a
//! node and its edges: a few items; a vector costs far less memory than a
//! tree). Whole-table reads (Scan, dumps) sort the partition keys when they
//! ask. Items are kept [`Packed`].
//!
//! Keys are held in the map's slots and the partitions' vectors themselves
//! ([`Held`], up to 56 bytes inline: the example's node ids are 41, its
//! edges' sort keys 56), not as strings elsewhere: finding an item compares
//! keys in lines the lookup reads anyway. As strings, each compare would
//! load a line of its own, a cost that grows faster than the history (see
//! `docs/PERFORMANCE.md`).

use std::hash::{Hash, Hasher};

use hashbrown::{Equivalent, HashMap};
use smallvec::SmallVec;

use super::packed::Packed;
use super::{ItemKey, KeyValue};

/// A key value's type, in [`KeyValue`]'s order of variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    S,
    N,
    B,
}

/// A key value, borrowed: a point read by it makes no key (a set update
/// reads its node by the node's text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct KeyRef<'a> {
    kind: Kind,
    bytes: &'a [u8],
}

/// A key value as the table holds it: its type and its bytes, inline up to
/// 56 bytes. Hashes as its [`KeyRef`] does, and orders as its
/// [`KeyValue`] does (by type, then bytes; a test checks both).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Held {
    kind: Kind,
    bytes: SmallVec<[u8; 56]>,
}

impl KeyValue {
    fn as_key_ref(&self) -> KeyRef<'_> {
        let (kind, bytes) = match self {
            KeyValue::S(s) => (Kind::S, s.as_bytes()),
            KeyValue::N(n) => (Kind::N, n.as_bytes()),
            KeyValue::B(b) => (Kind::B, b.as_slice()),
        };
        KeyRef { kind, bytes }
    }
}

impl KeyRef<'_> {
    fn held(self) -> Held {
        Held {
            kind: self.kind,
            bytes: SmallVec::from_slice(self.bytes),
        }
    }
}

impl Held {
    fn as_key_ref(&self) -> KeyRef<'_> {
        KeyRef {
            kind: self.kind,
            bytes: &self.bytes,
        }
    }

    /// The key value again (an S or N was a string, so its bytes are text).
    fn value(&self) -> KeyValue {
        let text = || String::from_utf8_lossy(&self.bytes).into_owned();
        match self.kind {
            Kind::S => KeyValue::S(text()),
            Kind::N => KeyValue::N(text()),
            Kind::B => KeyValue::B(self.bytes.to_vec()),
        }
    }
}

impl Hash for KeyRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u8(self.kind as u8);
        state.write(self.bytes);
    }
}

impl Hash for Held {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_key_ref().hash(state);
    }
}

impl Equivalent<Held> for KeyRef<'_> {
    fn equivalent(&self, key: &Held) -> bool {
        *self == key.as_key_ref()
    }
}

/// The items of one partition, sorted by sort key (`None` for a table
/// without one).
type Partition = Vec<(Option<Held>, Packed)>;

/// Where an item goes: the item there, or room for one.
pub(super) enum Slot<'a> {
    Occupied(&'a mut Packed),
    Vacant(Vacant<'a>),
}

pub(super) struct Vacant<'a> {
    items: &'a mut Partition,
    at: usize,
    sort: Option<Held>,
}

impl Vacant<'_> {
    pub(super) fn insert(self, item: Packed) {
        self.items.insert(self.at, (self.sort, item));
    }
}

/// Where the item of sort key `sort` is in `items`, or would go.
fn find(items: &Partition, sort: Option<KeyRef<'_>>) -> Result<usize, usize> {
    items.binary_search_by(|(s, _)| s.as_ref().map(Held::as_key_ref).cmp(&sort))
}

/// The sort key of `key`, borrowed.
fn sort_of(key: &ItemKey) -> Option<KeyRef<'_>> {
    key.sort.as_ref().map(KeyValue::as_key_ref)
}

#[derive(Default)]
pub(super) struct Table {
    partitions: HashMap<Held, Partition, foldhash::fast::RandomState>,
}

impl Table {
    pub(super) fn get(&self, key: &ItemKey) -> Option<&Packed> {
        let items = self.partitions.get(&key.partition.as_key_ref())?;
        find(items, sort_of(key))
            .ok()
            .and_then(|at| items.get(at))
            .map(|(_, item)| item)
    }

    /// Node `node`: the item whose partition and sort keys are both the
    /// string `node`.
    pub(super) fn node_mut(&mut self, node: &str) -> Option<&mut Packed> {
        let node = KeyRef {
            kind: Kind::S,
            bytes: node.as_bytes(),
        };
        let items = self.partitions.get_mut(&node)?;
        let at = find(items, Some(node)).ok()?;
        items.get_mut(at).map(|(_, item)| item)
    }

    /// The slot of `key`: the item there, or room for one (a vacant slot
    /// left unfilled leaves an empty partition, which reads skip).
    pub(super) fn slot(&mut self, key: &ItemKey) -> Slot<'_> {
        // Held inline, the key costs a copy, not an allocation.
        let items = self.partitions.entry(key.partition.as_key_ref().held()).or_default();
        let sort = sort_of(key);
        match find(items, sort) {
            Ok(at) => Slot::Occupied(&mut items[at].1), // found there
            Err(at) => Slot::Vacant(Vacant {
                items,
                at,
                sort: sort.map(KeyRef::held),
            }),
        }
    }

    pub(super) fn remove(&mut self, key: &ItemKey) -> Option<Packed> {
        let partition = key.partition.as_key_ref();
        let items = self.partitions.get_mut(&partition)?;
        let at = find(items, sort_of(key)).ok()?;
        let (_, item) = items.remove(at);
        if items.is_empty() {
            self.partitions.remove(&partition);
        }
        Some(item)
    }

    /// The items of one partition, in sort-key order.
    pub(super) fn partition(&self, partition: &KeyValue) -> impl Iterator<Item = &Packed> {
        self.partitions
            .get(&partition.as_key_ref())
            .into_iter()
            .flatten()
            .map(|(_, item)| item)
    }

    /// Every item after `after` (from the first when `None`), in key order,
    /// with its key.
    pub(super) fn after<'a>(&'a self, after: Option<&'a ItemKey>) -> impl Iterator<Item = (ItemKey, &'a Packed)> + 'a {
        let mut keys: Vec<&Held> = self.partitions.keys().collect();
        keys.sort_unstable();
        let after = after.map(|a| (a.partition.as_key_ref(), sort_of(a)));
        let start = after.map_or(0, |(p, _)| keys.partition_point(|k| k.as_key_ref() < p));
        keys.into_iter().skip(start).flat_map(move |partition| {
            let items = self.partitions.get(partition).into_iter().flat_map(move |p| {
                let from = match after.filter(|(a, _)| *a == partition.as_key_ref()) {
                    Some((_, sort)) => p.partition_point(|(s, _)| s.as_ref().map(Held::as_key_ref) <= sort),
                    None => 0,
                };
                p[from..].iter()
            });
            items.map(move |(sort, item)| {
                (
                    ItemKey {
                        partition: partition.value(),
                        sort: sort.as_ref().map(Held::value),
                    },
                    item,
                )
            })
        })
    }

    /// The key of every item that has a sort key, in no order: `(partition, sort)`.
    pub(super) fn sorted_keys(&self) -> impl Iterator<Item = (KeyValue, KeyValue)> + '_ {
        self.partitions.iter().flat_map(|(partition, items)| {
            items
                .iter()
                .filter_map(move |(sort, _)| Some((partition.value(), sort.as_ref()?.value())))
        })
    }

    /// Every item, in key order.
    pub(super) fn values(&self) -> impl Iterator<Item = &Packed> {
        self.after(None).map(|(_, item)| item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::Image;

    fn key(p: &str, s: &str) -> ItemKey {
        ItemKey {
            partition: KeyValue::S(p.to_owned()),
            sort: Some(KeyValue::S(s.to_owned())),
        }
    }

    fn item(p: &str, s: &str) -> Image {
        Image::from([("k".to_owned(), model::Value::S(format!("{p}/{s}")))])
    }

    fn names<'a>(items: impl Iterator<Item = &'a Packed>) -> Vec<String> {
        items
            .map(|i| match i.get("k") {
                Some(model::Value::S(s)) => s,
                _ => String::new(),
            })
            .collect()
    }

    #[test]
    fn items_in_key_order_by_partition_and_after_a_key() {
        let mut table = Table::default();
        for (p, s) in [("b", "2"), ("a", "9"), ("b", "1"), ("c", "1"), ("a", "0")] {
            if let Slot::Vacant(slot) = table.slot(&key(p, s)) {
                slot.insert(Packed::pack(&item(p, s)));
            }
        }
        assert_eq!(names(table.values()), ["a/0", "a/9", "b/1", "b/2", "c/1"]);
        assert_eq!(names(table.partition(&KeyValue::S("b".into()))), ["b/1", "b/2"]);
        let (a9, b1) = (key("a", "9"), key("b", "1"));
        assert_eq!(names(table.after(Some(&a9)).map(|(_, i)| i)), ["b/1", "b/2", "c/1"]);
        assert_eq!(names(table.after(Some(&b1)).map(|(_, i)| i)), ["b/2", "c/1"]);
        assert_eq!(table.remove(&key("c", "1")).map(|p| p.unpack()), Some(item("c", "1")));
        assert!(table.remove(&key("c", "1")).is_none());
        assert_eq!(names(table.values()), ["a/0", "a/9", "b/1", "b/2"]);
        assert!(table.get(&key("a", "0")).is_some() && table.get(&key("a", "1")).is_none());
    }

    #[test]
    fn a_node_is_found_by_its_text_and_an_edge_is_not_a_node() {
        let mut table = Table::default();
        for (p, s) in [("n1", "n1"), ("n1", "n2"), ("n2", "n1")] {
            if let Slot::Vacant(slot) = table.slot(&key(p, s)) {
                slot.insert(Packed::pack(&item(p, s)));
            }
        }
        let found = |table: &mut Table, node: &str| table.node_mut(node).map(|p| p.unpack());
        assert_eq!(found(&mut table, "n1"), Some(item("n1", "n1")));
        // n2 has an edge in its partition, but no node.
        assert_eq!(found(&mut table, "n2"), None);
        assert_eq!(found(&mut table, "n3"), None);
    }

    fn key_value() -> impl proptest::strategy::Strategy<Value = KeyValue> {
        use proptest::prelude::*;
        prop_oneof![
            "[a-c]{0,3}".prop_map(KeyValue::S),
            "[0-9]{0,3}".prop_map(KeyValue::N),
            proptest::collection::vec(0u8..3, 0..3).prop_map(KeyValue::B),
        ]
    }

    proptest::proptest! {
        /// A held key hashes as its borrowed form and orders as the owned
        /// value: the table finds by it what it finds by the owned key, and
        /// lists in the owned keys' order; and it gives that value back.
        #[test]
        fn a_held_key_hashes_as_borrowed_and_orders_as_the_owned_value(a in key_value(), b in key_value(), long in "[a-c]{50,70}") {
            use std::hash::BuildHasher;
            let state = foldhash::fast::FixedState::with_seed(7);
            for value in [a.clone(), KeyValue::S(long.clone()), KeyValue::B(long.clone().into_bytes())] {
                let held = value.as_key_ref().held();
                proptest::prop_assert_eq!(state.hash_one(&held), state.hash_one(value.as_key_ref()));
                proptest::prop_assert_eq!(held.value(), value);
            }
            let (ha, hb) = (a.as_key_ref().held(), b.as_key_ref().held());
            proptest::prop_assert_eq!(a.cmp(&b), ha.cmp(&hb));
            proptest::prop_assert_eq!(a.cmp(&b), a.as_key_ref().cmp(&b.as_key_ref()));
            proptest::prop_assert_eq!(a == b, a.as_key_ref().equivalent(&hb));
        }
    }
}
