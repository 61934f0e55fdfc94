//! An in-memory [`Publisher`] for tests and replays: it keeps what was
//! published, and can be told to fail whole calls or single entries.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

use super::{Entry, EntryResult, PublishError, Publisher, MAX_ENTRIES};

/// Decides, per entry sent, an error code to fail it with (`None`: publish).
pub type EntryFaults = Box<dyn FnMut(&Entry) -> Option<String> + Send>;

#[derive(Default)]
struct State {
    published: Vec<Entry>,
    calls: Vec<usize>,
    call_faults: VecDeque<PublishError>,
    entry_faults: Option<EntryFaults>,
}

/// Keeps published entries in memory.
#[derive(Default)]
pub struct MemoryPublisher {
    state: Mutex<State>,
}

impl std::fmt::Debug for MemoryPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("MemoryPublisher")
            .field("published", &state.published.len())
            .field("calls", &state.calls.len())
            .finish()
    }
}

impl MemoryPublisher {
    pub fn new() -> MemoryPublisher {
        MemoryPublisher::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every entry published so far, in the order they were accepted.
    pub fn published(&self) -> Vec<Entry> {
        self.lock().published.clone()
    }

    /// Takes the entries published so far.
    pub fn take(&self) -> Vec<Entry> {
        std::mem::take(&mut self.lock().published)
    }

    /// The number of entries of each call made so far (failed ones too).
    pub fn calls(&self) -> Vec<usize> {
        self.lock().calls.clone()
    }

    /// Makes the next calls fail as a whole, one error each, in order.
    pub fn fail_calls(&self, errors: impl IntoIterator<Item = PublishError>) {
        self.lock().call_faults.extend(errors);
    }

    /// Fails the entries `faults` names a code for (every later call asks it).
    pub fn fail_entries(&self, faults: impl FnMut(&Entry) -> Option<String> + Send + 'static) {
        self.lock().entry_faults = Some(Box::new(faults));
    }
}

impl Publisher for MemoryPublisher {
    async fn put_events(&self, entries: &[&Entry]) -> Result<Vec<EntryResult>, PublishError> {
        let mut state = self.lock();
        state.calls.push(entries.len());
        if entries.is_empty() || entries.len() > MAX_ENTRIES {
            return Err(PublishError::refused(format!(
                "PutEvents takes 1 to {MAX_ENTRIES} entries, not {}",
                entries.len()
            )));
        }
        if let Some(error) = state.call_faults.pop_front() {
            return Err(error);
        }
        let mut results = Vec::with_capacity(entries.len());
        for entry in entries {
            let code = state.entry_faults.as_mut().and_then(|f| f(entry));
            match code {
                Some(code) => results.push(EntryResult::Failed {
                    message: format!("the memory publisher was told to fail with {code}"),
                    code,
                }),
                None => {
                    state.published.push((*entry).clone());
                    results.push(EntryResult::Published);
                }
            }
        }
        Ok(results)
    }
}
