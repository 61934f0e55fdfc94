//! A source item made ready for the store away from it: on another thread,
//! ahead of the batch that writes it (replay's reading thread does this
//! while the store handles the batch before). Finding the item's key and
//! packing it depend on the item and its table's config alone; only
//! placing it needs the store.

use model::config::TableConfig;
use model::value::Attrs;

use super::packed::Packed;
use super::{item_key, ItemKey, MemoryError};

/// An item's key and stored form, for [`super::MemoryStore::put_ready_keeping`].
pub struct ReadyItem {
    /// The address of the table config it was made with: a store with
    /// another config makes the item afresh.
    pub(super) table: usize,
    pub(super) key: ItemKey,
    pub(super) packed: Packed,
}

impl ReadyItem {
    /// `item` made ready for `table`; the error a put would give when it
    /// lacks a key attribute.
    pub fn new<I: Attrs>(table: &TableConfig, item: &I) -> Result<ReadyItem, MemoryError> {
        Ok(ReadyItem {
            table: address(table),
            key: item_key(table, item)?,
            packed: Packed::pack(item),
        })
    }

    /// Whether it was made with this table config.
    pub(super) fn made_for(&self, table: &TableConfig) -> bool {
        self.table == address(table)
    }
}

fn address(table: &TableConfig) -> usize {
    std::ptr::from_ref(table) as usize
}
