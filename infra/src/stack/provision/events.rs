//! The event bus and the rules (each with its stand-in queue as the target locally).

use super::*;

pub(super) async fn bus(client: &aws_sdk_eventbridge::Client, name: &str) -> Result<Change, StackError> {
    let action = match client.describe_event_bus().name(name).send().await {
        Ok(_) => Action::Unchanged,
        Err(e) if e.code() == Some("ResourceNotFoundException") => {
            client
                .create_event_bus()
                .name(name)
                .send()
                .await
                .map_err(aws_error("CreateEventBus", "bus", name))?;
            Action::Created
        }
        Err(e) => return Err(aws_error("DescribeEventBus", "bus", name)(e)),
    };
    Ok(Change {
        kind: "bus",
        name: name.to_owned(),
        action,
    })
}

pub(super) async fn delete_bus(client: &aws_sdk_eventbridge::Client, name: &str) -> Result<Change, StackError> {
    let action = match client.describe_event_bus().name(name).send().await {
        Ok(_) => {
            client
                .delete_event_bus()
                .name(name)
                .send()
                .await
                .map_err(aws_error("DeleteEventBus", "bus", name))?;
            Action::Deleted
        }
        Err(e) if e.code() == Some("ResourceNotFoundException") => Action::Absent,
        Err(e) => return Err(aws_error("DescribeEventBus", "bus", name)(e)),
    };
    Ok(Change {
        kind: "bus",
        name: name.to_owned(),
        action,
    })
}

/// Puts the rule if it is missing or differs (pattern, state); returns its ARN.
pub(super) async fn put_rule(
    client: &aws_sdk_eventbridge::Client,
    bus: &str,
    rule: &Rule,
) -> Result<(String, Change), StackError> {
    let existing = match client.describe_rule().name(&rule.name).event_bus_name(bus).send().await {
        Ok(described) => Some(described),
        Err(e) if e.code() == Some("ResourceNotFoundException") => None,
        Err(e) => return Err(aws_error("DescribeRule", "rule", &rule.name)(e)),
    };
    let description = format!("streamdex: {} events of table {}", rule.detail_type, rule.table);
    let action = match &existing {
        None => Action::Created,
        Some(described) => {
            let pattern: Option<serde_json::Value> = described
                .event_pattern
                .as_deref()
                .and_then(|p| serde_json::from_str(p).ok());
            let enabled = described.state.as_ref().is_some_and(|s| s.as_str() == "ENABLED");
            match (pattern.as_ref() == Some(&rule.pattern), enabled) {
                (true, true) => {
                    let arn = described.arn.clone().unwrap_or_default();
                    return Ok((
                        arn,
                        Change {
                            kind: "rule",
                            name: rule.name.clone(),
                            action: Action::Unchanged,
                        },
                    ));
                }
                (false, _) => Action::Updated("event pattern replaced".to_owned()),
                (true, false) => Action::Updated("enabled".to_owned()),
            }
        }
    };
    let output = client
        .put_rule()
        .name(&rule.name)
        .event_bus_name(bus)
        .event_pattern(rule.pattern.to_string())
        .state(aws_sdk_eventbridge::types::RuleState::Enabled)
        .description(description)
        .send()
        .await
        .map_err(aws_error("PutRule", "rule", &rule.name))?;
    Ok((
        output.rule_arn.unwrap_or_default(),
        Change {
            kind: "rule",
            name: rule.name.clone(),
            action,
        },
    ))
}

pub(super) async fn rule_target(
    client: &aws_sdk_eventbridge::Client,
    bus: &str,
    rule: &Rule,
    queue_arn: &str,
) -> Result<Change, StackError> {
    let name = format!("{} -> {}", rule.name, rule.local_queue);
    let targets = client
        .list_targets_by_rule()
        .rule(&rule.name)
        .event_bus_name(bus)
        .send()
        .await
        .map_err(aws_error("ListTargetsByRule", "rule", &rule.name))?
        .targets
        .unwrap_or_default();
    let current = targets.iter().find(|t| t.id == RULE_TARGET_ID);
    let action = match current {
        Some(t) if t.arn == queue_arn => {
            return Ok(Change {
                kind: "target",
                name,
                action: Action::Unchanged,
            })
        }
        Some(_) => Action::Updated("now the rule's queue".to_owned()),
        None => Action::Created,
    };
    let target = aws_sdk_eventbridge::types::Target::builder()
        .id(RULE_TARGET_ID)
        .arn(queue_arn)
        .build()
        .map_err(aws_error("building the target", "rule", &rule.name))?;
    let output = client
        .put_targets()
        .rule(&rule.name)
        .event_bus_name(bus)
        .targets(target)
        .send()
        .await
        .map_err(aws_error("PutTargets", "rule", &rule.name))?;
    if output.failed_entry_count > 0 {
        let reason = output
            .failed_entries()
            .iter()
            .map(|f| {
                format!(
                    "{}: {}",
                    f.error_code().unwrap_or("?"),
                    f.error_message().unwrap_or("?")
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        return Err(StackError::Aws {
            operation: "PutTargets",
            kind: "rule",
            name: rule.name.clone(),
            message: reason,
        });
    }
    Ok(Change {
        kind: "target",
        name,
        action,
    })
}

pub(super) async fn delete_rule(
    client: &aws_sdk_eventbridge::Client,
    bus: &str,
    rule: &Rule,
) -> Result<Change, StackError> {
    let change = |action| Change {
        kind: "rule",
        name: rule.name.clone(),
        action,
    };
    let targets = match client
        .list_targets_by_rule()
        .rule(&rule.name)
        .event_bus_name(bus)
        .send()
        .await
    {
        Ok(output) => output.targets.unwrap_or_default(),
        Err(e) if e.code() == Some("ResourceNotFoundException") => return Ok(change(Action::Absent)),
        Err(e) => return Err(aws_error("ListTargetsByRule", "rule", &rule.name)(e)),
    };
    let ids: Vec<String> = targets.into_iter().map(|t| t.id).collect();
    if !ids.is_empty() {
        client
            .remove_targets()
            .rule(&rule.name)
            .event_bus_name(bus)
            .set_ids(Some(ids))
            .send()
            .await
            .map_err(aws_error("RemoveTargets", "rule", &rule.name))?;
    }
    match client.delete_rule().name(&rule.name).event_bus_name(bus).send().await {
        Ok(_) => Ok(change(Action::Deleted)),
        Err(e) if e.code() == Some("ResourceNotFoundException") => Ok(change(Action::Absent)),
        Err(e) => Err(aws_error("DeleteRule", "rule", &rule.name)(e)),
    }
}
