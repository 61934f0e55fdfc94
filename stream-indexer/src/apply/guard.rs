//! How the executor versions and guards its writes ([`Stamping`]): each
//! record's version, and which [`Guard`] the caller chose.
//!
//! - [`Guard::InOrder`] (the Lambda path and the local runner, where the
//!   records of one item come in stream order): row writes stay in
//!   unconditional BatchWriteItem calls, each put carrying its version and
//!   each delete a tombstone; a node's set update also sets the node's edge
//!   mark. The same requests as without versions: the path stays at its
//!   minimum.
//! - [`Guard::Newer`] (replay into tables, redrive): every row write is a
//!   conditional PutItem that only replaces an older version; a node's set
//!   update is conditioned on the node's mark not being newer than the
//!   record, one record per request. What fails its condition is skipped
//!   and counted (`ApplyStats::stale`), never an error.
//! - [`Guard::AsRead`] (rebuild and repair: optimistic concurrency): each
//!   write is conditioned on the version being what was read *before* the
//!   source items were read, and keeps that version, so that any stream
//!   record that landed since wins and any later one still beats it.

use std::collections::HashMap;
use std::sync::Arc;

use model::index::RowKey;
use model::Version;

/// The versions rebuild or repair read before reading the source items.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReadVersions {
    /// `(index, row key)` → the version of the row or tombstone read
    /// (`None`: nothing was there).
    pub rows: HashMap<(usize, RowKey), Option<Version>>,
    /// `(edge set, node)` → the node's edge mark read (`None`: no mark).
    pub marks: HashMap<(usize, String), Option<Version>>,
}

impl ReadVersions {
    pub fn row(&self, index: usize, key: &RowKey) -> Option<&Version> {
        self.rows.get(&(index, key.clone())).and_then(Option::as_ref)
    }

    pub fn mark(&self, edge_set: usize, node: &str) -> Option<&Version> {
        self.marks.get(&(edge_set, node.to_owned())).and_then(Option::as_ref)
    }
}

/// Where the executor's writes may meet records out of order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Guard {
    #[default]
    InOrder,
    Newer,
    AsRead(Arc<ReadVersions>),
}

impl Guard {
    /// Whether writes are conditional.
    pub fn is_guarded(&self) -> bool {
        *self != Guard::InOrder
    }
}

/// Each record's version (by record number) and the guard.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stamping {
    pub versions: Vec<Version>,
    pub guard: Guard,
}

impl Stamping {
    pub fn new(versions: Vec<Version>, guard: Guard) -> Stamping {
        Stamping { versions, guard }
    }

    /// The version of record `record` (the lowest when unknown: anything
    /// beats it).
    pub fn version(&self, record: usize) -> Version {
        self.versions.get(record).cloned().unwrap_or_else(Version::zero)
    }

    /// The version a row write of `record` carries: the record's, or under
    /// [`Guard::AsRead`] the version read (zero where nothing was).
    pub fn row_version(&self, record: usize, index: usize, key: &RowKey) -> Version {
        match &self.guard {
            Guard::AsRead(read) => read.row(index, key).cloned().unwrap_or_else(Version::zero),
            Guard::InOrder | Guard::Newer => self.version(record),
        }
    }

    /// The condition of a guarded row write (`None`: unconditional).
    pub fn row_guard(&self, index: usize, key: &RowKey) -> Option<crate::store::RowGuard> {
        match &self.guard {
            Guard::InOrder => None,
            Guard::Newer => Some(crate::store::RowGuard::Newer),
            Guard::AsRead(read) => Some(crate::store::RowGuard::AsRead(read.row(index, key).cloned())),
        }
    }
}

#[cfg(test)]
mod kinesis_tests;
#[cfg(test)]
mod tests;
