//! Encryption at rest, and the optional customer key.
//!
//! Everything that holds data is encrypted whether or not a key is given:
//! DynamoDB tables (always, with an AWS owned key), SQS queues (SSE-SQS),
//! the SNS topic (the AWS managed `alias/aws/sns` key), CloudWatch logs
//! (always, by the service), the quarantine bucket (SSE-S3). The `KmsKeyArn` parameter, when given,
//! switches all of them, and the functions' environment, to that customer
//! managed key; the functions' roles may then use it ([`statement`]).

use serde_json::{json, Value as Json};

use super::ids;

/// The `KmsKeyArn` parameter.
pub fn parameter() -> Json {
    json!({
        "Type": "String",
        "Default": "",
        "AllowedPattern": "^(|arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[0-9a-f-]+)$",
        "Description": "Optional: the ARN of a customer managed KMS key that encrypts the tables, queues, topic, \
                        logs and the functions' environment; empty for the AWS owned and managed keys",
    })
}

/// The condition [`ids::HAS_KMS_KEY`].
pub fn condition() -> Json {
    json!({ "Fn::Not": [{ "Fn::Equals": [{ "Ref": ids::PARAM_KMS_KEY }, ""] }] })
}

/// `then` when a key was given, else `otherwise`.
fn with_key(then: Json, otherwise: Json) -> Json {
    json!({ "Fn::If": [ids::HAS_KMS_KEY, then, otherwise] })
}

fn key() -> Json {
    json!({ "Ref": ids::PARAM_KMS_KEY })
}

fn no_value() -> Json {
    json!({ "Ref": "AWS::NoValue" })
}

/// A table's `SSESpecification`.
pub fn table() -> Json {
    with_key(
        json!({ "SSEEnabled": true, "SSEType": "KMS", "KMSMasterKeyId": key() }),
        json!({ "SSEEnabled": false }),
    )
}

/// Adds a queue's encryption to its properties.
pub fn queue(properties: &mut Json) {
    properties["KmsMasterKeyId"] = with_key(key(), no_value());
    properties["SqsManagedSseEnabled"] = with_key(no_value(), json!(true));
}

/// A bucket's `BucketEncryption`: SSE-S3, or SSE-KMS with the key.
pub fn bucket() -> Json {
    json!({
        "ServerSideEncryptionConfiguration": [{
            "BucketKeyEnabled": true,
            "ServerSideEncryptionByDefault": with_key(
                json!({ "SSEAlgorithm": "aws:kms", "KMSMasterKeyID": key() }),
                json!({ "SSEAlgorithm": "AES256" }),
            ),
        }],
    })
}

/// The topic's `KmsMasterKeyId`.
pub fn topic() -> Json {
    with_key(key(), json!("alias/aws/sns"))
}

/// A log group's or a function's `KmsKeyId`/`KmsKeyArn`: the key, or the service's own.
pub fn optional_key() -> Json {
    with_key(key(), no_value())
}

/// The statement that lets a function use the customer key (in a policy
/// that exists only when one is given: [`super::iam::key_policy`]).
pub fn statement() -> Json {
    json!({
        "Sid": "CustomerKey",
        "Effect": "Allow",
        "Action": ["kms:Decrypt", "kms:DescribeKey", "kms:GenerateDataKey"],
        "Resource": [key()],
    })
}
