//! The template's event bus (unless `default`) and one rule per route:
//! the reaper is the target of `reap` routes' rules, with a retry policy,
//! a dead-letter queue and the permission to invoke it; other rules have
//! no target (add yours).

use serde_json::{json, Value as Json};

use super::{ids, Resources, TemplateError, REAPER_TARGET_MAX_AGE_SECONDS, REAPER_TARGET_RETRIES};
use crate::stack::{FunctionRole, QueuePurpose, Stack, RULE_TARGET_ID};

/// Adds the bus, the rules, the reaper's permissions and the policy that
/// lets the reaper's rules send dead letters to its queue.
pub(super) fn add_bus_and_rules(stack: &Stack, resources: &mut Resources) -> Result<(), TemplateError> {
    // A rule names its bus by name, not by a `Ref` to it (which gives the
    // same name): moto's CloudFormation cannot create a rule whose bus is a
    // `Ref`, and the rehearsal creates this template there. `DependsOn`
    // keeps the order a `Ref` would.
    let bus_dependency: Vec<&str> = if stack.bus.is_default() {
        Vec::new()
    } else {
        resources.add(
            ids::BUS.to_owned(),
            json!({ "Type": "AWS::Events::EventBus", "Properties": { "Name": stack.bus.name } }),
        )?;
        vec![ids::BUS]
    };
    let reaper_queue = stack.queue(&QueuePurpose::ReaperDeadLetter);
    let mut reaper_rules = Vec::new();
    for rule in &stack.rules {
        let mut properties = json!({
            "Name": rule.name,
            "Description": format!("streamdex: {} events of table {}", rule.detail_type, rule.table),
            "EventBusName": stack.bus.name,
            "EventPattern": rule.pattern,
            "State": "ENABLED",
        });
        if rule.reaper {
            let mut target = json!({
                "Id": RULE_TARGET_ID,
                "Arn": { "Fn::GetAtt": [ids::function(FunctionRole::Reaper), "Arn"] },
                "RetryPolicy": {
                    "MaximumRetryAttempts": REAPER_TARGET_RETRIES,
                    "MaximumEventAgeInSeconds": REAPER_TARGET_MAX_AGE_SECONDS,
                },
            });
            if let Some(queue) = reaper_queue {
                target["DeadLetterConfig"] = json!({ "Arn": { "Fn::GetAtt": [ids::queue(queue), "Arn"] } });
            }
            properties["Targets"] = json!([target]);
            reaper_rules.push(rule);
            resources.add(
                ids::reaper_permission(rule),
                json!({
                    "Type": "AWS::Lambda::Permission",
                    "Properties": {
                        "Action": "lambda:InvokeFunction",
                        "FunctionName": { "Ref": ids::function(FunctionRole::Reaper) },
                        "Principal": "events.amazonaws.com",
                        "SourceArn": { "Fn::GetAtt": [ids::rule(rule), "Arn"] },
                    },
                }),
            )?;
        }
        let mut resource = json!({ "Type": "AWS::Events::Rule", "Properties": properties });
        if !bus_dependency.is_empty() {
            resource["DependsOn"] = json!(bus_dependency);
        }
        resources.add(ids::rule(rule), resource)?;
    }
    if let (Some(queue), false) = (reaper_queue, reaper_rules.is_empty()) {
        let sources: Vec<Json> = reaper_rules
            .iter()
            .map(|r| json!({ "Fn::GetAtt": [ids::rule(r), "Arn"] }))
            .collect();
        resources.add(
            ids::REAPER_DEAD_LETTER_POLICY.to_owned(),
            json!({
                "Type": "AWS::SQS::QueuePolicy",
                "Properties": {
                    "Queues": [{ "Ref": ids::queue(queue) }],
                    "PolicyDocument": {
                        "Version": "2012-10-17",
                        "Statement": [{
                            "Sid": "ReaperRulesDeadLetters",
                            "Effect": "Allow",
                            "Principal": { "Service": "events.amazonaws.com" },
                            "Action": "sqs:SendMessage",
                            "Resource": { "Fn::GetAtt": [ids::queue(queue), "Arn"] },
                            "Condition": { "ArnEquals": { "aws:SourceArn": sources } },
                        }],
                    },
                },
            }),
        )?;
    }
    Ok(())
}
