//! The quarantine's claim-check bucket: the whole of every quarantined
//! record too large for a queue message. Private (every public access
//! blocked, owner-enforced objects, TLS only), encrypted, versioned, and
//! objects expire a day after the queue's messages that name them.

use serde_json::{json, Value as Json};

use super::{encryption, ids, suppress};
use crate::stack::QUEUE_RETENTION_SECONDS;

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

/// Where a consumer's function may write: its own prefix (`stream-indexer/*`).
pub fn consumer_objects(binary: &str) -> Json {
    json!({ "Fn::Sub": format!("${{{}.Arn}}/{binary}/*", ids::QUARANTINE_BUCKET) })
}
