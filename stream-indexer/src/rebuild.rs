//! Verify and rebuild: prove the derived data right, and put it right.
//!
//! - [`verify`] scans the scope's source tables (parallel segments, strongly
//!   consistent, page by page) into a [`model::drift::Verification`], then
//!   the scope's index tables, and returns the [`Report`]: every finding with
//!   the correction that removes it, and notices.
//! - [`repair`] carries out findings. Findings are grouped by what they are
//!   about: a source item's index rows, or a node's set. Right before it
//!   writes, each group is read again, strongly consistent (the source item
//!   and its rows; the node's partition with a Query), and compared again
//!   with the same pure functions. With [`Mode::Exact`] (`verify --repair`)
//!   only the reported corrections that still hold are written, the others are
//!   skipped and counted; with [`Mode::Rederive`] (`rebuild`) whatever the
//!   fresh read says is wrong about the group is corrected.
//! - [`rebuild`] does, per source table: verify, repair, verify again, until
//!   clean or `rounds` repairs are spent, and records finished tables in a
//!   [`Checkpoint`] so that an interrupted rebuild resumes with the next one.
//!
//! Writes are corrections, which are `Mutation`s, carried out by the
//! indexer's own executor (`apply`: BatchWriteItem of rows, conditional
//! UpdateItem ADD/DELETE of members and SET of the marker, coalesced per
//! node), paced by a [`WriteBudget`] (items per second), with the one retry
//! driver ([`Backoff`]: throttling and 5xx are retried with exponential
//! backoff and full jitter, `UnprocessedItems` and `UnprocessedKeys` resent).
//!
//! Why the result converges while the stream consumers are live: see the
//! `docs/operations.md`, "With the consumers live".
//!
//! Memory: [`verify`] holds the rows the scanned source items produce (key,
//! projection, source key) until their stored row is scanned, and every
//! node's set and the members of its edges; stored rows are streamed. So the
//! bound is about the size of the scope's derived data, not of the source
//! tables. [`repair`] holds one group per request in flight.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use futures::stream::{self, StreamExt, TryStreamExt};
use model::config::{Config, EdgeSetConfig, IndexConfig, TableConfig};
use model::drift::{self, Correction, DriftKind, Finding, Report, Scope, Target, Verification};
use model::index::{self, RowKey};
use model::Image;

use aws_kit::retry::{Partial, Resend};

use crate::apply::{
    self, Backoff, Guard, Op, ReadVersions, Stamping, MAX_MEMBERS_PER_UPDATE, MAX_MEMBER_BYTES_PER_UPDATE,
};
use crate::store::scan::{Marker, Scan, Segment, MAX_BATCH_READS};
use crate::store::{Store, StoreError};

/// How verify and rebuild read and write.
#[derive(Debug, Clone)]
pub struct Options {
    /// Parallel scan segments per table (1 to 1,000,000; DynamoDB's limit).
    pub segments: u32,
    /// Items per Scan page.
    pub page_size: u32,
    /// Correction groups (a source item's rows, or a node) in flight at once.
    pub concurrency: usize,
    /// Items written per second at most (`None`: as fast as the table takes).
    pub budget: Option<u32>,
    /// Retries of failed requests.
    pub backoff: Backoff,
    /// `rebuild`: repairs per table before giving up on drift that keeps coming back.
    pub rounds: u32,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            segments: 4,
            page_size: 1000,
            concurrency: 16,
            budget: None,
            backoff: Backoff::default(),
            rounds: 3,
        }
    }
}

/// Why verify, repair or rebuild stopped.
#[derive(Debug, thiserror::Error)]
pub enum RebuildError {
    #[error("scanning table `{table}` (segment {segment} of {of}): {source}")]
    Scan {
        table: String,
        segment: u32,
        of: u32,
        source: StoreError,
    },
    #[error("reading {what}: {source}")]
    Read { what: String, source: StoreError },
    #[error("writing {what}: {source}")]
    Write { what: String, source: StoreError },
    #[error("saving the checkpoint: {0}")]
    Checkpoint(#[source] CheckpointWriteError),
}

impl RebuildError {
    /// Whether running the command again may succeed (throttling, 5xx, a
    /// timeout, an unwritable checkpoint).
    pub fn is_retryable(&self) -> bool {
        match self {
            RebuildError::Scan { source, .. }
            | RebuildError::Read { source, .. }
            | RebuildError::Write { source, .. } => source.is_retryable(),
            RebuildError::Checkpoint(_) => true,
        }
    }
}

/// Progress of a long phase, for a progress bar. Methods are called from
/// concurrent tasks.
pub trait Progress: Send + Sync {
    /// A phase starts: `name`, and how many steps it has if known.
    fn start(&self, _name: &str, _total: Option<u64>) {}
    /// `n` more steps done.
    fn advance(&self, _n: u64) {}
    /// The phase is over.
    fn finish(&self) {}
}

/// No progress display.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl Progress for Quiet {}

/// Sends `call` until it succeeds, a non-retryable error, or the attempts
/// run out (the one retry driver, `aws_kit::retry`).
async fn retry<T, F, Fut>(backoff: &Backoff, mut call: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    aws_kit::retry::call(backoff, |_| call()).await
}

/// How [`repair`] treats a group whose fresh read disagrees with the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Write only reported corrections that the fresh read confirms
    /// (`verify --repair`: exactly what was reported, or less).
    Exact,
    /// Write every correction the fresh read calls for in the group (`rebuild`).
    Rederive,
}

/// What [`rebuild`] did with one source table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TableOutcome {
    pub table: String,
    /// Skipped: the checkpoint says it was done.
    pub resumed: bool,
    /// The first verification (what was wrong before).
    pub before: Option<Report>,
    pub repairs: RepairStats,
    /// Verifications made (the first included).
    pub passes: u32,
    /// The last verification: clean unless drift kept coming back for `rounds` repairs.
    pub after: Option<Report>,
}

/// What [`rebuild`] did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RebuildOutcome {
    pub tables: Vec<TableOutcome>,
}

impl RebuildOutcome {
    /// Whether every table ended clean.
    pub fn is_clean(&self) -> bool {
        self.tables
            .iter()
            .all(|t| t.resumed || t.after.as_ref().is_some_and(Report::is_clean))
    }

    pub fn repairs(&self) -> RepairStats {
        let mut total = RepairStats::default();
        for t in &self.tables {
            total.add(&t.repairs);
        }
        total
    }
}

/// Rebuilds the derived data of `scope`, source table by source table:
/// verify, repair ([`Mode::Rederive`]), verify again, up to `options.rounds`
/// repairs, until clean. A table that ends clean is added to `checkpoint` and
/// `save` is called; tables already in it are skipped.
pub async fn rebuild<S: Store + Scan + Marker>(
    store: &S,
    config: &Config,
    scope: &Scope,
    options: &Options,
    checkpoint: &mut Checkpoint,
    save: &mut (dyn FnMut(&Checkpoint) -> Result<(), CheckpointWriteError> + Send),
    progress: &dyn Progress,
) -> Result<RebuildOutcome, RebuildError> {
    let budget = WriteBudget::new(options.budget);
    let mut outcome = RebuildOutcome::default();
    for table in scope.source_tables(config) {
        let mut t = TableOutcome {
            table: table.name.clone(),
            ..TableOutcome::default()
        };
        if checkpoint.done.contains(&table.name) {
            t.resumed = true;
            outcome.tables.push(t);
            continue;
        }
        let part = scope.of_table(config, &table.name);
        let mut report = verify(store, config, &part, options, progress).await?;
        t.passes = 1;
        t.before = Some(report.clone());
        let mut round = 0;
        while !report.is_clean() && round < options.rounds {
            let stats = repair(
                store,
                config,
                &report.findings,
                Mode::Rederive,
                options,
                &budget,
                progress,
            )
            .await?;
            t.repairs.add(&stats);
            report = verify(store, config, &part, options, progress).await?;
            t.passes += 1;
            round += 1;
        }
        let clean = report.is_clean();
        t.after = Some(report);
        outcome.tables.push(t);
        if clean {
            checkpoint.done.push(table.name.clone());
            save(checkpoint).map_err(RebuildError::Checkpoint)?;
        }
    }
    Ok(outcome)
}

mod budget;
mod checkpoint;
mod read;
mod repair;
mod verify;

pub use budget::WriteBudget;
pub use checkpoint::{fingerprint, Checkpoint, CheckpointWriteError};
pub use repair::{repair, KindCounts, RepairStats};
pub use verify::verify;

#[cfg(test)]
mod race_tests;
#[cfg(test)]
mod tests;
