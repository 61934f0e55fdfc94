//! The attributes a packed item keeps aside, after the others (see the
//! parent module's doc), read and written without decoding the item.

use model::value::Attrs;
use model::{Image, Name, Value};

use super::{corrupt, entry_size, is_named, put_entry, put_varint, text_of, varint_size, Packed, Reader};

/// An item's aside attributes, as packed: a count and its entries, or
/// nothing.
#[derive(Clone, Copy)]
pub(in crate::store::memory) struct Aside<'a>(&'a [u8]);

impl<'a> Aside<'a> {
    /// The section at `bytes` (the rest of an item after its shown entries).
    pub(super) fn new(bytes: &'a [u8]) -> Aside<'a> {
        Aside(bytes)
    }

    /// Each attribute's name and encoded entry.
    fn entries(self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> {
        let mut reader = Reader(self.0);
        let count = match reader.0.is_empty() {
            true => 0,
            false => reader.varint().unwrap_or_else(corrupt),
        };
        (0..count).map(move |_| reader.named_entry().unwrap_or_else(corrupt))
    }

    /// The text of the S attribute named `prefix` then `name`.
    pub(in crate::store::memory) fn text(self, prefix: &str, name: &str) -> Option<&'a str> {
        let (_, entry) = self.entries().find(|(this, _)| is_named(this, prefix, name))?;
        text_of(entry)
    }

    /// Whether it holds an attribute named `prefix` then `name`.
    pub(in crate::store::memory) fn has(self, prefix: &str, name: &str) -> bool {
        self.entries().any(|(this, _)| is_named(this, prefix, name))
    }

    /// `image` with these attributes added.
    pub(super) fn with(self, mut image: Image) -> Image {
        for (_, entry) in self.entries() {
            if let Some((name, value)) = Reader(entry).entry::<Name>() {
                image.insert(name, value);
            }
        }
        image
    }

    /// Packs `item`, keeping these attributes aside but those named in
    /// `set`, and the attributes `set` (their names must not be in `item`).
    pub(in crate::store::memory) fn pack<I: Attrs>(self, item: &I, set: &[(String, Value)]) -> Packed {
        let kept: Vec<&[u8]> = self
            .entries()
            .filter(|(name, _)| !set.iter().any(|(n, _)| n.as_bytes() == *name))
            .map(|(_, entry)| entry)
            .collect();
        let count = kept.len() + set.len();
        let shown = varint_size(item.len()) + item.iter().map(|(k, v)| entry_size(k, v)).sum::<usize>();
        let aside = match count {
            0 => 0,
            _ => {
                varint_size(count)
                    + kept.iter().map(|e| e.len()).sum::<usize>()
                    + set.iter().map(|(k, v)| entry_size(k, v)).sum::<usize>()
            }
        };
        let mut out = Vec::with_capacity(shown + aside);
        put_varint(&mut out, item.len());
        for (name, value) in item.iter() {
            put_entry(&mut out, name, value);
        }
        if count > 0 {
            put_varint(&mut out, count);
            for entry in kept {
                out.extend_from_slice(entry);
            }
            for (name, value) in set {
                put_entry(&mut out, name, value);
            }
        }
        debug_assert_eq!(out.len(), shown + aside);
        Packed(out.into_boxed_slice())
    }
}
