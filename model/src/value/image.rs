//! [`Image`]: an item image (or a key), attribute name → value, held as one
//! vector sorted by name.
//!
//! Why not a `HashMap`: an image has a handful of attributes and is built,
//! read a few times and dropped, once per record. A sorted vector is one
//! allocation instead of a hash table, finds a name without hashing it (a
//! scan of a small image, a binary search of a large one), drops without
//! walking control bytes, and iterates in one
//! order (by name), so nothing that renders an image depends on a hasher's
//! seed. Its methods are the `HashMap` ones the pipeline uses, with the same
//! meaning; equality does not depend on the order attributes were inserted in.
//!
//! Names are [`Name`]s, held inline up to 24 bytes, so an image of short
//! names is that one allocation plus its values' own; the image hands them
//! out as `&str`.
//!
//! A nested `M` value stays `serde_dynamo`'s `HashMap`: [`Image::into_map`]
//! and `From<HashMap<..>>` convert between the two.

use std::collections::HashMap;
use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Value;

/// An attribute name as an image holds it: up to 24 bytes (every name
/// the example config uses, and most names anywhere) are held inline, so
/// reading, unpacking and cloning an image allocates nothing for its names.
pub type Name = compact_str::CompactString;

/// An item image (or a key): attribute name → value, sorted by name.
#[derive(Clone, Default, PartialEq)]
pub struct Image {
    /// Sorted by name, names distinct.
    entries: Vec<(Name, Value)>,
}

/// One entry, borrowed.
type EntryRef<'a> = (&'a str, &'a Value);

/// The iterator over an image's entries, by name.
pub type Iter<'a> = std::iter::Map<std::slice::Iter<'a, (Name, Value)>, fn(&(Name, Value)) -> EntryRef<'_>>;

fn entry_ref((name, value): &(Name, Value)) -> EntryRef<'_> {
    (name.as_str(), value)
}

impl Image {
    /// An empty image.
    pub fn new() -> Image {
        Image::default()
    }

    /// An empty image with room for `capacity` attributes.
    pub fn with_capacity(capacity: usize) -> Image {
        Image {
            entries: Vec::with_capacity(capacity),
        }
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        self.entries.binary_search_by(|(n, _)| n.as_str().cmp(name))
    }

    /// Where attribute `name` is, if the image has it.
    fn position(&self, name: &str) -> Option<usize> {
        if self.entries.len() <= LINEAR {
            // Most names differ in length: a scan compares lengths, not bytes.
            return self.entries.iter().position(|(n, _)| same_name(n.as_str(), name));
        }
        self.find(name).ok()
    }

    /// The value of attribute `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.position(name).map(|at| &self.entries[at].1)
    }

    /// The value of attribute `name`, to change in place.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Value> {
        self.position(name).map(|at| &mut self.entries[at].1)
    }

    /// Whether the image has attribute `name`.
    pub fn contains_key(&self, name: &str) -> bool {
        self.position(name).is_some()
    }

    /// Sets attribute `name`, returning the value it replaced.
    pub fn insert(&mut self, name: impl Into<Name>, value: Value) -> Option<Value> {
        let name = name.into();
        match self.find(&name) {
            Ok(at) => Some(std::mem::replace(&mut self.entries[at].1, value)),
            Err(at) => {
                self.entries.insert(at, (name, value));
                None
            }
        }
    }

    /// The value of attribute `name`, inserting `make()` first when absent.
    pub fn get_or_insert_with(&mut self, name: &str, make: impl FnOnce() -> Value) -> &mut Value {
        let at = match self.find(name) {
            Ok(at) => at,
            Err(at) => {
                self.entries.insert(at, (Name::from(name), make()));
                at
            }
        };
        &mut self.entries[at].1
    }

    /// Removes attribute `name`, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<Value> {
        self.find(name).ok().map(|at| self.entries.remove(at).1)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The attributes, by name.
    pub fn iter(&self) -> Iter<'_> {
        self.entries.iter().map(entry_ref as fn(&(Name, Value)) -> EntryRef<'_>)
    }

    /// The attribute names, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(name, _)| name.as_str())
    }

    /// The image as a nested `M` value's map.
    pub fn into_map(self) -> HashMap<String, Value> {
        self.entries
            .into_iter()
            .map(|(name, value)| (name.into_string(), value))
            .collect()
    }

    /// Builds an image from entries in any order; a repeated name keeps
    /// its last value, as inserting them one by one would.
    fn from_entries(mut entries: Vec<(Name, Value)>) -> Image {
        if entries.len() <= SMALL {
            let mut i = 1;
            while i < entries.len() {
                match sorted_place(&entries, i) {
                    Ok(at) => {
                        let (_, value) = entries.remove(i);
                        entries[at].1 = value;
                    }
                    Err(at) => {
                        entries[at..=i].rotate_right(1);
                        i += 1;
                    }
                }
            }
        } else if !entries.is_sorted_by(|a, b| a.0 < b.0) {
            // Stable, so of a repeated name the last one comes last.
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            entries.dedup_by(|later, earlier| {
                let repeated = later.0 == earlier.0;
                if repeated {
                    std::mem::swap(&mut later.1, &mut earlier.1);
                }
                repeated
            });
        }
        Image { entries }
    }

    /// Builds an image from distinct names pushed in any order, or returns
    /// the first name (in the order given) that repeats an earlier one.
    pub fn from_distinct(mut entries: Vec<(Name, Value)>) -> Result<Image, DuplicateAttribute> {
        if entries.len() <= SMALL {
            for i in 1..entries.len() {
                match sorted_place(&entries, i) {
                    Ok(_) => return Err(DuplicateAttribute::of(&entries[i].0)),
                    Err(at) => entries[at..=i].rotate_right(1),
                }
            }
            return Ok(Image { entries });
        }
        sort_distinct(&mut entries)?;
        Ok(Image { entries })
    }
}

/// An attribute name that appears more than once among an image's entries
/// (the first, in the order given, that repeats an earlier one). Its
/// `Display` is the name alone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}")]
pub struct DuplicateAttribute {
    pub name: String,
}

impl DuplicateAttribute {
    fn of(name: &impl fmt::Display) -> DuplicateAttribute {
        DuplicateAttribute { name: name.to_string() }
    }
}

/// Sorts `entries` by name, or returns the first name (in the order
/// given) that repeats an earlier one: an image's entries, owned or
/// borrowed ([`super::borrowed::Image::from_distinct`]).
pub(super) fn sort_distinct<N: Ord + fmt::Display, V>(entries: &mut [(N, V)]) -> Result<(), DuplicateAttribute> {
    if entries.is_sorted_by(|a, b| a.0 < b.0) {
        return Ok(());
    }
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by(|&a, &b| entries[a].0.cmp(&entries[b].0));
    let first_repeat = order
        .windows(2)
        .filter(|pair| entries[pair[0]].0 == entries[pair[1]].0)
        .map(|pair| pair[1])
        .min();
    if let Some(at) = first_repeat {
        return Err(DuplicateAttribute::of(&entries[at].0));
    }
    permute(entries, &mut order);
    Ok(())
}

/// Puts `entries[order[k]]` at `k` for every `k`, one cycle of the
/// permutation at a time, each entry moved once (sorting the entries again
/// would compare their names again); `order` is left as `0, 1, 2, ...`.
fn permute<T>(entries: &mut [T], order: &mut [usize]) {
    for start in 0..order.len() {
        let mut at = start;
        // The entry first at `start` travels along the cycle until the
        // place that takes it.
        while order[at] != start && order[at] != at {
            let from = order[at];
            entries.swap(at, from);
            order[at] = at;
            at = from;
        }
        order[at] = at;
    }
}

/// Up to this many entries, a name is looked up by a scan.
const LINEAR: usize = 16;

/// Whether two attribute names are the same, compared in place: most names
/// are under 16 bytes, and for those a call to `memcmp` per entry scanned
/// costs more than the comparison (two overlapping words, or two halves, or
/// the three bytes of a name of three or fewer).
#[inline]
pub(super) fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        8..=16 => a.first_chunk::<8>() == b.first_chunk::<8>() && a.last_chunk::<8>() == b.last_chunk::<8>(),
        4..=7 => a.first_chunk::<4>() == b.first_chunk::<4>() && a.last_chunk::<4>() == b.last_chunk::<4>(),
        0..=3 => a.first() == b.first() && a.get(n / 2) == b.get(n / 2) && a.last() == b.last(),
        _ => a == b,
    }
}

/// Up to this many entries, an image is sorted by insertion as it is built
/// (no scratch space, and the first repeated name is found as it comes).
const SMALL: usize = 64;

/// Where entry `i` goes among the sorted entries before it: `Ok` at an
/// equal name, `Err` at the place that keeps them sorted.
fn sorted_place(entries: &[(Name, Value)], i: usize) -> Result<usize, usize> {
    let name = entries[i].0.as_str();
    if entries[i - 1].0.as_str() < name {
        return Err(i);
    }
    entries[..i].binary_search_by(|(n, _)| n.as_str().cmp(name))
}

impl fmt::Debug for Image {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl std::ops::Index<&str> for Image {
    type Output = Value;

    /// The value of attribute `name`; panics when absent, as `HashMap`'s does.
    fn index(&self, name: &str) -> &Value {
        match self.get(name) {
            Some(value) => value,
            None => panic!("no attribute `{name}` in the image"),
        }
    }
}

impl<N: Into<Name>> FromIterator<(N, Value)> for Image {
    fn from_iter<I: IntoIterator<Item = (N, Value)>>(iter: I) -> Image {
        Image::from_entries(iter.into_iter().map(|(name, value)| (name.into(), value)).collect())
    }
}

impl<N: Into<Name>, const L: usize> From<[(N, Value); L]> for Image {
    fn from(entries: [(N, Value); L]) -> Image {
        entries.into_iter().collect()
    }
}

impl From<HashMap<String, Value>> for Image {
    fn from(map: HashMap<String, Value>) -> Image {
        map.into_iter().collect()
    }
}

impl<N: Into<Name>> Extend<(N, Value)> for Image {
    fn extend<I: IntoIterator<Item = (N, Value)>>(&mut self, iter: I) {
        for (name, value) in iter {
            self.insert(name, value);
        }
    }
}

impl IntoIterator for Image {
    type Item = (Name, Value);
    type IntoIter = std::vec::IntoIter<(Name, Value)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<'a> IntoIterator for &'a Image {
    type Item = EntryRef<'a>;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl Serialize for Image {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (name, value) in self {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Image {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Image, D::Error> {
        struct ImageVisitor;
        impl<'de> Visitor<'de> for ImageVisitor {
            type Value = Image;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of attribute names to DynamoDB values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Image, A::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(8).min(64));
                while let Some(entry) = map.next_entry::<Name, Value>()? {
                    entries.push(entry);
                }
                Ok(Image::from_entries(entries))
            }
        }
        deserializer.deserialize_map(ImageVisitor)
    }
}

#[cfg(test)]
mod tests;
