//! Index row writes of a whole batch: packed across partition-key groups
//! into `write_rows` calls ([`Packer`]), sent concurrently ([`write_all`]).
//!
//! # Packing
//!
//! The writes come in batch order (records in stream order, each record's
//! writes in plan order). Each joins the earliest call that
//!
//! 1. comes after every call holding an earlier write to the same row key,
//! 2. and holds fewer than [`MAX_BATCH_WRITES`] writes,
//!
//! or a new call at the end. So a call never holds two writes to one key
//! (BatchWriteItem refuses that), the writes to one key sit in calls of
//! increasing position, and a call is left short only if every write after
//! it repeats a key of a later call (in practice: only the last calls). Rows
//! of different groups never share a key, so the writes of different groups
//! commute and fill the same calls; a record's writes may spread over
//! several calls.
//!
//! # Sending
//!
//! A call holding a write to a key also written by an earlier call depends
//! on that call ([`Packed::after`]): it is sent only once the earlier one has
//! succeeded, so the writes to one key land in stream order. Calls whose
//! dependencies have succeeded are sent lowest first, at most `concurrency`
//! at a time. A call that fails for good leaves its writes not done; the
//! calls depending on it (directly or not) are never sent, and their writes
//! are not done either. Every other call still goes out.
//!
//! # One call
//!
//! `UnprocessedItems` are resent after a backoff; the attempt count restarts
//! whenever an attempt makes progress, and the call fails after
//! `max_attempts` attempts in a row without any. A `Transient` error is
//! retried the same way; a `Deployment` error fails the call at once. A
//! refused call of several writes is split into one call per write to find
//! the culprit; a refused single write makes its record a refusal, and the
//! call goes on.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{Hash, Hasher};

use futures::stream::{FuturesUnordered, StreamExt};
use model::config::Config;
use model::index::RowKey;

use super::{pause, Backoff, Progress, MAX_BATCH_WRITES};
use crate::schedule::Schedule;
use crate::store::{RowWrite, Store, StoreError};

/// One planned `write_rows` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Packed<T> {
    /// Its writes: distinct keys, at most [`MAX_BATCH_WRITES`], in the
    /// order they were pushed.
    pub writes: Vec<T>,
    /// Earlier calls holding the previous write to one of its keys (distinct).
    pub after: Vec<usize>,
}

/// What the packer needs of a write: the index table and key of its row.
pub(super) trait Row {
    fn row(&self) -> (usize, &RowKey);
}

impl Row for (usize, RowWrite) {
    fn row(&self) -> (usize, &RowKey) {
        (self.1.index, &self.1.key)
    }
}

/// Fills calls with writes pushed in batch order. See the module doc.
pub(super) struct Packer<T> {
    calls: Vec<Packed<T>>,
    /// Key (fingerprint) → the call holding its latest write. Two keys
    /// sharing a fingerprint are merely kept apart like one key (a later
    /// call, a dependency): never two writes to one key in a call, whatever
    /// the fingerprints.
    last: HashMap<u64, usize>,
    /// Every call before this one is full.
    first_open: usize,
}

impl<T> Default for Packer<T> {
    fn default() -> Self {
        Packer {
            calls: Vec::new(),
            last: HashMap::new(),
            first_open: 0,
        }
    }
}

fn fingerprint(index: usize, key: &RowKey) -> u64 {
    let mut h = DefaultHasher::new();
    (index, key).hash(&mut h);
    h.finish()
}

impl<T: Row> Packer<T> {
    /// Adds a write.
    pub fn push(&mut self, item: T) {
        let (index, key) = item.row();
        let key = fingerprint(index, key);
        let previous = self.last.get(&key).copied();
        let floor = previous.map_or(self.first_open, |p| (p + 1).max(self.first_open));
        let calls = &mut self.calls;
        let at = match (floor..calls.len()).find(|&c| calls[c].writes.len() < MAX_BATCH_WRITES) {
            Some(at) => at,
            None => {
                calls.push(Packed {
                    writes: Vec::with_capacity(MAX_BATCH_WRITES),
                    after: Vec::new(),
                });
                calls.len() - 1
            }
        };
        let call = &mut calls[at];
        call.writes.push(item);
        if let Some(p) = previous {
            if !call.after.contains(&p) {
                call.after.push(p);
            }
        }
        self.last.insert(key, at);
        while calls
            .get(self.first_open)
            .is_some_and(|c| c.writes.len() >= MAX_BATCH_WRITES)
        {
            self.first_open += 1;
        }
    }

    /// The calls, in order.
    pub fn finish(self) -> Vec<Packed<T>> {
        self.calls
    }
}

/// A call that was never sent: an earlier write to one of its keys failed.
fn blocked(error: &StoreError) -> StoreError {
    let why = |message: &str| format!("not sent: an earlier write to one of its rows failed ({message})");
    match error {
        StoreError::Transient(m) => StoreError::Transient(why(m)),
        StoreError::Refused(m) => StoreError::Refused(why(m)),
        StoreError::Deployment(m) => StoreError::Deployment(why(m)),
    }
}

/// Sends the packed calls (writes as `(record, write)`). See the module doc.
pub(super) async fn write_all<S: Store>(
    store: &S,
    config: &Config,
    backoff: &Backoff,
    concurrency: usize,
    mut packed: Vec<Packed<(usize, RowWrite)>>,
) -> Progress {
    let mut schedule = Schedule::new(packed.iter().map(|call| call.after.as_slice()));
    let mut sent = vec![false; packed.len()];
    // Per call that failed for good (or was blocked): the error at the root.
    let mut failed: Vec<Option<StoreError>> = vec![None; packed.len()];
    let mut progress = Progress::default();
    let mut in_flight = FuturesUnordered::new();
    loop {
        while in_flight.len() < concurrency.max(1) {
            let Some(i) = schedule.pop_ready() else { break };
            sent[i] = true;
            let call = std::mem::take(&mut packed[i].writes);
            in_flight.push(async move { (i, send_call(store, config, backoff, call).await) });
        }
        let Some((i, (call_progress, result))) = in_flight.next().await else {
            break;
        };
        progress.absorb(call_progress);
        match result {
            Ok(()) => schedule.succeeded(i),
            Err(error) => failed[i] = Some(error),
        }
    }
    // The calls never sent, in order: each is blocked by an earlier call it
    // depends on that failed (or was blocked itself).
    for (i, call) in packed.iter().enumerate() {
        if sent[i] {
            continue;
        }
        let cause = call.after.iter().find_map(|&d| failed[d].clone());
        let cause = cause.unwrap_or_else(|| StoreError::Transient("a call it depends on was not sent".to_owned()));
        let error = blocked(&cause);
        for (record, _) in &call.writes {
            progress.unfinished.push((*record, error.clone()));
        }
        failed[i] = Some(cause);
    }
    progress
}

/// Sends one packed call until every write in it is done (applied or
/// refused), or it fails for good: then its writes not done are reported.
async fn send_call<S: Store>(
    store: &S,
    config: &Config,
    backoff: &Backoff,
    writes: Vec<(usize, RowWrite)>,
) -> (Progress, Result<(), StoreError>) {
    let mut call = Call {
        store,
        config,
        backoff,
        queue: VecDeque::from([writes]),
        progress: Progress::default(),
    };
    let result = call.run().await;
    if let Err(error) = &result {
        for (record, _) in call.queue.iter().flatten() {
            call.progress.unfinished.push((*record, error.clone()));
        }
    }
    (call.progress, result)
}

struct Call<'a, S> {
    store: &'a S,
    config: &'a Config,
    backoff: &'a Backoff,
    /// Requests to make: the call, or its writes one by one after a refusal.
    queue: VecDeque<Vec<(usize, RowWrite)>>,
    progress: Progress,
}

impl<S: Store> Call<'_, S> {
    fn index_name(&self, index: usize) -> &str {
        self.config.indexes.get(index).map_or("?", |i| i.name.as_str())
    }

    fn row_done(&mut self, record: usize, write: &RowWrite) {
        self.progress.done.push(record);
        match write.put {
            Some(_) => self.progress.stats.applied.put_row += 1,
            None => self.progress.stats.applied.delete_row += 1,
        }
    }

    /// Works through the queue; on failure the writes not done stay in it.
    async fn run(&mut self) -> Result<(), StoreError> {
        while let Some(batch) = self.queue.pop_front() {
            self.request(batch).await?;
        }
        Ok(())
    }

    /// One request, resent until its writes are done; on failure the writes
    /// left go back to the front of the queue.
    async fn request(&mut self, mut batch: Vec<(usize, RowWrite)>) -> Result<(), StoreError> {
        // Attempts in a row without progress.
        let mut stalled = 0u32;
        while !batch.is_empty() {
            self.progress.stats.requests.write_rows += 1;
            let writes: Vec<RowWrite> = batch.iter().map(|(_, w)| w.clone()).collect();
            let error = match self.store.write_rows(writes).await {
                Ok(unprocessed) => {
                    let before = batch.len();
                    batch = self.keep_unprocessed(batch, &unprocessed);
                    if batch.is_empty() {
                        break;
                    }
                    stalled = if batch.len() < before { 0 } else { stalled + 1 };
                    if stalled < self.backoff.attempts() {
                        self.progress.stats.unprocessed += batch.len();
                        self.progress.stats.requests.retries += 1;
                        pause(self.backoff.delay(stalled)).await;
                        continue;
                    }
                    StoreError::Transient(format!(
                        "{} index row writes still unprocessed after {stalled} attempts without progress",
                        batch.len()
                    ))
                }
                Err(StoreError::Transient(message)) => {
                    stalled += 1;
                    if stalled < self.backoff.attempts() {
                        self.progress.stats.requests.retries += 1;
                        pause(self.backoff.delay(stalled - 1)).await;
                        continue;
                    }
                    StoreError::Transient(format!("{message} (gave up after {stalled} attempts)"))
                }
                Err(StoreError::Refused(_)) if batch.len() > 1 => {
                    // Find the culprit: each write alone.
                    for single in batch.drain(..).rev() {
                        self.queue.push_front(vec![single]);
                    }
                    break;
                }
                Err(StoreError::Refused(message)) => {
                    for (record, write) in std::mem::take(&mut batch) {
                        let what = if write.put.is_some() { "put" } else { "delete" };
                        let reason = format!(
                            "index `{}`: row {what} refused: {message}",
                            self.index_name(write.index)
                        );
                        self.progress.refuse(record, reason);
                    }
                    break;
                }
                Err(error @ StoreError::Deployment(_)) => error,
            };
            self.queue.push_front(batch);
            return Err(error);
        }
        Ok(())
    }

    /// Marks the writes not in `unprocessed` done; returns the others.
    fn keep_unprocessed(&mut self, batch: Vec<(usize, RowWrite)>, unprocessed: &[RowWrite]) -> Vec<(usize, RowWrite)> {
        let left: HashSet<(usize, &RowKey)> = unprocessed.iter().map(|w| (w.index, &w.key)).collect();
        let mut kept = Vec::with_capacity(left.len());
        for (record, write) in batch {
            if left.contains(&(write.index, &write.key)) {
                kept.push((record, write));
            } else {
                self.row_done(record, &write);
            }
        }
        kept
    }
}

#[cfg(test)]
mod tests;
