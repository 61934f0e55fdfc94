//! `streamdex template CONFIG`: the AWS SAM / CloudFormation template of a
//! config's [`Stack`], as JSON.
//!
//! What it holds (everything named and shaped by [`Stack::new`], the
//! description `streamdex up` creates too):
//!
//! - the source tables (retained on stack deletion: they hold your data):
//!   String keys, on-demand billing, a `NEW_AND_OLD_IMAGES` stream, TTL,
//!   point-in-time recovery, the `target_index` GSI on tables with an edge set;
//! - the index tables (derived data: deleted with the stack, `rebuild`
//!   restores them), with TTL on the tombstones' expiry attribute
//!   (`model::version::TOMBSTONE_ATTRIBUTE`);
//! - the event bus (unless `default`), one rule per route with
//!   [`model::event::pattern`], named by [`model::event::rule_name`]; the
//!   reaper is the target of `reap` routes' rules (with a retry policy and a
//!   dead-letter queue); other rules have no target: add yours;
//! - the functions `stream-indexer`, `event-router` and `reaper`
//!   (`provided.al2023`, the architecture a parameter, arm64 by default,
//!   the `bootstrap.zip` that `scripts/build-functions.sh` leaves in
//!   `target/lambda/BIN/`),
//!   each with its own log group and least-privilege role ([`iam`]), the
//!   config inline in `STREAMDEX_CONFIG` ([`environment`]);
//! - one event source mapping per consumer per table ([`crate::stack::MappingSettings`],
//!   `ReportBatchItemFailures`, the consumer's on-failure queue, and the
//!   filter criteria of [`model::filter::patterns`]);
//! - a CloudWatch dashboard of the pipeline's health ([`dashboard`]);
//! - the quarantine and failure queues, the alarms ([`alarms`]) and the SNS
//!   topic they notify, subscribed to by the parameters `AlarmEndpoint` and
//!   `AlarmProtocol`;
//! - encryption at rest on everything that holds data, with the optional
//!   `KmsKeyArn` customer key ([`encryption`]); X-Ray tracing; the findings
//!   of the security judges kept on purpose, with reasons ([`suppress`]).
//!
//! The rendering is deterministic (keys sorted), so the committed template
//! of the example config ([`EXAMPLE_TEMPLATE`]) can be compared byte for byte.

pub mod alarms;
pub mod bucket;
pub mod dashboard;
pub mod encryption;
pub mod environment;
pub mod function;
pub mod iam;
pub mod ids;
pub mod suppress;

use std::collections::BTreeMap;

use model::config::Config;
use serde_json::{json, Map, Value as Json};

use crate::stack::{FunctionRole, Mapping, QueuePurpose, Stack, QUEUE_RETENTION_SECONDS, RULE_TARGET_ID};

/// The committed template of `streamdex.example.toml` (`infra/streamdex.template.json`).
pub const EXAMPLE_TEMPLATE: &str = include_str!("../streamdex.template.json");

/// Where the functions' code is, relative to the template (`infra/`): what
/// `scripts/build-functions.sh` writes, a folder per function.
pub const CODE_DIR: &str = "../target/lambda";

/// The zip in each function's folder (Lambda's `bootstrap` alone in it).
pub const CODE_ZIP: &str = "bootstrap.zip";

/// The architectures the functions are built for; the first is the default.
pub const ARCHITECTURES: [&str; 2] = ["arm64", "x86_64"];

/// Days the functions' logs are kept.
pub const LOG_RETENTION_DAYS: u32 = 30;

/// Memory of every function, in MB (CPU grows with it; the indexer's peak
/// RSS on a 6 MB batch is a small part of it: see `docs/PERFORMANCE.md`).
pub const MEMORY_MB: u32 = 512;

/// Seconds an invocation may take.
pub const TIMEOUT_SECONDS: u32 = 60;

/// Retries EventBridge makes to deliver an event to the reaper, and for how long.
pub const REAPER_TARGET_RETRIES: u32 = 185;
pub const REAPER_TARGET_MAX_AGE_SECONDS: u32 = 24 * 60 * 60;

/// Why no template was rendered.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("{file}: cannot write the config compactly for the functions' environment: {reason}")]
    Compact { file: String, reason: String },
    #[error(
        "{file}: the config is {bytes} bytes even without comments, over the {limit} bytes of the functions' \
         4 KB environment it may take; split it into two deployments"
    )]
    ConfigTooLarge { file: String, bytes: usize, limit: usize },
    #[error(
        "two resources would have the logical id `{id}`: rename one of the tables, indexes or routes it comes from"
    )]
    DuplicateId { id: String },
}

/// Collects resources, refusing a logical id twice.
struct Resources(BTreeMap<String, Json>);

impl Resources {
    fn add(&mut self, id: String, resource: Json) -> Result<(), TemplateError> {
        if self.0.contains_key(&id) {
            return Err(TemplateError::DuplicateId { id });
        }
        self.0.insert(id, resource);
        Ok(())
    }
}

/// The template of `config`, whose text `text` was read from `file` (its
/// compact form goes into the functions' environment).
pub fn render(config: &Config, text: &str, file: &str) -> Result<Json, TemplateError> {
    let stack = Stack::new(config);
    let inline_config = environment::compact_toml(text, file, config)?;
    let mut resources = Resources(BTreeMap::new());
    for table in &stack.source_tables {
        let mut attributes: Vec<&str> = table.key_attributes();
        if let Some(index) = &table.target_index {
            attributes.extend([index.partition_key.as_str(), index.sort_key.as_str()]);
        }
        attributes.sort_unstable();
        attributes.dedup();
        let mut properties = json!({
            "TableName": table.name,
            "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": attributes.iter().map(|a| json!({"AttributeName": a, "AttributeType": "S"})).collect::<Vec<_>>(),
            "KeySchema": key_schema(&table.partition_key, table.sort_key.as_deref()),
            "StreamSpecification": { "StreamViewType": crate::stack::STREAM_VIEW_TYPE },
            "PointInTimeRecoverySpecification": { "PointInTimeRecoveryEnabled": true },
            "SSESpecification": encryption::table(),
        });
        if let Some(attribute) = &table.ttl_attribute {
            properties["TimeToLiveSpecification"] = json!({ "AttributeName": attribute, "Enabled": true });
        }
        if let Some(kinesis) = &table.kinesis {
            // Its changes go to a Kinesis data stream, which the consumers read.
            if let Some(object) = properties.as_object_mut() {
                object.remove("StreamSpecification");
            }
            properties["KinesisStreamSpecification"] = json!({
                "StreamArn": { "Fn::GetAtt": [ids::kinesis_stream(&table.name), "Arn"] },
                "ApproximateCreationDateTimePrecision": kinesis.precision.aws_name(),
            });
            resources.add(ids::kinesis_stream(&table.name), kinesis_stream(kinesis))?;
        }
        if let Some(index) = &table.target_index {
            let projection = if index.projected.is_empty() {
                json!({ "ProjectionType": "KEYS_ONLY" })
            } else {
                json!({ "ProjectionType": "INCLUDE", "NonKeyAttributes": index.projected })
            };
            properties["GlobalSecondaryIndexes"] = json!([{
                "IndexName": index.name,
                "KeySchema": key_schema(&index.partition_key, Some(&index.sort_key)),
                "Projection": projection,
            }]);
        }
        let mut resource = json!({
            "Type": "AWS::DynamoDB::Table",
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": properties,
        });
        suppress::keep(&mut resource, &[suppress::TABLE_KEY]);
        resources.add(ids::source_table(&table.name), resource)?;
    }
    for table in &stack.index_tables {
        let mut resource = json!({
            "Type": "AWS::DynamoDB::Table",
            "DeletionPolicy": "Delete",
            "UpdateReplacePolicy": "Delete",
            "Properties": {
                "TableName": table.name,
                "BillingMode": "PAY_PER_REQUEST",
                "AttributeDefinitions": [
                    { "AttributeName": table.partition_key, "AttributeType": "S" },
                    { "AttributeName": table.sort_key, "AttributeType": "S" },
                ],
                "KeySchema": key_schema(&table.partition_key, Some(&table.sort_key)),
                "SSESpecification": encryption::table(),
                // A deleted row's tombstone expires once no older record can arrive.
                "TimeToLiveSpecification": {
                    "AttributeName": model::version::TOMBSTONE_ATTRIBUTE,
                    "Enabled": true,
                },
            },
        });
        suppress::keep(&mut resource, &[suppress::TABLE_KEY, suppress::INDEX_BACKUP]);
        resources.add(ids::index_table(&table.name), resource)?;
    }
    if config.reads_kinesis() {
        resources.add(ids::LEDGER_TABLE.to_owned(), ledger_table(&config.events.ledger_table))?;
    }
    for queue in stack.queues.iter().filter(|q| q.on_aws()) {
        resources.add(ids::queue(queue), queue_resource(&queue.name))?;
    }
    for (id, resource) in bucket::resources() {
        resources.add(id, resource)?;
    }
    // A rule names its bus by name, not by a `Ref` to it (which gives the
    // same name): moto's CloudFormation cannot create a rule whose bus is a
    // `Ref`, and the rehearsal creates this template there. `DependsOn`
    // keeps the order a `Ref` would.
    let bus_dependency: Vec<&str> = if stack.bus.is_default() {
        Vec::new()
    } else {
        resources.add(
            ids::BUS.to_owned(),
            json!({ "Type": "AWS::Events::EventBus", "Properties": { "Name": stack.bus.name } }),
        )?;
        vec![ids::BUS]
    };
    let reaper_queue = stack.queue(&QueuePurpose::ReaperDeadLetter);
    let mut reaper_rules = Vec::new();
    for rule in &stack.rules {
        let mut properties = json!({
            "Name": rule.name,
            "Description": format!("streamdex: {} events of table {}", rule.detail_type, rule.table),
            "EventBusName": stack.bus.name,
            "EventPattern": rule.pattern,
            "State": "ENABLED",
        });
        if rule.reaper {
            let mut target = json!({
                "Id": RULE_TARGET_ID,
                "Arn": { "Fn::GetAtt": [ids::function(FunctionRole::Reaper), "Arn"] },
                "RetryPolicy": {
                    "MaximumRetryAttempts": REAPER_TARGET_RETRIES,
                    "MaximumEventAgeInSeconds": REAPER_TARGET_MAX_AGE_SECONDS,
                },
            });
            if let Some(queue) = reaper_queue {
                target["DeadLetterConfig"] = json!({ "Arn": { "Fn::GetAtt": [ids::queue(queue), "Arn"] } });
            }
            properties["Targets"] = json!([target]);
            reaper_rules.push(rule);
            resources.add(
                ids::reaper_permission(rule),
                json!({
                    "Type": "AWS::Lambda::Permission",
                    "Properties": {
                        "Action": "lambda:InvokeFunction",
                        "FunctionName": { "Ref": ids::function(FunctionRole::Reaper) },
                        "Principal": "events.amazonaws.com",
                        "SourceArn": { "Fn::GetAtt": [ids::rule(rule), "Arn"] },
                    },
                }),
            )?;
        }
        let mut resource = json!({ "Type": "AWS::Events::Rule", "Properties": properties });
        if !bus_dependency.is_empty() {
            resource["DependsOn"] = json!(bus_dependency);
        }
        resources.add(ids::rule(rule), resource)?;
    }
    if let (Some(queue), false) = (reaper_queue, reaper_rules.is_empty()) {
        let sources: Vec<Json> = reaper_rules
            .iter()
            .map(|r| json!({ "Fn::GetAtt": [ids::rule(r), "Arn"] }))
            .collect();
        resources.add(
            ids::REAPER_DEAD_LETTER_POLICY.to_owned(),
            json!({
                "Type": "AWS::SQS::QueuePolicy",
                "Properties": {
                    "Queues": [{ "Ref": ids::queue(queue) }],
                    "PolicyDocument": {
                        "Version": "2012-10-17",
                        "Statement": [{
                            "Sid": "ReaperRulesDeadLetters",
                            "Effect": "Allow",
                            "Principal": { "Service": "events.amazonaws.com" },
                            "Action": "sqs:SendMessage",
                            "Resource": { "Fn::GetAtt": [ids::queue(queue), "Arn"] },
                            "Condition": { "ArnEquals": { "aws:SourceArn": sources } },
                        }],
                    },
                },
            }),
        )?;
    }
    for function in &stack.functions {
        for (id, resource) in function::resources(&stack, function, &inline_config) {
            resources.add(id, resource)?;
        }
    }
    resources.add(ids::KEY_POLICY.to_owned(), iam::key_policy(&stack.functions))?;
    for mapping in &stack.mappings {
        resources.add(
            ids::mapping(mapping.consumer, &mapping.table),
            event_source_mapping(mapping, stack.reads_kinesis(&mapping.table)),
        )?;
    }
    for (id, resource) in alarms::topic(&stack) {
        resources.add(id, resource)?;
    }
    for (id, alarm) in alarms::alarms(config, &stack) {
        resources.add(id, alarm)?;
    }
    resources.add(ids::DASHBOARD.to_owned(), dashboard::resource(config, &stack))?;
    let mut outputs = Map::new();
    for queue in stack.queues.iter().filter(|q| q.on_aws()) {
        outputs.insert(
            format!("{}Url", ids::queue(queue)),
            json!({ "Description": format!("URL of queue {}", queue.name), "Value": { "Ref": ids::queue(queue) } }),
        );
    }
    outputs.insert(
        "QuarantineBucketName".to_owned(),
        json!({
            "Description": "The quarantine's claim checks: records too large for a queue message",
            "Value": { "Ref": ids::QUARANTINE_BUCKET },
        }),
    );
    outputs.insert(
        "DashboardName".to_owned(),
        json!({ "Description": "The CloudWatch dashboard of the pipeline", "Value": { "Ref": ids::DASHBOARD } }),
    );
    outputs.insert(
        "AlarmTopicArn".to_owned(),
        json!({ "Description": "The SNS topic every alarm notifies", "Value": { "Ref": ids::ALARM_TOPIC } }),
    );
    for rule in stack.rules.iter().filter(|r| !r.reaper) {
        outputs.insert(
            format!("{}Arn", ids::rule(rule)),
            json!({
                "Description": format!("Rule {} ({} events): add your targets to it", rule.name, rule.detail_type),
                "Value": { "Fn::GetAtt": [ids::rule(rule), "Arn"] },
            }),
        );
    }
    Ok(json!({
        "AWSTemplateFormatVersion": "2010-09-09",
        "Transform": "AWS::Serverless-2016-10-31",
        "Description": format!(
            "streamdex {}: rendered by `streamdex template {file}`; edit the config, not this file",
            stack.namespace
        ),
        "Conditions": { ids::HAS_KMS_KEY: encryption::condition() },
        "Parameters": {
            ids::PARAM_KMS_KEY: encryption::parameter(),
            ids::PARAM_ALARM_ENDPOINT: {
                "Type": "String",
                "MinLength": 1,
                "Description": "Where alarms are sent: an email address (AlarmProtocol email), an HTTPS URL (https), an SQS queue or Lambda ARN, a phone number (sms)",
            },
            ids::PARAM_ALARM_PROTOCOL: {
                "Type": "String",
                "Default": "email",
                "AllowedValues": ["email", "email-json", "https", "sqs", "lambda", "sms"],
                "Description": "The SNS protocol of AlarmEndpoint",
            },
            ids::PARAM_ARCHITECTURE: {
                "Type": "String",
                "Default": ARCHITECTURES[0],
                "AllowedValues": ARCHITECTURES,
                "Description": "The functions' instruction set: what scripts/build-functions.sh built them for",
            },
        },
        "Resources": resources.0,
        "Outputs": outputs,
    }))
}

/// An SQS queue (every queue of the template is a last stop: dead letters,
/// failures, the quarantine), encrypted.
pub(crate) fn queue_resource(name: &str) -> Json {
    let mut properties = json!({ "QueueName": name, "MessageRetentionPeriod": QUEUE_RETENTION_SECONDS });
    encryption::queue(&mut properties);
    let mut resource = json!({ "Type": "AWS::SQS::Queue", "Properties": properties });
    suppress::keep(&mut resource, &[suppress::DEAD_LETTER_REDRIVE]);
    resource
}

fn key_schema(partition: &str, sort: Option<&str>) -> Json {
    let mut keys = vec![json!({ "AttributeName": partition, "KeyType": "HASH" })];
    if let Some(sort) = sort {
        keys.push(json!({ "AttributeName": sort, "KeyType": "RANGE" }));
    }
    Json::Array(keys)
}

/// A Kinesis data stream of a table's changes: on demand, encrypted with
/// the AWS-managed key, keeping records the configured hours.
fn kinesis_stream(stream: &crate::stack::KinesisStream) -> Json {
    json!({
        "Type": "AWS::Kinesis::Stream",
        "Properties": {
            "Name": stream.name,
            "RetentionPeriodHours": stream.retention_hours,
            "StreamModeDetails": { "StreamMode": "ON_DEMAND" },
            "StreamEncryption": { "EncryptionType": "KMS", "KeyId": "alias/aws/kinesis" },
        },
    })
}

/// The router's ledger of the changes it published from Kinesis
/// (`model::ledger`): keyed by item and version, entries expiring by TTL.
fn ledger_table(name: &str) -> Json {
    use model::ledger::{EXPIRES_ATTRIBUTE, ITEM_ATTRIBUTE, VERSION_ATTRIBUTE};
    let mut resource = json!({
        "Type": "AWS::DynamoDB::Table",
        "DeletionPolicy": "Delete",
        "UpdateReplacePolicy": "Delete",
        "Properties": {
            "TableName": name,
            "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": [
                { "AttributeName": ITEM_ATTRIBUTE, "AttributeType": "S" },
                { "AttributeName": VERSION_ATTRIBUTE, "AttributeType": "S" },
            ],
            "KeySchema": key_schema(ITEM_ATTRIBUTE, Some(VERSION_ATTRIBUTE)),
            "SSESpecification": encryption::table(),
            "TimeToLiveSpecification": { "AttributeName": EXPIRES_ATTRIBUTE, "Enabled": true },
        },
    });
    suppress::keep(&mut resource, &[suppress::TABLE_KEY, suppress::INDEX_BACKUP]);
    resource
}

/// The mapping of one consumer to a table's DynamoDB stream, or to the
/// Kinesis data stream it sends its changes to (`kinesis`).
fn event_source_mapping(mapping: &Mapping, kinesis: bool) -> Json {
    let settings = &mapping.settings;
    let source = if kinesis {
        json!({ "Fn::GetAtt": [ids::kinesis_stream(&mapping.table), "Arn"] })
    } else {
        json!({ "Fn::GetAtt": [ids::source_table(&mapping.table), "StreamArn"] })
    };
    let mut properties = json!({
        "EventSourceArn": source,
        "FunctionName": { "Ref": ids::function(FunctionRole::of(mapping.consumer)) },
        "StartingPosition": "TRIM_HORIZON",
        "BatchSize": settings.batch_size,
        "MaximumBatchingWindowInSeconds": settings.batching_window_seconds,
        "ParallelizationFactor": settings.parallelization_factor,
        "MaximumRetryAttempts": settings.maximum_retry_attempts,
        "MaximumRecordAgeInSeconds": settings.maximum_record_age_seconds,
        "BisectBatchOnFunctionError": settings.bisect_on_error,
        "FunctionResponseTypes": ["ReportBatchItemFailures"],
        // Lambda writes a batch it gives up on, whole, under `aws/lambda/`.
        "DestinationConfig": { "OnFailure": { "Destination": { "Fn::GetAtt": [ids::QUARANTINE_BUCKET, "Arn"] } } },
    });
    if !mapping.filters.is_empty() {
        // A Kinesis-read table's patterns are under the record's `data`
        // already (see `model::filter`).
        properties["FilterCriteria"] = json!({
            "Filters": mapping.filters.iter().map(|p| json!({ "Pattern": p.to_text() })).collect::<Vec<_>>(),
        });
    }
    json!({ "Type": "AWS::Lambda::EventSourceMapping", "Properties": properties })
}

/// The template as the committed file holds it: pretty JSON and a newline.
pub fn to_text(template: &Json) -> String {
    let mut text = serde_json::to_string_pretty(template).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod kinesis_tests;
#[cfg(test)]
mod tests;
