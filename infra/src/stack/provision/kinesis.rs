//! The Kinesis data streams of the tables read from Kinesis: created with
//! one shard (locally; on-demand on AWS, see the template) and the
//! configured retention, which `up` brings up to date.

use aws_sdk_kinesis::types::StreamStatus;

use super::*;
use crate::stack::KinesisStream;

/// Kinesis's default retention, what a new stream starts with.
const DEFAULT_RETENTION_HOURS: i32 = 24;

/// Creates the stream, or brings its retention to the config's.
pub(super) async fn ensure_stream(
    client: &aws_sdk_kinesis::Client,
    stream: &KinesisStream,
) -> Result<Change, StackError> {
    let name = stream.name.as_str();
    let wanted = i32::try_from(stream.retention_hours).unwrap_or(DEFAULT_RETENTION_HOURS);
    let action = match describe(client, name).await? {
        Some(held) => {
            wait_active(client, name).await?;
            if held == wanted {
                Action::Unchanged
            } else {
                retention(client, name, held, wanted).await?;
                Action::Updated(format!("retention {held} h -> {wanted} h"))
            }
        }
        None => {
            client
                .create_stream()
                .stream_name(name)
                .shard_count(1)
                .send()
                .await
                .map_err(aws_error("CreateStream", "kinesis stream", name))?;
            wait_active(client, name).await?;
            if wanted != DEFAULT_RETENTION_HOURS {
                retention(client, name, DEFAULT_RETENTION_HOURS, wanted).await?;
            }
            Action::Created
        }
    };
    Ok(Change {
        kind: "kinesis stream",
        name: name.to_owned(),
        action,
    })
}

/// The stream's retention in hours, or `None` if there is no such stream.
async fn describe(client: &aws_sdk_kinesis::Client, name: &str) -> Result<Option<i32>, StackError> {
    match client.describe_stream_summary().stream_name(name).send().await {
        Ok(out) => Ok(out.stream_description_summary().map(|s| s.retention_period_hours())),
        Err(e)
            if e.as_service_error()
                .is_some_and(|e| e.is_resource_not_found_exception()) =>
        {
            Ok(None)
        }
        Err(e) => Err(aws_error("DescribeStreamSummary", "kinesis stream", name)(e)),
    }
}

async fn retention(client: &aws_sdk_kinesis::Client, name: &str, held: i32, wanted: i32) -> Result<(), StackError> {
    if wanted > held {
        client
            .increase_stream_retention_period()
            .stream_name(name)
            .retention_period_hours(wanted)
            .send()
            .await
            .map_err(aws_error("IncreaseStreamRetentionPeriod", "kinesis stream", name))?;
    } else {
        client
            .decrease_stream_retention_period()
            .stream_name(name)
            .retention_period_hours(wanted)
            .send()
            .await
            .map_err(aws_error("DecreaseStreamRetentionPeriod", "kinesis stream", name))?;
    }
    Ok(())
}

/// Waits (bounded by [`ACTIVE_TIMEOUT`]) for the stream to be ACTIVE.
async fn wait_active(client: &aws_sdk_kinesis::Client, name: &str) -> Result<(), StackError> {
    let started = Instant::now();
    loop {
        let status = client
            .describe_stream_summary()
            .stream_name(name)
            .send()
            .await
            .map_err(aws_error("DescribeStreamSummary", "kinesis stream", name))?
            .stream_description_summary()
            .map(|s| s.stream_status().clone());
        if status == Some(StreamStatus::Active) {
            return Ok(());
        }
        if started.elapsed() > ACTIVE_TIMEOUT {
            return Err(StackError::Timeout {
                kind: "kinesis stream",
                name: name.to_owned(),
                seconds: ACTIVE_TIMEOUT.as_secs(),
            });
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Deletes the stream, or reports it absent.
pub(super) async fn delete_stream(client: &aws_sdk_kinesis::Client, name: &str) -> Result<Change, StackError> {
    let action = match client.delete_stream().stream_name(name).send().await {
        Ok(_) => Action::Deleted,
        Err(e)
            if e.as_service_error()
                .is_some_and(|e| e.is_resource_not_found_exception()) =>
        {
            Action::Absent
        }
        Err(e) => return Err(aws_error("DeleteStream", "kinesis stream", name)(e)),
    };
    Ok(Change {
        kind: "kinesis stream",
        name: name.to_owned(),
        action,
    })
}
