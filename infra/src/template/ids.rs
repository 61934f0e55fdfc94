//! Logical ids of the template's resources.

use crate::stack::{FunctionRole, Queue, QueuePurpose, Rule};
use model::filter::Consumer;

pub const BUS: &str = "EventBus";
pub const ALARM_TOPIC: &str = "AlarmTopic";
pub const ALARM_SUBSCRIPTION: &str = "AlarmSubscription";
pub const ALARM_DEAD_LETTER_QUEUE: &str = "AlarmDeadLetterQueue";
pub const ALARM_DEAD_LETTER_POLICY: &str = "AlarmDeadLetterQueuePolicy";
pub const REAPER_DEAD_LETTER_POLICY: &str = "ReaperDeadLetterQueuePolicy";
pub const PARAM_ALARM_ENDPOINT: &str = "AlarmEndpoint";
pub const PARAM_ALARM_PROTOCOL: &str = "AlarmProtocol";
pub const PARAM_ARCHITECTURE: &str = "Architecture";
pub const DASHBOARD: &str = "Dashboard";

/// `some-name.x` → `SomeNameX`: every run of letters and digits, capitalised.
pub fn pascal(name: &str) -> String {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect()
}

fn role_name(role: FunctionRole) -> &'static str {
    match role {
        FunctionRole::Indexer => "Indexer",
        FunctionRole::Router => "Router",
        FunctionRole::Reaper => "Reaper",
    }
}

pub fn consumer(consumer: Consumer) -> &'static str {
    role_name(FunctionRole::of(consumer))
}

pub fn function(role: FunctionRole) -> String {
    format!("{}Function", role_name(role))
}

pub fn role(role: FunctionRole) -> String {
    format!("{}Role", role_name(role))
}

pub fn log_group(role: FunctionRole) -> String {
    format!("{}Logs", role_name(role))
}

pub fn source_table(name: &str) -> String {
    format!("Table{}", pascal(name))
}

pub fn kinesis_stream(table: &str) -> String {
    format!("ChangeStream{}", pascal(table))
}

/// The router's ledger (`[events] ledger_table`).
pub const LEDGER_TABLE: &str = "LedgerTable";

pub fn index_table(name: &str) -> String {
    format!("IndexTable{}", pascal(name))
}

pub fn queue(queue: &Queue) -> String {
    match &queue.purpose {
        QueuePurpose::Quarantine => "QuarantineQueue".to_owned(),
        QueuePurpose::ReaperDeadLetter => "ReaperDeadLetterQueue".to_owned(),
        QueuePurpose::RuleTarget(rule) => format!("RuleQueue{}", pascal(rule)),
    }
}

pub fn rule(rule: &Rule) -> String {
    format!("Rule{}", pascal(&rule.name))
}

pub fn reaper_permission(rule: &Rule) -> String {
    format!("ReaperPermission{}", pascal(&rule.name))
}

pub fn mapping(consumer_: Consumer, table: &str) -> String {
    format!("{}Mapping{}", consumer(consumer_), pascal(table))
}

pub const PARAM_KMS_KEY: &str = "KmsKeyArn";
/// The condition "a `KmsKeyArn` was given".
pub const HAS_KMS_KEY: &str = "HasKmsKey";
pub const REAPER_INVOKE_CONFIG: &str = "ReaperInvokeConfig";
pub const KEY_POLICY: &str = "CustomerKeyPolicy";
pub const QUARANTINE_BUCKET: &str = "QuarantineBucket";
pub const QUARANTINE_BUCKET_POLICY: &str = "QuarantineBucketPolicy";
