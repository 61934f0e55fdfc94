//! The `Store` port: the kinds of request the executor makes of DynamoDB
//! (row writes, set changes, partition Queries, and the marker writes of
//! repair and rebuild).
//!
//! Batching, coalescing, ordering and retries are decided above this port
//! (in `apply`), so the DynamoDB and the in-memory implementations differ
//! only in I/O. Every request is idempotent: a row write is last-writer-wins
//! on one key, a set change is an ADD or DELETE of members.

pub mod dynamo;
#[cfg(any(test, feature = "testing"))]
pub mod faulty;
#[cfg(any(test, feature = "testing"))]
pub mod hooked;
pub mod memory;
pub mod scan;

use std::future::Future;

use aws_kit::clock::Clock;

use model::index::RowKey;
use model::{Image, Version};

/// At most this many writes go in one `write_rows` call (BatchWriteItem's limit).
pub const MAX_BATCH_WRITES: usize = 25;

/// At most this many conditional PutItems of one call's row writes are in
/// flight at a time ([`Store::put_rows_if`]); with the calls in flight
/// (`Options::concurrency`), a batch holds at most their product open.
pub const MAX_ROW_PUTS_IN_FLIGHT: usize = 8;

/// One write to an index row: a put (with the row's non-key attributes) or a
/// delete. Either carries its source version (`model::version`): a put
/// stores it on the row, a delete leaves a *tombstone* (the key, the
/// version and [`model::version::TOMBSTONE_ATTRIBUTE`], the expiry the
/// index table's TTL acts on: now + `[pipeline] tombstone_ttl_hours`). A
/// tombstone is absent to every reader; it is there so that an older record
/// cannot bring the row back.
#[derive(Debug, Clone, PartialEq)]
pub struct RowWrite {
    /// Position of the index in the config's `indexes`.
    pub index: usize,
    pub key: RowKey,
    /// `Some(attributes)` puts the row, `None` deletes it (a tombstone).
    pub put: Option<model::Projection>,
    /// The version of what it was derived from.
    pub version: Version,
}

/// The condition of a guarded row write ([`Store::put_row_if`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowGuard {
    /// Only over an older version (or none): `attribute_not_exists(v) OR v < :v`.
    Newer,
    /// Only over exactly what was read before (rebuild and repair's
    /// optimistic concurrency): this version, or no row and no tombstone.
    AsRead(Option<Version>),
}

/// What a guarded row write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowOutcome {
    Written,
    /// The condition failed: what is there is newer (or changed since it was
    /// read). Nothing was written; this is success, not an error.
    Stale,
}

/// The condition of a guarded node update, on the node's edge mark
/// ([`model::version::EDGE_MARK_ATTRIBUTE`]), beside the node-exists one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum MarkGuard {
    /// No condition on the mark (the in-order Lambda path).
    #[default]
    None,
    /// Only if the mark is absent or not newer than this version (a
    /// record's own changes may take two requests, so equal passes; they
    /// are idempotent).
    NotNewer(Version),
    /// Only if the mark is exactly what was read (or absent if `None`).
    AsRead(Option<Version>),
}

/// The versioning of each member of a node update: what an edge set of a
/// table read from a Kinesis data stream keeps, where the records of two
/// edges of one node may come in either order, so that one node-wide mark
/// cannot tell which is newer. Each member's version is kept on the node
/// item in its own attribute ([`model::version::member_version_attribute`]),
/// also once the member is removed: that is what lets an older ADD lose to
/// a newer DELETE.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum MemberStamp<'a> {
    /// No per-member versions (a table read from its DynamoDB stream).
    #[default]
    None,
    /// Only if every member's version is older than `version` (or absent);
    /// sets each to `version`.
    Newer { version: Version, members: &'a [String] },
    /// Sets each member's version to `version` where it has none: a
    /// restore, which adds the members the table holds now.
    Restore { version: Version, members: &'a [String] },
}

impl<'a> MemberStamp<'a> {
    /// The version and members, if any.
    pub fn parts(&self) -> Option<(&Version, &'a [String])> {
        match self {
            MemberStamp::None => None,
            MemberStamp::Newer { version, members } | MemberStamp::Restore { version, members } => {
                Some((version, members))
            }
        }
    }

    /// Whether the guard lets an update through a node whose members hold
    /// the versions `held` gives.
    pub fn admits(&self, held: impl Fn(&str) -> Option<Version>) -> bool {
        match self {
            MemberStamp::Newer { version, members } => members.iter().all(|m| held(m).is_none_or(|h| h < *version)),
            MemberStamp::None | MemberStamp::Restore { .. } => true,
        }
    }
}

/// The versioning of a node update: the condition, and the mark it leaves.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SetStamp<'a> {
    pub guard: MarkGuard,
    /// `SET mark = this` with the update (`None`: the mark is left as is).
    pub mark: Option<Version>,
    /// The members' own versions (an edge set read from Kinesis).
    pub members: MemberStamp<'a>,
}

impl SetStamp<'_> {
    /// Whether the guard lets an update through a node holding `mark`.
    pub fn admits(&self, mark: Option<&Version>) -> bool {
        match &self.guard {
            MarkGuard::None => true,
            MarkGuard::NotNewer(v) => mark.is_none_or(|m| m <= v),
            MarkGuard::AsRead(read) => mark == read.as_ref(),
        }
    }
}

/// A change to one node's edge set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetChange {
    /// `ADD` these members (distinct). `Add(vec![])` means "marker only":
    /// DynamoDB refuses an empty set, so the update is just
    /// `SET complete_attribute = if_not_exists(complete_attribute, true)`,
    /// under the same node-exists condition (a restore of a node without edges).
    Add(Vec<String>),
    /// `DELETE` these members (distinct). The executor never sends an empty
    /// one; an implementation may treat it as marker only, like `Add(vec![])`.
    Remove(Vec<String>),
}

impl SetChange {
    /// The members, whichever the change.
    pub fn members(&self) -> &[String] {
        match self {
            SetChange::Add(members) | SetChange::Remove(members) => members,
        }
    }

    /// The members, whichever the change.
    pub fn into_members(self) -> Vec<String> {
        match self {
            SetChange::Add(members) | SetChange::Remove(members) => members,
        }
    }
}

/// What a set change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOutcome {
    /// The members were added or removed, and the node carries the marker.
    Applied,
    /// There is no node item: nothing to update, and nothing was created.
    NodeMissing,
    /// Adding would pass `max_members`: the members were not added and the
    /// node's `complete_attribute` is now `false`.
    Flagged,
    /// The node's edge mark failed the [`SetStamp`]'s guard: the set
    /// already reflects a newer record (or changed since it was read).
    /// Nothing was written.
    Stale,
}

/// A request that failed: the one error type of every port
/// (`model::Fault`, classified transient / refused / deployment).
pub type StoreError = model::Fault;

/// Where an edge set's members are kept: the set's config, its table, and
/// the table's sort key.
#[derive(Debug, Clone, Copy)]
pub struct EdgeTarget<'c> {
    pub set: &'c model::config::EdgeSetConfig,
    pub table: &'c model::config::TableConfig,
    pub sort_key: &'c str,
}

/// The edge set at position `edge_set` of `config`, its table and sort key,
/// for `request` (named in the error). A plan and the store that carries it
/// out share one config, so a position or a table the config lacks says the
/// deployment is wrong: a deployment fault (retried, never quarantined).
pub fn edge_target<'c>(
    config: &'c model::Config,
    edge_set: usize,
    request: &str,
) -> Result<EdgeTarget<'c>, StoreError> {
    let set = config.edge_sets.get(edge_set).ok_or_else(|| {
        StoreError::deployment(format!(
            "{request}: edge set #{edge_set} is not in the config ({} edge sets)",
            config.edge_sets.len()
        ))
    })?;
    let table = config.table(&set.table).ok_or_else(|| {
        StoreError::deployment(format!("{request} on table `{}`: the table is not declared", set.table))
    })?;
    let sort_key = table.sort_key.as_deref().ok_or_else(|| {
        StoreError::deployment(format!(
            "{request} on table `{}`: an edge set needs a table with a sort key",
            set.table
        ))
    })?;
    Ok(EdgeTarget { set, table, sort_key })
}

/// When a tombstone written now expires (epoch seconds): `clock`'s now
/// plus `[pipeline] tombstone_ttl_hours`.
pub fn tombstone_expiry(config: &model::Config, clock: &dyn Clock) -> u64 {
    (clock.now_ms() / 1000).saturating_add(config.pipeline.tombstone_ttl_seconds())
}

/// The indexer's view of DynamoDB.
pub trait Store: Send + Sync {
    /// One BatchWriteItem of at most [`MAX_BATCH_WRITES`] writes to distinct
    /// row keys (possibly of several index tables). Returns the writes that
    /// were not processed (`UnprocessedItems`), for the caller to resend.
    /// The writes are lent, not given: the caller keeps them for a resend,
    /// and a store copies only what it keeps.
    fn write_rows(&self, writes: &[RowWrite]) -> impl Future<Output = Result<Vec<RowWrite>, StoreError>> + Send;

    /// One conditional PutItem of a row (or of its tombstone), under `guard`
    /// on the version stored there. A failed condition is
    /// [`RowOutcome::Stale`], never an error.
    fn put_row_if(
        &self,
        write: &RowWrite,
        guard: &RowGuard,
    ) -> impl Future<Output = Result<RowOutcome, StoreError>> + Send;

    /// The conditional PutItems of several rows (to distinct keys), each
    /// [`Store::put_row_if`] under the guard beside it, sent together (at
    /// most [`MAX_ROW_PUTS_IN_FLIGHT`] at a time): the answer of each, in
    /// order. Writes to distinct keys commute, so they need not wait for
    /// each other.
    fn put_rows_if(
        &self,
        writes: &[RowWrite],
        guards: &[RowGuard],
    ) -> impl Future<Output = Vec<Result<RowOutcome, StoreError>>> + Send {
        use futures::StreamExt;
        let puts = writes
            .iter()
            .zip(guards)
            .map(|(write, guard)| self.put_row_if(write, guard));
        futures::stream::iter(puts).buffered(MAX_ROW_PUTS_IN_FLIGHT).collect()
    }

    /// One UpdateItem of node `node` (partition key = sort key = `node`) in the
    /// table of edge set `edge_set`: ADD or DELETE the members of the set
    /// attribute and `SET complete_attribute = if_not_exists(.., true)`, on
    /// condition that the node exists (a failed condition is
    /// [`SetOutcome::NodeMissing`], never an error, and creates nothing).
    /// An ADD that would take the set past `max_members` flags the node
    /// instead ([`SetOutcome::Flagged`]): "past" counts the set's size after
    /// the ADD, |set ∪ members| > `max_members`, so re-adding members already
    /// present (a replay, a restore of a built set) never flags. A flagged
    /// node gets `complete_attribute = false` (a plain SET, not
    /// `if_not_exists`) and none of the members; the flag stays until the node
    /// is rewritten. A DELETE that empties the set removes the attribute
    /// (DynamoDB does so itself). See `memory::MemoryStore` for the reference
    /// semantics.
    fn update_set(
        &self,
        edge_set: usize,
        node: &str,
        change: SetChange,
    ) -> impl Future<Output = Result<SetOutcome, StoreError>> + Send {
        async move {
            self.update_set_stamped(edge_set, node, &change, SetStamp::default())
                .await
        }
    }

    /// [`Store::update_set`] under a [`SetStamp`]: when the node's edge mark
    /// fails the guard, nothing is written ([`SetOutcome::Stale`]);
    /// otherwise the update also sets the mark the stamp carries. The
    /// change is lent, not given: the executor sends the same one again on
    /// a retry without copying its members.
    fn update_set_stamped(
        &self,
        edge_set: usize,
        node: &str,
        change: &SetChange,
        stamp: SetStamp<'_>,
    ) -> impl Future<Output = Result<SetOutcome, StoreError>> + Send;

    /// Every item of one partition of a source table (a Query, all pages).
    fn query_partition(
        &self,
        table: &str,
        partition: &str,
    ) -> impl Future<Output = Result<Vec<Image>, StoreError>> + Send;

    /// One UpdateItem of node `node` of edge set `edge_set`:
    /// `SET complete_attribute = complete` outright, on condition that the
    /// node exists ([`SetOutcome::NodeMissing`] otherwise; nothing is
    /// created). `false` flags the node ([`SetOutcome::Flagged`]), `true`
    /// marks its set complete ([`SetOutcome::Applied`]). Only repair and
    /// rebuild send it (`Mutation::SetMarker`); the indexer's own set
    /// changes keep the marker.
    fn set_marker(
        &self,
        edge_set: usize,
        node: &str,
        complete: bool,
    ) -> impl Future<Output = Result<SetOutcome, StoreError>> + Send {
        self.set_marker_stamped(edge_set, node, complete, SetStamp::default())
    }

    /// [`Store::set_marker`] under a [`SetStamp`] (see
    /// [`Store::update_set_stamped`]).
    fn set_marker_stamped(
        &self,
        edge_set: usize,
        node: &str,
        complete: bool,
        stamp: SetStamp<'_>,
    ) -> impl Future<Output = Result<SetOutcome, StoreError>> + Send;
}

/// A shared store is a store (one in-memory store behind the indexer and
/// the reaper of a local run).
impl<S: Store> Store for std::sync::Arc<S> {
    fn write_rows(&self, writes: &[RowWrite]) -> impl Future<Output = Result<Vec<RowWrite>, StoreError>> + Send {
        S::write_rows(self, writes)
    }

    fn put_row_if(
        &self,
        write: &RowWrite,
        guard: &RowGuard,
    ) -> impl Future<Output = Result<RowOutcome, StoreError>> + Send {
        S::put_row_if(self, write, guard)
    }

    fn put_rows_if(
        &self,
        writes: &[RowWrite],
        guards: &[RowGuard],
    ) -> impl Future<Output = Vec<Result<RowOutcome, StoreError>>> + Send {
        S::put_rows_if(self, writes, guards)
    }

    fn update_set_stamped(
        &self,
        edge_set: usize,
        node: &str,
        change: &SetChange,
        stamp: SetStamp<'_>,
    ) -> impl Future<Output = Result<SetOutcome, StoreError>> + Send {
        S::update_set_stamped(self, edge_set, node, change, stamp)
    }

    fn query_partition(
        &self,
        table: &str,
        partition: &str,
    ) -> impl Future<Output = Result<Vec<Image>, StoreError>> + Send {
        S::query_partition(self, table, partition)
    }

    fn set_marker_stamped(
        &self,
        edge_set: usize,
        node: &str,
        complete: bool,
        stamp: SetStamp<'_>,
    ) -> impl Future<Output = Result<SetOutcome, StoreError>> + Send {
        S::set_marker_stamped(self, edge_set, node, complete, stamp)
    }
}
