//! The [`Store`] requests on the in-memory tables: row writes, set updates (with DynamoDB's semantics: the node-exists condition, the exact `max_members` union, the marker), partition Queries.

use super::*;

/// DynamoDB's checks of an index row key.
pub(super) fn check_row_key(key: &RowKey) -> Result<(), StoreError> {
    if key.partition.is_empty() || key.sort.is_empty() {
        return Err(StoreError::refused(
            "ValidationException: One or more parameter values are not valid. The AttributeValue for a key \
             attribute cannot contain an empty string value."
                .to_owned(),
        ));
    }
    if key.partition.len() > MAX_PARTITION_BYTES {
        return Err(StoreError::refused(format!(
            "ValidationException: partition key of {} bytes is over the {MAX_PARTITION_BYTES}-byte limit",
            key.partition.len()
        )));
    }
    if key.sort.len() > MAX_KEY_BYTES {
        return Err(StoreError::refused(format!(
            "ValidationException: sort key of {} bytes is over the {MAX_KEY_BYTES}-byte limit",
            key.sort.len()
        )));
    }
    Ok(())
}

impl Store for MemoryStore {
    async fn write_rows(&self, writes: Vec<RowWrite>) -> Result<Vec<RowWrite>, StoreError> {
        let mut state = self.lock();
        state.requests.write_rows += 1;
        if writes.is_empty() || writes.len() > MAX_BATCH_WRITES {
            return Err(StoreError::refused(format!(
                "ValidationException: BatchWriteItem takes 1 to {MAX_BATCH_WRITES} writes, got {}",
                writes.len()
            )));
        }
        let mut seen = BTreeSet::new();
        for write in &writes {
            if write.index >= self.config.indexes.len() {
                return Err(StoreError::deployment(format!(
                    "ResourceNotFoundException: no index table #{}",
                    write.index
                )));
            }
            check_row_key(&write.key)?;
            if !seen.insert((write.index, &write.key)) {
                return Err(StoreError::refused(
                    "ValidationException: Provided list of item keys contains duplicates".to_owned(),
                ));
            }
        }
        for write in writes {
            match write.put {
                Some(attributes) => state.rows.insert((write.index, write.key), attributes),
                None => state.rows.remove(&(write.index, write.key)),
            };
        }
        Ok(Vec::new())
    }

    async fn update_set(&self, edge_set: usize, node: &str, change: SetChange) -> Result<SetOutcome, StoreError> {
        let mut state = self.lock();
        state.requests.update_set += 1;
        let set = self
            .config
            .edge_sets
            .get(edge_set)
            .ok_or_else(|| StoreError::deployment(format!("no edge set #{edge_set} in the config")))?;
        let table = self
            .config
            .table(&set.table)
            .filter(|t| t.sort_key.is_some())
            .ok_or_else(|| StoreError::deployment(format!("ResourceNotFoundException: table `{}`", set.table)))?;
        let members = match &change {
            SetChange::Add(m) | SetChange::Remove(m) => m,
        };
        let distinct: BTreeSet<&String> = members.iter().collect();
        if distinct.len() != members.len() {
            return Err(StoreError::refused(
                "ValidationException: Input collection contains duplicates".to_owned(),
            ));
        }
        let key = ItemKey {
            partition: KeyValue::S(node.to_owned()),
            sort: Some(KeyValue::S(node.to_owned())),
        };
        let Some(item) = state.tables.get(&set.table).and_then(|items| items.get(&key)) else {
            // ConditionalCheckFailed: no node, nothing created.
            return Ok(SetOutcome::NodeMissing);
        };
        let mut current: BTreeSet<String> = match item.get(&set.attribute) {
            None => BTreeSet::new(),
            Some(Value::Ss(m)) => m.iter().cloned().collect(),
            Some(_) => {
                return Err(StoreError::refused(
                    "ValidationException: An operand in the update expression has an incorrect data type".to_owned(),
                ))
            }
        };
        let mut new = item.clone();
        let mut outcome = SetOutcome::Applied;
        match change {
            SetChange::Add(members) => {
                let after = current.len() + members.iter().filter(|m| !current.contains(*m)).count();
                if after > set.max_members {
                    outcome = SetOutcome::Flagged;
                } else {
                    current.extend(members);
                }
            }
            SetChange::Remove(members) => {
                for m in &members {
                    current.remove(m);
                }
            }
        }
        if current.is_empty() {
            new.remove(&set.attribute);
        } else {
            new.insert(set.attribute.clone(), Value::Ss(current.into_iter().collect()));
        }
        if outcome == SetOutcome::Flagged {
            new.insert(set.complete_attribute.clone(), Value::Bool(false));
        } else {
            new.entry(set.complete_attribute.clone()).or_insert(Value::Bool(true));
        }
        if &new != item {
            let keys = key_image(table, &new);
            let old = state
                .tables
                .get_mut(&set.table)
                .and_then(|items| items.insert(key, new.clone()));
            state.record(&set.table, keys, old, Some(new), Origin::Pipeline);
        }
        Ok(outcome)
    }

    async fn query_partition(&self, table: &str, partition: &str) -> Result<Vec<Image>, StoreError> {
        let mut state = self.lock();
        state.requests.query_partition += 1;
        if self.config.table(table).is_none() {
            return Err(StoreError::deployment(format!(
                "ResourceNotFoundException: table `{table}`"
            )));
        }
        let Some(items) = state.tables.get(table) else {
            return Ok(Vec::new());
        };
        let p = KeyValue::S(partition.to_owned());
        Ok(items
            .range(
                ItemKey {
                    partition: p.clone(),
                    sort: None,
                }..,
            )
            .take_while(|(k, _)| k.partition == p)
            .map(|(_, item)| item.clone())
            .collect())
    }

    async fn set_marker(&self, edge_set: usize, node: &str, complete: bool) -> Result<SetOutcome, StoreError> {
        let mut state = self.lock();
        state.requests.update_set += 1;
        let set = self
            .config
            .edge_sets
            .get(edge_set)
            .ok_or_else(|| StoreError::deployment(format!("no edge set #{edge_set} in the config")))?;
        let table = self
            .config
            .table(&set.table)
            .filter(|t| t.sort_key.is_some())
            .ok_or_else(|| StoreError::deployment(format!("ResourceNotFoundException: table `{}`", set.table)))?;
        let key = ItemKey {
            partition: KeyValue::S(node.to_owned()),
            sort: Some(KeyValue::S(node.to_owned())),
        };
        let Some(item) = state.tables.get(&set.table).and_then(|items| items.get(&key)) else {
            return Ok(SetOutcome::NodeMissing);
        };
        let mut new = item.clone();
        new.insert(set.complete_attribute.clone(), Value::Bool(complete));
        if &new != item {
            let keys = key_image(table, &new);
            let old = state
                .tables
                .get_mut(&set.table)
                .and_then(|items| items.insert(key, new.clone()));
            state.record(&set.table, keys, old, Some(new), Origin::Pipeline);
        }
        Ok(if complete {
            SetOutcome::Applied
        } else {
            SetOutcome::Flagged
        })
    }
}
