//! What a stream consumer made of one batch, as both consumers report it to
//! the Lambda shell (`aws_kit::lambda`), the local runner and `replay`: the
//! batch's settlement ([`crate::settlement`]) with the consumer's own counts.

use crate::settlement::{BatchResponse, Failed, Failure, Quarantined, Settled};

/// What one batch came to: where Lambda resumes, what was quarantined, why
/// the rest failed, and the consumer's counts (`S`: the indexer's or the
/// router's).
#[derive(Debug, Clone, PartialEq, Default)]
#[must_use]
pub struct Outcome<S> {
    /// Where Lambda resumes; `None` when every record was handled.
    pub failed: Option<Failed>,
    pub stats: S,
    /// The records quarantined, in batch order.
    pub quarantined: Vec<Quarantined>,
    /// Why the batch failed, one entry per stopped group or failed quarantine call.
    pub failures: Vec<Failure>,
}

impl<S> Outcome<S> {
    /// The outcome of a batch settled as `settled`, with `stats` (which
    /// count the quarantine's calls themselves: `settled.quarantine_requests`).
    pub fn new(settled: Settled, stats: S) -> Outcome<S> {
        Outcome {
            failed: settled.failed,
            stats,
            quarantined: settled.quarantined,
            failures: settled.failures,
        }
    }

    /// The answer to Lambda (`batchItemFailures`).
    pub fn response(&self) -> BatchResponse {
        BatchResponse::new(self.failed.as_ref())
    }

    /// [`Outcome::response`] as JSON text.
    pub fn response_json(&self) -> String {
        self.response().to_json()
    }

    /// True when the whole batch failed (not from a sequence number).
    pub fn is_whole_batch_failure(&self) -> bool {
        self.failed == Some(Failed::WholeBatch)
    }

    /// The sequence number Lambda resumes from, if any (`None` also for the
    /// whole batch: see [`Outcome::is_whole_batch_failure`]).
    pub fn failed_at(&self) -> Option<&str> {
        self.failed.as_ref().and_then(Failed::sequence_number)
    }

    /// The summary's resume point: the sequence number, `the whole batch`, or `None`.
    pub fn resumes_from(&self) -> Option<&str> {
        self.failed
            .as_ref()
            .map(|f| f.sequence_number().unwrap_or("the whole batch"))
    }
}
