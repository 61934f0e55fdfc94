//! An index row's key: the partition rendered from its template, the sort
//! key's columns looked up in the item or entry, and the source item's
//! primary key as the suffix that keeps rows of two items apart.

use super::*;

/// Room made at once for a short-lived key text: most keys fit, so it is
/// allocated once rather than grown.
const SCRATCH: usize = 64;

/// The CSS1 encoding of the source item's primary key, appended to every sort key.
pub(super) fn key_suffix<I: Attrs>(table: &TableConfig, item: &I) -> Result<String, IndexError> {
    // Room for both keys at once (the suffix lives only while the item's
    // rows are derived).
    let mut out = String::with_capacity(SCRATCH);
    for attribute in std::iter::once(&table.partition_key).chain(table.sort_key.as_ref()) {
        let value = item.get(attribute).map(Attr::scalar);
        let ty = match value {
            Some(Scalar::S(_)) => ColumnType::S,
            Some(Scalar::N(_)) => ColumnType::N,
            Some(Scalar::B(_)) => ColumnType::B,
            _ => {
                return Err(IndexError::SourceKey {
                    attribute: attribute.clone(),
                })
            }
        };
        sortkey::encode_scalar(&Column::new(ty, Direction::Asc), value, &mut out).map_err(|_| {
            IndexError::SourceKey {
                attribute: attribute.clone(),
            }
        })?;
    }
    Ok(out)
}

/// The value `reference` reads: an attribute of the item, or the entry's
/// value or key (`key_value`, made by the caller when a column needs it).
pub(super) fn lookup<'a, I: Attrs>(
    item: &'a I,
    entry: Option<&Entry<'a>>,
    reference: &ValueRef,
    key_value: Option<Scalar<'a>>,
) -> Option<Scalar<'a>> {
    match reference {
        ValueRef::Attribute(name) => item.get(name).map(Attr::scalar),
        ValueRef::EntryValue => entry.map(|e| e.value),
        ValueRef::EntryKey => match entry {
            Some(Entry {
                key: EntryKey::Member,
                value,
            }) => Some(*value),
            _ => key_value,
        },
    }
}

pub(super) fn describe(reference: &ValueRef) -> String {
    match reference {
        ValueRef::Attribute(name) => name.clone(),
        ValueRef::EntryKey => "entry.key".to_owned(),
        ValueRef::EntryValue => "entry.value".to_owned(),
    }
}

/// The row key for the item (and entry), or `None` when a referenced value
/// is missing. With `tail` (`(from, text)` from [`constant_tail`]), the sort
/// columns from `from` on are not encoded again: `text` is their encoding
/// and the suffix.
pub(super) fn row_key<'a, I: Attrs>(
    index: &IndexConfig,
    item: &'a I,
    entry: Option<&'a Entry<'a>>,
    suffix: &str,
    tail: Option<(usize, &str)>,
    label: impl Fn() -> EntryLabel,
) -> Result<Option<RowKey>, IndexError> {
    // The entry's key as a value, only when a sort column needs one.
    let mut position = String::new();
    let key_value = match entry {
        Some(e) if index.sort.iter().any(|c| c.value == ValueRef::EntryKey) => Some(e.key_value(&mut position)),
        _ => None,
    };
    let Some(mut partition) = render_partition(index, item, entry, key_value, &label)? else {
        return Ok(None);
    };
    if index.shards > 1 {
        shard::push_suffix(&mut partition, shard::shard_of(suffix, index.shards), index.shards);
        if partition.len() > MAX_PARTITION_BYTES {
            return Err(IndexError::PartitionTooLong {
                entry: label(),
                bytes: partition.len(),
            });
        }
    }
    let mut sort = String::with_capacity(32 + suffix.len());
    let (columns, tail) = match tail {
        Some((from, tail)) => (&index.sort[..from], tail),
        None => (&index.sort[..], suffix),
    };
    for (i, column) in columns.iter().enumerate() {
        let value = lookup(item, entry, &column.value, key_value);
        if value.is_none() && !matches!(column.value, ValueRef::Attribute(_)) {
            return Ok(None);
        }
        sortkey::encode_scalar(&column.column, value, &mut sort).map_err(|source| IndexError::SortColumn {
            entry: label(),
            column: i + 1,
            reference: describe(&column.value),
            source,
        })?;
    }
    sort.push_str(tail);
    sortkey::check_length(&sort).map_err(|source| IndexError::SortKey { entry: label(), source })?;
    Ok(Some(RowKey { partition, sort }))
}

pub(super) fn render_partition<'a, I: Attrs>(
    index: &IndexConfig,
    item: &'a I,
    entry: Option<&'a Entry<'a>>,
    key_value: Option<Scalar<'a>>,
    label: &impl Fn() -> EntryLabel,
) -> Result<Option<String>, IndexError> {
    let mut out = String::with_capacity(partition_capacity(index));
    for part in &index.partition.parts {
        match part {
            TemplatePart::Literal(text) => out.push_str(text),
            TemplatePart::Ref(ValueRef::EntryKey) if entry.is_some_and(|e| !matches!(e.key, EntryKey::Member)) => {
                match entry.map(|e| &e.key) {
                    Some(EntryKey::Name(k)) => out.push_str(k),
                    Some(EntryKey::Position(i)) => {
                        let _ = write!(out, "{i}");
                    }
                    _ => {}
                }
            }
            TemplatePart::Ref(reference) => match lookup(item, entry, reference, key_value) {
                None | Some(Scalar::Null(_)) => return Ok(None),
                Some(Scalar::S(s)) => out.push_str(s),
                Some(Scalar::N(n)) => {
                    let canonical = sortkey::canonical_number(n).map_err(|source| IndexError::PartitionNumber {
                        entry: label(),
                        reference: describe(reference),
                        source,
                    })?;
                    out.push_str(&canonical);
                }
                Some(Scalar::Bool(b)) => {
                    let _ = write!(out, "{b}");
                }
                Some(other) => {
                    return Err(IndexError::PartitionType {
                        entry: label(),
                        reference: describe(reference),
                        found: other.type_name(),
                    })
                }
            },
        }
    }
    if out.is_empty() {
        return Err(IndexError::PartitionEmpty { entry: label() });
    }
    if out.len() > MAX_PARTITION_BYTES {
        return Err(IndexError::PartitionTooLong {
            entry: label(),
            bytes: out.len(),
        });
    }
    Ok(Some(out))
}

/// Room for a rendered partition key, so that it is not grown as it is
/// rendered: the literals, a guess at each value (most are ids), and the
/// shard suffix.
fn partition_capacity(index: &IndexConfig) -> usize {
    const VALUE_GUESS: usize = 32;
    let parts: usize = index
        .partition
        .parts
        .iter()
        .map(|part| match part {
            TemplatePart::Literal(text) => text.len(),
            TemplatePart::Ref(_) => VALUE_GUESS,
        })
        .sum();
    let shard = if index.shards > 1 { 1 + 10 } else { 0 };
    parts + shard
}

/// The sort key's end that is the same for every entry of an item: the
/// encodings of the sort columns after the last one that reads the entry,
/// then the suffix; with the position of its first column. `None` when
/// the last column reads the entry (there is no such end), or when one of
/// those columns does not encode (each entry's key then says so, as it
/// would without the tail). In the example config's index, the sort key is
/// `{entry.value}`, then `num`, then the item's key: `num` and the key are
/// encoded once per issue instead of once per custom field.
pub(super) fn constant_tail<I: Attrs>(index: &IndexConfig, item: &I, suffix: &str) -> Option<(usize, String)> {
    let from = index
        .sort
        .iter()
        .rposition(|c| !matches!(c.value, ValueRef::Attribute(_)))
        .map_or(0, |last| last + 1);
    if from == index.sort.len() {
        return None;
    }
    let mut tail = String::with_capacity(SCRATCH + suffix.len());
    for column in &index.sort[from..] {
        // An item attribute (every column from `from` on reads one).
        let value = lookup(item, None, &column.value, None);
        sortkey::encode_scalar(&column.column, value, &mut tail).ok()?;
    }
    tail.push_str(suffix);
    Some((from, tail))
}
