//! What one event source mapping does with one shard's records, as
//! `docs/ESM.md` describes Lambda's, without I/O: which records go into the
//! next invocation, what a response does to the checkpoint, when a batch is
//! bisected, and when records are given up on (retries or record age run
//! out) and reported to the on-failure destination.
//!
//! The records a mapping still has to deal with are the *buffer*: the
//! records after the shard's checkpoint that passed the mapping's filter,
//! in stream order. Every step works on the front of it:
//!
//! - [`MappingState::next`] says what to do now: wait (the batching window
//!   is open), invoke the function with the first `n` records, or discard
//!   the first `n` records (send their range to the on-failure destination).
//! - [`MappingState::settle`] takes the function's answer for an invocation
//!   of the first `n` records and says how many are now done (the
//!   checkpoint moves past them).
//! - [`MappingState::discarded`] records that a discard was delivered.
//!
//! # The rules
//!
//! - **Batching.** A batch holds at most `batch_size` records. A first
//!   attempt waits until the batch is full, the batching window has passed
//!   since its first record was read, or no more records can come (the
//!   shard is closed and read to its end).
//! - **Success** (an empty `batchItemFailures`): the whole batch is done.
//! - **Partial failure** at record `i` (`batchItemFailures` names its
//!   sequence number): records before `i` are done; the retry starts at
//!   `i`. A function error, an empty or unknown `itemIdentifier`, is a
//!   failure at record 0.
//! - **Bisect on error.** A failed part of more than one record is split:
//!   at the reported record (records before it are done), or in two halves
//!   when the failure is at the first record; each piece is then invoked
//!   on its own, first piece first. Splitting does not use up retries.
//! - **Retries.** Every failed invocation that is not answered by a split
//!   counts one attempt; a fully successful invocation, or a discard,
//!   starts the count again. When the count passes
//!   `maximum_retry_attempts`, the failed part of the last invocation is
//!   discarded ([`Condition::RetryAttemptsExhausted`]). A retry is invoked
//!   at once, with exactly the records that failed (not a new batch).
//! - **Record age.** Before an invocation, records at the front of the
//!   buffer older than `maximum_record_age` are discarded
//!   ([`Condition::RecordAgeExceeded`]), at most a batch at a time.
//!
//! So, with bisect on, only the records that fail alone are ever
//! discarded; without it, a record that always fails takes the records of
//! its failed part with it (ESM.md: "those records are lost to the
//! function").

use std::collections::VecDeque;

use crate::stack::MappingSettings;

/// A mapping's settings, in the units the runner works in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Records per invocation, at least 1.
    pub batch_size: usize,
    /// `MaximumBatchingWindowInSeconds`, in milliseconds.
    pub window_ms: u64,
    /// `MaximumRetryAttempts`; `None`: until the record expires.
    pub max_retry_attempts: Option<u32>,
    /// `MaximumRecordAgeInSeconds`, in milliseconds; `None`: no limit
    /// (the stream's retention).
    pub max_record_age_ms: Option<u64>,
    /// `BisectBatchOnFunctionError`.
    pub bisect_on_error: bool,
}

impl Settings {
    /// The settings of a mapping the stack describes.
    pub fn of(settings: &MappingSettings) -> Settings {
        Settings {
            batch_size: usize::try_from(settings.batch_size).unwrap_or(usize::MAX).max(1),
            window_ms: u64::from(settings.batching_window_seconds).saturating_mul(1000),
            max_retry_attempts: Some(settings.maximum_retry_attempts),
            max_record_age_ms: Some(u64::from(settings.maximum_record_age_seconds).saturating_mul(1000)),
            bisect_on_error: settings.bisect_on_error,
        }
    }
}

/// What the mapping knows of a buffered record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// `ApproximateCreationDateTime`, epoch milliseconds, when known.
    pub created_ms: Option<u64>,
    /// When the runner read it, epoch milliseconds.
    pub read_ms: u64,
}

/// Why records were given up on (the on-failure record's `condition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Condition {
    RetryAttemptsExhausted,
    RecordAgeExceeded,
}

impl Condition {
    /// Lambda's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Condition::RetryAttemptsExhausted => "RetryAttemptsExhausted",
            Condition::RecordAgeExceeded => "RecordAgeExceeded",
        }
    }
}

/// Give up on the first `count` records of the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Discard {
    pub count: usize,
    pub condition: Condition,
    /// The failed invocations behind it (0 for an age discard).
    pub attempts: u32,
}

/// What to do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing until more records come or time passes.
    Wait,
    /// Invoke the function with the first `n` records of the buffer.
    Invoke(usize),
    /// Report the first records to the on-failure destination, then drop them.
    Discard(Discard),
}

/// The function's answer for an invocation of `n` records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every record handled.
    Success,
    /// Records before this position were handled; it and the records after
    /// it were not. 0: the whole batch failed (a function error included).
    FailedAt(usize),
}

/// One mapping's retry state on one shard. See the module doc.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MappingState {
    /// Consecutive failed invocations not answered by a split.
    attempts: u32,
    /// Sizes of the pieces to invoke next, from the front of the buffer
    /// (retries and bisected halves).
    pieces: VecDeque<usize>,
    /// A discard decided and not yet delivered.
    discard: Option<Discard>,
}

impl MappingState {
    /// Consecutive failed invocations counted as attempts.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Whether the next invocation is a retry (or a bisected piece).
    pub fn retrying(&self) -> bool {
        !self.pieces.is_empty() || self.discard.is_some()
    }

    /// What to do with `buffer` (the records after the checkpoint, in
    /// order) at `now_ms`. `more_coming` is false once the shard is closed
    /// and every record of it was read.
    pub fn next(&self, buffer: &[Candidate], settings: &Settings, now_ms: u64, more_coming: bool) -> Step {
        if let Some(discard) = self.discard {
            return Step::Discard(Discard {
                count: discard.count.min(buffer.len()),
                ..discard
            });
        }
        if buffer.is_empty() {
            return Step::Wait;
        }
        let batch_size = settings.batch_size.max(1);
        if let Some(max_age) = settings.max_record_age_ms {
            let expired = buffer
                .iter()
                .take(batch_size)
                .take_while(|c| {
                    c.created_ms
                        .is_some_and(|created| now_ms.saturating_sub(created) > max_age)
                })
                .count();
            if expired > 0 {
                return Step::Discard(Discard {
                    count: expired,
                    condition: Condition::RecordAgeExceeded,
                    attempts: 0,
                });
            }
        }
        if let Some(piece) = self.pieces.front() {
            return Step::Invoke((*piece).clamp(1, buffer.len()));
        }
        let n = batch_size.min(buffer.len());
        let window_passed = buffer
            .first()
            .is_some_and(|first| now_ms.saturating_sub(first.read_ms) >= settings.window_ms);
        if n == batch_size || settings.window_ms == 0 || window_passed || !more_coming {
            Step::Invoke(n)
        } else {
            Step::Wait
        }
    }

    /// The function answered `outcome` for the first `n` records; returns
    /// how many records at the front are now done (the checkpoint moves
    /// past them).
    pub fn settle(&mut self, n: usize, outcome: Outcome, settings: &Settings) -> usize {
        self.take_front(n);
        let failed_at = match outcome {
            Outcome::Success => {
                self.attempts = 0;
                return n;
            }
            Outcome::FailedAt(i) if i < n => i,
            // A position outside the batch: the whole batch failed.
            Outcome::FailedAt(_) => 0,
        };
        let rest = n - failed_at;
        if settings.bisect_on_error && (failed_at > 0 || rest > 1) {
            if failed_at > 0 {
                self.pieces.push_front(rest);
            } else {
                let first = rest / 2;
                self.pieces.push_front(rest - first);
                self.pieces.push_front(first);
            }
            return failed_at;
        }
        self.attempts = self.attempts.saturating_add(1);
        self.pieces.push_front(rest);
        if settings.max_retry_attempts.is_some_and(|max| self.attempts > max) {
            self.discard = Some(Discard {
                count: rest,
                condition: Condition::RetryAttemptsExhausted,
                attempts: self.attempts,
            });
        }
        failed_at
    }

    /// The first `count` records were reported and dropped.
    pub fn discarded(&mut self, count: usize) {
        self.take_front(count);
        self.discard = None;
        self.attempts = 0;
    }

    /// The pieces lose their first `count` records.
    fn take_front(&mut self, mut count: usize) {
        while count > 0 {
            let Some(front) = self.pieces.front_mut() else { return };
            if *front > count {
                *front -= count;
                return;
            }
            count -= *front;
            self.pieces.pop_front();
        }
    }
}

#[cfg(test)]
mod tests;
