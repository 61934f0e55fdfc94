//! The executor: carries out the plans of ONE partition-key group (every
//! record of one table and partition key value in the batch, in stream order)
//! against a [`Store`].
//!
//! # Requests
//!
//! - **Index rows** go out in `write_rows` calls of at most
//!   [`MAX_BATCH_WRITES`], filled in mutation order. A call never holds two
//!   writes to one row key: a write to a key already in the pending call
//!   sends that call first, so the writes to one key land in stream order.
//!   `UnprocessedItems` are resent after a backoff ([`Backoff`]); the attempt
//!   count restarts whenever a call makes progress, and the group stops after
//!   `max_attempts` calls in a row without any.
//! - **Edge-set member changes** of a group all target one node (an edge's
//!   node is its partition key). They are coalesced into as few UpdateItems
//!   as order allows: a queue of requests of alternating kind (ADD, DELETE,
//!   ADD, ...), and each change joins the earliest request of its kind that
//!   comes after (or is) the last request touching the same member *and* the
//!   last request holding an earlier change of the same record. So an
//!   operation only ever moves past operations on other members of other
//!   records, the changes to one member keep their order, and a record's
//!   "add the new member, then delete the old one" keeps its order (a reader
//!   never sees the edge missing). A run of role changes becomes one ADD and
//!   one DELETE. Requests hold at most [`MAX_MEMBERS_PER_UPDATE`] members.
//! - **Restores** (`RestoreSet`) first send the pending member changes (a
//!   restore is a barrier), then Query the node's partition and ADD every
//!   member found, in one request (chunked like the others). A node without
//!   edges gets `SetChange::Add(vec![])`: the marker only.
//! - Row writes and set changes target different items, so their relative
//!   order does not matter and they are batched independently.
//!
//! # Failures
//!
//! Every mutation carries the position of its record in the group.
//! - `Transient`: retried with exponential backoff and full jitter, up to
//!   `max_attempts` attempts; then the group stops.
//! - `Deployment`: the group stops at once.
//! - `Refused`: the request's content can never succeed. A call holding
//!   changes of several records is split into one call per write (or per
//!   member) to find the culprit; a refused single write or member makes its
//!   record a [`Refusal`] (the batch quarantines it), and the group goes on.
//!
//! When the group stops, [`GroupResult::stopped`] names the lowest record
//! whose mutations are not all done (applied or refused): every record
//! before it is complete, and nothing after the failing request was sent.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::time::Duration;

use model::config::Config;
use model::edge::{self, GraphItem};
use model::index::RowKey;
use model::Mutation;

use crate::store::{RowWrite, SetChange, SetOutcome, Store, StoreError, MAX_BATCH_WRITES};

/// At most this many members go in one set UpdateItem.
pub const MAX_MEMBERS_PER_UPDATE: usize = 1000;
/// At most this many bytes of members go in one set UpdateItem (well under
/// DynamoDB's 400 KB item and request limits).
pub const MAX_MEMBER_BYTES_PER_UPDATE: usize = 256 * 1024;

/// How failed requests are retried: exponential backoff with full jitter.
/// The wait before retry `n` (from 0) is uniform in `[0, min(cap, base · 2ⁿ)]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
    pub cap: Duration,
    /// Attempts of one request, the first included (at least 1 is made).
    pub max_attempts: u32,
}

impl Default for Backoff {
    /// 25 ms doubling up to 2 s, 8 attempts (at most about 5 s of waiting).
    fn default() -> Backoff {
        Backoff {
            base: Duration::from_millis(25),
            cap: Duration::from_secs(2),
            max_attempts: 8,
        }
    }
}

impl Backoff {
    /// No waiting at all (tests).
    pub const fn immediate(max_attempts: u32) -> Backoff {
        Backoff {
            base: Duration::ZERO,
            cap: Duration::ZERO,
            max_attempts,
        }
    }

    /// The longest wait before retry `retry` (0 = the first retry).
    pub fn ceiling(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
        self.base.checked_mul(factor).unwrap_or(self.cap).min(self.cap)
    }

    /// A random wait in `[0, ceiling(retry)]`.
    pub fn delay(&self, retry: u32) -> Duration {
        let ceiling = self.ceiling(retry);
        if ceiling.is_zero() {
            return ceiling;
        }
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(fastrand::u64(0..=nanos))
    }

    fn attempts(&self) -> u32 {
        self.max_attempts.max(1)
    }
}

async fn pause(delay: Duration) {
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
}

/// Mutations by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MutationCounts {
    pub put_row: usize,
    pub delete_row: usize,
    pub add_member: usize,
    pub remove_member: usize,
    pub restore_set: usize,
}

impl MutationCounts {
    pub fn count(&mut self, mutation: &Mutation) {
        match mutation {
            Mutation::PutRow { .. } => self.put_row += 1,
            Mutation::DeleteRow { .. } => self.delete_row += 1,
            Mutation::AddMember { .. } => self.add_member += 1,
            Mutation::RemoveMember { .. } => self.remove_member += 1,
            Mutation::RestoreSet { .. } => self.restore_set += 1,
        }
    }

    pub fn total(&self) -> usize {
        self.put_row + self.delete_row + self.add_member + self.remove_member + self.restore_set
    }

    pub fn add(&mut self, other: &MutationCounts) {
        self.put_row += other.put_row;
        self.delete_row += other.delete_row;
        self.add_member += other.add_member;
        self.remove_member += other.remove_member;
        self.restore_set += other.restore_set;
    }
}

/// Requests made of the store, by kind (every attempt counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestCounts {
    pub write_rows: usize,
    pub update_set: usize,
    pub query_partition: usize,
    /// Of those, how many were resends (after an error or unprocessed items).
    pub retries: usize,
}

impl RequestCounts {
    /// All requests made.
    pub fn total(&self) -> usize {
        self.write_rows + self.update_set + self.query_partition
    }

    pub fn add(&mut self, other: &RequestCounts) {
        self.write_rows += other.write_rows;
        self.update_set += other.update_set;
        self.query_partition += other.query_partition;
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
}

impl ApplyStats {
    pub fn add(&mut self, other: &ApplyStats) {
        self.applied.add(&other.applied);
        self.requests.add(&other.requests);
        self.unprocessed += other.unprocessed;
        self.node_missing += other.node_missing;
        self.flagged += other.flagged;
        self.refused += other.refused;
    }
}

/// One mutation of a group, with the position of its record in the group.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    pub record: usize,
    pub mutation: Mutation,
}

/// A mutation the store refused: its record can never succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub record: usize,
    pub reason: String,
}

/// Why and where a group stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    /// The lowest record (position in the group) whose mutations are not all done.
    pub record: usize,
    /// A `Transient` error that outlived its retries, or a `Deployment` error.
    pub error: StoreError,
}

/// The result of [`apply_group`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GroupResult {
    pub stats: ApplyStats,
    /// Refused mutations, in the order met (only for records before `stopped`).
    pub refused: Vec<Refusal>,
    pub stopped: Option<Stopped>,
}

/// Carries out `ops` (the mutations of one group's records, in record order,
/// each record's in plan order). See the module doc.
pub async fn apply_group<S: Store>(store: &S, config: &Config, backoff: &Backoff, ops: Vec<Op>) -> GroupResult {
    let records = ops.iter().map(|op| op.record + 1).max().unwrap_or(0);
    let mut run = Run {
        store,
        config,
        backoff,
        remaining: vec![0; records],
        rows: Vec::new(),
        row_keys: HashSet::new(),
        sets: SetQueue::default(),
        result: GroupResult::default(),
    };
    for op in &ops {
        run.remaining[op.record] += 1;
    }
    if let Err(stop) = run.all(ops).await {
        let record = run
            .remaining
            .iter()
            .position(|&n| n > 0)
            .map_or(stop.record, |r| r.min(stop.record));
        run.result.refused.retain(|r| r.record < record);
        run.result.stopped = Some(Stopped {
            record,
            error: stop.error,
        });
    }
    run.result
}

/// A request failed for good: the group stops.
struct Stop {
    /// The lowest record in the failed request.
    record: usize,
    error: StoreError,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SetKind {
    Add,
    Remove,
}

impl SetKind {
    fn name(self) -> &'static str {
        match self {
            SetKind::Add => "ADD",
            SetKind::Remove => "DELETE",
        }
    }

    fn change(self, members: Vec<String>) -> SetChange {
        match self {
            SetKind::Add => SetChange::Add(members),
            SetKind::Remove => SetChange::Remove(members),
        }
    }
}

/// One pending set request: distinct members, each with the records that asked for it.
struct SetRequest {
    kind: SetKind,
    members: Vec<(String, Vec<usize>)>,
    positions: HashMap<String, usize>,
}

impl SetRequest {
    fn new(kind: SetKind) -> SetRequest {
        SetRequest {
            kind,
            members: Vec::new(),
            positions: HashMap::new(),
        }
    }

    fn insert(&mut self, member: String, record: usize) {
        match self.positions.get(&member) {
            Some(&at) => self.members[at].1.push(record),
            None => {
                self.positions.insert(member.clone(), self.members.len());
                self.members.push((member, vec![record]));
            }
        }
    }
}

/// The pending member changes of one node (see the module doc).
#[derive(Default)]
struct SetQueue {
    target: Option<(usize, String)>,
    requests: Vec<SetRequest>,
    /// Member → the last request touching it.
    last_touch: HashMap<String, usize>,
    /// The last record queued and the request its last change went to.
    last_record: Option<(usize, usize)>,
}

impl SetQueue {
    fn push(&mut self, kind: SetKind, member: String, record: usize) {
        let member_floor = self.last_touch.get(&member).copied();
        let record_floor = self.last_record.filter(|(r, _)| *r == record).map(|(_, at)| at);
        let floor = member_floor.max(record_floor);
        // Kinds alternate, so the earliest request of `kind` at or after the
        // floor is the floor itself or the one after it.
        let found = match floor {
            Some(f) => (f..self.requests.len().min(f + 2)).find(|&i| self.requests[i].kind == kind),
            None => self.requests.iter().take(2).position(|r| r.kind == kind),
        };
        let at = match found {
            Some(at) => at,
            None => {
                self.requests.push(SetRequest::new(kind));
                self.requests.len() - 1
            }
        };
        debug_assert!(self.requests.windows(2).all(|w| w[0].kind != w[1].kind));
        self.requests[at].insert(member.clone(), record);
        self.last_touch.insert(member, at);
        self.last_record = Some((record, at));
    }

    fn take(&mut self) -> Option<((usize, String), Vec<SetRequest>)> {
        self.last_touch.clear();
        self.last_record = None;
        let requests = std::mem::take(&mut self.requests);
        self.target.take().map(|target| (target, requests))
    }
}

/// Splits members into request-sized chunks.
fn chunks<T>(members: Vec<T>, text: impl Fn(&T) -> &str) -> VecDeque<Vec<T>> {
    let mut out = VecDeque::new();
    let mut chunk = Vec::new();
    let mut bytes = 0;
    for member in members {
        let size = text(&member).len();
        if !chunk.is_empty() && (chunk.len() >= MAX_MEMBERS_PER_UPDATE || bytes + size > MAX_MEMBER_BYTES_PER_UPDATE) {
            out.push_back(std::mem::take(&mut chunk));
            bytes = 0;
        }
        bytes += size;
        chunk.push(member);
    }
    if !chunk.is_empty() {
        out.push_back(chunk);
    }
    out
}

/// Sends one request until it succeeds, is refused, or fails for good.
async fn retrying<T, F, Fut>(
    backoff: &Backoff,
    requests: &mut RequestCounts,
    kind: fn(&mut RequestCounts) -> &mut usize,
    mut call: F,
) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let mut attempt = 0u32;
    loop {
        *kind(requests) += 1;
        match call().await {
            Err(StoreError::Transient(message)) => {
                attempt += 1;
                if attempt >= backoff.attempts() {
                    return Err(StoreError::Transient(format!(
                        "{message} (gave up after {attempt} attempts)"
                    )));
                }
                requests.retries += 1;
                pause(backoff.delay(attempt - 1)).await;
            }
            other => return other,
        }
    }
}

struct Run<'a, S> {
    store: &'a S,
    config: &'a Config,
    backoff: &'a Backoff,
    /// Per record: mutations not yet done (applied or refused).
    remaining: Vec<usize>,
    /// The pending `write_rows` call.
    rows: Vec<(usize, RowWrite)>,
    row_keys: HashSet<(usize, RowKey)>,
    sets: SetQueue,
    result: GroupResult,
}

impl<S: Store> Run<'_, S> {
    async fn all(&mut self, ops: Vec<Op>) -> Result<(), Stop> {
        for Op { record, mutation } in ops {
            match mutation {
                Mutation::PutRow { index, key, attributes } => {
                    self.row(
                        record,
                        RowWrite {
                            index,
                            key,
                            put: Some(attributes),
                        },
                    )
                    .await?
                }
                Mutation::DeleteRow { index, key } => self.row(record, RowWrite { index, key, put: None }).await?,
                Mutation::AddMember { edge_set, node, member } => {
                    self.member(record, edge_set, node, SetKind::Add, member).await?
                }
                Mutation::RemoveMember { edge_set, node, member } => {
                    self.member(record, edge_set, node, SetKind::Remove, member).await?
                }
                Mutation::RestoreSet { edge_set, node } => {
                    self.flush_sets().await?;
                    self.restore(record, edge_set, &node).await?;
                }
            }
        }
        self.flush_rows().await?;
        self.flush_sets().await
    }

    fn done(&mut self, record: usize) {
        if let Some(n) = self.remaining.get_mut(record) {
            *n = n.saturating_sub(1);
        }
    }

    fn refuse(&mut self, record: usize, reason: String) {
        self.done(record);
        self.result.stats.refused += 1;
        self.result.refused.push(Refusal { record, reason });
    }

    // ---- index rows ----

    async fn row(&mut self, record: usize, write: RowWrite) -> Result<(), Stop> {
        let key = (write.index, write.key.clone());
        if self.row_keys.contains(&key) {
            self.flush_rows().await?;
        }
        self.row_keys.insert(key);
        self.rows.push((record, write));
        if self.rows.len() >= MAX_BATCH_WRITES {
            self.flush_rows().await?;
        }
        Ok(())
    }

    fn row_done(&mut self, record: usize, write: &RowWrite) {
        self.done(record);
        match write.put {
            Some(_) => self.result.stats.applied.put_row += 1,
            None => self.result.stats.applied.delete_row += 1,
        }
    }

    fn index_name(&self, index: usize) -> &str {
        self.config.indexes.get(index).map_or("?", |i| i.name.as_str())
    }

    async fn flush_rows(&mut self) -> Result<(), Stop> {
        self.row_keys.clear();
        let first = std::mem::take(&mut self.rows);
        if first.is_empty() {
            return Ok(());
        }
        let mut queue = VecDeque::from([first]);
        while let Some(mut batch) = queue.pop_front() {
            // Attempts in a row without progress.
            let mut stalled = 0u32;
            while !batch.is_empty() {
                self.result.stats.requests.write_rows += 1;
                let writes: Vec<RowWrite> = batch.iter().map(|(_, w)| w.clone()).collect();
                let lowest = batch.iter().map(|(r, _)| *r).min().unwrap_or_default();
                match self.store.write_rows(writes).await {
                    Ok(unprocessed) => {
                        let before = batch.len();
                        let left: HashSet<(usize, &RowKey)> = unprocessed.iter().map(|w| (w.index, &w.key)).collect();
                        let mut kept = Vec::with_capacity(left.len());
                        for (record, write) in std::mem::take(&mut batch) {
                            if left.contains(&(write.index, &write.key)) {
                                kept.push((record, write));
                            } else {
                                self.row_done(record, &write);
                            }
                        }
                        batch = kept;
                        if batch.is_empty() {
                            break;
                        }
                        stalled = if batch.len() < before { 0 } else { stalled + 1 };
                        if stalled >= self.backoff.attempts() {
                            let lowest = batch.iter().map(|(r, _)| *r).min().unwrap_or_default();
                            let message = format!(
                                "{} index row writes still unprocessed after {stalled} attempts without progress",
                                batch.len()
                            );
                            return Err(Stop {
                                record: lowest,
                                error: StoreError::Transient(message),
                            });
                        }
                        self.result.stats.unprocessed += batch.len();
                        self.result.stats.requests.retries += 1;
                        pause(self.backoff.delay(stalled)).await;
                    }
                    Err(StoreError::Transient(message)) => {
                        stalled += 1;
                        if stalled >= self.backoff.attempts() {
                            let message = format!("{message} (gave up after {stalled} attempts)");
                            return Err(Stop {
                                record: lowest,
                                error: StoreError::Transient(message),
                            });
                        }
                        self.result.stats.requests.retries += 1;
                        pause(self.backoff.delay(stalled - 1)).await;
                    }
                    Err(StoreError::Refused(_)) if batch.len() > 1 => {
                        // Find the culprit: each write alone.
                        for single in batch.drain(..).rev() {
                            queue.push_front(vec![single]);
                        }
                    }
                    Err(StoreError::Refused(message)) => {
                        for (record, write) in std::mem::take(&mut batch) {
                            let what = if write.put.is_some() { "put" } else { "delete" };
                            let reason = format!(
                                "index `{}`: row {what} refused: {message}",
                                self.index_name(write.index)
                            );
                            self.refuse(record, reason);
                        }
                    }
                    Err(error @ StoreError::Deployment(_)) => return Err(Stop { record: lowest, error }),
                }
            }
        }
        Ok(())
    }

    // ---- edge sets ----

    async fn member(
        &mut self,
        record: usize,
        edge_set: usize,
        node: String,
        kind: SetKind,
        member: String,
    ) -> Result<(), Stop> {
        let other_node = self
            .sets
            .target
            .as_ref()
            .is_some_and(|(e, n)| *e != edge_set || *n != node);
        if other_node {
            self.flush_sets().await?;
        }
        if self.sets.target.is_none() {
            self.sets.target = Some((edge_set, node));
        }
        self.sets.push(kind, member, record);
        Ok(())
    }

    fn set_name(&self, edge_set: usize) -> &str {
        self.config
            .edge_sets
            .get(edge_set)
            .map_or("?", |s| s.attribute.as_str())
    }

    fn count_outcome(&mut self, outcome: SetOutcome) {
        match outcome {
            SetOutcome::Applied => {}
            SetOutcome::NodeMissing => self.result.stats.node_missing += 1,
            SetOutcome::Flagged => self.result.stats.flagged += 1,
        }
    }

    async fn send_set(&mut self, edge_set: usize, node: &str, change: SetChange) -> Result<SetOutcome, StoreError> {
        let store = self.store;
        retrying(
            self.backoff,
            &mut self.result.stats.requests,
            |c| &mut c.update_set,
            || store.update_set(edge_set, node, change.clone()),
        )
        .await
    }

    async fn flush_sets(&mut self) -> Result<(), Stop> {
        let Some(((edge_set, node), requests)) = self.sets.take() else {
            return Ok(());
        };
        for request in requests {
            let kind = request.kind;
            let mut queue = chunks(request.members, |(m, _)| m.as_str());
            while let Some(chunk) = queue.pop_front() {
                let members: Vec<String> = chunk.iter().map(|(m, _)| m.clone()).collect();
                let lowest = chunk
                    .iter()
                    .flat_map(|(_, rs)| rs.iter().copied())
                    .min()
                    .unwrap_or_default();
                match self.send_set(edge_set, &node, kind.change(members)).await {
                    Ok(outcome) => {
                        self.count_outcome(outcome);
                        for (_, records) in &chunk {
                            for &record in records {
                                self.done(record);
                                match kind {
                                    SetKind::Add => self.result.stats.applied.add_member += 1,
                                    SetKind::Remove => self.result.stats.applied.remove_member += 1,
                                }
                            }
                        }
                    }
                    Err(StoreError::Refused(_)) if chunk.len() > 1 => {
                        for single in chunk.into_iter().rev() {
                            queue.push_front(vec![single]);
                        }
                    }
                    Err(StoreError::Refused(message)) => {
                        for (_, records) in chunk {
                            for record in records {
                                let reason = format!(
                                    "edge set `{}` of node {node:?}: {} of a member refused: {message}",
                                    self.set_name(edge_set),
                                    kind.name()
                                );
                                self.refuse(record, reason);
                            }
                        }
                    }
                    Err(error) => return Err(Stop { record: lowest, error }),
                }
            }
        }
        Ok(())
    }

    async fn restore(&mut self, record: usize, edge_set: usize, node: &str) -> Result<(), Stop> {
        let deployment = |what: String| Stop {
            record,
            error: StoreError::Deployment(what),
        };
        let config = self.config;
        let set = config
            .edge_sets
            .get(edge_set)
            .ok_or_else(|| deployment(format!("no edge set #{edge_set}")))?;
        let table = config
            .table(&set.table)
            .ok_or_else(|| deployment(format!("no table `{}`", set.table)))?;
        let store = self.store;
        let queried = retrying(
            self.backoff,
            &mut self.result.stats.requests,
            |c| &mut c.query_partition,
            || store.query_partition(&table.name, node),
        )
        .await;
        let items = match queried {
            Ok(items) => items,
            Err(StoreError::Refused(message)) => {
                let reason = format!(
                    "edge set `{}`: Query of node {node:?} refused: {message}",
                    set.attribute
                );
                self.refuse(record, reason);
                return Ok(());
            }
            Err(error) => return Err(Stop { record, error }),
        };
        let mut members: Vec<String> = items
            .iter()
            .filter(|item| matches!(edge::classify(set, table, item), Ok(GraphItem::Edge { node: n, .. }) if n == node))
            .filter_map(|item| edge::member(set, item).ok().flatten())
            .collect();
        members.sort_unstable();
        members.dedup();
        let mut queue = if members.is_empty() {
            VecDeque::from([Vec::new()])
        } else {
            chunks(members, |m| m.as_str())
        };
        while let Some(chunk) = queue.pop_front() {
            match self.send_set(edge_set, node, SetChange::Add(chunk)).await {
                Ok(outcome) => {
                    self.count_outcome(outcome);
                    if outcome != SetOutcome::Applied {
                        break;
                    }
                }
                Err(StoreError::Refused(message)) => {
                    let reason = format!(
                        "edge set `{}`: restore of node {node:?} refused: {message}",
                        set.attribute
                    );
                    self.refuse(record, reason);
                    return Ok(());
                }
                Err(error) => return Err(Stop { record, error }),
            }
        }
        self.done(record);
        self.result.stats.applied.restore_set += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
