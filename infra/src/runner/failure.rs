//! The on-failure destination: when a mapping gives up on records (retries
//! or record age ran out), it writes what Lambda writes to an S3
//! destination: the batch's metadata (shard, sequence range, arrival
//! times, size, condition) and the whole event (`payload`), under
//! `aws/lambda/MAPPING/SHARD/...` in the quarantine's bucket
//! ([`model::record::FailedBatch`] reads it back; `replay` replays it).

use std::sync::Mutex;

use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::{json, Value as Json};

use super::mapping::Condition;
use aws_kit::clock::rfc3339;
use model::record::failed_batch_key;

/// What Lambda sends for a batch it gave up on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureNotice {
    pub condition: Condition,
    /// The function (consumer) that gave up.
    pub function: String,
    pub table: String,
    pub stream_arn: String,
    pub shard_id: String,
    pub start_sequence_number: String,
    pub end_sequence_number: String,
    pub first_created_ms: Option<u64>,
    pub last_created_ms: Option<u64>,
    pub batch_size: usize,
    /// Invocations that failed before giving up.
    pub attempts: u32,
    pub timestamp_ms: u64,
    /// The event the records were (or would have been) invoked with.
    pub payload: String,
}

impl FailureNotice {
    /// The object's body, in Lambda's on-failure record shape for streams
    /// written to S3 (the event, escaped, in `payload`).
    pub fn to_json(&self) -> Json {
        let time = |ms: Option<u64>| ms.map(rfc3339);
        json!({
            "requestContext": {
                "requestId": format!("streamdex-{}-{}", self.shard_id, self.start_sequence_number),
                "functionArn": self.function,
                "condition": self.condition.as_str(),
                "approximateInvokeCount": self.attempts,
            },
            "responseContext": {
                "statusCode": 200,
                "executedVersion": "$LATEST",
                "functionError": if self.condition == Condition::RetryAttemptsExhausted { Json::from("Unhandled") } else { Json::Null },
            },
            "version": "1.0",
            "timestamp": rfc3339(self.timestamp_ms),
            "DDBStreamBatchInfo": {
                "shardId": self.shard_id,
                "startSequenceNumber": self.start_sequence_number,
                "endSequenceNumber": self.end_sequence_number,
                "approximateArrivalOfFirstRecord": time(self.first_created_ms),
                "approximateArrivalOfLastRecord": time(self.last_created_ms),
                "batchSize": self.batch_size,
                "streamArn": self.stream_arn,
            },
            "payload": self.payload,
        })
    }
}

/// Where notices go.
pub trait OnFailure: Send + Sync {
    fn send<'a>(&'a self, notice: &'a FailureNotice) -> BoxFuture<'a, Result<(), DestinationError>>;
}

/// The notice could not be delivered: the records are kept and the
/// delivery tried again (nothing is dropped without a notice).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sending the on-failure notice for shard {shard} ({start}..{end}) to {destination}: {reason}")]
pub struct DestinationError {
    pub destination: String,
    pub shard: String,
    pub start: String,
    pub end: String,
    pub reason: String,
}

/// An S3 bucket as the destination, for one mapping (`mapping` names it
/// in the keys, as Lambda names a mapping by its UUID).
#[derive(Debug, Clone)]
pub struct S3OnFailure {
    pub client: aws_sdk_s3::Client,
    pub bucket: String,
    pub mapping: String,
}

impl OnFailure for S3OnFailure {
    fn send<'a>(&'a self, notice: &'a FailureNotice) -> BoxFuture<'a, Result<(), DestinationError>> {
        async move {
            let suffix = format!("{:016x}", fastrand::u64(..));
            let key = failed_batch_key(&self.mapping, &notice.shard_id, &rfc3339(notice.timestamp_ms), &suffix);
            self.client
                .put_object()
                .bucket(&self.bucket)
                .key(&key)
                .content_type("application/json")
                .body(notice.to_json().to_string().into_bytes().into())
                .send()
                .await
                .map(|_| ())
                .map_err(|e| DestinationError {
                    destination: format!("s3://{}/{key}", self.bucket),
                    shard: notice.shard_id.clone(),
                    start: notice.start_sequence_number.clone(),
                    end: notice.end_sequence_number.clone(),
                    reason: aws_kit::error::sdk_message(&e),
                })
        }
        .boxed()
    }
}

/// Notices kept in memory (tests); can be told to fail.
#[derive(Debug, Default)]
pub struct MemoryOnFailure {
    notices: Mutex<Vec<FailureNotice>>,
    failing: Mutex<bool>,
}

impl MemoryOnFailure {
    pub fn new() -> MemoryOnFailure {
        MemoryOnFailure::default()
    }

    pub fn notices(&self) -> Vec<FailureNotice> {
        self.notices.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether deliveries fail.
    pub fn set_failing(&self, failing: bool) {
        *self.failing.lock().unwrap_or_else(|p| p.into_inner()) = failing;
    }
}

impl OnFailure for MemoryOnFailure {
    fn send<'a>(&'a self, notice: &'a FailureNotice) -> BoxFuture<'a, Result<(), DestinationError>> {
        let result = if *self.failing.lock().unwrap_or_else(|p| p.into_inner()) {
            Err(DestinationError {
                destination: "memory".to_owned(),
                shard: notice.shard_id.clone(),
                start: notice.start_sequence_number.clone(),
                end: notice.end_sequence_number.clone(),
                reason: "failing on purpose".to_owned(),
            })
        } else {
            self.notices
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(notice.clone());
            Ok(())
        };
        async move { result }.boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_has_lambdas_shape() {
        let notice = FailureNotice {
            condition: Condition::RecordAgeExceeded,
            function: "streamdex-stream-indexer".to_owned(),
            table: "records".to_owned(),
            stream_arn: "arn:s".to_owned(),
            shard_id: "shard-1".to_owned(),
            start_sequence_number: "100".to_owned(),
            end_sequence_number: "300".to_owned(),
            first_created_ms: Some(1_000),
            last_created_ms: None,
            batch_size: 3,
            attempts: 0,
            timestamp_ms: 2_000,
            payload: r#"{"Records":[]}"#.to_owned(),
        };
        let json = notice.to_json();
        assert_eq!(json["requestContext"]["condition"], "RecordAgeExceeded");
        let info = &json["DDBStreamBatchInfo"];
        assert_eq!(info["shardId"], "shard-1");
        assert_eq!(info["startSequenceNumber"], "100");
        assert_eq!(info["endSequenceNumber"], "300");
        assert_eq!(info["batchSize"], 3);
        assert_eq!(info["approximateArrivalOfFirstRecord"], "1970-01-01T00:00:01.000Z");
        assert_eq!(info["streamArn"], "arn:s");
        assert_eq!(json["timestamp"], "1970-01-01T00:00:02.000Z");
        // What `replay` reads back: the event, whole.
        let read = model::record::read_failed_batch(json.to_string().as_bytes()).unwrap();
        assert_eq!(read.payload.as_deref(), Some(r#"{"Records":[]}"#));
        assert_eq!(read.condition, "RecordAgeExceeded");
    }
}
