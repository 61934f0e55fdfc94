//! The order calls are sent in when some must wait for others: a call is
//! *ready* once every call it depends on has succeeded, and ready calls go
//! lowest first. A call whose dependency failed is never ready. Used for the
//! indexer's row calls (writes to one row key land in stream order) and the
//! router's PutEvents calls (the events of one partition key go out in
//! stream order). The sender is the AWS kit's `dispatch`.

use std::collections::BTreeSet;

/// Which calls may be sent now.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Per call: dependencies not yet succeeded.
    waiting: Vec<usize>,
    /// Per call: the calls depending on it.
    dependents: Vec<Vec<usize>>,
    ready: BTreeSet<usize>,
}

impl Schedule {
    /// A schedule of calls `0..n`, given per call the earlier calls it
    /// depends on (distinct, each below the call itself).
    pub fn new<'a>(after: impl ExactSizeIterator<Item = &'a [usize]>) -> Schedule {
        let mut dependents = vec![Vec::new(); after.len()];
        let mut waiting = Vec::with_capacity(after.len());
        let mut ready = BTreeSet::new();
        for (i, deps) in after.enumerate() {
            for &d in deps {
                if let Some(list) = dependents.get_mut(d) {
                    list.push(i);
                }
            }
            waiting.push(deps.len());
            if deps.is_empty() {
                ready.insert(i);
            }
        }
        Schedule {
            waiting,
            dependents,
            ready,
        }
    }

    /// The lowest call that may be sent now.
    pub fn pop_ready(&mut self) -> Option<usize> {
        self.ready.pop_first()
    }

    /// Call `i` succeeded: the calls waiting only on it may go.
    pub fn succeeded(&mut self, i: usize) {
        let Some(dependents) = self.dependents.get(i) else {
            return;
        };
        for &d in dependents {
            if let Some(waiting) = self.waiting.get_mut(d) {
                *waiting = waiting.saturating_sub(1);
                if *waiting == 0 {
                    self.ready.insert(d);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_go_once_their_dependencies_succeeded() {
        let after: Vec<Vec<usize>> = vec![vec![], vec![0], vec![], vec![1, 2]];
        let mut schedule = Schedule::new(after.iter().map(Vec::as_slice));
        assert_eq!(schedule.pop_ready(), Some(0));
        assert_eq!(schedule.pop_ready(), Some(2));
        assert_eq!(schedule.pop_ready(), None, "1 waits for 0, 3 for 1 and 2");
        schedule.succeeded(2);
        assert_eq!(schedule.pop_ready(), None);
        schedule.succeeded(0);
        assert_eq!(schedule.pop_ready(), Some(1));
        schedule.succeeded(1);
        assert_eq!(schedule.pop_ready(), Some(3));
    }

    #[test]
    fn a_failed_dependency_keeps_its_dependents_back() {
        let after: Vec<Vec<usize>> = vec![vec![], vec![0], vec![1]];
        let mut schedule = Schedule::new(after.iter().map(Vec::as_slice));
        assert_eq!(schedule.pop_ready(), Some(0));
        // 0 failed: never `succeeded`.
        assert_eq!(schedule.pop_ready(), None);
    }
}
