//! The quarantine's claim-check bucket: the whole of every quarantined
//! record too large for a queue message, and every batch an event source
//! mapping gives up on (Lambda writes it whole under `aws/lambda/`). Private (every public access
//! blocked, owner-enforced objects, TLS only), encrypted, versioned, and
//! objects expire a day after the queue's messages that name them.

use serde_json::{json, Value as Json};

use super::{encryption, ids, suppress};
use crate::stack::QUEUE_RETENTION_SECONDS;
use model::record::FAILED_BATCH_PREFIX;

/// Days an object is kept: one more than a queue keeps the message that names it.
pub const OBJECT_DAYS: u32 = QUEUE_RETENTION_SECONDS / 86_400 + 1;

/// The bucket and its policy, by logical id.
pub fn resources() -> Vec<(String, Json)> {
    let mut bucket = json!({
        "Type": "AWS::S3::Bucket",
        "DeletionPolicy": "Retain",
        "UpdateReplacePolicy": "Retain",
        "Properties": {
            "BucketEncryption": encryption::bucket(),
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": true,
                "BlockPublicPolicy": true,
                "IgnorePublicAcls": true,
                "RestrictPublicBuckets": true,
            },
            "OwnershipControls": { "Rules": [{ "ObjectOwnership": "BucketOwnerEnforced" }] },
            "VersioningConfiguration": { "Status": "Enabled" },
            // Request metrics of the failed batches' prefix: their alarm's figure.
            "MetricsConfigurations": [{ "Id": FAILED_BATCH_METRICS, "Prefix": FAILED_BATCH_PREFIX }],
            "LifecycleConfiguration": {
                "Rules": [{
                    "Id": "expire-with-the-queue",
                    "Status": "Enabled",
                    "ExpirationInDays": OBJECT_DAYS,
                    "NoncurrentVersionExpiration": { "NoncurrentDays": 1 },
                }],
            },
        },
    });
    suppress::keep(&mut bucket, &[suppress::BUCKET_LOGGING]);
    let arn = json!({ "Fn::GetAtt": [ids::QUARANTINE_BUCKET, "Arn"] });
    let objects = json!({ "Fn::Sub": format!("${{{}.Arn}}/*", ids::QUARANTINE_BUCKET) });
    let policy = json!({
        "Type": "AWS::S3::BucketPolicy",
        "Properties": {
            "Bucket": { "Ref": ids::QUARANTINE_BUCKET },
            "PolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [{
                    "Sid": "TlsOnly",
                    "Effect": "Deny",
                    "Principal": { "AWS": "*" },
                    "Action": "s3:*",
                    "Resource": [arn, objects],
                    "Condition": { "Bool": { "aws:SecureTransport": "false" } },
                }],
            },
        },
    });
    vec![
        (ids::QUARANTINE_BUCKET.to_owned(), bucket),
        (ids::QUARANTINE_BUCKET_POLICY.to_owned(), policy),
    ]
}

/// Where Lambda writes the batches a mapping gives up on (`aws/lambda/*`).
pub fn failed_batch_objects() -> Json {
    json!({ "Fn::Sub": format!("${{{}.Arn}}/{FAILED_BATCH_PREFIX}*", ids::QUARANTINE_BUCKET) })
}

/// The id of the bucket's request metrics of failed batches (`PutRequests`
/// under `aws/lambda/`), which their alarm watches.
pub const FAILED_BATCH_METRICS: &str = "failed-batches";

/// Where a consumer's function may write: its own prefix (`stream-indexer/*`).
pub fn consumer_objects(binary: &str) -> Json {
    json!({ "Fn::Sub": format!("${{{}.Arn}}/{binary}/*", ids::QUARANTINE_BUCKET) })
}
