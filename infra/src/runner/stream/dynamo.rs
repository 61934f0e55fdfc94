//! The stream port on DynamoDB Streams, with the AWS SDK. Records come back
//! in the Lambda shape (`eventSourceARN` added, `userIdentity` spelt
//! `type`/`principalId`), numbers as the stream sent them, the creation
//! time with its exact fraction (spliced in as text, never through f64).
//! With local TTL on ([`DynamoStreams::with_expiries`]), the REMOVE records
//! of its deletions get the TTL service's `userIdentity` (see
//! [`crate::runner::expiry`]).

use std::collections::HashMap;

use aws_config::SdkConfig;
use aws_sdk_dynamodbstreams::error::{ProvideErrorMetadata, SdkError};
use std::sync::Arc;

use aws_sdk_dynamodbstreams::types::{AttributeValue, Identity, OperationType, Record, ShardIteratorType};
use base64::Engine as _;
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::{json, Map, Value as Json};

use super::{Page, Position, ShardInfo, StreamError, StreamRecord, StreamSource};
use crate::runner::expiry::{key_text, Expiries};

/// DynamoDB Streams (and DescribeTable for the stream's ARN).
#[derive(Debug, Clone)]
pub struct DynamoStreams {
    dynamodb: aws_sdk_dynamodb::Client,
    streams: aws_sdk_dynamodbstreams::Client,
    expiries: Option<Arc<Expiries>>,
}

impl DynamoStreams {
    pub fn new(sdk: &SdkConfig) -> DynamoStreams {
        DynamoStreams {
            dynamodb: aws_sdk_dynamodb::Client::new(sdk),
            streams: aws_sdk_dynamodbstreams::Client::new(sdk),
            expiries: None,
        }
    }

    /// Marks the REMOVE records of local TTL's deletions as TTL deletions.
    pub fn with_expiries(mut self, expiries: Arc<Expiries>) -> DynamoStreams {
        self.expiries = Some(expiries);
        self
    }

    /// Gives `record` the TTL service's identity if it is the REMOVE of a local TTL deletion.
    fn mark_expiry(&self, stream: &str, record: &mut Record) {
        let Some(expiries) = &self.expiries else { return };
        if record.event_name != Some(OperationType::Remove) || record.user_identity.is_some() {
            return;
        }
        let (Some(table), Some(data)) = (model::record::table_from_arn(stream), &record.dynamodb) else {
            return;
        };
        let (Some(keys), Some(sequence_number)) = (&data.keys, &data.sequence_number) else {
            return;
        };
        let mut parts = Vec::new();
        for (name, value) in keys {
            let Ok(Json::Object(wire)) = wire_value(value) else {
                return;
            };
            let Some((kind, Json::String(text))) = wire.into_iter().next() else {
                return;
            };
            parts.push((name.clone(), kind, text));
        }
        let key = key_text(parts.iter().map(|(n, k, v)| (n.as_str(), k.as_str(), v.as_str())));
        let old = |attribute: &str| match data.old_image.as_ref().and_then(|image| image.get(attribute)) {
            Some(AttributeValue::N(text)) => Some(text.clone()),
            _ => None,
        };
        if expiries.claim(table, &key, sequence_number, old) {
            record.user_identity = Some(
                Identity::builder()
                    .r#type(model::ttl::IDENTITY_TYPE)
                    .principal_id(model::ttl::PRINCIPAL)
                    .build(),
            );
        }
    }
}

fn reason<E, R>(e: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    aws_kit::error::sdk_message(e)
}

impl StreamSource for DynamoStreams {
    fn stream_arn<'a>(&'a self, table: &'a str) -> BoxFuture<'a, Result<String, StreamError>> {
        async move {
            let output = self
                .dynamodb
                .describe_table()
                .table_name(table)
                .send()
                .await
                .map_err(|e| {
                    if e.code() == Some("ResourceNotFoundException") {
                        StreamError::NoTable {
                            table: table.to_owned(),
                        }
                    } else {
                        StreamError::Table {
                            table: table.to_owned(),
                            reason: reason(&e),
                        }
                    }
                })?;
            let description = output.table;
            let enabled = description
                .as_ref()
                .and_then(|t| t.stream_specification.as_ref())
                .is_some_and(|s| s.stream_enabled);
            match description.and_then(|t| t.latest_stream_arn) {
                Some(arn) if enabled => Ok(arn),
                _ => Err(StreamError::NoStream {
                    table: table.to_owned(),
                }),
            }
        }
        .boxed()
    }

    fn shards<'a>(&'a self, stream: &'a str) -> BoxFuture<'a, Result<Vec<ShardInfo>, StreamError>> {
        async move {
            let mut shards = Vec::new();
            let mut start: Option<String> = None;
            loop {
                let output = self
                    .streams
                    .describe_stream()
                    .stream_arn(stream)
                    .set_exclusive_start_shard_id(start.take())
                    .send()
                    .await
                    .map_err(|e| StreamError::Describe {
                        stream: stream.to_owned(),
                        reason: reason(&e),
                    })?;
                let Some(description) = output.stream_description else {
                    return Ok(shards);
                };
                for shard in description.shards.unwrap_or_default() {
                    let Some(id) = shard.shard_id else { continue };
                    shards.push(ShardInfo {
                        id,
                        parent: shard.parent_shard_id.filter(|p| !p.is_empty()),
                        closed: shard
                            .sequence_number_range
                            .is_some_and(|r| r.ending_sequence_number.is_some()),
                    });
                }
                match description.last_evaluated_shard_id {
                    Some(id) if !id.is_empty() => start = Some(id),
                    _ => return Ok(shards),
                }
            }
        }
        .boxed()
    }

    fn iterator<'a>(
        &'a self,
        stream: &'a str,
        shard: &'a str,
        position: &'a Position,
    ) -> BoxFuture<'a, Result<String, StreamError>> {
        async move {
            let request = self.streams.get_shard_iterator().stream_arn(stream).shard_id(shard);
            let request = match position {
                Position::TrimHorizon => request.shard_iterator_type(ShardIteratorType::TrimHorizon),
                Position::Latest => request.shard_iterator_type(ShardIteratorType::Latest),
                Position::After(seq) => request
                    .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                    .sequence_number(seq),
            };
            let failed = |reason: String| StreamError::Iterator {
                shard: shard.to_owned(),
                position: position.to_string(),
                reason,
            };
            let output = request.send().await.map_err(|e| failed(reason(&e)))?;
            output
                .shard_iterator
                .ok_or_else(|| failed("the answer has no iterator".to_owned()))
        }
        .boxed()
    }

    fn records<'a>(
        &'a self,
        stream: &'a str,
        shard: &'a str,
        iterator: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Page, StreamError>> {
        async move {
            let limit = i32::try_from(limit.clamp(1, 1000)).unwrap_or(1000);
            let output = self
                .streams
                .get_records()
                .shard_iterator(iterator)
                .limit(limit)
                .send()
                .await
                .map_err(|e| {
                    let status = e.raw_response().map(|r| r.status().as_u16());
                    let (shard, reason) = (shard.to_owned(), reason(&e));
                    match (e.code(), status) {
                        (Some("ExpiredIteratorException"), _) | (_, Some(500)) => {
                            StreamError::IteratorExpired { shard, reason }
                        }
                        (Some("TrimmedDataAccessException"), _) => StreamError::Trimmed { shard, reason },
                        _ => StreamError::Read { shard, reason },
                    }
                })?;
            let mut records = Vec::new();
            for mut record in output.records.unwrap_or_default() {
                self.mark_expiry(stream, &mut record);
                records.push(lambda_record(&record, stream).map_err(|reason| StreamError::Record {
                    shard: shard.to_owned(),
                    reason,
                })?);
            }
            Ok(Page {
                records,
                next: output.next_shard_iterator,
            })
        }
        .boxed()
    }
}

/// Why a GetRecords record (or one of its attribute values) has no Lambda shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamRecordError {
    #[error("a record without `dynamodb`")]
    NoStreamRecord,
    #[error("a record without a sequence number")]
    NoSequenceNumber,
    #[error("record {sequence_number}: no eventName")]
    NoEventName { sequence_number: String },
    /// An attribute value of a type this SDK version does not know.
    #[error("an attribute value of a type this version does not know")]
    UnknownType,
    /// A record whose images hold a value of such a type.
    #[error("record {sequence_number}: {}", StreamRecordError::UnknownType)]
    UnknownTypeIn { sequence_number: String },
}

/// A GetRecords record in the Lambda shape. Errors name the sequence number.
pub fn lambda_record(record: &Record, stream_arn: &str) -> Result<StreamRecord, StreamRecordError> {
    let stream = record.dynamodb.as_ref().ok_or(StreamRecordError::NoStreamRecord)?;
    let sequence_number = stream
        .sequence_number
        .clone()
        .ok_or(StreamRecordError::NoSequenceNumber)?;
    let event_name = record
        .event_name
        .as_ref()
        .map(|n| n.as_str().to_owned())
        .ok_or_else(|| StreamRecordError::NoEventName {
            sequence_number: sequence_number.clone(),
        })?;
    let image = |image: &HashMap<String, AttributeValue>| -> Result<Json, StreamRecordError> {
        image
            .iter()
            .map(|(k, v)| {
                let value = wire_value(v).map_err(|_| StreamRecordError::UnknownTypeIn {
                    sequence_number: sequence_number.clone(),
                })?;
                Ok((k.clone(), value))
            })
            .collect::<Result<Map<_, _>, StreamRecordError>>()
            .map(Json::Object)
    };
    let mut dynamodb = Map::new();
    if let Some(keys) = &stream.keys {
        dynamodb.insert("Keys".into(), image(keys)?);
    }
    if let Some(new) = &stream.new_image {
        dynamodb.insert("NewImage".into(), image(new)?);
    }
    if let Some(old) = &stream.old_image {
        dynamodb.insert("OldImage".into(), image(old)?);
    }
    dynamodb.insert("SequenceNumber".into(), json!(sequence_number));
    if let Some(size) = stream.size_bytes {
        dynamodb.insert("SizeBytes".into(), json!(size));
    }
    if let Some(view) = &stream.stream_view_type {
        dynamodb.insert("StreamViewType".into(), json!(view.as_str()));
    }
    let mut dynamodb = Json::Object(dynamodb).to_string();
    let mut created_ms = None;
    if let Some(time) = &stream.approximate_creation_date_time {
        let mut text = time.secs().to_string();
        if time.subsec_nanos() != 0 {
            let fraction = format!("{:09}", time.subsec_nanos());
            text = format!("{text}.{}", fraction.trim_end_matches('0'));
        }
        dynamodb.insert_str(1, &format!("\"ApproximateCreationDateTime\":{text},"));
        created_ms = u64::try_from(time.secs()).ok().map(|s| {
            s.saturating_mul(1000)
                .saturating_add(u64::from(time.subsec_nanos() / 1_000_000))
        });
    }
    let mut outer = Map::new();
    let mut put = |name: &str, value: Option<&str>| {
        if let Some(v) = value {
            outer.insert(name.to_owned(), json!(v));
        }
    };
    put("eventID", record.event_id.as_deref());
    put("eventName", Some(&event_name));
    put("eventVersion", record.event_version.as_deref());
    put("eventSource", record.event_source.as_deref());
    put("awsRegion", record.aws_region.as_deref());
    if !stream_arn.is_empty() {
        put("eventSourceARN", Some(stream_arn));
    }
    if let Some(identity) = &record.user_identity {
        outer.insert(
            "userIdentity".into(),
            json!({ "type": identity.r#type, "principalId": identity.principal_id }),
        );
    }
    let mut json = Json::Object(outer).to_string();
    json.insert_str(json.len() - 1, &format!(",\"dynamodb\":{dynamodb}"));
    Ok(StreamRecord {
        sequence_number,
        created_ms,
        json,
    })
}

/// One attribute value in DynamoDB JSON (numbers as strings, binary as base64).
pub fn wire_value(value: &AttributeValue) -> Result<Json, StreamRecordError> {
    let b64 =
        |b: &aws_sdk_dynamodbstreams::primitives::Blob| base64::engine::general_purpose::STANDARD.encode(b.as_ref());
    Ok(match value {
        AttributeValue::S(s) => json!({ "S": s }),
        AttributeValue::N(n) => json!({ "N": n }),
        AttributeValue::B(b) => json!({ "B": b64(b) }),
        AttributeValue::Bool(b) => json!({ "BOOL": b }),
        AttributeValue::Null(b) => json!({ "NULL": b }),
        AttributeValue::Ss(s) => json!({ "SS": s }),
        AttributeValue::Ns(n) => json!({ "NS": n }),
        AttributeValue::Bs(b) => json!({ "BS": b.iter().map(b64).collect::<Vec<_>>() }),
        AttributeValue::L(l) => json!({ "L": l.iter().map(wire_value).collect::<Result<Vec<_>, _>>()? }),
        AttributeValue::M(m) => {
            let map = m
                .iter()
                .map(|(k, v)| Ok((k.clone(), wire_value(v)?)))
                .collect::<Result<Map<_, _>, StreamRecordError>>()?;
            json!({ "M": map })
        }
        _ => return Err(StreamRecordError::UnknownType),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodbstreams::primitives::DateTime;
    use aws_sdk_dynamodbstreams::types::{Identity, OperationType, StreamRecord as Sr};

    #[test]
    fn records_come_in_the_lambda_shape_with_exact_numbers_and_time() {
        let keys = HashMap::from([("source".to_owned(), AttributeValue::S("GOAL-1".into()))]);
        let mut old = keys.clone();
        old.insert(
            "n".to_owned(),
            AttributeValue::N("12345678901234567890.123456789012345678".into()),
        );
        let record = Record::builder()
            .event_id("e1")
            .event_name(OperationType::Remove)
            .user_identity(
                Identity::builder()
                    .r#type("Service")
                    .principal_id("dynamodb.amazonaws.com")
                    .build(),
            )
            .dynamodb(
                Sr::builder()
                    .approximate_creation_date_time(DateTime::from_secs_and_nanos(1_763_733_010, 482_913_000))
                    .set_keys(Some(keys))
                    .set_old_image(Some(old))
                    .sequence_number("100")
                    .build(),
            )
            .build();
        let arn = "arn:aws:dynamodb:us-east-1:123456789012:table/records/stream/2026";
        let wire = lambda_record(&record, arn).unwrap();
        assert_eq!(wire.created_ms, Some(1_763_733_010_482));
        assert!(wire.json.contains("\"ApproximateCreationDateTime\":1763733010.482913,"));
        let payload = format!("{{\"Records\":[{}]}}", wire.json);
        let parsed = model::record::parse_batch(payload.as_bytes()).unwrap();
        let change = parsed[0].record.as_ref().unwrap();
        assert_eq!(change.table.as_deref(), Some("records"));
        assert!(change.ttl_expiry, "the TTL identity reads in the Lambda spelling");
        let json: Json = serde_json::from_str(&wire.json).unwrap();
        assert_eq!(
            json["dynamodb"]["OldImage"]["n"]["N"],
            "12345678901234567890.123456789012345678"
        );
        assert!(lambda_record(&Record::builder().build(), arn).is_err());
    }
}
