//! The settlement of a batch: once a consumer has done what it could with
//! each record, which records failed, which are quarantined, and what Lambda
//! is told (`batchItemFailures`). Shared by both stream consumers (the
//! indexer and the event router), so they fail and quarantine alike.
//!
//! 1. A record belongs to a partition-key group (records of one table and
//!    partition key value, in stream order) or stands alone. A group stops
//!    at its first *unfinished* record (its work not all done); that record
//!    and every later one of its group are *stopped*: Lambda redelivers them.
//! 2. The batch's failure is the lowest failed sequence number (compared as
//!    numbers) over all groups: every record before it is fully handled.
//! 3. Poison (a record that can never succeed) that is not stopped and comes
//!    before the failure is quarantined, in batch order, in one call; it
//!    then counts as handled. Poison at or after the failure waits for its
//!    redelivery.
//! 4. A quarantine failure is a failure of its records (never dropped). A
//!    record without a usable sequence number can only be quarantined; if
//!    that fails, the whole batch fails: `failed` is `Some("")`, reported as
//!    an empty `itemIdentifier`, which Lambda treats as a failure of the
//!    whole batch.

use std::cmp::Ordering;
use std::collections::HashMap;

use model::config::TableConfig;
use model::{ChangeRecord, Value};
use serde_json::value::RawValue;

use crate::quarantine::{Quarantine, QuarantineEntry};

/// What made (part of) a batch fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// A transient error (throttling, a timeout) outlived its retries.
    Transient,
    /// The deployment is wrong (missing table or bus, access denied).
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

/// One quarantined record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantined {
    pub sequence_number: Option<String>,
    pub table: Option<String>,
    pub reason: String,
}

/// One record of a batch as the consumer left it.
#[derive(Debug)]
pub struct Handled {
    /// Its place in the batch.
    pub position: usize,
    /// `None` when the record had none that could be read.
    pub sequence_number: Option<String>,
    /// Its source table, when known.
    pub table: Option<String>,
    /// Its partition-key group (an index chosen by the consumer); `None`:
    /// the record stands alone.
    pub group: Option<usize>,
    /// The record exactly as delivered, for the quarantine.
    pub raw: Box<RawValue>,
    /// Why it can never succeed, when it cannot (it is then quarantined
    /// once the rest of its work is done).
    pub poison: Option<String>,
    /// Why its work is not all done, when it is not.
    pub unfinished: Option<(FailureKind, String)>,
}

/// The settlement of a batch.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Settled {
    /// The lowest failed sequence number; `None` when every record was
    /// handled; `Some("")` when the whole batch failed.
    pub failed: Option<String>,
    /// The records quarantined, in batch order.
    pub quarantined: Vec<Quarantined>,
    /// One entry per stopped group or failed quarantine call.
    pub failures: Vec<Failure>,
    /// Calls made to the quarantine (0 or 1).
    pub quarantine_requests: usize,
}

impl Settled {
    /// Groups (and lone records) stopped by a failure.
    pub fn stopped_groups(&self) -> usize {
        self.failures
            .iter()
            .filter(|f| f.kind != FailureKind::Quarantine)
            .count()
    }
}

/// Numbers the partition-key groups of a batch in order of appearance.
#[derive(Debug, Default)]
pub struct Groups {
    numbers: HashMap<(String, Option<String>), usize>,
}

impl Groups {
    /// The group of a record of `table`: its table and partition key value
    /// (from its keys, else its images; `None` when it has none).
    pub fn of(&mut self, table: &TableConfig, record: &ChangeRecord) -> usize {
        let pk = &table.partition_key;
        let value = record
            .keys
            .get(pk)
            .or_else(|| record.new.as_ref().and_then(|i| i.get(pk)))
            .or_else(|| record.old.as_ref().and_then(|i| i.get(pk)));
        let next = self.numbers.len();
        *self
            .numbers
            .entry((table.name.clone(), value.map(partition_text)))
            .or_insert(next)
    }

    /// Groups numbered so far.
    pub fn len(&self) -> usize {
        self.numbers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.numbers.is_empty()
    }
}

/// A partition key value as text, typed, numbers canonical (`1.0` = `1`).
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

/// Settles a batch (`records` in any order): see the module doc. `consumer`
/// names the consumer in quarantine entries.
pub async fn settle<Q: Quarantine>(quarantine: &Q, consumer: &str, mut records: Vec<Handled>) -> Settled {
    records.sort_by_key(|r| r.position);
    let mut settled = Settled::default();

    // Where each group stops: its first unfinished record.
    let mut stops: Vec<(Option<usize>, usize)> = Vec::new();
    let mut stopped = vec![false; records.len()];
    for (i, record) in records.iter().enumerate() {
        let group_stopped = record.group.is_some_and(|g| stops.iter().any(|&(sg, _)| sg == Some(g)));
        if group_stopped {
            stopped[i] = true;
            continue;
        }
        if let Some((kind, reason)) = &record.unfinished {
            stopped[i] = true;
            stops.push((record.group, i));
            let sequence_number = record.sequence_number.clone().unwrap_or_default();
            settled.failed = lowest(settled.failed.take(), sequence_number.clone());
            settled.failures.push(Failure {
                sequence_number,
                kind: *kind,
                reason: reason.clone(),
            });
        }
    }

    // Poison not stopped and before the failure is quarantined now.
    let failed = settled.failed.clone();
    let poison: Vec<(&Handled, &String)> = records
        .iter()
        .zip(&stopped)
        .filter(|(_, &stopped)| !stopped)
        .filter_map(|(r, _)| r.poison.as_ref().map(|reason| (r, reason)))
        .filter(|(r, _)| match (&r.sequence_number, &failed) {
            (Some(seq), Some(failed)) => cmp_sequence_numbers(seq, failed) == Ordering::Less,
            _ => true,
        })
        .collect();
    if poison.is_empty() {
        return settled;
    }
    settled.quarantine_requests = 1;
    let entries = poison
        .iter()
        .map(|(r, reason)| QuarantineEntry {
            consumer: consumer.to_owned(),
            sequence_number: r.sequence_number.clone(),
            table: r.table.clone(),
            reason: (*reason).clone(),
            raw: r.raw.get().to_owned(),
        })
        .collect();
    match quarantine.put(entries).await {
        Ok(()) => {
            for (r, reason) in poison {
                tracing::warn!(sequence_number = ?r.sequence_number, table = ?r.table, %reason, "quarantined");
                settled.quarantined.push(Quarantined {
                    sequence_number: r.sequence_number.clone(),
                    table: r.table.clone(),
                    reason: reason.clone(),
                });
            }
        }
        Err(error) => {
            let first = if poison.iter().any(|(r, _)| r.sequence_number.is_none()) {
                String::new()
            } else {
                poison
                    .iter()
                    .filter_map(|(r, _)| r.sequence_number.clone())
                    .min_by(|a, b| cmp_sequence_numbers(a, b))
                    .unwrap_or_default()
            };
            tracing::error!(%error, records = poison.len(), "quarantine failed: the records count as failed");
            settled.failed = lowest(settled.failed.take(), first.clone());
            settled.failures.push(Failure {
                sequence_number: first,
                kind: FailureKind::Quarantine,
                reason: error.to_string(),
            });
        }
    }
    settled
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quarantine::memory::MemoryQuarantine;

    fn record(position: usize, seq: &str, group: Option<usize>) -> Handled {
        Handled {
            position,
            sequence_number: Some(seq.to_owned()),
            table: Some("t".to_owned()),
            group,
            raw: RawValue::from_string(format!("{{\"n\":{position}}}")).expect("json"),
            poison: None,
            unfinished: None,
        }
    }

    fn block<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    #[test]
    fn a_group_stops_at_its_first_unfinished_record() {
        let mut records = vec![
            record(0, "100", Some(0)),
            record(1, "200", Some(1)),
            record(2, "300", Some(0)),
            record(3, "400", Some(0)),
            record(4, "500", Some(1)),
        ];
        records[2].unfinished = Some((FailureKind::Transient, "throttled".to_owned()));
        // Poison after the stop in its group waits; poison in the other group
        // but after the batch's failure waits too; before it, it goes.
        records[3].poison = Some("bad".to_owned());
        records[4].poison = Some("bad too".to_owned());
        records[1].poison = Some("early".to_owned());
        let quarantine = MemoryQuarantine::new();
        let settled = block(settle(&quarantine, "c", records));
        assert_eq!(settled.failed.as_deref(), Some("300"));
        assert_eq!(settled.stopped_groups(), 1);
        let reasons: Vec<String> = quarantine.entries().into_iter().map(|e| e.reason).collect();
        assert_eq!(reasons, ["early"]);
    }

    #[test]
    fn the_lowest_failure_wins_as_a_number() {
        let mut records = vec![record(0, "99", Some(0)), record(1, "100", Some(1))];
        records[0].position = 5;
        records[0].unfinished = Some((FailureKind::Transient, "x".to_owned()));
        records[1].unfinished = Some((FailureKind::Deployment, "y".to_owned()));
        let settled = block(settle(&MemoryQuarantine::new(), "c", records));
        assert_eq!(settled.failed.as_deref(), Some("99"));
        assert_eq!(settled.failures.len(), 2);
    }

    #[test]
    fn a_failed_quarantine_fails_its_records_or_the_whole_batch() {
        let quarantine = MemoryQuarantine::new();
        quarantine.set_failing(true);
        let mut records = vec![record(0, "7", None), record(1, "8", Some(0))];
        records[0].poison = Some("p".to_owned());
        records[1].poison = Some("q".to_owned());
        let settled = block(settle(&quarantine, "c", records));
        assert_eq!(settled.failed.as_deref(), Some("7"));
        assert!(settled.quarantined.is_empty());

        let mut nameless = record(0, "", None);
        nameless.sequence_number = None;
        nameless.poison = Some("unreadable".to_owned());
        let settled = block(settle(&quarantine, "c", vec![nameless]));
        assert_eq!(settled.failed.as_deref(), Some(""), "the whole batch fails");
    }

    #[test]
    fn sequence_numbers_compare_as_numbers() {
        assert_eq!(cmp_sequence_numbers("99", "100"), Ordering::Less);
        assert_eq!(cmp_sequence_numbers("0100", "100"), Ordering::Equal);
        assert_eq!(cmp_sequence_numbers("", "0"), Ordering::Equal);
        assert_eq!(cmp_sequence_numbers("", "1"), Ordering::Less);
        assert_eq!(
            cmp_sequence_numbers("123456789012345678901", "99999999999999999999"),
            Ordering::Greater
        );
        assert_eq!(lowest(Some("100".into()), "99".into()), Some("99".into()));
        assert_eq!(lowest(Some("99".into()), "100".into()), Some("99".into()));
    }
}
