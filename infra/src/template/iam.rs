//! Least-privilege IAM: one role per function, each allowed only the
//! actions it calls, on only the resources it touches. No `*` action, no
//! `*` resource.
//!
//! - **stream-indexer**: reads the streams of the tables it consumes
//!   (`DescribeStream`, `GetRecords`, `GetShardIterator`, `ListStreams`);
//!   `UpdateItem` on tables with an edge set **only of the edge-set
//!   attributes** (`dynamodb:Attributes` ⊆ {keys, set, marker}, through
//!   `ForAllValues:StringEquals`, which DynamoDB requires to list the key
//!   attributes too) and never asking for other attributes back
//!   (`dynamodb:ReturnValues` NONE if present); a consistent `Query` of
//!   those tables (a node's partition, to restore its set);
//!   `BatchWriteItem` on the index tables; `SendMessage` to the quarantine
//!   and to its on-failure destination (Lambda sends there with the
//!   function's role); `PutObject` under its own prefix of the quarantine
//!   bucket (records too large for a message).
//! - **event-router**: reads the streams of the tables with routes;
//!   `PutEvents` on the bus; `SendMessage` to the quarantine and its
//!   on-failure destination; `PutObject` under its prefix of the bucket.
//! - **reaper**: `GetItem` and `Query` of the tables of `reap` routes,
//!   `Query` of their `target_index`, `BatchWriteItem` (the deletes) on them;
//!   `SendMessage` to its dead-letter queue (failed asynchronous invocations).
//! - for a table read from a Kinesis data stream: the consumers read that
//!   stream (`kinesis:` reads on it, `ListStreams` in the account); the
//!   indexer's node updates may name each member's version attribute (a
//!   pattern, `ForAllValues:StringLike`) and its rows are conditional
//!   `PutItem`s; the router reads and writes the ledger table
//!   (`BatchGetItem`, `BatchWriteItem`), the reaper queries it.
//! - every function: `CreateLogStream`/`PutLogEvents` on its own log group
//!   (the template creates it, with a retention); `Decrypt`, `DescribeKey`
//!   and `GenerateDataKey` on the `KmsKeyArn` key, only when one is given;
//!   X-Ray's own managed write policy (X-Ray has no resource-level
//!   permissions, so this is the one `*` resource, and it is AWS's policy,
//!   not ours).

use serde_json::{json, Value as Json};

use crate::stack::{FunctionRole, QueuePurpose, Stack};
use model::filter::Consumer;

use super::{encryption, ids};
use crate::stack::Function;

/// AWS's managed policy for sending X-Ray traces.
pub const XRAY_WRITE_POLICY: &str = "arn:${AWS::Partition}:iam::aws:policy/AWSXRayDaemonWriteAccess";

fn sub(arn: &str) -> Json {
    json!({ "Fn::Sub": arn })
}

fn table_arn(table: &str) -> Json {
    sub(&format!(
        "arn:${{AWS::Partition}}:dynamodb:${{AWS::Region}}:${{AWS::AccountId}}:table/{table}"
    ))
}

fn stream_arns(table: &str) -> Json {
    sub(&format!(
        "arn:${{AWS::Partition}}:dynamodb:${{AWS::Region}}:${{AWS::AccountId}}:table/{table}/stream/*"
    ))
}

fn statement(sid: &str, actions: &[&str], resources: Vec<Json>) -> Json {
    json!({ "Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resources })
}

fn queue_arn(stack: &Stack, purpose: &QueuePurpose) -> Option<Json> {
    stack
        .queue(purpose)
        .map(|q| json!({ "Fn::GetAtt": [ids::queue(q), "Arn"] }))
}

/// The statements of a function's policy: its own logs, what a consumer
/// of the streams needs, and what its own work needs.
pub fn statements(stack: &Stack, role: FunctionRole) -> Vec<Json> {
    let mut out = Vec::new();
    let log_group = json!({ "Fn::GetAtt": [ids::log_group(role), "Arn"] });
    out.push(statement(
        "OwnLogs",
        &["logs:CreateLogStream", "logs:PutLogEvents"],
        vec![log_group],
    ));
    match role {
        FunctionRole::Indexer => {
            consumer_statements(stack, role, Consumer::Indexer, &mut out);
            indexer_statements(stack, &mut out);
        }
        FunctionRole::Router => {
            consumer_statements(stack, role, Consumer::Router, &mut out);
            router_statements(stack, &mut out);
        }
        FunctionRole::Reaper => reaper_statements(stack, &mut out),
    }
    out
}

/// A consumer's: reading its streams (DynamoDB's or Kinesis'), and
/// quarantining records and failed batches.
fn consumer_statements(stack: &Stack, role: FunctionRole, consumer: Consumer, out: &mut Vec<Json>) {
    let (from_kinesis, from_dynamodb): (Vec<&str>, Vec<&str>) = stack
        .mappings
        .iter()
        .filter(|m| m.consumer == consumer)
        .map(|m| m.table.as_str())
        .partition(|t| stack.reads_kinesis(t));
    if !from_dynamodb.is_empty() {
        out.push(statement(
            "ReadStreams",
            &[
                "dynamodb:DescribeStream",
                "dynamodb:GetRecords",
                "dynamodb:GetShardIterator",
                "dynamodb:ListStreams",
            ],
            from_dynamodb.iter().map(|t| stream_arns(t)).collect(),
        ));
    }
    if !from_kinesis.is_empty() {
        out.push(statement(
            "ReadChangeStreams",
            &[
                "kinesis:DescribeStream",
                "kinesis:DescribeStreamSummary",
                "kinesis:GetRecords",
                "kinesis:GetShardIterator",
                "kinesis:ListShards",
            ],
            from_kinesis
                .iter()
                .map(|t| json!({ "Fn::GetAtt": [ids::kinesis_stream(t), "Arn"] }))
                .collect(),
        ));
        out.push(statement(
            "ListChangeStreams",
            &["kinesis:ListStreams"],
            vec![sub(
                "arn:${AWS::Partition}:kinesis:${AWS::Region}:${AWS::AccountId}:stream/*",
            )],
        ));
    }
    let queues: Vec<Json> = queue_arn(stack, &QueuePurpose::Quarantine).into_iter().collect();
    out.push(statement("Quarantine", &["sqs:SendMessage"], queues));
    // The claim checks under the function's prefix, and the batches its
    // mappings give up on, which Lambda writes as the function's role.
    out.push(statement(
        "QuarantineClaimsAndFailedBatches",
        &["s3:PutObject"],
        vec![
            super::bucket::consumer_objects(role.binary()),
            super::bucket::failed_batch_objects(),
        ],
    ));
    out.push(statement(
        "FailedBatchesBucket",
        &["s3:ListBucket"],
        vec![json!({ "Fn::GetAtt": [ids::QUARANTINE_BUCKET, "Arn"] })],
    ));
}

/// The indexer's: updating only the pipeline's attributes of nodes,
/// reading edges to restore a set, and writing index rows.
fn indexer_statements(stack: &Stack, out: &mut Vec<Json>) {
    for table in stack.source_tables.iter().filter(|t| t.target_index.is_some()) {
        let Some(set) = &table.edge_set else { continue };
        let mut attributes: Vec<&str> = table.key_attributes();
        attributes.push(&set.attribute);
        attributes.push(&set.complete_attribute);
        attributes.push(model::version::EDGE_MARK_ATTRIBUTE);
        // Read from Kinesis, each member's version has an attribute
        // of its own: named by a pattern.
        let member_versions = format!("{}*", model::version::MEMBER_VERSION_PREFIX);
        let only = if table.kinesis.is_some() {
            attributes.push(&member_versions);
            "ForAllValues:StringLike"
        } else {
            "ForAllValues:StringEquals"
        };
        out.push(json!({
            "Sid": format!("EdgeSetOnly{}", ids::pascal(&table.name)),
            "Effect": "Allow",
            "Action": ["dynamodb:UpdateItem"],
            "Resource": [table_arn(&table.name)],
            "Condition": {
                only: { "dynamodb:Attributes": attributes },
                "StringEqualsIfExists": { "dynamodb:ReturnValues": ["NONE"] },
            },
        }));
    }
    let restore: Vec<Json> = stack
        .source_tables
        .iter()
        .filter(|t| t.edge_set.is_some())
        .map(|t| table_arn(&t.name))
        .collect();
    if !restore.is_empty() {
        out.push(statement("RestoreSets", &["dynamodb:Query"], restore));
    }
    let indexes: Vec<Json> = stack.index_tables.iter().map(|t| table_arn(&t.name)).collect();
    if !indexes.is_empty() {
        // Read from Kinesis, a row is written only over an older
        // version: one conditional PutItem a row.
        let actions: &[&str] = if stack.ledger_table.is_some() {
            &["dynamodb:BatchWriteItem", "dynamodb:PutItem"]
        } else {
            &["dynamodb:BatchWriteItem"]
        };
        out.push(statement("IndexRows", actions, indexes));
    }
}

/// The router's: putting events on the bus, and its ledger.
fn router_statements(stack: &Stack, out: &mut Vec<Json>) {
    let bus = if stack.bus.is_default() {
        sub("arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:event-bus/default")
    } else {
        json!({ "Fn::GetAtt": [ids::BUS, "Arn"] })
    };
    out.push(statement("PutEvents", &["events:PutEvents"], vec![bus]));
    if let Some(ledger) = &stack.ledger_table {
        out.push(statement(
            "Ledger",
            &["dynamodb:BatchGetItem", "dynamodb:BatchWriteItem"],
            vec![table_arn(ledger)],
        ));
    }
}

/// The reaper's: reading nodes and edges of the tables it reaps, deleting
/// edges, its dead letters, and reading the ledger.
fn reaper_statements(stack: &Stack, out: &mut Vec<Json>) {
    let mut tables: Vec<&str> = stack
        .rules
        .iter()
        .filter(|r| r.reaper)
        .map(|r| r.table.as_str())
        .collect();
    tables.sort_unstable();
    tables.dedup();
    let mut reads = Vec::new();
    for table in &tables {
        reads.push(table_arn(table));
        if let Some(index) = stack
            .source_tables
            .iter()
            .find(|t| t.name == *table)
            .and_then(|t| t.target_index.as_ref())
        {
            reads.push(sub(&format!(
                "arn:${{AWS::Partition}}:dynamodb:${{AWS::Region}}:${{AWS::AccountId}}:table/{table}/index/{}",
                index.name
            )));
        }
    }
    out.push(statement(
        "ReadNodesAndEdges",
        &["dynamodb:GetItem", "dynamodb:Query"],
        reads,
    ));
    out.push(statement(
        "DeleteEdges",
        &["dynamodb:BatchWriteItem"],
        tables.iter().map(|t| table_arn(t)).collect(),
    ));
    if let Some(queue) = queue_arn(stack, &QueuePurpose::ReaperDeadLetter) {
        out.push(statement("DeadLetters", &["sqs:SendMessage"], vec![queue]));
    }
    if let Some(ledger) = &stack.ledger_table {
        out.push(statement("Ledger", &["dynamodb:Query"], vec![table_arn(ledger)]));
    }
}

/// The role of a function: assumable by Lambda, with its own inline policy.
pub fn role(stack: &Stack, role: FunctionRole) -> Json {
    json!({
        "Type": "AWS::IAM::Role",
        "Properties": {
            "Description": format!("streamdex {}: least privilege, generated from the config", role.binary()),
            "AssumeRolePolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [{
                    "Effect": "Allow",
                    "Principal": { "Service": "lambda.amazonaws.com" },
                    "Action": "sts:AssumeRole",
                }],
            },
            "ManagedPolicyArns": [sub(XRAY_WRITE_POLICY)],
            "Policies": [{
                "PolicyName": format!("streamdex-{}", role.binary()),
                "PolicyDocument": { "Version": "2012-10-17", "Statement": statements(stack, role) },
            }],
        },
    })
}

/// The policy that lets every function use the `KmsKeyArn` key: a resource
/// of its own that exists only when a key is given.
pub fn key_policy(functions: &[Function]) -> Json {
    json!({
        "Type": "AWS::IAM::Policy",
        "Condition": ids::HAS_KMS_KEY,
        "Properties": {
            "PolicyName": "streamdex-customer-key",
            "Roles": functions.iter().map(|f| json!({ "Ref": ids::role(f.role) })).collect::<Vec<_>>(),
            "PolicyDocument": { "Version": "2012-10-17", "Statement": [encryption::statement()] },
        },
    })
}
