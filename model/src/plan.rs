//! The change planner: from one change record and the config, the minimal
//! list of mutations that keeps index rows and edge sets in step.
//!
//! Plans are values. One place (the indexer's executor, or the in-memory
//! model in tests) carries them out; the planner itself does no I/O.
//!
//! The rules (see `docs/DESIGN.md`, "Invariants"):
//!
//! - **Indexes.** rows(old) and rows(new) are compared: rows only in old are
//!   deleted, rows only in new are put, rows in both are put again only when
//!   their projection changed. Puts come before deletes. An index whose
//!   referenced attributes are all unchanged is not even derived.
//! - **Edge sets.** An edge INSERT adds its member to its node's set, a REMOVE
//!   removes it, a MODIFY that changes the member adds the new one and then
//!   removes the old one. A node INSERT, and a node whose set and marker both
//!   vanished (a PutItem overwrite), restore the set from the node's partition.
//!   The pipeline's own writes keep the marker (`complete_attribute`), so
//!   they never plan anything: the loop is closed.
//! - **Poison.** What cannot be indexed in a new image (a value of the wrong
//!   type, a sort key over 1024 bytes) produces no row: an entry that cannot
//!   be indexed has none while the item's other entries still have theirs; an
//!   image that cannot be indexed at all has none, so its old rows are
//!   deleted. The plan reports each problem so the record is quarantined. So
//!   the index always holds exactly rows(old image) of the next record, and an
//!   old image's own errors can be read as "no rows".

use crate::config::{Config, EdgeSetConfig, IndexConfig, TableConfig, TableLookupError, TemplatePart, ValueRef};
use crate::edge::{self, EdgeError, GraphItem};
use crate::index::{self, IndexError, RowKey};
use crate::record::{ChangeRecord, EventKind, Received};
use crate::value::{Attrs, Image, Projection};

mod mutation;
mod shared;

pub use mutation::{Mutation, Target};
pub use shared::SharedProjections;

/// Why (part of) a record could not be planned. The record is quarantined
/// after its plan's mutations are applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("table `{table}` is not declared in the config")]
    UnknownTable { table: String },
    #[error("cannot tell the record's table: it has no eventSourceARN and its key attributes ({keys}) match no declared table")]
    NoTable { keys: String },
    #[error("index `{index}`: {source}")]
    Index { index: String, source: Box<IndexError> },
    #[error("edge set `{attribute}` of table `{table}`: {source}")]
    Edge {
        table: String,
        attribute: String,
        source: EdgeError,
    },
}

/// The plan for one record.
#[must_use = "a plan does nothing until its mutations are applied"]
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    pub mutations: Vec<Mutation>,
    /// Problems found; non-empty means the record goes to quarantine once the
    /// mutations are applied.
    pub problems: Vec<PlanError>,
}

impl Plan {
    pub fn clear(&mut self) {
        self.mutations.clear();
        self.problems.clear();
    }
}

/// What the planner precomputes for one source table.
#[derive(Debug, Clone)]
struct TablePlan {
    table: usize,
    indexes: Vec<IndexPlan>,
    edge_set: Option<usize>,
}

/// What the planner precomputes for one index.
#[derive(Debug, Clone)]
struct IndexPlan {
    /// Position in `config.indexes`.
    index: usize,
    /// Every attribute the index reads, but the `for_each` attribute.
    reads: Vec<String>,
    /// Rows of distinct entries never share a key, so a MODIFY that changes
    /// only some entries need derive only theirs.
    per_entry: bool,
}

/// Plans records against one config.
#[derive(Debug, Clone)]
pub struct Planner<'c> {
    config: &'c Config,
    tables: Vec<TablePlan>,
}

impl<'c> Planner<'c> {
    pub fn new(config: &'c Config) -> Planner<'c> {
        let tables = config
            .tables
            .iter()
            .enumerate()
            .map(|(t, table)| TablePlan {
                table: t,
                indexes: config
                    .indexes
                    .iter()
                    .enumerate()
                    .filter(|(_, i)| i.source.table == table.name)
                    .map(|(i, index)| IndexPlan {
                        index: i,
                        reads: read_attributes(index, table),
                        per_entry: index::entry_rows_are_distinct(index),
                    })
                    .collect(),
                edge_set: config.edge_sets.iter().position(|e| e.table == table.name),
            })
            .collect();
        Planner { config, tables }
    }

    pub fn config(&self) -> &'c Config {
        self.config
    }

    /// The declared table a record comes from: its `eventSourceARN`'s table,
    /// or else the one declared table whose key attributes are the record's.
    pub fn table_of<I: Attrs>(&self, record: &ChangeRecord<I>) -> Result<&'c TableConfig, PlanError> {
        self.config.table_of_record(record).map_err(|e| match e {
            TableLookupError::Undeclared(table) => PlanError::UnknownTable { table },
            TableLookupError::NoMatch(keys) => PlanError::NoTable { keys },
        })
    }

    /// Plans a received record: takes the plan [`Planner::plan_ahead`] made
    /// of it with this planner's config, if it did, else plans `record`
    /// (the received record's own).
    pub fn plan_received<I: Attrs>(&self, received: &Received<'_, I>, record: &ChangeRecord<I>) -> Plan {
        received
            .ahead
            .take::<_, Plan>(self.config)
            .unwrap_or_else(|| self.plan(record))
    }

    /// Plans a received record as [`Planner::plan_received`] does, its
    /// mutations added to `mutations` (after those already there: one
    /// vector can hold a whole batch's, in batch order); returns its problems.
    pub fn plan_received_onto<I: Attrs>(
        &self,
        received: &Received<'_, I>,
        record: &ChangeRecord<I>,
        mutations: &mut Vec<Mutation>,
    ) -> Vec<PlanError> {
        if let Some(mut plan) = received.ahead.take::<_, Plan>(self.config) {
            mutations.append(&mut plan.mutations);
            return plan.problems;
        }
        let mut plan = Plan {
            mutations: std::mem::take(mutations),
            problems: Vec::new(),
        };
        self.plan_onto(record, &mut plan);
        *mutations = plan.mutations;
        plan.problems
    }

    /// Plans a received record ahead of the consumer that will ask
    /// [`Planner::plan_received`] for it (replay's reading thread does, while
    /// the handling thread is busy). Nothing for an unparsable record.
    pub fn plan_ahead<I: Attrs>(&self, received: &Received<'_, I>) {
        self.plan_ahead_with(received, |_| {});
    }

    /// [`Planner::plan_ahead`], with `finish` given the plan before it is
    /// kept (replay shares its rows' projections there:
    /// [`SharedProjections::share`]).
    pub fn plan_ahead_with<I: Attrs>(&self, received: &Received<'_, I>, finish: impl FnOnce(&mut Plan)) {
        if let Ok(record) = &received.record {
            let mut plan = self.plan(record);
            finish(&mut plan);
            received.ahead.keep(self.config, plan);
        }
    }

    /// Plans `record`, its images owned or borrowed.
    pub fn plan<I: Attrs>(&self, record: &ChangeRecord<I>) -> Plan {
        let mut plan = Plan::default();
        self.plan_into(record, &mut plan);
        plan
    }

    /// Plans `record` into `plan` (cleared first), reusing its allocations.
    pub fn plan_into<I: Attrs>(&self, record: &ChangeRecord<I>, plan: &mut Plan) {
        plan.clear();
        self.plan_onto(record, plan);
    }

    /// Plans `record`, adding its mutations and problems to `plan`'s.
    fn plan_onto<I: Attrs>(&self, record: &ChangeRecord<I>, plan: &mut Plan) {
        let table = match self.table_of(record) {
            Ok(table) => table,
            Err(e) => return plan.problems.push(e),
        };
        let Some(tp) = self
            .tables
            .iter()
            .find(|tp| std::ptr::eq(&self.config.tables[tp.table], table))
        else {
            return;
        };
        let (old, new) = images(record);
        for ip in &tp.indexes {
            plan_index(ip, &self.config.indexes[ip.index], table, old, new, plan);
        }
        if let Some(e) = tp.edge_set {
            if let Err(source) = plan_edge_set(
                e,
                &self.config.edge_sets[e],
                table,
                record,
                old,
                new,
                &mut plan.mutations,
            ) {
                let set = &self.config.edge_sets[e];
                plan.problems.push(PlanError::Edge {
                    table: set.table.clone(),
                    attribute: set.attribute.clone(),
                    source,
                });
            }
        }
    }
}

/// The images that count for the record's kind.
fn images<I>(record: &ChangeRecord<I>) -> (Option<&I>, Option<&I>) {
    match record.kind {
        EventKind::Insert => (None, record.new.as_ref()),
        EventKind::Modify => (record.old.as_ref(), record.new.as_ref()),
        EventKind::Remove => (record.old.as_ref(), None),
    }
}

/// Every attribute an index reads but its `for_each` attribute and the key
/// attributes (both images of a record have the record's keys).
fn read_attributes(index: &IndexConfig, table: &TableConfig) -> Vec<String> {
    let is_key = |name: &String| *name == table.partition_key || table.sort_key.as_ref() == Some(name);
    let mut names: Vec<String> = index.project.iter().filter(|n| !is_key(n)).cloned().collect();
    let refs = index
        .partition
        .parts
        .iter()
        .filter_map(|p| match p {
            TemplatePart::Ref(r) => Some(r),
            TemplatePart::Literal(_) => None,
        })
        .chain(index.sort.iter().map(|c| &c.value));
    for r in refs {
        if let ValueRef::Attribute(name) = r {
            if !is_key(name) {
                names.push(name.clone());
            }
        }
    }
    names.sort_unstable();
    names.dedup();
    names
}

fn plan_index<I: Attrs>(
    ip: &IndexPlan,
    index: &IndexConfig,
    table: &TableConfig,
    old: Option<&I>,
    new: Option<&I>,
    plan: &mut Plan,
) {
    // Entries unchanged in the other image are skipped only when nothing else
    // the index reads changed: then their rows and projections are equal.
    let mut same_projection = false;
    let mut changed = None;
    if let (Some(o), Some(n)) = (old, new) {
        if ip.reads.iter().all(|a| o.get(a) == n.get(a)) {
            let (old_entries, new_entries) = match &index.for_each {
                Some(f) => (o.get(f), n.get(f)),
                None => return,
            };
            same_projection = true;
            if ip.per_entry {
                // Only entries that differ can change rows; none differ, nothing changes.
                changed = index::changed_entries(old_entries, new_entries);
            }
            if changed.is_none() && old_entries == new_entries {
                return;
            }
        }
    }
    let (only_old, only_new) = match &changed {
        Some((a, b)) => (Some(a), Some(b)),
        None => (None, None),
    };
    // What cannot be indexed in the old image produced no rows (see the module doc).
    let old_keys = old
        .and_then(|o| index::row_keys(index, table, o, only_old).ok())
        .map(|k| k.keys)
        .unwrap_or_default();
    let problem = |source| PlanError::Index {
        index: index.name.clone(),
        source: Box::new(source),
    };
    let new_keys = match new.map(|n| index::row_keys(index, table, n, only_new)).transpose() {
        Ok(Some(derived)) => {
            plan.problems.extend(derived.problems.into_iter().map(problem));
            derived.keys
        }
        Ok(None) => Vec::new(),
        Err(source) => {
            plan.problems.push(problem(source));
            Vec::new()
        }
    };
    if !same_projection {
        same_projection = index::same_projection(index, table, old, new);
    }
    let projection = || new.map(|n| index::projection(index, table, n)).unwrap_or_default();
    diff_rows(
        ip.index,
        old_keys,
        new_keys,
        same_projection,
        projection,
        &mut plan.mutations,
    );
}

/// Puts for rows new or changed, then deletes for rows gone.
fn diff_rows(
    i: usize,
    old: Vec<RowKey>,
    new: Vec<RowKey>,
    same_projection: bool,
    projection: impl FnOnce() -> Image,
    out: &mut Vec<Mutation>,
) {
    // One projection, shared by every row put.
    let mut attributes: Option<Projection> = None;
    let mut projection = Some(projection);
    let mut put = |key: RowKey, out: &mut Vec<Mutation>| {
        let attributes =
            attributes.get_or_insert_with(|| Projection::new(projection.take().map(|p| p()).unwrap_or_default()));
        out.push(Mutation::PutRow {
            index: i,
            key,
            attributes: attributes.clone(),
        });
    };
    let mut deletes = Vec::new();
    let (mut a, mut b) = (old.into_iter().peekable(), new.into_iter().peekable());
    loop {
        let order = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some(x), Some(y)) => x.cmp(y),
        };
        match order {
            std::cmp::Ordering::Less => deletes.extend(a.next().map(|key| Mutation::DeleteRow { index: i, key })),
            std::cmp::Ordering::Greater => {
                if let Some(key) = b.next() {
                    put(key, out);
                }
            }
            std::cmp::Ordering::Equal => {
                a.next();
                if let Some(key) = b.next() {
                    if !same_projection {
                        put(key, out);
                    }
                }
            }
        }
    }
    out.append(&mut deletes);
}

fn has<I: Attrs>(image: Option<&I>, attribute: &str) -> bool {
    image.is_some_and(|i| i.contains_key(attribute))
}

fn plan_edge_set<I: Attrs>(
    e: usize,
    set: &EdgeSetConfig,
    table: &TableConfig,
    record: &ChangeRecord<I>,
    old: Option<&I>,
    new: Option<&I>,
    out: &mut Vec<Mutation>,
) -> Result<(), EdgeError> {
    match edge::classify(set, table, &record.keys)? {
        GraphItem::Skipped => Ok(()),
        GraphItem::Node { id } => {
            let wiped = || {
                (has(old, &set.attribute) || has(old, &set.complete_attribute))
                    && !has(new, &set.attribute)
                    && !has(new, &set.complete_attribute)
            };
            let restore = match record.kind {
                EventKind::Insert => new.is_some(),
                EventKind::Modify => new.is_some() && wiped(),
                EventKind::Remove => false,
            };
            if restore {
                out.push(Mutation::RestoreSet {
                    edge_set: e,
                    node: id.to_owned(),
                });
            }
            Ok(())
        }
        GraphItem::Edge { node, .. } => {
            let old_member = old.and_then(|o| edge::member(set, o).ok().flatten());
            let (new_member, problem) = match new.map(|n| edge::member(set, n)).transpose() {
                Ok(m) => (m.flatten(), None),
                Err(err) => (None, Some(err)),
            };
            if old_member != new_member {
                if let Some(member) = new_member {
                    out.push(Mutation::AddMember {
                        edge_set: e,
                        node: node.to_owned(),
                        member,
                    });
                }
                if let Some(member) = old_member {
                    out.push(Mutation::RemoveMember {
                        edge_set: e,
                        node: node.to_owned(),
                        member,
                    });
                }
            }
            problem.map_or(Ok(()), Err)
        }
    }
}

#[cfg(test)]
mod tests;
