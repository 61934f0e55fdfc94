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

/// A node's edge set as stored on its item.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SetState {
    pub members: BTreeSet<String>,
    /// The node's `complete_attribute`, when it is a BOOL.
    pub complete: Option<bool>,
}

/// The set and marker stored on a node item; `Err` (with the set read as
/// empty) when the set attribute is not a String Set.
pub fn set_state(set: &EdgeSetConfig, node: &Image) -> Result<SetState, SetState> {
    let complete = match node.get(&set.complete_attribute) {
        Some(Value::Bool(b)) => Some(*b),
        _ => None,
    };
    match node.get(&set.attribute) {
        None => Ok(SetState {
            members: BTreeSet::new(),
            complete,
        }),
        Some(Value::Ss(members)) => Ok(SetState {
            members: members.iter().cloned().collect(),
            complete,
        }),
        Some(_) => Err(SetState {
            members: BTreeSet::new(),
            complete,
        }),
    }
}

/// Compares one index row with what it should be. `expected`: the
/// projection the source item gives the row (`None`: no item produces it);
/// `actual`: the row's non-key attributes (`None`: no such row).
pub fn compare_row(
    index: usize,
    key: &RowKey,
    expected: Option<&Image>,
    actual: Option<&Image>,
) -> Option<(DriftKind, Mutation)> {
    match (expected, actual) {
        (None, None) => None,
        (Some(e), None) => Some((
            DriftKind::MissingRow,
            Mutation::PutRow {
                index,
                key: key.clone(),
                attributes: e.clone(),
            },
        )),
        (None, Some(_)) => Some((
            DriftKind::ExtraRow,
            Mutation::DeleteRow {
                index,
                key: key.clone(),
            },
        )),
        (Some(e), Some(a)) if !same_image(e, a) => Some((
            DriftKind::WrongProjection,
            Mutation::PutRow {
                index,
                key: key.clone(),
                attributes: e.clone(),
            },
        )),
        (Some(_), Some(_)) => None,
    }
}

/// The result of [`compare_set`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SetCheck {
    /// In the order to apply them: a node past the limit is flagged before
    /// anything else; otherwise members are added, then removed, and the
    /// marker set to `true` last, so a reader never sees `true` on a set
    /// still missing members.
    pub findings: Vec<(DriftKind, Mutation)>,
    /// The node has more edges than `max_members` (it should be flagged).
    pub over_limit: bool,
}

/// Compares one node's stored set with the members of its partition's edges.
pub fn compare_set(
    edge_set: usize,
    set: &EdgeSetConfig,
    node: &str,
    actual: &SetState,
    expected: &BTreeSet<String>,
) -> SetCheck {
    let mut findings = Vec::new();
    let marker = |complete| Mutation::SetMarker {
        edge_set,
        node: node.to_owned(),
        complete,
    };
    let extra = actual.members.difference(expected).map(|m| {
        (
            DriftKind::ExtraMember,
            Mutation::RemoveMember {
                edge_set,
                node: node.to_owned(),
                member: m.clone(),
            },
        )
    });
    let over_limit = expected.len() > set.max_members;
    if over_limit {
        if actual.complete != Some(false) {
            findings.push((DriftKind::FlagMissing, marker(false)));
        }
        findings.extend(extra);
    } else {
        findings.extend(expected.difference(&actual.members).map(|m| {
            (
                DriftKind::MissingMember,
                Mutation::AddMember {
                    edge_set,
                    node: node.to_owned(),
                    member: m.clone(),
                },
            )
        }));
        findings.extend(extra);
        match actual.complete {
            Some(true) => {}
            Some(false) => findings.push((DriftKind::FlagStale, marker(true))),
            None => findings.push((DriftKind::MarkerMissing, marker(true))),
        }
    }
    SetCheck { findings, over_limit }
}

/// What the items of one node's partition say about its set: the node item's
/// stored set (`None` when there is no node item) and the members its edges
/// produce. `items` are every item of the partition (a Query).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Partition {
    pub node: Option<(Image, SetState)>,
    pub expected: BTreeSet<String>,
    pub notices: Vec<Notice>,
}

/// Reads a node's partition (see [`Partition`]).
pub fn partition(set: &EdgeSetConfig, table: &TableConfig, node: &str, items: &[Image]) -> Partition {
    let mut out = Partition::default();
    let about = format!("{}.{}", set.table, set.attribute);
    for item in items {
        match edge::classify(set, table, item) {
            Ok(GraphItem::Node { id }) if id == node => {
                let state = set_state(set, item).unwrap_or_else(|state| {
                    out.notices.push(Notice {
                        kind: NoticeKind::BadSet,
                        about: about.clone(),
                        key: key_image(table, item),
                        detail: format!("attribute `{}` is not a String Set", set.attribute),
                    });
                    state
                });
                out.node = Some((key_image(table, item), state));
            }
            Ok(GraphItem::Edge { node: n, .. }) if n == node => match edge::member(set, item) {
                Ok(Some(member)) => {
                    out.expected.insert(member);
                }
                Ok(None) => {}
                Err(e) => out.notices.push(Notice {
                    kind: NoticeKind::BadEdge,
                    about: about.clone(),
                    key: key_image(table, item),
                    detail: e.to_string(),
                }),
            },
            _ => {}
        }
    }
    out
}

/// The primary key attributes of `item` in `table`.
pub fn key_image(table: &TableConfig, item: &Image) -> Image {
    table
        .primary_key()
        .into_iter()
        .filter_map(|name| item.get(name).map(|v| (name.to_owned(), v.clone())))
        .collect()
}

/// The key of the source item an index row says it comes from: the source
/// table's key attributes, which every row carries. `None` if one is missing.
pub fn row_source(table: &TableConfig, attributes: &Image) -> Option<Image> {
    let key = key_image(table, attributes);
    (key.len() == table.primary_key().len()).then_some(key)
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

/// A row some source item produces, not yet matched with a stored row.
#[derive(Debug, Clone, PartialEq)]
struct ExpectedRow {
    attributes: Image,
    source: Image,
}

/// One whole check: feed it every source item of the scope's tables
/// ([`Verification::source_item`]) and then every row of the scope's index
/// tables ([`Verification::index_row`]); [`Verification::finish`] gives the
/// report.
///
/// Memory: the rows the source items produce are held until their stored row
/// is seen (key, projection and source key of each), and every node's stored
/// set and the members its edges produce; stored rows are compared as they
/// come and only findings are kept.
#[derive(Debug)]
pub struct Verification<'c> {
    config: &'c Config,
    scope: Scope,
    rows: BTreeMap<(usize, RowKey), ExpectedRow>,
    /// Rows compared, with their finding (kept sorted at the end).
    found: Vec<Finding>,
    nodes: BTreeMap<(usize, String), (Image, SetState)>,
    members: BTreeMap<(usize, String), BTreeSet<String>>,
    notices: Vec<Notice>,
    scanned: Scanned,
}

impl<'c> Verification<'c> {
    pub fn new(config: &'c Config, scope: Scope) -> Verification<'c> {
        Verification {
            config,
            scope,
            rows: BTreeMap::new(),
            found: Vec::new(),
            nodes: BTreeMap::new(),
            members: BTreeMap::new(),
            notices: Vec::new(),
            scanned: Scanned::default(),
        }
    }

    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// One item of source table `table` (ignored if the table is not declared).
    pub fn source_item(&mut self, table: &str, item: &Image) {
        let config = self.config;
        let Some(t) = config.table(table) else { return };
        self.scanned.items += 1;
        for &i in &self.scope.indexes {
            let Some(index) = config.indexes.get(i).filter(|x| x.source.table == table) else {
                continue;
            };
            let notice = |detail: String| Notice {
                kind: NoticeKind::Unindexable,
                about: index.name.clone(),
                key: key_image(t, item),
                detail,
            };
            match index::rows(index, t, item) {
                Ok(rows) => {
                    self.notices.extend(rows.problems.iter().map(|p| notice(p.to_string())));
                    let source = key_image(t, item);
                    for key in rows.keys {
                        self.rows.insert(
                            (i, key),
                            ExpectedRow {
                                attributes: rows.projection.clone(),
                                source: source.clone(),
                            },
                        );
                    }
                }
                Err(e) => self.notices.push(notice(e.to_string())),
            }
        }
        for &e in &self.scope.edge_sets {
            let Some(set) = config.edge_sets.get(e).filter(|x| x.table == table) else {
                continue;
            };
            let about = || format!("{}.{}", set.table, set.attribute);
            match edge::classify(set, t, item) {
                Ok(GraphItem::Node { id }) => {
                    self.scanned.nodes += 1;
                    let state = set_state(set, item).unwrap_or_else(|state| {
                        self.notices.push(Notice {
                            kind: NoticeKind::BadSet,
                            about: about(),
                            key: key_image(t, item),
                            detail: format!("attribute `{}` is not a String Set", set.attribute),
                        });
                        state
                    });
                    self.nodes.insert((e, id.to_owned()), (key_image(t, item), state));
                }
                Ok(GraphItem::Edge { node, .. }) => match edge::member(set, item) {
                    Ok(Some(member)) => {
                        self.members.entry((e, node.to_owned())).or_default().insert(member);
                    }
                    Ok(None) => {}
                    Err(err) => self.notices.push(Notice {
                        kind: NoticeKind::BadEdge,
                        about: about(),
                        key: key_image(t, item),
                        detail: err.to_string(),
                    }),
                },
                Ok(GraphItem::Skipped) => {}
                Err(err) => self.notices.push(Notice {
                    kind: NoticeKind::BadEdge,
                    about: about(),
                    key: key_image(t, item),
                    detail: err.to_string(),
                }),
            }
        }
    }

    /// One stored row of index `index`: its key and non-key attributes.
    /// Call only once every source item has been fed.
    pub fn index_row(&mut self, index: usize, key: RowKey, attributes: Image) {
        if !self.scope.indexes.contains(&index) {
            return;
        }
        self.scanned.rows += 1;
        let expected = self.rows.remove(&(index, key.clone()));
        if let Some((kind, correction)) =
            compare_row(index, &key, expected.as_ref().map(|e| &e.attributes), Some(&attributes))
        {
            let source = match &expected {
                Some(e) => Some(e.source.clone()),
                None => self
                    .config
                    .indexes
                    .get(index)
                    .and_then(|x| self.config.table(&x.source.table))
                    .and_then(|t| row_source(t, &attributes)),
            };
            let found = (kind == DriftKind::WrongProjection).then_some(attributes);
            self.found.push(Finding {
                kind,
                correction,
                source,
                found,
            });
        }
    }

    /// The report: rows never seen are missing; every node's set is compared
    /// with its partition's edges.
    pub fn finish(self) -> Report {
        let mut findings = self.found;
        for ((index, key), expected) in self.rows {
            if let Some((kind, correction)) = compare_row(index, &key, Some(&expected.attributes), None) {
                findings.push(Finding {
                    kind,
                    correction,
                    source: Some(expected.source),
                    found: None,
                });
            }
        }
        findings.sort_by_key(|a| a.correction.target());
        let mut notices = self.notices;
        let empty = BTreeSet::new();
        for ((e, node), (key, state)) in self.nodes {
            let Some(set) = self.config.edge_sets.get(e) else {
                continue;
            };
            let expected = self.members.get(&(e, node.clone())).unwrap_or(&empty);
            let check = compare_set(e, set, &node, &state, expected);
            if check.over_limit {
                notices.push(Notice {
                    kind: NoticeKind::Flagged,
                    about: format!("{}.{}", set.table, set.attribute),
                    key: key.clone(),
                    detail: format!(
                        "{} edges, over max_members = {}: readers Query the partition",
                        expected.len(),
                        set.max_members
                    ),
                });
            }
            findings.extend(check.findings.into_iter().map(|(kind, correction)| Finding {
                kind,
                correction,
                source: Some(key.clone()),
                found: None,
            }));
        }
        Report {
            findings,
            notices,
            scanned: self.scanned,
        }
    }
}

/// Whether two images are equal as DynamoDB compares values (see [`same_value`]).
pub fn same_image(a: &Image, b: &Image) -> bool {
    a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same_value(v, w)))
}

/// Whether two values are equal as DynamoDB compares them: numbers by value,
/// sets whatever the order of their members, maps and lists element-wise.
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::N(x), Value::N(y)) => same_number(x, y),
        (Value::Ss(x), Value::Ss(y)) => x.iter().collect::<BTreeSet<_>>() == y.iter().collect::<BTreeSet<_>>(),
        (Value::Bs(x), Value::Bs(y)) => x.iter().collect::<BTreeSet<_>>() == y.iter().collect::<BTreeSet<_>>(),
        (Value::Ns(x), Value::Ns(y)) => {
            let canonical = |v: &[String]| -> BTreeSet<String> {
                v.iter()
                    .map(|n| sortkey::canonical_number(n).unwrap_or_else(|_| n.clone()))
                    .collect()
            };
            canonical(x) == canonical(y)
        }
        (Value::M(x), Value::M(y)) => same_image(x, y),
        (Value::L(x), Value::L(y)) => x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same_value(v, w)),
        _ => a == b,
    }
}

fn same_number(x: &str, y: &str) -> bool {
    x == y
        || match (sortkey::canonical_number(x), sortkey::canonical_number(y)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
}

#[cfg(test)]
mod tests;
