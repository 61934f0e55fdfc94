//! The index rows of the in-memory store: a hash map for the writes (one
//! hash of the key per write, where a B-tree compares long keys a dozen
//! times; a [`DenseMap`], so that churn does not grow it), and the rows' key
//! order, built when a scan or a dump asks for it and kept until the next
//! write.
//!
//! Every row carries its version; a deleted row stays as a tombstone (its
//! version and expiry), absent to every read but [`Rows::version`] and the
//! stored images a scan returns (as DynamoDB returns them).

use smallvec::SmallVec;

use super::dense::DenseMap;

use model::index::RowKey;
use model::version::{TOMBSTONE_ATTRIBUTE, VERSION_ATTRIBUTE};
use model::{Image, Projection, Value, Version};

/// One row as stored: live (its projection) or a tombstone.
#[derive(Debug, Clone)]
pub(super) struct Stored {
    pub(super) version: Version,
    /// `None`: a tombstone, expiring at `expires` (epoch seconds).
    pub(super) body: Option<Projection>,
    pub(super) expires: u64,
}

impl Stored {
    /// The item as DynamoDB holds it, but the key attributes.
    pub(super) fn image(&self) -> Image {
        let mut image = self.body.as_deref().cloned().unwrap_or_default();
        image.insert(VERSION_ATTRIBUTE.to_owned(), Value::S(self.version.as_str().to_owned()));
        if self.body.is_none() {
            image.insert(TOMBSTONE_ATTRIBUTE.to_owned(), Value::N(self.expires.to_string()));
        }
        image
    }
}

/// A row's key as the map holds it: the index's position, and the
/// partition and sort strings one after the other in one buffer, held in
/// the entry up to 56 bytes (the example's keys are 50 to 60). A lookup
/// compares the key in the entry it reads already, not in two strings
/// elsewhere (two more lines loaded from memory, each a `memcmp` that
/// waits on them).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    index: usize,
    /// The partition string's length: where the sort string starts.
    split: usize,
    bytes: SmallVec<[u8; 56]>,
}

impl Key {
    fn new(index: usize, key: &RowKey) -> Key {
        let mut bytes = SmallVec::with_capacity(key.partition.len() + key.sort.len());
        bytes.extend_from_slice(key.partition.as_bytes());
        bytes.extend_from_slice(key.sort.as_bytes());
        Key {
            index,
            split: key.partition.len(),
            bytes,
        }
    }

    fn is(&self, index: usize, key: &RowKey) -> bool {
        let (partition, sort) = self.bytes.split_at(self.split.min(self.bytes.len()));
        self.index == index && partition == key.partition.as_bytes() && sort == key.sort.as_bytes()
    }

    /// The row key again (its two parts were strings, split where one
    /// ended, so the text is theirs).
    fn row_key(&self) -> (usize, RowKey) {
        let (partition, sort) = self.bytes.split_at(self.split.min(self.bytes.len()));
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        (
            self.index,
            RowKey {
                partition: text(partition),
                sort: text(sort),
            },
        )
    }
}

pub(super) struct Rows {
    map: DenseMap<Key, Stored>,
    /// Every key, sorted; `None` after a write.
    order: Option<Vec<(usize, RowKey)>>,
}

/// Rows that keep their tombstones: a map that only grows.
impl Default for Rows {
    fn default() -> Rows {
        Rows {
            map: DenseMap::growing(),
            order: None,
        }
    }
}

impl Rows {
    /// Rows whose deletes leave no tombstone ([`Rows::remove`]): a map
    /// whose size follows the live rows.
    pub(super) fn churning() -> Rows {
        Rows {
            map: DenseMap::default(),
            order: None,
        }
    }

    /// Whether no row or tombstone is stored.
    pub(super) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub(super) fn put(&mut self, index: usize, key: &RowKey, projection: Projection, version: Version) {
        let stored = Stored {
            version,
            body: Some(projection),
            expires: 0,
        };
        self.store(index, key, stored);
    }

    /// Replaces the row (if any) with a tombstone.
    pub(super) fn delete(&mut self, index: usize, key: &RowKey, version: Version, expires: u64) {
        let stored = Stored {
            version,
            body: None,
            expires,
        };
        self.store(index, key, stored);
    }

    /// Stores a row or tombstone at `key`, copying the key only when it is new.
    fn store(&mut self, index: usize, key: &RowKey, stored: Stored) {
        let is = |k: &Key| k.is(index, key);
        if self
            .map
            .insert_by((index, key), is, || Key::new(index, key), stored)
            .is_none()
        {
            self.order = None;
        }
    }

    /// Stores a row or tombstone at `key` only where `replaces` says yes
    /// of what is stored there (`None`: nothing): one lookup for both.
    /// Returns whether it stored.
    pub(super) fn store_if(
        &mut self,
        index: usize,
        key: &RowKey,
        replaces: impl FnOnce(Option<&Stored>) -> bool,
        stored: impl FnOnce() -> Stored,
    ) -> bool {
        let is = |k: &Key| k.is(index, key);
        let mut new = false;
        let make = || {
            new = true;
            Key::new(index, key)
        };
        let stored = self.map.insert_if((index, key), is, make, replaces, stored);
        if new {
            self.order = None;
        }
        stored
    }

    /// Removes the row (if any), leaving no tombstone.
    pub(super) fn remove(&mut self, index: usize, key: &RowKey) {
        if self.map.remove_by((index, key), |k| k.is(index, key)).is_some() {
            self.order = None;
        }
    }

    /// The version stored at `key`: the row's or its tombstone's.
    pub(super) fn version(&self, index: usize, key: &RowKey) -> Option<&Version> {
        self.get_stored(index, key).map(|s| &s.version)
    }

    fn get_stored(&self, index: usize, key: &RowKey) -> Option<&Stored> {
        find(&self.map, index, key)
    }

    /// A live row.
    #[cfg(test)]
    pub(super) fn get(&self, index: usize, key: RowKey) -> Option<&Projection> {
        self.get_stored(index, &key).and_then(|s| s.body.as_ref())
    }

    /// A row or tombstone as stored.
    pub(super) fn stored(&self, index: usize, key: RowKey) -> Option<&Stored> {
        self.get_stored(index, &key)
    }

    /// Every row and tombstone of `index` after `after` (from the first when
    /// `None`), in key order.
    pub(super) fn stored_after(
        &mut self,
        index: usize,
        after: Option<&RowKey>,
    ) -> impl Iterator<Item = (&RowKey, &Stored)> + '_ {
        let map = &self.map;
        let order = self.order.get_or_insert_with(|| {
            let mut keys: Vec<(usize, RowKey)> = map.iter().map(|(k, _)| k.row_key()).collect();
            keys.sort_unstable();
            keys
        });
        let start = match after {
            None => order.partition_point(|(i, _)| *i < index),
            Some(key) => order.partition_point(|(i, k)| (*i, k) <= (index, key)),
        };
        order[start..]
            .iter()
            .take_while(move |(i, _)| *i == index)
            .filter_map(move |(i, k)| find(map, *i, k).map(|row| (k, row)))
    }

    /// The live rows of `index` after `after`, in key order.
    pub(super) fn after(
        &mut self,
        index: usize,
        after: Option<&RowKey>,
    ) -> impl Iterator<Item = (&RowKey, &Projection)> + '_ {
        self.stored_after(index, after)
            .filter_map(|(key, stored)| stored.body.as_ref().map(|body| (key, body)))
    }

    /// Every live row, in key order.
    pub(super) fn sorted(&self) -> std::collections::BTreeMap<(usize, RowKey), Projection> {
        self.map
            .iter()
            .filter_map(|(k, v)| v.body.as_ref().map(|body| (k.row_key(), body.clone())))
            .collect()
    }

    /// How many tombstones are kept.
    pub(super) fn tombstones(&self) -> usize {
        self.map.iter().filter(|(_, s)| s.body.is_none()).count()
    }
}

/// The row or tombstone at `(index, key)`, looked up without cloning the key.
fn find<'a>(map: &'a DenseMap<Key, Stored>, index: usize, key: &RowKey) -> Option<&'a Stored> {
    map.get((index, key), |k| k.is(index, key))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn key(p: &str, s: &str) -> RowKey {
        RowKey {
            partition: p.to_owned(),
            sort: s.to_owned(),
        }
    }

    fn keys(rows: &mut Rows, index: usize, after: Option<&RowKey>) -> Vec<String> {
        rows.after(index, after)
            .map(|(k, _)| format!("{}/{}", k.partition, k.sort))
            .collect()
    }

    #[test]
    fn rows_come_in_key_order_per_index_and_the_order_follows_writes() {
        let mut rows = Rows::default();
        let p = Projection::default();
        for (i, part, sort) in [
            (1, "b", "2"),
            (0, "z", "1"),
            (1, "a", "9"),
            (1, "b", "1"),
            (2, "a", "1"),
        ] {
            rows.put(i, &key(part, sort), p.clone(), Version::zero());
        }
        assert_eq!(keys(&mut rows, 1, None), ["a/9", "b/1", "b/2"]);
        assert_eq!(keys(&mut rows, 1, Some(&key("a", "9"))), ["b/1", "b/2"]);
        assert_eq!(keys(&mut rows, 1, Some(&key("b", "2"))), Vec::<String>::new());
        assert_eq!(keys(&mut rows, 3, None), Vec::<String>::new());
        rows.delete(1, &key("b", "1"), Version::zero(), 0);
        rows.put(1, &key("a", "0"), p.clone(), Version::zero());
        assert_eq!(
            keys(&mut rows, 1, None),
            ["a/0", "a/9", "b/2"],
            "a write is seen by the next scan"
        );
        assert!(rows.get(0, key("z", "1")).is_some());
        assert_eq!(rows.sorted().len(), 5, "the tombstone is no row");
        assert_eq!(rows.tombstones(), 1);
        assert!(rows.get(1, key("b", "1")).is_none());
        assert_eq!(rows.version(1, &key("b", "1")), Some(&Version::zero()));
        assert_eq!(rows.stored_after(1, None).count(), 4, "a scan sees the tombstone");
    }

    #[test]
    fn a_held_key_is_only_its_own_index_partition_and_sort() {
        let held = Key::new(1, &key("ab", "c"));
        assert!(held.is(1, &key("ab", "c")));
        assert!(!held.is(1, &key("a", "bc")), "the same text split elsewhere");
        assert!(!held.is(1, &key("abc", "")));
        assert!(!held.is(0, &key("ab", "c")));
        assert!(!held.is(1, &key("ab", "cd")));
        let long = "é".repeat(60);
        let spilled = Key::new(3, &key(&long, "ß"));
        assert!(spilled.is(3, &key(&long, "ß")), "a key longer than the entry holds");
        assert_eq!(spilled.row_key(), (3, key(&long, "ß")));
        assert_eq!(held.row_key(), (1, key("ab", "c")));
    }

    #[test]
    fn keys_that_join_to_the_same_text_are_distinct_rows() {
        let mut rows = Rows::default();
        let long = "s".repeat(80);
        let projection = |text: &str| Projection::new(Image::from([("name", Value::S(text.to_owned()))]));
        let (a, b) = (projection("a"), projection("b"));
        rows.put(1, &key("ab", "c"), a.clone(), Version::zero());
        rows.put(1, &key("a", "bc"), b.clone(), Version::zero());
        rows.put(2, &key("ab", "c"), b.clone(), Version::zero());
        rows.put(1, &key("a", &long), a.clone(), Version::zero());
        assert_eq!(keys(&mut rows, 1, None), ["a/bc", format!("a/{long}").as_str(), "ab/c"]);
        assert!(Arc::ptr_eq(rows.get(1, key("ab", "c")).unwrap(), &a));
        assert!(Arc::ptr_eq(rows.get(1, key("a", "bc")).unwrap(), &b));
        assert!(Arc::ptr_eq(rows.get(2, key("ab", "c")).unwrap(), &b));
        assert!(rows.get(1, key("abc", "")).is_none());
        rows.remove(1, &key("ab", "c"));
        assert_eq!(keys(&mut rows, 1, None), ["a/bc", format!("a/{long}").as_str()]);
        assert_eq!(keys(&mut rows, 2, None), ["ab/c"]);
    }

    #[test]
    fn a_removed_row_leaves_no_tombstone_and_the_order_follows() {
        let mut rows = Rows::default();
        let p = Projection::default();
        rows.put(1, &key("a", "1"), p.clone(), Version::zero());
        rows.put(1, &key("a", "2"), p.clone(), Version::zero());
        assert_eq!(keys(&mut rows, 1, None), ["a/1", "a/2"]);
        rows.remove(1, &key("a", "1"));
        rows.remove(1, &key("z", "9"));
        assert_eq!(keys(&mut rows, 1, None), ["a/2"], "the scan after the removal");
        assert_eq!(rows.tombstones(), 0);
        assert_eq!(rows.version(1, &key("a", "1")), None, "nothing stored");
        assert_eq!(rows.stored_after(1, None).count(), 1);
    }
}
