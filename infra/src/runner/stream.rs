//! The stream port: what the runner (and `lag`, `record`) read of a
//! table's DynamoDB stream. [`dynamo::DynamoStreams`] reads it with the AWS
//! SDK (DescribeTable, DescribeStream, GetShardIterator, GetRecords);
//! [`memory::MemoryStreams`] is a stream in memory with any shard lineage,
//! for tests (moto has one shard and no lineage).

pub mod dynamo;
pub mod kinesis;
pub mod memory;

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashSet, VecDeque};
use std::hash::{Hash, Hasher};

use futures::future::BoxFuture;

/// One shard of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardInfo {
    pub id: String,
    /// The shard it split from, if any: its records come first.
    pub parent: Option<String>,
    /// Whether it is closed (has an ending sequence number): no new records.
    pub closed: bool,
}

/// One record, as Lambda delivers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamRecord {
    pub sequence_number: String,
    /// `ApproximateCreationDateTime` in epoch milliseconds.
    pub created_ms: Option<u64>,
    /// The record's JSON in the Lambda shape (with `eventSourceARN`; numbers
    /// as the stream sent them).
    pub json: String,
}

/// How many of the records read last a [`RecentReads`] remembers.
pub const REMEMBERED_READS: usize = 1_000;

/// The records of one shard read last (sequence number and a hash of the
/// record), to know one that a read hands out again. DynamoDB Streams never
/// does; moto does: it numbers a record by its shard's length when it is
/// written, so two writes at once can share a number, and
/// `AFTER_SEQUENCE_NUMBER` that number then hands out the second of them on
/// every read (its next iterator is after the page's highest number).
#[derive(Debug, Default)]
pub struct RecentReads {
    order: VecDeque<(String, u64)>,
    known: HashSet<(String, u64)>,
}

impl RecentReads {
    /// Remembers `record`; false if it was among the last
    /// [`REMEMBERED_READS`] read (a repeat, to skip).
    pub fn first_read(&mut self, record: &StreamRecord) -> bool {
        let mut hasher = DefaultHasher::new();
        record.json.hash(&mut hasher);
        let id = (record.sequence_number.clone(), hasher.finish());
        if !self.known.insert(id.clone()) {
            return false;
        }
        self.order.push_back(id);
        if self.order.len() > REMEMBERED_READS {
            if let Some(oldest) = self.order.pop_front() {
                self.known.remove(&oldest);
            }
        }
        true
    }
}

/// Where to start reading a shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Position {
    /// The oldest record still in the shard.
    TrimHorizon,
    /// Only records written from now on.
    Latest,
    /// The records after this sequence number.
    After(String),
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Position::TrimHorizon => f.write_str("TRIM_HORIZON"),
            Position::Latest => f.write_str("LATEST"),
            Position::After(seq) => write!(f, "after {seq}"),
        }
    }
}

/// What one GetRecords gave.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Page {
    pub records: Vec<StreamRecord>,
    /// The iterator for the next read; `None` once a closed shard is read to its end.
    pub next: Option<String>,
}

/// A failed stream call, naming the table, stream or shard.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    #[error("table `{table}`: {reason}")]
    Table { table: String, reason: String },
    #[error("table `{table}` does not exist; `streamdex up CONFIG` creates it")]
    NoTable { table: String },
    #[error("table `{table}` has no stream; `streamdex up CONFIG` enables it (NEW_AND_OLD_IMAGES)")]
    NoStream { table: String },
    #[error("DescribeStream {stream}: {reason}")]
    Describe { stream: String, reason: String },
    #[error("GetShardIterator for shard {shard} ({position}): {reason}")]
    Iterator {
        shard: String,
        position: String,
        reason: String,
    },
    /// The iterator expired or is not valid (moto answers HTTP 500): get a new one.
    #[error(
        "GetRecords on shard {shard}: the iterator is no longer valid ({reason}); reading again from the last position"
    )]
    IteratorExpired { shard: String, reason: String },
    /// Records after the position were trimmed (older than 24 h).
    #[error("GetRecords on shard {shard}: records after the position were trimmed ({reason})")]
    Trimmed { shard: String, reason: String },
    #[error("GetRecords on shard {shard}: {reason}")]
    Read { shard: String, reason: String },
    #[error("record of shard {shard}: {reason}")]
    Record {
        shard: String,
        #[source]
        reason: dynamo::StreamRecordError,
    },
}

impl StreamError {
    /// A table or stream the config names is not there: nothing but
    /// `streamdex up` (or a fixed config) helps, so waiting is pointless.
    pub fn is_missing_resource(&self) -> bool {
        matches!(self, StreamError::NoTable { .. } | StreamError::NoStream { .. })
    }
}

/// Reads streams.
pub trait StreamSource: Send + Sync {
    /// The ARN of the table's current stream.
    fn stream_arn<'a>(&'a self, table: &'a str) -> BoxFuture<'a, Result<String, StreamError>>;

    /// Every shard of the stream (all pages of DescribeStream).
    fn shards<'a>(&'a self, stream: &'a str) -> BoxFuture<'a, Result<Vec<ShardInfo>, StreamError>>;

    /// An iterator for a shard at a position.
    fn iterator<'a>(
        &'a self,
        stream: &'a str,
        shard: &'a str,
        position: &'a Position,
    ) -> BoxFuture<'a, Result<String, StreamError>>;

    /// At most `limit` records from an iterator of `shard` of `stream`.
    fn records<'a>(
        &'a self,
        stream: &'a str,
        shard: &'a str,
        iterator: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Page, StreamError>>;
}
