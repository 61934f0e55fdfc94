//! `streamdex up` and `streamdex down`: the [`Stack`] created on, or removed
//! from, any endpoint that speaks the AWS APIs (the moto server locally),
//! with the AWS SDK.
//!
//! [`up`] is idempotent: it reads what exists and changes only what differs
//! from the description, reporting every resource as created, updated or
//! unchanged. What it cannot change without losing data (a table with other
//! keys, a stream with another view type, TTL on another attribute, a GSI
//! with other keys or a narrower projection) is refused as
//! [`StackError::Conflict`], naming the resource and the difference.
//! Locally, every rule gets its stand-in queue as its target; event source
//! mappings are never created (against moto they drain the stream).
//!
//! [`down`] removes the same resources (rule targets and rules, queues, the
//! bus unless it is `default`, the quarantine bucket with its objects, index
//! tables, source tables), reporting each
//! as deleted or already absent.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::{Duration, Instant};

use aws_config::SdkConfig;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, CreateGlobalSecondaryIndexAction, GlobalSecondaryIndex,
    GlobalSecondaryIndexUpdate, IndexStatus, KeySchemaElement, KeyType, PointInTimeRecoverySpecification, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType, TableDescription, TableStatus,
    TimeToLiveSpecification, TimeToLiveStatus,
};
use aws_sdk_sqs::types::QueueAttributeName;
use model::Config;

use super::{
    IndexTable, Queue, QueuePurpose, Rule, SourceTable, Stack, TargetIndex, QUEUE_RETENTION_SECONDS, RULE_TARGET_ID,
};

mod bucket;
mod events;
mod kinesis;
mod queues;
mod table_settings;
mod tables;

pub use bucket::bucket_exists;
use bucket::*;
use events::*;
use kinesis::*;
pub use queues::queue_url;
use queues::*;
use table_settings::*;
use tables::*;

/// How long `up` waits for a table (or a new GSI) to become ACTIVE.
pub const ACTIVE_TIMEOUT: Duration = Duration::from_secs(600);
/// How often `up` looks again while waiting.
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// What `up` or `down` did to one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Created,
    /// Changed in place; says what.
    Updated(String),
    Unchanged,
    Deleted,
    /// `down` found nothing to delete.
    Absent,
}

/// One resource and what was done to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// `table`, `gsi`, `bus`, `queue`, `rule`, `target`, `ttl`, `pitr`, `stream`.
    pub kind: &'static str,
    /// The resource's name (`records`, `records/byTarget`, ...).
    pub name: String,
    pub action: Action,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.action {
            Action::Created => write!(f, "created   {} {}", self.kind, self.name),
            Action::Updated(what) => write!(f, "updated   {} {}: {what}", self.kind, self.name),
            Action::Unchanged => write!(f, "unchanged {} {}", self.kind, self.name),
            Action::Deleted => write!(f, "deleted   {} {}", self.kind, self.name),
            Action::Absent => write!(f, "absent    {} {}", self.kind, self.name),
        }
    }
}

/// What [`up`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpReport {
    /// Every resource, in creation order.
    pub changes: Vec<Change>,
    /// Queue name → URL, for every queue of the stack.
    pub queue_urls: BTreeMap<String, String>,
    /// Rule name → ARN.
    pub rule_arns: BTreeMap<String, String>,
}

impl UpReport {
    /// Whether anything was created or updated.
    pub fn changed(&self) -> bool {
        self.changes.iter().any(|c| !matches!(c.action, Action::Unchanged))
    }

    /// The URL of the queue with this name.
    pub fn queue_url(&self, name: &str) -> Option<&str> {
        self.queue_urls.get(name).map(String::as_str)
    }
}

impl fmt::Display for UpReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for change in &self.changes {
            writeln!(f, "{change}")?;
        }
        if self.changed() {
            let n = self
                .changes
                .iter()
                .filter(|c| !matches!(c.action, Action::Unchanged))
                .count();
            writeln!(f, "{n} of {} resources created or updated", self.changes.len())
        } else {
            writeln!(
                f,
                "nothing to change: all {} resources are up to date",
                self.changes.len()
            )
        }
    }
}

/// What [`down`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DownReport {
    pub changes: Vec<Change>,
}

impl DownReport {
    /// Whether anything was deleted.
    pub fn changed(&self) -> bool {
        self.changes.iter().any(|c| c.action == Action::Deleted)
    }
}

impl fmt::Display for DownReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for change in &self.changes {
            writeln!(f, "{change}")?;
        }
        let n = self.changes.iter().filter(|c| c.action == Action::Deleted).count();
        if n == 0 {
            writeln!(
                f,
                "nothing to delete: none of the {} resources exists",
                self.changes.len()
            )
        } else {
            writeln!(f, "{n} of {} resources deleted", self.changes.len())
        }
    }
}

/// Why `up` or `down` stopped. What was done before it is not undone.
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    /// An AWS call failed.
    #[error("{operation} of {kind} `{name}` failed: {message}")]
    Aws {
        operation: &'static str,
        kind: &'static str,
        name: String,
        message: String,
    },
    /// A resource exists in a shape `up` cannot change without losing data.
    #[error("{kind} `{name}` exists but {reason}; streamdex up will not replace it (change it by hand, or use another name)")]
    Conflict {
        kind: &'static str,
        name: String,
        reason: String,
    },
    /// A table or GSI did not become ACTIVE in time.
    #[error("{kind} `{name}` is still not ACTIVE after {seconds} s")]
    Timeout {
        kind: &'static str,
        name: String,
        seconds: u64,
    },
}

impl StackError {
    /// True when retrying cannot help: the endpoint's state conflicts with the config.
    pub fn is_conflict(&self) -> bool {
        matches!(self, StackError::Conflict { .. })
    }
}

fn aws_error<E: OneLine>(operation: &'static str, kind: &'static str, name: &str) -> impl FnOnce(E) -> StackError {
    let name = name.to_owned();
    move |e| StackError::Aws {
        operation,
        kind,
        name,
        message: e.one_line(),
    }
}

/// An error of a request, or of building one, in one line (never the SDK's
/// `Debug` dump).
trait OneLine {
    fn one_line(&self) -> String;
}

impl<E, R> OneLine for SdkError<E, R>
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    fn one_line(&self) -> String {
        aws_kit::error::sdk_message(self)
    }
}

impl OneLine for aws_sdk_dynamodb::error::BuildError {
    fn one_line(&self) -> String {
        self.to_string()
    }
}

/// How long one request of a `streamdex` command may take (an attempt), and
/// the whole call with the SDK's retries: no command waits forever on a
/// server that accepted the connection and went quiet. (The consumers' own
/// clients, `aws_kit::clients`, bound their requests more tightly.)
pub const COMMAND_ATTEMPT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
pub const COMMAND_OPERATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// An SDK config from the environment (region, credentials, `AWS_ENDPOINT_URL`),
/// with `endpoint` and `region` overriding it when given, and every request
/// bounded (`COMMAND_ATTEMPT_TIMEOUT`, `COMMAND_OPERATION_TIMEOUT`, and
/// the kit's connect timeout).
pub async fn sdk_config(endpoint: Option<&str>, region: Option<&str>) -> SdkConfig {
    let timeouts = aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(aws_kit::clients::CONNECT_TIMEOUT)
        .operation_attempt_timeout(COMMAND_ATTEMPT_TIMEOUT)
        .operation_timeout(COMMAND_OPERATION_TIMEOUT)
        .build();
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest()).timeout_config(timeouts);
    if let Some(endpoint) = endpoint {
        loader = loader.endpoint_url(endpoint);
    }
    if let Some(region) = region {
        loader = loader.region(aws_config::Region::new(region.to_owned()));
    }
    loader.load().await
}

struct Clients {
    dynamodb: aws_sdk_dynamodb::Client,
    events: aws_sdk_eventbridge::Client,
    sqs: aws_sdk_sqs::Client,
    s3: aws_sdk_s3::Client,
    kinesis: aws_sdk_kinesis::Client,
}

impl Clients {
    fn new(sdk: &SdkConfig) -> Clients {
        Clients {
            dynamodb: aws_sdk_dynamodb::Client::new(sdk),
            events: aws_sdk_eventbridge::Client::new(sdk),
            sqs: aws_sdk_sqs::Client::new(sdk),
            s3: aws_kit::clients::s3_client(sdk),
            kinesis: aws_sdk_kinesis::Client::new(sdk),
        }
    }
}

/// Creates (or brings up to date) the stack of `config`: source tables with
/// streams, TTL, PITR and the target GSI; index tables; the bus; the queues;
/// the rules, each with its local stand-in queue as target. Idempotent.
pub async fn up(sdk: &SdkConfig, config: &Config) -> Result<UpReport, StackError> {
    let stack = Stack::new(config);
    let clients = Clients::new(sdk);
    let mut report = UpReport::default();
    for table in &stack.source_tables {
        source_table(&clients.dynamodb, table, &mut report.changes).await?;
    }
    for table in &stack.index_tables {
        index_table(&clients.dynamodb, table, &mut report.changes).await?;
    }
    for stream in stack.source_tables.iter().filter_map(|t| t.kinesis.as_ref()) {
        report.changes.push(ensure_stream(&clients.kinesis, stream).await?);
    }
    if let Some(ledger) = &stack.ledger_table {
        ledger_table(&clients.dynamodb, ledger, &mut report.changes).await?;
    }
    if !stack.bus.is_default() {
        report.changes.push(bus(&clients.events, &stack.bus.name).await?);
    }
    for rule in &stack.rules {
        let (arn, change) = put_rule(&clients.events, &stack.bus.name, rule).await?;
        report.changes.push(change);
        report.rule_arns.insert(rule.name.clone(), arn);
    }
    for queue in &stack.queues {
        let rule_arn = match &queue.purpose {
            QueuePurpose::RuleTarget(rule) => report.rule_arns.get(rule).cloned(),
            _ => None,
        };
        let (url, change) = ensure_queue(&clients.sqs, queue, rule_arn.as_deref()).await?;
        report.changes.push(change);
        report.queue_urls.insert(queue.name.clone(), url);
    }
    report
        .changes
        .push(ensure_bucket(&clients.s3, &stack.quarantine_bucket).await?);
    for rule in &stack.rules {
        let url = report.queue_urls.get(&rule.local_queue).cloned().unwrap_or_default();
        let arn = queue_arn(&clients.sqs, &rule.local_queue, &url).await?;
        report
            .changes
            .push(rule_target(&clients.events, &stack.bus.name, rule, &arn).await?);
    }
    Ok(report)
}

/// Removes the stack of `config`: rule targets and rules, queues, the bus
/// (never `default`), index tables and source tables, **with their items**.
/// Idempotent: what is already gone is reported as absent.
pub async fn down(sdk: &SdkConfig, config: &Config) -> Result<DownReport, StackError> {
    let stack = Stack::new(config);
    let clients = Clients::new(sdk);
    let mut report = DownReport::default();
    for rule in &stack.rules {
        report
            .changes
            .push(delete_rule(&clients.events, &stack.bus.name, rule).await?);
    }
    for queue in &stack.queues {
        report.changes.push(delete_queue(&clients.sqs, queue).await?);
    }
    report
        .changes
        .push(delete_bucket(&clients.s3, &stack.quarantine_bucket).await?);
    if !stack.bus.is_default() {
        report.changes.push(delete_bus(&clients.events, &stack.bus.name).await?);
    }
    for stream in stack.source_tables.iter().filter_map(|t| t.kinesis.as_ref()) {
        report
            .changes
            .push(delete_stream(&clients.kinesis, &stream.name).await?);
    }
    let tables = stack
        .index_tables
        .iter()
        .map(|t| t.name.as_str())
        .chain(stack.ledger_table.as_deref())
        .chain(stack.source_tables.iter().map(|t| t.name.as_str()));
    for table in tables {
        report.changes.push(delete_table(&clients.dynamodb, table).await?);
    }
    Ok(report)
}
