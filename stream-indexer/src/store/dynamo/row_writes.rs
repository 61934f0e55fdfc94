//! BatchWriteItem of index rows: a row write as a WriteRequest, and the UnprocessedItems back as the row writes they came from.

use super::*;

/// The item one row write puts: the row's attributes (or, for a delete, the
/// tombstone's expiry `expires`), its version, and the index's key attributes.
pub(super) fn row_item(index: &IndexConfig, write: &RowWrite, expires: u64) -> HashMap<String, AttributeValue> {
    let mut item: HashMap<String, AttributeValue> = match &write.put {
        Some(attributes) => attributes
            .iter()
            .map(|(name, value)| (name.to_owned(), to_attribute(value)))
            .collect(),
        None => HashMap::from([(TOMBSTONE_ATTRIBUTE.to_owned(), AttributeValue::N(expires.to_string()))]),
    };
    item.insert(
        VERSION_ATTRIBUTE.to_owned(),
        AttributeValue::S(write.version.as_str().to_owned()),
    );
    item.insert(
        index.partition_key.clone(),
        AttributeValue::S(write.key.partition.clone()),
    );
    item.insert(index.sort_key.clone(), AttributeValue::S(write.key.sort.clone()));
    item
}

/// The `WriteRequest` for one row write: a put of [`row_item`] (a delete
/// puts the row's tombstone: same request count, and an older record can
/// no longer bring the row back).
pub(super) fn write_request(index: &IndexConfig, write: &RowWrite, expires: u64) -> Result<WriteRequest, StoreError> {
    PutRequest::builder()
        .set_item(Some(row_item(index, write, expires)))
        .build()
        .map(|put| WriteRequest::builder().put_request(put).build())
        .map_err(|e| StoreError::refused(format!("BatchWriteItem on table `{}`: {e}", index.table)))
}

/// The row key of an unprocessed request of `table`.
pub(super) fn unprocessed_key(config: &Config, table: &str, request: &WriteRequest) -> Option<RowKey> {
    let index = config.indexes.iter().find(|i| i.table == table)?;
    let attributes = match (&request.put_request, &request.delete_request) {
        (Some(put), _) => &put.item,
        (None, Some(delete)) => &delete.key,
        (None, None) => return None,
    };
    match (attributes.get(&index.partition_key), attributes.get(&index.sort_key)) {
        (Some(AttributeValue::S(partition)), Some(AttributeValue::S(sort))) => Some(RowKey {
            partition: partition.clone(),
            sort: sort.clone(),
        }),
        _ => None,
    }
}

impl DynamoStore {
    /// [`Store::put_row_if`]: one conditional PutItem of the row or its
    /// tombstone; a failed condition is [`RowOutcome::Stale`].
    pub(super) async fn put_row_conditional(
        &self,
        write: &RowWrite,
        guard: &RowGuard,
    ) -> Result<RowOutcome, StoreError> {
        let index = self.index(write.index)?;
        let expires = crate::store::tombstone_expiry(&self.config, &aws_kit::clock::SystemClock);
        let item = row_item(index, write, expires);
        let request = self
            .client
            .put_item()
            .table_name(&index.table)
            .set_item(Some(item))
            .expression_attribute_names("#v", VERSION_ATTRIBUTE);
        let request = match guard {
            RowGuard::Newer => request
                .condition_expression("attribute_not_exists(#v) OR #v < :v")
                .expression_attribute_values(":v", AttributeValue::S(write.version.as_str().to_owned())),
            RowGuard::AsRead(Some(read)) => request
                .condition_expression("#v = :read")
                .expression_attribute_values(":read", AttributeValue::S(read.as_str().to_owned())),
            RowGuard::AsRead(None) => request.condition_expression("attribute_not_exists(#v)"),
        };
        match request.send().await {
            Ok(_) => Ok(RowOutcome::Written),
            Err(SdkError::ServiceError(e)) if e.err().is_conditional_check_failed_exception() => Ok(RowOutcome::Stale),
            Err(e) => Err(store_error("PutItem", &index.table, e)),
        }
    }
}

pub(super) fn table_list<'a>(tables: impl Iterator<Item = &'a String>) -> String {
    let mut names: Vec<&str> = tables.map(String::as_str).collect();
    names.sort_unstable();
    names.join("`, `")
}
