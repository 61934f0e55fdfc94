//! The template's outputs: the queues' URLs, the quarantine bucket, the
//! dashboard, the alarm topic, and the rules to add targets to.

use serde_json::{json, Map, Value as Json};

use super::ids;
use crate::stack::Stack;

/// The template's outputs.
pub(super) fn outputs(stack: &Stack) -> Map<String, Json> {
    let mut outputs = Map::new();
    for queue in stack.queues.iter().filter(|q| q.on_aws()) {
        outputs.insert(
            format!("{}Url", ids::queue(queue)),
            json!({ "Description": format!("URL of queue {}", queue.name), "Value": { "Ref": ids::queue(queue) } }),
        );
    }
    outputs.insert(
        "QuarantineBucketName".to_owned(),
        json!({
            "Description": "The quarantine's claim checks: records too large for a queue message",
            "Value": { "Ref": ids::QUARANTINE_BUCKET },
        }),
    );
    outputs.insert(
        "DashboardName".to_owned(),
        json!({ "Description": "The CloudWatch dashboard of the pipeline", "Value": { "Ref": ids::DASHBOARD } }),
    );
    outputs.insert(
        "AlarmTopicArn".to_owned(),
        json!({ "Description": "The SNS topic every alarm notifies", "Value": { "Ref": ids::ALARM_TOPIC } }),
    );
    for rule in stack.rules.iter().filter(|r| !r.reaper) {
        outputs.insert(
            format!("{}Arn", ids::rule(rule)),
            json!({
                "Description": format!("Rule {} ({} events): add your targets to it", rule.name, rule.detail_type),
                "Value": { "Fn::GetAtt": [ids::rule(rule), "Arn"] },
            }),
        );
    }
    outputs
}
