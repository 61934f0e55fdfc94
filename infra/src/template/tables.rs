//! The template's tables: the source tables (with their Kinesis data
//! stream, when they send their changes to one), the index tables and the
//! router's ledger.

use serde_json::{json, Value as Json};

use super::{encryption, ids, suppress, Resources, TemplateError};
use crate::stack::{IndexTable, KinesisStream, SourceTable};

/// Adds a source table (retained on stack deletion: it holds your data),
/// and the Kinesis data stream it sends its changes to, if it does.
pub(super) fn add_source_table(table: &SourceTable, resources: &mut Resources) -> Result<(), TemplateError> {
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
    Ok(())
}

/// An index table: derived data, deleted with the stack (`rebuild`
/// restores it), its tombstones expiring by TTL.
pub(super) fn index_table(table: &IndexTable) -> Json {
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
    resource
}

/// A Kinesis data stream of a table's changes: on demand, encrypted with
/// the AWS-managed key, keeping records the configured hours.
fn kinesis_stream(stream: &KinesisStream) -> Json {
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
pub(super) fn ledger_table(name: &str) -> Json {
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

pub(super) fn key_schema(partition: &str, sort: Option<&str>) -> Json {
    let mut keys = vec![json!({ "AttributeName": partition, "KeyType": "HASH" })];
    if let Some(sort) = sort {
        keys.push(json!({ "AttributeName": sort, "KeyType": "RANGE" }));
    }
    Json::Array(keys)
}
