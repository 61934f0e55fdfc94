//! Batch semantics: what one Lambda invocation does with its records, and
//! what it reports (`batchItemFailures`), per `docs/ESM.md` and the
//! invariants of `docs/DESIGN.md`.
//!
//! 1. Every record is parsed ([`model::record::parse_batch`]) and planned.
//! 2. Records are grouped by (table, partition key value). A group keeps
//!    stream order. Every mutation's target belongs to exactly one partition
//!    key, so groups never touch the same item (nor the same index row).
//! 3. The plans of the whole batch are carried out by [`apply::apply_batch`]:
//!    the index row writes of all groups share BatchWriteItem calls, filled in
//!    batch order; each group's edge-set changes go through its own lane.
//!    Row calls, and set lanes, are each in flight at most
//!    [`Options::concurrency`] at a time. A group stops at its first record
//!    whose mutations are not all done (a request that failed for good
//!    after its retries, or a `Deployment` error, left one undone): when a
//!    row call shared by several groups fails, every record with a write in
//!    it is unfinished, and each of their groups stops at its first
//!    unfinished record.
//! 4. Poison (a record that can never succeed: a [`model::record::RecordError`],
//!    plan problems, a mutation the store refused) is quarantined with its raw
//!    JSON, reason and sequence number, after its plan's other mutations are
//!    applied, and then counts as handled. Poison at or after the batch's
//!    failure is not quarantined now: it will be redelivered.
//! 5. The batch's failure ([`BatchOutcome::failed`]) is the lowest failed
//!    sequence number (compared as numbers) over all groups and quarantine
//!    failures: the lowest record not fully applied, every record before it
//!    being fully applied. Lambda retries from it, including later records
//!    that succeeded: harmless, as every mutation is idempotent.
//!
//! A quarantine failure counts as a failure of its records (never dropped).
//! A record without a usable sequence number can only be quarantined; if
//! that fails, the whole batch fails: `failed` is `Some("")`, reported as an
//! empty `itemIdentifier`, which Lambda treats as a failure of the whole batch.
//! A payload that is not a batch at all is a [`BatchError`]: the Lambda
//! returns a function error, and Lambda retries (or bisects) the batch.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use model::config::Config;
use model::record::{self, ChangeRecord, CreationTime, ParseError, Received};
use model::{Plan, Planner, Value};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::apply::{self, Applied, ApplyStats, Backoff, MutationCounts, Op};
use crate::quarantine::{Quarantine, QuarantineEntry};
use crate::store::{Store, StoreError};

/// The consumer name quarantine entries carry by default.
pub const CONSUMER: &str = "stream-indexer";

/// How an [`Indexer`] works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Requests in flight at once, per kind (at least 1): BatchWriteItem
    /// calls, and set lanes (one per partition-key group with edge-set
    /// changes, each sending one request at a time).
    pub concurrency: usize,
    pub backoff: Backoff,
    /// The `consumer` of quarantine entries.
    pub consumer: String,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            concurrency: 16,
            backoff: Backoff::default(),
            consumer: CONSUMER.to_owned(),
        }
    }
}

/// The payload as a whole is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    #[error("the payload is not a Lambda DynamoDB event: {0}")]
    Payload(#[from] ParseError),
}

/// What a batch did, for metrics and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BatchStats {
    pub records: usize,
    /// Partition-key groups.
    pub groups: usize,
    /// Records that did not parse.
    pub unparsable: usize,
    /// Mutations the plans asked for, by kind.
    pub planned: MutationCounts,
    /// What the executor did: mutations applied by kind, requests, retries,
    /// nodes missing or flagged, refusals.
    pub apply: ApplyStats,
    /// Records quarantined.
    pub quarantined: usize,
    /// Calls to the quarantine.
    pub quarantine_requests: usize,
    /// Groups stopped by a failure.
    pub failed_groups: usize,
    /// The oldest `ApproximateCreationDateTime` in the batch, for iterator age.
    pub oldest_created: Option<CreationTime>,
}

impl BatchStats {
    /// Adds another batch's figures (for totals over several batches).
    pub fn add(&mut self, other: &BatchStats) {
        self.records += other.records;
        self.groups += other.groups;
        self.unparsable += other.unparsable;
        self.planned.add(&other.planned);
        self.quarantined += other.quarantined;
        self.quarantine_requests += other.quarantine_requests;
        self.failed_groups += other.failed_groups;
        self.oldest_created = match (self.oldest_created, other.oldest_created) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.apply.add(&other.apply);
    }
}

/// One quarantined record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantined {
    pub sequence_number: Option<String>,
    pub table: Option<String>,
    pub reason: String,
}

/// What made (part of) the batch fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// A transient store error outlived its retries.
    Transient,
    /// The deployment is wrong (missing table, access denied).
    Deployment,
    /// The quarantine could not take the poison records.
    Quarantine,
}

/// One failure: a stopped group, or a failed quarantine call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The first record it fails (empty: the whole batch).
    pub sequence_number: String,
    pub kind: FailureKind,
    pub reason: String,
}

/// What one batch did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BatchOutcome {
    /// The lowest failed sequence number; `None` when every record was
    /// handled; `Some("")` when the whole batch failed (see the module doc).
    pub failed: Option<String>,
    pub stats: BatchStats,
    /// The records quarantined, in batch order.
    pub quarantined: Vec<Quarantined>,
    /// Why the batch failed, one entry per stopped group or failed quarantine call.
    pub failures: Vec<Failure>,
}

/// The Lambda response for `ReportBatchItemFailures`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BatchResponse {
    #[serde(rename = "batchItemFailures")]
    pub batch_item_failures: Vec<ItemFailure>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemFailure {
    #[serde(rename = "itemIdentifier")]
    pub item_identifier: String,
}

impl BatchOutcome {
    /// `{"batchItemFailures": [{"itemIdentifier": "SEQ"}]}`, or an empty list
    /// when every record was handled. Lambda checkpoints at the one listed
    /// sequence number and retries from it; an empty identifier fails the
    /// whole batch.
    pub fn response(&self) -> BatchResponse {
        BatchResponse {
            batch_item_failures: self
                .failed
                .iter()
                .map(|seq| ItemFailure {
                    item_identifier: seq.clone(),
                })
                .collect(),
        }
    }

    /// [`BatchOutcome::response`] as JSON text.
    pub fn response_json(&self) -> String {
        serde_json::to_string(&self.response()).unwrap_or_else(|_| r#"{"batchItemFailures":[]}"#.to_owned())
    }

    /// True when the whole batch failed (not from a sequence number).
    pub fn is_whole_batch_failure(&self) -> bool {
        self.failed.as_deref() == Some("")
    }
}

/// Compares two sequence numbers (decimal strings of any length) as numbers.
/// The empty string is lowest.
pub fn cmp_sequence_numbers(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// The lower of a failure so far and a new one.
fn lowest(current: Option<String>, new: String) -> Option<String> {
    match current {
        Some(c) if cmp_sequence_numbers(&c, &new) != Ordering::Greater => Some(c),
        _ => Some(new),
    }
}

/// Which group a record belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum GroupKey {
    /// A table and a partition key value (typed; `None`: no value found).
    Partition { table: String, partition: Option<String> },
    /// A record whose table is unknown: it plans no mutation, so it is alone.
    Alone(usize),
}

fn partition_text(value: &Value) -> String {
    match value {
        Value::S(s) => format!("S:{s}"),
        Value::N(n) => format!(
            "N:{}",
            model::sortkey::canonical_number(n).unwrap_or_else(|_| n.clone())
        ),
        other => format!("{other:?}"),
    }
}

fn group_key(planner: &Planner<'_>, record: &ChangeRecord, position: usize) -> (GroupKey, Option<String>) {
    match planner.table_of(record) {
        Ok(table) => {
            let pk = &table.partition_key;
            let value = record
                .keys
                .get(pk)
                .or_else(|| record.new.as_ref().and_then(|i| i.get(pk)))
                .or_else(|| record.old.as_ref().and_then(|i| i.get(pk)));
            let key = GroupKey::Partition {
                table: table.name.clone(),
                partition: value.map(partition_text),
            };
            (key, Some(table.name.clone()))
        }
        Err(_) => (GroupKey::Alone(position), record.table.clone()),
    }
}

/// One parsed record of a group.
struct Entry {
    position: usize,
    /// Its group (a position in `groups`).
    group: usize,
    sequence_number: String,
    table: Option<String>,
    raw: Box<RawValue>,
    plan: Plan,
}

/// A record to quarantine.
struct Poison {
    position: usize,
    sequence_number: Option<String>,
    table: Option<String>,
    reason: String,
    raw: Box<RawValue>,
}

/// The stream indexer: plans each record and carries the plans out against
/// a [`Store`], quarantining poison into a [`Quarantine`].
pub struct Indexer<S: Store, Q: Quarantine> {
    config: Arc<Config>,
    store: S,
    quarantine: Q,
    options: Options,
}

impl<S: Store, Q: Quarantine> Indexer<S, Q> {
    pub fn new(config: Arc<Config>, store: S, quarantine: Q, options: Options) -> Self {
        Indexer {
            config,
            store,
            quarantine,
            options,
        }
    }

    pub fn config(&self) -> &Arc<Config> {
        &self.config
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    pub fn quarantine(&self) -> &Q {
        &self.quarantine
    }

    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Handles a Lambda DynamoDB event (or a `GetRecords` response) given as bytes.
    pub async fn handle(&self, payload: &[u8]) -> Result<BatchOutcome, BatchError> {
        let records = record::parse_batch(payload)?;
        Ok(self.handle_received(records).await)
    }

    /// Handles parsed records, in stream order. See the module doc.
    pub async fn handle_received(&self, records: Vec<Received>) -> BatchOutcome {
        let planner = Planner::new(&self.config);
        let mut stats = BatchStats {
            records: records.len(),
            ..BatchStats::default()
        };
        // Parsed records in batch order; groups hold their positions in `entries`.
        let mut entries: Vec<Entry> = Vec::new();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut group_of: HashMap<GroupKey, usize> = HashMap::new();
        let mut poison = Vec::new();
        for (position, received) in records.into_iter().enumerate() {
            let Received {
                raw,
                sequence_number,
                record,
            } = received;
            match record {
                Err(error) => {
                    stats.unparsable += 1;
                    poison.push(Poison {
                        position,
                        sequence_number,
                        table: None,
                        reason: error.to_string(),
                        raw,
                    });
                }
                Ok(record) => {
                    if let Some(created) = record.created {
                        stats.oldest_created = Some(stats.oldest_created.map_or(created, |o| o.min(created)));
                    }
                    let plan = planner.plan(&record);
                    for mutation in &plan.mutations {
                        stats.planned.count(mutation);
                    }
                    let (key, table) = group_key(&planner, &record, position);
                    let at = *group_of.entry(key).or_insert_with(|| {
                        groups.push(Vec::new());
                        groups.len() - 1
                    });
                    groups[at].push(entries.len());
                    entries.push(Entry {
                        position,
                        group: at,
                        sequence_number: record.sequence_number,
                        table,
                        raw,
                        plan,
                    });
                }
            }
        }
        stats.groups = groups.len();

        let ops = entries.iter_mut().enumerate().flat_map(|(record, entry)| {
            let group = entry.group;
            let mutations = std::mem::take(&mut entry.plan.mutations);
            mutations
                .into_iter()
                .map(move |mutation| (group, Op { record, mutation }))
        });
        let concurrency = self.options.concurrency.max(1);
        let applied = apply::apply_batch(&self.store, &self.config, &self.options.backoff, concurrency, ops).await;
        stats.apply.add(&applied.stats);

        let mut failed = None;
        let mut failures = Vec::new();
        // Per entry: whether its group stopped at or before it.
        let mut stopped = vec![false; entries.len()];
        for group in &groups {
            let Some((at, failure)) = group_failure(&entries, &applied, group) else {
                continue;
            };
            for &record in group.iter().skip_while(|&&r| r != at) {
                stopped[record] = true;
            }
            stats.failed_groups += 1;
            failed = lowest(failed, failure.sequence_number.clone());
            failures.push(failure);
        }
        poison.extend(record_poison(entries, &stopped, applied));

        // Poison at or after the failure is redelivered: quarantine it then.
        poison.retain(|p| match (&p.sequence_number, &failed) {
            (Some(seq), Some(failed)) => cmp_sequence_numbers(seq, failed) == Ordering::Less,
            _ => true,
        });
        poison.sort_by_key(|p| p.position);
        let mut quarantined = Vec::new();
        if !poison.is_empty() {
            stats.quarantine_requests += 1;
            let entries = poison
                .iter()
                .map(|p| QuarantineEntry {
                    consumer: self.options.consumer.clone(),
                    sequence_number: p.sequence_number.clone(),
                    table: p.table.clone(),
                    reason: p.reason.clone(),
                    raw: p.raw.get().to_owned(),
                })
                .collect();
            match self.quarantine.put(entries).await {
                Ok(()) => {
                    stats.quarantined = poison.len();
                    for p in poison {
                        tracing::warn!(sequence_number = ?p.sequence_number, table = ?p.table, reason = %p.reason, "quarantined");
                        quarantined.push(Quarantined {
                            sequence_number: p.sequence_number,
                            table: p.table,
                            reason: p.reason,
                        });
                    }
                }
                Err(error) => {
                    let first = if poison.iter().any(|p| p.sequence_number.is_none()) {
                        String::new()
                    } else {
                        poison
                            .iter()
                            .filter_map(|p| p.sequence_number.clone())
                            .min_by(|a, b| cmp_sequence_numbers(a, b))
                            .unwrap_or_default()
                    };
                    tracing::error!(%error, records = poison.len(), "quarantine failed: the records count as failed");
                    failed = lowest(failed, first.clone());
                    failures.push(Failure {
                        sequence_number: first,
                        kind: FailureKind::Quarantine,
                        reason: error.to_string(),
                    });
                }
            }
        }
        for failure in &failures {
            tracing::error!(sequence_number = %failure.sequence_number, kind = ?failure.kind, reason = %failure.reason, "batch failure");
        }
        BatchOutcome {
            failed,
            stats,
            quarantined,
            failures,
        }
    }
}

/// Where a group stopped, if it did: its first record not fully applied
/// (every record of the group before it is), as a position in `entries`
/// and a [`Failure`].
fn group_failure(entries: &[Entry], applied: &Applied, group: &[usize]) -> Option<(usize, Failure)> {
    let stopped = applied.first_unfinished(group.iter().copied())?;
    let failure = Failure {
        // (Always an entry; failing the whole batch is the safe fallback.)
        sequence_number: entries
            .get(stopped.record)
            .map_or_else(String::new, |e| e.sequence_number.clone()),
        kind: match stopped.error {
            StoreError::Deployment(_) => FailureKind::Deployment,
            StoreError::Transient(_) | StoreError::Refused(_) => FailureKind::Transient,
        },
        reason: stopped.error.to_string(),
    };
    Some((stopped.record, failure))
}

/// The poison among the records (plan problems and refused mutations), but
/// for records at or after where their group stopped: those are redelivered.
fn record_poison(entries: Vec<Entry>, stopped: &[bool], applied: Applied) -> Vec<Poison> {
    let mut refusals: HashMap<usize, Vec<String>> = HashMap::new();
    for refusal in applied.refused {
        refusals.entry(refusal.record).or_default().push(refusal.reason);
    }
    let mut poison = Vec::new();
    for (i, entry) in entries.into_iter().enumerate() {
        if stopped.get(i).copied().unwrap_or(true) {
            continue;
        }
        let mut reasons: Vec<String> = entry.plan.problems.iter().map(ToString::to_string).collect();
        reasons.extend(refusals.remove(&i).unwrap_or_default());
        if !reasons.is_empty() {
            poison.push(Poison {
                position: entry.position,
                reason: format!("record {}: {}", entry.sequence_number, reasons.join("; ")),
                sequence_number: Some(entry.sequence_number),
                table: entry.table,
                raw: entry.raw,
            });
        }
    }
    poison
}

#[cfg(test)]
mod tests;
