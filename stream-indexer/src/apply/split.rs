//! A batch's mutations sorted by where they go: the row writes packed into
//! calls (`rows`), the set mutations into one lane per group (`sets`).
//!
//! On one thread, [`split`] sorts them in one pass. Where a second core may
//! be used, the set mutations are taken out into their lanes as each record
//! is planned ([`SetsTaken`], while the handling thread would otherwise wait
//! on the reading one), and [`split_ahead`] then has a second thread pack
//! the row writes (the larger share of a batch's mutations, and the
//! costlier to sort: each write's row key is hashed for the packer) while
//! the lanes run on this thread. Either way the calls and the lanes are the
//! same (a test compares the two).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::channel::oneshot;
use model::index::RowKey;
use model::value::Projection;
use model::Mutation;

use super::rows::Rows;
use super::sets::{SetKind, SetOp};
use super::Stamping;
use crate::store::RowWrite;

/// A mutation sorted by where it goes.
enum Work {
    Row(RowWrite),
    Set(SetOp),
}

fn work(record: usize, mutation: Mutation, stamping: &Stamping) -> Work {
    match sort(record, mutation) {
        Ok(op) => Work::Set(op),
        Err(RowChange { index, key, put }) => Work::Row(RowWrite {
            version: stamping.row_version(record, index, &key),
            index,
            key,
            put,
        }),
    }
}

/// A row write's parts: its index, its key, its projection (`None`: a
/// delete).
struct RowChange {
    index: usize,
    key: RowKey,
    put: Option<Projection>,
}

/// The lane op of record `record`'s mutation, or the parts of a row write.
fn sort(record: usize, mutation: Mutation) -> Result<SetOp, RowChange> {
    Ok(match mutation {
        Mutation::PutRow { index, key, attributes } => {
            return Err(RowChange {
                index,
                key,
                put: Some(attributes),
            })
        }
        Mutation::DeleteRow { index, key } => return Err(RowChange { index, key, put: None }),
        Mutation::AddMember { edge_set, node, member } => SetOp::Member {
            record,
            edge_set,
            node,
            kind: SetKind::Add,
            member,
        },
        Mutation::RemoveMember { edge_set, node, member } => SetOp::Member {
            record,
            edge_set,
            node,
            kind: SetKind::Remove,
            member,
        },
        Mutation::RestoreSet { edge_set, node } => SetOp::Restore { record, edge_set, node },
        Mutation::SetMarker {
            edge_set,
            node,
            complete,
        } => SetOp::Marker {
            record,
            edge_set,
            node,
            complete,
        },
    })
}

/// Whether a mutation is a row write (the rest are set mutations).
fn is_row(mutation: &Mutation) -> bool {
    matches!(mutation, Mutation::PutRow { .. } | Mutation::DeleteRow { .. })
}

/// Per group: its set mutations, in order.
pub(super) type Lanes = BTreeMap<usize, Vec<SetOp>>;

/// A batch's mutations, sorted by where they go.
#[derive(Default)]
pub(super) struct Split {
    /// Per record number: how many mutations it has.
    pub pending: Vec<usize>,
    /// Every row write, packed into calls in batch order.
    pub rows: Rows,
    pub lanes: Lanes,
}

/// Sorts `ops` (`(group, op)` in batch order) on this thread.
pub(super) fn split(ops: impl IntoIterator<Item = (usize, super::Op)>, stamping: &Stamping) -> Split {
    let mut split = Split::default();
    for (group, super::Op { record, mutation }) in ops {
        debug_assert!(record + 1 >= split.pending.len(), "ops come in batch order");
        if split.pending.len() <= record {
            split.pending.resize(record + 1, 0);
        }
        split.pending[record] += 1;
        match work(record, mutation, stamping) {
            Work::Row(write) => split.rows.push(record, write),
            Work::Set(op) => split.lanes.entry(group).or_default().push(op),
        }
    }
    split
}

/// A batch's plans as the batch keeps them: every mutation in batch order,
/// and per record (by number) its group and how many of the mutations are
/// its (the next ones after the records' before it).
#[derive(Debug, Clone, Default)]
pub struct Plans {
    pub mutations: Vec<Mutation>,
    pub records: Vec<(usize, usize)>,
}

impl Plans {
    /// The mutations as `(group, op)`, in batch order, drained (the buffer
    /// stays, empty).
    pub(super) fn drain_ops(&mut self) -> impl Iterator<Item = (usize, super::Op)> + '_ {
        owners(&self.records)
            .zip(self.mutations.drain(..))
            .map(|((group, record), mutation)| (group, super::Op { record, mutation }))
    }
}

/// `(group, record)` for each mutation of `records` (as [`Plans::records`]
/// holds them), in batch order: to be zipped with the mutations.
fn owners(records: &[(usize, usize)]) -> impl Iterator<Item = (usize, usize)> + '_ {
    records
        .iter()
        .enumerate()
        .flat_map(|(record, &(group, n))| std::iter::repeat_n((group, record), n))
}

/// The row writes being packed on a second thread: [`PackedRows::rows`]
/// gives them, with the plans' emptied buffer (for the next batch).
pub(super) struct PackedRows {
    /// Sent (or dropped, by a panic) as the thread ends.
    ended: oneshot::Receiver<()>,
    packer: std::thread::JoinHandle<(Rows, Vec<Mutation>)>,
}

impl PackedRows {
    /// The packed writes, once the second thread is done (waited for
    /// without blocking the runtime). A panic there is passed on here.
    pub async fn rows(self) -> (Rows, Vec<Mutation>) {
        // Either way the thread is ending: joining it takes no longer.
        let _ = self.ended.await;
        match self.packer.join() {
            Ok(packed) => packed,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

/// The set mutations of a batch's records, taken out into their lanes as
/// each record is planned ([`SetsTaken::take`]), while the payload is
/// still being read: the handling thread waits on the reading thread then,
/// so the work is done in time it would spend waiting.
#[derive(Debug, Default)]
pub struct SetsTaken {
    lanes: Lanes,
}

impl SetsTaken {
    /// Takes the set mutations out of `mutations` (record `record`'s, of
    /// group `group`) into their lanes, each left as a set mutation that
    /// holds nothing (the packer passes over every set mutation). Called
    /// for each record in batch order.
    pub fn take(&mut self, group: usize, record: usize, mutations: &mut [Mutation]) {
        for mutation in mutations.iter_mut().filter(|mutation| !is_row(mutation)) {
            let taken = std::mem::replace(
                mutation,
                Mutation::RestoreSet {
                    edge_set: usize::MAX,
                    node: String::new(),
                },
            );
            if let Ok(op) = sort(record, taken) {
                self.lanes.entry(group).or_default().push(op);
            }
        }
    }
}

/// Starts a second thread packing the row writes of `plans`, whose set
/// mutations were taken out into `sets` as the records were planned.
/// Returns each record's count of mutations, the lanes, and the rows to
/// come.
pub(super) fn split_ahead(plans: Plans, sets: SetsTaken, stamping: Arc<Stamping>) -> (Vec<usize>, Lanes, PackedRows) {
    let Plans { mut mutations, records } = plans;
    let pending = records.iter().map(|&(_, n)| n).collect();
    let lanes = sets.lanes;
    // Made here: the writes buffer is this thread's to keep for the next batch.
    let mut rows = Rows::default();
    let (tell_ended, ended) = oneshot::channel();
    let packer = std::thread::spawn(move || {
        for ((_, record), mutation) in owners(&records).zip(mutations.drain(..)) {
            if !is_row(&mutation) {
                continue;
            }
            if let Work::Row(write) = work(record, mutation, &stamping) {
                rows.push(record, write);
            }
        }
        // The receiver is gone only if the batch was dropped: no one waits.
        let _ = tell_ended.send(());
        (rows, mutations)
    });
    (pending, lanes, PackedRows { ended, packer })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use model::index::RowKey;
    use model::value::Projection;
    use model::{Mutation, Version};
    use proptest::prelude::*;

    use super::{split, split_ahead, Plans, SetsTaken};
    use crate::apply::Stamping;
    use crate::test_support::block;

    /// A mutation of any kind, on few keys, nodes and members (so that
    /// writes share keys and set changes share members).
    fn mutation() -> impl Strategy<Value = Mutation> {
        let key = (0usize..3, 0usize..4).prop_map(|(p, s)| RowKey {
            partition: format!("P{p}"),
            sort: format!("S{s}"),
        });
        let node = (0usize..2).prop_map(|n| format!("N{n}"));
        prop_oneof![
            (0usize..2, key.clone()).prop_map(|(index, key)| Mutation::PutRow {
                index,
                key,
                attributes: Projection::default(),
            }),
            (0usize..2, key).prop_map(|(index, key)| Mutation::DeleteRow { index, key }),
            (node.clone(), 0usize..3).prop_map(|(node, m)| Mutation::AddMember {
                edge_set: 0,
                node,
                member: format!("M{m}"),
            }),
            (node.clone(), 0usize..3).prop_map(|(node, m)| Mutation::RemoveMember {
                edge_set: 0,
                node,
                member: format!("M{m}"),
            }),
            node.clone().prop_map(|node| Mutation::RestoreSet { edge_set: 0, node }),
            (node, any::<bool>()).prop_map(|(node, complete)| Mutation::SetMarker {
                edge_set: 0,
                node,
                complete,
            }),
        ]
    }

    /// A batch's plans: each record in one of a few groups, with a few
    /// mutations (or none).
    fn plans() -> impl Strategy<Value = Plans> {
        proptest::collection::vec((0usize..4, proptest::collection::vec(mutation(), 0..5)), 0..40).prop_map(|records| {
            let mut plans = Plans::default();
            for (group, mutations) in records {
                plans.records.push((group, mutations.len()));
                plans.mutations.extend(mutations);
            }
            plans
        })
    }

    proptest! {
        /// Sorted ahead (sets taken out record by record, as each is
        /// planned; rows on a second thread), a batch's mutations make the
        /// same calls, writes and lanes as sorted in one pass, and every
        /// record counts the same mutations.
        #[test]
        fn sorting_ahead_sorts_as_one_pass_does(mut plans in plans()) {
            let versions = (0..plans.records.len())
                .map(|r| Version::of_sequence(&(100 + r).to_string()).unwrap_or_else(|_| Version::zero()))
                .collect();
            let stamping = Arc::new(Stamping::new(versions, Default::default()));
            let mutations = plans.mutations.len();
            let one = split(plans.clone().drain_ops(), &stamping);
            let mut sets = SetsTaken::default();
            let mut start = 0;
            for (record, &(group, count)) in plans.records.iter().enumerate() {
                let end = start + count;
                sets.take(group, record, &mut plans.mutations[start..end]);
                start = end;
            }
            let (mut pending, lanes, packed) = split_ahead(plans, sets, stamping);
            let (rows, spare) = block(packed.rows());
            // One pass counts up to the last record with a mutation; the
            // records after it have none either way.
            while pending.last() == Some(&0) && pending.len() > one.pending.len() {
                pending.pop();
            }
            prop_assert_eq!(pending, one.pending);
            prop_assert_eq!(lanes, one.lanes);
            prop_assert_eq!(rows.finish(), one.rows.finish());
            // The plans' buffer comes back empty, for the next batch.
            prop_assert!(spare.is_empty() && spare.capacity() >= mutations);
        }
    }

    #[test]
    fn a_panic_while_packing_reaches_the_caller() {
        let (tell_ended, ended) = futures::channel::oneshot::channel::<()>();
        let packer = std::thread::spawn(move || {
            let _unsent = tell_ended;
            panic!("packing failed");
        });
        let packed = super::PackedRows { ended, packer };
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| block(packed.rows())));
        let panic = caught
            .err()
            .and_then(|p| p.downcast_ref::<&str>().map(|s| s.to_string()));
        assert_eq!(panic.as_deref(), Some("packing failed"));
    }
}
