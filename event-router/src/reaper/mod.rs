//! The TTL reaper: the target of every route with `reap = true`. For an
//! expired (or removed) node it deletes the node's remaining edges, in and
//! out, through the [`Graph`] port; what to delete is `model::reap`'s
//! decision. The deletes flow through the table's stream, so the indexer
//! updates the edge sets of the nodes on the other side.
//!
//! One event:
//!
//! 1. Read the node (strongly consistent). If it exists again (written after
//!    it expired), the event is stale: nothing is deleted.
//! 2. Query the node's partition (its out-edges) and, for each included edge
//!    type `T`, the `target_index` partition `T-NODE` (its in-edges).
//! 3. Delete what was found, 25 keys a request, resending unprocessed keys
//!    with backoff.
//!
//! For a table read from a Kinesis data stream, which may deliver the
//! expiry after newer changes, an edge whose newest change in the ledger
//! (see `model::ledger`) is newer than the expiry is kept: it was written
//! after the node expired.
//!
//! Idempotent: a redelivered event finds nothing left to delete. Not
//! atomic: a node written again *during* a reap may lose edges written
//! between steps 1 and 3 (milliseconds; the stream then removes their
//! members too, so the edge sets stay consistent with the table).
//!
//! Errors: a malformed event or one that names no node is a
//! [`ReaperError::Event`] (the Lambda fails, so EventBridge retries and
//! then sends it to the target's dead-letter queue: never lost); a failing
//! read or delete is [`ReaperError::Store`], retryable when transient.

pub mod dynamo;
pub mod lambda;

use std::future::Future;
use std::sync::Arc;

use aws_kit::retry::{self, Partial, Resend};
use model::config::ChangeSource;
use model::config::Config;
use model::reap::{self, ReapError};
use model::Image;
use model::{Backoff, Fault, Version};

use crate::ledger::Ledger;

/// A failed read or delete (the one error type of every port).
pub type StoreError = Fault;

/// BatchWriteItem takes at most this many deletes.
pub const MAX_DELETES: usize = 25;

/// What the reaper needs of a source table.
pub trait Graph: Send + Sync {
    /// The item with this primary key, read strongly consistent.
    fn get(&self, table: &str, key: &Image) -> impl Future<Output = Result<Option<Image>, StoreError>> + Send;

    /// Every item of one partition (String partition key value).
    fn partition(&self, table: &str, partition: &str) -> impl Future<Output = Result<Vec<Image>, StoreError>> + Send;

    /// The items of `index` (the edge set's `target_index`: partition key =
    /// the table's sort key) whose sort key is `target`: at least their keys.
    fn pointing_at(
        &self,
        table: &str,
        index: &str,
        target: &str,
    ) -> impl Future<Output = Result<Vec<Image>, StoreError>> + Send;

    /// Deletes at most [`MAX_DELETES`] items by key; returns the keys left
    /// unprocessed (to send again).
    fn delete(&self, table: &str, keys: Vec<Image>) -> impl Future<Output = Result<Vec<Image>, StoreError>> + Send;
}

/// Why an event was not reaped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReaperError {
    /// The event itself is wrong: it will never be reaped.
    #[error("{0}")]
    Event(#[from] ReapError),
    /// Reading or deleting failed (after retries, when transient).
    #[error("reaping node `{node}` of table `{table}`: {source}")]
    Store {
        table: String,
        node: String,
        #[source]
        source: StoreError,
    },
}

impl ReaperError {
    pub fn is_retryable(&self) -> bool {
        match self {
            ReaperError::Event(_) => false,
            ReaperError::Store { source, .. } => source.is_retryable(),
        }
    }
}

/// What one event did.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[must_use]
#[serde(rename_all = "camelCase")]
pub struct Reaped {
    pub table: String,
    pub node: String,
    pub sequence_number: String,
    /// The node existed again: nothing was deleted.
    pub node_exists: bool,
    /// Items deleted: out-edges and in-edges.
    pub deleted: usize,
    pub out_edges: usize,
    pub in_edges: usize,
    /// Requests made (every attempt counts).
    pub requests: usize,
    /// Edges kept because a change of theirs is newer than the expiry (a
    /// table read from Kinesis).
    #[serde(default)]
    pub newer_kept: usize,
}

/// Reaps expired nodes through a [`Graph`].
pub struct Reaper<G: Graph> {
    config: Arc<Config>,
    graph: G,
    backoff: Backoff,
    /// The router's ledger, for tables read from Kinesis.
    ledger: Option<Arc<dyn Ledger>>,
}

impl<G: Graph> Reaper<G> {
    pub fn new(config: Arc<Config>, graph: G, backoff: Backoff) -> Self {
        Reaper {
            config,
            graph,
            backoff,
            ledger: None,
        }
    }

    /// The reaper reading when edges last changed from `ledger` (none:
    /// every edge found is deleted).
    pub fn with_ledger(mut self, ledger: Option<Arc<dyn Ledger>>) -> Self {
        self.ledger = ledger;
        self
    }

    pub fn graph(&self) -> &G {
        &self.graph
    }

    /// Reaps the node an EventBridge event (JSON) names. See the module doc.
    pub async fn reap(&self, event: &[u8]) -> Result<Reaped, ReaperError> {
        let target = reap::target(&self.config, event)?;
        let mut reaped = Reaped {
            table: target.table.clone(),
            node: target.node.clone(),
            sequence_number: target.sequence_number.clone(),
            ..Reaped::default()
        };
        let failed = |source: StoreError| ReaperError::Store {
            table: target.table.clone(),
            node: target.node.clone(),
            source,
        };
        // (`target` names a declared table with an edge set.)
        let (Some(table), Some(set)) = (self.config.table(&target.table), self.config.edge_set(&target.table)) else {
            return Ok(reaped);
        };

        reaped.requests += 1;
        let node = self
            .retrying(|| self.graph.get(&target.table, &target.key))
            .await
            .map_err(failed)?;
        if node.is_some() {
            reaped.node_exists = true;
            tracing::info!(table = %target.table, node = %target.node, "node exists again: nothing to reap");
            return Ok(reaped);
        }

        reaped.requests += 1;
        let out = self
            .retrying(|| self.graph.partition(&target.table, &target.node))
            .await
            .map_err(failed)?;
        let out = reap::deletions(table, &target, out);
        let mut found = out.clone();
        for partition in reap::in_edge_partitions(set, &target.node) {
            reaped.requests += 1;
            let pointing = self
                .retrying(|| self.graph.pointing_at(&target.table, &set.target_index, &partition))
                .await
                .map_err(failed)?;
            found.extend(pointing);
        }
        let keys = reap::deletions(table, &target, found);
        let out_edges = out.len();
        let (keys, newer) = self
            .older_than_removal(table, &target, keys, &mut reaped)
            .await
            .map_err(failed)?;
        reaped.newer_kept = newer;
        reaped.out_edges = out_edges;
        reaped.in_edges = (keys.len() + newer).saturating_sub(out_edges);
        for chunk in keys.chunks(MAX_DELETES) {
            reaped.requests += self.delete_all(&target.table, chunk.to_vec()).await.map_err(failed)?;
            reaped.deleted += chunk.len();
        }
        tracing::info!(table = %target.table, node = %target.node, out_edges = reaped.out_edges, in_edges = reaped.in_edges, "reaped");
        Ok(reaped)
    }

    /// `keys` without the items changed after the node's removal, and how
    /// many those were: for a table read from Kinesis with a ledger; all
    /// of `keys` otherwise.
    async fn older_than_removal(
        &self,
        table: &model::config::TableConfig,
        target: &reap::Reap,
        keys: Vec<Image>,
        reaped: &mut Reaped,
    ) -> Result<(Vec<Image>, usize), StoreError> {
        let (Some(ledger), ChangeSource::Kinesis(kinesis), Some(removed)) =
            (&self.ledger, table.stream, target.removed)
        else {
            return Ok((keys, 0));
        };
        let removal = Version::of_created(removed, kinesis.precision)
            .map_err(|e| StoreError::refused(format!("the event's approximateCreationTime: {e}")))?;
        let mut kept = Vec::with_capacity(keys.len());
        let mut newer = 0;
        for key in keys {
            let item = model::ledger::item_of(table, &key);
            reaped.requests += 1;
            let newest = self.retrying(|| ledger.newest(&item)).await?;
            if newest.is_some_and(|v| v > removal) {
                newer += 1;
            } else {
                kept.push(key);
            }
        }
        Ok((kept, newer))
    }

    /// One read, retried with backoff while it fails transiently.
    async fn retrying<T, F, Fut>(&self, mut call: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
    {
        retry::call(&self.backoff, |_| call()).await
    }

    /// Deletes keys until none is left unprocessed; the requests made.
    async fn delete_all(&self, table: &str, keys: Vec<Image>) -> Result<usize, StoreError> {
        let mut requests = 0;
        let mut resend = Resend::new(&self.backoff, keys, Vec::len);
        while let Some((_, keys)) = resend.next_attempt() {
            requests += 1;
            let partial = match self.graph.delete(table, keys.clone()).await {
                Ok(left) if left.is_empty() => Partial::Done,
                Ok(left) => {
                    let still = format!("{} deletes still unprocessed", left.len());
                    Partial::Left(left, StoreError::transient(still))
                }
                Err(e) => Partial::Failed(keys, e),
            };
            resend.sent(partial).await;
        }
        resend.finish().map_err(|(fault, _)| fault)?;
        Ok(requests)
    }
}
