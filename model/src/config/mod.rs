//! The pipeline config: tables, edge sets, multikey indexes, event routes and
//! alarm thresholds. One TOML file, loaded into these typed structs and
//! validated as a whole (see [`load`] and [`parse`]).
//!
//! The syntax is documented, key by key, in the annotated example
//! [`EXAMPLE_CONFIG`] (`streamdex.example.toml` at the workspace root).
//! A refused config yields [`ConfigError::Invalid`] with every problem found,
//! each as `FILE:LINE:COLUMN: KEY: REASON`.

mod error;
mod load;
mod raw;
mod template;
#[cfg(test)]
mod tests;

pub use crate::source::{ChangeSource, KinesisSource, Precision};
pub use error::{ConfigError, Problem};
pub use load::{defaults, limits, load, parse};
pub use template::TemplateSyntaxError;

use crate::sortkey::Column;

/// The annotated example config (`streamdex.example.toml`): three typical
/// uses, every key explained. It parses and validates.
pub const EXAMPLE_CONFIG: &str = include_str!("../../../streamdex.example.toml");

/// The whole, validated pipeline config.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub tables: Vec<TableConfig>,
    pub edge_sets: Vec<EdgeSetConfig>,
    pub indexes: Vec<IndexConfig>,
    pub events: EventsConfig,
    pub routes: Vec<RouteConfig>,
    pub alarms: AlarmConfig,
    pub pipeline: PipelineConfig,
}

/// Why a record's table could not be found (see [`Config::table_of_record`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableLookupError {
    /// The record names a table (its `eventSourceARN`) the config does not declare.
    Undeclared(String),
    /// The record names no table and its key attributes (listed, sorted) fit
    /// no declared table, or more than one.
    NoMatch(String),
}

impl Config {
    /// The declared table with this name.
    pub fn table(&self, name: &str) -> Option<&TableConfig> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// The declared table a record comes from: its `eventSourceARN`'s table,
    /// or else the one declared table whose key attributes are the record's.
    pub fn table_of_record<I: crate::value::Attrs>(
        &self,
        record: &crate::record::ChangeRecord<I>,
    ) -> Result<&TableConfig, TableLookupError> {
        if let Some(name) = &record.table {
            return self
                .table(name)
                .ok_or_else(|| TableLookupError::Undeclared(name.to_string()));
        }
        let fits = |t: &TableConfig| {
            record.keys.len() == 1 + usize::from(t.sort_key.is_some())
                && record.keys.contains_key(&t.partition_key)
                && t.sort_key.as_ref().is_none_or(|sk| record.keys.contains_key(sk))
        };
        let mut found = self.tables.iter().filter(|t| fits(t));
        match (found.next(), found.next()) {
            (Some(table), None) => Ok(table),
            _ => {
                let mut keys: Vec<&str> = record.keys.iter().map(|(name, _)| name).collect();
                keys.sort_unstable();
                Err(TableLookupError::NoMatch(keys.join(", ")))
            }
        }
    }

    /// Whether a table is read from a Kinesis data stream.
    pub fn reads_kinesis(&self) -> bool {
        self.tables.iter().any(|t| t.stream.is_unordered())
    }

    /// Whether the reaper reaps the nodes of table `table` (a route of it
    /// has `reap`).
    pub fn reaps(&self, table: &str) -> bool {
        self.routes.iter().any(|r| r.reap && r.table == table)
    }

    /// The edge set of this table, if it has one (a table has at most one).
    pub fn edge_set(&self, table: &str) -> Option<&EdgeSetConfig> {
        self.edge_sets.iter().find(|e| e.table == table)
    }

    /// The index with this name.
    pub fn index(&self, name: &str) -> Option<&IndexConfig> {
        self.indexes.iter().find(|i| i.name == name)
    }
}

/// A source table (`[table.NAME]`).
#[derive(Debug, Clone, PartialEq)]
pub struct TableConfig {
    pub name: String,
    pub partition_key: String,
    pub sort_key: Option<String>,
    /// The TTL attribute, when the table expires items.
    pub ttl_attribute: Option<String>,
    /// Where the table's changes are read from (`stream = ...`).
    pub stream: ChangeSource,
}

impl TableConfig {
    /// The primary key attribute names: the partition key, then the sort key if any.
    pub fn primary_key(&self) -> Vec<&str> {
        let mut keys = vec![self.partition_key.as_str()];
        keys.extend(self.sort_key.as_deref());
        keys
    }
}

/// An edge set (`[[edge_set]]`): a String Set on each node item of `table`
/// that replicates the members of the node's edges.
///
/// In the table, a node is an item whose sort key equals its partition key;
/// an edge is any other item of the node's partition, and its *edge type* is
/// its sort key up to the first `-` (`GOALMEMBERSHIP-USER-42` → `GOALMEMBERSHIP`).
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeSetConfig {
    pub table: String,
    /// The String Set attribute on the node item. Owned by the pipeline.
    pub attribute: String,
    /// Edge types that are replicated; edges of other types are skipped.
    pub include: Vec<String>,
    /// Attributes of the edge item whose values (S or N) make up the member,
    /// joined reversibly (see [`crate::edge`]).
    pub member: Vec<String>,
    /// Past this many members the node is flagged instead of growing.
    pub max_members: usize,
    /// A BOOL the pipeline keeps on every node it maintains: `true` when the
    /// set is complete, `false` when the node was flagged past `max_members`.
    /// Every set update writes it with `if_not_exists`, so its absence in a
    /// node's new image (with the set gone too) means a PutItem wiped the set.
    pub complete_attribute: String,
    /// The table's GSI keyed by target: its partition key is the table's
    /// sort key and its sort key the table's partition key, so the edges
    /// pointing at node `N` with type `T` are the GSI partition `T-N`. The
    /// TTL reaper Queries it; the template and `streamdex up` create it.
    /// Default `byTarget`.
    pub target_index: String,
}

/// A custom multikey index (`[[index]]`): rows in `table` derived from items
/// of `source.table`.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexConfig {
    pub name: String,
    pub source: SourceConfig,
    /// The index table's name.
    pub table: String,
    /// The index table's partition key attribute (a String). Default `pk`.
    pub partition_key: String,
    /// The index table's sort key attribute (a String, CSS1). Default `sk`.
    pub sort_key: String,
    /// One row per entry of this attribute (map: key/value; list: position/element;
    /// set: member/member), or one row per item when absent.
    pub for_each: Option<String>,
    /// The partition key value, rendered from literals and value references.
    pub partition: Template,
    /// The sort columns; the source item's primary key is appended after them.
    pub sort: Vec<SortColumn>,
    /// Item attributes copied onto the row (the source key attributes always are).
    pub project: Vec<String>,
    /// How many partitions each rendered partition value is spread over
    /// (1..=256, default 1). With more than one, a row's partition key is the
    /// rendered value followed by `#` and its shard (see
    /// [`crate::index::shard`]), chosen by a stable hash of the source item's
    /// key; one value's rows then take N partitions' write capacity, and a
    /// Query reads the N partitions and merges them ([`crate::query`]).
    pub shards: u32,
}

/// Which items of a table feed an index.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceConfig {
    pub table: String,
    /// Only items whose partition key value starts with this.
    pub key_prefix: Option<String>,
}

/// A reference to a value of an item, or of the current `for_each` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueRef {
    /// A top-level attribute of the item (`num`, `{num}`).
    Attribute(String),
    /// The entry's key (`{entry.key}`): a map key (S), a list position (N), a set member.
    EntryKey,
    /// The entry's value (`{entry.value}`): a map value, a list element, a set member.
    EntryValue,
}

/// A partition template such as `field#{entry.key}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub parts: Vec<TemplatePart>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplatePart {
    Literal(String),
    Ref(ValueRef),
}

/// One sort column: where its value comes from and how it is encoded.
#[derive(Debug, Clone, PartialEq)]
pub struct SortColumn {
    pub value: ValueRef,
    pub column: Column,
}

/// Where events go (`[events]`).
#[derive(Debug, Clone, PartialEq)]
pub struct EventsConfig {
    /// The EventBridge `Source` of every entry. Default `streamdex`.
    pub source: String,
    /// The event bus name. Default `streamdex`.
    pub bus: String,
    /// The PutEvents size budget per call, in bytes. Default 256 KiB.
    pub max_request_bytes: usize,
    /// The DynamoDB table where the router notes the changes it published
    /// from a Kinesis data stream (which repeats records), so that a
    /// repeat publishes nothing, and the reaper finds when an item last
    /// changed. Default `streamdex-ledger`; only used when a table is read
    /// from Kinesis.
    pub ledger_table: String,
}

/// Which stream events a route takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteEvent {
    Insert,
    Modify,
    /// A REMOVE not done by the TTL service.
    Remove,
    /// A REMOVE done by the TTL service.
    Expire,
}

impl RouteEvent {
    /// The name used in the config: `INSERT`, `MODIFY`, `REMOVE`, `EXPIRE`.
    pub fn as_str(self) -> &'static str {
        match self {
            RouteEvent::Insert => "INSERT",
            RouteEvent::Modify => "MODIFY",
            RouteEvent::Remove => "REMOVE",
            RouteEvent::Expire => "EXPIRE",
        }
    }
}

impl std::fmt::Display for RouteEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which items of a table with an edge set a route takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RouteItems {
    #[default]
    All,
    Nodes,
    Edges,
}

impl RouteItems {
    /// The name used in the config: `all`, `nodes`, `edges`.
    pub fn as_str(self) -> &'static str {
        match self {
            RouteItems::All => "all",
            RouteItems::Nodes => "nodes",
            RouteItems::Edges => "edges",
        }
    }
}

/// An event route (`[[route]]`): matching records become one event each.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteConfig {
    pub table: String,
    pub detail_type: String,
    pub events: Vec<RouteEvent>,
    /// Only items whose partition key value starts with this.
    pub key_prefix: Option<String>,
    pub items: RouteItems,
    /// The route's events go to the TTL reaper, which deletes the removed
    /// node's edges (in and out). Needs `items = "nodes"` and only
    /// `EXPIRE` / `REMOVE` events.
    pub reap: bool,
}

/// The `[pipeline]` settings: how long out-of-order protection lasts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineConfig {
    /// How long a deleted index row's tombstone (its version, kept so that
    /// an older record cannot bring the row back) lives before the index
    /// table's TTL removes it: the stream's 24 h plus the window in which
    /// quarantined or failed records may be redriven. Default 48.
    pub tombstone_ttl_hours: u32,
}

impl PipelineConfig {
    /// The tombstone lifetime in seconds.
    pub fn tombstone_ttl_seconds(&self) -> u64 {
        u64::from(self.tombstone_ttl_hours) * 3600
    }
}

/// Alarm thresholds (`[alarms]`), in seconds of iterator age.
#[derive(Debug, Clone, PartialEq)]
pub struct AlarmConfig {
    /// Warn when the oldest unprocessed record is this old. Default 300 (5 min).
    pub iterator_age_warn_seconds: u64,
    /// Page when it is this old, well before the 24 h retention. Default 3,600 (1 h).
    pub iterator_age_page_seconds: u64,
}
