//! One change to derived data ([`Mutation`]) and where it goes ([`Target`]).
//!
//! The planner plans mutations from change records; `drift` (verify, repair,
//! rebuild) finds the corrections that remove drift, and a correction is a
//! mutation too. One executor carries out both.

use crate::index::RowKey;
use crate::value::Projection;

/// One change to derived data. `index` and `edge_set` are positions in the
/// config's `indexes` and `edge_sets`.
#[derive(Debug, Clone, PartialEq)]
pub enum Mutation {
    /// Write the index row with these attributes (the key attributes are added
    /// by the executor under the index's key names).
    PutRow {
        index: usize,
        key: RowKey,
        attributes: Projection,
    },
    /// Delete the index row.
    DeleteRow { index: usize, key: RowKey },
    /// Add `member` to the set on node `node` (key: partition = sort = `node`),
    /// if the node exists.
    AddMember {
        edge_set: usize,
        node: String,
        member: String,
    },
    /// Remove `member` from the set on node `node`, if the node exists.
    RemoveMember {
        edge_set: usize,
        node: String,
        member: String,
    },
    /// Rebuild the set of node `node` from a Query of its partition.
    RestoreSet { edge_set: usize, node: String },
    /// Set node `node`'s `complete_attribute` to `complete` outright, if the
    /// node exists (`true`: its set is complete; `false`: the node is
    /// flagged). The planner never plans it (the pipeline's own writes keep
    /// the marker); repair and rebuild do, after the members they add.
    SetMarker {
        edge_set: usize,
        node: String,
        complete: bool,
    },
}

impl Mutation {
    /// A short name for metrics, logs and reports.
    pub fn kind(&self) -> &'static str {
        match self {
            Mutation::PutRow { .. } => "put_row",
            Mutation::DeleteRow { .. } => "delete_row",
            Mutation::AddMember { .. } => "add_member",
            Mutation::RemoveMember { .. } => "remove_member",
            Mutation::RestoreSet { .. } => "restore_set",
            Mutation::SetMarker { .. } => "set_marker",
        }
    }

    /// The index row or node item it changes.
    pub fn target(&self) -> Target {
        match self {
            Mutation::PutRow { index, key, .. } | Mutation::DeleteRow { index, key } => Target::Row {
                index: *index,
                key: key.clone(),
            },
            Mutation::AddMember { edge_set, node, .. }
            | Mutation::RemoveMember { edge_set, node, .. }
            | Mutation::RestoreSet { edge_set, node }
            | Mutation::SetMarker { edge_set, node, .. } => Target::Node {
                edge_set: *edge_set,
                node: node.clone(),
            },
        }
    }
}

/// Where a mutation goes: one index row, or one node item.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    Row { index: usize, key: RowKey },
    Node { edge_set: usize, node: String },
}
