//! The quarantine: where a record that can never succeed goes, with the raw
//! record and the reason, so that it never blocks its shard and is never lost.

pub mod body;
pub mod claim;
pub mod memory;
pub mod sqs;

use std::future::Future;

use model::fault::Fault;
use serde::{Deserialize, Serialize};

/// One quarantined record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuarantineEntry {
    /// Which consumer quarantined it (`stream-indexer`, `event-router`).
    pub consumer: String,
    /// The record's sequence number, when it had one.
    pub sequence_number: Option<String>,
    /// The source table, when known.
    pub table: Option<String>,
    /// Why it can never succeed (`model::poison::Poison`'s text).
    pub reason: String,
    /// The kind of its first cause (`unreadable`, `unroutable`, `invalid`,
    /// `unplannable`, `oversized`, `refused`: `model::poison::Cause::kind`),
    /// when the entry was written with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// The record exactly as delivered (JSON text).
    pub raw: String,
}

impl QuarantineEntry {
    /// How log lines and errors name the entry's record: by sequence number.
    pub fn describe(&self) -> String {
        match &self.sequence_number {
            Some(seq) => format!("record {seq}"),
            None => "record without sequence number".to_owned(),
        }
    }
}

/// A durable place for poison records.
pub trait Quarantine: Send + Sync {
    /// Keeps every entry, or fails (the records then count as failed and
    /// are retried, never dropped).
    fn put(&self, entries: Vec<QuarantineEntry>) -> impl Future<Output = Result<(), Fault>> + Send;
}

impl<Q: Quarantine> Quarantine for std::sync::Arc<Q> {
    fn put(&self, entries: Vec<QuarantineEntry>) -> impl Future<Output = Result<(), Fault>> + Send {
        Q::put(self, entries)
    }
}
