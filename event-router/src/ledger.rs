//! The `Ledger` port: the changes the router published from a Kinesis
//! data stream (see `model::ledger`). [`dynamo`] keeps them in the ledger
//! table; [`MemoryLedger`] in memory (replays, local runs, tests).
//!
//! A small object-safe trait: the router and the reaper hold it as
//! `Arc<dyn Ledger>`, and only where the config reads a table from Kinesis.

pub mod dynamo;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use model::ledger::Entry;
use model::{Fault, Version};

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

/// A ledger in memory: each item's versions noted.
#[derive(Debug, Default)]
pub struct MemoryLedger {
    entries: Mutex<HashMap<String, Vec<Version>>>,
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
        self.lock().values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Version>>> {
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Ledger for MemoryLedger {
    fn holds<'a>(&'a self, entries: &'a [Entry]) -> LedgerFuture<'a, Vec<bool>> {
        let held = self.lock();
        let answer = entries
            .iter()
            .map(|e| held.get(&e.item).is_some_and(|versions| versions.contains(&e.version)))
            .collect();
        Box::pin(async move { Ok(answer) })
    }

    fn note<'a>(&'a self, entries: &'a [Entry]) -> LedgerFuture<'a, ()> {
        let mut held = self.lock();
        for entry in entries {
            let versions = held.entry(entry.item.clone()).or_default();
            if !versions.contains(&entry.version) {
                versions.push(entry.version.clone());
            }
        }
        drop(held);
        Box::pin(async { Ok(()) })
    }

    fn newest<'a>(&'a self, item: &'a str) -> LedgerFuture<'a, Option<Version>> {
        let newest = self
            .lock()
            .get(item)
            .and_then(|versions| versions.iter().max().cloned());
        Box::pin(async move { Ok(newest) })
    }
}
