//! What DynamoDB itself never puts on a stream, checked once, for both
//! consumers, before any plan or event: a record that fails is poison, and
//! both the indexer and the router quarantine it with the same reason.
//!
//! - numbers DynamoDB can hold (38 significant digits, magnitude 1E-130 to
//!   9.99…E+125), anywhere in an image or the keys;
//! - sets non-empty, without duplicate members (numbers by value: `1` and
//!   `1.0` are one member);
//! - `NULL` only as `true`;
//! - `Keys` holding exactly the table's key attributes, and each image
//!   agreeing with them;
//! - a TTL deletion (`userIdentity`) only on a REMOVE;
//! - `ApproximateCreationDateTime` in seconds, between 2014 (streams began)
//!   and 2100 (a time in milliseconds would be the year 48,000 or so);
//! - each image within DynamoDB's 400 KB item limit.

use std::collections::HashSet;

use crate::config::TableConfig;
use crate::record::{ChangeRecord, EventKind, Raw, Received};
use crate::sortkey;
use crate::value::{Attr, Attrs, Shape};

/// 2014-01-01T00:00:00Z: nothing on a stream is older.
pub const MIN_CREATION_SECONDS: i64 = 1_388_534_400;
/// 2100-01-01T00:00:00Z.
pub const MAX_CREATION_SECONDS: i64 = 4_102_444_800;
pub use crate::value::MAX_ITEM_BYTES;

pub use crate::record::Invalid;

/// Why a record delivered to a consumer is poison, when it fails
/// [`check`]: what both consumers call. `None`
/// for a valid record, an unparsable one (poison already, for its own
/// reason), or one made in process (replay feeds the pipeline's own writes
/// back as typed records, made from the store's own items). The answer is
/// kept in the record: asked again for the same table (the same
/// `TableConfig`, by address, as the consumers and replay's reader share
/// one config), it is not checked again.
pub fn poison<I: Attrs>(received: &Received<'_, I>, table: &TableConfig) -> Option<Invalid> {
    let Ok(record) = &received.record else { return None };
    if matches!(received.raw, Raw::Typed) {
        return None;
    }
    let asked = std::ptr::from_ref(table) as usize;
    if let Some((kept, verdict)) = received.verdict.get() {
        if *kept == asked {
            return verdict.clone();
        }
    }
    let verdict = check(record, table).err();
    // Kept for the first table asked (the record's own, in practice).
    let _ = received.verdict.set((asked, verdict.clone()));
    verdict
}

/// Checks a record of `table` (see the module doc).
pub fn check<I: Attrs>(record: &ChangeRecord<I>, table: &TableConfig) -> Result<(), Invalid> {
    if record.ttl_expiry && record.kind != EventKind::Remove {
        return Err(Invalid::TtlNotRemove {
            kind: record.kind.as_str(),
        });
    }
    if record.created.is_none() && table.stream.is_unordered() {
        return Err(Invalid::NoCreationTime {
            table: table.name.clone(),
        });
    }
    if let Some(created) = &record.created {
        if !(MIN_CREATION_SECONDS..=MAX_CREATION_SECONDS).contains(&created.seconds) {
            return Err(Invalid::CreationTime {
                seconds: created.seconds,
            });
        }
    }
    checked_bytes(&record.keys, "Keys")?;
    let key_names: [Option<&str>; 2] = [Some(table.partition_key.as_str()), table.sort_key.as_deref()];
    let key_names = key_names.iter().flatten();
    // Each key attribute's value in `Keys`, looked up once for both images.
    let mut keys = [None, None];
    for (name, slot) in key_names.clone().zip(&mut keys) {
        let Some(value) = record.keys.get(name) else {
            return Err(Invalid::MissingKey {
                table: table.name.clone(),
                attribute: (*name).to_owned(),
            });
        };
        *slot = Some((*name, value));
    }
    if let Some((extra, _)) = record.keys.iter().find(|(k, _)| !key_names.clone().any(|n| n == k)) {
        return Err(Invalid::ExtraKey {
            table: table.name.clone(),
            attribute: extra.to_owned(),
        });
    }
    for (part, image) in [("NewImage", &record.new), ("OldImage", &record.old)] {
        let Some(image) = image else { continue };
        let bytes = checked_bytes(image, part)?;
        for (name, key) in keys.iter().flatten() {
            let agrees = image.get(name).is_some_and(|value| same_key(value, *key));
            if !agrees {
                return Err(Invalid::KeyMismatch {
                    image: part,
                    attribute: (*name).to_owned(),
                });
            }
        }
        if bytes > MAX_ITEM_BYTES {
            return Err(Invalid::TooLarge { image: part, bytes });
        }
    }
    Ok(())
}

/// Key values compare as DynamoDB compares them: numbers by value.
fn same_key<V: Attr>(a: &V, b: &V) -> bool {
    match (a.shape(), b.shape()) {
        (Shape::N(x), Shape::N(y)) => x == y || sortkey::canonical_number(x).ok() == sortkey::canonical_number(y).ok(),
        _ => a == b,
    }
}

/// Checks every value of an image; its size as DynamoDB counts it, near
/// enough to hold it to the 400 KB limit (attribute names and values,
/// numbers by their text), taken in the same walk.
fn checked_bytes<I: Attrs>(image: &I, part: &str) -> Result<usize, Invalid> {
    entries_ok(image, &mut |name| format!("{part}.{name}"))
}

/// Checks every value of a map (an image, or an `M`); the sum of its names'
/// and values' sizes. With several bad ones, the error is that of the first
/// by name, whatever the map's order (both consumers then give the same
/// reason).
fn entries_ok<M: Attrs>(map: &M, path: &mut dyn FnMut(&str) -> String) -> Result<usize, Invalid> {
    let mut bytes = 0;
    if M::BY_NAME {
        for (key, value) in map.iter() {
            bytes += key.len() + value_ok(value, &mut || path(key))?;
        }
        return Ok(bytes);
    }
    // A hash map: checked in its order, and by name only when one is bad.
    let all_ok = map.iter().all(|(key, value)| match value_ok(value, &mut String::new) {
        Ok(size) => {
            bytes += key.len() + size;
            true
        }
        Err(_) => false,
    });
    if all_ok {
        return Ok(bytes);
    }
    for (key, value) in map.by_name() {
        value_ok(value, &mut || path(key))?;
    }
    // Not reached: the same values, walked in the map's order, had a bad one.
    Ok(bytes)
}

/// Checks one value; its size (see [`checked_bytes`]). `path` names it
/// (built only for an error).
fn value_ok<V: Attr>(value: &V, path: &mut dyn FnMut() -> String) -> Result<usize, Invalid> {
    let texts = |members: &[V::Text]| members.iter().map(|m| m.as_ref().len()).sum();
    match value.shape() {
        Shape::N(n) => number_ok(n, path).map(|()| n.len()),
        Shape::Null(false) => Err(Invalid::NullFalse { path: path() }),
        Shape::Ss(members) => {
            set_ok(members, members, |i| members[i].as_ref().to_owned(), path).map(|()| texts(members))
        }
        Shape::Bs(members) => {
            set_ok(members, members, |i| format!("{:?}", members[i]), path).map(|()| members.iter().map(Vec::len).sum())
        }
        Shape::Ns(members) => {
            for n in members {
                number_ok(n.as_ref(), path)?;
            }
            // Members are one when equal by value (`1` and `1.0`).
            let canonical: Vec<String> = members
                .iter()
                .map(|n| sortkey::canonical_number(n.as_ref()).unwrap_or_else(|_| n.as_ref().to_owned()))
                .collect();
            set_ok(members, &canonical, |i| members[i].as_ref().to_owned(), path).map(|()| texts(members))
        }
        Shape::L(items) => {
            let mut bytes = 3;
            for (i, item) in items.iter().enumerate() {
                bytes += 1 + value_ok(item, &mut || format!("{}[{i}]", path()))?;
            }
            Ok(bytes)
        }
        Shape::M(map) => Ok(3 + map.len() + entries_ok(map, &mut |key| format!("{}.{key}", path()))?),
        Shape::S(s) => Ok(s.len()),
        Shape::B(b) => Ok(b.len()),
        Shape::Bool(_) | Shape::Null(true) => Ok(1),
    }
}

fn number_ok(n: &str, path: &mut dyn FnMut() -> String) -> Result<(), Invalid> {
    if sortkey::is_number(n) {
        return Ok(());
    }
    let mut number: String = n.chars().take(48).collect();
    if number.len() < n.len() {
        number.push('…');
    }
    Err(Invalid::Number { path: path(), number })
}

/// A set: non-empty, and its members distinct by `identity` (one per
/// member, in order; a sorted set, as DynamoDB and the pipeline write them,
/// is checked without hashing). `shown(i)` words member `i` for the error.
fn set_ok<T, K: Ord + std::hash::Hash>(
    members: &[T],
    identity: &[K],
    shown: impl Fn(usize) -> String,
    path: &mut dyn FnMut() -> String,
) -> Result<(), Invalid> {
    if members.is_empty() {
        return Err(Invalid::EmptySet { path: path() });
    }
    let duplicate = if identity.is_sorted() {
        identity.windows(2).position(|w| w[0] == w[1]).map(|i| i + 1)
    } else {
        let mut seen = HashSet::with_capacity(identity.len());
        identity.iter().position(|k| !seen.insert(k))
    };
    match duplicate {
        Some(i) => Err(Invalid::DuplicateMember {
            path: path(),
            member: shown(i),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
