//! Planning an edge set's changes: an edge's member added, removed or
//! replaced on its node, and a node's set restored from its partition when
//! the node is written anew.

use super::Mutation;
use crate::config::{EdgeSetConfig, TableConfig};
use crate::edge::{self, EdgeError, GraphItem};
use crate::record::{ChangeRecord, EventKind};
use crate::value::Attrs;

fn has<I: Attrs>(image: Option<&I>, attribute: &str) -> bool {
    image.is_some_and(|i| i.contains_key(attribute))
}

pub(super) fn plan_edge_set<I: Attrs>(
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
