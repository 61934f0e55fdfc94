//! Which records of a table read from Kinesis a replay applies to its
//! source tables: only a change newer than every change its item has
//! taken, so that the table holds each item's newest change, whatever the
//! order of delivery (see the module doc of `runner::replay`).
//!
//! An item takes two kinds of change: the recording's own, and the
//! pipeline's writes fed back, stamped after the newest creation time the
//! recording has shown. A record is newest when it is newer than both (but
//! a node's deletion, which stands over the pipeline's later updates of
//! the node: see `Local::is_newest`), so the two are kept apart:
//!
//! - [`Recorded`]: each item's newest recorded change. It depends on the
//!   records alone, in order, so replay's reading thread keeps it while it
//!   makes records ready, away from the handling thread.
//! - [`Stamped`]: each item's newest pipeline write, and the newest of all.
//!   A record newer than the newest of all (any record delivered in order)
//!   is newer than its item's without a lookup.

use model::config::Config;
use model::ledger::{Entry, ItemMap};
use model::record::{ChangeRecord, CreationTime};
use model::version::PackedVersion;
use model::Version;

type ByItem = ItemMap<PackedVersion>;

/// Notes `version` as `item`'s newest, unless a newer (or the same) one is
/// there; whether it did. One lookup finds the item or its place.
fn raise(map: &mut ByItem, item: &str, version: &Version) -> bool {
    let version = version.packed();
    match map.get_or_insert_with(item, || version) {
        (_, true) => true,
        (held, false) if *held >= version => false,
        (held, false) => {
            *held = version;
            true
        }
    }
}

/// Each item's newest change among the recording's records.
#[derive(Default)]
pub(super) struct Recorded {
    newest: ByItem,
}

impl Recorded {
    /// Whether the change `entry` is newer than every recorded change of
    /// its item before it; notes it.
    pub(super) fn is_newer(&mut self, entry: &Entry) -> bool {
        raise(&mut self.newest, &entry.item, &entry.version)
    }
}

/// The pipeline's writes of tables read from Kinesis, as a replay stamps
/// them.
#[derive(Default)]
pub(super) struct Stamped {
    /// Each item's newest pipeline write.
    newest: ByItem,
    /// The newest pipeline write of all.
    latest: Option<Version>,
    /// The newest creation time the recording has shown, and the
    /// pipeline's writes since.
    now: Option<CreationTime>,
    written: u32,
    /// A buffer for an item's text.
    item: String,
}

impl Stamped {
    /// Notes the creation time of a recorded change (of a table read from
    /// Kinesis).
    pub(super) fn saw(&mut self, created: Option<CreationTime>) {
        if let Some(created) = created {
            if self.now.is_none_or(|now| created > now) {
                self.now = Some(created);
                self.written = 0;
            }
        }
    }

    /// Whether the recorded change of version `version` is newer than the
    /// pipeline's writes of its item (`item`: its text, made only when
    /// they are looked up).
    pub(super) fn is_newer(&self, version: &Version, item: &str) -> bool {
        self.is_newer_than_all(version) || self.newest.get(item).is_none_or(|held| version.packed() > *held)
    }

    /// Whether the recorded change of version `version` is newer than
    /// every pipeline write (then no item's need be looked up).
    pub(super) fn is_newer_than_all(&self, version: &Version) -> bool {
        self.latest.as_ref().is_none_or(|latest| version > latest)
    }

    /// Forgets the pipeline's writes of `item` (they came to nothing: see
    /// `Local::is_newest`).
    pub(super) fn forget(&mut self, item: &str) {
        self.newest.remove(item);
    }

    /// `record`, a write of the pipeline's own, with a creation time after
    /// the newest seen (a microsecond apart from the one before), for a
    /// table read from Kinesis. The write is the item's newest change: a
    /// late record of an older one is not applied over it.
    pub(super) fn stamp(&mut self, config: &Config, mut record: ChangeRecord) -> ChangeRecord {
        let Ok(table) = config.table_of_record(&record) else {
            return record;
        };
        if let (true, Some(now)) = (table.stream.is_unordered(), self.now) {
            self.written += 1;
            let nanos = u64::from(now.nanos) + u64::from(self.written) * 1000;
            record.created = Some(CreationTime {
                seconds: now.seconds + i64::try_from(nanos / 1_000_000_000).unwrap_or(0),
                nanos: u32::try_from(nanos % 1_000_000_000).unwrap_or(0),
            });
            if let Ok(version) = model::version::of_record(&record, table.stream) {
                // The item's text in a buffer kept: a new item's alone is kept.
                let mut item = std::mem::take(&mut self.item);
                model::ledger::write_item(table, &record.keys, &mut item);
                self.wrote(&item, &version);
                self.item = item;
            }
        }
        record
    }

    /// Notes the pipeline's write of `item` at `version`.
    fn wrote(&mut self, item: &str, version: &Version) {
        if self.latest.as_ref().is_none_or(|latest| version > latest) {
            self.latest = Some(version.clone());
        }
        raise(&mut self.newest, item, version);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use model::testing::ledger_entry as entry;

    proptest! {
        /// Kept apart, the recorded changes and the pipeline's writes say
        /// of every recorded change what one map of each item's newest
        /// change of either kind says: whether it is newer than all
        /// before it. Versions are drawn in any order, repeats included.
        #[test]
        fn apart_they_answer_as_one_map_of_every_change(
            changes in proptest::collection::vec((any::<bool>(), 0u8..4, 0u16..40), 0..200),
        ) {
            let (mut recorded, mut stamped) = (Recorded::default(), Stamped::default());
            let mut newest: BTreeMap<String, Version> = BTreeMap::new();
            for (written, item, version) in changes {
                let entry = entry(item, version);
                let expected = newest_of(&mut newest, &entry);
                if written {
                    stamped.wrote(&entry.item, &entry.version);
                } else {
                    let newer = recorded.is_newer(&entry);
                    prop_assert_eq!(newer && stamped.is_newer(&entry.version, &entry.item), expected, "{:?}", entry);
                }
            }
        }
    }

    /// Whether `entry` is newer than every change of its item in
    /// `newest`; notes it there.
    fn newest_of(newest: &mut BTreeMap<String, Version>, entry: &Entry) -> bool {
        let newer = newest.get(&entry.item).is_none_or(|held| entry.version > *held);
        if newer {
            newest.insert(entry.item.clone(), entry.version.clone());
        }
        newer
    }
}
