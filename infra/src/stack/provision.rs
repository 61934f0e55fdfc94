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
//! bus unless it is `default`, index tables, source tables), reporting each
//! as deleted or already absent.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::{Duration, Instant};

use aws_config::SdkConfig;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata};
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

fn aws_error<E>(operation: &'static str, kind: &'static str, name: &str) -> impl FnOnce(E) -> StackError
where
    E: std::error::Error,
{
    let name = name.to_owned();
    move |e| StackError::Aws {
        operation,
        kind,
        name,
        message: DisplayErrorContext(&e).to_string(),
    }
}

/// An SDK config from the environment (region, credentials, `AWS_ENDPOINT_URL`),
/// with `endpoint` and `region` overriding it when given.
pub async fn sdk_config(endpoint: Option<&str>, region: Option<&str>) -> SdkConfig {
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
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
}

impl Clients {
    fn new(sdk: &SdkConfig) -> Clients {
        Clients {
            dynamodb: aws_sdk_dynamodb::Client::new(sdk),
            events: aws_sdk_eventbridge::Client::new(sdk),
            sqs: aws_sdk_sqs::Client::new(sdk),
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
    if !stack.bus.is_default() {
        report.changes.push(delete_bus(&clients.events, &stack.bus.name).await?);
    }
    let tables = stack
        .index_tables
        .iter()
        .map(|t| t.name.as_str())
        .chain(stack.source_tables.iter().map(|t| t.name.as_str()));
    for table in tables {
        report.changes.push(delete_table(&clients.dynamodb, table).await?);
    }
    Ok(report)
}

// ---------------------------------------------------------------------------
// Tables
// ---------------------------------------------------------------------------

fn key(name: &str, ty: KeyType) -> Result<KeySchemaElement, StackError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(ty)
        .build()
        .map_err(aws_error("building the key schema", "attribute", name))
}

fn string_attribute(name: &str) -> Result<AttributeDefinition, StackError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .map_err(aws_error("building the attribute definitions", "attribute", name))
}

fn key_schema(partition: &str, sort: Option<&str>) -> Result<Vec<KeySchemaElement>, StackError> {
    let mut keys = vec![key(partition, KeyType::Hash)?];
    if let Some(sort) = sort {
        keys.push(key(sort, KeyType::Range)?);
    }
    Ok(keys)
}

fn projection(index: &TargetIndex) -> Projection {
    if index.projected.is_empty() {
        Projection::builder().projection_type(ProjectionType::KeysOnly).build()
    } else {
        Projection::builder()
            .projection_type(ProjectionType::Include)
            .set_non_key_attributes(Some(index.projected.clone()))
            .build()
    }
}

fn gsi(index: &TargetIndex) -> Result<GlobalSecondaryIndex, StackError> {
    GlobalSecondaryIndex::builder()
        .index_name(&index.name)
        .set_key_schema(Some(key_schema(&index.partition_key, Some(&index.sort_key))?))
        .projection(projection(index))
        .build()
        .map_err(aws_error("building the GSI", "gsi", &index.name))
}

fn stream_spec() -> Result<StreamSpecification, StackError> {
    StreamSpecification::builder()
        .stream_enabled(true)
        .stream_view_type(StreamViewType::NewAndOldImages)
        .build()
        .map_err(aws_error(
            "building the stream specification",
            "stream",
            "NEW_AND_OLD_IMAGES",
        ))
}

async fn describe_table(client: &aws_sdk_dynamodb::Client, name: &str) -> Result<Option<TableDescription>, StackError> {
    match client.describe_table().table_name(name).send().await {
        Ok(output) => Ok(output.table),
        Err(e) if e.code() == Some("ResourceNotFoundException") => Ok(None),
        Err(e) => Err(aws_error("DescribeTable", "table", name)(e)),
    }
}

/// The key attributes of a described table: (partition, sort).
fn described_keys(schema: &[KeySchemaElement]) -> (Option<&str>, Option<&str>) {
    let find = |ty: KeyType| {
        schema
            .iter()
            .find(|k| k.key_type == ty)
            .map(|k| k.attribute_name.as_str())
    };
    (find(KeyType::Hash), find(KeyType::Range))
}

fn check_keys(
    kind: &'static str,
    name: &str,
    described: &[KeySchemaElement],
    partition: &str,
    sort: Option<&str>,
) -> Result<(), StackError> {
    let found = described_keys(described);
    if found == (Some(partition), sort) {
        return Ok(());
    }
    let show = |(p, s): (Option<&str>, Option<&str>)| match s {
        Some(s) => format!("partition key `{}`, sort key `{s}`", p.unwrap_or("?")),
        None => format!("partition key `{}`, no sort key", p.unwrap_or("?")),
    };
    Err(StackError::Conflict {
        kind,
        name: name.to_owned(),
        reason: format!(
            "has {} where the config needs {}",
            show(found),
            show((Some(partition), sort))
        ),
    })
}

/// Waits until the table and all its GSIs are ACTIVE.
async fn wait_active(client: &aws_sdk_dynamodb::Client, name: &str) -> Result<(), StackError> {
    let started = Instant::now();
    loop {
        let table = describe_table(client, name).await?;
        let active = table.as_ref().is_some_and(|t| {
            t.table_status == Some(TableStatus::Active)
                && t.global_secondary_indexes()
                    .iter()
                    .all(|g| g.index_status.as_ref().is_none_or(|s| *s == IndexStatus::Active))
        });
        if active {
            return Ok(());
        }
        if started.elapsed() > ACTIVE_TIMEOUT {
            return Err(StackError::Timeout {
                kind: "table",
                name: name.to_owned(),
                seconds: ACTIVE_TIMEOUT.as_secs(),
            });
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

async fn source_table(
    client: &aws_sdk_dynamodb::Client,
    table: &SourceTable,
    changes: &mut Vec<Change>,
) -> Result<(), StackError> {
    let change = |kind: &'static str, name: String, action: Action| Change { kind, name, action };
    match describe_table(client, &table.name).await? {
        None => {
            let mut request = client
                .create_table()
                .table_name(&table.name)
                .billing_mode(BillingMode::PayPerRequest)
                .set_key_schema(Some(key_schema(&table.partition_key, table.sort_key.as_deref())?))
                .stream_specification(stream_spec()?);
            for attribute in table.key_attributes() {
                request = request.attribute_definitions(string_attribute(attribute)?);
            }
            if let Some(index) = &table.target_index {
                request = request.global_secondary_indexes(gsi(index)?);
            }
            request
                .send()
                .await
                .map_err(aws_error("CreateTable", "table", &table.name))?;
            changes.push(change("table", table.name.clone(), Action::Created));
            changes.push(change("stream", format!("{}/stream", table.name), Action::Created));
            if let Some(index) = &table.target_index {
                changes.push(change("gsi", format!("{}/{}", table.name, index.name), Action::Created));
            }
            wait_active(client, &table.name).await?;
        }
        Some(described) => {
            check_keys(
                "table",
                &table.name,
                described.key_schema(),
                &table.partition_key,
                table.sort_key.as_deref(),
            )?;
            changes.push(change("table", table.name.clone(), Action::Unchanged));
            changes.push(stream(client, table, &described).await?);
            if let Some(index) = &table.target_index {
                changes.push(target_index(client, table, index, &described).await?);
            }
        }
    }
    if let Some(attribute) = &table.ttl_attribute {
        changes.push(ttl(client, &table.name, attribute).await?);
    }
    changes.push(pitr(client, &table.name).await?);
    Ok(())
}

async fn stream(
    client: &aws_sdk_dynamodb::Client,
    table: &SourceTable,
    described: &TableDescription,
) -> Result<Change, StackError> {
    let name = format!("{}/stream", table.name);
    let spec = described.stream_specification.as_ref();
    match spec {
        Some(s) if s.stream_enabled && s.stream_view_type == Some(StreamViewType::NewAndOldImages) => Ok(Change {
            kind: "stream",
            name,
            action: Action::Unchanged,
        }),
        Some(s) if s.stream_enabled => Err(StackError::Conflict {
            kind: "table",
            name: table.name.clone(),
            reason: format!(
                "its stream has view type {} where both consumers need NEW_AND_OLD_IMAGES \
                 (changing it means a new stream that its current readers lose)",
                s.stream_view_type.as_ref().map_or("(none)", |v| v.as_str())
            ),
        }),
        _ => {
            client
                .update_table()
                .table_name(&table.name)
                .stream_specification(stream_spec()?)
                .send()
                .await
                .map_err(aws_error("UpdateTable (enable the stream)", "table", &table.name))?;
            wait_active(client, &table.name).await?;
            Ok(Change {
                kind: "stream",
                name,
                action: Action::Updated("enabled with NEW_AND_OLD_IMAGES".to_owned()),
            })
        }
    }
}

async fn target_index(
    client: &aws_sdk_dynamodb::Client,
    table: &SourceTable,
    index: &TargetIndex,
    described: &TableDescription,
) -> Result<Change, StackError> {
    let name = format!("{}/{}", table.name, index.name);
    let existing = described
        .global_secondary_indexes()
        .iter()
        .find(|g| g.index_name.as_deref() == Some(index.name.as_str()));
    let Some(existing) = existing else {
        let mut request = client
            .update_table()
            .table_name(&table.name)
            .global_secondary_index_updates(
                GlobalSecondaryIndexUpdate::builder()
                    .create(
                        CreateGlobalSecondaryIndexAction::builder()
                            .index_name(&index.name)
                            .set_key_schema(Some(key_schema(&index.partition_key, Some(&index.sort_key))?))
                            .projection(projection(index))
                            .build()
                            .map_err(aws_error("building the GSI", "gsi", &name))?,
                    )
                    .build(),
            );
        for attribute in table.key_attributes() {
            request = request.attribute_definitions(string_attribute(attribute)?);
        }
        request
            .send()
            .await
            .map_err(aws_error("UpdateTable (create the GSI)", "gsi", &name))?;
        wait_active(client, &table.name).await?;
        return Ok(Change {
            kind: "gsi",
            name,
            action: Action::Created,
        });
    };
    check_keys(
        "gsi",
        &name,
        existing.key_schema(),
        &index.partition_key,
        Some(&index.sort_key),
    )?;
    let projected = existing.projection.as_ref();
    let wide_enough = match projected.and_then(|p| p.projection_type.as_ref()) {
        Some(ProjectionType::All) => true,
        Some(ProjectionType::Include) => {
            let have = projected.map(|p| p.non_key_attributes()).unwrap_or_default();
            index.projected.iter().all(|a| have.contains(a))
        }
        _ => index.projected.is_empty(),
    };
    if !wide_enough {
        return Err(StackError::Conflict {
            kind: "gsi",
            name,
            reason: format!(
                "does not project the edge set's member attributes [{}] (a GSI's projection cannot change)",
                index.projected.join(", ")
            ),
        });
    }
    Ok(Change {
        kind: "gsi",
        name,
        action: Action::Unchanged,
    })
}

async fn ttl(client: &aws_sdk_dynamodb::Client, table: &str, attribute: &str) -> Result<Change, StackError> {
    let name = format!("{table}/{attribute}");
    let described = client
        .describe_time_to_live()
        .table_name(table)
        .send()
        .await
        .map_err(aws_error("DescribeTimeToLive", "table", table))?
        .time_to_live_description;
    let status = described.as_ref().and_then(|d| d.time_to_live_status.clone());
    let current = described.as_ref().and_then(|d| d.attribute_name.as_deref());
    match status {
        Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling) if current == Some(attribute) => Ok(Change {
            kind: "ttl",
            name,
            action: Action::Unchanged,
        }),
        Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling) => Err(StackError::Conflict {
            kind: "table",
            name: table.to_owned(),
            reason: format!(
                "expires items by `{}` where the config says `{attribute}`",
                current.unwrap_or("?")
            ),
        }),
        _ => {
            client
                .update_time_to_live()
                .table_name(table)
                .time_to_live_specification(
                    TimeToLiveSpecification::builder()
                        .enabled(true)
                        .attribute_name(attribute)
                        .build()
                        .map_err(aws_error("building the TTL specification", "table", table))?,
                )
                .send()
                .await
                .map_err(aws_error("UpdateTimeToLive", "table", table))?;
            Ok(Change {
                kind: "ttl",
                name,
                action: Action::Updated("enabled".to_owned()),
            })
        }
    }
}

async fn pitr(client: &aws_sdk_dynamodb::Client, table: &str) -> Result<Change, StackError> {
    let name = table.to_owned();
    let described = client
        .describe_continuous_backups()
        .table_name(table)
        .send()
        .await
        .map_err(aws_error("DescribeContinuousBackups", "table", table))?;
    let enabled = described
        .continuous_backups_description
        .and_then(|d| d.point_in_time_recovery_description)
        .and_then(|p| p.point_in_time_recovery_status)
        .is_some_and(|s| s.as_str() == "ENABLED");
    if enabled {
        return Ok(Change {
            kind: "pitr",
            name,
            action: Action::Unchanged,
        });
    }
    client
        .update_continuous_backups()
        .table_name(table)
        .point_in_time_recovery_specification(
            PointInTimeRecoverySpecification::builder()
                .point_in_time_recovery_enabled(true)
                .build()
                .map_err(aws_error("building the PITR specification", "table", table))?,
        )
        .send()
        .await
        .map_err(aws_error("UpdateContinuousBackups", "table", table))?;
    Ok(Change {
        kind: "pitr",
        name,
        action: Action::Updated("point-in-time recovery enabled".to_owned()),
    })
}

async fn index_table(
    client: &aws_sdk_dynamodb::Client,
    table: &IndexTable,
    changes: &mut Vec<Change>,
) -> Result<(), StackError> {
    if let Some(described) = describe_table(client, &table.name).await? {
        check_keys(
            "table",
            &table.name,
            described.key_schema(),
            &table.partition_key,
            Some(&table.sort_key),
        )?;
        changes.push(Change {
            kind: "table",
            name: table.name.clone(),
            action: Action::Unchanged,
        });
        return Ok(());
    }
    client
        .create_table()
        .table_name(&table.name)
        .billing_mode(BillingMode::PayPerRequest)
        .set_key_schema(Some(key_schema(&table.partition_key, Some(&table.sort_key))?))
        .attribute_definitions(string_attribute(&table.partition_key)?)
        .attribute_definitions(string_attribute(&table.sort_key)?)
        .send()
        .await
        .map_err(aws_error("CreateTable", "table", &table.name))?;
    wait_active(client, &table.name).await?;
    changes.push(Change {
        kind: "table",
        name: table.name.clone(),
        action: Action::Created,
    });
    Ok(())
}

async fn delete_table(client: &aws_sdk_dynamodb::Client, name: &str) -> Result<Change, StackError> {
    let action = match client.delete_table().table_name(name).send().await {
        Ok(_) => Action::Deleted,
        Err(e) if e.code() == Some("ResourceNotFoundException") => Action::Absent,
        Err(e) => return Err(aws_error("DeleteTable", "table", name)(e)),
    };
    Ok(Change {
        kind: "table",
        name: name.to_owned(),
        action,
    })
}

// ---------------------------------------------------------------------------
// EventBridge
// ---------------------------------------------------------------------------

async fn bus(client: &aws_sdk_eventbridge::Client, name: &str) -> Result<Change, StackError> {
    let action = match client.describe_event_bus().name(name).send().await {
        Ok(_) => Action::Unchanged,
        Err(e) if e.code() == Some("ResourceNotFoundException") => {
            client
                .create_event_bus()
                .name(name)
                .send()
                .await
                .map_err(aws_error("CreateEventBus", "bus", name))?;
            Action::Created
        }
        Err(e) => return Err(aws_error("DescribeEventBus", "bus", name)(e)),
    };
    Ok(Change {
        kind: "bus",
        name: name.to_owned(),
        action,
    })
}

async fn delete_bus(client: &aws_sdk_eventbridge::Client, name: &str) -> Result<Change, StackError> {
    let action = match client.describe_event_bus().name(name).send().await {
        Ok(_) => {
            client
                .delete_event_bus()
                .name(name)
                .send()
                .await
                .map_err(aws_error("DeleteEventBus", "bus", name))?;
            Action::Deleted
        }
        Err(e) if e.code() == Some("ResourceNotFoundException") => Action::Absent,
        Err(e) => return Err(aws_error("DescribeEventBus", "bus", name)(e)),
    };
    Ok(Change {
        kind: "bus",
        name: name.to_owned(),
        action,
    })
}

/// Puts the rule if it is missing or differs (pattern, state); returns its ARN.
async fn put_rule(
    client: &aws_sdk_eventbridge::Client,
    bus: &str,
    rule: &Rule,
) -> Result<(String, Change), StackError> {
    let existing = match client.describe_rule().name(&rule.name).event_bus_name(bus).send().await {
        Ok(described) => Some(described),
        Err(e) if e.code() == Some("ResourceNotFoundException") => None,
        Err(e) => return Err(aws_error("DescribeRule", "rule", &rule.name)(e)),
    };
    let description = format!("streamdex: {} events of table {}", rule.detail_type, rule.table);
    let action = match &existing {
        None => Action::Created,
        Some(described) => {
            let pattern: Option<serde_json::Value> = described
                .event_pattern
                .as_deref()
                .and_then(|p| serde_json::from_str(p).ok());
            let enabled = described.state.as_ref().is_some_and(|s| s.as_str() == "ENABLED");
            match (pattern.as_ref() == Some(&rule.pattern), enabled) {
                (true, true) => {
                    let arn = described.arn.clone().unwrap_or_default();
                    return Ok((
                        arn,
                        Change {
                            kind: "rule",
                            name: rule.name.clone(),
                            action: Action::Unchanged,
                        },
                    ));
                }
                (false, _) => Action::Updated("event pattern replaced".to_owned()),
                (true, false) => Action::Updated("enabled".to_owned()),
            }
        }
    };
    let output = client
        .put_rule()
        .name(&rule.name)
        .event_bus_name(bus)
        .event_pattern(rule.pattern.to_string())
        .state(aws_sdk_eventbridge::types::RuleState::Enabled)
        .description(description)
        .send()
        .await
        .map_err(aws_error("PutRule", "rule", &rule.name))?;
    Ok((
        output.rule_arn.unwrap_or_default(),
        Change {
            kind: "rule",
            name: rule.name.clone(),
            action,
        },
    ))
}

async fn rule_target(
    client: &aws_sdk_eventbridge::Client,
    bus: &str,
    rule: &Rule,
    queue_arn: &str,
) -> Result<Change, StackError> {
    let name = format!("{} -> {}", rule.name, rule.local_queue);
    let targets = client
        .list_targets_by_rule()
        .rule(&rule.name)
        .event_bus_name(bus)
        .send()
        .await
        .map_err(aws_error("ListTargetsByRule", "rule", &rule.name))?
        .targets
        .unwrap_or_default();
    let current = targets.iter().find(|t| t.id == RULE_TARGET_ID);
    let action = match current {
        Some(t) if t.arn == queue_arn => {
            return Ok(Change {
                kind: "target",
                name,
                action: Action::Unchanged,
            })
        }
        Some(_) => Action::Updated("now the rule's queue".to_owned()),
        None => Action::Created,
    };
    let target = aws_sdk_eventbridge::types::Target::builder()
        .id(RULE_TARGET_ID)
        .arn(queue_arn)
        .build()
        .map_err(aws_error("building the target", "rule", &rule.name))?;
    let output = client
        .put_targets()
        .rule(&rule.name)
        .event_bus_name(bus)
        .targets(target)
        .send()
        .await
        .map_err(aws_error("PutTargets", "rule", &rule.name))?;
    if output.failed_entry_count > 0 {
        let reason = output
            .failed_entries()
            .iter()
            .map(|f| {
                format!(
                    "{}: {}",
                    f.error_code().unwrap_or("?"),
                    f.error_message().unwrap_or("?")
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        return Err(StackError::Aws {
            operation: "PutTargets",
            kind: "rule",
            name: rule.name.clone(),
            message: reason,
        });
    }
    Ok(Change {
        kind: "target",
        name,
        action,
    })
}

async fn delete_rule(client: &aws_sdk_eventbridge::Client, bus: &str, rule: &Rule) -> Result<Change, StackError> {
    let change = |action| Change {
        kind: "rule",
        name: rule.name.clone(),
        action,
    };
    let targets = match client
        .list_targets_by_rule()
        .rule(&rule.name)
        .event_bus_name(bus)
        .send()
        .await
    {
        Ok(output) => output.targets.unwrap_or_default(),
        Err(e) if e.code() == Some("ResourceNotFoundException") => return Ok(change(Action::Absent)),
        Err(e) => return Err(aws_error("ListTargetsByRule", "rule", &rule.name)(e)),
    };
    let ids: Vec<String> = targets.into_iter().map(|t| t.id).collect();
    if !ids.is_empty() {
        client
            .remove_targets()
            .rule(&rule.name)
            .event_bus_name(bus)
            .set_ids(Some(ids))
            .send()
            .await
            .map_err(aws_error("RemoveTargets", "rule", &rule.name))?;
    }
    match client.delete_rule().name(&rule.name).event_bus_name(bus).send().await {
        Ok(_) => Ok(change(Action::Deleted)),
        Err(e) if e.code() == Some("ResourceNotFoundException") => Ok(change(Action::Absent)),
        Err(e) => Err(aws_error("DeleteRule", "rule", &rule.name)(e)),
    }
}

// ---------------------------------------------------------------------------
// SQS
// ---------------------------------------------------------------------------

fn is_missing_queue<E: ProvideErrorMetadata>(e: &E) -> bool {
    matches!(
        e.code(),
        Some("AWS.SimpleQueueService.NonExistentQueue" | "QueueDoesNotExist")
    )
}

async fn queue_url(client: &aws_sdk_sqs::Client, name: &str) -> Result<Option<String>, StackError> {
    match client.get_queue_url().queue_name(name).send().await {
        Ok(output) => Ok(output.queue_url),
        Err(e) if e.as_service_error().is_some_and(is_missing_queue) => Ok(None),
        Err(e) => Err(aws_error("GetQueueUrl", "queue", name)(e)),
    }
}

/// The access policy of a rule's stand-in queue: EventBridge may send from that rule only.
fn rule_queue_policy(queue: &str, rule_arn: &str) -> serde_json::Value {
    serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Sid": "EventBridgeRule",
            "Effect": "Allow",
            "Principal": {"Service": "events.amazonaws.com"},
            "Action": "sqs:SendMessage",
            "Resource": queue,
            "Condition": {"ArnEquals": {"aws:SourceArn": rule_arn}},
        }],
    })
}

async fn ensure_queue(
    client: &aws_sdk_sqs::Client,
    queue: &Queue,
    rule_arn: Option<&str>,
) -> Result<(String, Change), StackError> {
    let retention = QUEUE_RETENTION_SECONDS.to_string();
    let (url, created) = match queue_url(client, &queue.name).await? {
        Some(url) => (url, false),
        None => {
            let output = client
                .create_queue()
                .queue_name(&queue.name)
                .attributes(QueueAttributeName::MessageRetentionPeriod, &retention)
                .send()
                .await
                .map_err(aws_error("CreateQueue", "queue", &queue.name))?;
            (output.queue_url.unwrap_or_default(), true)
        }
    };
    let attributes: HashMap<QueueAttributeName, String> = client
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .map_err(aws_error("GetQueueAttributes", "queue", &queue.name))?
        .attributes
        .unwrap_or_default();
    let mut wanted: Vec<(QueueAttributeName, String)> = Vec::new();
    if attributes.get(&QueueAttributeName::MessageRetentionPeriod) != Some(&retention) {
        wanted.push((QueueAttributeName::MessageRetentionPeriod, retention));
    }
    if let (Some(rule_arn), Some(arn)) = (rule_arn, attributes.get(&QueueAttributeName::QueueArn)) {
        let policy = rule_queue_policy(arn, rule_arn);
        let current: Option<serde_json::Value> = attributes
            .get(&QueueAttributeName::Policy)
            .and_then(|p| serde_json::from_str(p).ok());
        if current.as_ref() != Some(&policy) {
            wanted.push((QueueAttributeName::Policy, policy.to_string()));
        }
    }
    let action = if created {
        Action::Created
    } else if wanted.is_empty() {
        Action::Unchanged
    } else {
        let what = wanted
            .iter()
            .map(|(k, _)| k.as_str().to_owned())
            .collect::<Vec<_>>()
            .join(", ");
        Action::Updated(format!("set {what}"))
    };
    if !wanted.is_empty() {
        client
            .set_queue_attributes()
            .queue_url(&url)
            .set_attributes(Some(wanted.into_iter().collect()))
            .send()
            .await
            .map_err(aws_error("SetQueueAttributes", "queue", &queue.name))?;
    }
    Ok((
        url,
        Change {
            kind: "queue",
            name: queue.name.clone(),
            action,
        },
    ))
}

async fn queue_arn(client: &aws_sdk_sqs::Client, name: &str, url: &str) -> Result<String, StackError> {
    client
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(aws_error("GetQueueAttributes", "queue", name))?
        .attributes
        .and_then(|mut a| a.remove(&QueueAttributeName::QueueArn))
        .ok_or_else(|| StackError::Aws {
            operation: "GetQueueAttributes",
            kind: "queue",
            name: name.to_owned(),
            message: "the answer has no QueueArn".to_owned(),
        })
}

async fn delete_queue(client: &aws_sdk_sqs::Client, queue: &Queue) -> Result<Change, StackError> {
    let action = match queue_url(client, &queue.name).await? {
        None => Action::Absent,
        Some(url) => match client.delete_queue().queue_url(url).send().await {
            Ok(_) => Action::Deleted,
            Err(e) if e.as_service_error().is_some_and(is_missing_queue) => Action::Absent,
            Err(e) => return Err(aws_error("DeleteQueue", "queue", &queue.name)(e)),
        },
    };
    Ok(Change {
        kind: "queue",
        name: queue.name.clone(),
        action,
    })
}
