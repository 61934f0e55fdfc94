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
//! connection failures are [`Class::Transient`](model::Class::Transient); a request DynamoDB
//! refuses for its content is [`Class::Refused`](model::Class::Refused); a missing table,
//! denied access or missing credentials is [`Class::Deployment`](model::Class::Deployment). Every
//! message names the operation and the table(s).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use aws_kit::clock::SystemClock;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::{UpdateItemError, UpdateItemOutput};
use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, ReturnValuesOnConditionCheckFailure, WriteRequest};
use aws_sdk_dynamodb::Client;
use model::config::{EdgeSetConfig, IndexConfig, TableConfig};
use model::index::RowKey;
use model::{Config, Image};

use super::{RowGuard, RowOutcome, RowWrite, SetChange, SetOutcome, SetStamp, Store, StoreError};
use model::version::{TOMBSTONE_ATTRIBUTE, VERSION_ATTRIBUTE};

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
    /// The executor retries [`Class::Transient`](model::Class::Transient) failures and
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

    /// An `UpdateItem` of the node at `key`, with the names and values every
    /// set update uses (`#pk`, `#marker`, `:true`).
    fn update(
        &self,
        set: &EdgeSetConfig,
        table: &TableConfig,
        key: HashMap<String, AttributeValue>,
        stamp: &SetStamp<'_>,
    ) -> UpdateItemFluentBuilder {
        let request = self
            .client
            .update_item()
            .table_name(&set.table)
            .set_key(Some(key))
            .expression_attribute_names("#pk", &table.partition_key)
            .expression_attribute_names("#marker", &set.complete_attribute)
            .expression_attribute_values(":true", AttributeValue::Bool(true));
        stamp::names(request, stamp)
    }

    /// `SET marker = :false` on an existing node.
    async fn flag(
        &self,
        set: &EdgeSetConfig,
        table: &TableConfig,
        key: HashMap<String, AttributeValue>,
        stamp: &SetStamp<'_>,
    ) -> Result<SetOutcome, StoreError> {
        let request = self
            .client
            .update_item()
            .table_name(&set.table)
            .set_key(Some(key))
            .update_expression(stamp::update("SET #marker = :false", stamp))
            .condition_expression(stamp::condition("attribute_exists(#pk)", stamp))
            .expression_attribute_names("#marker", &set.complete_attribute)
            .expression_attribute_names("#pk", &table.partition_key)
            .expression_attribute_values(":false", AttributeValue::Bool(false));
        match attempt(&set.table, stamp::names(request, stamp).send().await)? {
            Attempt::Written => Ok(SetOutcome::Flagged),
            Attempt::Conflict(old) if stamp::stale(&old, stamp) => Ok(SetOutcome::Stale),
            Attempt::NodeMissing | Attempt::Conflict(_) => Ok(SetOutcome::NodeMissing),
            Attempt::TooLarge => Err(StoreError::refused(format!(
                "UpdateItem on table `{}`: flagging the node was refused for the item's size",
                set.table
            ))),
        }
    }

    /// The marker only (`SET marker = if_not_exists(marker, true)`) on an existing node.
    async fn mark(
        &self,
        set: &EdgeSetConfig,
        table: &TableConfig,
        key: HashMap<String, AttributeValue>,
        stamp: &SetStamp<'_>,
    ) -> Result<SetOutcome, StoreError> {
        let result = self
            .update(set, table, key, stamp)
            .update_expression(stamp::update(SET_MARKER, stamp))
            .condition_expression(stamp::condition("attribute_exists(#pk)", stamp))
            .send()
            .await;
        match attempt(&set.table, result)? {
            Attempt::Written => Ok(SetOutcome::Applied),
            Attempt::Conflict(old) if stamp::stale(&old, stamp) => Ok(SetOutcome::Stale),
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
    ///   fails as [`Class::Transient`](model::Class::Transient) (the executor retries it);
    /// - the union does not fit: the node is flagged.
    async fn add(
        &self,
        set: &EdgeSetConfig,
        table: &TableConfig,
        key: HashMap<String, AttributeValue>,
        members: Vec<String>,
        stamp: &SetStamp<'_>,
    ) -> Result<SetOutcome, StoreError> {
        if members.len() > set.max_members {
            // Could never fit, even in an empty set.
            return self.flag(set, table, key, stamp).await;
        }
        let limit = set.max_members - members.len();
        let add = stamp::update(&format!("ADD #set :members {SET_MARKER}"), stamp);
        let result = self
            .update(set, table, key.clone(), stamp)
            .update_expression(&add)
            .condition_expression(stamp::condition(
                "attribute_exists(#pk) AND (attribute_not_exists(#set) OR size(#set) <= :limit)",
                stamp,
            ))
            .expression_attribute_names("#set", &set.attribute)
            .expression_attribute_values(":members", AttributeValue::Ss(members.clone()))
            .expression_attribute_values(":limit", AttributeValue::N(limit.to_string()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let mut old = match attempt(&set.table, result)? {
            Attempt::Written => return Ok(SetOutcome::Applied),
            Attempt::NodeMissing => return Ok(SetOutcome::NodeMissing),
            Attempt::TooLarge => return self.flag(set, table, key, stamp).await,
            Attempt::Conflict(old) => old,
        };
        for _ in 0..MAX_ADD_ROUNDS {
            if stamp::stale(&old, stamp) {
                return Ok(SetOutcome::Stale);
            }
            let current = set_members(&old, set)?;
            let mark_is_set = stamp.mark.is_none() || stamp::stored_mark(&old) == stamp.mark;
            let missing = match plan_add(current, &members, set.max_members) {
                AddPlan::Overflow => return self.flag(set, table, key, stamp).await,
                // Members' versions are written even when the members are
                // there: a newer ADD must outlast an older DELETE to come.
                AddPlan::Present
                    if old.contains_key(&set.complete_attribute)
                        && mark_is_set
                        && stamp.members == super::MemberStamp::None =>
                {
                    return Ok(SetOutcome::Applied)
                }
                AddPlan::Present => return self.mark(set, table, key, stamp).await,
                AddPlan::Missing(missing) => missing,
            };
            let mut request = self
                .update(set, table, key.clone(), stamp)
                .update_expression(&add)
                .expression_attribute_names("#set", &set.attribute)
                .expression_attribute_values(":members", AttributeValue::Ss(missing))
                .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
            // DynamoDB never stores an empty set: no attribute is the empty set.
            request = if current.is_empty() {
                request.condition_expression(stamp::condition(
                    "attribute_exists(#pk) AND attribute_not_exists(#set)",
                    stamp,
                ))
            } else {
                request
                    .condition_expression(stamp::condition(
                        "attribute_exists(#pk) AND size(#set) = :observed",
                        stamp,
                    ))
                    .expression_attribute_values(":observed", AttributeValue::N(current.len().to_string()))
            };
            old = match attempt(&set.table, request.send().await)? {
                Attempt::Written => return Ok(SetOutcome::Applied),
                Attempt::NodeMissing => return Ok(SetOutcome::NodeMissing),
                Attempt::TooLarge => return self.flag(set, table, key, stamp).await,
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
    async fn write_rows(&self, writes: &[RowWrite]) -> Result<Vec<RowWrite>, StoreError> {
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        let expires = super::tombstone_expiry(&self.config, &SystemClock);
        let mut requests: HashMap<String, Vec<WriteRequest>> = HashMap::new();
        // Each write's table and row key: where an unprocessed item goes back to.
        let mut pending: Vec<Option<(&str, &RowWrite)>> = Vec::with_capacity(writes.len());
        let mut distinct = HashSet::with_capacity(writes.len());
        for write in writes {
            let index = self.index(write.index)?;
            let request = write_request(index, write, expires)?;
            requests.entry(index.table.clone()).or_default().push(request);
            pending.push(Some((index.table.as_str(), write)));
            if !distinct.insert((index.table.as_str(), &write.key)) {
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
                let at = pending
                    .iter_mut()
                    .find(|slot| slot.is_some_and(|(t, write)| t == table && write.key == key));
                match at.and_then(Option::take) {
                    Some((_, write)) => unprocessed.push(write.clone()),
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

    async fn put_row_if(&self, write: &RowWrite, guard: &RowGuard) -> Result<RowOutcome, StoreError> {
        self.put_row_conditional(write, guard).await
    }

    async fn update_set_stamped(
        &self,
        edge_set: usize,
        node: &str,
        change: &SetChange,
        stamp: SetStamp<'_>,
    ) -> Result<SetOutcome, StoreError> {
        let stamp = &stamp;
        let super::EdgeTarget { set, table, sort_key } = super::edge_target(&self.config, edge_set, "UpdateItem")?;
        let key = HashMap::from([
            (table.partition_key.clone(), AttributeValue::S(node.to_owned())),
            (sort_key.to_owned(), AttributeValue::S(node.to_owned())),
        ]);
        let (adding, members) = match change {
            SetChange::Add(members) => (true, members),
            SetChange::Remove(members) => (false, members),
        };
        // A String Set holds distinct members; DynamoDB refuses duplicates in a request.
        let members: Vec<String> = members.iter().collect::<BTreeSet<_>>().into_iter().cloned().collect();
        if members.is_empty() {
            // Nothing to add or remove (a restore of a node without edges): only the marker.
            return self.mark(set, table, key, stamp).await;
        }
        if adding {
            return self.add(set, table, key, members, stamp).await;
        }
        let result = self
            .update(set, table, key, stamp)
            .update_expression(stamp::update(&format!("DELETE #set :members {SET_MARKER}"), stamp))
            .condition_expression(stamp::condition("attribute_exists(#pk)", stamp))
            .expression_attribute_names("#set", &set.attribute)
            .expression_attribute_values(":members", AttributeValue::Ss(members))
            .send()
            .await;
        match attempt(&set.table, result)? {
            Attempt::Written => Ok(SetOutcome::Applied),
            Attempt::Conflict(old) if stamp::stale(&old, stamp) => Ok(SetOutcome::Stale),
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

    async fn set_marker_stamped(
        &self,
        edge_set: usize,
        node: &str,
        complete: bool,
        stamp: SetStamp<'_>,
    ) -> Result<SetOutcome, StoreError> {
        self.update_marker(edge_set, node, complete, &stamp).await
    }
}

mod node_update;
mod row_writes;
mod stamp;
use node_update::*;
pub use node_update::{plan_add, AddPlan};
use row_writes::*;
pub(in crate::store) use stamp::{
    condition as stamp_condition, names as stamp_names, stale as stamp_stale, update as stamp_update,
};

#[cfg(test)]
mod tests;
