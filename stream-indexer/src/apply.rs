//! The executor: carries out the plans of a batch's records against a
//! [`Store`].
//!
//! The caller numbers the records (`Op::record`) in batch order and splits
//! them into partition-key groups (every record of one table and partition
//! key value, in stream order). Every mutation's target belongs to exactly
//! one group: an edge set lives on the node whose partition holds the edge,
//! and an index row's sort key ends with the source item's primary key, so
//! rows of different groups never share a key and the mutations of
//! different groups commute.
//!
//! # Requests
//!
//! - **Index rows** of *all* groups go through one packer (module `rows`): in
//!   batch order, each write joins the earliest `write_rows` call (at most
//!   [`MAX_BATCH_WRITES`] writes) that comes after every call holding an
//!   earlier write to the same row key. So a call never holds two writes to
//!   one key, and the writes to one key go in calls of increasing position.
//!   A call is sent only once every earlier call sharing a key with it has
//!   succeeded, so the writes to one key land in stream order; calls are in
//!   flight at most `concurrency` at a time. `UnprocessedItems` are resent
//!   after a backoff ([`Backoff`]); the attempt count restarts whenever a
//!   call makes progress, and the call fails after `max_attempts` attempts
//!   in a row without any.
//! - **Edge-set member changes** of a group all target one node (an edge's
//!   node is its partition key) and go through the group's *set lane*
//!   (module `sets`); lanes run concurrently, at most `concurrency` at a time.
//!   A lane coalesces its changes into as few UpdateItems as order allows:
//!   a queue of requests of alternating kind (ADD, DELETE, ADD, ...), and
//!   each change joins the earliest request of its kind that comes after
//!   (or is) the last request touching the same member *and* the last
//!   request holding an earlier change of the same record. So an operation
//!   only ever moves past operations on other members of other records, the
//!   changes to one member keep their order, and a record's "add the new
//!   member, then delete the old one" keeps its order (a reader never sees
//!   the edge missing). A run of role changes becomes one ADD and one
//!   DELETE. Requests hold at most [`MAX_MEMBERS_PER_UPDATE`] members.
//! - **Restores** (`RestoreSet`) first send the lane's pending member
//!   changes (a restore is a barrier), then Query the node's partition and
//!   ADD every member found. That ADD opens the lane's queue again, so the
//!   ADDs of later records join it (chunked like the others). A node without
//!   edges gets `SetChange::Add(vec![])`: the marker only.
//! - **Markers** (`SetMarker`, which only repair and rebuild send) are a
//!   barrier too: the lane's pending member changes go first (a repair adds
//!   the missing members, then sets `true`), then one UpdateItem sets the
//!   node's `complete_attribute` outright ([`Store::set_marker`]).
//! - Row writes and set changes target different items, so their relative
//!   order does not matter: the row calls and the set lanes run side by side.
//!   For the same reason the row writes may be packed on a second thread
//!   while the lanes start ([`apply_plans`], module `split`).
//!
//! # Failures
//!
//! - `Transient`: retried with exponential backoff and full jitter, up to
//!   `max_attempts` attempts; then the request fails for good.
//! - `Deployment`: the request fails for good at once.
//! - `Refused`: the request's content can never succeed. A call holding
//!   several writes (or members) is split into one call per write (or per
//!   member; the members only a restore found stay together) to find the
//!   culprit; a refused single write or member (or restore) makes its record
//!   a [`Refusal`] (the batch quarantines it), and the work goes on.
//!
//! A failed set request stops its lane: nothing after it is sent. A failed
//! row call leaves its writes not done and is never retried; the calls that
//! follow it on a shared key are never sent (their writes are not done
//! either); every other call still goes out.
//!
//! # Accounting
//!
//! A record is *finished* when every mutation of its plan is done (applied
//! or refused). [`Applied::pending`] counts, per record, the mutations not
//! done. A group stops at its first unfinished record
//! ([`Applied::first_unfinished`]): every record of the group before it is
//! finished, and the records from it on are redelivered (Lambda retries from
//! the batch's lowest failure). A row call failing for good thus makes every
//! record with a write in it unfinished, whichever groups they belong to.

mod guard;
mod rows;
mod sets;
mod split;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use futures::stream::{self, StreamExt};
use model::config::Config;
use model::Mutation;

use crate::store::{Store, StoreError, MAX_BATCH_WRITES};
use split::{split, split_ahead, Lanes, Split};

/// At most this many members go in one set UpdateItem.
pub const MAX_MEMBERS_PER_UPDATE: usize = 1000;
/// At most this many bytes of members go in one set UpdateItem (well under
/// DynamoDB's 400 KB item and request limits).
pub const MAX_MEMBER_BYTES_PER_UPDATE: usize = 256 * 1024;

pub use aws_kit::retry::pause;
pub use guard::{Guard, ReadVersions, Stamping};
pub use model::backoff::Backoff;
pub use split::{Plans, SetsTaken};

/// Mutations by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MutationCounts {
    pub put_row: usize,
    pub delete_row: usize,
    pub add_member: usize,
    pub remove_member: usize,
    pub restore_set: usize,
    pub set_marker: usize,
}

impl MutationCounts {
    pub fn count(&mut self, mutation: &Mutation) {
        match mutation {
            Mutation::PutRow { .. } => self.put_row += 1,
            Mutation::DeleteRow { .. } => self.delete_row += 1,
            Mutation::AddMember { .. } => self.add_member += 1,
            Mutation::RemoveMember { .. } => self.remove_member += 1,
            Mutation::RestoreSet { .. } => self.restore_set += 1,
            Mutation::SetMarker { .. } => self.set_marker += 1,
        }
    }

    pub fn total(&self) -> usize {
        self.put_row + self.delete_row + self.add_member + self.remove_member + self.restore_set + self.set_marker
    }

    pub fn add(&mut self, other: &MutationCounts) {
        self.put_row += other.put_row;
        self.delete_row += other.delete_row;
        self.add_member += other.add_member;
        self.remove_member += other.remove_member;
        self.restore_set += other.restore_set;
        self.set_marker += other.set_marker;
    }
}

/// Requests made of the store, by kind (every attempt counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestCounts {
    pub write_rows: usize,
    /// Set UpdateItems: member changes, restores' ADDs and markers.
    pub update_set: usize,
    pub query_partition: usize,
    /// Conditional PutItems of rows (guarded writes: replay into tables,
    /// redrive, rebuild, repair).
    pub put_row_if: usize,
    /// Of those, how many were resends (after an error or unprocessed items).
    pub retries: usize,
}

impl RequestCounts {
    /// All requests made.
    pub fn total(&self) -> usize {
        self.write_rows + self.update_set + self.query_partition + self.put_row_if
    }

    pub fn add(&mut self, other: &RequestCounts) {
        self.write_rows += other.write_rows;
        self.update_set += other.update_set;
        self.query_partition += other.query_partition;
        self.put_row_if += other.put_row_if;
        self.retries += other.retries;
    }
}

/// What one group's execution did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ApplyStats {
    /// Mutations done (their request succeeded), by kind.
    pub applied: MutationCounts,
    pub requests: RequestCounts,
    /// Row writes resent because they came back unprocessed.
    pub unprocessed: usize,
    /// Set requests that found no node (nothing to update).
    pub node_missing: usize,
    /// Set requests that flagged their node (past `max_members`).
    pub flagged: usize,
    /// Mutations the store refused.
    pub refused: usize,
    /// Guarded writes skipped because what they would replace is newer (or
    /// changed since it was read): row writes, and set requests.
    pub stale: usize,
}

impl ApplyStats {
    pub fn add(&mut self, other: &ApplyStats) {
        self.applied.add(&other.applied);
        self.requests.add(&other.requests);
        self.unprocessed += other.unprocessed;
        self.node_missing += other.node_missing;
        self.flagged += other.flagged;
        self.refused += other.refused;
        self.stale += other.stale;
    }
}

/// One mutation, with the number of its record.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    pub record: usize,
    pub mutation: Mutation,
}

/// A mutation the store refused: its record can never succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub record: usize,
    /// The refused request's fault, its message saying which request.
    pub fault: StoreError,
}

/// Why and where a group stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    /// The group's first record whose mutations are not all done.
    pub record: usize,
    /// The error that left it so: a `Transient` error that outlived its
    /// retries, or a `Deployment` error.
    pub error: StoreError,
}

/// What one part of the executor (the row writer, or one set lane) did.
#[derive(Debug, Default)]
struct Progress {
    stats: ApplyStats,
    /// The record of every mutation done (applied or refused), once per mutation.
    done: Vec<usize>,
    /// Refused mutations, in the order met.
    refused: Vec<Refusal>,
    /// Records this part left with mutations not done, and why.
    unfinished: Vec<(usize, StoreError)>,
}

impl Progress {
    fn refuse(&mut self, record: usize, fault: StoreError) {
        self.done.push(record);
        self.stats.refused += 1;
        self.refused.push(Refusal { record, fault });
    }

    fn absorb(&mut self, other: Progress) {
        self.stats.add(&other.stats);
        self.done.extend(other.done);
        self.refused.extend(other.refused);
        self.unfinished.extend(other.unfinished);
    }
}

/// The result of [`apply_batch`].
#[derive(Debug, Clone, PartialEq, Default)]
#[must_use]
pub struct Applied {
    pub stats: ApplyStats,
    /// Per record number: how many of its mutations are not done.
    pub pending: Vec<usize>,
    /// Per record with mutations not done: the (first) error that left it so.
    pub errors: BTreeMap<usize, StoreError>,
    /// Refused mutations, by record; a record's row refusals come first.
    pub refused: Vec<Refusal>,
}

impl Applied {
    /// Whether every mutation of `record` is done (applied or refused).
    pub fn is_finished(&self, record: usize) -> bool {
        self.pending.get(record).is_none_or(|&n| n == 0)
    }

    /// The first of `records` (one group's, in stream order) that is not
    /// finished, and why: where the group stops.
    pub fn first_unfinished(&self, records: impl IntoIterator<Item = usize>) -> Option<Stopped> {
        let record = records.into_iter().find(|&r| !self.is_finished(r))?;
        let error = self
            .errors
            .get(&record)
            .cloned()
            .unwrap_or_else(|| StoreError::transient("not applied".to_owned()));
        Some(Stopped { record, error })
    }
}

/// The result of [`apply_group`].
#[derive(Debug, Clone, PartialEq, Default)]
#[must_use]
pub struct GroupResult {
    pub stats: ApplyStats,
    /// Refused mutations, by record (only for records before `stopped`).
    pub refused: Vec<Refusal>,
    pub stopped: Option<Stopped>,
}

/// Carries out the mutations of a batch. `ops` holds `(group, op)` in batch
/// order: records by increasing number (in stream order within a group),
/// each record's mutations in plan order; `group` names the record's
/// partition-key group. Row calls and set lanes are each in flight at most
/// `concurrency` at a time. `stamping` gives each record's version and how
/// writes are guarded. See the module doc.
pub async fn apply_batch<S: Store>(
    store: &S,
    config: &Config,
    backoff: &Backoff,
    concurrency: usize,
    stamping: &Stamping,
    ops: impl IntoIterator<Item = (usize, Op)>,
) -> Applied {
    let concurrency = concurrency.max(1);
    let Split { pending, rows, lanes } = split(ops, stamping);
    let row_work = rows::write_all(store, config, backoff, concurrency, stamping, rows);
    let set_work = run_lanes(store, config, backoff, concurrency, stamping, lanes);
    run(pending, row_work, set_work).await
}

/// Carries out a batch's `plans` as [`apply_batch`] does. With `ahead`
/// (the set mutations, taken out into their lanes as the records were
/// planned), the row writes are packed on a second thread while the set
/// lanes start on this one (see `split`): for a process that may use a
/// second core.
/// Returns the plans' emptied buffer too, for the next batch.
pub async fn apply_plans<S: Store>(
    store: &S,
    config: &Config,
    backoff: &Backoff,
    concurrency: usize,
    stamping: Arc<Stamping>,
    mut plans: Plans,
    ahead: Option<SetsTaken>,
) -> (Applied, Vec<Mutation>) {
    let Some(sets) = ahead else {
        let applied = apply_batch(store, config, backoff, concurrency, &stamping, plans.drain_ops()).await;
        return (applied, plans.mutations);
    };
    let concurrency = concurrency.max(1);
    let (pending, lanes, packed) = split_ahead(plans, sets, stamping.clone());
    let mut spare = Vec::new();
    let row_work = async {
        let (rows, emptied) = packed.rows().await;
        spare = emptied;
        rows::write_all(store, config, backoff, concurrency, &stamping, rows).await
    };
    let set_work = run_lanes(store, config, backoff, concurrency, &stamping, lanes);
    let applied = run(pending, row_work, set_work).await;
    (applied, spare)
}

/// Runs the set lanes, at most `concurrency` at a time.
async fn run_lanes<S: Store>(
    store: &S,
    config: &Config,
    backoff: &Backoff,
    concurrency: usize,
    stamping: &Stamping,
    lanes: Lanes,
) -> Progress {
    stream::iter(lanes.into_values())
        // Boxed: a lane's future is about 2 KB (its requests' states nest
        // in it), which the buffer would otherwise copy three times over
        // into each task it makes.
        .map(|lane| Box::pin(sets::run_lane(store, config, backoff, stamping, lane)))
        .buffer_unordered(concurrency)
        .fold(Progress::default(), |mut all, lane| async move {
            all.absorb(lane);
            all
        })
        .await
}

/// Runs the row calls and the set lanes side by side, and accounts for
/// what they did.
async fn run(
    pending: Vec<usize>,
    row_work: impl Future<Output = Progress>,
    set_work: impl Future<Output = Progress>,
) -> Applied {
    let (row_progress, lane_progress) = futures::join!(row_work, set_work);
    account(pending, row_progress, lane_progress)
}

/// Merges the parts' progress into per-record accounting.
fn account(mut pending: Vec<usize>, rows: Progress, lanes: Progress) -> Applied {
    // Rows first: a record's row refusals and errors come before its set ones.
    let mut all = rows;
    all.absorb(lanes);
    for record in all.done {
        if let Some(n) = pending.get_mut(record) {
            *n = n.saturating_sub(1);
        }
    }
    let mut errors = BTreeMap::new();
    for (record, error) in all.unfinished {
        if pending.get(record).is_some_and(|&n| n > 0) {
            errors.entry(record).or_insert(error);
        }
    }
    let mut refused = all.refused;
    refused.sort_by_key(|r| r.record);
    Applied {
        stats: all.stats,
        pending,
        errors,
        refused,
    }
}

/// Carries out the mutations of ONE group (`ops` in record order, each
/// record's in plan order), one row call at a time.
pub async fn apply_group<S: Store>(store: &S, config: &Config, backoff: &Backoff, ops: Vec<Op>) -> GroupResult {
    let records = ops.iter().map(|op| op.record + 1).max().unwrap_or(0);
    let stamping = Stamping::default();
    let applied = apply_batch(store, config, backoff, 1, &stamping, ops.into_iter().map(|op| (0, op))).await;
    let stopped = applied.first_unfinished(0..records);
    let mut refused = applied.refused;
    if let Some(stopped) = &stopped {
        refused.retain(|r| r.record < stopped.record);
    }
    GroupResult {
        stats: applied.stats,
        refused,
        stopped,
    }
}

#[cfg(test)]
mod tests;
