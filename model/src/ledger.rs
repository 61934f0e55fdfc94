//! The change ledger: what the router notes of the changes it handled
//! from a Kinesis data stream, which may deliver a change more than once
//! and out of order. One ledger entry per change: the item (its table and
//! key), and the change's version (its creation time, see
//! [`crate::version`]). Pure; `event-router` reads and writes the ledger
//! table (`[events] ledger_table`).
//!
//! - The router publishes a change's events only if the ledger has no
//!   entry for it: a repeat publishes nothing (and is counted). It notes
//!   the change once its events are published.
//! - The reaper deletes an edge of an expired node only if no change of
//!   the edge newer than the expiry is in the ledger: every change of an
//!   item it may delete ([`reaper_reads`]: any item of a table it reaps but
//!   a node) is noted, with events or not.
//!
//! Nothing else is noted: a change without events of another table, or of
//! a node (its repeat has nothing to drop, and the reaper never deletes a
//! node). So the pipeline's own set updates of nodes are not noted either.
//!
//! An entry lives as long as the stream can deliver its change again: its
//! creation time plus the stream's retention (`expires`, the ledger
//! table's TTL attribute).

mod items;

pub use items::ItemMap;

use crate::config::{ChangeSource, Config, TableConfig};
use crate::record::{ChangeRecord, CreationTime};
use crate::value::Attrs;
use crate::value::{Attr, Scalar};
use crate::version::{self, Version};

/// The ledger table's partition key (S): the item, see [`item_of`].
pub const ITEM_ATTRIBUTE: &str = "item";
/// The ledger table's sort key (S): the change's version, [`version::WIDTH`] digits.
pub const VERSION_ATTRIBUTE: &str = "version";
/// The ledger table's TTL attribute (N, epoch seconds).
pub const EXPIRES_ATTRIBUTE: &str = "expires";

/// Whether the reaper may read when the item with these `keys`, of
/// `table`, last changed: it may delete any item of a table it reaps
/// ([`Config::reaps`]) found in an expired node's partition or pointing at
/// it, but a node (`crate::reap::deletions`).
pub fn reaper_reads<I: Attrs>(config: &Config, table: &TableConfig, keys: &I) -> bool {
    config.reaps(&table.name) && !crate::edge::is_node(config, table, keys)
}

/// One change, as the ledger knows it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Entry {
    /// The item: see [`item_of`].
    pub item: String,
    pub version: Version,
    /// When the entry may go (epoch seconds).
    pub expires: u64,
}

/// The item a change is of: its table and its key values, as one text:
/// `TABLE`, then per key attribute, in key order, a newline and `S` with
/// the string's length, `:` and the string (no two keys give one text), or
/// `N:` and the number in its canonical form (`1.0` is `1`).
pub fn item_of<I: Attrs>(table: &TableConfig, keys: &I) -> String {
    let mut item = String::new();
    write_item(table, keys, &mut item);
    item
}

/// [`item_of`], written into `item` (emptied first): a caller that only
/// looks items up keeps one buffer.
pub fn write_item<I: Attrs>(table: &TableConfig, keys: &I, item: &mut String) {
    // Each key attribute's value, looked up once.
    let values = [Some(table.partition_key.as_str()), table.sort_key.as_deref()].map(|name| name.map(|n| keys.get(n)));
    // Room for the whole text at once: each key's value, and its type,
    // length and separators.
    let room: usize = values
        .iter()
        .flatten()
        .flatten()
        .map(|value| match value.scalar() {
            Scalar::S(text) | Scalar::N(text) => text.len() + 8,
            _ => 0,
        })
        .sum();
    item.clear();
    item.reserve(table.name.len() + room);
    item.push_str(&table.name);
    for value in values.into_iter().flatten() {
        item.push('\n');
        let Some(value) = value else { continue };
        match value.scalar() {
            Scalar::S(text) => {
                item.push('S');
                item.push_str(itoa::Buffer::new().format(text.len()));
                item.push(':');
                item.push_str(text);
            }
            Scalar::N(number) => {
                item.push_str("N:");
                match crate::sortkey::canonical_number(number) {
                    Ok(canonical) => item.push_str(&canonical),
                    Err(_) => item.push_str(number),
                }
            }
            _ => item.push_str(&serde_json::to_string(&value.to_value()).unwrap_or_default()),
        }
    }
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
        item: item_of(table, &record.keys),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{KinesisSource, Precision};
    use crate::value::{Image, Value};

    fn table() -> TableConfig {
        TableConfig {
            name: "t".to_owned(),
            partition_key: "pk".to_owned(),
            sort_key: Some("sk".to_owned()),
            ttl_attribute: None,
            stream: ChangeSource::Kinesis(KinesisSource {
                precision: Precision::Microsecond,
                retention_hours: 24,
            }),
        }
    }

    fn keys(pk: Value, sk: Value) -> Image {
        Image::from([("pk".to_owned(), pk), ("sk".to_owned(), sk)])
    }

    #[test]
    fn an_item_is_its_table_and_key_values_numbers_by_value() {
        let t = table();
        let s = |v: &str| Value::S(v.to_owned());
        let n = |v: &str| Value::N(v.to_owned());
        assert_eq!(item_of(&t, &keys(s("a"), s("b"))), "t\nS1:a\nS1:b");
        assert_eq!(item_of(&t, &keys(s("a"), n("1.0"))), item_of(&t, &keys(s("a"), n("1"))));
        assert_ne!(item_of(&t, &keys(s("a"), n("1"))), item_of(&t, &keys(s("a"), s("1"))));
        assert_ne!(
            item_of(&t, &keys(s("a\nS1:b"), s("c"))),
            item_of(&t, &keys(s("a"), s("b\nS1:c")))
        );
    }

    #[test]
    fn only_a_kinesis_read_record_has_an_entry_that_outlives_the_retention() {
        let mut t = table();
        let record = ChangeRecord {
            event_id: None,
            kind: crate::EventKind::Insert,
            table: Some("t".into()),
            source_arn: None,
            keys: keys(Value::S("a".to_owned()), Value::S("b".to_owned())),
            old: None,
            new: None,
            sequence_number: "1".to_owned(),
            created: Some(CreationTime {
                seconds: 1_700_000_000,
                nanos: 5_000,
            }),
            size_bytes: None,
            view_type: None,
            ttl_expiry: false,
        };
        let entry = entry_of(&t, &record).map(|e| (e.version.to_string(), e.expires));
        assert_eq!(entry, Some(("1700000000000005".to_owned(), 1_700_000_000 + 25 * 3600)));
        t.stream = ChangeSource::DynamoDb;
        assert_eq!(entry_of(&t, &record), None);
    }
}
