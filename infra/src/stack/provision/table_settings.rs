//! What a source table carries besides its keys: its stream, the edge set's `target_index` GSI, TTL and point-in-time recovery.

use super::*;

pub(super) async fn stream(
    client: &aws_sdk_dynamodb::Client,
    table: &SourceTable,
    described: &TableDescription,
) -> Result<Change, StackError> {
    let name = format!("{}/stream", table.name);
    let spec = described.stream_specification.as_ref();
    match spec {
        Some(s) if s.stream_enabled && s.stream_view_type == Some(StreamViewType::NewAndOldImages) => Ok(Change {
            kind: "stream",
            name,
            action: Action::Unchanged,
        }),
        Some(s) if s.stream_enabled => Err(StackError::Conflict {
            kind: "table",
            name: table.name.clone(),
            reason: format!(
                "its stream has view type {} where both consumers need NEW_AND_OLD_IMAGES \
                 (changing it means a new stream that its current readers lose)",
                s.stream_view_type.as_ref().map_or("(none)", |v| v.as_str())
            ),
        }),
        _ => {
            client
                .update_table()
                .table_name(&table.name)
                .stream_specification(stream_spec()?)
                .send()
                .await
                .map_err(aws_error("UpdateTable (enable the stream)", "table", &table.name))?;
            wait_active(client, &table.name).await?;
            Ok(Change {
                kind: "stream",
                name,
                action: Action::Updated("enabled with NEW_AND_OLD_IMAGES".to_owned()),
            })
        }
    }
}

pub(super) async fn target_index(
    client: &aws_sdk_dynamodb::Client,
    table: &SourceTable,
    index: &TargetIndex,
    described: &TableDescription,
) -> Result<Change, StackError> {
    let name = format!("{}/{}", table.name, index.name);
    let existing = described
        .global_secondary_indexes()
        .iter()
        .find(|g| g.index_name.as_deref() == Some(index.name.as_str()));
    let Some(existing) = existing else {
        let mut request = client
            .update_table()
            .table_name(&table.name)
            .global_secondary_index_updates(
                GlobalSecondaryIndexUpdate::builder()
                    .create(
                        CreateGlobalSecondaryIndexAction::builder()
                            .index_name(&index.name)
                            .set_key_schema(Some(key_schema(&index.partition_key, Some(&index.sort_key))?))
                            .projection(projection(index))
                            .build()
                            .map_err(aws_error("building the GSI", "gsi", &name))?,
                    )
                    .build(),
            );
        for attribute in table.key_attributes() {
            request = request.attribute_definitions(string_attribute(attribute)?);
        }
        request
            .send()
            .await
            .map_err(aws_error("UpdateTable (create the GSI)", "gsi", &name))?;
        wait_active(client, &table.name).await?;
        return Ok(Change {
            kind: "gsi",
            name,
            action: Action::Created,
        });
    };
    check_keys(
        "gsi",
        &name,
        existing.key_schema(),
        &index.partition_key,
        Some(&index.sort_key),
    )?;
    let projected = existing.projection.as_ref();
    let wide_enough = match projected.and_then(|p| p.projection_type.as_ref()) {
        Some(ProjectionType::All) => true,
        Some(ProjectionType::Include) => {
            let have = projected.map(|p| p.non_key_attributes()).unwrap_or_default();
            index.projected.iter().all(|a| have.contains(a))
        }
        _ => index.projected.is_empty(),
    };
    if !wide_enough {
        return Err(StackError::Conflict {
            kind: "gsi",
            name,
            reason: format!(
                "does not project the edge set's member attributes [{}] (a GSI's projection cannot change)",
                index.projected.join(", ")
            ),
        });
    }
    Ok(Change {
        kind: "gsi",
        name,
        action: Action::Unchanged,
    })
}

pub(super) async fn ttl(client: &aws_sdk_dynamodb::Client, table: &str, attribute: &str) -> Result<Change, StackError> {
    let name = format!("{table}/{attribute}");
    let described = client
        .describe_time_to_live()
        .table_name(table)
        .send()
        .await
        .map_err(aws_error("DescribeTimeToLive", "table", table))?
        .time_to_live_description;
    let status = described.as_ref().and_then(|d| d.time_to_live_status.clone());
    let current = described.as_ref().and_then(|d| d.attribute_name.as_deref());
    match status {
        Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling) if current == Some(attribute) => Ok(Change {
            kind: "ttl",
            name,
            action: Action::Unchanged,
        }),
        Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling) => Err(StackError::Conflict {
            kind: "table",
            name: table.to_owned(),
            reason: format!(
                "expires items by `{}` where the config says `{attribute}`",
                current.unwrap_or("?")
            ),
        }),
        _ => {
            client
                .update_time_to_live()
                .table_name(table)
                .time_to_live_specification(
                    TimeToLiveSpecification::builder()
                        .enabled(true)
                        .attribute_name(attribute)
                        .build()
                        .map_err(aws_error("building the TTL specification", "table", table))?,
                )
                .send()
                .await
                .map_err(aws_error("UpdateTimeToLive", "table", table))?;
            Ok(Change {
                kind: "ttl",
                name,
                action: Action::Updated("enabled".to_owned()),
            })
        }
    }
}

pub(super) async fn pitr(client: &aws_sdk_dynamodb::Client, table: &str) -> Result<Change, StackError> {
    let name = table.to_owned();
    let described = client
        .describe_continuous_backups()
        .table_name(table)
        .send()
        .await
        .map_err(aws_error("DescribeContinuousBackups", "table", table))?;
    let enabled = described
        .continuous_backups_description
        .and_then(|d| d.point_in_time_recovery_description)
        .and_then(|p| p.point_in_time_recovery_status)
        .is_some_and(|s| s.as_str() == "ENABLED");
    if enabled {
        return Ok(Change {
            kind: "pitr",
            name,
            action: Action::Unchanged,
        });
    }
    client
        .update_continuous_backups()
        .table_name(table)
        .point_in_time_recovery_specification(
            PointInTimeRecoverySpecification::builder()
                .point_in_time_recovery_enabled(true)
                .build()
                .map_err(aws_error("building the PITR specification", "table", table))?,
        )
        .send()
        .await
        .map_err(aws_error("UpdateContinuousBackups", "table", table))?;
    Ok(Change {
        kind: "pitr",
        name,
        action: Action::Updated("point-in-time recovery enabled".to_owned()),
    })
}
