//! Change records in the shape Lambda delivers them: the JSON of a Lambda
//! DynamoDB event (`{"Records": [...]}`), as `model::record::parse_batch`
//! reads it back. Used by the in-memory store's stream, the local runner and
//! the tests, wherever a record has to travel as Lambda would send it.

use base64::Engine as _;

use crate::config::Precision;
use crate::record::{Typed, ViewType};
use crate::value::Attrs;
use crate::version::Version;
use crate::ChangeRecord;

/// The stream ARN the memory store's records carry.
pub fn stream_arn(table: &str) -> String {
    format!("arn:aws:dynamodb:local:000000000000:table/{table}/stream/memory")
}

/// A stream record in the Lambda event's shape (`eventSourceARN`,
/// `dynamodb.NewImage` in DynamoDB JSON, ...), as `parse_batch` reads it.
pub fn lambda_record<I: Attrs>(record: &ChangeRecord<I>) -> serde_json::Value {
    let json = |image: &I| serde_json::json!(image.to_image());
    let mut dynamodb = serde_json::Map::new();
    dynamodb.insert("Keys".into(), json(&record.keys));
    if let Some(new) = &record.new {
        dynamodb.insert("NewImage".into(), json(new));
    }
    if let Some(old) = &record.old {
        dynamodb.insert("OldImage".into(), json(old));
    }
    dynamodb.insert("SequenceNumber".into(), record.sequence_number.clone().into());
    if let Some(size) = record.size_bytes {
        dynamodb.insert("SizeBytes".into(), size.into());
    }
    if let Some(created) = record.created {
        // Whole seconds, as Lambda sends them; with a fraction (a change
        // read from Kinesis), exactly: decimal seconds in a string, which
        // `parse_batch` reads as it reads a number (never through a float).
        let created = match created.nanos {
            0 => created.seconds.into(),
            nanos => format!("{}.{nanos:09}", created.seconds).into(),
        };
        dynamodb.insert("ApproximateCreationDateTime".into(), created);
    }
    dynamodb.insert(
        "StreamViewType".into(),
        record.view_type.unwrap_or(ViewType::NewAndOldImages).as_str().into(),
    );
    let mut out = serde_json::Map::new();
    if let Some(id) = &record.event_id {
        out.insert("eventID".into(), id.clone().into());
    }
    out.insert("eventName".into(), record.kind.as_str().into());
    out.insert("eventVersion".into(), "1.1".into());
    out.insert("eventSource".into(), "aws:dynamodb".into());
    out.insert("awsRegion".into(), "local".into());
    if record.ttl_expiry {
        out.insert(
            "userIdentity".into(),
            serde_json::json!({"type": "Service", "principalId": "dynamodb.amazonaws.com"}),
        );
    }
    out.insert("dynamodb".into(), dynamodb.into());
    let arn = match (&record.source_arn, &record.table) {
        (Some(arn), _) => Some(arn.to_string()),
        (None, table) => table.as_deref().map(stream_arn),
    };
    if let Some(arn) = arn {
        out.insert("eventSourceARN".into(), arn.into());
    }
    out.into()
}

/// A Lambda DynamoDB event (`{"Records": [...]}`) of these records, as bytes.
pub fn lambda_event<'a>(records: impl IntoIterator<Item = &'a ChangeRecord>) -> Vec<u8> {
    let records: Vec<serde_json::Value> = records.into_iter().map(lambda_record).collect();
    serde_json::json!({ "Records": records }).to_string().into_bytes()
}

/// A record made in process renders its JSON in the Lambda shape.
impl<I: Attrs> Typed for ChangeRecord<I> {
    fn lambda_json(&self) -> String {
        lambda_record(self).to_string()
    }
}

/// A change as DynamoDB writes it to a Kinesis data stream: the Lambda
/// shape's fields without `SequenceNumber` and `StreamViewType`, with
/// `tableName`, `recordFormat`, and `ApproximateCreationDateTime` in
/// `precision` (whole microseconds or milliseconds since 1970). A record
/// without a creation time gets none.
pub fn kinesis_change<I: Attrs>(record: &ChangeRecord<I>, precision: Precision) -> serde_json::Value {
    let mut change = lambda_record(record);
    if let Some(object) = change.as_object_mut() {
        for field in ["eventVersion", "eventSourceARN"] {
            object.remove(field);
        }
        object.insert("recordFormat".into(), "application/json".into());
        object.insert("tableName".into(), record.table.as_deref().unwrap_or_default().into());
        object.entry("userIdentity").or_insert(serde_json::Value::Null);
        if let Some(dynamodb) = object.get_mut("dynamodb").and_then(serde_json::Value::as_object_mut) {
            dynamodb.remove("SequenceNumber");
            dynamodb.remove("StreamViewType");
            dynamodb.remove("ApproximateCreationDateTime");
            // A whole number (u64: exact, never a float).
            let units = record
                .created
                .and_then(|c| Version::of_created(c, precision).ok())
                .and_then(|v| v.to_string().parse::<u64>().ok());
            if let Some(units) = units {
                dynamodb.insert("ApproximateCreationDateTime".into(), units.into());
            }
        }
    }
    change
}

/// The Kinesis stream ARN the local runner and the tests give records.
pub fn kinesis_stream_arn(stream: &str) -> String {
    format!("arn:aws:kinesis:local:000000000000:stream/{stream}")
}

/// One record of a Lambda Kinesis event: `data` (a change's JSON) under
/// `sequence_number` of the stream `stream_arn`.
pub fn kinesis_record(data: &str, sequence_number: &str, stream_arn: &str) -> serde_json::Value {
    serde_json::json!({
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": "streamdex",
            "sequenceNumber": sequence_number,
            "data": base64::engine::general_purpose::STANDARD.encode(data),
        },
        "eventSource": crate::record::kinesis::KINESIS_EVENT_SOURCE,
        "eventVersion": "1.0",
        "eventID": format!("shardId-000000000000:{sequence_number}"),
        "eventName": "aws:kinesis:record",
        "awsRegion": "local",
        "eventSourceARN": stream_arn,
    })
}

/// A Lambda Kinesis event of these changes, each with its Kinesis
/// sequence number, in `precision`.
pub fn kinesis_event<'a>(
    records: impl IntoIterator<Item = (&'a ChangeRecord, String)>,
    precision: Precision,
    stream_arn: &str,
) -> Vec<u8> {
    let records: Vec<serde_json::Value> = records
        .into_iter()
        .map(|(record, sequence)| kinesis_record(&kinesis_change(record, precision).to_string(), &sequence, stream_arn))
        .collect();
    serde_json::json!({ "Records": records }).to_string().into_bytes()
}
