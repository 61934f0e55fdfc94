//! Repair: findings grouped by what they are about (a source item's rows,
//! a node's set), each group read again right before it is written and
//! compared again, its corrections carried out by the indexer's executor.

use super::*;

/// Carries out `corrections` (of one group) with the indexer's executor,
/// one lane: the same packing, coalescing, chunking, retries and failure
/// accounting as the stream's mutations. Counts what was written; the
/// first correction not carried out (refused, or failed after its retries)
/// is the error.
pub(super) async fn write_through_executor<S: Store>(
    store: &S,
    config: &Config,
    options: &Options,
    stamping: &Stamping,
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
    let applied = apply::apply_batch(store, config, &options.backoff, 1, stamping, ops).await;
    stats.requests += applied.stats.requests.total() as u64;
    stats.stale += applied.stats.stale;
    stats.items_written += (applied.stats.applied.put_row + applied.stats.applied.delete_row) as u64
        + (applied.stats.requests.update_set as u64).saturating_sub(applied.stats.stale as u64);
    stats.node_missing += applied.stats.node_missing;
    if let Some(refusal) = applied.refused.first() {
        return Err(RebuildError::Write {
            what: what(),
            source: refusal.fault.clone(),
        });
    }
    if let Some(stopped) = applied.first_unfinished(0..corrections.len()) {
        return Err(RebuildError::Write {
            what: what(),
            source: stopped.error,
        });
    }
    // A correction lost to a newer stream write is not written; which of a
    // group's corrections lost is not told apart, so a group with a loss
    // counts none by kind (`stale` and `items_written` say the rest).
    if applied.stats.stale == 0 {
        for (kind, _) in corrections {
            stats.written.count(*kind);
        }
    }
    Ok(())
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
    /// Corrections not written because the derived data changed between
    /// repair's read and its write: a stream record got there first, and
    /// its write is newer (optimistic concurrency, see `read`).
    pub stale: usize,
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
        self.stale += other.stale;
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
pub(super) enum GroupKey {
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
pub(super) struct Group<'a> {
    source: Option<Image>,
    findings: Vec<&'a Finding>,
}

pub(super) fn group_findings(findings: &[Finding]) -> BTreeMap<GroupKey, Group<'_>> {
    let mut groups: BTreeMap<GroupKey, Group<'_>> = BTreeMap::new();
    for f in findings {
        let key = match f.correction.target() {
            Target::Row { index, key } => GroupKey::Rows {
                index,
                source: match &f.source {
                    Some(s) => {
                        let mut parts: Vec<(String, String)> =
                            s.iter().map(|(k, v)| (k.to_owned(), format!("{v:?}"))).collect();
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
pub(super) fn same_correction(a: &Correction, b: &Correction) -> bool {
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
pub(super) fn select(
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

pub(super) fn index_and_table(config: &Config, index: usize) -> Result<(&IndexConfig, &TableConfig), RebuildError> {
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
pub(super) async fn repair_rows<S: Store + Scan>(
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
    let keys: BTreeSet<RowKey> = reported
        .iter()
        .filter_map(|f| match f.correction.target() {
            Target::Row { key, .. } => Some(key),
            Target::Node { .. } => None,
        })
        .collect();
    // The rows (and their versions) first, then the item: see `read`.
    let read = read::rows_then_item(store, i, index, table, source, keys, mode, options, &mut stats.requests).await?;
    let fresh: Vec<(DriftKind, Correction)> = read
        .keys
        .iter()
        .filter_map(|k| drift::compare_row(i, k, read.expected.get(k), read.actual.get(k)))
        .collect();
    let stamping = Stamping::new(Vec::new(), Guard::AsRead(read.versions));
    let chosen = select(mode, reported, fresh, &mut stats);
    budget.take(chosen.len() as u64).await;
    let what = || format!("rows of table `{}`", index.table);
    write_through_executor(store, config, options, &stamping, &chosen, what, &mut stats).await?;
    Ok(stats)
}

/// The UpdateItems a node's corrections take (the budget is taken before
/// they are sent): one per marker, and per run of adds or of removes one per
/// update-sized chunk of members (count and bytes), as the set lane sends them.
pub(super) fn expected_updates(corrections: &[(DriftKind, Correction)]) -> u64 {
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
pub(super) async fn repair_node<S: Store + Scan>(
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
    // The node's mark first, then its partition: see `read`.
    let mark = read::node_mark(store, set, table, node, options, &mut stats.requests).await?;
    let mut versions = ReadVersions::default();
    versions.marks.insert((e, node.to_owned()), mark);
    let stamping = Stamping::new(Vec::new(), Guard::AsRead(std::sync::Arc::new(versions)));
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
    write_through_executor(store, config, options, &stamping, &chosen, what, &mut stats).await?;
    Ok(stats)
}
