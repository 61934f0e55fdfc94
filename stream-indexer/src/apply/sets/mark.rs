//! The [`SetStamp`] of each request of a lane: the edge mark it leaves and
//! the condition it carries (see the parent module's doc).

use super::*;

impl<S: Store> Lane<'_, S> {
    /// The stamp of a request that completes the set changes `completing`
    /// (records, once per change) of a request holding `records`.
    pub(super) fn stamp(&mut self, edge_set: usize, node: &str, completing: &[usize], records: &[usize]) -> SetStamp {
        match &self.stamping.guard {
            Guard::InOrder => SetStamp {
                guard: MarkGuard::None,
                mark: self.prefix_mark(completing),
            },
            Guard::Newer => {
                let version = records.iter().max().map(|&r| self.stamping.version(r));
                SetStamp {
                    guard: version.clone().map_or(MarkGuard::None, MarkGuard::NotNewer),
                    mark: version,
                }
            }
            Guard::AsRead(read) => SetStamp {
                guard: MarkGuard::AsRead(read.mark(edge_set, node).cloned()),
                mark: None,
            },
        }
    }

    /// The version of the last record of the lane whose set changes, and
    /// every earlier record's, are all done once `completing` are.
    /// Linear in the lane over all its requests: the records known done
    /// from the start are skipped (their counts only fall).
    fn prefix_mark(&mut self, completing: &[usize]) -> Option<model::Version> {
        while let Some((&record, _)) = self.remaining.range(self.settled..).next().filter(|(_, &n)| n == 0) {
            self.settled_last = Some(record);
            self.settled = record + 1;
        }
        let mut finishing: HashMap<usize, usize> = HashMap::new();
        for &record in completing {
            *finishing.entry(record).or_default() += 1;
        }
        let mut last = self.settled_last;
        for (&record, &left) in self.remaining.range(self.settled..) {
            if left > finishing.get(&record).copied().unwrap_or(0) {
                break;
            }
            last = Some(record);
        }
        last.map(|r| self.stamping.version(r))
    }
}
