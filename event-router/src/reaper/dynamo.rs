//! The [`Graph`] port on DynamoDB: GetItem (consistent), Query of a
//! partition (consistent, `aws_kit::convert::query_partition`), Query of the GSI keyed
//! by target (GSIs are eventually consistent: an in-edge written a moment
//! before may be missed, and is then an edge to a missing node, as if
//! written after the reap), BatchWriteItem deletes. The kit's client and
//! error classification (`aws_kit::clients`, `aws_kit::error`).

use std::sync::Arc;

use aws_kit::convert::{get_item, query_partition, to_image, to_item};
use aws_kit::error::table_fault as store_error;
use aws_sdk_dynamodb::types::{DeleteRequest, WriteRequest};
use aws_sdk_dynamodb::Client;
use model::{Config, Image};

use super::{Graph, StoreError};

/// The source tables on DynamoDB.
#[derive(Debug, Clone)]
pub struct DynamoGraph {
    client: Client,
    config: Arc<Config>,
}

impl DynamoGraph {
    /// Use `aws_kit::clients::dynamodb_client` for the client.
    pub fn new(client: Client, config: Arc<Config>) -> DynamoGraph {
        DynamoGraph { client, config }
    }

    fn client(&self) -> &Client {
        &self.client
    }

    fn key_name(&self, table: &str, sort: bool) -> Result<String, StoreError> {
        let config = self
            .config
            .table(table)
            .ok_or_else(|| StoreError::deployment(format!("table `{table}` is not declared in the config")))?;
        if sort {
            config
                .sort_key
                .clone()
                .ok_or_else(|| StoreError::deployment(format!("table `{table}` has no sort key in the config")))
        } else {
            Ok(config.partition_key.clone())
        }
    }
}

fn refused(operation: &str, table: &str, reason: impl std::fmt::Display) -> StoreError {
    StoreError::refused(format!("{operation} on table `{table}`: {reason}"))
}

impl Graph for DynamoGraph {
    async fn get(&self, table: &str, key: &Image) -> Result<Option<Image>, StoreError> {
        get_item(self.client(), table, key).await
    }

    async fn partition(&self, table: &str, partition: &str) -> Result<Vec<Image>, StoreError> {
        let pk = self.key_name(table, false)?;
        query_partition(self.client(), table, None, &pk, partition).await
    }

    async fn pointing_at(&self, table: &str, index: &str, target: &str) -> Result<Vec<Image>, StoreError> {
        // The GSI's partition key is the table's sort key.
        let sort_key = self.key_name(table, true)?;
        query_partition(self.client(), table, Some(index), &sort_key, target).await
    }

    async fn delete(&self, table: &str, keys: Vec<Image>) -> Result<Vec<Image>, StoreError> {
        let requests: Vec<WriteRequest> = keys
            .iter()
            .map(|key| {
                DeleteRequest::builder()
                    .set_key(Some(to_item(key)))
                    .build()
                    .map(|delete| WriteRequest::builder().delete_request(delete).build())
                    .map_err(|e| refused("BatchWriteItem", table, e))
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
