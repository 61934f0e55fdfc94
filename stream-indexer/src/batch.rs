//! Batch semantics: what one Lambda invocation does with its records, and
//! what it reports (`batchItemFailures`), per `docs/ESM.md` and the
//! invariants of `docs/DESIGN.md`.
//!
//! 1. Every record is read and planned, one at a time
//!    ([`model::record::read_batch`]); what the batch keeps of it (its
//!    plan, its place, its text in the payload) outlives the record.
//! 2. Records are grouped by (table, partition key value). A group keeps
//!    stream order. Every mutation's target belongs to exactly one partition
//!    key, so groups never touch the same item (nor the same index row).
//! 3. The plans of the whole batch are carried out by [`apply::apply_plans`]:
//!    the index row writes of all groups share BatchWriteItem calls, filled in
//!    batch order; each group's edge-set changes go through its own lane.
//!    Row calls, and set lanes, are each in flight at most
//!    [`Options::concurrency`] at a time. A group stops at its first record
//!    whose mutations are not all done (a request that failed for good
//!    after its retries, or a `Deployment` error, left one undone): when a
//!    row call shared by several groups fails, every record with a write in
//!    it is unfinished, and each of their groups stops at its first
//!    unfinished record.
//! 4. Poison (a record that can never succeed: a [`model::record::RecordError`],
//!    plan problems, a mutation the store refused) is quarantined with its raw
//!    JSON, reason and sequence number, after its plan's other mutations are
//!    applied, and then counts as handled.
//! 5. Which records failed, which are quarantined and what Lambda is told
//!    is `model::settlement`'s, shared with the event router: the batch's
//!    failure ([`Outcome::failed`](model::outcome::Outcome::failed)) is the lowest record not fully
//!    applied, every record before it being fully applied; poison at or
//!    after it is redelivered rather than quarantined; a quarantine failure
//!    fails its records.
//!
//! A payload that is not a batch at all is a [`ParseError`]: the Lambda
//! returns a function error, and Lambda retries (or bisects) the batch.

use std::sync::Arc;

use model::config::Config;
use model::record::{kinesis, CreationTime, ParseError, Received};
use model::value::Attrs;
use model::Planner;

use crate::apply::{self, ApplyStats, Backoff, Guard, MutationCounts, Plans, SetsTaken, Stamping};
use crate::store::Store;
use aws_kit::quarantine::Quarantine;
use aws_kit::settle::settle;
use model::outcome::Outcome;
pub use model::settlement::{Failed, Failure, Quarantined};

mod admitted;
mod reader;

use admitted::{lane, reckon, Admitted, RECORD_BYTES_GUESS, SPARE_MAX_MUTATIONS, SPARE_MUTATIONS};
use reader::Reading;

/// The consumer name quarantine entries carry by default.
pub const CONSUMER: &str = "stream-indexer";

/// How an [`Indexer`] works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Requests in flight at once, per kind (at least 1): BatchWriteItem
    /// calls, and set lanes (one per partition-key group with edge-set
    /// changes, each sending one request at a time).
    pub concurrency: usize,
    pub backoff: Backoff,
    /// The `consumer` of quarantine entries.
    pub consumer: String,
    /// Where records may come out of order: `Guard::InOrder` for the
    /// stream (Lambda, `run`); `Guard::Newer` for replay into tables and
    /// redrive (see `apply::guard`).
    pub guard: Guard,
    /// Payloads of at least this many bytes are read on a second thread
    /// while this one plans, and their row writes are packed on a second
    /// thread while this one starts the set lanes, where the process may
    /// use more than one core (`None`: never). See `batch::reader` and
    /// `apply::split`.
    pub read_ahead_from: Option<usize>,
}

/// [`Options::read_ahead_from`] by default: a payload of about 180 records
/// (starting a thread costs little against reading such a payload).
pub const READ_AHEAD_FROM: usize = 128 * 1024;

impl Default for Options {
    fn default() -> Options {
        Options {
            concurrency: 16,
            backoff: Backoff::default(),
            consumer: CONSUMER.to_owned(),
            guard: Guard::InOrder,
            read_ahead_from: Some(READ_AHEAD_FROM),
        }
    }
}

/// What a batch did, for metrics and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BatchStats {
    pub records: usize,
    /// Partition-key groups.
    pub groups: usize,
    /// Records that did not parse.
    pub unparsable: usize,
    /// Mutations the plans asked for, by kind.
    pub planned: MutationCounts,
    /// What the executor did: mutations applied by kind, requests, retries,
    /// nodes missing or flagged, refusals.
    pub apply: ApplyStats,
    /// Records quarantined.
    pub quarantined: usize,
    /// Calls to the quarantine.
    pub quarantine_requests: usize,
    /// Groups stopped by a failure.
    pub failed_groups: usize,
    /// The oldest `ApproximateCreationDateTime` in the batch, for iterator age.
    pub oldest_created: Option<CreationTime>,
}

impl BatchStats {
    /// Adds another batch's figures (for totals over several batches).
    pub fn add(&mut self, other: &BatchStats) {
        self.records += other.records;
        self.groups += other.groups;
        self.unparsable += other.unparsable;
        self.planned.add(&other.planned);
        self.quarantined += other.quarantined;
        self.quarantine_requests += other.quarantine_requests;
        self.failed_groups += other.failed_groups;
        self.oldest_created = model::metrics::oldest(self.oldest_created, other.oldest_created);
        self.apply.add(&other.apply);
    }
}

/// The stream indexer: plans each record and carries the plans out against
/// a [`Store`], quarantining poison into a [`Quarantine`].
pub struct Indexer<S: Store, Q: Quarantine> {
    config: Arc<Config>,
    store: S,
    quarantine: Q,
    options: Options,
    /// The cores this process may use (1 when not known).
    cores: usize,
}

impl<S: Store, Q: Quarantine> Indexer<S, Q> {
    pub fn new(config: Arc<Config>, store: S, quarantine: Q, options: Options) -> Self {
        Indexer {
            config,
            store,
            quarantine,
            options,
            cores: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        }
    }

    pub fn config(&self) -> &Arc<Config> {
        &self.config
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    pub fn quarantine(&self) -> &Q {
        &self.quarantine
    }

    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Handles a Lambda DynamoDB event (or a `GetRecords` response) given as
    /// bytes. Each record is read, its images borrowed from the payload,
    /// planned and let go soon after ([`model::record::read_batch`], borrowed;
    /// a long payload is read on a second thread, a few chunks of records
    /// ahead, see [`Options::read_ahead_from`]): the batch's images are never
    /// all held at once, and their strings are never copied. Nothing is
    /// carried out before the whole payload is read; then, for a payload
    /// read ahead, the row writes are packed on a second thread while the
    /// set lanes start on this one.
    ///
    /// A Lambda Kinesis event (where the config reads a table from one) is
    /// unwrapped first ([`model::record::kinesis`]), and read the same way;
    /// its records that cannot be unwrapped are quarantined in their place.
    pub async fn handle(&self, payload: &[u8]) -> Result<Outcome<BatchStats>, ParseError> {
        match kinesis::unwrap_if_event(payload, &self.config)? {
            Some(unwrapped) => self.handle_text(unwrapped.batch.as_bytes(), &unwrapped.unusable).await,
            None => self.handle_text(payload, &[]).await,
        }
    }

    /// [`Indexer::handle`] of a payload in the DynamoDB stream's shape,
    /// with the records `unusable` (each with its position) in between.
    async fn handle_text(
        &self,
        payload: &[u8],
        unusable: &[(usize, Received<'_>)],
    ) -> Result<Outcome<BatchStats>, ParseError> {
        let planner = Planner::new(&self.config);
        let mut admitted = Admitted::new(payload.len() / RECORD_BYTES_GUESS);
        let mut position = 0;
        let reading = match self.options.read_ahead_from {
            Some(from) if payload.len() >= from && self.cores > 1 => Reading::Ahead,
            _ => Reading::Here,
        };
        if reading == Reading::Ahead {
            admitted.sets = Some(SetsTaken::default());
        }
        let mut unusable = unusable.iter().peekable();
        reader::read_each(payload, reading, |raw, received| {
            while let Some((_, bad)) = unusable.next_if(|(at, _)| *at <= position) {
                admitted.admit(&planner, position, bad, bad.raw_json());
                position += 1;
            }
            admitted.admit(&planner, position, received, raw);
            position += 1;
        })?;
        for (_, bad) in unusable {
            admitted.admit(&planner, position, bad, bad.raw_json());
            position += 1;
        }
        Ok(self.carry_out(admitted).await)
    }

    /// Handles parsed records, in stream order. See the module doc.
    pub async fn handle_received<I: Attrs>(&self, records: &[Received<'_, I>]) -> Outcome<BatchStats> {
        let planner = Planner::new(&self.config);
        let mut admitted = Admitted::new(records.len());
        for (position, received) in records.iter().enumerate() {
            admitted.admit(&planner, position, received, received.raw_json());
        }
        self.carry_out(admitted).await
    }

    /// Carries out the admitted records' plans, then settles the batch.
    /// Where the set mutations were taken out as the records were planned
    /// (a payload read ahead), the row writes are packed on a second thread
    /// while the set lanes start.
    async fn carry_out(&self, admitted: Admitted<'_>) -> Outcome<BatchStats> {
        let Admitted {
            mut stats,
            groups,
            entries,
            mutations,
            sets,
            versions,
            unordered,
            mut handled,
        } = admitted;
        stats.groups = groups.len() + entries.iter().filter(|e| e.group.is_none()).count();

        let guard = match &self.options.guard {
            Guard::InOrder if unordered => Guard::Newer,
            guard => guard.clone(),
        };
        let stamping = Arc::new(Stamping::new(versions, guard));
        let records = entries
            .iter()
            .enumerate()
            .map(|(record, entry)| (lane(entry.group, record), entry.mutations))
            .collect();
        let plans = Plans { mutations, records };
        let (applied, spare) = apply::apply_plans(
            &self.store,
            &self.config,
            &self.options.backoff,
            self.options.concurrency,
            stamping,
            plans,
            sets,
        )
        .await;
        if spare.capacity() <= SPARE_MAX_MUTATIONS {
            SPARE_MUTATIONS.set(spare);
        }
        stats.apply.add(&applied.stats);
        reckon(entries, applied, &mut handled);

        let settled = settle(&self.quarantine, &self.options.consumer, handled).await;
        stats.quarantined = settled.quarantined.len();
        stats.quarantine_requests = settled.quarantine_requests;
        stats.failed_groups = settled.stopped_groups();
        Outcome::new(settled, stats)
    }
}

#[cfg(test)]
mod tests;
