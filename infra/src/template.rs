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
mod outputs;
mod parameters;
mod rules;
pub mod suppress;
mod tables;

use std::collections::BTreeMap;

use model::config::Config;
use serde_json::{json, Value as Json};

use crate::stack::{FunctionRole, Mapping, Stack, QUEUE_RETENTION_SECONDS};

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
        tables::add_source_table(table, &mut resources)?;
    }
    for table in &stack.index_tables {
        resources.add(ids::index_table(&table.name), tables::index_table(table))?;
    }
    if config.reads_kinesis() {
        resources.add(
            ids::LEDGER_TABLE.to_owned(),
            tables::ledger_table(&config.events.ledger_table),
        )?;
    }
    for queue in stack.queues.iter().filter(|q| q.on_aws()) {
        resources.add(ids::queue(queue), queue_resource(&queue.name))?;
    }
    for (id, resource) in bucket::resources() {
        resources.add(id, resource)?;
    }
    rules::add_bus_and_rules(&stack, &mut resources)?;
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
    Ok(json!({
        "AWSTemplateFormatVersion": "2010-09-09",
        "Transform": "AWS::Serverless-2016-10-31",
        "Description": format!(
            "streamdex {}: rendered by `streamdex template {file}`; edit the config, not this file",
            stack.namespace
        ),
        "Conditions": { ids::HAS_KMS_KEY: encryption::condition() },
        "Parameters": parameters::parameters(),
        "Resources": resources.0,
        "Outputs": outputs::outputs(&stack),
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
