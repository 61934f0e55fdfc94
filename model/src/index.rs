//! Multikey indexes: the rows one item image produces for one index.
//!
//! An index is a function from an item image to a set of rows
//! `(partition, sort) → projected attributes`. The partition is rendered from
//! the index's template; the sort key is the CSS1 encoding of the configured
//! columns followed by the source item's primary key (ascending), so two items
//! never share a row. Items lacking a referenced attribute produce no row
//! (sparse); values of the wrong type are errors. An index with `shards`
//! appends the item's shard to the partition ([`shard`]).

use std::fmt::Write as _;

use crate::config::{IndexConfig, TableConfig, TemplatePart, ValueRef};
use crate::sortkey::{self, Column, ColumnType, Direction, SortKeyError};
use crate::value::{Attr, Attrs, Image, Scalar, Shape};

/// DynamoDB's limit on a partition key value, in UTF-8 bytes.
pub const MAX_PARTITION_BYTES: usize = 2048;

/// At most this many rows per item and index; an item with more entries is
/// refused (quarantined) rather than flooding the index table.
pub const MAX_ROWS_PER_ITEM: usize = 1000;

/// The key of one index row (both parts are Strings in the index table).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RowKey {
    pub partition: String,
    pub sort: String,
}

/// Every row one item produces for one index: the keys (sorted, distinct) and
/// the attributes every one of those rows carries.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rows {
    pub keys: Vec<RowKey>,
    /// The source key attributes and the projected attributes the item has.
    pub projection: Image,
    /// Entries of the `for_each` attribute that could not be indexed: each
    /// produces no row, the item's other entries still do.
    pub problems: Vec<IndexError>,
}

/// The row keys of one image (see [`row_keys`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RowKeys {
    /// Sorted and distinct.
    pub keys: Vec<RowKey>,
    /// Entries that produce no row because they cannot be indexed.
    pub problems: Vec<IndexError>,
}

/// Why an item's rows could not be derived. The record goes to quarantine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    #[error("`for_each` attribute `{attribute}` must be a map, list or set, got {found}")]
    ForEachType { attribute: String, found: &'static str },
    #[error("`{attribute}` has {entries} entries, over the index's limit of {limit} rows per item")]
    TooManyRows {
        attribute: String,
        entries: usize,
        limit: usize,
    },
    #[error("{entry}partition template reference `{reference}` must be S, N or BOOL, got {found}")]
    PartitionType {
        entry: EntryLabel,
        reference: String,
        found: &'static str,
    },
    #[error("{entry}partition template reference `{reference}`: {source}")]
    PartitionNumber {
        entry: EntryLabel,
        reference: String,
        source: SortKeyError,
    },
    #[error("{entry}the rendered partition key is empty")]
    PartitionEmpty { entry: EntryLabel },
    #[error("{entry}the rendered partition key is {bytes} bytes, over DynamoDB's {MAX_PARTITION_BYTES}-byte limit")]
    PartitionTooLong { entry: EntryLabel, bytes: usize },
    #[error("{entry}sort column {column} (`{reference}`): {source}")]
    SortColumn {
        entry: EntryLabel,
        column: usize,
        reference: String,
        source: SortKeyError,
    },
    #[error("source key attribute `{attribute}` is missing or not S, N or B")]
    SourceKey { attribute: String },
    #[error("{entry}sort key: {source}")]
    SortKey { entry: EntryLabel, source: SortKeyError },
}

/// Names the `for_each` entry an error is about (empty for per-item indexes).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EntryLabel(pub Option<String>);

impl std::fmt::Display for EntryLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(label) => write!(f, "entry {label}: "),
            None => Ok(()),
        }
    }
}

/// One entry of the `for_each` attribute: its key, and its value as the
/// key code reads it.
struct Entry<'a> {
    key: EntryKey<'a>,
    value: Scalar<'a>,
}

enum EntryKey<'a> {
    Name(&'a str),
    Position(usize),
    /// A set member: the key is the value.
    Member,
}

impl Entry<'_> {
    fn label(&self, attribute: &str) -> EntryLabel {
        EntryLabel(Some(match self.key {
            EntryKey::Name(k) => format!("`{attribute}.{k}`"),
            EntryKey::Position(i) => format!("`{attribute}[{i}]`"),
            EntryKey::Member => format!("member of `{attribute}`"),
        }))
    }

    /// The entry's key as a value: an S, an N (a list position, whose
    /// text is written into `position`) or the member.
    fn key_value<'b>(&'b self, position: &'b mut String) -> Scalar<'b> {
        match self.key {
            EntryKey::Name(k) => Scalar::S(k),
            EntryKey::Position(i) => {
                *position = i.to_string();
                Scalar::N(position)
            }
            EntryKey::Member => self.value,
        }
    }
}

/// Does `item` feed `index` at all (the source's key prefix)?
pub fn selects<I: Attrs>(index: &IndexConfig, table: &TableConfig, item: &I) -> bool {
    match &index.source.key_prefix {
        None => true,
        Some(prefix) => {
            matches!(item.get(&table.partition_key).map(Attr::scalar), Some(Scalar::S(pk)) if pk.starts_with(prefix.as_str()))
        }
    }
}

/// The rows `item` (an image of `table`) produces for `index`.
pub fn rows<I: Attrs>(index: &IndexConfig, table: &TableConfig, item: &I) -> Result<Rows, IndexError> {
    let RowKeys { keys, problems } = row_keys(index, table, item, None)?;
    let projection = if keys.is_empty() {
        Image::new()
    } else {
        projection(index, table, item)
    };
    Ok(Rows {
        keys,
        projection,
        problems,
    })
}

/// Whether rows from distinct `for_each` entries always have distinct keys:
/// true when the partition or a sort column refers to `entry.key` (a map key
/// or a list position, unique within the item). Only then may rows be derived
/// for the changed entries alone (see [`row_keys`]).
pub fn entry_rows_are_distinct(index: &IndexConfig) -> bool {
    index.for_each.is_some()
        && (index.partition.refs().any(|r| *r == ValueRef::EntryKey)
            || index.sort.iter().any(|c| c.value == ValueRef::EntryKey))
}

/// Which `for_each` entries to derive rows for (see [`changed_entries`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryFilter<'a> {
    /// Map entries with these keys.
    Keys(Vec<&'a str>),
    /// List elements at these positions.
    Positions(Vec<usize>),
}

impl EntryFilter<'_> {
    fn admits(&self, key: &EntryKey<'_>) -> bool {
        match (self, key) {
            (EntryFilter::Keys(keys), EntryKey::Name(k)) => keys.contains(k),
            (EntryFilter::Positions(positions), EntryKey::Position(i)) => positions.contains(i),
            _ => true,
        }
    }
}

/// The entries that differ between two values of a `for_each` attribute:
/// `(filter for the old value, filter for the new value)`, each naming the
/// entries of that value that the other does not hold unchanged (the same map
/// key or list position with an equal value). `None` when the two cannot be
/// compared entry by entry (sets, other types, a map against a list).
///
/// Rows of the entries left out are the same in both images, provided every
/// other attribute the index reads is equal too and
/// [`entry_rows_are_distinct`] holds: an entry's rows and problems depend
/// only on the entry and those attributes.
pub fn changed_entries<'a, V: Attr>(
    old: Option<&'a V>,
    new: Option<&'a V>,
) -> Option<(EntryFilter<'a>, EntryFilter<'a>)> {
    let empty_map = || Some(Vec::new());
    let map = |v: Option<&'a V>| match v.map(Attr::shape) {
        Some(Shape::M(m)) => Some(m.by_name()),
        None | Some(Shape::Null(_)) => empty_map(),
        _ => None,
    };
    if let (Some(Shape::L(a)), Some(Shape::L(b))) = (old.map(Attr::shape), new.map(Attr::shape)) {
        let differs = |i: &usize| a.get(*i) != b.get(*i);
        return Some((
            EntryFilter::Positions((0..a.len()).filter(differs).collect()),
            EntryFilter::Positions((0..b.len()).filter(differs).collect()),
        ));
    }
    let (a, b) = (map(old)?, map(new)?);
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x.0 == y.0 => {
                if x.1 != y.1 {
                    only_a.push(x.0);
                    only_b.push(y.0);
                }
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x.0 < y.0 => {
                only_a.push(x.0);
                i += 1;
            }
            (Some(x), None) => {
                only_a.push(x.0);
                i += 1;
            }
            (_, Some(y)) => {
                only_b.push(y.0);
                j += 1;
            }
            (None, None) => break,
        }
    }
    Some((EntryFilter::Keys(only_a), EntryFilter::Keys(only_b)))
}

/// The row keys `item` produces for `index`, sorted and distinct; with
/// `only`, just those of the entries it admits (see [`changed_entries`]).
pub fn row_keys<I: Attrs>(
    index: &IndexConfig,
    table: &TableConfig,
    item: &I,
    only: Option<&EntryFilter<'_>>,
) -> Result<RowKeys, IndexError> {
    row_keys_with(index, table, item, only, Tail::Shared)
}

/// Whether the sort key's end that is the same for every entry of an item
/// is encoded once per item ([`key::constant_tail`]) or for each entry: the
/// same keys either way, which a test checks.
#[derive(Clone, Copy, PartialEq)]
enum Tail {
    Shared,
    #[cfg(test)]
    PerEntry,
}

fn row_keys_with<I: Attrs>(
    index: &IndexConfig,
    table: &TableConfig,
    item: &I,
    only: Option<&EntryFilter<'_>>,
    tail: Tail,
) -> Result<RowKeys, IndexError> {
    if !selects(index, table, item) {
        return Ok(RowKeys::default());
    }
    if matches!(only, Some(EntryFilter::Keys(k)) if k.is_empty())
        || matches!(only, Some(EntryFilter::Positions(p)) if p.is_empty())
    {
        // Still refuse an image with too many entries, as a full derivation would.
        if let Some(attribute) = &index.for_each {
            check_entry_count(attribute, item.get(attribute))?;
        }
        return Ok(RowKeys::default());
    }
    let suffix = key_suffix(table, item)?;
    let mut keys = Vec::new();
    let mut problems = Vec::new();
    match &index.for_each {
        None => keys.extend(row_key(index, item, None, &suffix, None, EntryLabel::default)?),
        Some(attribute) => {
            let value = item.get(attribute);
            check_entry_count(attribute, value)?;
            let entries = entries(attribute, value, only)?;
            keys.reserve(entries.len());
            // Encoded once when more than one entry would encode it.
            let shared = (tail == Tail::Shared && entries.len() > 1)
                .then(|| key::constant_tail(index, item, &suffix))
                .flatten();
            let tail = shared.as_ref().map(|(from, tail)| (*from, tail.as_str()));
            for entry in &entries {
                match row_key(index, item, Some(entry), &suffix, tail, || entry.label(attribute)) {
                    Ok(key) => keys.extend(key),
                    Err(problem) => problems.push(problem),
                }
            }
        }
    }
    keys.sort_unstable();
    keys.dedup();
    Ok(RowKeys { keys, problems })
}

fn check_entry_count<V: Attr>(attribute: &str, value: Option<&V>) -> Result<(), IndexError> {
    let entries = match value.map(Attr::shape) {
        Some(Shape::M(m)) => m.len(),
        Some(Shape::L(l)) => l.len(),
        Some(Shape::Ss(m)) => m.len(),
        Some(Shape::Ns(m)) => m.len(),
        Some(Shape::Bs(m)) => m.len(),
        _ => 0,
    };
    if entries > MAX_ROWS_PER_ITEM {
        return Err(IndexError::TooManyRows {
            attribute: attribute.to_owned(),
            entries,
            limit: MAX_ROWS_PER_ITEM,
        });
    }
    Ok(())
}

fn entries<'a, V: Attr>(
    attribute: &str,
    value: Option<&'a V>,
    only: Option<&EntryFilter<'_>>,
) -> Result<Vec<Entry<'a>>, IndexError> {
    let member = |value| Entry {
        key: EntryKey::Member,
        value,
    };
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    // A map's entries by name (an owned M is a hash map, in no order): so
    // are the entries' rows, and their problems.
    let mut list: Vec<Entry<'a>> = match value.shape() {
        Shape::Null(_) => Vec::new(),
        Shape::M(map) => map
            .by_name()
            .into_iter()
            .map(|(k, value)| Entry {
                key: EntryKey::Name(k),
                value: value.scalar(),
            })
            .collect(),
        Shape::L(list) => list
            .iter()
            .enumerate()
            .map(|(i, value)| Entry {
                key: EntryKey::Position(i),
                value: value.scalar(),
            })
            .collect(),
        Shape::Ss(members) => members.iter().map(|m| member(Scalar::S(m.as_ref()))).collect(),
        Shape::Ns(members) => members.iter().map(|m| member(Scalar::N(m.as_ref()))).collect(),
        Shape::Bs(members) => members.iter().map(|m| member(Scalar::B(m))).collect(),
        Shape::S(_) | Shape::N(_) | Shape::B(_) | Shape::Bool(_) => {
            return Err(IndexError::ForEachType {
                attribute: attribute.to_owned(),
                found: value.type_name(),
            });
        }
    };
    if let Some(only) = only {
        list.retain(|e| only.admits(&e.key));
    }
    Ok(list)
}

/// The attributes every row of the item carries: the source key and the projection.
pub fn projection<I: Attrs>(index: &IndexConfig, table: &TableConfig, item: &I) -> Image {
    projected_names(index, table)
        .filter_map(|name| item.get(name).map(|v| (name.as_str(), v.to_value())))
        .collect()
}

/// Whether two images (absent or not) give the same [`projection`], found
/// without building either.
pub fn same_projection<I: Attrs>(index: &IndexConfig, table: &TableConfig, a: Option<&I>, b: Option<&I>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => projected_names(index, table).all(|name| a.get(name) == b.get(name)),
        (a, b) => a.is_none() && b.is_none(),
    }
}

/// The names a row's [`projection`] takes from the item.
fn projected_names<'c>(index: &'c IndexConfig, table: &'c TableConfig) -> impl Iterator<Item = &'c String> {
    std::iter::once(&table.partition_key)
        .chain(table.sort_key.as_ref())
        .chain(index.project.iter())
}

mod key;
pub mod shard;

use key::{key_suffix, row_key};

#[cfg(test)]
mod tests;
