//! Why a record could not be classified.

use crate::edge::EdgeError;
use crate::record::RecordError;

/// Why a record could not be classified. Every message names the record by
/// its sequence number and never carries item contents.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// The record's `eventSourceARN` names a table the config does not declare.
    #[error("record {sequence_number}: table `{table}` is not declared in the config")]
    UnknownTable { sequence_number: String, table: String },
    /// The record has no table name and its key attributes fit no declared
    /// table (or more than one).
    #[error("record {sequence_number}: cannot tell its table: no table name, and key attributes [{keys}] match no single declared table")]
    NoTable { sequence_number: String, keys: String },
    /// The record names a table other than the one it is classified against.
    #[error("record {sequence_number}: comes from table `{record_table}`, not `{table}`")]
    TableMismatch {
        sequence_number: String,
        record_table: String,
        table: String,
    },
    /// The record's keys lack the table's partition key.
    #[error("record {sequence_number}: partition key `{attribute}` is missing from its keys")]
    KeyMissing { sequence_number: String, attribute: String },
    /// A route takes nodes or edges but the table has no edge set (refused by
    /// config validation; reported rather than assumed).
    #[error("record {sequence_number}: route `{detail_type}` takes {items} but table `{table}` has no edge set")]
    NoEdgeSet {
        sequence_number: String,
        detail_type: String,
        items: &'static str,
        table: String,
    },
    /// A record glanced at did not read whole (see `model::record`'s
    /// `glance`: it always should).
    #[error("record {sequence_number}: {source}")]
    Unreadable {
        sequence_number: String,
        #[source]
        source: RecordError,
    },
    /// Whether the item is a node or an edge could not be decided.
    #[error("record {sequence_number}: {source}")]
    Graph {
        sequence_number: String,
        #[source]
        source: EdgeError,
    },
}

impl EventError {
    /// The sequence number of the record the error is about.
    pub fn sequence_number(&self) -> &str {
        match self {
            EventError::UnknownTable { sequence_number, .. }
            | EventError::NoTable { sequence_number, .. }
            | EventError::TableMismatch { sequence_number, .. }
            | EventError::KeyMissing { sequence_number, .. }
            | EventError::NoEdgeSet { sequence_number, .. }
            | EventError::Unreadable { sequence_number, .. }
            | EventError::Graph { sequence_number, .. } => sequence_number,
        }
    }
}

/// An event over the PutEvents budget even without its images: it can never be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "its `{detail_type}` event is {bytes} bytes even without its images ({full} with them), \
     over the PutEvents budget of {budget} bytes"
)]
pub struct Oversized {
    pub detail_type: String,
    /// Its size without its images, and with them.
    pub bytes: usize,
    pub full: usize,
    pub budget: usize,
}
