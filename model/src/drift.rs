//! Drift: where the derived data (index rows, edge sets) differs from what the
//! source tables say it should be, and the corrections that remove it.
//!
//! Everything here is pure. The expected data is derived with the same
//! functions the planner uses ([`crate::index::rows`], [`crate::edge::classify`],
//! [`crate::edge::member`]), so verify and the planner agree by construction:
//!
//! - an index row is expected for every key of `index::rows(item)`, carrying
//!   its projection; an item that cannot be indexed (a value of the wrong
//!   type, a sort key over 1,024 bytes) expects no row, exactly as the planner
//!   leaves it (it deletes the old rows and quarantines the record), and is
//!   reported as a [`Notice`];
//! - a node item's set is expected to hold the members of the edges of its
//!   partition (of the included types, with every member part present) and
//!   the marker `complete_attribute = true`; past `max_members` the node is
//!   expected *flagged* (`complete_attribute = false`), and then only members
//!   that are no edge's are wrong (a flagged set may lack any member: readers
//!   Query the partition instead).
//!
//! [`Verification`] accumulates a whole check (source items, then the index
//! tables' rows) into a [`Report`]: findings (each a [`DriftKind`] and the one
//! [`Correction`], a [`Mutation`], that removes it) and notices (what an operator should know
//! that is not drift). [`compare_row`] and [`compare_set`] are the two
//! comparisons everything else goes through, also when a correction is
//! checked again against a fresh read before it is written.
//!
//! Values are compared as DynamoDB compares them: numbers by value (`3.0`
//! equals `3`), sets as sets, whatever the order their members came in.

use std::collections::{BTreeMap, BTreeSet};

use crate::config::{Config, EdgeSetConfig, TableConfig};
use crate::edge::{self, GraphItem};
use crate::index::{self, RowKey};
pub use crate::plan::{Mutation, Target};
use crate::sortkey;
use crate::value::{Image, Value};

/// What is wrong with one index row or one node's edge set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DriftKind {
    /// An index row the source item produces is not in the index table.
    MissingRow,
    /// An index row no source item produces.
    ExtraRow,
    /// An index row whose attributes differ from the source item's projection.
    WrongProjection,
    /// An edge's member is not in its node's set (and the node is not past `max_members`).
    MissingMember,
    /// A member of a node's set that no edge of the node's partition produces.
    ExtraMember,
    /// The node has more edges than `max_members` but is not flagged
    /// (`complete_attribute` is not `false`): readers trust an incomplete set.
    FlagMissing,
    /// The node is flagged (`complete_attribute = false`) though its edges fit
    /// within `max_members`: readers Query needlessly.
    FlagStale,
    /// The node has no completeness marker (or not a BOOL): its set was never
    /// built, or a PutItem wiped it and the restore never happened.
    MarkerMissing,
}

impl DriftKind {
    /// Every kind, in report order.
    pub const ALL: [DriftKind; 8] = [
        DriftKind::MissingRow,
        DriftKind::ExtraRow,
        DriftKind::WrongProjection,
        DriftKind::MissingMember,
        DriftKind::ExtraMember,
        DriftKind::FlagMissing,
        DriftKind::FlagStale,
        DriftKind::MarkerMissing,
    ];

    /// The name used in reports: `missing_row`, `extra_row`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            DriftKind::MissingRow => "missing_row",
            DriftKind::ExtraRow => "extra_row",
            DriftKind::WrongProjection => "wrong_projection",
            DriftKind::MissingMember => "missing_member",
            DriftKind::ExtraMember => "extra_member",
            DriftKind::FlagMissing => "flag_missing",
            DriftKind::FlagStale => "flag_stale",
            DriftKind::MarkerMissing => "marker_missing",
        }
    }

    /// One line for an operator.
    pub fn describe(self) -> &'static str {
        match self {
            DriftKind::MissingRow => "index rows missing (the source item produces them)",
            DriftKind::ExtraRow => "index rows no source item produces",
            DriftKind::WrongProjection => "index rows with attributes that differ from the source item's",
            DriftKind::MissingMember => "edge-set members missing (the edge exists)",
            DriftKind::ExtraMember => "edge-set members no edge produces",
            DriftKind::FlagMissing => "nodes past max_members that are not flagged",
            DriftKind::FlagStale => "nodes flagged though their edges fit within max_members",
            DriftKind::MarkerMissing => "nodes without the completeness marker",
        }
    }
}

impl std::fmt::Display for DriftKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A correction is the [`Mutation`] that removes one finding, carried out by
/// the same executor as the planner's mutations: `PutRow`, `DeleteRow`,
/// `AddMember`, `RemoveMember` or `SetMarker` (never `RestoreSet`: a repair
/// says which members to add). The name is kept for the reports' vocabulary.
pub type Correction = Mutation;

/// One piece of drift: what is wrong and the correction that removes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub kind: DriftKind,
    pub correction: Mutation,
    /// The primary key of the source item the finding is about (for a row:
    /// the item that produces it, or for an extra row the key attributes it
    /// carries; for a node: the node's key), when known.
    pub source: Option<Image>,
    /// What was found instead, for [`DriftKind::WrongProjection`]: the row's
    /// attributes.
    pub found: Option<Image>,
}

/// Something an operator should know that is not drift.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NoticeKind {
    /// A node past `max_members`, correctly flagged: readers Query its partition.
    Flagged,
    /// A source item (or one `for_each` entry of it) that produces no index
    /// row because a value cannot be indexed; the indexer quarantined its record.
    Unindexable,
    /// An edge item whose member cannot be built (a part of the wrong type), or
    /// an item of a table with an edge set whose keys are not Strings.
    BadEdge,
    /// A node's set attribute holds something other than a String Set: it is
    /// read as empty, and set updates on the node are refused until it is fixed.
    BadSet,
}

impl NoticeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeKind::Flagged => "flagged",
            NoticeKind::Unindexable => "unindexable",
            NoticeKind::BadEdge => "bad_edge",
            NoticeKind::BadSet => "bad_set",
        }
    }
}

/// One notice: what, in which table, about which item.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub kind: NoticeKind,
    /// The index name or the edge set's `TABLE.ATTRIBUTE` it concerns.
    pub about: String,
    /// The source item's primary key.
    pub key: Image,
    pub detail: String,
}

/// Which derived data a check covers: positions in the config's `indexes`
/// and `edge_sets`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scope {
    pub indexes: BTreeSet<usize>,
    pub edge_sets: BTreeSet<usize>,
}

impl Scope {
    /// Every index and edge set of the config.
    pub fn all(config: &Config) -> Scope {
        Scope {
            indexes: (0..config.indexes.len()).collect(),
            edge_sets: (0..config.edge_sets.len()).collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.indexes.is_empty() && self.edge_sets.is_empty()
    }

    /// The source tables whose items the scope's derived data comes from, in config order.
    pub fn source_tables<'c>(&self, config: &'c Config) -> Vec<&'c TableConfig> {
        config
            .tables
            .iter()
            .filter(|t| {
                self.indexes
                    .iter()
                    .any(|&i| config.indexes.get(i).is_some_and(|x| x.source.table == t.name))
                    || self
                        .edge_sets
                        .iter()
                        .any(|&e| config.edge_sets.get(e).is_some_and(|x| x.table == t.name))
            })
            .collect()
    }

    /// The part of the scope derived from one source table.
    pub fn of_table(&self, config: &Config, table: &str) -> Scope {
        Scope {
            indexes: self
                .indexes
                .iter()
                .copied()
                .filter(|&i| config.indexes.get(i).is_some_and(|x| x.source.table == table))
                .collect(),
            edge_sets: self
                .edge_sets
                .iter()
                .copied()
                .filter(|&e| config.edge_sets.get(e).is_some_and(|x| x.table == table))
                .collect(),
        }
    }
}

/// What the tally of a check counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Scanned {
    /// Source items read.
    pub items: u64,
    /// Index rows read.
    pub rows: u64,
    /// Node items checked.
    pub nodes: u64,
}

/// The result of a check.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Report {
    /// Rows first (by index and key), then nodes (by edge set and node); a
    /// node's findings in the order to apply them (see [`SetCheck`]).
    pub findings: Vec<Finding>,
    pub notices: Vec<Notice>,
    pub scanned: Scanned,
}

impl Report {
    /// No drift (notices are not drift).
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }

    /// Findings by kind (every kind present, zeros included).
    pub fn counts(&self) -> BTreeMap<DriftKind, usize> {
        let mut counts: BTreeMap<DriftKind, usize> = DriftKind::ALL.iter().map(|k| (*k, 0)).collect();
        for f in &self.findings {
            *counts.entry(f.kind).or_default() += 1;
        }
        counts
    }

    /// Notices by kind (only kinds present).
    pub fn notice_counts(&self) -> BTreeMap<NoticeKind, usize> {
        let mut counts = BTreeMap::new();
        for n in &self.notices {
            *counts.entry(n.kind).or_default() += 1;
        }
        counts
    }

    /// Appends another report's findings and notices and adds its counts.
    pub fn merge(&mut self, other: Report) {
        self.findings.extend(other.findings);
        self.notices.extend(other.notices);
        self.scanned.items += other.scanned.items;
        self.scanned.rows += other.scanned.rows;
        self.scanned.nodes += other.scanned.nodes;
    }
}

mod compare;
mod verification;
pub use compare::*;
pub use verification::*;

#[cfg(test)]
mod tests;
