//! The `Ledger` port: the changes the router published from a Kinesis
//! data stream (see `model::ledger`). [`dynamo`] keeps them in the ledger
//! table; [`MemoryLedger`] in memory (replays, local runs, tests).
//!
//! A small object-safe trait: the router and the reaper hold it as
//! `Arc<dyn Ledger>`, and only where the config reads a table from Kinesis.

pub mod dynamo;

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use model::ledger::{Entry, ItemMap};
use model::version::PackedVersion;
use model::{Fault, Version};
use smallvec::SmallVec;

/// What a ledger request returns.
pub type LedgerFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, Fault>> + Send + 'a>>;

/// Where the router notes the changes it published.
pub trait Ledger: Send + Sync {
    /// For each entry (distinct), whether the ledger holds it.
    fn holds<'a>(&'a self, entries: &'a [Entry]) -> LedgerFuture<'a, Vec<bool>>;
    /// Notes the entries.
    fn note<'a>(&'a self, entries: &'a [Entry]) -> LedgerFuture<'a, ()>;
    /// The newest version noted for `item` (`model::ledger::item_of`).
    fn newest<'a>(&'a self, item: &'a str) -> LedgerFuture<'a, Option<Version>>;
}

/// A ledger in memory: each item's versions noted, sorted and distinct
/// (most items have one, held inline; an item changed often has many,
/// found by binary search), packed (see `model::version::PackedVersion`).
#[derive(Default)]
pub struct MemoryLedger {
    entries: Mutex<ItemMap<Versions>>,
}

/// An item's versions noted.
type Versions = SmallVec<[PackedVersion; 1]>;

impl std::fmt::Debug for MemoryLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryLedger")
            .field("items", &self.lock().len())
            .finish()
    }
}

impl MemoryLedger {
    pub fn new() -> MemoryLedger {
        MemoryLedger::default()
    }

    /// A shared ledger in memory, when `config` reads a table from Kinesis.
    pub fn for_config(config: &model::Config) -> Option<std::sync::Arc<MemoryLedger>> {
        config.reads_kinesis().then(|| std::sync::Arc::new(MemoryLedger::new()))
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.lock().values().map(Versions::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ItemMap<Versions>> {
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Ledger for MemoryLedger {
    fn holds<'a>(&'a self, entries: &'a [Entry]) -> LedgerFuture<'a, Vec<bool>> {
        let held = self.lock();
        let answer = entries
            .iter()
            .map(|e| {
                held.get(&e.item)
                    .is_some_and(|versions| versions.binary_search(&e.version.packed()).is_ok())
            })
            .collect();
        Box::pin(async move { Ok(answer) })
    }

    fn note<'a>(&'a self, entries: &'a [Entry]) -> LedgerFuture<'a, ()> {
        let mut held = self.lock();
        for entry in entries {
            let version = entry.version.packed();
            let (versions, _) = held.get_or_insert_with(&entry.item, Versions::new);
            if let Err(at) = versions.binary_search(&version) {
                versions.insert(at, version);
            }
        }
        drop(held);
        Box::pin(async { Ok(()) })
    }

    fn newest<'a>(&'a self, item: &'a str) -> LedgerFuture<'a, Option<Version>> {
        let newest = self
            .lock()
            .get(item)
            .and_then(|versions| versions.last().map(PackedVersion::unpack));
        Box::pin(async move { Ok(newest) })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;

    use super::*;
    use model::testing::ledger_entry as entry;

    proptest! {
        /// What the ledger answers is what a set of every entry noted
        /// answers, whatever the order and repeats of the notes.
        #[test]
        fn the_memory_ledger_answers_as_the_set_of_entries_noted(
            notes in proptest::collection::vec(proptest::collection::vec((0u8..4, 0u8..30), 0..6), 0..12),
            asked in proptest::collection::vec((0u8..5, 0u8..31), 1..10),
        ) {
            let ledger = MemoryLedger::new();
            let mut noted: BTreeMap<String, BTreeSet<Version>> = BTreeMap::new();
            let runtime = tokio::runtime::Builder::new_current_thread().build()?;
            for note in &notes {
                let entries: Vec<Entry> = note.iter().map(|&(i, v)| entry(i, v.into())).collect();
                runtime.block_on(ledger.note(&entries))?;
                for e in entries {
                    noted.entry(e.item).or_default().insert(e.version);
                }
            }
            let asked: Vec<Entry> = asked.iter().map(|&(i, v)| entry(i, v.into())).collect();
            let held = runtime.block_on(ledger.holds(&asked))?;
            let expected: Vec<bool> = asked
                .iter()
                .map(|e| noted.get(&e.item).is_some_and(|v| v.contains(&e.version)))
                .collect();
            prop_assert_eq!(held, expected);
            for e in &asked {
                let newest = runtime.block_on(ledger.newest(&e.item))?;
                prop_assert_eq!(newest, noted.get(&e.item).and_then(|v| v.last().cloned()));
            }
            prop_assert_eq!(ledger.len(), noted.values().map(BTreeSet::len).sum::<usize>());
        }
    }
}
