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
//!
//! [`Planner`] finds a record's table; `rows` plans each of its indexes and
//! `sets` its edge set.

use crate::config::{Config, TableConfig, TableLookupError};
use crate::edge::EdgeError;
use crate::index::{self, IndexError};
use crate::record::{ChangeRecord, EventKind, Received};
use crate::value::Attrs;

mod mutation;
mod rows;
mod sets;
mod shared;

pub use mutation::{Mutation, Target};
pub use shared::SharedProjections;

use rows::{plan_index, read_attributes, IndexPlan};
use sets::plan_edge_set;

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

#[cfg(test)]
mod tests;
