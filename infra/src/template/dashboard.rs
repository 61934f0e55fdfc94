//! The CloudWatch dashboard: one page of the pipeline's health, from the
//! metrics Lambda, SQS and EventBridge keep and the ones the functions log
//! as EMF lines (`model::metrics`, namespace `streamdex`, dimension
//! `Function`):
//!
//! - iterator age of each consumer, with its alarms' warn and page lines;
//! - records in, and what the indexer wrote (rows, members);
//! - records quarantined, batches the mappings gave up on (written whole to
//!   the quarantine bucket), and the depth of the queues that hold trouble;
//! - events published, retried and refused (and, for a table read from
//!   Kinesis, the repeats not published again and the changes noted in the
//!   ledger), and the reaper rules' failed deliveries;
//! - the reaper's deletions;
//! - errors and duration (p99 and maximum) of every function.
//!
//! The body is JSON in a string; `${AWS::Region}` and `${QuarantineBucket}`
//! (the bucket's name) are its substitutions.

use serde_json::{json, Value as Json};

use crate::stack::{FunctionRole, QueuePurpose, Stack};
use model::config::Config;
use model::metrics::{FUNCTION_DIMENSION, NAMESPACE};

/// The EMF metrics the dashboard shows, by the function that logs them.
pub const INDEXER_METRICS: [&str; 6] = [
    "Records",
    "RowsPut",
    "RowsDeleted",
    "MembersAdded",
    "MembersRemoved",
    "Quarantined",
];
pub const ROUTER_METRICS: [&str; 5] = [
    "Records",
    "EventsPublished",
    "EventsRetried",
    "EventsRefused",
    "Quarantined",
];
pub const REAPER_METRICS: [&str; 2] = ["NodesReaped", "EdgesDeleted"];
/// The router's, shown when a table is read from Kinesis: changes delivered
/// again whose events it did not publish again,
pub const ROUTER_REPEATS: &str = "Repeats";
/// and changes noted in the ledger table (an item written each).
pub const ROUTER_LEDGER_NOTES: &str = "LedgerNotes";

/// Widgets per row, and each one's size in the dashboard's grid (24 wide).
const WIDTH: u32 = 12;
const HEIGHT: u32 = 6;

/// The dashboard resource.
pub fn resource(config: &Config, stack: &Stack) -> Json {
    let body = json!({ "widgets": widgets(config, stack) });
    json!({
        "Type": "AWS::CloudWatch::Dashboard",
        "Properties": {
            "DashboardName": stack.namespace,
            "DashboardBody": { "Fn::Sub": body.to_string() },
        },
    })
}

fn function_name(stack: &Stack, role: FunctionRole) -> Option<&str> {
    stack.functions.iter().find(|f| f.role == role).map(|f| f.name.as_str())
}

/// One `streamdex` metric line of a graph: `[namespace, metric, dimension, function, options]`.
fn emf(metric: &str, function: &str, label: String) -> Json {
    json!([NAMESPACE, metric, FUNCTION_DIMENSION, function, { "stat": "Sum", "label": label }])
}

fn graph(title: &str, metrics: Vec<Json>, stat: &str, period: u32, extra: Json) -> Json {
    let mut properties = json!({
        "title": title,
        "region": "${AWS::Region}",
        "view": "timeSeries",
        "stacked": false,
        "stat": stat,
        "period": period,
        "metrics": metrics,
    });
    if let (Some(p), Json::Object(extra)) = (properties.as_object_mut(), extra) {
        p.extend(extra);
    }
    json!({ "type": "metric", "width": WIDTH, "height": HEIGHT, "properties": properties })
}

fn widgets(config: &Config, stack: &Stack) -> Vec<Json> {
    let indexer = function_name(stack, FunctionRole::Indexer);
    let router = function_name(stack, FunctionRole::Router);
    let reaper = function_name(stack, FunctionRole::Reaper);
    let consumers: Vec<&str> = [indexer, router].into_iter().flatten().collect();
    let mut out = Vec::new();

    let warn_ms = config.alarms.iterator_age_warn_seconds.saturating_mul(1000);
    let page_ms = config.alarms.iterator_age_page_seconds.saturating_mul(1000);
    out.push(graph(
        "Iterator age (ms): how far each consumer is behind its streams",
        consumers
            .iter()
            .map(|f| json!(["AWS/Lambda", "IteratorAge", "FunctionName", f, { "stat": "Maximum" }]))
            .collect(),
        "Maximum",
        60,
        json!({ "annotations": { "horizontal": [
            { "label": "warn alarm", "value": warn_ms, "color": "#ff7f0e" },
            { "label": "page alarm", "value": page_ms, "color": "#d62728" },
        ] } }),
    ));

    let mut records = Vec::new();
    for f in &consumers {
        records.push(emf("Records", f, format!("{f}: records in")));
    }
    if let Some(f) = indexer {
        for metric in &INDEXER_METRICS[1..5] {
            records.push(emf(metric, f, format!("{f}: {metric}")));
        }
    }
    out.push(graph(
        "Records in, and what the indexer wrote",
        records,
        "Sum",
        300,
        json!({}),
    ));

    let mut trouble: Vec<Json> = consumers
        .iter()
        .map(|f| emf("Quarantined", f, format!("{f}: quarantined")))
        .collect();
    for queue in &stack.queues {
        if matches!(queue.purpose, QueuePurpose::RuleTarget(_)) || !queue.on_aws() {
            continue;
        }
        trouble.push(json!([
            "AWS/SQS",
            "ApproximateNumberOfMessagesVisible",
            "QueueName",
            queue.name,
            { "stat": "Maximum", "label": format!("{} (depth)", queue.name) },
        ]));
    }
    trouble.push(json!([
        "AWS/S3",
        "PutRequests",
        "BucketName",
        "${QuarantineBucket}",
        "FilterId",
        super::bucket::FAILED_BATCH_METRICS,
        { "stat": "Sum", "label": "batches given up on (kept whole in the quarantine bucket)" },
    ]));
    out.push(graph(
        "Quarantined records, batches given up on, and the queues that hold trouble",
        trouble,
        "Sum",
        300,
        json!({}),
    ));

    let mut events = Vec::new();
    if let Some(f) = router {
        for metric in &ROUTER_METRICS[1..4] {
            events.push(emf(metric, f, format!("{f}: {metric}")));
        }
        if config.reads_kinesis() {
            events.push(emf(ROUTER_REPEATS, f, format!("{f}: repeats not published again")));
            events.push(emf(ROUTER_LEDGER_NOTES, f, format!("{f}: changes noted in the ledger")));
        }
    }
    for rule in stack.rules.iter().filter(|r| r.reaper) {
        let mut line = vec![json!("AWS/Events"), json!("FailedInvocations")];
        if !stack.bus.is_default() {
            line.extend([json!("EventBusName"), json!(stack.bus.name)]);
        }
        line.extend([
            json!("RuleName"),
            json!(rule.name),
            json!({ "stat": "Sum", "label": format!("rule {}: failed deliveries", rule.name) }),
        ]);
        events.push(Json::Array(line));
    }
    out.push(graph("Events published and failed", events, "Sum", 300, json!({})));

    if let Some(f) = reaper {
        out.push(graph(
            "The reaper: expired nodes reaped, edges deleted",
            REAPER_METRICS.iter().map(|m| emf(m, f, format!("{f}: {m}"))).collect(),
            "Sum",
            300,
            json!({}),
        ));
    }

    let mut health = Vec::new();
    for function in &stack.functions {
        let f = function.name.as_str();
        health.push(json!(["AWS/Lambda", "Errors", "FunctionName", f, { "stat": "Sum", "label": format!("{f}: errors"), "yAxis": "right" }]));
        health.push(json!(["AWS/Lambda", "Duration", "FunctionName", f, { "stat": "p99", "label": format!("{f}: duration p99 (ms)") }]));
        health.push(json!(["AWS/Lambda", "Duration", "FunctionName", f, { "stat": "Maximum", "label": format!("{f}: duration max (ms)") }]));
    }
    out.push(graph("Errors and duration", health, "Sum", 300, json!({})));

    // Lay the widgets out two to a row.
    for (i, widget) in out.iter_mut().enumerate() {
        let i = u32::try_from(i).unwrap_or(0);
        widget["x"] = json!((i % 2) * WIDTH);
        widget["y"] = json!((i / 2) * HEIGHT);
    }
    out
}

#[cfg(test)]
mod tests;
