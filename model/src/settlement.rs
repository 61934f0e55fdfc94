//! The settlement of a batch: once a consumer has done what it could with
//! each record, which records failed, which are to be quarantined, and what
//! Lambda is told ([`BatchResponse`]). Both stream consumers (the indexer
//! and the event router) settle through here, so they fail and quarantine
//! alike; the AWS kit (`aws_kit::settle`) makes the one quarantine call.
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
//!    that fails, the whole batch fails ([`Failed::WholeBatch`]).

use std::cmp::Ordering;
use std::hash::BuildHasher;

use hashbrown::HashTable;

use crate::record::{RawJson, SharedText};
use serde::{Deserialize, Serialize};

use crate::config::TableConfig;
use crate::fault::Fault;
use crate::poison::Poison;
use crate::value::{Attr, Attrs, Scalar};
use crate::{sequence, ChangeRecord};

/// Where Lambda must resume a batch that did not fully succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failed {
    /// From this record on (the lowest failed sequence number).
    From(String),
    /// The whole batch (a record without a usable sequence number failed).
    WholeBatch,
}

impl Failed {
    /// The sequence number to resume from (`None`: the whole batch).
    pub fn sequence_number(&self) -> Option<&str> {
        match self {
            Failed::From(seq) => Some(seq),
            Failed::WholeBatch => None,
        }
    }

    /// The lower of two failures (the whole batch is lowest).
    fn min(self, other: Failed) -> Failed {
        match (self, other) {
            (Failed::From(a), Failed::From(b)) => match sequence::cmp(&a, &b) {
                Ordering::Greater => Failed::From(b),
                _ => Failed::From(a),
            },
            _ => Failed::WholeBatch,
        }
    }
}

fn lowest(current: Option<Failed>, new: Failed) -> Option<Failed> {
    Some(match current {
        Some(c) => c.min(new),
        None => new,
    })
}

/// Whether a failure stopped records of a group, or the quarantine call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// A group (or lone record) stopped at an unfinished record.
    Work,
    /// The quarantine could not take the poison records.
    Quarantine,
}

/// One failure: a stopped group, or a failed quarantine call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The first record it fails.
    pub failed: Failed,
    pub stage: Stage,
    pub fault: Fault,
}

/// One quarantined record.
#[derive(Debug, Clone, PartialEq)]
pub struct Quarantined {
    pub sequence_number: Option<String>,
    pub table: Option<String>,
    /// Why it can never succeed.
    pub reason: Poison,
}

/// One record of a batch as the consumer left it.
#[derive(Debug)]
pub struct Handled<'a> {
    /// Its place in the batch.
    pub position: usize,
    /// `None` when the record had none that could be read.
    pub sequence_number: Option<String>,
    /// Its source table, when known (shared with the record's, see
    /// [`table_name`]).
    pub table: Option<SharedText>,
    /// Its partition-key group ([`Groups`]); `None`: the record stands alone.
    pub group: Option<usize>,
    /// The record exactly as delivered, for the quarantine.
    pub raw: RawJson<'a>,
    /// Why it can never succeed, when it cannot (it is then quarantined
    /// once the rest of its work is done).
    pub poison: Option<Poison>,
    /// Why its work is not all done, when it is not.
    pub unfinished: Option<Fault>,
}

/// What the settlement decided before the quarantine call.
#[derive(Debug)]
#[must_use]
pub struct Decision<'a> {
    /// The records, in batch order.
    pub records: Vec<Handled<'a>>,
    /// Positions (in `records`) of the poison to quarantine now, in order.
    pub quarantine: Vec<usize>,
    pub settled: Settled,
}

impl Decision<'_> {
    /// The quarantine took the poison: it counts as handled.
    pub fn quarantined(mut self) -> Settled {
        for &i in &self.quarantine {
            if let Some(r) = self.records.get_mut(i) {
                if let Some(reason) = r.poison.take() {
                    self.settled.quarantined.push(Quarantined {
                        sequence_number: r.sequence_number.clone(),
                        table: r.table.as_deref().map(str::to_owned),
                        reason,
                    });
                }
            }
        }
        self.settled
    }

    /// The quarantine failed: its records count as failed (retried).
    pub fn quarantine_failed(mut self, fault: Fault) -> Settled {
        let poison: Vec<&Handled<'_>> = self.quarantine.iter().filter_map(|&i| self.records.get(i)).collect();
        let first = if poison.iter().any(|r| r.sequence_number.is_none()) {
            Failed::WholeBatch
        } else {
            poison
                .iter()
                .filter_map(|r| r.sequence_number.clone())
                .min_by(|a, b| sequence::cmp(a, b))
                .map_or(Failed::WholeBatch, Failed::From)
        };
        self.settled.failed = lowest(self.settled.failed.take(), first.clone());
        self.settled.failures.push(Failure {
            failed: first,
            stage: Stage::Quarantine,
            fault,
        });
        self.settled
    }
}

/// The settlement of a batch.
#[derive(Debug, Clone, PartialEq, Default)]
#[must_use]
pub struct Settled {
    /// Where Lambda resumes; `None` when every record was handled.
    pub failed: Option<Failed>,
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
        self.failures.iter().filter(|f| f.stage == Stage::Work).count()
    }

    /// The answer to Lambda.
    pub fn response(&self) -> BatchResponse {
        BatchResponse::new(self.failed.as_ref())
    }
}

/// Settles a batch (`records` in any order) up to the quarantine call: see
/// the module doc. The caller quarantines `Decision::quarantine` (if any)
/// and then calls [`Decision::quarantined`] or [`Decision::quarantine_failed`].
pub fn decide(mut records: Vec<Handled<'_>>) -> Decision<'_> {
    records.sort_by_key(|r| r.position);
    let mut settled = Settled::default();

    // Where each group stops: its first unfinished record.
    let mut stopped_groups: std::collections::HashSet<usize> = std::collections::HashSet::new();
    let mut stopped = vec![false; records.len()];
    for (i, record) in records.iter().enumerate() {
        if record.group.is_some_and(|g| stopped_groups.contains(&g)) {
            stopped[i] = true;
            continue;
        }
        if let Some(fault) = &record.unfinished {
            stopped[i] = true;
            if let Some(g) = record.group {
                stopped_groups.insert(g);
            }
            let failed = record.sequence_number.clone().map_or(Failed::WholeBatch, Failed::From);
            settled.failed = lowest(settled.failed.take(), failed.clone());
            settled.failures.push(Failure {
                failed,
                stage: Stage::Work,
                fault: fault.clone(),
            });
        }
    }

    // Poison not stopped and before the failure is quarantined now.
    let before_failure = |r: &Handled<'_>| match (&r.sequence_number, &settled.failed) {
        (None, _) | (Some(_), None) => true,
        (Some(seq), Some(Failed::From(failed))) => sequence::cmp(seq, failed) == Ordering::Less,
        (Some(_), Some(Failed::WholeBatch)) => false,
    };
    let quarantine: Vec<usize> = records
        .iter()
        .enumerate()
        .filter(|&(i, r)| !stopped[i] && r.poison.is_some() && before_failure(r))
        .map(|(i, _)| i)
        .collect();
    settled.quarantine_requests = usize::from(!quarantine.is_empty());
    Decision {
        records,
        quarantine,
        settled,
    }
}

/// The name of `table`, the source table of `record`: the record's own
/// (shared by every record of its batch, no copy) when it names one.
pub fn table_name<I>(record: &ChangeRecord<I>, table: &TableConfig) -> SharedText {
    match &record.table {
        Some(name) if **name == *table.name => name.clone(),
        _ => SharedText::kept(&table.name),
    }
}

/// Numbers the partition-key groups of a batch in order of appearance.
///
/// Each group's key (`table \0 typed partition key text`) is written once
/// into one buffer, after the keys before it; the hash table holds only
/// the group numbers. A record of a known group costs no allocation, and a
/// new group none of its own.
#[derive(Debug, Default)]
pub struct Groups {
    /// Every group's key, one after the other, then (while a record is
    /// looked up) the key being looked up.
    keys: String,
    /// Per group number: where its key ends in `keys` (it starts where the
    /// one before it ends).
    ends: Vec<usize>,
    /// Group numbers, by the hash of their key.
    numbers: HashTable<usize>,
    hasher: foldhash::fast::FixedState,
}

impl Groups {
    /// Room for the groups of `records` records (a group has one record at
    /// least), so that numbering a batch of that size never grows the
    /// table: growing it from empty, batch after batch, would rehash every
    /// key.
    pub fn with_capacity(records: usize) -> Groups {
        /// A guess at a group's key: a table name and an id.
        const KEY_GUESS: usize = 48;
        Groups {
            keys: String::with_capacity(records.saturating_mul(KEY_GUESS)),
            ends: Vec::with_capacity(records),
            numbers: HashTable::with_capacity(records),
            hasher: foldhash::fast::FixedState::default(),
        }
    }

    /// The group of a record of `table`: its table and partition key value
    /// (from its keys, else its images; `None` when it has none).
    pub fn of<I: Attrs>(&mut self, table: &TableConfig, record: &ChangeRecord<I>) -> usize {
        use std::fmt::Write;
        let pk = &table.partition_key;
        let value = record
            .keys
            .get(pk)
            .or_else(|| record.new.as_ref().and_then(|i| i.get(pk)))
            .or_else(|| record.old.as_ref().and_then(|i| i.get(pk)));
        let from = self.keys.len();
        let key = &mut self.keys;
        key.push_str(&table.name);
        key.push('\0');
        match value.map(Attr::scalar) {
            None => {}
            Some(Scalar::S(s)) => {
                key.push_str("S:");
                key.push_str(s);
            }
            Some(Scalar::N(n)) => {
                key.push_str("N:");
                match crate::sortkey::canonical_number(n) {
                    Ok(canonical) => key.push_str(&canonical),
                    Err(_) => key.push_str(n),
                }
            }
            Some(_) => {
                if let Some(other) = value {
                    let _ = write!(key, "{:?}", other.to_value());
                }
            }
        }
        let (keys, ends) = (&self.keys, &self.ends);
        let looked_up = keys.get(from..).unwrap_or_default();
        let hash = self.hasher.hash_one(looked_up);
        if let Some(&number) = self.numbers.find(hash, |&n| key_of(keys, ends, n) == looked_up) {
            self.keys.truncate(from);
            return number;
        }
        let number = self.ends.len();
        self.ends.push(self.keys.len());
        let (keys, ends, hasher) = (&self.keys, &self.ends, &self.hasher);
        self.numbers
            .insert_unique(hash, number, |&n| hasher.hash_one(key_of(keys, ends, n)));
        number
    }

    /// Groups numbered so far.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

/// The key of group `number`.
fn key_of<'k>(keys: &'k str, ends: &[usize], number: usize) -> &'k str {
    let start = number.checked_sub(1).and_then(|n| ends.get(n)).copied().unwrap_or(0);
    let end = ends.get(number).copied().unwrap_or(start);
    keys.get(start..end).unwrap_or_default()
}

/// The answer to Lambda for `ReportBatchItemFailures`:
/// `{"batchItemFailures": [{"itemIdentifier": "SEQ"}]}`, or an empty list
/// when every record was handled. Lambda checkpoints at the one listed
/// sequence number and retries from it; an empty identifier (the wire form
/// of [`Failed::WholeBatch`]) fails the whole batch.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[must_use]
pub struct BatchResponse {
    #[serde(rename = "batchItemFailures")]
    pub batch_item_failures: Vec<ItemFailure>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemFailure {
    #[serde(rename = "itemIdentifier")]
    pub item_identifier: String,
}

impl BatchResponse {
    pub fn new(failed: Option<&Failed>) -> BatchResponse {
        BatchResponse {
            batch_item_failures: failed
                .map(|f| ItemFailure {
                    item_identifier: f.sequence_number().unwrap_or_default().to_owned(),
                })
                .into_iter()
                .collect(),
        }
    }

    /// The response as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| r#"{"batchItemFailures":[]}"#.to_owned())
    }
}

#[cfg(test)]
mod tests;
