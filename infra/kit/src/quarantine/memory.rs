//! An in-memory [`Quarantine`] for tests and replays: it keeps the entries,
//! and can be told to fail (to test that a record whose quarantine failed is
//! reported as failed, never dropped).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use model::fault::Fault;

use super::{Quarantine, QuarantineEntry};

/// Keeps quarantined entries in memory.
#[derive(Debug, Default)]
pub struct MemoryQuarantine {
    entries: Mutex<Vec<QuarantineEntry>>,
    failing: AtomicBool,
    fail_next: AtomicUsize,
    calls: AtomicUsize,
}

impl MemoryQuarantine {
    pub fn new() -> MemoryQuarantine {
        MemoryQuarantine::default()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<QuarantineEntry>> {
        self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every entry quarantined so far, oldest first.
    pub fn entries(&self) -> Vec<QuarantineEntry> {
        self.lock().clone()
    }

    /// Takes the entries quarantined so far.
    pub fn take(&self) -> Vec<QuarantineEntry> {
        std::mem::take(&mut *self.lock())
    }

    /// Makes every `put` fail (`true`) or succeed again (`false`).
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }

    /// Makes the next `n` calls of `put` fail.
    pub fn fail_next(&self, n: usize) {
        self.fail_next.store(n, Ordering::SeqCst);
    }

    /// How many times `put` was called.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Quarantine for MemoryQuarantine {
    async fn put(&self, entries: Vec<QuarantineEntry>) -> Result<(), Fault> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let scheduled = self
            .fail_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if scheduled || self.failing.load(Ordering::SeqCst) {
            return Err(Fault::transient("the memory quarantine was told to fail"));
        }
        self.lock().extend(entries);
        Ok(())
    }
}
