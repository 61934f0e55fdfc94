//! Change records in the shape Lambda delivers them: the JSON of a Lambda
//! DynamoDB event (`{"Records": [...]}`), as `model::record::parse_batch`
//! reads it back. Used by the in-memory store's stream, the local runner and
//! the tests, wherever a record has to travel as Lambda would send it.

use crate::record::{Typed, ViewType};
use crate::value::Attrs;
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
        dynamodb.insert("ApproximateCreationDateTime".into(), created.seconds.into());
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
