//! The [`Store`] port on DynamoDB, with `aws-sdk-dynamodb`.
//!
//! - [`Store::write_rows`]: one `BatchWriteItem` across the index tables; the
//!   `UnprocessedItems` come back as the [`RowWrite`]s they were made from.
//! - [`Store::update_set`]: one conditional `UpdateItem` of the node (ADD or
//!   DELETE of members, and the completeness marker set if absent), on
//!   condition that the node exists, so a missing node is never created. An
//!   ADD is exact about `max_members` (|set ∪ members|, see
//!   `DynamoStore::add`): a cheap size condition first, and only when it
//!   fails, the union computed from the node that failed it (returned with
//!   the error) and a second conditional `UpdateItem`: an ADD of the missing
//!   members, the marker alone, or the flag when the union (or the 400 KB
//!   item limit) would be passed.
//! - [`Store::query_partition`]: a strongly consistent `Query`, every page.
//!
//! Build the client with [`dynamodb_client`]: no SDK retries under the
//! executor's, and bounded timeouts.
//!
//! Values are converted between `model::Value` and the SDK's
//! `AttributeValue` by hand: numbers stay their exact decimal text.
//!
//! Errors are classified by [`classify`]: throttling, 5xx, timeouts and
//! connection failures are [`StoreError::Transient`]; a request DynamoDB
//! refuses for its content is [`StoreError::Refused`]; a missing table,
//! denied access or missing credentials is [`StoreError::Deployment`]. Every
//! message names the operation and the table(s).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::{UpdateItemError, UpdateItemOutput};
use aws_sdk_dynamodb::types::{
    AttributeValue, DeleteRequest, PutRequest, ReturnValuesOnConditionCheckFailure, WriteRequest,
};
use aws_sdk_dynamodb::Client;
use model::config::{EdgeSetConfig, IndexConfig, TableConfig};
use model::index::RowKey;
use model::{Config, Image};

use super::{RowWrite, SetChange, SetOutcome, Store, StoreError};

pub use aws_kit::clients::{attempt_timeouts, dynamodb_client, ATTEMPT_TIMEOUT, CONNECT_TIMEOUT};
pub use aws_kit::convert::{from_attribute, to_attribute, to_image, to_item};
pub use aws_kit::error::{classify, is_item_too_large, sdk_fault as sdk_error, table_fault as store_error};

/// The update clause that sets the completeness marker if it is absent.
const SET_MARKER: &str = "SET #marker = if_not_exists(#marker, :true)";

/// Conditional ADDs of an exact-union update ([`DynamoStore::update_set`])
/// after the fast path, before giving up on a set other writers keep changing.
pub const MAX_ADD_ROUNDS: usize = 4;

/// The [`Store`] on DynamoDB (or anything that speaks its API).
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    config: Arc<Config>,
}

impl DynamoStore {
    /// A store writing the index tables and edge sets of `config` through `client`.
    ///
    /// The executor retries [`StoreError::Transient`] failures and
    /// `UnprocessedItems`; build `client` with [`dynamodb_client`] so that
    /// the SDK does not retry underneath it.
    pub fn new(client: Client, config: Arc<Config>) -> DynamoStore {
        DynamoStore { client, config }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn config(&self) -> &Arc<Config> {
        &self.config
    }

    fn index(&self, index: usize) -> Result<&IndexConfig, StoreError> {
        self.config.indexes.get(index).ok_or_else(|| {
            StoreError::refused(format!(
                "BatchWriteItem: index #{index} is not in the config ({} indexes)",
                self.config.indexes.len()
            ))
        })
    }

    fn edge_set(&self, edge_set: usize) -> Result<(&EdgeSetConfig, &TableConfig, &str), StoreError> {
        let set = self.config.edge_sets.get(edge_set).ok_or_else(|| {
            StoreError::refused(format!(
                "UpdateItem: edge set #{edge_set} is not in the config ({} edge sets)",
                self.config.edge_sets.len()
            ))
        })?;
        let table = self.config.table(&set.table).ok_or_else(|| {
            StoreError::deployment(format!(
                "UpdateItem on table `{}`: the table is not declared",
                set.table
            ))
        })?;
        let sort_key = table.sort_key.as_deref().ok_or_else(|| {
            StoreError::deployment(format!(
                "UpdateItem on table `{}`: an edge set needs a table with a sort key",
                set.table
            ))
        })?;
        Ok((set, table, sort_key))
    }

    /// An `UpdateItem` of the node at `key`, with the names and values every
    /// set update uses (`#pk`, `#marker`, `:true`).
    fn update(
        &self,
        set: &EdgeSetConfig,
        table: &TableConfig,
        key: HashMap<String, AttributeValue>,
    ) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&set.table)
            .set_key(Some(key))
            .expression_attribute_names("#pk", &table.partition_key)
            .expression_attribute_names("#marker", &set.complete_attribute)
            .expression_attribute_values(":true", AttributeValue::Bool(true))
    }

    /// `SET marker = :false` on an existing node.
    async fn flag(
        &self,
        set: &EdgeSetConfig,
        table: &TableConfig,
        key: HashMap<String, AttributeValue>,
    ) -> Result<SetOutcome, StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&set.table)
            .set_key(Some(key))
            .update_expression("SET #marker = :false")
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#marker", &set.complete_attribute)
            .expression_attribute_names("#pk", &table.partition_key)
            .expression_attribute_values(":false", AttributeValue::Bool(false))
            .send()
            .await;
        match result {
            Ok(_) => Ok(SetOutcome::Flagged),
            Err(SdkError::ServiceError(e)) if e.err().is_conditional_check_failed_exception() => {
                Ok(SetOutcome::NodeMissing)
            }
            Err(e) => Err(store_error("UpdateItem", &set.table, e)),
        }
    }

    /// The marker only (`SET marker = if_not_exists(marker, true)`) on an existing node.
    async fn mark(
        &self,
        set: &EdgeSetConfig,
        table: &TableConfig,
        key: HashMap<String, AttributeValue>,
    ) -> Result<SetOutcome, StoreError> {
        let result = self
            .update(set, table, key)
            .update_expression(SET_MARKER)
            .condition_expression("attribute_exists(#pk)")
            .send()
            .await;
        match attempt(&set.table, result)? {
            Attempt::Written => Ok(SetOutcome::Applied),
            Attempt::NodeMissing | Attempt::Conflict(_) => Ok(SetOutcome::NodeMissing),
            Attempt::TooLarge => Err(StoreError::refused(format!(
                "UpdateItem on table `{}`: setting the marker was refused for the item's size",
                set.table
            ))),
        }
    }

    /// An ADD of `members` (distinct, not empty), exact about `max_members`:
    /// the node is flagged only when |set ∪ members| > `max_members`.
    ///
    /// The fast path is one `UpdateItem` conditioned on
    /// `size(set) <= max_members - |members|`, which is enough when every
    /// member is new. When that condition fails, the node as it was comes back
    /// with the error (`ReturnValuesOnConditionCheckFailure=ALL_OLD`), and
    /// the union is computed from it ([`plan_add`]):
    /// - all members already present: nothing to add (a replayed ADD, a
    ///   restore of a built set); only the marker is set if it is absent;
    /// - the union fits: an ADD of only the missing members, conditioned on the
    ///   set's size being the one observed. That condition is enough for the
    ///   bound even if another writer swapped members meanwhile: the set
    ///   then still has `observed` members, and adding the `missing` ones
    ///   makes at most `observed + |missing|` ≤ `max_members`. If the size
    ///   changed, the node that failed the condition comes back and the plan
    ///   is made again, at most [`MAX_ADD_ROUNDS`] times, then the request
    ///   fails as [`StoreError::Transient`] (the executor retries it);
    /// - the union does not fit: the node is flagged.
    async fn add(
        &self,
        set: &EdgeSetConfig,
        table: &TableConfig,
        key: HashMap<String, AttributeValue>,
        members: Vec<String>,
    ) -> Result<SetOutcome, StoreError> {
        if members.len() > set.max_members {
            // Could never fit, even in an empty set.
            return self.flag(set, table, key).await;
        }
        let limit = set.max_members - members.len();
        let result = self
            .update(set, table, key.clone())
            .update_expression(format!("ADD #set :members {SET_MARKER}"))
            .condition_expression("attribute_exists(#pk) AND (attribute_not_exists(#set) OR size(#set) <= :limit)")
            .expression_attribute_names("#set", &set.attribute)
            .expression_attribute_values(":members", AttributeValue::Ss(members.clone()))
            .expression_attribute_values(":limit", AttributeValue::N(limit.to_string()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let mut old = match attempt(&set.table, result)? {
            Attempt::Written => return Ok(SetOutcome::Applied),
            Attempt::NodeMissing => return Ok(SetOutcome::NodeMissing),
            Attempt::TooLarge => return self.flag(set, table, key).await,
            Attempt::Conflict(old) => old,
        };
        for _ in 0..MAX_ADD_ROUNDS {
            let current = set_members(&old, set)?;
            let missing = match plan_add(current, &members, set.max_members) {
                AddPlan::Overflow => return self.flag(set, table, key).await,
                AddPlan::Present if old.contains_key(&set.complete_attribute) => return Ok(SetOutcome::Applied),
                AddPlan::Present => return self.mark(set, table, key).await,
                AddPlan::Missing(missing) => missing,
            };
            let mut request = self
                .update(set, table, key.clone())
                .update_expression(format!("ADD #set :members {SET_MARKER}"))
                .expression_attribute_names("#set", &set.attribute)
                .expression_attribute_values(":members", AttributeValue::Ss(missing))
                .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
            // DynamoDB never stores an empty set: no attribute is the empty set.
            request = if current.is_empty() {
                request.condition_expression("attribute_exists(#pk) AND attribute_not_exists(#set)")
            } else {
                request
                    .condition_expression("attribute_exists(#pk) AND size(#set) = :observed")
                    .expression_attribute_values(":observed", AttributeValue::N(current.len().to_string()))
            };
            old = match attempt(&set.table, request.send().await)? {
                Attempt::Written => return Ok(SetOutcome::Applied),
                Attempt::NodeMissing => return Ok(SetOutcome::NodeMissing),
                Attempt::TooLarge => return self.flag(set, table, key).await,
                Attempt::Conflict(old) => old,
            };
        }
        Err(StoreError::transient(format!(
            "UpdateItem on table `{}`: the edge set kept changing under concurrent writers \
             ({MAX_ADD_ROUNDS} conditional ADDs in a row failed)",
            set.table
        )))
    }
}

impl Store for DynamoStore {
    async fn write_rows(&self, writes: Vec<RowWrite>) -> Result<Vec<RowWrite>, StoreError> {
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        let mut requests: HashMap<String, Vec<WriteRequest>> = HashMap::new();
        let mut pending: HashMap<(String, RowKey), RowWrite> = HashMap::with_capacity(writes.len());
        for write in writes {
            let index = self.index(write.index)?;
            let request = write_request(index, &write)?;
            requests.entry(index.table.clone()).or_default().push(request);
            let slot = (index.table.clone(), write.key.clone());
            if pending.insert(slot, write).is_some() {
                return Err(StoreError::refused(format!(
                    "BatchWriteItem on table `{}`: two writes to one row key in one call",
                    index.table
                )));
            }
        }
        let tables = table_list(requests.keys());
        let output = self
            .client
            .batch_write_item()
            .set_request_items(Some(requests))
            .send()
            .await
            .map_err(|e| store_error("BatchWriteItem", &tables, e))?;
        let mut unprocessed = Vec::new();
        for (table, requests) in output.unprocessed_items.unwrap_or_default() {
            for request in requests {
                let Some(key) = unprocessed_key(&self.config, &table, &request) else {
                    return Err(StoreError::transient(format!(
                        "BatchWriteItem on table `{table}`: an unprocessed item has no recognisable row key"
                    )));
                };
                match pending.remove(&(table.clone(), key)) {
                    Some(write) => unprocessed.push(write),
                    None => {
                        return Err(StoreError::transient(format!(
                            "BatchWriteItem on table `{table}`: an unprocessed item matches no write of the call"
                        )))
                    }
                }
            }
        }
        Ok(unprocessed)
    }

    async fn update_set(&self, edge_set: usize, node: &str, change: SetChange) -> Result<SetOutcome, StoreError> {
        let (set, table, sort_key) = self.edge_set(edge_set)?;
        let key = HashMap::from([
            (table.partition_key.clone(), AttributeValue::S(node.to_owned())),
            (sort_key.to_owned(), AttributeValue::S(node.to_owned())),
        ]);
        let (adding, members) = match change {
            SetChange::Add(members) => (true, members),
            SetChange::Remove(members) => (false, members),
        };
        // A String Set holds distinct members; DynamoDB refuses duplicates in a request.
        let members: Vec<String> = members.into_iter().collect::<BTreeSet<_>>().into_iter().collect();
        if members.is_empty() {
            // Nothing to add or remove (a restore of a node without edges): only the marker.
            return self.mark(set, table, key).await;
        }
        if adding {
            return self.add(set, table, key, members).await;
        }
        let result = self
            .update(set, table, key)
            .update_expression(format!("DELETE #set :members {SET_MARKER}"))
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#set", &set.attribute)
            .expression_attribute_values(":members", AttributeValue::Ss(members))
            .send()
            .await;
        match attempt(&set.table, result)? {
            Attempt::Written => Ok(SetOutcome::Applied),
            Attempt::NodeMissing | Attempt::Conflict(_) => Ok(SetOutcome::NodeMissing),
            Attempt::TooLarge => Err(StoreError::refused(format!(
                "UpdateItem on table `{}`: a DELETE of members was refused for the item's size",
                set.table
            ))),
        }
    }

    async fn query_partition(&self, table: &str, partition: &str) -> Result<Vec<Image>, StoreError> {
        let config = self.config.table(table).ok_or_else(|| {
            StoreError::deployment(format!(
                "Query on table `{table}`: the table is not declared in the config"
            ))
        })?;
        aws_kit::convert::query_partition(&self.client, table, None, &config.partition_key, partition).await
    }

    async fn set_marker(&self, edge_set: usize, node: &str, complete: bool) -> Result<SetOutcome, StoreError> {
        self.update_marker(edge_set, node, complete).await
    }
}

/// What one conditional `UpdateItem` of a node did.
enum Attempt {
    Written,
    /// The condition failed and no item came back: there is no node (or the
    /// request did not ask for the item, in which case only the node-exists
    /// clause could fail).
    NodeMissing,
    /// The condition failed on an existing node: the item as it was (ALL_OLD).
    Conflict(HashMap<String, AttributeValue>),
    /// The update would pass DynamoDB's 400 KB item limit.
    TooLarge,
}

fn attempt(
    table: &str,
    result: Result<UpdateItemOutput, SdkError<UpdateItemError, aws_sdk_dynamodb::config::http::HttpResponse>>,
) -> Result<Attempt, StoreError> {
    match result {
        Ok(_) => Ok(Attempt::Written),
        Err(SdkError::ServiceError(e)) if e.err().is_conditional_check_failed_exception() => Ok(match e.into_err() {
            UpdateItemError::ConditionalCheckFailedException(failed) => match failed.item {
                Some(item) if !item.is_empty() => Attempt::Conflict(item),
                _ => Attempt::NodeMissing,
            },
            _ => Attempt::NodeMissing,
        }),
        Err(SdkError::ServiceError(e)) if is_item_too_large(e.err().code(), e.err().message()) => Ok(Attempt::TooLarge),
        Err(e) => Err(store_error("UpdateItem", table, e)),
    }
}

/// The members of the edge set in a node item: none when the attribute is
/// absent (DynamoDB never stores an empty set).
fn set_members<'a>(item: &'a HashMap<String, AttributeValue>, set: &EdgeSetConfig) -> Result<&'a [String], StoreError> {
    match item.get(&set.attribute) {
        None => Ok(&[]),
        Some(AttributeValue::Ss(members)) => Ok(members),
        Some(_) => Err(StoreError::refused(format!(
            "UpdateItem on table `{}`: attribute `{}` of the node is not a string set",
            set.table, set.attribute
        ))),
    }
}

/// What an ADD of members to a set holding `current` must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddPlan {
    /// Every member is already in the set, which is within `max_members`:
    /// nothing to add.
    Present,
    /// These members (distinct, sorted, not empty) are missing, and the set
    /// with them stays within `max_members`.
    Missing(Vec<String>),
    /// |current ∪ members| > `max_members`: the node is to be flagged.
    Overflow,
}

/// The exact-union rule of [`Store::update_set`]: an ADD passes `max_members`
/// only when |current ∪ members| does, so members already present count once.
pub fn plan_add(current: &[String], members: &[String], max_members: usize) -> AddPlan {
    let current: BTreeSet<&str> = current.iter().map(String::as_str).collect();
    let missing: BTreeSet<&str> = members
        .iter()
        .map(String::as_str)
        .filter(|m| !current.contains(m))
        .collect();
    if current.len().saturating_add(missing.len()) > max_members {
        // Also when nothing is missing from a set already past the limit (a
        // limit lowered since): the reference semantics (`MemoryStore`) flag it.
        AddPlan::Overflow
    } else if missing.is_empty() {
        AddPlan::Present
    } else {
        AddPlan::Missing(missing.into_iter().map(str::to_owned).collect())
    }
}

/// The `WriteRequest` for one row write: a put of the row's attributes plus
/// the index's key attributes, or a delete by key.
fn write_request(index: &IndexConfig, write: &RowWrite) -> Result<WriteRequest, StoreError> {
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
fn unprocessed_key(config: &Config, table: &str, request: &WriteRequest) -> Option<RowKey> {
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

fn table_list<'a>(tables: impl Iterator<Item = &'a String>) -> String {
    let mut names: Vec<&str> = tables.map(String::as_str).collect();
    names.sort_unstable();
    names.join("`, `")
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::Value;

    /// A client for a closed loopback port, so nothing leaves the machine.
    fn offline_client(credentials: bool) -> Client {
        let mut config = aws_sdk_dynamodb::Config::builder()
            .behavior_version_latest()
            .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
            .endpoint_url("http://127.0.0.1:1")
            .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled());
        if credentials {
            config =
                config.credentials_provider(aws_sdk_dynamodb::config::Credentials::new("a", "b", None, None, "test"));
        }
        Client::from_conf(config.build())
    }

    fn example_store(credentials: bool) -> DynamoStore {
        let config = model::config::parse(model::config::EXAMPLE_CONFIG, "streamdex.example.toml").unwrap();
        DynamoStore::new(offline_client(credentials), Arc::new(config))
    }

    #[tokio::test]
    async fn real_sdk_failures_are_classified() {
        // No credentials at all: the SDK fails before sending anything.
        let e = example_store(false)
            .query_partition("records", "GOAL-1")
            .await
            .unwrap_err();
        assert!(
            e.class() == model::Class::Deployment && e.message().contains("Query on table `records`"),
            "{e:?}"
        );
        // Nobody listening: the request is not delivered, which is worth retrying.
        let e = example_store(true)
            .update_set(0, "GOAL-1", SetChange::Add(vec!["m".into()]))
            .await
            .unwrap_err();
        assert!(
            e.class() == model::Class::Transient && e.message().contains("UpdateItem on table `records`"),
            "{e:?}"
        );
        // Requests that never need the network.
        let store = example_store(true);
        assert_eq!(store.write_rows(Vec::new()).await, Ok(Vec::new()));
        let unknown = RowWrite {
            index: 7,
            key: RowKey {
                partition: "p".into(),
                sort: "s".into(),
            },
            put: None,
        };
        assert!(store
            .write_rows(vec![unknown])
            .await
            .is_err_and(|e| e.class() == model::Class::Refused));
        assert!(store
            .query_partition("nope", "x")
            .await
            .is_err_and(|e| e.class() == model::Class::Deployment));
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|m| (*m).to_owned()).collect()
    }

    #[test]
    fn an_add_counts_the_union_against_max_members() {
        let full = strings(&["a", "b", "c"]);
        // A replay onto a full set: nothing to add, never flagged.
        assert_eq!(plan_add(&full, &strings(&["a", "b", "c"]), 3), AddPlan::Present);
        assert_eq!(plan_add(&full, &strings(&["c"]), 3), AddPlan::Present);
        // One new member past a full set.
        assert_eq!(plan_add(&full, &strings(&["a", "d"]), 3), AddPlan::Overflow);
        // max - 1 members: 1 new + k existing fits, 2 new do not.
        let almost = strings(&["a", "b"]);
        assert_eq!(
            plan_add(&almost, &strings(&["b", "z", "a"]), 3),
            AddPlan::Missing(strings(&["z"]))
        );
        assert_eq!(plan_add(&almost, &strings(&["d", "e"]), 3), AddPlan::Overflow);
        assert_eq!(plan_add(&almost, &strings(&["d", "e", "a"]), 3), AddPlan::Overflow);
        // An empty (absent) set; duplicates in the request count once.
        assert_eq!(
            plan_add(&[], &strings(&["y", "x", "y"]), 2),
            AddPlan::Missing(strings(&["x", "y"]))
        );
        assert_eq!(plan_add(&[], &strings(&["x", "y", "z"]), 2), AddPlan::Overflow);
        // A set already past a lowered limit stays flagged, as in `MemoryStore`.
        assert_eq!(plan_add(&full, &strings(&["a"]), 2), AddPlan::Overflow);
    }

    #[tokio::test]
    async fn the_union_rule_agrees_with_the_memory_store() {
        use crate::store::memory::MemoryStore;
        // Every subset of a small universe as the set, and as the ADD.
        let universe = ["a", "b", "c", "d"];
        let subset = |bits: u32| -> Vec<String> {
            universe
                .iter()
                .enumerate()
                .filter(|(i, _)| bits & (1 << i) != 0)
                .map(|(_, m)| (*m).to_owned())
                .collect()
        };
        let example = model::config::parse(model::config::EXAMPLE_CONFIG, "streamdex.example.toml").unwrap();
        for max in 1..=4 {
            let mut config = example.clone();
            config.edge_sets[0].max_members = max;
            let config = Arc::new(config);
            let set = &config.edge_sets[0];
            let table = config.table(&set.table).unwrap();
            for current in 0..16u32 {
                for added in 1..16u32 {
                    let (current, added) = (subset(current), subset(added));
                    let store = MemoryStore::new(config.clone());
                    let mut node = Image::new();
                    node.insert(table.partition_key.clone(), Value::S("N".to_owned()));
                    node.insert(table.sort_key.clone().unwrap(), Value::S("N".to_owned()));
                    if !current.is_empty() {
                        node.insert(set.attribute.clone(), Value::Ss(current.clone()));
                    }
                    store.put_item(&set.table, node).unwrap();
                    let outcome = store.update_set(0, "N", SetChange::Add(added.clone())).await.unwrap();
                    let after: BTreeSet<String> = match store.node_sets(0).get("N") {
                        Some(node) => node.members.iter().cloned().collect(),
                        None => BTreeSet::new(),
                    };
                    let case = format!("{current:?} + {added:?}, max {max}");
                    match plan_add(&current, &added, max) {
                        AddPlan::Overflow => assert_eq!(outcome, SetOutcome::Flagged, "{case}"),
                        AddPlan::Present => {
                            assert_eq!(outcome, SetOutcome::Applied, "{case}");
                            assert_eq!(after, current.iter().cloned().collect(), "{case}");
                        }
                        AddPlan::Missing(missing) => {
                            assert_eq!(outcome, SetOutcome::Applied, "{case}");
                            assert!(missing.iter().all(|m| !current.contains(m)), "{case}");
                            assert_eq!(after, current.iter().chain(&missing).cloned().collect(), "{case}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn set_members_are_read_from_the_old_item() {
        let config = model::config::parse(model::config::EXAMPLE_CONFIG, "streamdex.example.toml").unwrap();
        let set = &config.edge_sets[0];
        let mut item = HashMap::from([("x".to_owned(), AttributeValue::S("y".to_owned()))]);
        assert_eq!(set_members(&item, set), Ok(&[][..]));
        item.insert(set.attribute.clone(), AttributeValue::Ss(strings(&["a"])));
        assert_eq!(set_members(&item, set), Ok(&strings(&["a"])[..]));
        item.insert(set.attribute.clone(), AttributeValue::S("a".to_owned()));
        assert!(set_members(&item, set).is_err_and(|e| e.class() == model::Class::Refused));
    }
}
