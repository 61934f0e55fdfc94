//! Batch semantics: what one Lambda invocation does with its records, and
//! what it reports (`batchItemFailures`), per `docs/ESM.md` and the
//! invariants of `docs/DESIGN.md`.
//!
//! 1. Every record is parsed ([`model::record::parse_batch`]) and planned.
//! 2. Records are grouped by (table, partition key value). A group keeps
//!    stream order; groups run concurrently, at most
//!    [`Options::concurrency`] at a time. Every mutation's target belongs to
//!    exactly one partition key, so groups never touch the same item.
//! 3. Each group's plans are carried out by [`apply::apply_group`]. A
//!    `Transient` error that outlives its retries, or a `Deployment` error,
//!    stops the group at the lowest record whose mutations are not all done.
//! 4. Poison (a record that can never succeed: a [`model::record::RecordError`],
//!    plan problems, a mutation the store refused) is quarantined with its raw
//!    JSON, reason and sequence number, after its plan's other mutations are
//!    applied, and then counts as handled. Poison at or after the batch's
//!    failure is not quarantined now: it will be redelivered.
//! 5. The batch's failure ([`BatchOutcome::failed`]) is the lowest failed
//!    sequence number (compared as numbers) over all groups and quarantine
//!    failures. Lambda retries from it, including later records that
//!    succeeded: harmless, as every mutation is idempotent.
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

use futures::stream::{self, StreamExt};
use model::config::Config;
use model::record::{self, ChangeRecord, CreationTime, ParseError, Received};
use model::{Plan, Planner, Value};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::apply::{self, ApplyStats, Backoff, MutationCounts, Op, RequestCounts};
use crate::quarantine::{Quarantine, QuarantineEntry};
use crate::store::{Store, StoreError};

/// The consumer name quarantine entries carry by default.
pub const CONSUMER: &str = "stream-indexer";

/// How an [`Indexer`] works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Groups in flight at once (at least 1).
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
    /// Mutations done, by kind.
    pub applied: MutationCounts,
    /// Store requests made (every attempt).
    pub requests: RequestCounts,
    /// Row writes resent because they came back unprocessed.
    pub unprocessed: usize,
    /// Set requests that found no node.
    pub node_missing: usize,
    /// Set requests that flagged their node past `max_members`.
    pub flagged: usize,
    /// Mutations the store refused.
    pub refused: usize,
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
    fn add_apply(&mut self, stats: &ApplyStats) {
        self.applied.add(&stats.applied);
        self.requests.add(&stats.requests);
        self.unprocessed += stats.unprocessed;
        self.node_missing += stats.node_missing;
        self.flagged += stats.flagged;
        self.refused += stats.refused;
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

struct GroupOutcome {
    stats: ApplyStats,
    poison: Vec<Poison>,
    failure: Option<Failure>,
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
        let mut groups: Vec<Vec<Entry>> = Vec::new();
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
                    groups[at].push(Entry {
                        position,
                        sequence_number: record.sequence_number,
                        table,
                        raw,
                        plan,
                    });
                }
            }
        }
        stats.groups = groups.len();

        let concurrency = self.options.concurrency.max(1);
        let outcomes: Vec<GroupOutcome> = stream::iter(groups)
            .map(|group| self.run_group(group))
            .buffer_unordered(concurrency)
            .collect()
            .await;

        let mut failed = None;
        let mut failures = Vec::new();
        for outcome in outcomes {
            stats.add_apply(&outcome.stats);
            if let Some(failure) = outcome.failure {
                stats.failed_groups += 1;
                failed = lowest(failed, failure.sequence_number.clone());
                failures.push(failure);
            }
            poison.extend(outcome.poison);
        }

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

    /// Carries out one group's plans, then says what to quarantine and where it stopped.
    async fn run_group(&self, mut entries: Vec<Entry>) -> GroupOutcome {
        let mut ops = Vec::new();
        for (record, entry) in entries.iter_mut().enumerate() {
            ops.extend(
                std::mem::take(&mut entry.plan.mutations)
                    .into_iter()
                    .map(|mutation| Op { record, mutation }),
            );
        }
        let result = apply::apply_group(&self.store, &self.config, &self.options.backoff, ops).await;
        let end = result
            .stopped
            .as_ref()
            .map_or(entries.len(), |s| s.record.min(entries.len()));
        let failure = result.stopped.map(|stopped| {
            let at = entries.get(stopped.record).or(entries.first());
            Failure {
                sequence_number: at.map(|e| e.sequence_number.clone()).unwrap_or_default(),
                kind: match stopped.error {
                    StoreError::Deployment(_) => FailureKind::Deployment,
                    StoreError::Transient(_) | StoreError::Refused(_) => FailureKind::Transient,
                },
                reason: stopped.error.to_string(),
            }
        });
        let mut refusals: HashMap<usize, Vec<String>> = HashMap::new();
        for refusal in result.refused {
            refusals.entry(refusal.record).or_default().push(refusal.reason);
        }
        let mut poison = Vec::new();
        for (i, entry) in entries.into_iter().enumerate().take(end) {
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
        GroupOutcome {
            stats: result.stats,
            poison,
            failure,
        }
    }
}

#[cfg(test)]
mod tests;
