//! SQS queues: the quarantine, the on-failure queues, the rules' stand-in queues and their policies.

use super::*;

pub(super) fn is_missing_queue<E: ProvideErrorMetadata>(e: &E) -> bool {
    matches!(
        e.code(),
        Some("AWS.SimpleQueueService.NonExistentQueue" | "QueueDoesNotExist")
    )
}

/// The URL of the queue `name`, or `None` when it does not exist.
pub async fn queue_url(client: &aws_sdk_sqs::Client, name: &str) -> Result<Option<String>, StackError> {
    match client.get_queue_url().queue_name(name).send().await {
        Ok(output) => Ok(output.queue_url),
        Err(e) if e.as_service_error().is_some_and(is_missing_queue) => Ok(None),
        Err(e) => Err(aws_error("GetQueueUrl", "queue", name)(e)),
    }
}

/// The access policy of a rule's stand-in queue: EventBridge may send from that rule only.
pub(super) fn rule_queue_policy(queue: &str, rule_arn: &str) -> serde_json::Value {
    serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Sid": "EventBridgeRule",
            "Effect": "Allow",
            "Principal": {"Service": "events.amazonaws.com"},
            "Action": "sqs:SendMessage",
            "Resource": queue,
            "Condition": {"ArnEquals": {"aws:SourceArn": rule_arn}},
        }],
    })
}

pub(super) async fn ensure_queue(
    client: &aws_sdk_sqs::Client,
    queue: &Queue,
    rule_arn: Option<&str>,
) -> Result<(String, Change), StackError> {
    let retention = QUEUE_RETENTION_SECONDS.to_string();
    let (url, created) = match queue_url(client, &queue.name).await? {
        Some(url) => (url, false),
        None => {
            let output = client
                .create_queue()
                .queue_name(&queue.name)
                .attributes(QueueAttributeName::MessageRetentionPeriod, &retention)
                .attributes(QueueAttributeName::SqsManagedSseEnabled, "true")
                .send()
                .await
                .map_err(aws_error("CreateQueue", "queue", &queue.name))?;
            (output.queue_url.unwrap_or_default(), true)
        }
    };
    let attributes: HashMap<QueueAttributeName, String> = client
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .map_err(aws_error("GetQueueAttributes", "queue", &queue.name))?
        .attributes
        .unwrap_or_default();
    let mut wanted: Vec<(QueueAttributeName, String)> = Vec::new();
    if attributes.get(&QueueAttributeName::MessageRetentionPeriod) != Some(&retention) {
        wanted.push((QueueAttributeName::MessageRetentionPeriod, retention));
    }
    if let (Some(rule_arn), Some(arn)) = (rule_arn, attributes.get(&QueueAttributeName::QueueArn)) {
        let policy = rule_queue_policy(arn, rule_arn);
        let current: Option<serde_json::Value> = attributes
            .get(&QueueAttributeName::Policy)
            .and_then(|p| serde_json::from_str(p).ok());
        if current.as_ref() != Some(&policy) {
            wanted.push((QueueAttributeName::Policy, policy.to_string()));
        }
    }
    let action = if created {
        Action::Created
    } else if wanted.is_empty() {
        Action::Unchanged
    } else {
        let what = wanted
            .iter()
            .map(|(k, _)| k.as_str().to_owned())
            .collect::<Vec<_>>()
            .join(", ");
        Action::Updated(format!("set {what}"))
    };
    if !wanted.is_empty() {
        client
            .set_queue_attributes()
            .queue_url(&url)
            .set_attributes(Some(wanted.into_iter().collect()))
            .send()
            .await
            .map_err(aws_error("SetQueueAttributes", "queue", &queue.name))?;
    }
    Ok((
        url,
        Change {
            kind: "queue",
            name: queue.name.clone(),
            action,
        },
    ))
}

pub(super) async fn queue_arn(client: &aws_sdk_sqs::Client, name: &str, url: &str) -> Result<String, StackError> {
    client
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(aws_error("GetQueueAttributes", "queue", name))?
        .attributes
        .and_then(|mut a| a.remove(&QueueAttributeName::QueueArn))
        .ok_or_else(|| StackError::Aws {
            operation: "GetQueueAttributes",
            kind: "queue",
            name: name.to_owned(),
            message: "the answer has no QueueArn".to_owned(),
        })
}

pub(super) async fn delete_queue(client: &aws_sdk_sqs::Client, queue: &Queue) -> Result<Change, StackError> {
    let action = match queue_url(client, &queue.name).await? {
        None => Action::Absent,
        Some(url) => match client.delete_queue().queue_url(url).send().await {
            Ok(_) => Action::Deleted,
            Err(e) if e.as_service_error().is_some_and(is_missing_queue) => Action::Absent,
            Err(e) => return Err(aws_error("DeleteQueue", "queue", &queue.name)(e)),
        },
    };
    Ok(Change {
        kind: "queue",
        name: queue.name.clone(),
        action,
    })
}
