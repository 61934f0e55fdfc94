//! Ordered bin-packing of a batch's requests into calls: the index row
//! writes of a batch into BatchWriteItem calls, and its events into
//! PutEvents calls. One packer serves both.
//!
//! Items are pushed in batch order, each with a *key* (the row key's
//! fingerprint; the event's partition-key group) and a size in bytes. Each
//! joins the earliest call that
//!
//! 1. comes after the call holding the previous item of its key (with
//!    [`SameKey::LaterCall`]), or is that call or a later one (with
//!    [`SameKey::SameOrLater`]),
//! 2. holds fewer than `max_items` items,
//! 3. and has room for its size within `max_bytes`,
//!
//! or a new call at the end. So the items of one key sit in calls of
//! non-decreasing (with `LaterCall`: increasing) position, in push order
//! within a call; items of different keys fill the same calls. A call
//! holding an item whose key's previous item is in an earlier call depends
//! on that call ([`Packed::after`]): the sender sends it only once that call
//! succeeded (`crate::schedule`), so the items of a key land in push order.
//! Two keys that share a fingerprint are merely kept apart like one key.
//!
//! The caller never pushes an item larger than `max_bytes`.

use std::collections::HashMap;

/// Whether two items of one key may share a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SameKey {
    /// Never in one call (BatchWriteItem refuses two writes to one key).
    LaterCall,
    /// In one call, in order (PutEvents keeps the order of its entries).
    SameOrLater,
}

/// What one call may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_items: usize,
    pub max_bytes: usize,
    pub same_key: SameKey,
}

/// One planned call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[must_use]
pub struct Packed {
    /// Its items, as positions in push order, increasing.
    pub items: Vec<usize>,
    /// Their total size in bytes.
    pub bytes: usize,
    /// Earlier calls holding the previous item of one of its keys (distinct).
    pub after: Vec<usize>,
}

/// Fills calls with items pushed in batch order. See the module doc.
#[derive(Debug)]
pub struct Packer {
    limits: Limits,
    calls: Vec<Packed>,
    /// Per key: the call holding its latest item.
    last: HashMap<u64, usize>,
    /// Every call before this one is full by count.
    first_open: usize,
    pushed: usize,
}

impl Packer {
    pub fn new(limits: Limits) -> Packer {
        Packer {
            limits: Limits {
                max_items: limits.max_items.max(1),
                ..limits
            },
            calls: Vec::new(),
            last: HashMap::new(),
            first_open: 0,
            pushed: 0,
        }
    }

    /// Adds the next item; returns the call it joined.
    pub fn push(&mut self, key: u64, size: usize) -> usize {
        let Limits {
            max_items,
            max_bytes,
            same_key,
        } = self.limits;
        let position = self.pushed;
        self.pushed += 1;
        let previous = self.last.get(&key).copied();
        let floor = match (previous, same_key) {
            (Some(p), SameKey::LaterCall) => (p + 1).max(self.first_open),
            (Some(p), SameKey::SameOrLater) => p.max(self.first_open),
            (None, _) => self.first_open,
        };
        let calls = &mut self.calls;
        let fits = |c: &Packed| c.items.len() < max_items && c.bytes.saturating_add(size) <= max_bytes;
        let at = match (floor..calls.len()).find(|&c| fits(&calls[c])) {
            Some(at) => at,
            None => {
                calls.push(Packed::default());
                calls.len() - 1
            }
        };
        let call = &mut calls[at];
        call.items.push(position);
        call.bytes = call.bytes.saturating_add(size);
        if let Some(p) = previous.filter(|&p| p != at) {
            if !call.after.contains(&p) {
                call.after.push(p);
            }
        }
        self.last.insert(key, at);
        while calls.get(self.first_open).is_some_and(|c| c.items.len() >= max_items) {
            self.first_open += 1;
        }
        at
    }

    /// Items pushed so far.
    pub fn len(&self) -> usize {
        self.pushed
    }

    pub fn is_empty(&self) -> bool {
        self.pushed == 0
    }

    /// The calls, in order.
    pub fn finish(self) -> Vec<Packed> {
        self.calls
    }
}

/// Packs `(key, size)` items given in batch order.
pub fn pack(items: impl IntoIterator<Item = (u64, usize)>, limits: Limits) -> Vec<Packed> {
    let mut packer = Packer::new(limits);
    for (key, size) in items {
        packer.push(key, size);
    }
    packer.finish()
}

#[cfg(test)]
mod tests;
