//! Set lanes: the edge-set member changes, restores and markers of one partition-key
//! group, coalesced into as few UpdateItems as order allows (see the parent
//! module's doc). A lane sends one request at a time; the first request that
//! fails for good stops it, and nothing after it is sent.
//!
//! Every request carries a [`SetStamp`] (see `guard`). In order, it sets
//! the node's edge mark to the version of the last record of the lane whose
//! set changes, and every earlier record's, are all done once the request
//! is: coalescing may send a later record's change before an earlier one's,
//! and the mark never claims a record not fully applied. Under
//! `Guard::Newer` a request holds one record's changes (the queue is sent
//! whenever the record changes), conditioned on the mark not being newer
//! than the record, and sets the mark to it. Under `Guard::AsRead` it is
//! conditioned on the mark read and leaves it as is.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;

use model::config::Config;
use model::edge::{self, GraphItem};

use super::{Backoff, Guard, Progress, RequestCounts, Stamping, MAX_MEMBERS_PER_UPDATE, MAX_MEMBER_BYTES_PER_UPDATE};

use crate::store::{
    edge_target, EdgeTarget, MarkGuard, MemberStamp, SetChange, SetOutcome, SetStamp, Store, StoreError,
};

/// One set mutation of a lane.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum SetOp {
    /// ADD or DELETE one member of `node`'s set.
    Member {
        record: usize,
        edge_set: usize,
        node: String,
        kind: SetKind,
        member: String,
    },
    /// Rebuild `node`'s set from a Query of its partition.
    Restore {
        record: usize,
        edge_set: usize,
        node: String,
    },
    /// Set `node`'s completeness marker outright (repair and rebuild).
    Marker {
        record: usize,
        edge_set: usize,
        node: String,
        complete: bool,
    },
}

impl SetOp {
    fn record(&self) -> usize {
        match self {
            SetOp::Member { record, .. } | SetOp::Restore { record, .. } | SetOp::Marker { record, .. } => *record,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SetKind {
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
    let result = aws_kit::retry::call(backoff, |attempt| {
        if attempt > 0 {
            requests.retries += 1;
        }
        *kind(requests) += 1;
        call()
    })
    .await;
    result
}

/// Carries out one group's set mutations (in record order, each record's in
/// plan order). When a request fails for good, every record of the lane
/// whose set mutations are not all done is reported unfinished.
pub(super) async fn run_lane<S: Store>(
    store: &S,
    config: &Config,
    backoff: &Backoff,
    stamping: &Stamping,
    ops: Vec<SetOp>,
) -> Progress {
    let mut lane = Lane {
        store,
        config,
        backoff,
        stamping,
        remaining: BTreeMap::new(),
        settled: 0,
        settled_last: None,
        queue: SetQueue::default(),
        progress: Progress::default(),
    };
    for op in &ops {
        *lane.remaining.entry(op.record()).or_insert(0) += 1;
    }
    if let Err(error) = lane.all(ops).await {
        for (&record, &n) in &lane.remaining {
            if n > 0 {
                lane.progress.unfinished.push((record, error.clone()));
            }
        }
    }
    lane.progress
}

struct Lane<'a, S> {
    store: &'a S,
    config: &'a Config,
    backoff: &'a Backoff,
    stamping: &'a Stamping,
    /// Per record: set mutations not yet done (applied or refused).
    remaining: BTreeMap<usize, usize>,
    /// Every record of the lane below this one is done; `settled_last` is
    /// the last of them (see `prefix_mark`).
    settled: usize,
    settled_last: Option<usize>,
    queue: SetQueue,
    progress: Progress,
}

impl<S: Store> Lane<'_, S> {
    async fn all(&mut self, ops: Vec<SetOp>) -> Result<(), StoreError> {
        for op in ops {
            match op {
                SetOp::Member {
                    record,
                    edge_set,
                    node,
                    kind,
                    member,
                } => self.member(record, edge_set, node, kind, member).await?,
                SetOp::Restore { record, edge_set, node } => self.restore(record, edge_set, node).await?,
                SetOp::Marker {
                    record,
                    edge_set,
                    node,
                    complete,
                } => self.marker(record, edge_set, node, complete).await?,
            }
        }
        self.flush().await
    }

    fn done(&mut self, record: usize) {
        if let Some(n) = self.remaining.get_mut(&record) {
            *n = n.saturating_sub(1);
        }
        self.progress.done.push(record);
    }

    fn refuse(&mut self, record: usize, fault: StoreError) {
        if let Some(n) = self.remaining.get_mut(&record) {
            *n = n.saturating_sub(1);
        }
        self.progress.refuse(record, fault);
    }

    /// Sends the pending requests if they are for another node than `target`.
    async fn retarget(&mut self, edge_set: usize, node: String) -> Result<(), StoreError> {
        let other_node = self
            .queue
            .target
            .as_ref()
            .is_some_and(|(e, n)| *e != edge_set || *n != node);
        if other_node {
            self.flush().await?;
        }
        if self.queue.target.is_none() {
            self.queue.target = Some((edge_set, node));
        }
        Ok(())
    }

    async fn member(
        &mut self,
        record: usize,
        edge_set: usize,
        node: String,
        kind: SetKind,
        member: String,
    ) -> Result<(), StoreError> {
        self.retarget(edge_set, node).await?;
        let other_record = self.queue.last_record.is_some_and(|(r, _)| r != record);
        if self.stamping.guard == Guard::Newer && other_record {
            // One record per request: each is conditioned on its own version.
            let target = self.queue.target.clone();
            self.flush().await?;
            self.queue.target = target;
        }
        self.queue.push(kind, member, record);
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
            SetOutcome::NodeMissing => self.progress.stats.node_missing += 1,
            SetOutcome::Flagged => self.progress.stats.flagged += 1,
            SetOutcome::Stale => self.progress.stats.stale += 1,
        }
    }

    async fn send_set(
        &mut self,
        edge_set: usize,
        node: &str,
        change: &SetChange,
        stamp: SetStamp<'_>,
    ) -> Result<SetOutcome, StoreError> {
        let store = self.store;
        retrying(
            self.backoff,
            &mut self.progress.stats.requests,
            |c| &mut c.update_set,
            || store.update_set_stamped(edge_set, node, change, stamp.clone()),
        )
        .await
    }

    async fn flush(&mut self) -> Result<(), StoreError> {
        let Some(((edge_set, node), requests)) = self.queue.take() else {
            return Ok(());
        };
        for request in requests {
            self.send_request(edge_set, &node, request).await?;
        }
        Ok(())
    }

    /// A barrier like a restore: sends the pending changes (the members a
    /// repair adds go before its `true` marker), then sets the marker.
    async fn marker(&mut self, record: usize, edge_set: usize, node: String, complete: bool) -> Result<(), StoreError> {
        self.flush().await?;
        let store = self.store;
        let stamp = self.stamp(edge_set, &node, &[record], &[record]);
        let sent = retrying(
            self.backoff,
            &mut self.progress.stats.requests,
            |c| &mut c.update_set,
            || store.set_marker_stamped(edge_set, &node, complete, stamp.clone()),
        )
        .await;
        match sent {
            Ok(outcome) => {
                self.count_outcome(outcome);
                self.done(record);
                if outcome != SetOutcome::Stale {
                    self.progress.stats.applied.set_marker += 1;
                }
            }
            Err(error) if error.is_refused() => {
                let context = format!(
                    "edge set `{}`: marker of node {node:?} refused",
                    self.set_name(edge_set)
                );
                self.refuse(record, error.context(context));
            }
            Err(error) => return Err(error),
        }
        Ok(())
    }

    /// A barrier: sends the pending changes, Queries the node's partition,
    /// and opens the queue again with the ADD of every member found.
    async fn restore(&mut self, record: usize, edge_set: usize, node: String) -> Result<(), StoreError> {
        self.flush().await?;
        let config = self.config;
        let EdgeTarget { set, table, .. } = edge_target(config, edge_set, "Query")?;
        let store = self.store;
        let queried = retrying(
            self.backoff,
            &mut self.progress.stats.requests,
            |c| &mut c.query_partition,
            || store.query_partition(&table.name, &node),
        )
        .await;
        let items = match queried {
            Ok(items) => items,
            Err(error) if error.is_refused() => {
                let context = format!("edge set `{}`: Query of node {node:?} refused", set.attribute);
                self.refuse(record, error.context(context));
                return Ok(());
            }
            Err(error) => return Err(error),
        };
        let mut members: Vec<String> = items
            .iter()
            .filter(
                |item| matches!(edge::classify(set, table, *item), Ok(GraphItem::Edge { node: n, .. }) if n == node),
            )
            .filter_map(|item| edge::member(set, item).ok().flatten())
            .collect();
        members.sort_unstable();
        members.dedup();
        self.queue.target = Some((edge_set, node));
        self.queue.push_restore(record, members);
        Ok(())
    }
}

mod mark;
mod queue;
mod request;
#[cfg(test)]
pub(super) use queue::chunks;
use queue::*;
