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

use foldhash::HashMap;

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
    /// The room each call has left, to find the first that fits in
    /// O(log calls) (a scan would make packing quadratic when calls fill
    /// by bytes rather than by count).
    rooms: Rooms,
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
            last: HashMap::default(),
            rooms: Rooms::default(),
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
            (Some(p), SameKey::LaterCall) => p + 1,
            (Some(p), SameKey::SameOrLater) => p,
            (None, _) => 0,
        };
        let at = match self.rooms.first_fit(floor, size) {
            Some(at) => at,
            None => {
                self.calls.push(Packed::default());
                self.rooms.push(Some(max_bytes))
            }
        };
        let call = &mut self.calls[at]; // a room for every call, a call for every room
        call.items.push(position);
        call.bytes = call.bytes.saturating_add(size);
        if let Some(p) = previous.filter(|&p| p != at) {
            if !call.after.contains(&p) {
                call.after.push(p);
            }
        }
        let room = (call.items.len() < max_items).then(|| max_bytes.saturating_sub(call.bytes));
        self.rooms.set(at, room);
        self.last.insert(key, at);
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

/// The room left in each call (`None`: full by count), in a max-tree over
/// the calls: [`Rooms::first_fit`] finds the first call from a position
/// with room for a size in O(log calls).
#[derive(Debug, Default)]
struct Rooms {
    /// Leaves from `width`: `1 + room` per call (0: full, or no call yet);
    /// each inner node, the larger of its two children.
    tree: Vec<usize>,
    width: usize,
    calls: usize,
    /// No call before this one has room left (a call's room only ever
    /// shrinks, so it only moves on).
    first_open: usize,
}

impl Rooms {
    /// Adds a call with `room`; returns its position.
    fn push(&mut self, room: Option<usize>) -> usize {
        if self.calls == self.width {
            let leaves: Vec<usize> = self.tree.get(self.width..).unwrap_or_default().to_vec();
            self.width = (self.width * 2).max(8);
            self.tree = vec![0; 2 * self.width];
            for (i, leaf) in leaves.into_iter().enumerate() {
                self.tree[self.width + i] = leaf;
            }
            for node in (1..self.width).rev() {
                self.tree[node] = self.tree[2 * node].max(self.tree[2 * node + 1]);
            }
        }
        self.calls += 1;
        self.set(self.calls - 1, room);
        self.calls - 1
    }

    fn set(&mut self, call: usize, room: Option<usize>) {
        let mut node = self.width + call;
        self.tree[node] = room.map_or(0, |r| r.saturating_add(1));
        // Up to the first inner node the change leaves as it was: each one
        // above it is the larger of children that did not change either.
        while node > 1 {
            node /= 2;
            let larger = self.tree[2 * node].max(self.tree[2 * node + 1]);
            if self.tree[node] == larger {
                break;
            }
            self.tree[node] = larger;
        }
        while self.first_open < self.calls && self.tree[self.width + self.first_open] == 0 {
            self.first_open += 1;
        }
    }

    /// The first call at or after `from` with room for `size` bytes.
    fn first_fit(&self, from: usize, size: usize) -> Option<usize> {
        let need = size.saturating_add(1);
        let from = from.max(self.first_open);
        // Most often the first call that may take the item has room for it.
        if from < self.calls && self.tree[self.width + from] >= need {
            return Some(from);
        }
        self.descend(1, 0, self.width, from, need)
    }

    /// Within `node`, which covers calls `lo..hi`.
    fn descend(&self, node: usize, lo: usize, hi: usize, from: usize, need: usize) -> Option<usize> {
        if hi <= from || self.tree.get(node).is_none_or(|&room| room < need) {
            return None;
        }
        if hi - lo == 1 {
            return Some(lo);
        }
        let mid = lo + (hi - lo) / 2;
        self.descend(2 * node, lo, mid, from, need)
            .or_else(|| self.descend(2 * node + 1, mid, hi, from, need))
    }
}

#[cfg(test)]
mod tests;
