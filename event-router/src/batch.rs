//! Batch semantics of the router: what one Lambda invocation does with its
//! records, and what it reports (`batchItemFailures`). The same rules as the
//! indexer's (`model::settlement`), for events instead of mutations.
//!
//! 1. Every record is read ([`model::record::read_batch`], glancing, one at a
//!    time, its images checked but built only when a route takes it) and
//!    classified by the config's routes ([`model::event::classify`]): zero
//!    or more events. A record that cannot be read or classified is poison.
//! 2. An event larger than the PutEvents budget (`[events]
//!    max_request_bytes`, counted by [`model::event::entry_size`]) goes
//!    without its images, flagged `imagesOmitted`; one still too large is
//!    poison.
//! 3. Records are grouped by (table, partition key value), in stream order.
//!    The events of the whole batch are packed into PutEvents calls of at
//!    most 10 entries within the budget (`model::pack`); a group's events
//!    go out in stream order: a call holding a later event of a group is
//!    sent only once the call holding its earlier one succeeded. Calls are
//!    in flight at most [`Options::concurrency`] at a time.
//! 4. In one call, entries failing with a retryable code (throttling, an
//!    internal failure) are sent again after a backoff with full jitter
//!    ([`Backoff`]); the attempt count restarts whenever an attempt makes
//!    progress. A call failing as a whole is retried the same way when
//!    transient. A refused entry (`InvalidArgument`, `MalformedDetail`, ...)
//!    makes its record poison, quarantined with the code and message; an
//!    access or missing-bus code fails the record (a deployment error: no
//!    event could go, so nothing is quarantined for it). A resent entry may
//!    land after later events of its group that were in the same call.
//! 5. A record is finished when each of its events is published or refused.
//!    A group stops at its first unfinished record; the batch's failure is
//!    the lowest one; poison before it is quarantined
//!    (`model::settlement`). Lambda retries from the failure,
//!    including events already published: consumers see at least once and
//!    can tell a duplicate by `detail.sequenceNumber` and the detail type.

use std::collections::BTreeMap;
use std::sync::Arc;

use aws_kit::quarantine::Quarantine;
use aws_kit::settle::settle;
use model::config::Config;
use model::outcome::Outcome;
use model::poison::{Cause, Poison};
use model::record::{self, CreationTime, Mode, ParseError, Received};
pub use model::settlement::{Failed, Failure, Quarantined};
use model::value::{borrowed, Attrs};
use model::{Backoff, Fault};

use crate::ledger::Ledger;
use crate::publish::{Entry, Publisher};

/// The consumer name quarantine entries carry by default.
pub const CONSUMER: &str = "event-router";

/// How a [`Router`] works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// PutEvents calls in flight at once (at least 1).
    pub concurrency: usize,
    pub backoff: Backoff,
    /// The `consumer` of quarantine entries.
    pub consumer: String,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            concurrency: 8,
            backoff: Backoff::default(),
            consumer: CONSUMER.to_owned(),
        }
    }
}

/// What a batch did, for metrics and logs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RouterStats {
    pub records: usize,
    /// Records that did not parse.
    pub unparsable: usize,
    /// Events the records became.
    pub events: usize,
    /// Events published, in all and by detail type.
    pub published: usize,
    pub published_by_type: BTreeMap<String, usize>,
    /// Events sent without their images (too large with them).
    pub images_omitted: usize,
    /// PutEvents calls made (every attempt counts).
    pub calls: usize,
    /// Entries sent again after a retryable failure (or a failed call).
    pub retried: usize,
    /// Entries EventBridge refused.
    pub refused: usize,
    /// Records quarantined, and calls to the quarantine.
    pub quarantined: usize,
    pub quarantine_requests: usize,
    /// Groups stopped by a failure.
    pub failed_groups: usize,
    /// Records of a Kinesis data stream that were changes whose events
    /// were already published (a repeat): not published again.
    pub repeats: usize,
    /// Changes noted in the ledger (`model::ledger`): the ledger table's
    /// writes.
    pub noted: usize,
    /// The oldest `ApproximateCreationDateTime` in the batch, for iterator age.
    pub oldest_created: Option<CreationTime>,
}

impl RouterStats {
    /// Adds another batch's figures (for totals over several batches).
    pub fn add(&mut self, other: &RouterStats) {
        self.records += other.records;
        self.unparsable += other.unparsable;
        self.events += other.events;
        self.published += other.published;
        for (detail_type, n) in &other.published_by_type {
            *self.published_by_type.entry(detail_type.clone()).or_default() += n;
        }
        self.images_omitted += other.images_omitted;
        self.calls += other.calls;
        self.retried += other.retried;
        self.refused += other.refused;
        self.quarantined += other.quarantined;
        self.quarantine_requests += other.quarantine_requests;
        self.failed_groups += other.failed_groups;
        self.repeats += other.repeats;
        self.noted += other.noted;
        self.oldest_created = model::metrics::oldest(self.oldest_created, other.oldest_created);
    }
}

/// One event to send.
struct Pending {
    /// Its record (a position in the batch's `Handled` list).
    record: usize,
    group: usize,
    entry: Entry,
    size: usize,
}

/// What became of one event.
#[derive(Debug, Clone)]
enum Fate {
    Published,
    /// Refused for good: the fault says by whom and why.
    Refused(Fault),
    Unfinished(Fault),
}

/// The stream router: classifies each record into events and publishes them
/// through a [`Publisher`], quarantining poison into a [`Quarantine`].
pub struct Router<P: Publisher, Q: Quarantine> {
    config: Arc<Config>,
    publisher: P,
    quarantine: Q,
    options: Options,
    /// Where the changes of Kinesis-read tables are noted (see
    /// `model::ledger`); without one, only repeats within a batch are told.
    ledger: Option<Arc<dyn Ledger>>,
}

impl<P: Publisher, Q: Quarantine> Router<P, Q> {
    pub fn new(config: Arc<Config>, publisher: P, quarantine: Q, options: Options) -> Self {
        Router {
            config,
            publisher,
            quarantine,
            options,
            ledger: None,
        }
    }

    /// The router noting the changes of Kinesis-read tables in `ledger`
    /// (none: no change is noted).
    pub fn with_ledger(mut self, ledger: Option<Arc<dyn Ledger>>) -> Self {
        self.ledger = ledger;
        self
    }

    pub fn config(&self) -> &Arc<Config> {
        &self.config
    }

    pub fn publisher(&self) -> &P {
        &self.publisher
    }

    pub fn quarantine(&self) -> &Q {
        &self.quarantine
    }

    /// Handles a Lambda DynamoDB event (or a `GetRecords` response) given as
    /// bytes. Each record is read, classified and let go before the next
    /// ([`record::read_batch`] in [`Mode::Glance`]): its keys are borrowed from the
    /// payload, its images checked as they are read, and built only for a
    /// record a route takes (read again from its text). Nothing is
    /// published before the whole payload is read.
    ///
    /// A Lambda Kinesis event (where the config reads a table from one) is
    /// unwrapped first ([`record::kinesis`]), and read the same way; its
    /// records that cannot be unwrapped are quarantined in their place.
    pub async fn handle(&self, payload: &[u8]) -> Result<Outcome<RouterStats>, ParseError> {
        match record::kinesis::unwrap_if_event(payload, &self.config)? {
            Some(unwrapped) => self.handle_text(unwrapped.batch.as_bytes(), &unwrapped.unusable).await,
            None => self.handle_text(payload, &[]).await,
        }
    }

    /// [`Router::handle`] of a payload in the DynamoDB stream's shape, with
    /// the records `unusable` (each with its position) in between.
    async fn handle_text(
        &self,
        payload: &[u8],
        unusable: &[(usize, Received<'_>)],
    ) -> Result<Outcome<RouterStats>, ParseError> {
        let mut stats = RouterStats::default();
        let mut classified = Classified::default();
        let mut position = 0;
        let mut unusable = unusable.iter().peekable();
        record::read_batch::<borrowed::Image>(payload, Mode::Glance)?.for_each_lent(|raw, received| {
            while let Some((_, bad)) = unusable.next_if(|(at, _)| *at <= position) {
                stats.records += 1;
                self.classify(&mut classified, &mut stats, position, bad, bad.raw_json());
                position += 1;
            }
            stats.records += 1;
            self.classify(&mut classified, &mut stats, position, received, raw);
            position += 1;
        })?;
        for (_, bad) in unusable {
            stats.records += 1;
            self.classify(&mut classified, &mut stats, position, bad, bad.raw_json());
            position += 1;
        }
        Ok(self.publish_and_settle(classified, stats).await)
    }

    /// Handles parsed records, in stream order. See the module doc.
    pub async fn handle_received<I: Attrs>(&self, records: &[Received<'_, I>]) -> Outcome<RouterStats> {
        let mut stats = RouterStats {
            records: records.len(),
            ..RouterStats::default()
        };
        let mut classified = Classified::with_capacity(records.len());
        for (position, received) in records.iter().enumerate() {
            self.classify(&mut classified, &mut stats, position, received, received.raw_json());
        }
        self.publish_and_settle(classified, stats).await
    }

    /// Publishes the classified records' events, then settles the batch.
    async fn publish_and_settle(&self, classified: Classified<'_>, mut stats: RouterStats) -> Outcome<RouterStats> {
        let Classified {
            mut handled,
            mut pending,
            ledger,
            ..
        } = classified;
        let ledger = self.drop_repeats(ledger, &mut handled, &mut pending, &mut stats).await;
        let fates = self.publish(&pending, &mut stats).await;

        // A record's events decide it: refused ones make it poison, the
        // first unfinished one leaves it unfinished.
        for (event, fate) in pending.iter().zip(fates) {
            let Some(record) = handled.get_mut(event.record) else {
                continue;
            };
            match fate {
                Fate::Published => {
                    stats.published += 1;
                    *stats
                        .published_by_type
                        .entry(event.entry.detail_type.clone())
                        .or_default() += 1;
                }
                Fate::Refused(fault) => {
                    stats.refused += 1;
                    let seq = record.sequence_number.as_deref().unwrap_or("?");
                    Poison::add(&mut record.poison, Some(seq), Cause::Refused(fault));
                }
                Fate::Unfinished(fault) => {
                    record.unfinished.get_or_insert(fault);
                }
            }
        }

        stats.noted += self.note_published(ledger, &mut handled).await;
        let settled = settle(&self.quarantine, &self.options.consumer, handled).await;
        stats.quarantined = settled.quarantined.len();
        stats.quarantine_requests = settled.quarantine_requests;
        stats.failed_groups = settled.stopped_groups();
        Outcome::new(settled, stats)
    }
}

mod classify;
mod repeats;
mod send;

use classify::Classified;

#[cfg(test)]
mod tests;
