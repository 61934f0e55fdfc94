//! BatchWriteItem of index rows: a row write as a WriteRequest, and the UnprocessedItems back as the row writes they came from.

use super::*;

/// The `WriteRequest` for one row write: a put of the row's attributes plus
/// the index's key attributes, or a delete by key.
pub(super) fn write_request(index: &IndexConfig, write: &RowWrite) -> Result<WriteRequest, StoreError> {
    let key = [
        (
            index.partition_key.clone(),
            AttributeValue::S(write.key.partition.clone()),
        ),
        (index.sort_key.clone(), AttributeValue::S(write.key.sort.clone())),
    ];
    let built = match &write.put {
        Some(attributes) => {
            let mut item: HashMap<String, AttributeValue> = attributes
                .iter()
                .map(|(name, value)| (name.clone(), to_attribute(value)))
                .collect();
            item.extend(key);
            PutRequest::builder()
                .set_item(Some(item))
                .build()
                .map(|put| WriteRequest::builder().put_request(put).build())
        }
        None => DeleteRequest::builder()
            .set_key(Some(key.into_iter().collect()))
            .build()
            .map(|delete| WriteRequest::builder().delete_request(delete).build()),
    };
    built.map_err(|e| StoreError::refused(format!("BatchWriteItem on table `{}`: {e}", index.table)))
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

pub(super) fn table_list<'a>(tables: impl Iterator<Item = &'a String>) -> String {
    let mut names: Vec<&str> = tables.map(String::as_str).collect();
    names.sort_unstable();
    names.join("`, `")
}
