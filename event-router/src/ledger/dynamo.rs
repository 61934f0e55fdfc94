//! The [`Ledger`] on DynamoDB: the ledger table (`[events] ledger_table`,
//! keyed by `item` and `version`, TTL on `expires`). BatchGetItem
//! (consistent) to tell repeats, BatchWriteItem to note, a Query of one
//! item's newest entry for the reaper. Unprocessed keys are sent again, a
//! bounded number of times, then the request fails as transient.

use std::collections::HashMap;

use aws_kit::error::table_fault;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, PutRequest, WriteRequest};
use aws_sdk_dynamodb::Client;
use model::ledger::{Entry, EXPIRES_ATTRIBUTE, ITEM_ATTRIBUTE, VERSION_ATTRIBUTE};
use model::{Fault, Version};

use super::{Ledger, LedgerFuture};

/// BatchGetItem takes at most this many keys, BatchWriteItem this many writes.
const MAX_GETS: usize = 100;
const MAX_WRITES: usize = 25;
/// Rounds of resending unprocessed keys before giving up (transient).
const MAX_ROUNDS: usize = 8;

/// The ledger table on DynamoDB.
#[derive(Debug, Clone)]
pub struct DynamoLedger {
    client: Client,
    table: String,
}

impl DynamoLedger {
    /// Use `aws_kit::clients::dynamodb_client` for the client.
    pub fn new(client: Client, table: impl Into<String>) -> DynamoLedger {
        DynamoLedger {
            client,
            table: table.into(),
        }
    }

    /// The ledger table of `config` (`[events] ledger_table`), when the
    /// config reads a table from Kinesis; `None` otherwise.
    pub fn for_config(client: &Client, config: &model::Config) -> Option<std::sync::Arc<dyn Ledger>> {
        config
            .reads_kinesis()
            .then(|| std::sync::Arc::new(DynamoLedger::new(client.clone(), config.events.ledger_table.clone())) as _)
    }

    async fn holds_all(&self, entries: &[Entry]) -> Result<Vec<bool>, Fault> {
        let mut held = vec![false; entries.len()];
        let position: HashMap<(&str, &str), usize> = entries
            .iter()
            .enumerate()
            .map(|(i, e)| ((e.item.as_str(), e.version.as_str()), i))
            .collect();
        for chunk in entries.chunks(MAX_GETS) {
            let mut keys: Vec<HashMap<String, AttributeValue>> = chunk.iter().map(key).collect();
            for _ in 0..MAX_ROUNDS {
                if keys.is_empty() {
                    break;
                }
                let request = KeysAndAttributes::builder()
                    .set_keys(Some(std::mem::take(&mut keys)))
                    .consistent_read(true)
                    .build()
                    .map_err(|e| Fault::refused(format!("BatchGetItem on table `{}`: {e}", self.table)))?;
                let output = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, request)
                    .send()
                    .await
                    .map_err(|e| table_fault("BatchGetItem", &self.table, e))?;
                for item in output
                    .responses
                    .unwrap_or_default()
                    .remove(&self.table)
                    .unwrap_or_default()
                {
                    let text = |name: &str| match item.get(name) {
                        Some(AttributeValue::S(text)) => text.as_str(),
                        _ => "",
                    };
                    if let Some(&i) = position.get(&(text(ITEM_ATTRIBUTE), text(VERSION_ATTRIBUTE))) {
                        held[i] = true;
                    }
                }
                keys = output
                    .unprocessed_keys
                    .unwrap_or_default()
                    .remove(&self.table)
                    .map(|k| k.keys)
                    .unwrap_or_default();
            }
            if !keys.is_empty() {
                return Err(self.unprocessed("BatchGetItem", keys.len()));
            }
        }
        Ok(held)
    }

    async fn note_all(&self, entries: &[Entry]) -> Result<(), Fault> {
        for chunk in entries.chunks(MAX_WRITES) {
            let mut writes: Vec<WriteRequest> = chunk.iter().map(put).collect::<Result<_, _>>()?;
            for _ in 0..MAX_ROUNDS {
                if writes.is_empty() {
                    break;
                }
                let output = self
                    .client
                    .batch_write_item()
                    .request_items(&self.table, std::mem::take(&mut writes))
                    .send()
                    .await
                    .map_err(|e| table_fault("BatchWriteItem", &self.table, e))?;
                writes = output
                    .unprocessed_items
                    .unwrap_or_default()
                    .remove(&self.table)
                    .unwrap_or_default();
            }
            if !writes.is_empty() {
                return Err(self.unprocessed("BatchWriteItem", writes.len()));
            }
        }
        Ok(())
    }

    async fn newest_of(&self, item: &str) -> Result<Option<Version>, Fault> {
        let output = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("#item = :item")
            .expression_attribute_names("#item", ITEM_ATTRIBUTE)
            .expression_attribute_values(":item", AttributeValue::S(item.to_owned()))
            .scan_index_forward(false)
            .limit(1)
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| table_fault("Query", &self.table, e))?;
        Ok(output
            .items
            .unwrap_or_default()
            .first()
            .and_then(|found| match found.get(VERSION_ATTRIBUTE) {
                Some(AttributeValue::S(text)) => Version::parse_stored(text),
                _ => None,
            }))
    }

    fn unprocessed(&self, operation: &str, left: usize) -> Fault {
        Fault::transient(format!(
            "{operation} on table `{}`: {left} keys still unprocessed after {MAX_ROUNDS} rounds",
            self.table
        ))
    }
}

fn key(entry: &Entry) -> HashMap<String, AttributeValue> {
    HashMap::from([
        (ITEM_ATTRIBUTE.to_owned(), AttributeValue::S(entry.item.clone())),
        (
            VERSION_ATTRIBUTE.to_owned(),
            AttributeValue::S(entry.version.as_str().to_owned()),
        ),
    ])
}

fn put(entry: &Entry) -> Result<WriteRequest, Fault> {
    let mut item = key(entry);
    item.insert(
        EXPIRES_ATTRIBUTE.to_owned(),
        AttributeValue::N(entry.expires.to_string()),
    );
    let put = PutRequest::builder()
        .set_item(Some(item))
        .build()
        .map_err(|e| Fault::refused(format!("BatchWriteItem of a ledger entry: {e}")))?;
    Ok(WriteRequest::builder().put_request(put).build())
}

impl Ledger for DynamoLedger {
    fn holds<'a>(&'a self, entries: &'a [Entry]) -> LedgerFuture<'a, Vec<bool>> {
        Box::pin(self.holds_all(entries))
    }

    fn note<'a>(&'a self, entries: &'a [Entry]) -> LedgerFuture<'a, ()> {
        Box::pin(self.note_all(entries))
    }

    fn newest<'a>(&'a self, item: &'a str) -> LedgerFuture<'a, Option<Version>> {
        Box::pin(self.newest_of(item))
    }
}
