//! The [`Store`] requests on the in-memory tables: row writes, set updates (with DynamoDB's semantics: the node-exists condition, the exact `max_members` union, the marker), partition Queries.

use super::packed::Aside;
use super::rows::Stored;
use super::*;
use crate::store::MemberStamp;
use model::version::{member_version_attribute, MEMBER_VERSION_PREFIX};

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

/// The version a node's edge mark attribute holds, if well-formed.
fn mark_of(held: Option<&Value>) -> Option<Version> {
    match held {
        Some(Value::S(text)) => Version::parse_stored(text),
        _ => None,
    }
}

/// Whether a request's members repeat one (DynamoDB refuses it). Most
/// requests carry one member or a few: those are compared without
/// allocating.
fn has_duplicates(members: &[String]) -> bool {
    match members.len() {
        0 | 1 => false,
        2..=16 => members.iter().enumerate().any(|(i, m)| members[i + 1..].contains(m)),
        _ => {
            let mut sorted: Vec<&String> = members.iter().collect();
            sorted.sort_unstable();
            sorted.windows(2).any(|w| w[0] == w[1])
        }
    }
}

/// Where a node item's member versions are: aside (see `packed`), or
/// among the attributes it shows (an item written with some by another).
enum Members<'a> {
    Aside(Aside<'a>),
    Shown(&'a Image),
}

impl Members<'_> {
    /// The text of the version attribute of `member`, if it is a string.
    fn text(&self, member: &str) -> Option<&str> {
        match self {
            Members::Aside(aside) => aside.text(MEMBER_VERSION_PREFIX, member),
            Members::Shown(item) => match item.get(&member_version_attribute(member)) {
                Some(Value::S(text)) => Some(text),
                _ => None,
            },
        }
    }

    /// Whether `member` has a version attribute, of any type.
    fn has(&self, member: &str) -> bool {
        match self {
            Members::Aside(aside) => aside.has(MEMBER_VERSION_PREFIX, member),
            Members::Shown(item) => item.contains_key(&member_version_attribute(member)),
        }
    }

    /// The version `member` holds.
    fn version(&self, member: &str) -> Option<Version> {
        self.text(member).and_then(Version::parse_stored)
    }
}

/// The members' version attributes an update under `stamp` writes: those
/// that change.
fn member_versions(held: &Members<'_>, stamp: &MemberStamp) -> Vec<(String, Value)> {
    let (version, members, restore) = match stamp {
        MemberStamp::None => return Vec::new(),
        MemberStamp::Newer { version, members } => (version, members, false),
        MemberStamp::Restore { version, members } => (version, members, true),
    };
    members
        .iter()
        .filter(|m| match held.text(m) {
            Some(held) => !restore && held != version.as_str(),
            // Absent, or not a string: a restore leaves what is there.
            None => !restore || !held.has(m),
        })
        .map(|m| (member_version_attribute(m), Value::S(version.as_str().to_owned())))
        .collect()
}

/// The mark value to set, when the stamp sets one that differs.
fn new_mark(stored: Option<&Value>, stamp: &SetStamp) -> Option<Value> {
    let mark = Value::S(stamp.mark.as_ref()?.as_str().to_owned());
    (stored != Some(&mark)).then_some(mark)
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
        let mut state = self.lock();
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
        // Only a tombstone expires (the clock is read for one alone).
        let expires = || super::super::tombstone_expiry(&self.config, &*self.clock);
        let written = if write.put.is_some() || state.keep_tombstones {
            // The check and the write in one lookup.
            let stored = || Stored {
                version: write.version.clone(),
                body: write.put.clone(),
                expires: if write.put.is_some() { 0 } else { expires() },
            };
            state
                .rows
                .store_if(write.index, &write.key, |s| holds(s.map(|s| &s.version)), stored)
        } else {
            let written = holds(state.rows.version(write.index, &write.key));
            if written {
                state.store_row(write, expires());
            }
            written
        };
        Ok(if written {
            RowOutcome::Written
        } else {
            RowOutcome::Stale
        })
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
        let members = match change {
            SetChange::Add(m) | SetChange::Remove(m) => m,
        };
        if has_duplicates(members) {
            return Err(StoreError::refused(
                "ValidationException: Input collection contains duplicates".to_owned(),
            ));
        }
        let state = &mut *state;
        let recording = state.stream.is_some();
        let Some(stored) = state.tables.get_mut(&set.table).and_then(|items| items.node_mut(node)) else {
            // ConditionalCheckFailed: no node, nothing created.
            return Ok(SetOutcome::NodeMissing);
        };
        // Unpacked before the stamp is checked: a stale request is the rare
        // one. Its member versions stay packed, aside (see `packed`), unless
        // the item shows some (written by another, with its attributes):
        // then they are written among them.
        let (mut item, aside_of) = stored.split();
        let aside = !item.keys().any(|name| name.starts_with(MEMBER_VERSION_PREFIX));
        let held = item.get(EDGE_MARK_ATTRIBUTE);
        let versions_held = match aside {
            true => Members::Aside(aside_of),
            false => Members::Shown(&item),
        };
        if !stamp.admits(mark_of(held).as_ref()) || !stamp.members.admits(|m| versions_held.version(m)) {
            return Ok(SetOutcome::Stale);
        }
        let mark = new_mark(held, &stamp);
        let versions = member_versions(&versions_held, &stamp.members);
        // The stored set, sorted and distinct (a set's order means nothing
        // to DynamoDB; keeping it sorted makes each member a binary search).
        let mut sorted = false;
        let current: &[String] = match item.get_mut(&set.attribute) {
            None => &[],
            Some(Value::Ss(m)) => {
                if !m.is_sorted() {
                    m.sort_unstable();
                    m.dedup();
                    sorted = true;
                }
                m
            }
            Some(_) => {
                return Err(StoreError::refused(
                    "ValidationException: An operand in the update expression has an incorrect data type".to_owned(),
                ))
            }
        };
        let present = |m: &String| current.binary_search(m).is_ok();
        let (outcome, add, members) = match change {
            SetChange::Add(members) => {
                let fresh: Vec<&String> = members.iter().filter(|m| !present(m)).collect();
                if current.len() + fresh.len() > set.max_members {
                    (SetOutcome::Flagged, true, Vec::new())
                } else {
                    (SetOutcome::Applied, true, fresh)
                }
            }
            SetChange::Remove(members) => (
                SetOutcome::Applied,
                false,
                members.iter().filter(|m| present(m)).collect(),
            ),
        };
        let marker = Value::Bool(outcome != SetOutcome::Flagged);
        let marker_changes = match item.get(&set.complete_attribute) {
            None => true,
            Some(_) if outcome == SetOutcome::Applied => false,
            Some(stored) => *stored != marker,
        };
        let shown_unchanged = members.is_empty() && !marker_changes && mark.is_none();
        if shown_unchanged && versions.is_empty() {
            if sorted {
                // Stored sorted from now on, as a write would leave it.
                *stored = aside_of.pack(&item, &[]);
            }
            return Ok(outcome);
        }
        let old = recording.then(|| item.clone());
        if !members.is_empty() {
            let set_value = item.get_or_insert_with(&set.attribute, || Value::Ss(Vec::new()));
            if let Value::Ss(stored) = set_value {
                for member in members {
                    match (stored.binary_search(member), add) {
                        (Err(at), true) => stored.insert(at, member.clone()),
                        (Ok(at), false) => {
                            stored.remove(at);
                        }
                        _ => {}
                    }
                }
                if stored.is_empty() {
                    item.remove(&set.attribute);
                }
            }
        }
        if marker_changes {
            item.insert(set.complete_attribute.as_str(), marker);
        }
        if let Some(mark) = mark {
            item.insert(EDGE_MARK_ATTRIBUTE, mark);
        }
        let packed = if aside {
            aside_of.pack(&item, &versions)
        } else {
            for (name, version) in versions {
                item.insert(name.as_str(), version);
            }
            aside_of.pack(&item, &[])
        };
        let was = std::mem::replace(stored, packed);
        if let Some(old) = old {
            let keys = key_image(table, &item);
            // The images leave the member versions out, but of an update
            // that changed nothing else: they would be equal.
            let (old, new) = match aside && shown_unchanged {
                true => (was.with_aside(old), stored.with_aside(item)),
                false => (old, item),
            };
            state.record(&set.table, keys, Some(old), Some(new), Origin::Pipeline);
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// The duplicate check answers as a set of the members would, at
        /// every length (short lists take the path that does not allocate).
        #[test]
        fn duplicates_are_found_as_a_set_finds_them(members in proptest::collection::vec("[a-e]{1,2}", 0..40)) {
            let distinct: std::collections::BTreeSet<&String> = members.iter().collect();
            prop_assert_eq!(super::has_duplicates(&members), distinct.len() != members.len());
        }
    }
}
