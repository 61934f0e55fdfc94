//! A function's resources: its log group, role, the function itself (with
//! X-Ray tracing and the config inline) and, for the asynchronously invoked
//! reaper, its retry policy and on-failure destination (the reaper's
//! dead-letter queue).

use serde_json::{json, Map, Value as Json};

use super::suppress::{self, Kept};
use super::{encryption, iam, ids, CODE_DIR, CODE_ZIP, LOG_RETENTION_DAYS, MEMORY_MB, TIMEOUT_SECONDS};
use crate::stack::{Function, FunctionRole, QueuePurpose, Stack};

/// Times Lambda retries a failed asynchronous invocation of the reaper
/// before it goes to the dead-letter queue (AWS's default and maximum).
pub const REAPER_ASYNC_RETRIES: u32 = 2;

/// How long Lambda keeps retrying a reaper invocation (its maximum, 6 h).
pub const REAPER_ASYNC_MAX_AGE_SECONDS: u32 = 6 * 60 * 60;

/// The resources of `function`, by logical id.
pub fn resources(stack: &Stack, function: &Function, inline_config: &str) -> Vec<(String, Json)> {
    let role = function.role;
    let mut log_group = json!({
        "Type": "AWS::Logs::LogGroup",
        "DeletionPolicy": "Delete",
        "UpdateReplacePolicy": "Delete",
        "Properties": {
            "LogGroupName": format!("/aws/lambda/{}", function.name),
            "RetentionInDays": LOG_RETENTION_DAYS,
            "KmsKeyId": encryption::optional_key(),
        },
    });
    suppress::keep(&mut log_group, &[suppress::LOG_KEY]);

    let mut variables = Map::new();
    variables.insert(
        aws_kit::lambda::ENV_CONFIG.to_owned(),
        Json::String(inline_config.to_owned()),
    );
    if role != FunctionRole::Reaper {
        if let Some(queue) = stack.queue(&QueuePurpose::Quarantine) {
            variables.insert(
                aws_kit::lambda::ENV_QUARANTINE_URL.to_owned(),
                json!({ "Ref": ids::queue(queue) }),
            );
        }
        variables.insert(
            aws_kit::lambda::ENV_QUARANTINE_BUCKET.to_owned(),
            json!({ "Ref": ids::QUARANTINE_BUCKET }),
        );
    }
    let properties = json!({
        "FunctionName": function.name,
        "Description": format!("streamdex {}", role.binary()),
        "CodeUri": format!("{CODE_DIR}/{}/{CODE_ZIP}", role.binary()),
        "Handler": "bootstrap",
        "Runtime": "provided.al2023",
        "Architectures": [{ "Ref": ids::PARAM_ARCHITECTURE }],
        "MemorySize": MEMORY_MB,
        "Timeout": TIMEOUT_SECONDS,
        "Tracing": "Active",
        "Role": { "Fn::GetAtt": [ids::role(role), "Arn"] },
        "Environment": { "Variables": variables },
        "KmsKeyArn": encryption::optional_key(),
    });
    let dead_letters = stack.queue(&QueuePurpose::ReaperDeadLetter);
    let kept: &[Kept] = match role {
        FunctionRole::Reaper => &[
            suppress::REAPER_DLQ,
            suppress::VPC,
            suppress::REAPER_CONCURRENCY,
            suppress::ENVIRONMENT_KEY,
        ],
        _ => &[
            suppress::STREAM_DLQ,
            suppress::VPC,
            suppress::STREAM_CONCURRENCY,
            suppress::ENVIRONMENT_KEY,
        ],
    };
    let mut resource = json!({
        "Type": "AWS::Serverless::Function",
        "DependsOn": [ids::log_group(role)],
        "Properties": properties,
    });
    suppress::keep(&mut resource, kept);

    let mut out = vec![
        (ids::log_group(role), log_group),
        (ids::role(role), iam::role(stack, role)),
        (ids::function(role), resource),
    ];
    if let (FunctionRole::Reaper, Some(queue)) = (role, dead_letters) {
        out.push((
            ids::REAPER_INVOKE_CONFIG.to_owned(),
            json!({
                "Type": "AWS::Lambda::EventInvokeConfig",
                "Properties": {
                    "FunctionName": { "Ref": ids::function(role) },
                    "Qualifier": "$LATEST",
                    "MaximumRetryAttempts": REAPER_ASYNC_RETRIES,
                    "MaximumEventAgeInSeconds": REAPER_ASYNC_MAX_AGE_SECONDS,
                    "DestinationConfig": {
                        "OnFailure": { "Destination": { "Fn::GetAtt": [ids::queue(queue), "Arn"] } },
                    },
                },
            }),
        ));
    }
    out
}
