//! The [`SetStamp`] of each request of a lane: the edge mark it leaves and
//! the condition it carries (see the parent module's doc).

use super::*;

impl<S: Store> Lane<'_, S> {
    /// The stamp of a request that completes the set changes `completing`
    /// (records, once per change, sorted) of a request holding `records`.
    pub(super) fn stamp(
        &mut self,
        edge_set: usize,
        node: &str,
        completing: &[usize],
        records: &[usize],
    ) -> SetStamp<'static> {
        match &self.stamping.guard {
            Guard::InOrder => SetStamp {
                guard: MarkGuard::None,
                mark: self.prefix_mark(completing),
                members: MemberStamp::None,
            },
            Guard::Newer if self.unordered(edge_set) => {
                // Each member under its own version (see `MemberStamp`): the
                // caller names the members.
                let version = records.iter().max().map(|&r| self.stamping.version(r));
                SetStamp {
                    guard: MarkGuard::None,
                    mark: version,
                    members: MemberStamp::None,
                }
            }
            Guard::Newer => {
                let version = records.iter().max().map(|&r| self.stamping.version(r));
                SetStamp {
                    guard: version.clone().map_or(MarkGuard::None, MarkGuard::NotNewer),
                    mark: version,
                    members: MemberStamp::None,
                }
            }
            Guard::AsRead(read) => SetStamp {
                guard: MarkGuard::AsRead(read.mark(edge_set, node).cloned()),
                mark: None,
                members: MemberStamp::None,
            },
        }
    }

    /// Whether edge set `edge_set` is of a table read from a Kinesis data
    /// stream: its members are versioned one by one.
    pub(super) fn unordered(&self, edge_set: usize) -> bool {
        self.config
            .edge_sets
            .get(edge_set)
            .and_then(|set| self.config.table(&set.table))
            .is_some_and(|table| table.stream.is_unordered())
    }

    /// `stamp` with the members of `change` under their own versions, for
    /// an edge set whose members are versioned one by one; as it is
    /// otherwise.
    pub(super) fn with_members<'c>(
        &self,
        edge_set: usize,
        mut stamp: SetStamp<'c>,
        change: &'c SetChange,
        restore: bool,
    ) -> SetStamp<'c> {
        if self.stamping.guard != Guard::Newer || !self.unordered(edge_set) {
            return stamp;
        }
        if let Some(version) = stamp.mark.clone() {
            let members = change.members();
            stamp.members = if restore {
                MemberStamp::Restore { version, members }
            } else {
                MemberStamp::Newer { version, members }
            };
        }
        stamp
    }

    /// The version of the last record of the lane whose set changes, and
    /// every earlier record's, are all done once `completing` (sorted) are.
    /// Linear in the lane over all its requests: the records known done
    /// from the start are skipped (their counts only fall).
    fn prefix_mark(&mut self, completing: &[usize]) -> Option<model::Version> {
        while let Some((&record, _)) = self.remaining.range(self.settled..).next().filter(|(_, &n)| n == 0) {
            self.settled_last = Some(record);
            self.settled = record + 1;
        }
        let last = last_done(self.remaining.range(self.settled..), self.settled_last, completing);
        last.map(|r| self.stamping.version(r))
    }
}

/// The last record of `pending` (records from the first not known done, in
/// order, with their changes not yet done) that is done, with every one
/// before it, once `completing` (sorted; a record once per change) are;
/// `settled` when the first is not.
fn last_done<'a>(
    pending: impl Iterator<Item = (&'a usize, &'a usize)>,
    settled: Option<usize>,
    completing: &[usize],
) -> Option<usize> {
    // How many of `completing` are `record`.
    let finishing = |record: usize| {
        let from = completing.partition_point(|&r| r < record);
        completing
            .get(from..)
            .map_or(0, |rest| rest.partition_point(|&r| r == record))
    };
    let mut last = settled;
    for (&record, &left) in pending {
        if left > finishing(record) {
            break;
        }
        last = Some(record);
    }
    last
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::last_done;

    proptest! {
        /// The sorted search counts what a plain count of each record
        /// finds, whatever the order `completing` came in.
        #[test]
        fn last_done_counts_each_records_completing_changes(
            pending in proptest::collection::btree_map(0usize..12, 0usize..3, 0..8),
            mut completing in proptest::collection::vec(0usize..12, 0..10),
            settled in proptest::option::of(0usize..3),
        ) {
            let mut expected = settled;
            for (&record, &left) in &pending {
                if left > completing.iter().filter(|&&r| r == record).count() {
                    break;
                }
                expected = Some(record);
            }
            completing.sort_unstable();
            let pending: BTreeMap<usize, usize> = pending;
            prop_assert_eq!(last_done(pending.iter(), settled, &completing), expected);
        }
    }
}
