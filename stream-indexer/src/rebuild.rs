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
//! README section "Verify and rebuild".
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

use aws_kit::retry::{Flow, Retry, Step};

use crate::apply::{self, Backoff, Op, MAX_MEMBERS_PER_UPDATE, MAX_MEMBER_BYTES_PER_UPDATE};
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
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
    Checkpoint(String),
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

/// Paces writes to at most `per_second` items per second: each request
/// waits for its turn, spaced by its item count (integer nanoseconds, no
/// floating point).
#[derive(Debug)]
pub struct WriteBudget {
    /// Nanoseconds per item; 0: no limit.
    interval: u64,
    next: tokio::sync::Mutex<Option<tokio::time::Instant>>,
}

impl WriteBudget {
    pub fn new(per_second: Option<u32>) -> WriteBudget {
        WriteBudget {
            interval: per_second
                .filter(|r| *r > 0)
                .map_or(0, |r| 1_000_000_000 / u64::from(r)),
            next: tokio::sync::Mutex::new(None),
        }
    }

    /// Waits until `items` more items may be written.
    pub async fn take(&self, items: u64) {
        if self.interval == 0 || items == 0 {
            return;
        }
        let at = {
            let mut next = self.next.lock().await;
            let now = tokio::time::Instant::now();
            let at = next.map_or(now, |n| n.max(now));
            *next = Some(at + Duration::from_nanos(self.interval.saturating_mul(items)));
            at
        };
        tokio::time::sleep_until(at).await;
    }
}

/// Sends `call` until it succeeds, a non-retryable error, or the attempts
/// run out (the one retry driver, `aws_kit::retry`).
async fn retry<T, F, Fut>(backoff: &Backoff, mut call: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    aws_kit::retry::call(backoff, |_| call()).await
}

/// Carries out `corrections` (of one group) with the indexer's executor,
/// one lane: the same packing, coalescing, chunking, retries and failure
/// accounting as the stream's mutations. Counts what was written; the
/// first correction not carried out (refused, or failed after its retries)
/// is the error.
async fn write_through_executor<S: Store>(
    store: &S,
    config: &Config,
    options: &Options,
    corrections: &[(DriftKind, Correction)],
    what: impl Fn() -> String,
    stats: &mut RepairStats,
) -> Result<(), RebuildError> {
    let ops = corrections.iter().enumerate().map(|(record, (_, correction))| {
        (
            0,
            Op {
                record,
                mutation: correction.clone(),
            },
        )
    });
    let applied = apply::apply_batch(store, config, &options.backoff, 1, ops).await;
    stats.requests += applied.stats.requests.total() as u64;
    stats.items_written += (applied.stats.applied.put_row + applied.stats.applied.delete_row) as u64
        + applied.stats.requests.update_set as u64;
    stats.node_missing += applied.stats.node_missing;
    if let Some(refusal) = applied.refused.first() {
        return Err(RebuildError::Write {
            what: what(),
            source: StoreError::refused(refusal.reason.clone()),
        });
    }
    if let Some(stopped) = applied.first_unfinished(0..corrections.len()) {
        return Err(RebuildError::Write {
            what: what(),
            source: stopped.error,
        });
    }
    for (kind, _) in corrections {
        stats.written.count(*kind);
    }
    Ok(())
}

/// Scans every segment of one table concurrently, handing each page's items to `sink`.
async fn scan_all<T, F, Fut>(
    options: &Options,
    table: &str,
    progress: &dyn Progress,
    page: F,
    sink: &(dyn Fn(Vec<T>) + Sync),
) -> Result<(), RebuildError>
where
    F: Fn(Segment, Option<Image>) -> Fut + Sync,
    Fut: Future<Output = Result<crate::store::scan::Page<T>, StoreError>>,
{
    let of = options.segments.max(1);
    let segments = (0..of).map(|number| {
        let page = &page;
        async move {
            let segment = Segment { number, of };
            let mut start = None;
            loop {
                let got = retry(&options.backoff, || page(segment, start.clone()))
                    .await
                    .map_err(|source| RebuildError::Scan {
                        table: table.to_owned(),
                        segment: number,
                        of,
                        source,
                    })?;
                progress.advance(got.items.len() as u64);
                sink(got.items);
                match got.next {
                    // A cursor that does not move would loop forever: refuse it.
                    Some(next) if start.as_ref() == Some(&next) => {
                        return Err(RebuildError::Scan {
                            table: table.to_owned(),
                            segment: number,
                            of,
                            source: StoreError::transient(format!("the scan did not advance past {next:?}; run again")),
                        })
                    }
                    Some(next) => start = Some(next),
                    None => return Ok::<(), RebuildError>(()),
                }
            }
        }
    });
    stream::iter(segments)
        .buffer_unordered(usize::try_from(of).unwrap_or(1))
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Checks the derived data of `scope` against its source tables.
pub async fn verify<S: Scan>(
    store: &S,
    config: &Config,
    scope: &Scope,
    options: &Options,
    progress: &dyn Progress,
) -> Result<Report, RebuildError> {
    let check = Mutex::new(Verification::new(config, scope.clone()));
    for table in scope.source_tables(config) {
        progress.start(&format!("scanning {}", table.name), None);
        let name = table.name.as_str();
        scan_all(
            options,
            name,
            progress,
            |segment, start| store.scan_items(name, segment, start, options.page_size),
            &|items: Vec<Image>| {
                let mut check = lock(&check);
                for item in &items {
                    check.source_item(name, item);
                }
            },
        )
        .await?;
        progress.finish();
    }
    for &i in &scope.indexes {
        let Some(index) = config.indexes.get(i) else { continue };
        progress.start(&format!("scanning {}", index.table), None);
        scan_all(
            options,
            &index.table,
            progress,
            |segment, start| store.scan_rows(i, segment, start, options.page_size),
            &|rows: Vec<(RowKey, Image)>| {
                let mut check = lock(&check);
                for (key, attributes) in rows {
                    check.index_row(i, key, attributes);
                }
            },
        )
        .await?;
        progress.finish();
    }
    let check = check.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
    Ok(check.finish())
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

/// What [`repair`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RepairStats {
    /// Corrections written, by kind of finding they remove (the kind of the
    /// fresh comparison).
    pub written: KindCounts,
    /// Reported corrections not written: the fresh read no longer called for
    /// them (the item or the derived data changed since the scan).
    pub skipped: usize,
    /// Set updates that found no node (it was deleted since the scan).
    pub node_missing: usize,
    /// Items written (rows put or deleted, node updates): what the budget counts.
    pub items_written: u64,
    /// Requests made, retries included.
    pub requests: u64,
}

impl RepairStats {
    pub fn add(&mut self, other: &RepairStats) {
        self.written.add(&other.written);
        self.skipped += other.skipped;
        self.node_missing += other.node_missing;
        self.items_written += other.items_written;
        self.requests += other.requests;
    }
}

/// Counts by [`DriftKind`], in [`DriftKind::ALL`] order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KindCounts(pub [usize; 8]);

impl KindCounts {
    pub fn count(&mut self, kind: DriftKind) {
        if let Some(at) = DriftKind::ALL.iter().position(|k| *k == kind) {
            self.0[at] += 1;
        }
    }

    pub fn get(&self, kind: DriftKind) -> usize {
        DriftKind::ALL
            .iter()
            .position(|k| *k == kind)
            .map_or(0, |at| self.0[at])
    }

    pub fn total(&self) -> usize {
        self.0.iter().sum()
    }

    pub fn add(&mut self, other: &KindCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }
}

/// What a group of findings is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum GroupKey {
    /// The rows of index `index` produced by the source item with this key
    /// (as sorted key attribute text), or rows that name no source item.
    Rows {
        index: usize,
        source: Option<Vec<(String, String)>>,
    },
    Node {
        edge_set: usize,
        node: String,
    },
}

#[derive(Debug, Default)]
struct Group<'a> {
    source: Option<Image>,
    findings: Vec<&'a Finding>,
}

fn group_findings(findings: &[Finding]) -> BTreeMap<GroupKey, Group<'_>> {
    let mut groups: BTreeMap<GroupKey, Group<'_>> = BTreeMap::new();
    for f in findings {
        let key = match f.correction.target() {
            Target::Row { index, key } => GroupKey::Rows {
                index,
                source: match &f.source {
                    Some(s) => {
                        let mut parts: Vec<(String, String)> =
                            s.iter().map(|(k, v)| (k.clone(), format!("{v:?}"))).collect();
                        parts.sort();
                        Some(parts)
                    }
                    // A row naming no source item: a group of its own.
                    None => Some(vec![(String::new(), format!("{}\u{0}{}", key.partition, key.sort))]),
                },
            },
            Target::Node { edge_set, node } => GroupKey::Node { edge_set, node },
        };
        let group = groups.entry(key).or_default();
        if group.source.is_none() {
            group.source = f.source.clone();
        }
        group.findings.push(f);
    }
    groups
}

/// Whether a fresh correction is the one reported.
fn same_correction(a: &Correction, b: &Correction) -> bool {
    match (a, b) {
        (
            Correction::PutRow {
                index: i,
                key: k,
                attributes: x,
            },
            Correction::PutRow {
                index: j,
                key: l,
                attributes: y,
            },
        ) => i == j && k == l && drift::same_image(x, y),
        _ => a == b,
    }
}

/// Keeps the fresh corrections the mode allows; counts reported ones left out.
fn select(
    mode: Mode,
    reported: &[&Finding],
    fresh: Vec<(DriftKind, Correction)>,
    stats: &mut RepairStats,
) -> Vec<(DriftKind, Correction)> {
    match mode {
        Mode::Rederive => fresh,
        Mode::Exact => {
            let kept: Vec<(DriftKind, Correction)> = fresh
                .into_iter()
                .filter(|(_, c)| reported.iter().any(|f| same_correction(&f.correction, c)))
                .collect();
            stats.skipped += reported.len().saturating_sub(kept.len());
            kept
        }
    }
}

/// Carries out `findings` (see the module doc). Groups run `concurrency` at
/// a time; their targets are disjoint (a row's key ends with its source
/// item's key; a node is one item), so they commute.
pub async fn repair<S: Store + Scan + Marker>(
    store: &S,
    config: &Config,
    findings: &[Finding],
    mode: Mode,
    options: &Options,
    budget: &WriteBudget,
    progress: &dyn Progress,
) -> Result<RepairStats, RebuildError> {
    let groups = group_findings(findings);
    progress.start("correcting", Some(findings.len() as u64));
    let results: Vec<RepairStats> = stream::iter(groups)
        .map(|(key, group)| async move {
            let n = group.findings.len() as u64;
            let stats = match key {
                GroupKey::Rows { index, .. } => {
                    repair_rows(
                        store,
                        config,
                        index,
                        group.source.as_ref(),
                        &group.findings,
                        mode,
                        options,
                        budget,
                    )
                    .await
                }
                GroupKey::Node { edge_set, node } => {
                    repair_node(store, config, edge_set, &node, &group.findings, mode, options, budget).await
                }
            };
            progress.advance(n);
            stats
        })
        .buffer_unordered(options.concurrency.max(1))
        .try_collect()
        .await?;
    progress.finish();
    let mut total = RepairStats::default();
    for r in &results {
        total.add(r);
    }
    Ok(total)
}

fn index_and_table(config: &Config, index: usize) -> Result<(&IndexConfig, &TableConfig), RebuildError> {
    let fail = |what: String| RebuildError::Read {
        what,
        source: StoreError::deployment("not in the config".to_owned()),
    };
    let x = config
        .indexes
        .get(index)
        .ok_or_else(|| fail(format!("index #{index}")))?;
    let table = config
        .table(&x.source.table)
        .ok_or_else(|| fail(format!("table `{}`", x.source.table)))?;
    Ok((x, table))
}

/// Re-reads one source item and its rows, and corrects them.
#[allow(clippy::too_many_arguments)]
async fn repair_rows<S: Store + Scan>(
    store: &S,
    config: &Config,
    i: usize,
    source: Option<&Image>,
    reported: &[&Finding],
    mode: Mode,
    options: &Options,
    budget: &WriteBudget,
) -> Result<RepairStats, RebuildError> {
    let mut stats = RepairStats::default();
    let (index, table) = index_and_table(config, i)?;
    // The source item, as it is now.
    let item = match source {
        Some(key) => {
            stats.requests += 1;
            retry(&options.backoff, || store.read_item(&table.name, key))
                .await
                .map_err(|source| RebuildError::Read {
                    what: format!("item {key:?} of table `{}`", table.name),
                    source,
                })?
        }
        None => None,
    };
    // What it produces now (an item that cannot be indexed produces nothing, as in the planner).
    let mut expected: BTreeMap<RowKey, Image> = BTreeMap::new();
    if let Some(item) = &item {
        if let Ok(rows) = index::rows(index, table, item) {
            for key in rows.keys {
                expected.insert(key, rows.projection.clone());
            }
        }
    }
    let mut keys: BTreeSet<RowKey> = reported
        .iter()
        .filter_map(|f| match f.correction.target() {
            Target::Row { key, .. } => Some(key),
            Target::Node { .. } => None,
        })
        .collect();
    if mode == Mode::Rederive {
        keys.extend(expected.keys().cloned());
    }
    // The rows, as they are now.
    let mut actual: BTreeMap<RowKey, Image> = BTreeMap::new();
    let keys: Vec<RowKey> = keys.into_iter().collect();
    for chunk in keys.chunks(MAX_BATCH_READS) {
        let mut pending = chunk.to_vec();
        let mut again = Retry::new(&options.backoff);
        let what = || format!("rows of table `{}`", index.table);
        loop {
            stats.requests += 1;
            let step = match store.read_rows(i, pending.clone()).await {
                Ok(read) => {
                    let before = pending.len();
                    actual.extend(read.found);
                    pending = read.unprocessed;
                    if pending.is_empty() {
                        Step::Done(())
                    } else {
                        Step::Again {
                            progressed: pending.len() < before,
                            fault: StoreError::transient("BatchGetItem kept returning UnprocessedKeys"),
                        }
                    }
                }
                Err(e) => Step::of(Err(e)),
            };
            match again.next(step).await {
                Flow::Again => continue,
                Flow::Done(()) => break,
                Flow::Failed(source) => return Err(RebuildError::Read { what: what(), source }),
            }
        }
    }
    let fresh: Vec<(DriftKind, Correction)> = keys
        .iter()
        .filter_map(|k| drift::compare_row(i, k, expected.get(k), actual.get(k)))
        .collect();
    let chosen = select(mode, reported, fresh, &mut stats);
    budget.take(chosen.len() as u64).await;
    let what = || format!("rows of table `{}`", index.table);
    write_through_executor(store, config, options, &chosen, what, &mut stats).await?;
    Ok(stats)
}

/// The UpdateItems a node's corrections take (the budget is taken before
/// they are sent): one per marker, and per run of adds or of removes one per
/// update-sized chunk of members (count and bytes), as the set lane sends them.
fn expected_updates(corrections: &[(DriftKind, Correction)]) -> u64 {
    let mut updates = 0u64;
    let mut run: Option<(bool, usize, usize)> = None; // (adding, members, bytes) of the open chunk
    for (_, c) in corrections {
        let member = match c {
            Correction::AddMember { member, .. } => Some((true, member.len())),
            Correction::RemoveMember { member, .. } => Some((false, member.len())),
            _ => None,
        };
        match (member, &mut run) {
            (Some((adding, len)), Some((open, n, bytes)))
                if *open == adding && *n < MAX_MEMBERS_PER_UPDATE && *bytes + len <= MAX_MEMBER_BYTES_PER_UPDATE =>
            {
                *n += 1;
                *bytes += len;
            }
            (Some((adding, len)), _) => {
                updates += 1;
                run = Some((adding, 1, len));
            }
            (None, _) => {
                updates += 1;
                run = None;
            }
        }
    }
    updates
}

/// Re-reads one node's partition and corrects its set.
#[allow(clippy::too_many_arguments)]
async fn repair_node<S: Store + Marker>(
    store: &S,
    config: &Config,
    e: usize,
    node: &str,
    reported: &[&Finding],
    mode: Mode,
    options: &Options,
    budget: &WriteBudget,
) -> Result<RepairStats, RebuildError> {
    let mut stats = RepairStats::default();
    let (set, table): (&EdgeSetConfig, &TableConfig) = match config.edge_sets.get(e) {
        Some(set) => match config.table(&set.table) {
            Some(table) => (set, table),
            None => return Ok(stats),
        },
        None => return Ok(stats),
    };
    stats.requests += 1;
    let items = retry(&options.backoff, || store.query_partition(&table.name, node))
        .await
        .map_err(|source| RebuildError::Read {
            what: format!("partition `{node}` of table `{}`", table.name),
            source,
        })?;
    let partition = drift::partition(set, table, node, &items);
    let Some((_, state)) = partition.node else {
        // The node is gone: nothing to correct.
        stats.skipped += reported.len();
        return Ok(stats);
    };
    let check = drift::compare_set(e, set, node, &state, &partition.expected);
    let chosen = select(mode, reported, check.findings, &mut stats);
    // In the order compare_set gives: flag first, adds, removes, the `true`
    // marker last; the set lane keeps it (a marker is a barrier).
    budget.take(expected_updates(&chosen)).await;
    let what = || format!("the set of node `{node}` in table `{}`", table.name);
    write_through_executor(store, config, options, &chosen, what, &mut stats).await?;
    Ok(stats)
}

/// Where an interrupted rebuild resumes: the source tables already rebuilt
/// (verified clean after their repairs) for this config and scope.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Checkpoint {
    /// [`fingerprint`] of the config and scope; a checkpoint of another is not used.
    pub fingerprint: String,
    /// Source tables done, in the order they were done.
    pub done: Vec<String>,
}

impl Checkpoint {
    /// A fresh checkpoint for `config` and `scope`.
    pub fn new(config: &Config, scope: &Scope) -> Checkpoint {
        Checkpoint {
            fingerprint: fingerprint(config, scope),
            done: Vec::new(),
        }
    }

    /// Whether it was made for this config and scope.
    pub fn fits(&self, config: &Config, scope: &Scope) -> bool {
        self.fingerprint == fingerprint(config, scope)
    }
}

/// A stable digest (FNV-1a, 64 bits, hex) of the config and scope.
pub fn fingerprint(config: &Config, scope: &Scope) -> String {
    let text = format!("{config:?}\u{0}{scope:?}");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
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
    save: &mut (dyn FnMut(&Checkpoint) -> Result<(), String> + Send),
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

#[cfg(test)]
mod tests;
