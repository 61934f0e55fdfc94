//! The in-memory [`Store`]: source tables, index tables and edge sets in one
//! process, with DynamoDB's semantics for exactly the requests the indexer
//! makes (and the limits it checks), so that tests, `replay` and the property
//! tests exercise the same executor as production.
//!
//! - Source tables hold items by primary key. Tests and replays write them
//!   with [`MemoryStore::put_item`] and [`MemoryStore::delete_item`] (a
//!   PutItem and a DeleteItem); the indexer itself only reads them
//!   ([`Store::query_partition`]) and updates node items' edge sets
//!   ([`Store::update_set`]).
//! - Index tables hold rows by `(index, RowKey)`.
//! - Optionally ([`MemoryStore::record_stream`]) every change to a source item
//!   is recorded as the stream record DynamoDB would emit (a write that
//!   changes nothing emits none), tagged with who wrote it, so tests can feed
//!   the pipeline's own writes back in.
//!
//! A std [`Mutex`] guards the state; no lock is held across an `.await`
//! (every method does its work synchronously).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use model::config::{Config, TableConfig};
use model::edge::{self, GraphItem};
use model::index::{self, RowKey, MAX_PARTITION_BYTES};
use model::record::{ChangeRecord, EventKind, ViewType};
use model::sortkey::{self, MAX_KEY_BYTES};
use model::{Image, Value};

use super::scan::{Page, RowsRead, Scan, Segment, MAX_BATCH_READS};
use super::{RowWrite, SetChange, SetOutcome, Store, StoreError, MAX_BATCH_WRITES};

/// A primary key attribute value, as DynamoDB compares them: numbers by value
/// (kept as canonical text), strings and binaries by content.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KeyValue {
    S(String),
    N(String),
    B(Vec<u8>),
}

impl KeyValue {
    /// The key value of an attribute value, if it can be a key (S, N or B).
    pub fn from_value(value: &Value) -> Option<KeyValue> {
        match value {
            Value::S(s) => Some(KeyValue::S(s.clone())),
            Value::N(n) => sortkey::canonical_number(n).ok().map(KeyValue::N),
            Value::B(b) => Some(KeyValue::B(b.clone())),
            _ => None,
        }
    }
}

/// The primary key of a source item.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ItemKey {
    pub partition: KeyValue,
    pub sort: Option<KeyValue>,
}

/// Who made a change to a source item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// [`MemoryStore::put_item`] or [`MemoryStore::delete_item`].
    User,
    /// The indexer's own edge-set update ([`Store::update_set`]).
    Pipeline,
}

/// One recorded stream record.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamEntry {
    pub origin: Origin,
    pub record: ChangeRecord,
}

/// A misuse of the memory store's own helpers (not a [`Store`] request).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    #[error("table `{0}` is not declared in the config")]
    UnknownTable(String),
    #[error("table `{table}`: key attribute `{attribute}` is missing or not S, N or B")]
    BadKey { table: String, attribute: String },
}

/// The edge set of one node, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSet {
    pub members: BTreeSet<String>,
    /// The node's `complete_attribute`, if it is a BOOL.
    pub complete: Option<bool>,
}

/// All derived data: what the pipeline maintains, or what it should hold.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Derived {
    /// `(index position, row key)` → the row's non-key attributes.
    pub rows: BTreeMap<(usize, RowKey), Image>,
    /// `(edge set position, node id)` → the node's set, for every node item.
    pub sets: BTreeMap<(usize, String), NodeSet>,
}

/// How many requests of each kind the store answered (failed ones included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryRequests {
    pub write_rows: usize,
    pub update_set: usize,
    pub query_partition: usize,
}

#[derive(Default)]
struct State {
    tables: BTreeMap<String, BTreeMap<ItemKey, Image>>,
    /// Per table: the items by sort key value (what a GSI keyed by the sort
    /// key, like an edge set's `target_index`, finds without a scan).
    by_sort: BTreeMap<String, BTreeSet<(KeyValue, ItemKey)>>,
    rows: BTreeMap<(usize, RowKey), Image>,
    stream: Option<Vec<StreamEntry>>,
    next_sequence: u128,
    /// Each sequence number is the last plus `last >> shift` (at least 1).
    sequence_growth: Option<u32>,
    requests: MemoryRequests,
}

/// An in-memory DynamoDB for the tables of one config. See the module doc.
pub struct MemoryStore {
    config: Arc<Config>,
    state: Mutex<State>,
}

/// The first sequence number a new store gives out: 21 digits, the shortest
/// DynamoDB uses.
pub const FIRST_SEQUENCE_NUMBER: u128 = 100_000_000_000_000_000_000;

/// Geometric growth stops at 38 digits (a `u128` holds 38 digits and some).
const MAX_SEQUENCE_NUMBER: u128 = 99_999_999_999_999_999_999_999_999_999_999_999_999;

impl MemoryStore {
    pub fn new(config: Arc<Config>) -> MemoryStore {
        let state = State {
            next_sequence: FIRST_SEQUENCE_NUMBER,
            ..State::default()
        };
        MemoryStore {
            config,
            state: Mutex::new(state),
        }
    }

    pub fn config(&self) -> &Arc<Config> {
        &self.config
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves consistent data
        // (every method finishes its update before it could panic).
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts (or stops) recording stream records; stopping discards the unread ones.
    pub fn record_stream(&self, on: bool) {
        let mut state = self.lock();
        match (on, state.stream.is_some()) {
            (true, false) => state.stream = Some(Vec::new()),
            (false, _) => state.stream = None,
            (true, true) => {}
        }
    }

    /// Sets the next sequence number given out (to test sequence numbers of varying length).
    pub fn set_next_sequence_number(&self, next: u128) {
        self.lock().next_sequence = next;
    }

    /// Makes sequence numbers grow geometrically, each the last plus
    /// `last >> shift` (so they gain a digit every `~2.3 · 2^shift` records,
    /// up to 38 digits, then grow by 1): comparing them as strings would go
    /// wrong. `None`: consecutive numbers.
    pub fn grow_sequence_numbers(&self, shift: Option<u32>) {
        self.lock().sequence_growth = shift;
    }

    /// The recorded stream records not yet taken, oldest first.
    pub fn take_stream(&self) -> Vec<StreamEntry> {
        self.lock().stream.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// How many requests the store answered, by kind.
    pub fn requests(&self) -> MemoryRequests {
        self.lock().requests
    }

    fn table(&self, name: &str) -> Result<&TableConfig, MemoryError> {
        self.config
            .table(name)
            .ok_or_else(|| MemoryError::UnknownTable(name.to_owned()))
    }

    /// The primary key of `item` (or of a key image) in `table`.
    pub fn item_key(&self, table: &str, item: &Image) -> Result<ItemKey, MemoryError> {
        item_key(self.table(table)?, item)
    }

    /// PutItem: replaces the whole item. Returns the old item.
    pub fn put_item(&self, table: &str, item: Image) -> Result<Option<Image>, MemoryError> {
        let t = self.table(table)?;
        let key = item_key(t, &item)?;
        let keys = key_image(t, &item);
        let mut state = self.lock();
        if let Some(sort) = &key.sort {
            let entry = (sort.clone(), key.clone());
            state.by_sort.entry(table.to_owned()).or_default().insert(entry);
        }
        let old = state
            .tables
            .entry(table.to_owned())
            .or_default()
            .insert(key, item.clone());
        if old.as_ref() != Some(&item) {
            state.record(table, keys, old.clone(), Some(item), Origin::User);
        }
        Ok(old)
    }

    /// DeleteItem by key (an image holding at least the key attributes).
    /// Returns the deleted item.
    pub fn delete_item(&self, table: &str, key: &Image) -> Result<Option<Image>, MemoryError> {
        let t = self.table(table)?;
        let item_key = item_key(t, key)?;
        let keys = key_image(t, key);
        let mut state = self.lock();
        let old = state.tables.get_mut(table).and_then(|items| items.remove(&item_key));
        if old.is_some() {
            if let (Some(sort), Some(index)) = (&item_key.sort, state.by_sort.get_mut(table)) {
                index.remove(&(sort.clone(), item_key.clone()));
            }
            state.record(table, keys, old.clone(), None, Origin::User);
        }
        Ok(old)
    }

    /// GetItem by key.
    pub fn get_item(&self, table: &str, key: &Image) -> Result<Option<Image>, MemoryError> {
        let item_key = self.item_key(table, key)?;
        Ok(self
            .lock()
            .tables
            .get(table)
            .and_then(|items| items.get(&item_key))
            .cloned())
    }

    /// Every item of a source table, in key order.
    pub fn items(&self, table: &str) -> Vec<Image> {
        self.lock()
            .tables
            .get(table)
            .map(|items| items.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The items of one partition of a source table (a String partition key
    /// value), in key order: a range of the table, not a scan.
    pub fn partition_items(&self, table: &str, partition: &str) -> Vec<Image> {
        let value = KeyValue::S(partition.to_owned());
        let from = ItemKey {
            partition: value.clone(),
            sort: None,
        };
        self.lock()
            .tables
            .get(table)
            .map(|items| {
                items
                    .range(from..)
                    .take_while(|(k, _)| k.partition == value)
                    .map(|(_, item)| item.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The items of a source table whose sort key is the string `value`, in
    /// key order: what a GSI keyed by the sort key finds (kept as the items
    /// are written, so it is a lookup, not a scan).
    pub fn items_by_sort_key(&self, table: &str, value: &str) -> Vec<Image> {
        let value = KeyValue::S(value.to_owned());
        let state = self.lock();
        let (Some(index), Some(items)) = (state.by_sort.get(table), state.tables.get(table)) else {
            return Vec::new();
        };
        index
            .range(
                (
                    value.clone(),
                    ItemKey {
                        partition: KeyValue::S(String::new()),
                        sort: None,
                    },
                )..,
            )
            .take_while(|(sort, _)| *sort == value)
            .filter_map(|(_, key)| items.get(key).cloned())
            .collect()
    }

    /// The rows of one index, in key order: the key and the non-key attributes.
    pub fn rows(&self, index: usize) -> Vec<(RowKey, Image)> {
        let state = self.lock();
        let from = (
            index,
            RowKey {
                partition: String::new(),
                sort: String::new(),
            },
        );
        state
            .rows
            .range(from..)
            .take_while(|((i, _), _)| *i == index)
            .map(|((_, key), row)| (key.clone(), row.clone()))
            .collect()
    }

    /// The stored sets of every node of edge set `edge_set`, by node id.
    pub fn node_sets(&self, edge_set: usize) -> BTreeMap<String, NodeSet> {
        let Some(set) = self.config.edge_sets.get(edge_set) else {
            return BTreeMap::new();
        };
        let Ok(table) = self.table(&set.table) else {
            return BTreeMap::new();
        };
        let state = self.lock();
        let mut out = BTreeMap::new();
        for item in state
            .tables
            .get(&set.table)
            .into_iter()
            .flat_map(|items| items.values())
        {
            if let Ok(GraphItem::Node { id }) = edge::classify(set, table, item) {
                let members = match item.get(&set.attribute) {
                    Some(Value::Ss(members)) => members.iter().cloned().collect(),
                    _ => BTreeSet::new(),
                };
                let complete = match item.get(&set.complete_attribute) {
                    Some(Value::Bool(b)) => Some(*b),
                    _ => None,
                };
                out.insert(id.to_owned(), NodeSet { members, complete });
            }
        }
        out
    }

    /// The derived data as stored: every index row and every node's set.
    pub fn snapshot(&self) -> Derived {
        let rows = self.lock().rows.clone();
        let mut sets = BTreeMap::new();
        for e in 0..self.config.edge_sets.len() {
            for (node, set) in self.node_sets(e) {
                sets.insert((e, node), set);
            }
        }
        Derived { rows, sets }
    }

    /// The derived data recomputed from scratch over the source tables: what
    /// [`MemoryStore::snapshot`] must equal once the stream is processed.
    /// Items that cannot be indexed produce no rows; every node's set holds
    /// the members of its partition's edges and is marked complete (unless it
    /// has more than `max_members`, when it is expected flagged, with
    /// whatever members it has).
    pub fn recompute(&self) -> Derived {
        let state = self.lock();
        let mut derived = Derived::default();
        for (i, index) in self.config.indexes.iter().enumerate() {
            let Some(table) = self.config.table(&index.source.table) else {
                continue;
            };
            for item in state
                .tables
                .get(&table.name)
                .into_iter()
                .flat_map(|items| items.values())
            {
                let rows = index::rows(index, table, item).unwrap_or_default();
                for key in rows.keys {
                    derived.rows.insert((i, key), rows.projection.clone());
                }
            }
        }
        for (e, set) in self.config.edge_sets.iter().enumerate() {
            let Some(table) = self.config.table(&set.table) else {
                continue;
            };
            let items: Vec<&Image> = state
                .tables
                .get(&set.table)
                .into_iter()
                .flat_map(|items| items.values())
                .collect();
            let mut sets: BTreeMap<String, NodeSet> = items
                .iter()
                .filter_map(|item| match edge::classify(set, table, item) {
                    Ok(GraphItem::Node { id }) => Some((
                        id.to_owned(),
                        NodeSet {
                            members: BTreeSet::new(),
                            complete: Some(true),
                        },
                    )),
                    _ => None,
                })
                .collect();
            for item in &items {
                if let Ok(GraphItem::Edge { node, .. }) = edge::classify(set, table, item) {
                    if let (Some(node_set), Ok(Some(member))) = (sets.get_mut(node), edge::member(set, item)) {
                        node_set.members.insert(member);
                    }
                }
            }
            for (node, mut node_set) in sets {
                if node_set.members.len() > set.max_members {
                    node_set.complete = Some(false);
                }
                derived.sets.insert((e, node), node_set);
            }
        }
        derived
    }
}

impl State {
    fn record(&mut self, table: &str, keys: Image, old: Option<Image>, new: Option<Image>, origin: Origin) {
        let Some(stream) = self.stream.as_mut() else { return };
        let kind = match (&old, &new) {
            (None, Some(_)) => EventKind::Insert,
            (Some(_), Some(_)) => EventKind::Modify,
            (Some(_), None) => EventKind::Remove,
            (None, None) => return,
        };
        let sequence_number = self.next_sequence.to_string();
        let step = self
            .sequence_growth
            .map_or(1, |shift| (self.next_sequence >> shift.min(127)).max(1));
        let next = self.next_sequence.saturating_add(step);
        self.next_sequence = if next > MAX_SEQUENCE_NUMBER {
            self.next_sequence.saturating_add(1)
        } else {
            next
        };
        let record = ChangeRecord {
            event_id: Some(format!("memory-{sequence_number}")),
            kind,
            table: Some(table.to_owned()),
            source_arn: Some(stream_arn(table)),
            keys,
            old,
            new,
            sequence_number,
            created: None,
            size_bytes: None,
            view_type: Some(ViewType::NewAndOldImages),
            ttl_expiry: false,
        };
        stream.push(StreamEntry { origin, record });
    }
}

pub use model::delivery::stream_arn;

fn item_key(table: &TableConfig, item: &Image) -> Result<ItemKey, MemoryError> {
    let part = |name: &String| {
        item.get(name)
            .and_then(KeyValue::from_value)
            .ok_or_else(|| MemoryError::BadKey {
                table: table.name.clone(),
                attribute: name.clone(),
            })
    };
    Ok(ItemKey {
        partition: part(&table.partition_key)?,
        sort: table.sort_key.as_ref().map(part).transpose()?,
    })
}

fn key_image(table: &TableConfig, item: &Image) -> Image {
    table
        .primary_key()
        .into_iter()
        .filter_map(|name| item.get(name).map(|v| (name.to_owned(), v.clone())))
        .collect()
}

/// DynamoDB's checks of an index row key.
fn check_row_key(key: &RowKey) -> Result<(), StoreError> {
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

// ---------------------------------------------------------------------------
// The Scan port (verify and rebuild)
// ---------------------------------------------------------------------------

/// Which of `of` parallel scan segments a key falls in (stable within a process).
fn segment_of<K: std::hash::Hash>(key: &K, of: u32) -> u32 {
    use std::hash::Hasher as _;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    u32::try_from(h.finish() % u64::from(of.max(1))).unwrap_or(0)
}

fn check_segment(segment: Segment, what: &str) -> Result<(), StoreError> {
    if segment.of == 0 || segment.number >= segment.of {
        return Err(StoreError::refused(format!(
            "{what}: segment {} of {} is not a valid parallel scan segment",
            segment.number, segment.of
        )));
    }
    Ok(())
}

/// One page of the entries of `range` that fall in `segment`.
fn page_of<'a, K: std::hash::Hash + 'a, V: 'a, T>(
    range: impl Iterator<Item = (&'a K, &'a V)>,
    segment: Segment,
    limit: u32,
    take: impl Fn(&K, &V) -> T,
    cursor: impl Fn(&K) -> Image,
) -> Page<T> {
    let limit = usize::try_from(limit.max(1)).unwrap_or(usize::MAX);
    let mut page = Page {
        items: Vec::new(),
        next: None,
    };
    for (k, v) in range {
        if segment_of(k, segment.of) != segment.number {
            continue;
        }
        page.items.push(take(k, v));
        if page.items.len() >= limit {
            page.next = Some(cursor(k));
            break;
        }
    }
    page
}

impl Scan for MemoryStore {
    async fn scan_items(
        &self,
        table: &str,
        segment: Segment,
        start: Option<Image>,
        limit: u32,
    ) -> Result<Page<Image>, StoreError> {
        let what = format!("Scan on table `{table}`");
        check_segment(segment, &what)?;
        let t = self
            .config
            .table(table)
            .ok_or_else(|| StoreError::deployment(format!("{what}: ResourceNotFoundException")))?;
        let after = start
            .map(|s| item_key(t, &s))
            .transpose()
            .map_err(|e| StoreError::refused(format!("{what}: ExclusiveStartKey: {e}")))?;
        let state = self.lock();
        let Some(items) = state.tables.get(table) else {
            return Ok(Page::default());
        };
        let range: Box<dyn Iterator<Item = (&ItemKey, &Image)>> = match after {
            Some(k) => Box::new(items.range((std::ops::Bound::Excluded(k), std::ops::Bound::Unbounded))),
            None => Box::new(items.iter()),
        };
        Ok(page_of(
            range,
            segment,
            limit,
            |_, item| item.clone(),
            |k| items.get(k).map(|item| key_image(t, item)).unwrap_or_default(),
        ))
    }

    async fn scan_rows(
        &self,
        index: usize,
        segment: Segment,
        start: Option<Image>,
        limit: u32,
    ) -> Result<Page<(RowKey, Image)>, StoreError> {
        let config = self
            .config
            .indexes
            .get(index)
            .ok_or_else(|| StoreError::deployment(format!("Scan: no index table #{index}")))?;
        let what = format!("Scan on table `{}`", config.table);
        check_segment(segment, &what)?;
        let after = match start {
            None => None,
            Some(s) => match (s.get(&config.partition_key), s.get(&config.sort_key)) {
                (Some(Value::S(p)), Some(Value::S(k))) => Some(RowKey {
                    partition: p.clone(),
                    sort: k.clone(),
                }),
                _ => {
                    return Err(StoreError::refused(format!(
                        "{what}: ExclusiveStartKey is not a row key"
                    )))
                }
            },
        };
        let state = self.lock();
        let from = match after {
            Some(k) => std::ops::Bound::Excluded((index, k)),
            None => std::ops::Bound::Included((
                index,
                RowKey {
                    partition: String::new(),
                    sort: String::new(),
                },
            )),
        };
        let range = state
            .rows
            .range((from, std::ops::Bound::Unbounded))
            .take_while(|((i, _), _)| *i == index)
            .map(|((_, k), v)| (k, v));
        Ok(page_of(
            range,
            segment,
            limit,
            |k, v| (k.clone(), v.clone()),
            |k| {
                Image::from([
                    (config.partition_key.clone(), Value::S(k.partition.clone())),
                    (config.sort_key.clone(), Value::S(k.sort.clone())),
                ])
            },
        ))
    }

    async fn read_item(&self, table: &str, key: &Image) -> Result<Option<Image>, StoreError> {
        self.get_item(table, key).map_err(|e| match e {
            MemoryError::UnknownTable(_) => StoreError::deployment(format!("GetItem: {e}")),
            MemoryError::BadKey { .. } => StoreError::refused(format!("GetItem: {e}")),
        })
    }

    async fn read_rows(&self, index: usize, keys: Vec<RowKey>) -> Result<RowsRead, StoreError> {
        if index >= self.config.indexes.len() {
            return Err(StoreError::deployment(format!("BatchGetItem: no index table #{index}")));
        }
        if keys.len() > MAX_BATCH_READS {
            return Err(StoreError::refused(format!(
                "BatchGetItem: {} keys, over the limit of {MAX_BATCH_READS}",
                keys.len()
            )));
        }
        let state = self.lock();
        let found = keys
            .into_iter()
            .filter_map(|k| state.rows.get(&(index, k.clone())).map(|row| (k, row.clone())))
            .collect();
        Ok(RowsRead {
            found,
            unprocessed: Vec::new(),
        })
    }
}

pub use model::delivery::{lambda_event, lambda_record};

#[cfg(test)]
mod tests {
    use super::*;
    use model::config;

    fn s(v: &str) -> Value {
        Value::S(v.to_owned())
    }

    fn store() -> MemoryStore {
        let config = config::parse(config::EXAMPLE_CONFIG, "streamdex.example.toml").expect("valid");
        MemoryStore::new(Arc::new(config))
    }

    fn node(id: &str) -> Image {
        Image::from([("source".to_owned(), s(id)), ("target".to_owned(), s(id))])
    }

    fn edge(node: &str, target: &str, role: &str) -> Image {
        Image::from([
            ("source".to_owned(), s(node)),
            ("target".to_owned(), s(target)),
            ("gsi0".to_owned(), s(role)),
        ])
    }

    fn block<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    #[test]
    fn set_updates_need_the_node_and_create_nothing() {
        let store = store();
        store.record_stream(true);
        let out = block(store.update_set(0, "GOAL-1", SetChange::Add(vec!["A#1".into()])));
        assert_eq!(out, Ok(SetOutcome::NodeMissing));
        assert!(store.items("records").is_empty());
        assert!(store.take_stream().is_empty());
    }

    #[test]
    fn add_remove_marker_and_the_empty_set() {
        let store = store();
        store.put_item("records", node("GOAL-1")).expect("put");
        store.record_stream(true);
        // marker only
        assert_eq!(
            block(store.update_set(0, "GOAL-1", SetChange::Add(vec![]))),
            Ok(SetOutcome::Applied)
        );
        let sets = store.node_sets(0);
        assert_eq!(
            sets["GOAL-1"],
            NodeSet {
                members: BTreeSet::new(),
                complete: Some(true)
            }
        );
        assert_eq!(
            block(store.update_set(0, "GOAL-1", SetChange::Add(vec!["a".into(), "b".into()]))),
            Ok(SetOutcome::Applied)
        );
        assert_eq!(
            block(store.update_set(0, "GOAL-1", SetChange::Remove(vec!["a".into(), "b".into()]))),
            Ok(SetOutcome::Applied)
        );
        let item = store.get_item("records", &node("GOAL-1")).expect("key").expect("item");
        assert!(
            !item.contains_key("edges"),
            "an empty set removes the attribute: {item:?}"
        );
        assert_eq!(item.get("edgesComplete"), Some(&Value::Bool(true)));
        // three changes: marker, add, remove; a no-op emits nothing
        assert_eq!(
            block(store.update_set(0, "GOAL-1", SetChange::Remove(vec!["zz".into()]))),
            Ok(SetOutcome::Applied)
        );
        let stream = store.take_stream();
        assert_eq!(stream.len(), 3);
        assert!(stream
            .iter()
            .all(|e| e.origin == Origin::Pipeline && e.record.kind == EventKind::Modify));
        // duplicates are refused, as DynamoDB does
        let dup = block(store.update_set(0, "GOAL-1", SetChange::Add(vec!["a".into(), "a".into()])));
        assert!(dup.is_err_and(|e| e.class() == model::Class::Refused));
    }

    #[test]
    fn past_max_members_the_node_is_flagged() {
        let mut config = config::parse(config::EXAMPLE_CONFIG, "x.toml").expect("valid");
        config.edge_sets[0].max_members = 2;
        let store = MemoryStore::new(Arc::new(config));
        store.put_item("records", node("N")).expect("put");
        let add =
            |m: &[&str]| block(store.update_set(0, "N", SetChange::Add(m.iter().map(|s| s.to_string()).collect())));
        assert_eq!(add(&["a", "b"]), Ok(SetOutcome::Applied));
        // re-adding present members is not growth
        assert_eq!(add(&["a", "b"]), Ok(SetOutcome::Applied));
        assert_eq!(add(&["c"]), Ok(SetOutcome::Flagged));
        let sets = store.node_sets(0);
        assert_eq!(sets["N"].members.len(), 2);
        assert_eq!(sets["N"].complete, Some(false));
        // the flag stays false
        assert_eq!(
            block(store.update_set(0, "N", SetChange::Remove(vec!["a".into()]))),
            Ok(SetOutcome::Applied)
        );
        assert_eq!(store.node_sets(0)["N"].complete, Some(false));
    }

    #[test]
    fn rows_checks_and_queries() {
        let store = store();
        let key = |p: &str, s: &str| RowKey {
            partition: p.into(),
            sort: s.into(),
        };
        let put = |k: RowKey| RowWrite {
            index: 0,
            key: k,
            put: Some(Image::new()),
        };
        assert_eq!(
            block(store.write_rows(vec![put(key("a", "1")), put(key("b", "1"))])),
            Ok(vec![])
        );
        assert!(block(store.write_rows(vec![put(key("a", "1")), put(key("a", "1"))]))
            .is_err_and(|e| e.class() == model::Class::Refused));
        assert!(block(store.write_rows(vec![put(key("a", &"x".repeat(1025)))]))
            .is_err_and(|e| e.class() == model::Class::Refused));
        assert!(
            block(store.write_rows((0..26).map(|i| put(key("a", &i.to_string()))).collect()))
                .is_err_and(|e| e.class() == model::Class::Refused)
        );
        assert!(block(store.write_rows(vec![RowWrite {
            index: 9,
            key: key("a", "1"),
            put: None
        }]))
        .is_err_and(|e| e.class() == model::Class::Deployment));
        assert_eq!(store.rows(0).len(), 2);
        store.put_item("records", node("N")).expect("put");
        store
            .put_item("records", edge("N", "GOALMEMBERSHIP-U", "1"))
            .expect("put");
        store
            .put_item("records", edge("M", "GOALMEMBERSHIP-U", "1"))
            .expect("put");
        assert_eq!(block(store.query_partition("records", "N")).map(|v| v.len()), Ok(2));
        assert!(block(store.query_partition("nope", "N")).is_err_and(|e| e.class() == model::Class::Deployment));
    }

    #[test]
    fn the_stream_reads_back_through_the_lambda_parser() {
        let store = store();
        store.record_stream(true);
        store.set_next_sequence_number(99);
        store.put_item("records", node("N")).expect("put");
        store
            .put_item("records", edge("N", "GOALMEMBERSHIP-U", "1"))
            .expect("put");
        store.delete_item("records", &node("N")).expect("delete");
        let entries = store.take_stream();
        let payload = lambda_event(entries.iter().map(|e| &e.record));
        let parsed = model::record::parse_batch(&payload).expect("a batch");
        let back: Vec<ChangeRecord> = parsed.into_iter().map(|r| r.record.expect("valid")).collect();
        let original: Vec<ChangeRecord> = entries.into_iter().map(|e| e.record).collect();
        assert_eq!(back, original);
        assert_eq!(back[1].sequence_number, "100");
    }
}
