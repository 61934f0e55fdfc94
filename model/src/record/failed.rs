//! A failed batch as Lambda writes it to an S3 on-failure destination:
//! the invocation record (`requestContext`, `responseContext`, `version`,
//! `timestamp`, `DDBStreamBatchInfo`) and, in `payload`, the whole event the
//! function was invoked with, as an escaped JSON string (an embedded object
//! is taken too). Objects are keyed
//! `aws/lambda/<mapping UUID>/<shard>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<UUID>`.
//! Replaying the payload applies the batch that aged out of the stream.

use serde::Deserialize;
use serde_json::Value as Json;

/// Where Lambda writes failed batches in the bucket.
pub const FAILED_BATCH_PREFIX: &str = "aws/lambda/";

/// The key of a failed batch of mapping `mapping` on `shard`, written at
/// `timestamp` (RFC 3339, UTC), with a unique `suffix`.
pub fn failed_batch_key(mapping: &str, shard: &str, timestamp: &str, suffix: &str) -> String {
    // YYYY-MM-DDTHH:MM:SS... → YYYY/MM/DD and YYYY-MM-DDTHH.MM.SS
    let date = timestamp.get(..10).unwrap_or("0000-00-00");
    let time = timestamp.get(..19).unwrap_or("0000-00-00T00:00:00").replace(':', ".");
    format!(
        "{FAILED_BATCH_PREFIX}{mapping}/{shard}/{}/{time}-{suffix}",
        date.replace('-', "/")
    )
}

/// What a failed batch's record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedBatch {
    /// `RetryAttemptsExhausted` or `RecordAgeExceeded`.
    pub condition: String,
    pub timestamp: String,
    pub stream_arn: String,
    pub shard_id: String,
    pub start_sequence_number: String,
    pub end_sequence_number: String,
    pub batch_size: u64,
    /// The event the function was invoked with (a Lambda event's JSON), if
    /// the record carries it (S3 destinations do; SQS and SNS do not).
    pub payload: Option<String>,
}

/// Why a failed batch's record was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a failed batch's record: {0}")]
pub struct FailedBatchError(String);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RequestContext {
    #[serde(default)]
    condition: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BatchInfo {
    #[serde(default)]
    shard_id: String,
    #[serde(default)]
    start_sequence_number: String,
    #[serde(default)]
    end_sequence_number: String,
    #[serde(default)]
    batch_size: u64,
    #[serde(default)]
    stream_arn: String,
}

#[derive(Deserialize)]
struct Record {
    #[serde(rename = "requestContext")]
    request_context: Option<RequestContext>,
    #[serde(default)]
    timestamp: String,
    #[serde(rename = "DDBStreamBatchInfo")]
    batch: BatchInfo,
    payload: Option<Json>,
}

/// Whether `bytes` look like a failed batch's record (an object with
/// `DDBStreamBatchInfo`), without reading it all.
pub fn is_failed_batch(bytes: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Probe<'a> {
        #[serde(rename = "DDBStreamBatchInfo", borrow)]
        batch: Option<&'a serde_json::value::RawValue>,
    }
    serde_json::from_slice::<Probe<'_>>(bytes).is_ok_and(|p| p.batch.is_some())
}

/// Reads a failed batch's record.
pub fn read_failed_batch(bytes: &[u8]) -> Result<FailedBatch, FailedBatchError> {
    let record: Record = serde_json::from_slice(bytes).map_err(|e| FailedBatchError(e.to_string()))?;
    let payload = match record.payload {
        None | Some(Json::Null) => None,
        Some(Json::String(text)) => Some(text),
        Some(object @ Json::Object(_)) => Some(object.to_string()),
        Some(other) => {
            return Err(FailedBatchError(format!(
                "its payload is {other}, not the event's JSON"
            )))
        }
    };
    Ok(FailedBatch {
        condition: record.request_context.map(|c| c.condition).unwrap_or_default(),
        timestamp: record.timestamp,
        stream_arn: record.batch.stream_arn,
        shard_id: record.batch.shard_id,
        start_sequence_number: record.batch.start_sequence_number,
        end_sequence_number: record.batch.end_sequence_number,
        batch_size: record.batch.batch_size,
        payload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AWS's documented example, with a real payload in place of `<Whole Event>`.
    fn documented(payload: &str) -> String {
        format!(
            r#"{{
    "requestContext": {{
        "requestId": "316aa6d0-8154-xmpl-9af7-85d5f4a6bc81",
        "functionArn": "arn:aws:lambda:us-east-2:123456789012:function:myfunction",
        "condition": "RetryAttemptsExhausted",
        "approximateInvokeCount": 1
    }},
    "responseContext": {{ "statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled" }},
    "version": "1.0",
    "timestamp": "2019-11-14T00:13:49.717Z",
    "DDBStreamBatchInfo": {{
        "shardId": "shardId-00000001573689847184-864758bb",
        "startSequenceNumber": "800000000003126276362",
        "endSequenceNumber": "800000000003126276362",
        "approximateArrivalOfFirstRecord": "2019-11-14T00:13:19Z",
        "approximateArrivalOfLastRecord": "2019-11-14T00:13:19Z",
        "batchSize": 1,
        "streamArn": "arn:aws:dynamodb:us-east-2:123456789012:table/mytable/stream/2019-11-14T00:04:06.388"
    }},
    "payload": {payload}
}}"#
        )
    }

    const EVENT: &str = r#"{"Records":[{"eventName":"INSERT","dynamodb":{"SequenceNumber":"800000000003126276362"}}]}"#;

    #[test]
    fn the_documented_record_reads_with_its_payload_as_a_string_or_an_object() {
        let as_string = documented(&serde_json::to_string(EVENT).unwrap());
        let batch = read_failed_batch(as_string.as_bytes()).unwrap();
        assert!(is_failed_batch(as_string.as_bytes()));
        assert_eq!(batch.condition, "RetryAttemptsExhausted");
        assert_eq!(batch.shard_id, "shardId-00000001573689847184-864758bb");
        assert_eq!(
            (batch.start_sequence_number.as_str(), batch.batch_size),
            ("800000000003126276362", 1)
        );
        assert_eq!(batch.payload.as_deref(), Some(EVENT));
        let as_object = documented(EVENT);
        let payload = read_failed_batch(as_object.as_bytes()).unwrap().payload.unwrap();
        assert_eq!(
            serde_json::from_str::<Json>(&payload).unwrap(),
            serde_json::from_str::<Json>(EVENT).unwrap()
        );
    }

    #[test]
    fn a_record_without_a_payload_reads_and_other_documents_are_not_failed_batches() {
        let no_payload = documented("null");
        assert_eq!(read_failed_batch(no_payload.as_bytes()).unwrap().payload, None);
        assert!(!is_failed_batch(EVENT.as_bytes()));
        assert!(!is_failed_batch(b"not json"));
        assert!(read_failed_batch(documented("7").as_bytes()).is_err());
    }

    #[test]
    fn keys_follow_lambdas_layout() {
        let key = failed_batch_key("uuid", "shard-1", "2019-11-14T00:13:49.717Z", "r");
        assert_eq!(key, "aws/lambda/uuid/shard-1/2019/11/14/2019-11-14T00.13.49-r");
    }
}
