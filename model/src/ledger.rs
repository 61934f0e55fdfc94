//! The change ledger: what the router notes of each change it handled from
//! a Kinesis data stream, which may deliver a change more than once and
//! out of order. One ledger entry per change: the item (its table and
//! key), and the change's version (its creation time, see
//! [`crate::version`]). Pure; `event-router` reads and writes the ledger
//! table (`[events] ledger_table`).
//!
//! - The router publishes a change's events only if the ledger has no
//!   entry for it: a repeat publishes nothing (and is counted). It notes
//!   the change once its events are published.
//! - The reaper deletes an edge of an expired node only if no change of
//!   the edge newer than the expiry is in the ledger.
//!
//! An entry lives as long as the stream can deliver its change again: its
//! creation time plus the stream's retention (`expires`, the ledger
//! table's TTL attribute).

use crate::config::{ChangeSource, TableConfig};
use crate::record::{ChangeRecord, CreationTime};
use crate::value::{Attrs, Image, Value};
use crate::version::{self, Version};

/// The ledger table's partition key (S): the item, see [`item_of`].
pub const ITEM_ATTRIBUTE: &str = "item";
/// The ledger table's sort key (S): the change's version, [`version::WIDTH`] digits.
pub const VERSION_ATTRIBUTE: &str = "version";
/// The ledger table's TTL attribute (N, epoch seconds).
pub const EXPIRES_ATTRIBUTE: &str = "expires";

/// One change, as the ledger knows it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Entry {
    /// The item: see [`item_of`].
    pub item: String,
    pub version: Version,
    /// When the entry may go (epoch seconds).
    pub expires: u64,
}

/// The item a change is of: its table and its key values, as one text
/// (`TABLE` and each key attribute's value in DynamoDB JSON, in key order,
/// joined by a newline, which no table name holds).
pub fn item_of(table: &TableConfig, keys: &Image) -> String {
    let mut item = table.name.clone();
    for name in table.primary_key() {
        item.push('\n');
        match keys.get(name) {
            Some(Value::S(text)) => {
                item.push_str("S:");
                item.push_str(text);
            }
            Some(Value::N(number)) => {
                item.push_str("N:");
                item.push_str(&crate::sortkey::canonical_number(number).unwrap_or_else(|_| number.clone()));
            }
            Some(other) => item.push_str(&serde_json::to_string(other).unwrap_or_default()),
            None => {}
        }
    }
    item
}

/// The ledger entry of `record`, a record of `table`: `None` unless the
/// table is read from a Kinesis data stream (and the record has a
/// creation time: every such record does, see [`crate::validate`]).
pub fn entry_of<I: Attrs>(table: &TableConfig, record: &ChangeRecord<I>) -> Option<Entry> {
    let ChangeSource::Kinesis(kinesis) = table.stream else {
        return None;
    };
    let created = record.created?;
    let version = version::of_record(record, table.stream).ok()?;
    Some(Entry {
        item: item_of(table, &record.keys.to_image()),
        version,
        expires: expires(created, kinesis.retention_hours),
    })
}

/// When an entry of a change created at `created` may go: once the stream
/// (keeping records `retention_hours`) can no longer deliver it.
pub fn expires(created: CreationTime, retention_hours: u32) -> u64 {
    u64::try_from(created.seconds)
        .unwrap_or_default()
        .saturating_add(u64::from(retention_hours) * 3600)
        .saturating_add(3600)
}
