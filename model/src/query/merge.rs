//! The pages of several partitions' Queries → one sequence in sort key order.
//!
//! A sharded index spreads one partition value over N partitions; each
//! Query returns its partition's rows in sort key order, page by page. The
//! merge holds what each partition has returned and not yet given out, says
//! which partitions it needs a page of before it can tell the next row
//! ([`Step::Fetch`], [`Merge::wanted`]), and stops at the limit, so a
//! partition is read only as far as the result needs it. It is a state
//! machine without I/O: the caller runs the Queries.

use std::collections::VecDeque;

/// What the merge needs or gives next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step<T> {
    /// The next row: its sort key and what was fed with it.
    Row(String, T),
    /// A page is needed from each partition in [`Merge::wanted`] first.
    Fetch,
    /// Every row is out, or the limit is reached.
    Done,
}

/// Pages fed to the merge that it cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    #[error("there is no partition {run} (the query reads {runs})")]
    NoSuchRun { run: usize, runs: usize },
    #[error("partition {run} was already read to its end")]
    Finished { run: usize },
    #[error("partition {run} returned sort key {key:?} after {after:?}, out of order")]
    OutOfOrder { run: usize, key: String, after: String },
}

#[derive(Debug)]
struct Run<T> {
    rows: VecDeque<(String, T)>,
    /// The partition may have more rows than fed so far.
    more: bool,
    /// The last key fed, to check that pages come in order.
    last: Option<String>,
}

/// The merge of several partitions' rows (see the module doc).
#[derive(Debug)]
pub struct Merge<T> {
    runs: Vec<Run<T>>,
    desc: bool,
    remaining: Option<usize>,
    exclude: Option<String>,
}

impl<T> Merge<T> {
    /// A merge of `runs` partitions read in ascending sort key order, or
    /// descending with `desc`, giving at most `limit` rows and never the
    /// key `exclude`.
    pub fn new(runs: usize, desc: bool, limit: Option<usize>, exclude: Option<String>) -> Merge<T> {
        Merge {
            runs: (0..runs)
                .map(|_| Run {
                    rows: VecDeque::new(),
                    more: true,
                    last: None,
                })
                .collect(),
            desc,
            remaining: limit,
            exclude,
        }
    }

    /// The partitions a page is needed from (by their position in the
    /// query's partitions) before the next row can be told: those with no
    /// row in hand that may have more rows sorting before the best row in
    /// hand. Empty once the limit is reached.
    pub fn wanted(&self) -> Vec<usize> {
        if self.remaining == Some(0) {
            return Vec::new();
        }
        let best = self.best().and_then(|i| self.runs.get(i)).and_then(|r| r.rows.front());
        self.runs
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                r.rows.is_empty()
                    && r.more
                    // Rows still to come sort after the last one fed: past
                    // the best in hand, they cannot come before it.
                    && match (&r.last, best) {
                        (Some(last), Some((key, _))) => !self.sorts_before(key, last),
                        _ => true,
                    }
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// Whether `a` comes before `b` in the merge's order.
    fn sorts_before(&self, a: &str, b: &str) -> bool {
        if self.desc {
            a > b
        } else {
            a < b
        }
    }

    /// The partition holding the row that comes first among those in hand.
    fn best(&self) -> Option<usize> {
        let mut best: Option<(usize, &str)> = None;
        for (i, run) in self.runs.iter().enumerate() {
            let Some((key, _)) = run.rows.front() else { continue };
            if best.is_none_or(|(_, best_key)| self.sorts_before(key, best_key)) {
                best = Some((i, key));
            }
        }
        best.map(|(i, _)| i)
    }

    /// How many rows a page need hold at most (a Query's `Limit`): what the
    /// limit leaves, plus one for an excluded key. `None` without a limit.
    pub fn page_limit(&self) -> Option<usize> {
        self.remaining
            .map(|r| r.saturating_add(usize::from(self.exclude.is_some())).max(1))
    }

    /// Hands over one page of partition `run`: its rows in the order the
    /// Query returned them, and whether it has more (`LastEvaluatedKey`).
    pub fn feed(&mut self, run: usize, rows: Vec<(String, T)>, more: bool) -> Result<(), MergeError> {
        let runs = self.runs.len();
        let desc = self.desc;
        let run_state = self.runs.get_mut(run).ok_or(MergeError::NoSuchRun { run, runs })?;
        if !run_state.more {
            return Err(MergeError::Finished { run });
        }
        for (key, row) in rows {
            if let Some(last) = &run_state.last {
                let in_order = if desc { key < *last } else { key > *last };
                if !in_order {
                    return Err(MergeError::OutOfOrder {
                        run,
                        key,
                        after: last.clone(),
                    });
                }
            }
            run_state.last = Some(key.clone());
            if self.exclude.as_deref() != Some(key.as_str()) {
                run_state.rows.push_back((key, row));
            }
        }
        run_state.more = more;
        Ok(())
    }

    /// The next step: a row, a fetch, or the end.
    pub fn step(&mut self) -> Step<T> {
        if self.remaining == Some(0) {
            return Step::Done;
        }
        if !self.wanted().is_empty() {
            return Step::Fetch;
        }
        let best = self.best();
        match best
            .and_then(|i| self.runs.get_mut(i))
            .and_then(|run| run.rows.pop_front())
        {
            Some((key, row)) => {
                if let Some(r) = &mut self.remaining {
                    *r -= 1;
                }
                Step::Row(key, row)
            }
            None => Step::Done,
        }
    }
}
