//! The [`Store`] requests on the in-memory tables: row writes, set updates
//! (worked out in `set_update`, with DynamoDB's semantics), set markers,
//! partition Queries.

use super::rows::Stored;
use super::set_update::{mark_of, new_mark};
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
    async fn write_rows(&self, writes: &[RowWrite]) -> Result<Vec<RowWrite>, StoreError> {
        let mut state = self.lock();
        state.requests.write_rows += 1;
        if writes.is_empty() || writes.len() > MAX_BATCH_WRITES {
            return Err(StoreError::refused(format!(
                "ValidationException: BatchWriteItem takes 1 to {MAX_BATCH_WRITES} writes, got {}",
                writes.len()
            )));
        }
        let mut seen = BTreeSet::new();
        for write in writes {
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
        let expires = super::super::tombstone_expiry(&self.config, &*self.clock);
        for write in writes {
            state.store_row(write, expires);
        }
        Ok(Vec::new())
    }

    async fn put_row_if(&self, write: &RowWrite, guard: &RowGuard) -> Result<RowOutcome, StoreError> {
        self.put_row_locked(&mut self.lock(), write, guard, &mut None)
    }

    /// One lock for them all, and the clock read once.
    async fn put_rows_if(&self, writes: &[RowWrite], guards: &[RowGuard]) -> Vec<Result<RowOutcome, StoreError>> {
        let mut state = self.lock();
        let mut expires = None;
        writes
            .iter()
            .zip(guards)
            .map(|(write, guard)| self.put_row_locked(&mut state, write, guard, &mut expires))
            .collect()
    }

    async fn update_set_stamped(
        &self,
        edge_set: usize,
        node: &str,
        change: &SetChange,
        stamp: SetStamp<'_>,
    ) -> Result<SetOutcome, StoreError> {
        let mut state = self.lock();
        state.requests.update_set += 1;
        let EdgeTarget { set, table, .. } = edge_target(&self.config, edge_set, "UpdateItem")?;
        state.update_set(set, table, node, change, stamp)
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
        Ok(items.partition(&p).map(Packed::unpack).collect())
    }

    async fn set_marker_stamped(
        &self,
        edge_set: usize,
        node: &str,
        complete: bool,
        stamp: SetStamp<'_>,
    ) -> Result<SetOutcome, StoreError> {
        let mut state = self.lock();
        state.requests.update_set += 1;
        let EdgeTarget { set, table, .. } = edge_target(&self.config, edge_set, "UpdateItem")?;
        let state = &mut *state;
        let recording = state.stream.is_some();
        let Some(stored) = state.tables.get_mut(&set.table).and_then(|items| items.node_mut(node)) else {
            return Ok(SetOutcome::NodeMissing);
        };
        let held = stored.get(EDGE_MARK_ATTRIBUTE);
        if !stamp.admits(mark_of(held.as_ref()).as_ref()) {
            return Ok(SetOutcome::Stale);
        }
        let marker = Value::Bool(complete);
        let mark = new_mark(held.as_ref(), &stamp);
        if stored.get(&set.complete_attribute).as_ref() != Some(&marker) || mark.is_some() {
            let (mut item, aside_of) = stored.split();
            let old = recording.then(|| item.clone());
            item.insert(set.complete_attribute.as_str(), marker);
            if let Some(mark) = mark {
                item.insert(EDGE_MARK_ATTRIBUTE, mark);
            }
            *stored = aside_of.pack(&item, &[]);
            if let Some(old) = old {
                let keys = key_image(table, &item);
                state.record(&set.table, keys, Some(old), Some(item), Origin::Pipeline);
            }
        }
        Ok(if complete {
            SetOutcome::Applied
        } else {
            SetOutcome::Flagged
        })
    }
}

impl State {
    /// Stores one row write: the row; for a delete, its tombstone (expiring
    /// at `expires`), or nothing when the store keeps no tombstones.
    fn store_row(&mut self, write: &RowWrite, expires: u64) {
        let (index, key, version) = (write.index, &write.key, write.version.clone());
        match &write.put {
            Some(attributes) => self.rows.put(index, key, attributes.clone(), version),
            None if self.keep_tombstones => self.rows.delete(index, key, version, expires),
            None => self.rows.remove(index, key),
        }
    }
}

impl MemoryStore {
    /// A conditional PutItem on the tables `state` (locked). `expires`: a
    /// tombstone's expiry, read from the clock for the first tombstone of a
    /// request alone.
    fn put_row_locked(
        &self,
        state: &mut State,
        write: &RowWrite,
        guard: &RowGuard,
        expires: &mut Option<u64>,
    ) -> Result<RowOutcome, StoreError> {
        state.requests.put_row_if += 1;
        if write.index >= self.config.indexes.len() {
            return Err(StoreError::deployment(format!(
                "ResourceNotFoundException: no index table #{}",
                write.index
            )));
        }
        check_row_key(&write.key)?;
        let holds = |stored: Option<&Version>| match guard {
            RowGuard::Newer => model::version::newer(&write.version, stored),
            RowGuard::AsRead(read) => stored == read.as_ref(),
        };
        let mut expiry = || *expires.get_or_insert_with(|| super::super::tombstone_expiry(&self.config, &*self.clock));
        let written = if write.put.is_some() || state.keep_tombstones {
            // The check and the write in one lookup.
            let stored = || Stored {
                version: write.version.clone(),
                body: write.put.clone(),
                expires: if write.put.is_some() { 0 } else { expiry() },
            };
            state
                .rows
                .store_if(write.index, &write.key, |s| holds(s.map(|s| &s.version)), stored)
        } else {
            let written = holds(state.rows.version(write.index, &write.key));
            if written {
                state.store_row(write, expiry());
            }
            written
        };
        Ok(if written {
            RowOutcome::Written
        } else {
            RowOutcome::Stale
        })
    }
}
