//! The in-memory [`Store`]: source tables, index tables and edge sets in one
//! process, with DynamoDB's semantics for exactly the requests the indexer
//! makes (and the limits it checks), so that tests, `replay` and the property
//! tests exercise the same executor as production.
//!
//! - Source tables hold items by primary key, each packed in one buffer
//!   (`packed`: a quarter of a hash map's memory). Tests and replays write them
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

use aws_kit::clock::{Clock, SystemClock};
use model::config::{Config, TableConfig};
use model::edge::{self, GraphItem};
use model::index::{self, RowKey, MAX_PARTITION_BYTES};
use model::record::{ChangeRecord, EventKind, SharedText, ViewType};
use model::sortkey::{self, MAX_KEY_BYTES};
use model::value::{Attr, Attrs, Scalar};
use model::{Image, Projection, Value};

use super::scan::{Page, RowsRead, Scan, Segment, MAX_BATCH_READS};
use super::{
    edge_target, EdgeTarget, RowGuard, RowOutcome, RowWrite, SetChange, SetOutcome, SetStamp, Store, StoreError,
    MAX_BATCH_WRITES,
};
use model::version::EDGE_MARK_ATTRIBUTE;
use model::Version;
use packed::Packed;
pub use ready::ReadyItem;

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
    pub fn from_value<V: Attr>(value: &V) -> Option<KeyValue> {
        match value.scalar() {
            Scalar::S(s) => Some(KeyValue::S(s.to_owned())),
            Scalar::N(n) => sortkey::canonical_number(n).ok().map(KeyValue::N),
            Scalar::B(b) => Some(KeyValue::B(b.to_owned())),
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
    pub rows: BTreeMap<(usize, RowKey), Projection>,
    /// `(edge set position, node id)` → the node's set, for every node item.
    pub sets: BTreeMap<(usize, String), NodeSet>,
}

/// How many requests of each kind the store answered (failed ones included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryRequests {
    pub write_rows: usize,
    /// Conditional PutItems of rows ([`Store::put_row_if`]).
    pub put_row_if: usize,
    pub update_set: usize,
    pub query_partition: usize,
}

#[derive(Default)]
struct State {
    tables: BTreeMap<String, table::Table>,
    /// Per table read by sort key so far: the items by sort key value (what
    /// a GSI keyed by the sort key, like an edge set's `target_index`, finds
    /// without a scan).
    by_sort: BTreeMap<String, sort_index::SortIndex>,
    /// Rows of one item share their projection.
    rows: rows::Rows,
    stream: Option<Vec<StreamEntry>>,
    next_sequence: u128,
    /// Each sequence number is the last plus `last >> shift` (at least 1).
    sequence_growth: Option<u32>,
    requests: MemoryRequests,
    /// Whether a deleted row stays as a tombstone (as in DynamoDB; see
    /// [`MemoryStore::without_tombstones`]).
    keep_tombstones: bool,
    /// Per table: its name and stream ARN, shared by the stream records
    /// the store emits for it.
    arns: BTreeMap<String, (SharedText, SharedText)>,
}

/// An in-memory DynamoDB for the tables of one config. See the module doc.
pub struct MemoryStore {
    config: Arc<Config>,
    state: Mutex<State>,
    /// When tombstones written now expire.
    clock: Arc<dyn Clock>,
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
            keep_tombstones: true,
            ..State::default()
        };
        MemoryStore {
            config,
            state: Mutex::new(state),
            clock: Arc::new(SystemClock),
        }
    }

    /// The store, its tombstones' expiry read from `clock`.
    pub fn with_clock(self, clock: Arc<dyn Clock>) -> MemoryStore {
        MemoryStore { clock, ..self }
    }

    /// A store whose deleted rows go at once instead of staying as
    /// tombstones: for a caller that delivers every item's records in order
    /// and never writes guarded (the in-process `replay`), where a tombstone
    /// guards against nothing and would only grow the store with the
    /// history. Reads see the same rows either way.
    #[must_use]
    pub fn without_tombstones(self) -> MemoryStore {
        let mut state = self.lock();
        state.keep_tombstones = false;
        // The layout for rows that come and go; rows already written stay
        // where they are.
        if state.rows.is_empty() {
            state.rows = rows::Rows::churning();
        }
        drop(state);
        self
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

    /// Moves the recorded stream records not yet taken onto the end of
    /// `out`, oldest first (both buffers keep their capacity: a replay
    /// takes the stream after every batch).
    pub fn take_stream_into(&self, out: &mut Vec<StreamEntry>) {
        if let Some(stream) = self.lock().stream.as_mut() {
            out.append(stream);
        }
    }

    /// How many tombstones the index tables keep (deleted rows' versions).
    pub fn tombstones(&self) -> usize {
        self.lock().rows.tombstones()
    }

    /// The version stored for an index row (its own or its tombstone's).
    pub fn row_version(&self, index: usize, key: &RowKey) -> Option<Version> {
        self.lock().rows.version(index, key).cloned()
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
        let shared = table_entry_with(&mut self.arns, table, || {
            (SharedText::kept(table), SharedText::kept(&stream_arn(table)))
        });
        let record = ChangeRecord {
            event_id: Some(format!("memory-{sequence_number}")),
            kind,
            table: Some(shared.0.clone()),
            source_arn: Some(shared.1.clone()),
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

fn item_key<I: Attrs>(table: &TableConfig, item: &I) -> Result<ItemKey, MemoryError> {
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

/// The map of one table's name, made on first use (without allocating the
/// name again on every call).
fn table_entry<'a, T: Default>(map: &'a mut BTreeMap<String, T>, table: &str) -> &'a mut T {
    table_entry_with(map, table, T::default)
}

/// The entry of one table's name, made by `make` on first use.
fn table_entry_with<'a, T>(map: &'a mut BTreeMap<String, T>, table: &str, make: impl FnOnce() -> T) -> &'a mut T {
    if !map.contains_key(table) {
        map.insert(table.to_owned(), make());
    }
    map.get_mut(table).unwrap_or_else(|| unreachable!("inserted above"))
}

fn key_image<I: Attrs>(table: &TableConfig, item: &I) -> Image {
    let mut keys = Image::with_capacity(2);
    for name in std::iter::once(&table.partition_key).chain(&table.sort_key) {
        if let Some(value) = item.get(name) {
            keys.insert(name.as_str(), value.to_value());
        }
    }
    keys
}

pub use model::delivery::{lambda_event, lambda_record};

mod dense;
mod derived;
mod entries;
mod items;
mod packed;
mod ready;
mod requests;
mod rows;
mod scan;
mod set_update;
mod sort_index;
mod table;

#[cfg(test)]
mod tests;
