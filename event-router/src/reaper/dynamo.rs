//! The [`Graph`] port on DynamoDB: GetItem (consistent), Query of a
//! partition (consistent, via the indexer's store), Query of the GSI keyed
//! by target (GSIs are eventually consistent: an in-edge written a moment
//! before may be missed, and is then an edge to a missing node, as if
//! written after the reap), BatchWriteItem deletes. Same client and error
//! classification as the indexer (`stream_indexer::store::dynamo`).

use std::collections::HashMap;
use std::sync::Arc;

use aws_sdk_dynamodb::types::{AttributeValue, DeleteRequest, WriteRequest};
use aws_sdk_dynamodb::Client;
use model::{Config, Image};
use stream_indexer::store::dynamo::{store_error, to_image, to_item, DynamoStore};
use stream_indexer::store::{Store, StoreError};

use super::Graph;

/// The source tables on DynamoDB.
#[derive(Debug, Clone)]
pub struct DynamoGraph {
    store: DynamoStore,
    config: Arc<Config>,
}

impl DynamoGraph {
    /// Use `stream_indexer::store::dynamo::dynamodb_client` for the client.
    pub fn new(client: Client, config: Arc<Config>) -> DynamoGraph {
        DynamoGraph {
            store: DynamoStore::new(client, config.clone()),
            config,
        }
    }

    fn client(&self) -> &Client {
        self.store.client()
    }
}

fn refused(operation: &str, table: &str, reason: String) -> StoreError {
    StoreError::refused(format!("{operation} on table `{table}`: {reason}"))
}

impl Graph for DynamoGraph {
    async fn get(&self, table: &str, key: &Image) -> Result<Option<Image>, StoreError> {
        let output = self
            .client()
            .get_item()
            .table_name(table)
            .set_key(Some(to_item(key)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| store_error("GetItem", table, e))?;
        output
            .item
            .map(to_image)
            .transpose()
            .map_err(|reason| refused("GetItem", table, reason))
    }

    async fn partition(&self, table: &str, partition: &str) -> Result<Vec<Image>, StoreError> {
        self.store.query_partition(table, partition).await
    }

    async fn pointing_at(&self, table: &str, index: &str, target: &str) -> Result<Vec<Image>, StoreError> {
        let sort_key = self
            .config
            .table(table)
            .and_then(|t| t.sort_key.clone())
            .ok_or_else(|| StoreError::deployment(format!("table `{table}` has no sort key in the config")))?;
        let mut items = Vec::new();
        let mut start: Option<HashMap<String, AttributeValue>> = None;
        loop {
            let output = self
                .client()
                .query()
                .table_name(table)
                .index_name(index)
                .key_condition_expression("#target = :target")
                .expression_attribute_names("#target", &sort_key)
                .expression_attribute_values(":target", AttributeValue::S(target.to_owned()))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| store_error(&format!("Query of index `{index}`"), table, e))?;
            for item in output.items.unwrap_or_default() {
                items.push(to_image(item).map_err(|reason| refused("Query", table, reason))?);
            }
            match output.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(items),
            }
        }
    }

    async fn delete(&self, table: &str, keys: Vec<Image>) -> Result<Vec<Image>, StoreError> {
        let requests: Vec<WriteRequest> = keys
            .iter()
            .map(|key| {
                DeleteRequest::builder()
                    .set_key(Some(to_item(key)))
                    .build()
                    .map(|delete| WriteRequest::builder().delete_request(delete).build())
                    .map_err(|e| refused("BatchWriteItem", table, e.to_string()))
            })
            .collect::<Result<_, _>>()?;
        let output = self
            .client()
            .batch_write_item()
            .request_items(table, requests)
            .send()
            .await
            .map_err(|e| store_error("BatchWriteItem", table, e))?;
        let mut left = Vec::new();
        for request in output
            .unprocessed_items
            .unwrap_or_default()
            .remove(table)
            .unwrap_or_default()
        {
            if let Some(key) = request.delete_request.map(|d| d.key) {
                left.push(to_image(key).map_err(|reason| refused("BatchWriteItem", table, reason))?);
            }
        }
        Ok(left)
    }
}
