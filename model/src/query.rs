//! Querying an index table: typed conditions on the index's sort columns →
//! the partitions to read and the exact sort key condition of each DynamoDB
//! Query ([`plan`]), and the merge of the partitions' pages into one ordered,
//! limited result ([`Merge`]).
//!
//! This is the pure half of `streamdex query`; the command runs the Queries
//! with the AWS SDK (`infra`'s `cli::query`), and application code can do the
//! same with any client:
//!
//! ```
//! use model::config::{parse, EXAMPLE_CONFIG};
//! use model::query::{plan, Conditions, Step};
//! use model::sortkey::{ColumnCondition, KeyCondition, KeyRange, SortValue};
//!
//! let config = parse(EXAMPLE_CONFIG, "example").unwrap();
//! let index = config.index("issue-attrib").unwrap();
//! let source = config.table(&index.source.table).unwrap();
//! // Issues whose field "prio" holds a number above 2.
//! let conditions = Conditions {
//!     equal: vec![],
//!     range: Some(ColumnCondition::Gt(SortValue::N("2".into()))),
//! };
//! let query = plan(index, source, "prio", &conditions).unwrap();
//! assert_eq!(query.partitions, ["prio"]);
//! let KeyRange::Keys { condition: Some(KeyCondition::Between(low, high)), .. } = &query.range else {
//!     panic!("{:?}", query.range)
//! };
//! // One Query per partition: `pk = :p AND sk BETWEEN :low AND :high`, pages
//! // fed to the merge until it says it is done.
//! let mut merge = query.merge::<()>(false, Some(10));
//! assert_eq!(merge.step(), Step::Fetch);
//! assert_eq!(merge.wanted(), [0]);
//! merge.feed(0, vec![], false).unwrap();
//! assert_eq!(merge.step(), Step::Done);
//! ```

use crate::config::{IndexConfig, TableConfig};
use crate::index::{shard, MAX_PARTITION_BYTES};
use crate::sortkey::{key_range, Column, ColumnCondition, ColumnType, Direction, KeyRange, RangeError, SortValue};

mod merge;

pub use merge::{Merge, MergeError, Step};

/// Conditions on an index's sort columns, in column order: equality on the
/// first `equal.len()` columns (NULL selects nulls), then at most one range
/// or prefix condition on the next column (in value order; it never matches
/// NULL; see [`crate::sortkey::key_range`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Conditions {
    pub equal: Vec<SortValue>,
    pub range: Option<ColumnCondition>,
}

/// What to read for one query of one index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexQuery {
    /// The partition key values to Query, one per shard, in shard order.
    pub partitions: Vec<String>,
    /// The sort key condition of every one of those Queries (the same for all).
    pub range: KeyRange,
    /// The whole sort key's columns: the index's sort columns, then the
    /// source item's key (ANY, ascending), to decode the rows' sort keys.
    pub key_columns: Vec<Column>,
}

/// Why a query could not be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// The partition value is empty.
    #[error("the partition value is empty")]
    EmptyPartition,
    /// The partition value (with its shard suffix) is longer than DynamoDB allows.
    #[error("the partition key `{partition}…` is {bytes} bytes, over DynamoDB's {MAX_PARTITION_BYTES}-byte limit")]
    PartitionTooLong { partition: String, bytes: usize },
    /// The conditions do not fit the index's sort columns.
    #[error("{0}")]
    Condition(#[from] RangeError),
}

/// The partitions and the sort key condition that select, from `index`
/// (whose items come from the table `source`), the rows of the rendered
/// partition value `partition` that satisfy `conditions`.
pub fn plan(
    index: &IndexConfig,
    source: &TableConfig,
    partition: &str,
    conditions: &Conditions,
) -> Result<IndexQuery, QueryError> {
    if partition.is_empty() {
        return Err(QueryError::EmptyPartition);
    }
    let partitions = shard::partitions(partition, index.shards);
    if let Some(long) = partitions.iter().find(|p| p.len() > MAX_PARTITION_BYTES) {
        return Err(QueryError::PartitionTooLong {
            partition: long.chars().take(40).collect(),
            bytes: long.len(),
        });
    }
    let columns: Vec<Column> = index.sort.iter().map(|c| c.column).collect();
    let tail = source_key_columns(source);
    let range = key_range(&columns, &tail, &conditions.equal, conditions.range.as_ref())?;
    let mut key_columns = columns;
    key_columns.extend(tail);
    Ok(IndexQuery {
        partitions,
        range,
        key_columns,
    })
}

/// The columns an index row's sort key ends with: the source item's
/// primary key, each element S, N or B ascending (decoded as ANY).
pub fn source_key_columns(source: &TableConfig) -> Vec<Column> {
    source
        .primary_key()
        .iter()
        .map(|_| Column::new(ColumnType::Any, Direction::Asc))
        .collect()
}

impl IndexQuery {
    /// A merge of this query's partitions, in sort key order (`desc`:
    /// descending, as `ScanIndexForward = false` returns them), ending after
    /// `limit` rows. It drops the key the range excludes.
    pub fn merge<T>(&self, desc: bool, limit: Option<usize>) -> Merge<T> {
        let runs = if self.range == KeyRange::Empty {
            0
        } else {
            self.partitions.len()
        };
        Merge::new(runs, desc, limit, self.range.exclude().map(str::to_owned))
    }
}

#[cfg(test)]
mod tests;
