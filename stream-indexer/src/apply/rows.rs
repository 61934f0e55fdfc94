//! Index row writes of a whole batch: packed across partition-key groups
//! into `write_rows` calls ([`Rows`], with `model::pack`), sent concurrently
//! ([`write_all`], with `aws_kit::dispatch`).
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
//! Under the one retry driver (`aws_kit::retry`): `UnprocessedItems` are
//! resent after a backoff; the attempt count restarts whenever an attempt
//! makes progress, and the call fails after `max_attempts` attempts in a row
//! without any. A transient fault is retried the same way; a deployment
//! fault fails the call at once. A
//! refused call of several writes is split into one call per write to find
//! the culprit; a refused single write makes its record a refusal, and the
//! call goes on.
//!
//! # Guarded writes
//!
//! Under a [`Guard`] other than `InOrder` (see `guard`), a call's writes go
//! as conditional PutItems sent together ([`Store::put_rows_if`]: they are to
//! distinct keys), under the same retry driver: those that failed
//! transiently are sent again, as `UnprocessedItems` are. A write whose
//! condition fails is done (skipped, counted in `stale`).

use std::cell::Cell;
use std::collections::{HashSet, VecDeque};
use std::hash::BuildHasher;

use aws_kit::dispatch::dispatch;
use aws_kit::retry::{Partial, Resend};
use model::config::Config;
use model::index::RowKey;
use model::pack::{Limits, Packed, Packer, SameKey};

use super::{Backoff, Progress, Stamping, MAX_BATCH_WRITES};
use crate::store::{RowWrite, Store, StoreError};

/// What one BatchWriteItem call may hold: distinct keys, at most 25 writes
/// (its request size is far under DynamoDB's limit for index rows).
const LIMITS: Limits = Limits {
    max_items: MAX_BATCH_WRITES,
    max_bytes: usize::MAX,
    same_key: SameKey::LaterCall,
};

/// A batch's row writes (as `(record, write)`), packed as they are pushed.
/// See the module doc.
pub(super) struct Rows {
    packer: Packer,
    /// Every write, until its call takes it.
    writes: Vec<Option<(usize, RowWrite)>>,
}

/// The largest writes buffer kept for the next batch (about 5 MB); one
/// made for a larger batch is freed with it.
const SPARE_MAX_WRITES: usize = 1 << 16;

thread_local! {
    /// The emptied writes buffer of the thread's last batch, for its next:
    /// made anew for each batch, it would come from fresh pages that the
    /// kernel faults in and zeroes.
    static SPARE: Cell<Vec<Option<(usize, RowWrite)>>> = const { Cell::new(Vec::new()) };
}

impl Default for Rows {
    fn default() -> Rows {
        Rows {
            packer: Packer::new(LIMITS),
            writes: SPARE.take(),
        }
    }
}

impl Rows {
    /// Adds the next write (batch order).
    pub fn push(&mut self, record: usize, write: RowWrite) {
        self.packer.push(fingerprint(write.index, &write.key), 0);
        self.writes.push(Some((record, write)));
    }

    /// The calls (positions into the writes), and the writes.
    pub fn finish(self) -> (Vec<Packed>, Vec<Option<(usize, RowWrite)>>) {
        (self.packer.finish(), self.writes)
    }
}

/// The packer's key of a row: two keys sharing a fingerprint are merely
/// kept apart like one key (a later call, a dependency), never two writes
/// to one key in a call, whatever the fingerprints.
pub(super) fn fingerprint(index: usize, key: &RowKey) -> u64 {
    FINGERPRINT.hash_one((index, key))
}

/// The fingerprints' hasher: fixed, so a batch packs the same way in every
/// process; fast, as any collision only keeps two writes apart.
const FINGERPRINT: foldhash::fast::FixedState = foldhash::fast::FixedState::with_seed(0x5eed);

/// Sends the packed calls. See the module doc.
pub(super) async fn write_all<S: Store>(
    store: &S,
    config: &Config,
    backoff: &Backoff,
    concurrency: usize,
    stamping: &Stamping,
    rows: Rows,
) -> Progress {
    let (calls, mut writes) = rows.finish();
    let mut take = |call: &Packed| -> Batch {
        call.items
            .iter()
            .filter_map(|&w| writes.get_mut(w).and_then(Option::take))
            .collect()
    };
    let results = dispatch(calls.iter().map(|c| c.after.as_slice()), concurrency, |i| {
        let call = calls.get(i).map(&mut take).unwrap_or_default();
        async move {
            let (progress, result) = send_call(store, config, backoff, stamping, call).await;
            let succeeded = result.is_ok();
            ((progress, result), succeeded)
        }
    })
    .await;
    let mut progress = Progress::default();
    // Per call that failed for good (or was blocked): the error at the root.
    let mut failed: Vec<Option<StoreError>> = vec![None; calls.len()];
    for (i, result) in results.into_iter().enumerate() {
        match result {
            Some((call_progress, result)) => {
                progress.absorb(call_progress);
                failed[i] = result.err();
            }
            None => {
                // Never sent: blocked by an earlier call it depends on that
                // failed (or was blocked itself); calls come in order.
                let cause = calls[i].after.iter().find_map(|&d| failed[d].clone());
                let cause = cause.unwrap_or_else(|| StoreError::transient("a call it depends on was not sent"));
                let error = cause
                    .clone()
                    .map_message(|m| format!("not sent: an earlier write to one of its rows failed ({m})"));
                for &record in &take(&calls[i]).records {
                    progress.unfinished.push((record, error.clone()));
                }
                failed[i] = Some(cause);
            }
        }
    }
    if writes.capacity() <= SPARE_MAX_WRITES {
        writes.clear();
        SPARE.set(writes);
    }
    progress
}

/// Sends one packed call until every write in it is done (applied or
/// refused), or it fails for good: then its writes not done are reported.
async fn send_call<S: Store>(
    store: &S,
    config: &Config,
    backoff: &Backoff,
    stamping: &Stamping,
    writes: Batch,
) -> (Progress, Result<(), StoreError>) {
    let mut call = Call {
        store,
        config,
        backoff,
        stamping,
        queue: VecDeque::from([writes]),
        progress: Progress::default(),
    };
    let result = call.run().await;
    if let Err(error) = &result {
        for &record in call.queue.iter().flat_map(|batch| &batch.records) {
            call.progress.unfinished.push((record, error.clone()));
        }
    }
    (call.progress, result)
}

struct Call<'a, S> {
    store: &'a S,
    config: &'a Config,
    backoff: &'a Backoff,
    stamping: &'a Stamping,
    /// Requests to make: the call, or its writes one by one after a refusal.
    queue: VecDeque<Batch>,
    progress: Progress,
}

/// Writes with the record of each, side by side, so that the writes are
/// lent to the store as they are (`&[RowWrite]`), never copied for a request.
#[derive(Debug, Default)]
struct Batch {
    records: Vec<usize>,
    writes: Vec<RowWrite>,
}

impl Batch {
    fn with_capacity(n: usize) -> Batch {
        Batch {
            records: Vec::with_capacity(n),
            writes: Vec::with_capacity(n),
        }
    }

    fn one(record: usize, write: RowWrite) -> Batch {
        Batch {
            records: vec![record],
            writes: vec![write],
        }
    }

    fn push(&mut self, record: usize, write: RowWrite) {
        self.records.push(record);
        self.writes.push(write);
    }

    fn len(&self) -> usize {
        self.writes.len()
    }

    fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    fn into_pairs(self) -> impl DoubleEndedIterator<Item = (usize, RowWrite)> {
        self.records.into_iter().zip(self.writes)
    }
}

impl FromIterator<(usize, RowWrite)> for Batch {
    /// Made at the size the pairs may reach (a call's writes, at most 25),
    /// not grown as they come.
    fn from_iter<T: IntoIterator<Item = (usize, RowWrite)>>(pairs: T) -> Batch {
        let pairs = pairs.into_iter();
        let (least, most) = pairs.size_hint();
        let mut batch = Batch::with_capacity(most.unwrap_or(least));
        for (record, write) in pairs {
            batch.push(record, write);
        }
        batch
    }
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

    /// A write DynamoDB refused: it counts as done, and its record carries why.
    fn row_refused(&mut self, record: usize, write: &RowWrite, error: &StoreError) {
        let what = if write.put.is_some() { "put" } else { "delete" };
        let context = format!("index `{}`: row {what} refused", self.index_name(write.index));
        self.progress.refuse(record, error.clone().context(context));
    }

    /// Works through the queue; on failure the writes not done stay in it.
    async fn run(&mut self) -> Result<(), StoreError> {
        while let Some(batch) = self.queue.pop_front() {
            if self.stamping.guard.is_guarded() {
                self.guarded(batch).await?;
            } else {
                self.request(batch).await?;
            }
        }
        Ok(())
    }

    /// One request, resent until its writes are done; on failure the writes
    /// left go back to the front of the queue.
    async fn request(&mut self, batch: Batch) -> Result<(), StoreError> {
        let mut resend = Resend::new(self.backoff, batch, Batch::len);
        let mut partial = false;
        while let Some((attempt, batch)) = resend.next_attempt() {
            if attempt > 0 {
                self.progress.stats.requests.retries += 1;
                if partial {
                    self.progress.stats.unprocessed += batch.len();
                }
            }
            self.progress.stats.requests.write_rows += 1;
            let sent = match self.store.write_rows(&batch.writes).await {
                Ok(unprocessed) => {
                    let left = self.keep_unprocessed(batch, &unprocessed);
                    if left.is_empty() {
                        Partial::Done
                    } else {
                        let still = format!("{} index row writes still unprocessed", left.len());
                        Partial::Left(left, StoreError::transient(still))
                    }
                }
                Err(error) if error.is_refused() && batch.len() > 1 => {
                    // Find the culprit: each write alone.
                    for (record, write) in batch.into_pairs().rev() {
                        self.queue.push_front(Batch::one(record, write));
                    }
                    Partial::Done
                }
                Err(error) if error.is_refused() => {
                    for (record, write) in batch.into_pairs() {
                        self.row_refused(record, &write, &error);
                    }
                    Partial::Done
                }
                Err(error) => Partial::Failed(batch, error),
            };
            partial = matches!(sent, Partial::Left(..));
            resend.sent(sent).await;
        }
        resend.finish().map_err(|(fault, batch)| {
            self.queue.push_front(batch);
            fault
        })
    }

    /// Marks the writes not in `unprocessed` done; returns the others.
    fn keep_unprocessed(&mut self, batch: Batch, unprocessed: &[RowWrite]) -> Batch {
        if unprocessed.is_empty() {
            for (&record, write) in batch.records.iter().zip(&batch.writes) {
                self.row_done(record, write);
            }
            return Batch::default();
        }
        let left: HashSet<(usize, &RowKey)> = unprocessed.iter().map(|w| (w.index, &w.key)).collect();
        let mut kept = Batch::with_capacity(left.len());
        for (record, write) in batch.into_pairs() {
            if left.contains(&(write.index, &write.key)) {
                kept.push(record, write);
            } else {
                self.row_done(record, &write);
            }
        }
        kept
    }
}

mod guarded;
#[cfg(test)]
mod tests;
