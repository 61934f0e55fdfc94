//! The `Scan` port: what `verify` and `rebuild` read beyond the [`Store`]
//! (whole tables, page by page, in parallel segments; single items and rows,
//! strongly consistent). The one write they need that the indexer never
//! makes (setting a node's completeness marker outright) is
//! `Store::set_marker`; [`Marker`] only names it for existing bounds.
//!
//! Implemented on DynamoDB here ([`DynamoStore`]: `Scan` with `Segment` /
//! `TotalSegments`, `ConsistentRead`, `ExclusiveStartKey`; `GetItem`;
//! `BatchGetItem`; a conditional `UpdateItem`) and in memory
//! (`memory::MemoryStore`, with the same paging contract).
//!
//! [`Store`]: super::Store

use std::collections::HashMap;
use std::future::Future;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use model::index::RowKey;
use model::Image;

use super::dynamo::{store_error, to_image, to_item, DynamoStore};
use super::{SetOutcome, Store, StoreError};

/// At most this many keys go in one [`Scan::read_rows`] call (BatchGetItem's limit).
pub const MAX_BATCH_READS: usize = 100;

/// One segment of a parallel scan: `number` in `0..of`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub number: u32,
    pub of: u32,
}

impl Segment {
    /// The whole table as one segment.
    pub const WHOLE: Segment = Segment { number: 0, of: 1 };
}

/// One page of a scan: the items, and where the next page starts (`None`:
/// the segment is done). The cursor is the last key read (DynamoDB's
/// `LastEvaluatedKey`), as an image of key attributes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next: Option<Image>,
}

/// The result of [`Scan::read_rows`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RowsRead {
    /// The rows that exist: key and non-key attributes.
    pub found: Vec<(RowKey, Image)>,
    /// Keys not read this time (`UnprocessedKeys`): read them again.
    pub unprocessed: Vec<RowKey>,
}

/// Reading whole tables and single items.
pub trait Scan: Send + Sync {
    /// One page (at most `limit` items) of one segment of a Scan of source
    /// table `table`, strongly consistent, from `start` (a previous page's `next`).
    fn scan_items(
        &self,
        table: &str,
        segment: Segment,
        start: Option<Image>,
        limit: u32,
    ) -> impl Future<Output = Result<Page<Image>, StoreError>> + Send;

    /// One page of one segment of a Scan of the table of index `index`: each
    /// row's key and its non-key attributes.
    fn scan_rows(
        &self,
        index: usize,
        segment: Segment,
        start: Option<Image>,
        limit: u32,
    ) -> impl Future<Output = Result<Page<(RowKey, Image)>, StoreError>> + Send;

    /// One item of a source table by primary key, strongly consistent.
    fn read_item(&self, table: &str, key: &Image) -> impl Future<Output = Result<Option<Image>, StoreError>> + Send;

    /// At most [`MAX_BATCH_READS`] distinct rows of index `index` by key,
    /// strongly consistent.
    fn read_rows(&self, index: usize, keys: Vec<RowKey>) -> impl Future<Output = Result<RowsRead, StoreError>> + Send;
}

/// A shared store scans as the store does.
impl<S: Scan> Scan for std::sync::Arc<S> {
    fn scan_items(
        &self,
        table: &str,
        segment: Segment,
        start: Option<Image>,
        limit: u32,
    ) -> impl Future<Output = Result<Page<Image>, StoreError>> + Send {
        (**self).scan_items(table, segment, start, limit)
    }

    fn scan_rows(
        &self,
        index: usize,
        segment: Segment,
        start: Option<Image>,
        limit: u32,
    ) -> impl Future<Output = Result<Page<(RowKey, Image)>, StoreError>> + Send {
        (**self).scan_rows(index, segment, start, limit)
    }

    fn read_item(&self, table: &str, key: &Image) -> impl Future<Output = Result<Option<Image>, StoreError>> + Send {
        (**self).read_item(table, key)
    }

    fn read_rows(&self, index: usize, keys: Vec<RowKey>) -> impl Future<Output = Result<RowsRead, StoreError>> + Send {
        (**self).read_rows(index, keys)
    }
}

/// What verify and rebuild need of a store beyond [`Scan`]: setting a
/// node's completeness marker, which is now [`Store::set_marker`] (the one
/// executor sends it). Kept as a name for existing bounds
/// (`S: Store + Scan + Marker`); every [`Store`] is one.
///
/// [`Store::set_marker`]: super::Store::set_marker
pub trait Marker: Store {}

impl<S: Store> Marker for S {}

fn cursor(key: Option<HashMap<String, AttributeValue>>, what: &str) -> Result<Option<Image>, StoreError> {
    match key {
        Some(key) if !key.is_empty() => to_image(key)
            .map(Some)
            .map_err(|e| StoreError::refused(format!("{what}: LastEvaluatedKey: {e}"))),
        _ => Ok(None),
    }
}

fn segment_check(segment: Segment, what: &str) -> Result<(), StoreError> {
    if segment.of == 0 || segment.number >= segment.of || segment.of > 1_000_000 {
        return Err(StoreError::refused(format!(
            "{what}: segment {} of {} is not a valid parallel scan segment",
            segment.number, segment.of
        )));
    }
    Ok(())
}

/// Splits an index row as stored into its key and non-key attributes.
fn split_row(partition_key: &str, sort_key: &str, mut item: Image, table: &str) -> Result<(RowKey, Image), StoreError> {
    match (item.remove(partition_key), item.remove(sort_key)) {
        (Some(model::Value::S(partition)), Some(model::Value::S(sort))) => Ok((RowKey { partition, sort }, item)),
        _ => Err(StoreError::refused(format!(
            "Scan on table `{table}`: a row without String key attributes `{partition_key}` and `{sort_key}`"
        ))),
    }
}

impl Scan for DynamoStore {
    async fn scan_items(
        &self,
        table: &str,
        segment: Segment,
        start: Option<Image>,
        limit: u32,
    ) -> Result<Page<Image>, StoreError> {
        let what = format!("Scan on table `{table}`");
        segment_check(segment, &what)?;
        let mut request = self
            .client()
            .scan()
            .table_name(table)
            .consistent_read(true)
            .limit(i32::try_from(limit.max(1)).unwrap_or(i32::MAX))
            .set_exclusive_start_key(start.as_ref().map(to_item));
        if segment.of > 1 {
            request = request
                .segment(i32::try_from(segment.number).unwrap_or(0))
                .total_segments(i32::try_from(segment.of).unwrap_or(1));
        }
        let output = request.send().await.map_err(|e| store_error("Scan", table, e))?;
        let items = output
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|item| to_image(item).map_err(|e| StoreError::refused(format!("{what}: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Page {
            items,
            next: cursor(output.last_evaluated_key, &what)?,
        })
    }

    async fn scan_rows(
        &self,
        index: usize,
        segment: Segment,
        start: Option<Image>,
        limit: u32,
    ) -> Result<Page<(RowKey, Image)>, StoreError> {
        let config = self
            .config()
            .indexes
            .get(index)
            .ok_or_else(|| StoreError::refused(format!("Scan: index #{index} is not in the config")))?;
        let page = self.scan_items(&config.table, segment, start, limit).await?;
        let items = page
            .items
            .into_iter()
            .map(|item| split_row(&config.partition_key, &config.sort_key, item, &config.table))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Page { items, next: page.next })
    }

    async fn read_item(&self, table: &str, key: &Image) -> Result<Option<Image>, StoreError> {
        aws_kit::convert::get_item(self.client(), table, key).await
    }

    async fn read_rows(&self, index: usize, keys: Vec<RowKey>) -> Result<RowsRead, StoreError> {
        let config = self
            .config()
            .indexes
            .get(index)
            .ok_or_else(|| StoreError::refused(format!("BatchGetItem: index #{index} is not in the config")))?;
        if keys.is_empty() {
            return Ok(RowsRead::default());
        }
        if keys.len() > MAX_BATCH_READS {
            return Err(StoreError::refused(format!(
                "BatchGetItem on table `{}`: {} keys, over the limit of {MAX_BATCH_READS}",
                config.table,
                keys.len()
            )));
        }
        let key_item = |k: &RowKey| {
            HashMap::from([
                (config.partition_key.clone(), AttributeValue::S(k.partition.clone())),
                (config.sort_key.clone(), AttributeValue::S(k.sort.clone())),
            ])
        };
        let request = KeysAndAttributes::builder()
            .set_keys(Some(keys.iter().map(key_item).collect()))
            .consistent_read(true)
            .build()
            .map_err(|e| StoreError::refused(format!("BatchGetItem on table `{}`: {e}", config.table)))?;
        let output = self
            .client()
            .batch_get_item()
            .request_items(config.table.clone(), request)
            .send()
            .await
            .map_err(|e: SdkError<_, _>| store_error("BatchGetItem", &config.table, e))?;
        let mut read = RowsRead::default();
        for item in output
            .responses
            .and_then(|mut r| r.remove(&config.table))
            .unwrap_or_default()
        {
            let item = to_image(item)
                .map_err(|e| StoreError::refused(format!("BatchGetItem on table `{}`: {e}", config.table)))?;
            read.found
                .push(split_row(&config.partition_key, &config.sort_key, item, &config.table)?);
        }
        if let Some(unprocessed) = output.unprocessed_keys.and_then(|mut u| u.remove(&config.table)) {
            for key in unprocessed.keys {
                let image = to_image(key)
                    .map_err(|e| StoreError::transient(format!("BatchGetItem on table `{}`: {e}", config.table)))?;
                let (row, _) = split_row(&config.partition_key, &config.sort_key, image, &config.table)?;
                read.unprocessed.push(row);
            }
        }
        Ok(read)
    }
}

impl DynamoStore {
    /// [`Store::set_marker`](super::Store::set_marker) on DynamoDB: a conditional UpdateItem.
    pub(super) async fn update_marker(
        &self,
        edge_set: usize,
        node: &str,
        complete: bool,
        stamp: &super::SetStamp<'_>,
    ) -> Result<SetOutcome, StoreError> {
        let config = self.config();
        let super::EdgeTarget { set, table, sort_key } = super::edge_target(config, edge_set, "UpdateItem")?;
        let request = self
            .client()
            .update_item()
            .table_name(&set.table)
            .key(&table.partition_key, AttributeValue::S(node.to_owned()))
            .key(sort_key, AttributeValue::S(node.to_owned()))
            .update_expression(super::dynamo::stamp_update("SET #marker = :complete", stamp))
            .condition_expression(super::dynamo::stamp_condition("attribute_exists(#pk)", stamp))
            .expression_attribute_names("#marker", &set.complete_attribute)
            .expression_attribute_names("#pk", &table.partition_key)
            .expression_attribute_values(":complete", AttributeValue::Bool(complete));
        let request = super::dynamo::stamp_names(request, stamp);
        match request.send().await {
            Ok(_) if complete => Ok(SetOutcome::Applied),
            Ok(_) => Ok(SetOutcome::Flagged),
            Err(SdkError::ServiceError(e)) if e.err().is_conditional_check_failed_exception() => {
                let old = match e.into_err() {
                    aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(f) => {
                        f.item
                    }
                    _ => None,
                };
                match old {
                    Some(old) if super::dynamo::stamp_stale(&old, stamp) => Ok(SetOutcome::Stale),
                    _ => Ok(SetOutcome::NodeMissing),
                }
            }
            Err(e) => Err(store_error("UpdateItem", &set.table, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_split_into_key_and_attributes() {
        let item = Image::from([
            ("pk".to_owned(), model::Value::S("p".into())),
            ("sk".to_owned(), model::Value::S("s".into())),
            ("name".to_owned(), model::Value::S("n".into())),
        ]);
        let (key, rest) = split_row("pk", "sk", item, "t").unwrap();
        assert_eq!(
            key,
            RowKey {
                partition: "p".into(),
                sort: "s".into()
            }
        );
        assert_eq!(rest.len(), 1);
        let bad = Image::from([("pk".to_owned(), model::Value::N("1".into()))]);
        assert!(split_row("pk", "sk", bad, "t").is_err_and(|e| e.class() == model::Class::Refused));
    }

    #[test]
    fn segments_are_checked() {
        assert!(segment_check(Segment::WHOLE, "x").is_ok());
        assert!(segment_check(Segment { number: 3, of: 4 }, "x").is_ok());
        assert!(segment_check(Segment { number: 4, of: 4 }, "x").is_err());
        assert!(segment_check(Segment { number: 0, of: 0 }, "x").is_err());
    }
}
