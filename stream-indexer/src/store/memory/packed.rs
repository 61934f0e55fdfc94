//! Items as the in-memory store keeps them: each in one compact buffer
//! instead of a hash map of owned strings. An item of ten attributes is one
//! allocation of about its wire size, where the map is some twenty
//! allocations and four times the bytes; storing an item is one pass over
//! it, and replacing one frees one buffer. Reads decode the item whole
//! ([`Packed::unpack`]) or one attribute ([`Packed::get`]).
//!
//! The encoding is exact (numbers keep their text, sets their order) and
//! private to this process: nothing else ever reads it.
//!
//! An item may keep some attributes aside, after the others: a node's
//! member versions (`model::version::MEMBER_VERSION_PREFIX`), which the
//! set updates read and write one at a time, and which the images of
//! those updates leave out ([`Packed::split`]). Every other read
//! sees them as attributes like any other.
//!
//! ```text
//! item    = count entry* [aside]    (count: LEB128)
//! aside   = count entry*            (only when it holds any)
//! entry   = len name value
//! value   = tag payload
//!   S, N, B           len bytes
//!   BOOL, NULL        (the tag says which, and true or false)
//!   M                 count entry*
//!   L                 count value*
//!   SS, NS, BS        count (len bytes)*
//! ```

use model::value::{Attr, Attrs, Shape};
use model::{Image, Name, Value};

const S: u8 = 0;
const N: u8 = 1;
const B: u8 = 2;
const FALSE: u8 = 3;
const TRUE: u8 = 4;
const NULL_FALSE: u8 = 5;
const NULL_TRUE: u8 = 6;
const M: u8 = 7;
const L: u8 = 8;
const SS: u8 = 9;
const NS: u8 = 10;
const BS: u8 = 11;

/// One item, packed. Only [`Packed::pack`] makes one, so every buffer
/// decodes.
#[derive(Clone)]
pub(super) struct Packed(Box<[u8]>);

impl std::fmt::Debug for Packed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.unpack().fmt(f)
    }
}

impl Packed {
    /// Packs `item`.
    pub(super) fn pack<I: Attrs>(item: &I) -> Packed {
        Packed::pack_with(item, &[])
    }

    /// Packs `item` and the entries `extra` (as [`Packed::entry`] gives
    /// them, from another item; their names must not be in `item`).
    pub(super) fn pack_with<I: Attrs>(item: &I, extra: &[&[u8]]) -> Packed {
        let size = varint_size(item.len() + extra.len())
            + item.iter().map(|(k, v)| entry_size(k, v)).sum::<usize>()
            + extra.iter().map(|e| e.len()).sum::<usize>();
        let mut out = Vec::with_capacity(size);
        put_varint(&mut out, item.len() + extra.len());
        for (name, value) in item.iter() {
            put_entry(&mut out, name, value);
        }
        for entry in extra {
            out.extend_from_slice(entry);
        }
        debug_assert_eq!(out.len(), size);
        Packed(out.into_boxed_slice())
    }

    /// The item, its aside attributes with the others.
    pub(super) fn unpack(&self) -> Image {
        let mut reader = Reader(&self.0);
        let mut entries: Vec<(Name, Value)> = reader.entries().unwrap_or_else(corrupt);
        if !reader.0.is_empty() {
            entries.extend(reader.entries::<Name, Vec<_>>().unwrap_or_else(corrupt));
        }
        entries.into_iter().collect()
    }

    /// The item without its aside attributes, and those.
    pub(super) fn split(&self) -> (Image, Aside<'_>) {
        let mut reader = Reader(&self.0);
        let shown = reader.entries::<Name, _>().unwrap_or_else(corrupt);
        (shown, Aside::new(reader.0))
    }

    /// `image` with this item's aside attributes added.
    pub(super) fn with_aside(&self, image: Image) -> Image {
        self.aside().with(image)
    }

    /// The aside attributes.
    fn aside(&self) -> Aside<'_> {
        let mut reader = Reader(&self.0);
        reader.skip_entries().unwrap_or_else(corrupt);
        Aside::new(reader.0)
    }

    /// The value of one attribute.
    pub(super) fn get(&self, name: &str) -> Option<Value> {
        let entry = self.entry(name)?;
        let mut reader = Reader(entry);
        reader.entry::<&str>().map(|(_, value)| value).or_else(corrupt)
    }

    /// The encoded entry of one attribute, for [`Packed::pack_with`].
    pub(super) fn entry(&self, name: &str) -> Option<&[u8]> {
        let mut reader = Reader(&self.0);
        match reader.find(name.as_bytes()) {
            Some(entry) => Some(entry),
            None => reader.find(name.as_bytes()),
        }
    }

    /// The buffer's length in bytes.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

/// Whether `this` is the name `prefix` then `name`.
fn is_named(this: &[u8], prefix: &str, name: &str) -> bool {
    this.len() == prefix.len() + name.len() && this.starts_with(prefix.as_bytes()) && this.ends_with(name.as_bytes())
}

/// The text of an encoded entry whose value is an S.
fn text_of(entry: &[u8]) -> Option<&str> {
    let mut value = Reader(entry);
    value.bytes()?;
    match value.byte() {
        Some(S) => value.str(),
        _ => None,
    }
}

/// Only [`Packed::pack`] makes the buffers, so each decodes; one that does
/// not is a bug in this file, never bad input.
fn corrupt<T>() -> T {
    unreachable!("a packed item that does not decode: a bug in the memory store's encoding")
}

fn varint_size(mut n: usize) -> usize {
    let mut size = 1;
    while n >= 0x80 {
        n >>= 7;
        size += 1;
    }
    size
}

fn put_varint(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn bytes_size(b: &[u8]) -> usize {
    varint_size(b.len()) + b.len()
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len());
    out.extend_from_slice(b);
}

fn entry_size<V: Attr>(name: &str, value: &V) -> usize {
    bytes_size(name.as_bytes()) + value_size(value)
}

fn put_entry<V: Attr>(out: &mut Vec<u8>, name: &str, value: &V) {
    put_bytes(out, name.as_bytes());
    put_value(out, value);
}

fn value_size<V: Attr>(value: &V) -> usize {
    let strings =
        |s: &[V::Text]| varint_size(s.len()) + s.iter().map(|s| bytes_size(s.as_ref().as_bytes())).sum::<usize>();
    1 + match value.shape() {
        Shape::S(s) | Shape::N(s) => bytes_size(s.as_bytes()),
        Shape::B(b) => bytes_size(b),
        Shape::Bool(_) | Shape::Null(_) => 0,
        Shape::M(m) => varint_size(m.len()) + m.iter().map(|(k, v)| entry_size(k, v)).sum::<usize>(),
        Shape::L(l) => varint_size(l.len()) + l.iter().map(value_size).sum::<usize>(),
        Shape::Ss(s) | Shape::Ns(s) => strings(s),
        Shape::Bs(s) => varint_size(s.len()) + s.iter().map(|b| bytes_size(b)).sum::<usize>(),
    }
}

fn put_value<V: Attr>(out: &mut Vec<u8>, value: &V) {
    let strings = |out: &mut Vec<u8>, tag: u8, set: &[V::Text]| {
        out.push(tag);
        put_varint(out, set.len());
        for s in set {
            put_bytes(out, s.as_ref().as_bytes());
        }
    };
    match value.shape() {
        Shape::S(s) => {
            out.push(S);
            put_bytes(out, s.as_bytes());
        }
        Shape::N(n) => {
            out.push(N);
            put_bytes(out, n.as_bytes());
        }
        Shape::B(b) => {
            out.push(B);
            put_bytes(out, b);
        }
        Shape::Bool(b) => out.push(if b { TRUE } else { FALSE }),
        Shape::Null(b) => out.push(if b { NULL_TRUE } else { NULL_FALSE }),
        Shape::M(m) => {
            out.push(M);
            put_varint(out, m.len());
            for (k, v) in m.iter() {
                put_entry(out, k, v);
            }
        }
        Shape::L(l) => {
            out.push(L);
            put_varint(out, l.len());
            for v in l {
                put_value(out, v);
            }
        }
        Shape::Ss(set) => strings(out, SS, set),
        Shape::Ns(set) => strings(out, NS, set),
        Shape::Bs(set) => {
            out.push(BS);
            put_varint(out, set.len());
            for b in set {
                put_bytes(out, b);
            }
        }
    }
}

/// Reads a buffer front to back; `None` where it does not decode.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (first, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*first)
    }

    fn varint(&mut self) -> Option<usize> {
        let mut n = 0usize;
        for shift in (0..usize::BITS).step_by(7) {
            let byte = self.byte()?;
            n |= usize::from(byte & 0x7f).checked_shl(shift)?;
            if byte & 0x80 == 0 {
                return Some(n);
            }
        }
        None
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = self.varint()?;
        let (bytes, rest) = self.0.split_at_checked(len)?;
        self.0 = rest;
        Some(bytes)
    }

    fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes()?).ok()
    }

    fn string(&mut self) -> Option<String> {
        self.str().map(str::to_owned)
    }

    /// An image's or an `M`'s entries (gathered first into a vector of the
    /// right size: collecting fallibly would grow it step by step), names
    /// as the one or the other holds them.
    fn entries<K: From<&'a str>, M: FromIterator<(K, Value)>>(&mut self) -> Option<M> {
        let count = self.varint()?;
        let mut entries = Vec::with_capacity(count.min(self.0.len()));
        for _ in 0..count {
            entries.push(self.entry()?);
        }
        Some(entries.into_iter().collect())
    }

    fn entry<K: From<&'a str>>(&mut self) -> Option<(K, Value)> {
        Some((K::from(self.str()?), self.value()?))
    }

    fn list<T>(&mut self, mut one: impl FnMut(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        let count = self.varint()?;
        let mut out = Vec::with_capacity(count.min(self.0.len()));
        for _ in 0..count {
            out.push(one(self)?);
        }
        Some(out)
    }

    fn value(&mut self) -> Option<Value> {
        Some(match self.byte()? {
            S => Value::S(self.string()?),
            N => Value::N(self.string()?),
            B => Value::B(self.bytes()?.to_vec()),
            FALSE => Value::Bool(false),
            TRUE => Value::Bool(true),
            NULL_FALSE => Value::Null(false),
            NULL_TRUE => Value::Null(true),
            M => Value::M(self.entries::<String, _>()?),
            L => Value::L(self.list(Self::value)?),
            SS => Value::Ss(self.list(Self::string)?),
            NS => Value::Ns(self.list(Self::string)?),
            BS => Value::Bs(self.list(|r| r.bytes().map(<[u8]>::to_vec))?),
            _ => return None,
        })
    }

    /// In the section (a count and its entries) that starts here, the
    /// encoded entry named `name`. Without one, it has moved past the
    /// section (`None` too where the buffer ends).
    fn find(&mut self, name: &[u8]) -> Option<&'a [u8]> {
        if self.0.is_empty() {
            return None;
        }
        for _ in 0..self.varint().unwrap_or_else(corrupt) {
            let (this, entry) = self.named_entry().unwrap_or_else(corrupt);
            if this == name {
                return Some(entry);
            }
        }
        None
    }

    /// The next entry: its name, and its whole encoding.
    fn named_entry(&mut self) -> Option<(&'a [u8], &'a [u8])> {
        let start = self.0;
        let name = self.bytes()?;
        self.skip_value()?;
        let used = start.len() - self.0.len();
        Some((name, start.get(..used)?))
    }

    /// Moves past a section: a count and its entries.
    fn skip_entries(&mut self) -> Option<()> {
        for _ in 0..self.varint()? {
            self.named_entry()?;
        }
        Some(())
    }

    fn skip_value(&mut self) -> Option<()> {
        match self.byte()? {
            S | N | B => {
                self.bytes()?;
            }
            FALSE | TRUE | NULL_FALSE | NULL_TRUE => {}
            M => {
                for _ in 0..self.varint()? {
                    self.bytes()?;
                    self.skip_value()?;
                }
            }
            L => {
                for _ in 0..self.varint()? {
                    self.skip_value()?;
                }
            }
            SS | NS | BS => {
                for _ in 0..self.varint()? {
                    self.bytes()?;
                }
            }
            _ => return None,
        }
        Some(())
    }
}

mod aside;
#[cfg(test)]
mod tests;

pub(super) use aside::Aside;
