//! A batch's records as they are read ([`Admitted`]): each one planned (an
//! [`Entry`], its mutations in one buffer for the whole batch) or found
//! poison, and then, once the plans are carried out, each one reckoned
//! finished, unfinished or poison ([`reckon`]).

use std::cell::Cell;
use std::collections::HashMap;

use model::poison::{Cause, Poison};
use model::record::{RawJson, Received, SharedText};
use model::settlement::{table_name, Groups, Handled};
use model::value::Attrs;
use model::{validate, Mutation, PlanError, Planner};

use super::BatchStats;
use crate::apply::{Applied, SetsTaken};
use crate::store::StoreError;

/// One parsed record.
pub(super) struct Entry<'a> {
    pub(super) position: usize,
    pub(super) group: Option<usize>,
    pub(super) sequence_number: String,
    pub(super) table: Option<SharedText>,
    pub(super) raw: RawJson<'a>,
    /// How many of [`Admitted::mutations`] are this record's (the next
    /// ones after the records' before it).
    pub(super) mutations: usize,
    /// What its plan found wrong (poison once its mutations are applied).
    pub(super) problems: Vec<PlanError>,
}

/// The fewest bytes a record takes in a payload, for a guess at how many a
/// payload holds (a stream record in Lambda's JSON, envelope and keys, is
/// longer, even the shortest of the example mix). Room made for that many
/// at once numbers a batch without rehashing its groups and without copying
/// its entries as they grow, which would read each group's key again and
/// write every entry anew, cold.
pub(super) const RECORD_BYTES_GUESS: usize = 512;

/// The largest mutations buffer kept for the next batch (about 5 MB); one
/// grown larger is freed with its batch.
pub(super) const SPARE_MAX_MUTATIONS: usize = 1 << 16;

thread_local! {
    /// The emptied mutations buffer of the thread's last batch, for its
    /// next (as `apply::rows` keeps its writes'): grown anew for each
    /// batch, it would be copied at every doubling, into fresh pages.
    pub(super) static SPARE_MUTATIONS: Cell<Vec<Mutation>> = const { Cell::new(Vec::new()) };
}

/// The records of a batch as they are read: each one's plan (an
/// [`Entry`]), or why it is poison (a [`Handled`]), and the figures so far.
/// What it keeps of a record outlives the record, so that a record can be
/// let go once admitted.
#[derive(Default)]
pub(super) struct Admitted<'a> {
    pub(super) stats: BatchStats,
    pub(super) groups: Groups,
    pub(super) entries: Vec<Entry<'a>>,
    /// The plans' mutations, in batch order: each entry's in a row.
    pub(super) mutations: Vec<Mutation>,
    /// For a payload read ahead: the set mutations, taken out into their
    /// lanes as each record is planned (left in `mutations` otherwise).
    pub(super) sets: Option<SetsTaken>,
    /// Each entry's version: its sequence number (DynamoDB's have at most
    /// 40 digits; one that cannot be a version is the lowest), or for a
    /// table read from a Kinesis data stream its creation time. Worked out
    /// as the record is admitted, not collected from the entries once all
    /// are in: that collection, made at the batch's peak, would raise the
    /// peak RSS (see `docs/PERFORMANCE.md`).
    pub(super) versions: Vec<model::Version>,
    /// Whether a record of a table read from a Kinesis data stream is in
    /// the batch: its writes are then guarded (records may come reordered
    /// and repeated).
    pub(super) unordered: bool,
    pub(super) handled: Vec<Handled<'a>>,
}

impl<'a> Admitted<'a> {
    /// Ready for a batch of about `records` records (more grow it).
    pub(super) fn new(records: usize) -> Admitted<'a> {
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
    pub(super) fn admit<I: Attrs>(
        &mut self,
        planner: &Planner,
        position: usize,
        received: &Received<'_, I>,
        raw: RawJson<'a>,
    ) {
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

/// The group number record `record` (of group `group`) is carried out
/// under: its group's, or for a lone record (which plans nothing) one no
/// other record shares.
pub(super) fn lane(group: Option<usize>, record: usize) -> usize {
    group.unwrap_or(usize::MAX - record)
}

/// Each parsed record as the executor left it, added to `handled`:
/// unfinished (with the error that left it so) and poison (plan problems
/// and refused mutations).
pub(super) fn reckon<'a>(entries: Vec<Entry<'a>>, mut applied: Applied, handled: &mut Vec<Handled<'a>>) {
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
