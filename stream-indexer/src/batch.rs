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

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;

use model::config::Config;
use model::record::{kinesis, CreationTime, ParseError, RawJson, Received, SharedText};
use model::value::Attrs;
use model::{validate, Mutation, PlanError, Planner};

use crate::apply::{self, Applied, ApplyStats, Backoff, Guard, MutationCounts, Plans, SetsTaken, Stamping};
use crate::store::{Store, StoreError};
use aws_kit::quarantine::Quarantine;
use aws_kit::settle::settle;
use model::outcome::Outcome;
use model::poison::{Cause, Poison};
use model::settlement::{table_name, Groups, Handled};
pub use model::settlement::{Failed, Failure, Quarantined};

mod reader;
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

/// One parsed record.
struct Entry<'a> {
    position: usize,
    group: Option<usize>,
    sequence_number: String,
    table: Option<SharedText>,
    raw: RawJson<'a>,
    /// How many of [`Admitted::mutations`] are this record's (the next
    /// ones after the records' before it).
    mutations: usize,
    /// What its plan found wrong (poison once its mutations are applied).
    problems: Vec<PlanError>,
}

/// The fewest bytes a record takes in a payload, for a guess at how many a
/// payload holds (a stream record in Lambda's JSON, envelope and keys, is
/// longer, even the shortest of the example mix). Room made for that many
/// at once numbers a batch without rehashing its groups and without copying
/// its entries as they grow, which would read each group's key again and
/// write every entry anew, cold.
const RECORD_BYTES_GUESS: usize = 512;

/// The largest mutations buffer kept for the next batch (about 5 MB); one
/// grown larger is freed with its batch.
const SPARE_MAX_MUTATIONS: usize = 1 << 16;

thread_local! {
    /// The emptied mutations buffer of the thread's last batch, for its
    /// next (as `apply::rows` keeps its writes'): grown anew for each
    /// batch, it would be copied at every doubling, into fresh pages.
    static SPARE_MUTATIONS: Cell<Vec<Mutation>> = const { Cell::new(Vec::new()) };
}

/// The records of a batch as they are read: each one's plan (an
/// [`Entry`]), or why it is poison (a [`Handled`]), and the figures so far.
/// What it keeps of a record outlives the record, so that a record can be
/// let go once admitted.
#[derive(Default)]
struct Admitted<'a> {
    stats: BatchStats,
    groups: Groups,
    entries: Vec<Entry<'a>>,
    /// The plans' mutations, in batch order: each entry's in a row.
    mutations: Vec<Mutation>,
    /// For a payload read ahead: the set mutations, taken out into their
    /// lanes as each record is planned (left in `mutations` otherwise).
    sets: Option<SetsTaken>,
    /// Each entry's version: its sequence number (DynamoDB's have at most
    /// 40 digits; one that cannot be a version is the lowest), or for a
    /// table read from a Kinesis data stream its creation time. Worked out
    /// as the record is admitted, not collected from the entries once all
    /// are in: that collection, made at the batch's peak, would raise the
    /// peak RSS (see `docs/PERFORMANCE.md`).
    versions: Vec<model::Version>,
    /// Whether a record of a table read from a Kinesis data stream is in
    /// the batch: its writes are then guarded (records may come reordered
    /// and repeated).
    unordered: bool,
    handled: Vec<Handled<'a>>,
}

impl<'a> Admitted<'a> {
    /// Ready for a batch of about `records` records (more grow it).
    fn new(records: usize) -> Admitted<'a> {
        Admitted {
            groups: Groups::with_capacity(records),
            // Every record that plans has an entry: nearly all do.
            entries: Vec::with_capacity(records),
            versions: Vec::with_capacity(records),
            mutations: SPARE_MUTATIONS.take(),
            ..Admitted::default()
        }
    }

    /// Admits the record at `position`, whose text is `raw`: plans it, or
    /// marks it poison.
    fn admit<I: Attrs>(&mut self, planner: &Planner, position: usize, received: &Received<'_, I>, raw: RawJson<'a>) {
        let stats = &mut self.stats;
        stats.records += 1;
        let record = match &received.record {
            Ok(record) => record,
            Err(error) => {
                stats.unparsable += 1;
                self.handled.push(Handled {
                    position,
                    sequence_number: received.sequence_number.clone(),
                    table: None,
                    group: None,
                    raw,
                    poison: Some(Poison::new(
                        received.sequence_number.as_deref(),
                        Cause::Unreadable(error.clone()),
                    )),
                    unfinished: None,
                });
                return;
            }
        };
        let table = planner.table_of(record).ok();
        // Where its changes come from: what its version is.
        let stream = table.map(|t| t.stream);
        self.unordered |= stream.is_some_and(|s| s.is_unordered());
        // What DynamoDB never streams is poison, as the router finds.
        if let Some((table, invalid)) = table.and_then(|t| Some((t, validate::poison(received, t)?))) {
            stats.unparsable += 1;
            self.handled.push(Handled {
                position,
                sequence_number: received.sequence_number.clone(),
                table: Some(table_name(record, table)),
                group: None,
                raw,
                poison: Some(Poison::new(Some(&record.sequence_number), Cause::Invalid(invalid))),
                unfinished: None,
            });
            return;
        }
        if let Some(created) = record.created {
            stats.oldest_created = Some(stats.oldest_created.map_or(created, |o| o.min(created)));
        }
        let before = self.mutations.len();
        let problems = planner.plan_received_onto(received, record, &mut self.mutations);
        let planned = self.mutations.get(before..).unwrap_or_default();
        for mutation in planned {
            stats.planned.count(mutation);
        }
        // A record of an unknown table plans no mutation: it stands alone.
        let (group, table) = match table {
            Some(table) => (Some(self.groups.of(table, record)), Some(table_name(record, table))),
            None => (None, record.table.clone()),
        };
        let mutations = self.mutations.len() - before;
        if let Some(sets) = &mut self.sets {
            // Read ahead, this thread would otherwise wait on the reading
            // one here.
            let record = self.entries.len();
            let mutations = self.mutations.get_mut(before..).unwrap_or_default();
            sets.take(lane(group, record), record, mutations);
        }
        // A record of a Kinesis-read table without a creation time was
        // found poison above: every record here has a version.
        let version = match stream {
            Some(stream) => model::version::of_record(record, stream),
            None => model::Version::of_sequence(&record.sequence_number),
        };
        self.versions.push(version.unwrap_or_else(|_| model::Version::zero()));
        self.entries.push(Entry {
            position,
            group,
            sequence_number: record.sequence_number.clone(),
            table,
            raw,
            mutations,
            problems,
        });
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

/// The group number record `record` (of group `group`) is carried out
/// under: its group's, or for a lone record (which plans nothing) one no
/// other record shares.
fn lane(group: Option<usize>, record: usize) -> usize {
    group.unwrap_or(usize::MAX - record)
}

/// Each parsed record as the executor left it, added to `handled`:
/// unfinished (with the error that left it so) and poison (plan problems
/// and refused mutations).
fn reckon<'a>(entries: Vec<Entry<'a>>, mut applied: Applied, handled: &mut Vec<Handled<'a>>) {
    let mut refusals: HashMap<usize, Vec<StoreError>> = HashMap::new();
    for refusal in std::mem::take(&mut applied.refused) {
        refusals.entry(refusal.record).or_default().push(refusal.fault);
    }
    handled.reserve(entries.len());
    for (i, entry) in entries.into_iter().enumerate() {
        let unfinished = (!applied.is_finished(i)).then(|| {
            applied
                .errors
                .get(&i)
                .cloned()
                .unwrap_or_else(|| StoreError::transient("not applied"))
        });
        // Most records have no problem and no refusal: no lookup for them.
        let refused = if refusals.is_empty() { None } else { refusals.remove(&i) };
        let causes = entry.problems.into_iter().map(Cause::Unplannable);
        let mut poison = None;
        for cause in causes.chain(refused.into_iter().flatten().map(Cause::Refused)) {
            Poison::add(&mut poison, Some(&entry.sequence_number), cause);
        }
        handled.push(Handled {
            position: entry.position,
            sequence_number: Some(entry.sequence_number),
            table: entry.table,
            group: entry.group,
            raw: entry.raw,
            poison,
            unfinished,
        });
    }
}

#[cfg(test)]
mod tests;
