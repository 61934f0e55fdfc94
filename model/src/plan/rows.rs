//! Planning an index's rows: the rows of the old image against those of the
//! new, puts before deletes, a row put again only when its projection
//! changed, and an index left alone when nothing it reads changed.

use super::{Mutation, Plan, PlanError};
use crate::config::{IndexConfig, TableConfig, TemplatePart, ValueRef};
use crate::index::{self, RowKey};
use crate::value::{Attrs, Image, Projection};

/// What the planner precomputes for one index.
#[derive(Debug, Clone)]
pub(super) struct IndexPlan {
    /// Position in `config.indexes`.
    pub index: usize,
    /// Every attribute the index reads, but the `for_each` attribute.
    pub reads: Vec<String>,
    /// Rows of distinct entries never share a key, so a MODIFY that changes
    /// only some entries need derive only theirs.
    pub per_entry: bool,
}

/// Every attribute an index reads but its `for_each` attribute and the key
/// attributes (both images of a record have the record's keys).
pub(super) fn read_attributes(index: &IndexConfig, table: &TableConfig) -> Vec<String> {
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

pub(super) fn plan_index<I: Attrs>(
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
