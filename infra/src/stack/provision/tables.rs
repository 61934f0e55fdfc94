//! Source and index tables: key schemas, creation, waiting for ACTIVE, deletion; a table with other keys is a conflict.

use super::*;

pub(super) fn key(name: &str, ty: KeyType) -> Result<KeySchemaElement, StackError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(ty)
        .build()
        .map_err(aws_error("building the key schema", "attribute", name))
}

pub(super) fn string_attribute(name: &str) -> Result<AttributeDefinition, StackError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .map_err(aws_error("building the attribute definitions", "attribute", name))
}

pub(super) fn key_schema(partition: &str, sort: Option<&str>) -> Result<Vec<KeySchemaElement>, StackError> {
    let mut keys = vec![key(partition, KeyType::Hash)?];
    if let Some(sort) = sort {
        keys.push(key(sort, KeyType::Range)?);
    }
    Ok(keys)
}

pub(super) fn projection(index: &TargetIndex) -> Projection {
    if index.projected.is_empty() {
        Projection::builder().projection_type(ProjectionType::KeysOnly).build()
    } else {
        Projection::builder()
            .projection_type(ProjectionType::Include)
            .set_non_key_attributes(Some(index.projected.clone()))
            .build()
    }
}

pub(super) fn gsi(index: &TargetIndex) -> Result<GlobalSecondaryIndex, StackError> {
    GlobalSecondaryIndex::builder()
        .index_name(&index.name)
        .set_key_schema(Some(key_schema(&index.partition_key, Some(&index.sort_key))?))
        .projection(projection(index))
        .build()
        .map_err(aws_error("building the GSI", "gsi", &index.name))
}

pub(super) fn stream_spec() -> Result<StreamSpecification, StackError> {
    StreamSpecification::builder()
        .stream_enabled(true)
        .stream_view_type(StreamViewType::NewAndOldImages)
        .build()
        .map_err(aws_error(
            "building the stream specification",
            "stream",
            "NEW_AND_OLD_IMAGES",
        ))
}

pub(super) async fn describe_table(
    client: &aws_sdk_dynamodb::Client,
    name: &str,
) -> Result<Option<TableDescription>, StackError> {
    match client.describe_table().table_name(name).send().await {
        Ok(output) => Ok(output.table),
        Err(e) if e.code() == Some("ResourceNotFoundException") => Ok(None),
        Err(e) => Err(aws_error("DescribeTable", "table", name)(e)),
    }
}

/// The key attributes of a described table: (partition, sort).
pub(super) fn described_keys(schema: &[KeySchemaElement]) -> (Option<&str>, Option<&str>) {
    let find = |ty: KeyType| {
        schema
            .iter()
            .find(|k| k.key_type == ty)
            .map(|k| k.attribute_name.as_str())
    };
    (find(KeyType::Hash), find(KeyType::Range))
}

pub(super) fn check_keys(
    kind: &'static str,
    name: &str,
    described: &[KeySchemaElement],
    partition: &str,
    sort: Option<&str>,
) -> Result<(), StackError> {
    let found = described_keys(described);
    if found == (Some(partition), sort) {
        return Ok(());
    }
    let show = |(p, s): (Option<&str>, Option<&str>)| match s {
        Some(s) => format!("partition key `{}`, sort key `{s}`", p.unwrap_or("?")),
        None => format!("partition key `{}`, no sort key", p.unwrap_or("?")),
    };
    Err(StackError::Conflict {
        kind,
        name: name.to_owned(),
        reason: format!(
            "has {} where the config needs {}",
            show(found),
            show((Some(partition), sort))
        ),
    })
}

/// Waits until the table and all its GSIs are ACTIVE.
pub(super) async fn wait_active(client: &aws_sdk_dynamodb::Client, name: &str) -> Result<(), StackError> {
    let started = Instant::now();
    loop {
        let table = describe_table(client, name).await?;
        let active = table.as_ref().is_some_and(|t| {
            t.table_status == Some(TableStatus::Active)
                && t.global_secondary_indexes()
                    .iter()
                    .all(|g| g.index_status.as_ref().is_none_or(|s| *s == IndexStatus::Active))
        });
        if active {
            return Ok(());
        }
        if started.elapsed() > ACTIVE_TIMEOUT {
            return Err(StackError::Timeout {
                kind: "table",
                name: name.to_owned(),
                seconds: ACTIVE_TIMEOUT.as_secs(),
            });
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

pub(super) async fn source_table(
    client: &aws_sdk_dynamodb::Client,
    table: &SourceTable,
    changes: &mut Vec<Change>,
) -> Result<(), StackError> {
    let change = |kind: &'static str, name: String, action: Action| Change { kind, name, action };
    match describe_table(client, &table.name).await? {
        None => {
            let mut request = client
                .create_table()
                .table_name(&table.name)
                .billing_mode(BillingMode::PayPerRequest)
                .set_key_schema(Some(key_schema(&table.partition_key, table.sort_key.as_deref())?))
                .stream_specification(stream_spec()?);
            for attribute in table.key_attributes() {
                request = request.attribute_definitions(string_attribute(attribute)?);
            }
            if let Some(index) = &table.target_index {
                request = request.global_secondary_indexes(gsi(index)?);
            }
            request
                .send()
                .await
                .map_err(aws_error("CreateTable", "table", &table.name))?;
            changes.push(change("table", table.name.clone(), Action::Created));
            changes.push(change("stream", format!("{}/stream", table.name), Action::Created));
            if let Some(index) = &table.target_index {
                changes.push(change("gsi", format!("{}/{}", table.name, index.name), Action::Created));
            }
            wait_active(client, &table.name).await?;
        }
        Some(described) => {
            check_keys(
                "table",
                &table.name,
                described.key_schema(),
                &table.partition_key,
                table.sort_key.as_deref(),
            )?;
            changes.push(change("table", table.name.clone(), Action::Unchanged));
            changes.push(stream(client, table, &described).await?);
            if let Some(index) = &table.target_index {
                changes.push(target_index(client, table, index, &described).await?);
            }
        }
    }
    if let Some(attribute) = &table.ttl_attribute {
        changes.push(ttl(client, &table.name, attribute).await?);
    }
    changes.push(pitr(client, &table.name).await?);
    Ok(())
}

pub(super) async fn index_table(
    client: &aws_sdk_dynamodb::Client,
    table: &IndexTable,
    changes: &mut Vec<Change>,
) -> Result<(), StackError> {
    // Tombstones (deleted rows' versions) expire by TTL.
    let keys = (table.partition_key.as_str(), table.sort_key.as_str());
    keyed_table(client, &table.name, keys, model::version::TOMBSTONE_ATTRIBUTE, changes).await
}

/// The router's ledger (see `model::ledger`): entries expire by TTL.
pub(super) async fn ledger_table(
    client: &aws_sdk_dynamodb::Client,
    name: &str,
    changes: &mut Vec<Change>,
) -> Result<(), StackError> {
    use model::ledger::{EXPIRES_ATTRIBUTE, ITEM_ATTRIBUTE, VERSION_ATTRIBUTE};
    keyed_table(
        client,
        name,
        (ITEM_ATTRIBUTE, VERSION_ATTRIBUTE),
        EXPIRES_ATTRIBUTE,
        changes,
    )
    .await
}

/// A table of String partition and sort `keys`, with TTL on `expires`.
async fn keyed_table(
    client: &aws_sdk_dynamodb::Client,
    name: &str,
    (partition, sort): (&str, &str),
    expires: &str,
    changes: &mut Vec<Change>,
) -> Result<(), StackError> {
    if let Some(described) = describe_table(client, name).await? {
        check_keys("table", name, described.key_schema(), partition, Some(sort))?;
        changes.push(Change {
            kind: "table",
            name: name.to_owned(),
            action: Action::Unchanged,
        });
        changes.push(ttl(client, name, expires).await?);
        return Ok(());
    }
    client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .set_key_schema(Some(key_schema(partition, Some(sort))?))
        .attribute_definitions(string_attribute(partition)?)
        .attribute_definitions(string_attribute(sort)?)
        .send()
        .await
        .map_err(aws_error("CreateTable", "table", name))?;
    wait_active(client, name).await?;
    changes.push(Change {
        kind: "table",
        name: name.to_owned(),
        action: Action::Created,
    });
    changes.push(ttl(client, name, expires).await?);
    Ok(())
}

pub(super) async fn delete_table(client: &aws_sdk_dynamodb::Client, name: &str) -> Result<Change, StackError> {
    let action = match client.delete_table().table_name(name).send().await {
        Ok(_) => Action::Deleted,
        Err(e) if e.code() == Some("ResourceNotFoundException") => Action::Absent,
        Err(e) => return Err(aws_error("DeleteTable", "table", name)(e)),
    };
    Ok(Change {
        kind: "table",
        name: name.to_owned(),
        action,
    })
}
