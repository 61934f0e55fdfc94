//! The deployment, described: every resource streamdex needs for a config,
//! with its name and shape, derived from the [`Config`] alone and without
//! I/O. `streamdex up` ([`up`]) creates it on an endpoint and the template
//! ([`crate::template`]) renders it for CloudFormation, both from this one
//! description, so the two cannot drift.
//!
//! What a config gives ([`Stack::new`]):
//!
//! - **source tables** ([`SourceTable`]): their keys (Strings), a stream
//!   with `NEW_AND_OLD_IMAGES`, TTL on `ttl_attribute`, point-in-time
//!   recovery, and on a table with an edge set the GSI keyed by target
//!   (`target_index`: partition key = the table's sort key, sort key = its
//!   partition key, projecting the edge set's member attributes);
//! - **index tables** ([`IndexTable`]): `partition_key`/`sort_key`, Strings;
//! - **the event bus** ([`Bus`]), unless it is EventBridge's `default` bus;
//! - **queues** ([`Queue`]): the quarantine, one on-failure destination per
//!   consumer, the reaper rule target's dead-letter queue, and, for the local
//!   stack only, one queue per rule standing in for its target;
//! - **rules** ([`Rule`]): one per route, named by [`model::event::rule_name`]
//!   with the pattern of [`model::event::pattern`]; the reaper is the target
//!   of each route with `reap = true`;
//! - **functions** ([`Function`]) and **event source mappings**
//!   ([`Mapping`]): one per consumer per table (never more than two per
//!   stream), with the filter patterns of [`model::filter::patterns`]. These
//!   exist on AWS only: `up` never creates mappings.
//!
//! Names of what the config does not name (queues, functions) start with
//! the deployment's [`namespace`], the event bus name, so two deployments
//! (say, two tests on one server) on different buses never share a queue.

mod from_config;
mod names;
mod provision;

use model::config::{Config, RouteConfig, TableConfig};
use model::filter::{self, Consumer, Pattern};

pub use names::{
    function_name, kinesis_stream_name, namespace, quarantine_bucket_name, quarantine_queue_name,
    reaper_dead_letter_queue_name, rule_queue_name,
};
pub use provision::{bucket_exists, down, queue_url, sdk_config, up, Action, Change, DownReport, StackError, UpReport};

/// SQS's limit on queue names (characters of `[A-Za-z0-9_-]`).
pub const QUEUE_NAME_CHARS: usize = 80;
/// S3's limit on a bucket name.
pub const BUCKET_NAME_CHARS: usize = 63;
/// Lambda's limit on function names (characters of `[A-Za-z0-9_-]`).
pub const FUNCTION_NAME_CHARS: usize = 64;
/// EventBridge's own bus, which exists everywhere and is never created or deleted.
pub const DEFAULT_BUS: &str = "default";
/// How long queued messages (quarantined records, failure notices, events) are kept: 14 days, SQS's maximum.
pub const QUEUE_RETENTION_SECONDS: u32 = 14 * 24 * 60 * 60;
/// The stream view both consumers need (the planner diffs old and new images).
pub const STREAM_VIEW_TYPE: &str = "NEW_AND_OLD_IMAGES";
/// The id of a rule's target (its queue locally, the reaper on AWS).
pub const RULE_TARGET_ID: &str = "streamdex-target";

/// The whole deployment of one config.
#[derive(Debug, Clone, PartialEq)]
pub struct Stack {
    /// The prefix of every name the config does not give ([`namespace`]).
    pub namespace: String,
    pub bus: Bus,
    pub source_tables: Vec<SourceTable>,
    pub index_tables: Vec<IndexTable>,
    pub queues: Vec<Queue>,
    /// The quarantine's claim-check bucket (records too large for a
    /// message), as `up` names it locally ([`quarantine_bucket_name`]); on
    /// AWS the template lets CloudFormation name it, bucket names being global.
    /// It is every mapping's on-failure destination too: Lambda writes each
    /// batch it gives up on, whole, under `aws/lambda/`
    /// ([`model::record::FAILED_BATCH_PREFIX`]).
    pub quarantine_bucket: String,
    pub rules: Vec<Rule>,
    pub functions: Vec<Function>,
    pub mappings: Vec<Mapping>,
    /// The router's ledger (`[events] ledger_table`), when a table is read
    /// from Kinesis.
    pub ledger_table: Option<String>,
}

/// The event bus the router puts events on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bus {
    pub name: String,
}

impl Bus {
    /// EventBridge's `default` bus: it exists already and is never deleted.
    pub fn is_default(&self) -> bool {
        self.name == DEFAULT_BUS
    }
}

/// A source table: keys, stream, TTL, PITR, and the target GSI if it has an edge set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceTable {
    pub name: String,
    pub partition_key: String,
    pub sort_key: Option<String>,
    pub ttl_attribute: Option<String>,
    pub target_index: Option<TargetIndex>,
    /// The pipeline-owned attributes of its edge set, if it has one.
    pub edge_set: Option<EdgeSetAttributes>,
    /// The consumers of its stream (at most two).
    pub consumers: Vec<Consumer>,
    /// The Kinesis data stream it sends its changes to, when the config
    /// reads them from one (`stream = "kinesis"`).
    pub kinesis: Option<KinesisStream>,
}

/// A Kinesis data stream a table sends its changes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KinesisStream {
    pub name: String,
    pub retention_hours: u32,
    pub precision: model::config::Precision,
}

impl SourceTable {
    /// The key attributes (all Strings): the partition key, the sort key if any.
    pub fn key_attributes(&self) -> Vec<&str> {
        let mut keys = vec![self.partition_key.as_str()];
        keys.extend(self.sort_key.as_deref());
        keys
    }
}

/// The attributes of a node item that belong to the pipeline: the only
/// ones the indexer may update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeSetAttributes {
    /// The String Set.
    pub attribute: String,
    /// The completeness marker.
    pub complete_attribute: String,
}

/// The GSI keyed by target of a table with an edge set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetIndex {
    pub name: String,
    /// The table's sort key.
    pub partition_key: String,
    /// The table's partition key.
    pub sort_key: String,
    /// Non-key attributes projected (the edge set's member parts): a
    /// reverse lookup reads the same facts the set holds. Empty: keys only.
    pub projected: Vec<String>,
}

/// A multikey index table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexTable {
    pub name: String,
    /// The config's index name.
    pub index: String,
    pub partition_key: String,
    pub sort_key: String,
}

/// What a queue is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueuePurpose {
    /// Records that can never succeed, with the reason (written by the indexer and the router).
    Quarantine,
    /// Events the reaper rule could not deliver to the reaper.
    ReaperDeadLetter,
    /// Locally only: the stand-in for the target of this rule (by name).
    RuleTarget(String),
}

/// An SQS queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queue {
    pub name: String,
    pub purpose: QueuePurpose,
}

impl Queue {
    /// Whether the queue exists on AWS too (rule target queues are local only).
    pub fn on_aws(&self) -> bool {
        !matches!(self.purpose, QueuePurpose::RuleTarget(_))
    }
}

/// An EventBridge rule: one per route.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub name: String,
    /// The route's position in the config.
    pub route: usize,
    pub detail_type: String,
    pub table: String,
    pub pattern: serde_json::Value,
    /// On AWS, the reaper is its target (`reap = true`); otherwise it has none
    /// and its consumers add theirs.
    pub reaper: bool,
    /// The queue standing in for its target locally ([`rule_queue_name`]).
    pub local_queue: String,
}

/// Which function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FunctionRole {
    Indexer,
    Router,
    Reaper,
}

impl FunctionRole {
    /// The binary (cargo-lambda builds it from its crate).
    pub fn binary(self) -> &'static str {
        match self {
            FunctionRole::Indexer => "stream-indexer",
            FunctionRole::Router => "event-router",
            FunctionRole::Reaper => "reaper",
        }
    }

    /// The crate (workspace folder) that holds the binary.
    pub fn package(self) -> &'static str {
        match self {
            FunctionRole::Indexer => "stream-indexer",
            FunctionRole::Router | FunctionRole::Reaper => "event-router",
        }
    }

    /// The function reading a consumer's mappings.
    pub fn of(consumer: Consumer) -> FunctionRole {
        match consumer {
            Consumer::Indexer => FunctionRole::Indexer,
            Consumer::Router => FunctionRole::Router,
        }
    }
}

/// A Lambda function (AWS only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub role: FunctionRole,
    pub name: String,
}

/// Event source mapping settings of a consumer. See [`MappingSettings::of`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MappingSettings {
    pub batch_size: u32,
    pub batching_window_seconds: u32,
    pub parallelization_factor: u32,
    pub maximum_retry_attempts: u32,
    pub maximum_record_age_seconds: u32,
    pub bisect_on_error: bool,
}

impl MappingSettings {
    /// The settings of a consumer's mappings:
    ///
    /// - batch size: the indexer 1,000 (a batch of a thousand records takes it
    ///   well under a second; its row writes pack across the batch), the
    ///   router 100 (ten PutEvents calls);
    /// - no batching window (Lambda's default for streams): records are
    ///   handed over as soon as the poller sees them (Lambda polls a shard
    ///   four times a second), so a write reaches the index well within a
    ///   second; under load, batches fill by themselves;
    /// - parallelization factor 2: Lambda keeps order per partition key, all
    ///   the consumers need (a node and its edges share one);
    /// - bisect on error, and `ReportBatchItemFailures` (always on);
    /// - retries bounded at 1,000: transient and deployment errors (the only
    ///   ones the functions report; poison records are quarantined and count
    ///   as handled) are retried for hours, never forever;
    /// - a maximum record age of 23 h: a record that could not be processed
    ///   goes to the on-failure destination (shard and sequence range, for a
    ///   targeted `rebuild`) an hour before the stream's 24 h retention would
    ///   drop it without a trace; the iterator-age alarms page long before.
    pub fn of(consumer: Consumer) -> MappingSettings {
        let common = MappingSettings {
            batch_size: 100,
            batching_window_seconds: 0,
            parallelization_factor: 2,
            maximum_retry_attempts: 1000,
            maximum_record_age_seconds: 23 * 60 * 60,
            bisect_on_error: true,
        };
        match consumer {
            Consumer::Indexer => MappingSettings {
                batch_size: 1000,
                ..common
            },
            Consumer::Router => common,
        }
    }
}

/// An event source mapping: one consumer on one table's stream (AWS only).
#[derive(Debug, Clone, PartialEq)]
pub struct Mapping {
    pub table: String,
    pub consumer: Consumer,
    pub settings: MappingSettings,
    /// ORed; empty: no filter.
    pub filters: Vec<Pattern>,
}

impl Stack {
    /// Table → the data stream it sends its changes to, for every table
    /// read from Kinesis.
    pub fn kinesis_streams(&self) -> std::collections::BTreeMap<String, String> {
        self.source_tables
            .iter()
            .filter_map(|t| Some((t.name.clone(), t.kinesis.as_ref()?.name.clone())))
            .collect()
    }

    /// Whether `table` is read from a Kinesis data stream.
    pub fn reads_kinesis(&self, table: &str) -> bool {
        self.source_tables
            .iter()
            .any(|t| t.name == table && t.kinesis.is_some())
    }

    /// The queue with this purpose.
    pub fn queue(&self, purpose: &QueuePurpose) -> Option<&Queue> {
        self.queues.iter().find(|q| q.purpose == *purpose)
    }

    /// The function with this role.
    pub fn function(&self, role: FunctionRole) -> Option<&Function> {
        self.functions.iter().find(|f| f.role == role)
    }
}

#[cfg(test)]
mod tests;
