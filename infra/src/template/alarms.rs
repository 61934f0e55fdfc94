//! CloudWatch alarms, all notifying the one SNS topic (whose subscription
//! is the template's parameters):
//!
//! - `IteratorAge` (AWS/Lambda, Maximum over a minute) of each consumer
//!   function, at `[alarms] iterator_age_warn_seconds` (warn: 5 minutes in
//!   a row) and `iterator_age_page_seconds` (page: 1 minute), both well
//!   before the stream's 24 h retention;
//! - `Errors` of each function (Sum ≥ 1 in 5 minutes): the functions report
//!   only failures a retry may fix (poison is quarantined), so any error is
//!   a deployment or service problem;
//! - the depth of every queue that holds trouble (`ApproximateNumberOfMessagesVisible`
//!   ≥ 1): the quarantine, the reaper rules' dead letters;
//! - batches the event source mappings gave up on: S3 `PutRequests` under
//!   `aws/lambda/` in the quarantine bucket (its request metrics), ≥ 1;
//! - `FailedInvocations` (AWS/Events) of each rule with a target (the reaper rules).
//!
//! Missing data (no traffic) is not breaching.
//!
//! The topic ([`topic`]) is encrypted; its subscription's failed deliveries
//! go to a dead-letter queue of their own.

use serde_json::{json, Value as Json};

use crate::stack::{FunctionRole, Queue, QueuePurpose, Stack};
use model::config::Config;
use model::record::FAILED_BATCH_PREFIX;

use super::{encryption, ids};

/// Minutes the iterator age must stay over the warn threshold before warning.
pub const WARN_MINUTES: u32 = 5;

/// The topic every alarm notifies, its subscription (the template's
/// parameters) and the subscription's dead-letter queue with the policy
/// that lets the topic send to it.
pub fn topic(stack: &Stack) -> Vec<(String, Json)> {
    let dead_letters = json!({ "Fn::GetAtt": [ids::ALARM_DEAD_LETTER_QUEUE, "Arn"] });
    vec![
        (
            ids::ALARM_TOPIC.to_owned(),
            json!({
                "Type": "AWS::SNS::Topic",
                "Properties": {
                    "TopicName": format!("{}-alarms", stack.namespace),
                    "KmsMasterKeyId": encryption::topic(),
                },
            }),
        ),
        (
            ids::ALARM_SUBSCRIPTION.to_owned(),
            json!({
                "Type": "AWS::SNS::Subscription",
                "Properties": {
                    "TopicArn": { "Ref": ids::ALARM_TOPIC },
                    "Protocol": { "Ref": ids::PARAM_ALARM_PROTOCOL },
                    "Endpoint": { "Ref": ids::PARAM_ALARM_ENDPOINT },
                    "RedrivePolicy": { "deadLetterTargetArn": dead_letters },
                },
            }),
        ),
        (
            ids::ALARM_DEAD_LETTER_QUEUE.to_owned(),
            super::queue_resource(&format!("{}-alarm-dead-letters", stack.namespace)),
        ),
        (
            ids::ALARM_DEAD_LETTER_POLICY.to_owned(),
            json!({
                "Type": "AWS::SQS::QueuePolicy",
                "Properties": {
                    "Queues": [{ "Ref": ids::ALARM_DEAD_LETTER_QUEUE }],
                    "PolicyDocument": {
                        "Version": "2012-10-17",
                        "Statement": [{
                            "Sid": "AlarmTopicDeadLetters",
                            "Effect": "Allow",
                            "Principal": { "Service": "sns.amazonaws.com" },
                            "Action": "sqs:SendMessage",
                            "Resource": dead_letters,
                            "Condition": { "ArnEquals": { "aws:SourceArn": { "Ref": ids::ALARM_TOPIC } } },
                        }],
                    },
                },
            }),
        ),
    ]
}

/// One alarm: `(logical id, resource)`.
pub type Alarm = (String, Json);

#[allow(clippy::too_many_arguments)]
fn alarm(
    name: String,
    description: String,
    namespace: &str,
    metric: &str,
    dimensions: Json,
    statistic: &str,
    period: u32,
    periods: u32,
    threshold: u64,
) -> Json {
    json!({
        "Type": "AWS::CloudWatch::Alarm",
        "Properties": {
            "AlarmName": name,
            "AlarmDescription": description,
            "Namespace": namespace,
            "MetricName": metric,
            "Dimensions": dimensions,
            "Statistic": statistic,
            "Period": period,
            "EvaluationPeriods": periods,
            "DatapointsToAlarm": periods,
            "Threshold": threshold,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "TreatMissingData": "notBreaching",
            "AlarmActions": [{ "Ref": ids::ALARM_TOPIC }],
            "OKActions": [{ "Ref": ids::ALARM_TOPIC }],
        },
    })
}

fn function_dimension(role: FunctionRole) -> Json {
    json!([{ "Name": "FunctionName", "Value": { "Ref": ids::function(role) } }])
}

fn queue_alarm(stack: &Stack, queue: &Queue) -> Option<Alarm> {
    let what = match &queue.purpose {
        QueuePurpose::Quarantine => {
            "records were quarantined (they can never succeed as they are): read the queue for the reasons".to_owned()
        }
        QueuePurpose::ReaperDeadLetter => {
            "events could not be delivered to the reaper: their nodes' edges were not deleted".to_owned()
        }
        QueuePurpose::RuleTarget(_) => return None,
    };
    Some((
        format!("{}Depth", ids::queue(queue)),
        alarm(
            format!("{}-depth", queue.name),
            format!("streamdex {}: {what}", stack.namespace),
            "AWS/SQS",
            "ApproximateNumberOfMessagesVisible",
            json!([{ "Name": "QueueName", "Value": { "Fn::GetAtt": [ids::queue(queue), "QueueName"] } }]),
            "Maximum",
            300,
            1,
            1,
        ),
    ))
}

/// Every alarm of the stack.
pub fn alarms(config: &Config, stack: &Stack) -> Vec<Alarm> {
    let mut out = Vec::new();
    let warn = config.alarms.iterator_age_warn_seconds;
    let page = config.alarms.iterator_age_page_seconds;
    for function in &stack.functions {
        let id = ids::function(function.role);
        if function.role != FunctionRole::Reaper {
            out.push((
                format!("{id}IteratorAgeWarn"),
                alarm(
                    format!("{}-iterator-age-warn", function.name),
                    format!(
                        "streamdex {}: WARN: {} is {warn} s or more behind its streams for {WARN_MINUTES} minutes \
                         (records are lost after 24 h)",
                        stack.namespace, function.name
                    ),
                    "AWS/Lambda",
                    "IteratorAge",
                    function_dimension(function.role),
                    "Maximum",
                    60,
                    WARN_MINUTES,
                    warn * 1000,
                ),
            ));
            out.push((
                format!("{id}IteratorAgePage"),
                alarm(
                    format!("{}-iterator-age-page", function.name),
                    format!(
                        "streamdex {}: PAGE: {} is {page} s or more behind its streams \
                         (records are lost after 24 h)",
                        stack.namespace, function.name
                    ),
                    "AWS/Lambda",
                    "IteratorAge",
                    function_dimension(function.role),
                    "Maximum",
                    60,
                    1,
                    page * 1000,
                ),
            ));
        }
        out.push((
            format!("{id}Errors"),
            alarm(
                format!("{}-errors", function.name),
                format!(
                    "streamdex {}: {} failed invocations (a deployment or service problem: poison records are quarantined, not errors)",
                    stack.namespace, function.name
                ),
                "AWS/Lambda",
                "Errors",
                function_dimension(function.role),
                "Sum",
                300,
                1,
                1,
            ),
        ));
    }
    out.extend(stack.queues.iter().filter_map(|q| queue_alarm(stack, q)));
    out.push((
        "FailedBatches".to_owned(),
        alarm(
            format!("{}-failed-batches", stack.namespace),
            format!(
                "streamdex {}: a consumer's retries or record age ran out for a batch: its records were skipped \
                 and written whole to the quarantine bucket under {FAILED_BATCH_PREFIX} \
                 (`streamdex quarantine failures` lists them; `streamdex replay` replays one)",
                stack.namespace
            ),
            "AWS/S3",
            "PutRequests",
            json!([
                { "Name": "BucketName", "Value": { "Ref": ids::QUARANTINE_BUCKET } },
                { "Name": "FilterId", "Value": super::bucket::FAILED_BATCH_METRICS },
            ]),
            "Sum",
            300,
            1,
            1,
        ),
    ));
    for rule in stack.rules.iter().filter(|r| r.reaper) {
        let mut dimensions = vec![json!({ "Name": "RuleName", "Value": rule.name })];
        if !stack.bus.is_default() {
            dimensions.insert(0, json!({ "Name": "EventBusName", "Value": stack.bus.name }));
        }
        out.push((
            format!("{}FailedInvocations", ids::rule(rule)),
            alarm(
                format!("{}-{}-failed-invocations", stack.namespace, rule.name),
                format!(
                    "streamdex {}: rule {} could not invoke the reaper (see the dead-letter queue)",
                    stack.namespace, rule.name
                ),
                "AWS/Events",
                "FailedInvocations",
                Json::Array(dimensions),
                "Sum",
                300,
                1,
                1,
            ),
        ));
    }
    out
}
