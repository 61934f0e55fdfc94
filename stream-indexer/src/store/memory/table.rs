//! One source table of the in-memory store: items by partition key in a
//! hash map (a Query or a point read is one hash, where a B-tree of the
//! whole table compares long keys a dozen times), and within a partition a
//! vector sorted by sort key, as DynamoDB keeps them (a partition holds a
//! node and its edges: a few items; a vector costs far less memory than a
//! tree). Whole-table reads (Scan, dumps) sort the partition keys when they
//! ask. Items are kept [`Packed`].

use foldhash::HashMap;

use super::packed::Packed;
use super::{ItemKey, KeyValue};

/// The items of one partition, sorted by sort key (`None` for a table
/// without one).
type Partition = Vec<(Option<KeyValue>, Packed)>;

/// Where an item goes: the item there, or room for one.
pub(super) enum Slot<'a> {
    Occupied(&'a mut Packed),
    Vacant(Vacant<'a>),
}

pub(super) struct Vacant<'a> {
    items: &'a mut Partition,
    at: usize,
    sort: Option<KeyValue>,
}

impl Vacant<'_> {
    pub(super) fn insert(self, item: Packed) {
        self.items.insert(self.at, (self.sort, item));
    }
}

fn find(items: &Partition, sort: &Option<KeyValue>) -> Result<usize, usize> {
    items.binary_search_by(|(s, _)| s.cmp(sort))
}

#[derive(Default)]
pub(super) struct Table {
    partitions: HashMap<KeyValue, Partition>,
}

impl Table {
    pub(super) fn get(&self, key: &ItemKey) -> Option<&Packed> {
        let items = self.partitions.get(&key.partition)?;
        find(items, &key.sort)
            .ok()
            .and_then(|at| items.get(at))
            .map(|(_, item)| item)
    }

    pub(super) fn get_mut(&mut self, key: &ItemKey) -> Option<&mut Packed> {
        let items = self.partitions.get_mut(&key.partition)?;
        let at = find(items, &key.sort).ok()?;
        items.get_mut(at).map(|(_, item)| item)
    }

    /// The slot of `key`: the item there, or room for one (a vacant slot
    /// left unfilled leaves an empty partition, which reads skip).
    pub(super) fn slot(&mut self, key: ItemKey) -> Slot<'_> {
        let items = self.partitions.entry(key.partition).or_default();
        match find(items, &key.sort) {
            Ok(at) => Slot::Occupied(&mut items[at].1), // found there
            Err(at) => Slot::Vacant(Vacant {
                items,
                at,
                sort: key.sort,
            }),
        }
    }

    pub(super) fn remove(&mut self, key: &ItemKey) -> Option<Packed> {
        let items = self.partitions.get_mut(&key.partition)?;
        let at = find(items, &key.sort).ok()?;
        let (_, item) = items.remove(at);
        if items.is_empty() {
            self.partitions.remove(&key.partition);
        }
        Some(item)
    }

    /// The items of one partition, in sort-key order.
    pub(super) fn partition(&self, partition: &KeyValue) -> impl Iterator<Item = &Packed> {
        self.partitions
            .get(partition)
            .into_iter()
            .flatten()
            .map(|(_, item)| item)
    }

    /// Every item after `after` (from the first when `None`), in key order,
    /// with its key.
    pub(super) fn after<'a>(&'a self, after: Option<&'a ItemKey>) -> impl Iterator<Item = (ItemKey, &'a Packed)> + 'a {
        let mut keys: Vec<&KeyValue> = self.partitions.keys().collect();
        keys.sort_unstable();
        let start = after.map_or(0, |a| keys.partition_point(|k| *k < &a.partition));
        keys.into_iter().skip(start).flat_map(move |partition| {
            let items = self.partitions.get(partition).into_iter().flat_map(move |p| {
                let from = match after.filter(|a| &a.partition == partition) {
                    Some(a) => p.partition_point(|(s, _)| s <= &a.sort),
                    None => 0,
                };
                p[from..].iter().map(|(sort, item)| (sort, item))
            });
            items.map(move |(sort, item)| {
                (
                    ItemKey {
                        partition: partition.clone(),
                        sort: sort.clone(),
                    },
                    item,
                )
            })
        })
    }

    /// The key of every item that has a sort key, in no order: `(partition, sort)`.
    pub(super) fn sorted_keys(&self) -> impl Iterator<Item = (&KeyValue, &KeyValue)> {
        self.partitions.iter().flat_map(|(partition, items)| {
            items
                .iter()
                .filter_map(move |(sort, _)| Some((partition, sort.as_ref()?)))
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
            if let Slot::Vacant(slot) = table.slot(key(p, s)) {
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
}
