//! The source tables' items: PutItem (whole, keeping stored attributes, or
//! made ready ahead), DeleteItem, GetItem, and the reads tests and replay
//! make of a table.

use model::config::TableConfig;
use model::value::Attrs;
use model::Image;

use super::packed::Packed;
use super::sort_index::SortIndex;
use super::{item_key, key_image, table, table_entry, ItemKey, KeyValue, MemoryError, MemoryStore, Origin, ReadyItem};

impl MemoryStore {
    /// The primary key of `item` (or of a key image) in `table`.
    pub fn item_key<I: Attrs>(&self, table: &str, item: &I) -> Result<ItemKey, MemoryError> {
        item_key(self.table(table)?, item)
    }

    /// PutItem: replaces the whole item. Returns the old item.
    pub fn put_item(&self, table: &str, item: Image) -> Result<Option<Image>, MemoryError> {
        Ok(self.put(table, &item, &[])?.map(|old| old.unpack()))
    }

    /// PutItem that keeps the stored values of the `keep` attributes the
    /// item lacks (as an UpdateItem of the item's other attributes would).
    pub fn put_item_keeping<I: Attrs>(&self, table: &str, item: &I, keep: &[&str]) -> Result<(), MemoryError> {
        self.put(table, item, keep).map(drop)
    }

    /// [`MemoryStore::put_item_keeping`] of an item made ready ahead: its
    /// key and stored form are taken from `ready` (made afresh if it was
    /// made for another config), unless stored attributes are kept.
    pub fn put_ready_keeping<I: Attrs>(
        &self,
        table: &str,
        item: &I,
        ready: ReadyItem,
        keep: &[&str],
    ) -> Result<(), MemoryError> {
        let t = self.table(table)?;
        if !ready.made_for(t) {
            return self.put(table, item, keep).map(drop);
        }
        self.put_keyed(t, item, keep, ready.key, Some(ready.packed)).map(drop)
    }

    /// [`MemoryStore::put_item_keeping`], returning the old item as stored.
    fn put<I: Attrs>(&self, table: &str, item: &I, keep: &[&str]) -> Result<Option<Packed>, MemoryError> {
        let t = self.table(table)?;
        self.put_keyed(t, item, keep, item_key(t, item)?, None)
    }

    /// [`MemoryStore::put`] of the item at `key`, `packed` when given.
    fn put_keyed<I: Attrs>(
        &self,
        t: &TableConfig,
        item: &I,
        keep: &[&str],
        key: ItemKey,
        packed: Option<Packed>,
    ) -> Result<Option<Packed>, MemoryError> {
        let table = t.name.as_str();
        let mut state = self.lock();
        let state = &mut *state;
        let recording = state.stream.is_some();
        // One lookup: the entry, whether the item is new or replaced.
        let old = match table_entry(&mut state.tables, table).slot(&key) {
            table::Slot::Occupied(stored) => {
                let kept: Vec<&str> = keep.iter().copied().filter(|name| !item.contains_key(name)).collect();
                let entries: Vec<&[u8]> = kept.iter().filter_map(|name| stored.entry(name)).collect();
                let packed = match packed {
                    Some(packed) if entries.is_empty() => packed,
                    _ => Packed::pack_with(item, &entries),
                };
                let new = recording.then(|| {
                    let mut new = item.to_image();
                    for name in &kept {
                        if let Some(value) = stored.get(name) {
                            new.insert((*name).to_owned(), value);
                        }
                    }
                    new
                });
                let old = std::mem::replace(stored, packed);
                if let Some(new) = new {
                    let old_item = old.unpack();
                    if old_item != new {
                        state.record(table, key_image(t, item), Some(old_item), Some(new), Origin::User);
                    }
                }
                Some(old)
            }
            table::Slot::Vacant(vacant) => {
                // A new item: the sort-key index learns it (a replaced one
                // is there already).
                if let (
                    ItemKey {
                        partition,
                        sort: Some(sort),
                    },
                    Some(index),
                ) = (key, state.by_sort.get_mut(table))
                {
                    index.insert(sort, partition);
                }
                vacant.insert(packed.unwrap_or_else(|| Packed::pack(item)));
                if recording {
                    state.record(table, key_image(t, item), None, Some(item.to_image()), Origin::User);
                }
                None
            }
        };
        Ok(old)
    }

    /// DeleteItem by key (an image holding at least the key attributes).
    /// Returns the deleted item.
    pub fn delete_item(&self, table: &str, key: &Image) -> Result<Option<Image>, MemoryError> {
        Ok(self.delete(table, key, true)?.and_then(|deleted| deleted))
    }

    /// DeleteItem by key, for a caller that does not want the deleted item:
    /// whether there was one. The item is unpacked only for its stream
    /// record, when one is recorded (a node's is as long as its edge set).
    pub fn remove_item<I: Attrs>(&self, table: &str, key: &I) -> Result<bool, MemoryError> {
        Ok(self.delete(table, key, false)?.is_some())
    }

    /// Deletes the item at `key`: `None` when there was none, else the
    /// item when `wanted`.
    fn delete<I: Attrs>(&self, table: &str, key: &I, wanted: bool) -> Result<Option<Option<Image>>, MemoryError> {
        let t = self.table(table)?;
        let item_key = item_key(t, key)?;
        let mut state = self.lock();
        let Some(old) = state.tables.get_mut(table).and_then(|items| items.remove(&item_key)) else {
            return Ok(None);
        };
        if let (Some(sort), Some(index)) = (&item_key.sort, state.by_sort.get_mut(table)) {
            index.remove(sort, &item_key.partition);
        }
        if state.stream.is_none() {
            return Ok(Some(wanted.then(|| old.unpack())));
        }
        let old = old.unpack();
        let returned = wanted.then(|| old.clone());
        state.record(table, key_image(t, key), Some(old), None, Origin::User);
        Ok(Some(returned))
    }

    /// GetItem by key.
    pub fn get_item(&self, table: &str, key: &Image) -> Result<Option<Image>, MemoryError> {
        let item_key = self.item_key(table, key)?;
        Ok(self
            .lock()
            .tables
            .get(table)
            .and_then(|items| items.get(&item_key))
            .map(Packed::unpack))
    }

    /// Every item of a source table, in key order.
    pub fn items(&self, table: &str) -> Vec<Image> {
        self.lock()
            .tables
            .get(table)
            .map(|items| items.values().map(Packed::unpack).collect())
            .unwrap_or_default()
    }

    /// The items of one partition of a source table (a String partition key
    /// value), in key order: a range of the table, not a scan.
    pub fn partition_items(&self, table: &str, partition: &str) -> Vec<Image> {
        let value = KeyValue::S(partition.to_owned());
        self.lock()
            .tables
            .get(table)
            .map(|items| items.partition(&value).map(Packed::unpack).collect())
            .unwrap_or_default()
    }

    /// The items of a source table whose sort key is the string `value`, in
    /// key order: what a GSI keyed by the sort key finds (an index made on
    /// the table's first such read and kept as the items are written from
    /// then on, so it is a lookup, not a scan).
    pub fn items_by_sort_key(&self, table: &str, value: &str) -> Vec<Image> {
        let value = KeyValue::S(value.to_owned());
        let mut state = self.lock();
        let state = &mut *state;
        let Some(items) = state.tables.get(table) else {
            return Vec::new();
        };
        let index = state
            .by_sort
            .entry(table.to_owned())
            .or_insert_with(|| SortIndex::of(items));
        index
            .partitions(&value)
            .into_iter()
            .filter_map(|partition| {
                items
                    .get(&ItemKey {
                        partition: partition.clone(),
                        sort: Some(value.clone()),
                    })
                    .map(Packed::unpack)
            })
            .collect()
    }
}
