//! The security judges' findings the template keeps on purpose, each with
//! the reason a reviewer would want, written into the resource's metadata
//! where checkov and cfn-lint read them.

use serde_json::{json, Value as Json};

/// A finding kept on purpose: the judge's check id and why.
pub struct Kept {
    pub check: &'static str,
    pub reason: &'static str,
}

/// checkov: stream consumers have no function-level dead-letter queue.
pub const STREAM_DLQ: Kept = Kept {
    check: "CKV_AWS_116",
    reason: "invoked synchronously by a stream event source mapping, whose on-failure destination is the \
             dead-letter queue; a function DLQ applies only to asynchronous invocations",
};
/// checkov: the reaper's failures go to a destination, not a function DLQ.
pub const REAPER_DLQ: Kept = Kept {
    check: "CKV_AWS_116",
    reason: "failed asynchronous invocations go to the reaper's dead-letter queue through its \
             EventInvokeConfig on-failure destination, which keeps the error with the event",
};
/// checkov: no VPC.
pub const VPC: Kept = Kept {
    check: "CKV_AWS_117",
    reason: "calls only DynamoDB, EventBridge and SQS through their public AWS endpoints and serves nothing; \
             a VPC would add NAT or endpoints and protect no resource",
};
/// checkov: no reserved concurrency on a stream consumer.
pub const STREAM_CONCURRENCY: Kept = Kept {
    check: "CKV_AWS_115",
    reason: "concurrency is bounded by the stream's shards times ParallelizationFactor; a reserved limit \
             below that throttles the stream and grows the iterator age",
};
/// checkov: the environment is not encrypted with a customer key by default.
pub const ENVIRONMENT_KEY: Kept = Kept {
    check: "CKV_AWS_173",
    reason: "the environment holds only the config, no secret; it is encrypted with the KmsKeyArn \
             parameter's key when one is given, else with Lambda's own key",
};
/// checkov: log groups without a customer key by default.
pub const LOG_KEY: Kept = Kept {
    check: "CKV_AWS_158",
    reason: "CloudWatch Logs always encrypts at rest; the KmsKeyArn parameter's key is used when one is given",
};
/// checkov: tables without a customer key by default.
pub const TABLE_KEY: Kept = Kept {
    check: "CKV_AWS_119",
    reason: "DynamoDB always encrypts at rest; the KmsKeyArn parameter's key is used when one is given",
};
/// checkov: index tables without point-in-time recovery.
pub const INDEX_BACKUP: Kept = Kept {
    check: "CKV_AWS_28",
    reason: "derived data: `streamdex rebuild` recomputes the whole table from the source tables, \
             which have point-in-time recovery",
};
/// cfn-lint-serverless: a dead-letter queue with no redrive policy of its own.
pub const DEAD_LETTER_REDRIVE: Kept = Kept {
    check: "ES6000",
    reason: "this queue is itself the last stop (a dead-letter, on-failure or quarantine queue); \
             its messages are kept 14 days and redriven by streamdex",
};

/// Writes `kept` into `resource`'s metadata for checkov (`CKV_*`) and cfn-lint (the others).
pub fn keep(resource: &mut Json, kept: &[Kept]) {
    let (checkov, lint): (Vec<&Kept>, Vec<&Kept>) = kept.iter().partition(|k| k.check.starts_with("CKV"));
    if !checkov.is_empty() {
        resource["Metadata"]["checkov"]["skip"] = checkov
            .iter()
            .map(|k| json!({ "id": k.check, "comment": k.reason }))
            .collect();
    }
    if !lint.is_empty() {
        resource["Metadata"]["cfn-lint"]["config"]["ignore_checks"] = lint.iter().map(|k| json!(k.check)).collect();
        resource["Metadata"]["cfn-lint"]["reasons"] = lint
            .iter()
            .map(|k| (k.check.to_owned(), json!(k.reason)))
            .collect::<serde_json::Map<_, _>>()
            .into();
    }
}

/// checkov: no reserved concurrency on the reaper.
pub const REAPER_CONCURRENCY: Kept = Kept {
    check: "CKV_AWS_115",
    reason: "the reaper runs once per expired node; reserving concurrency takes it from the account's \
             unreserved pool (and fails to deploy in accounts at the default limit) without bounding \
             anything the rules' retry policy does not",
};

/// checkov: the quarantine bucket has no access log.
pub const BUCKET_LOGGING: Kept = Kept {
    check: "CKV_AWS_18",
    reason: "holds only quarantined records, written by the two consumers' roles and read by `streamdex \
             quarantine`; an access-log bucket would need its own and adds nothing CloudTrail does not",
};
