//! The `Ledger` port: the changes the router published from a Kinesis
//! data stream (see `model::ledger`). [`dynamo`] keeps them in the ledger
//! table; [`MemoryLedger`] in memory (replays, local runs, tests).
//!
//! A small object-safe trait: the router and the reaper hold it as
//! `Arc<dyn Ledger>`, and only where the config reads a table from Kinesis.

pub mod dynamo;

use std::future::Future;
use std::hash::BuildHasher;
use std::pin::Pin;
use std::sync::Mutex;

use hashbrown::hash_table::HashTable;
use model::ledger::Entry;
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

/// A ledger in memory: each item's versions noted, in order.
#[derive(Default)]
pub struct MemoryLedger {
    entries: Mutex<Entries>,
}

impl std::fmt::Debug for MemoryLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryLedger")
            .field("items", &self.lock().items.len())
            .finish()
    }
}

/// Each item noted, with its versions noted, sorted and distinct (most
/// items have one, held inline; an item changed often has many, found by
/// binary search). A table of its own, each entry with its item's hash: a
/// note hashes the item once, to find it or to place it.
#[derive(Default)]
struct Entries {
    items: HashTable<Noted>,
    hasher: foldhash::fast::RandomState,
}

struct Noted {
    hash: u64,
    item: Box<str>,
    versions: SmallVec<[Version; 1]>,
}

impl Entries {
    fn get(&self, item: &str) -> Option<&Noted> {
        let hash = self.hasher.hash_one(item);
        self.items.find(hash, |n| n.hash == hash && *n.item == *item)
    }

    /// The versions noted of `item`, made empty when it is new.
    fn versions_mut(&mut self, item: &str) -> &mut SmallVec<[Version; 1]> {
        let hash = self.hasher.hash_one(item);
        let noted = self
            .items
            .entry(hash, |n| n.hash == hash && *n.item == *item, |n| n.hash)
            .or_insert_with(|| Noted {
                hash,
                item: item.into(),
                versions: SmallVec::new(),
            });
        &mut noted.into_mut().versions
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
        self.lock().items.iter().map(|n| n.versions.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Ledger for MemoryLedger {
    fn holds<'a>(&'a self, entries: &'a [Entry]) -> LedgerFuture<'a, Vec<bool>> {
        let held = self.lock();
        let answer = entries
            .iter()
            .map(|e| {
                held.get(e.item.as_str())
                    .is_some_and(|n| n.versions.binary_search(&e.version).is_ok())
            })
            .collect();
        Box::pin(async move { Ok(answer) })
    }

    fn note<'a>(&'a self, entries: &'a [Entry]) -> LedgerFuture<'a, ()> {
        let mut held = self.lock();
        for entry in entries {
            let versions = held.versions_mut(&entry.item);
            if let Err(at) = versions.binary_search(&entry.version) {
                versions.insert(at, entry.version.clone());
            }
        }
        drop(held);
        Box::pin(async { Ok(()) })
    }

    fn newest<'a>(&'a self, item: &'a str) -> LedgerFuture<'a, Option<Version>> {
        let newest = self.lock().get(item).and_then(|n| n.versions.last().cloned());
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
