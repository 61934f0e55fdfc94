//! One copy of each distinct projection the index rows hold.
//!
//! Every row an item produces carries the same projection, but the planner
//! makes one per record: a record that changes one of an issue's ten map
//! entries puts one row, with a projection of its own equal to the one its
//! nine siblings hold. Over a long replay an item's rows so come to hold
//! several equal copies, and the copies grow with the history, not with the
//! table (heaptrack, the example mix over a 215 K key space: 13.1 MB of
//! projections for 149,730 rows after 200 K records, 20.5 MB for 192,120
//! rows after 400 K, when the rows held 14,973 and 19,212 distinct ones).
//! The rows keep the one copy here instead.
//!
//! A kept projection is held by the rows that carry it and by this set
//! (and, for a moment, by [`Projections::keep`]'s last answer): when a
//! row lets go of one held by nothing else, it leaves the set. A copy held
//! outside the rows at that moment (a dump's map of the rows) keeps it in
//! the set until the next sweep, which drops every kept projection only
//! the set holds; a sweep runs when the set has doubled since the last.

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

use hashbrown::hash_table::HashTable;
use model::value::{Attr, Scalar};
use model::{Image, Projection};

#[derive(Default)]
pub(super) struct Projections {
    kept: HashTable<Projection>,
    hasher: foldhash::fast::RandomState,
    /// The last projection given to [`Projections::keep`] and its kept
    /// copy: the rows of one record come one after another with one.
    last: Option<(Projection, Projection)>,
    /// How many were kept after the last sweep.
    swept_at: usize,
}

impl Projections {
    /// The kept copy of `given`: the one already kept if an equal one is,
    /// else `given` itself, kept from now on.
    pub(super) fn keep(&mut self, given: Projection) -> Projection {
        if let Some((last, kept)) = &self.last {
            if Arc::ptr_eq(last, &given) {
                return kept.clone();
            }
        }
        let hash = self.hash(&given);
        let kept = match self.kept.find(hash, |k| **k == *given) {
            Some(kept) => kept.clone(),
            None => {
                let hasher = self.hasher.clone();
                self.kept
                    .insert_unique(hash, given.clone(), move |k| hash_of(&hasher, k));
                self.sweep_if_doubled();
                given.clone()
            }
        };
        self.last = Some((given, kept.clone()));
        kept
    }

    /// A row no longer holds `held`: it leaves the set if nothing else
    /// holds it.
    pub(super) fn release(&mut self, held: Projection) {
        let others = match &self.last {
            Some((given, kept)) => usize::from(Arc::ptr_eq(kept, &held)) + usize::from(Arc::ptr_eq(given, &held)),
            None => 0,
        };
        // `held`, the set's own, and the last answer's.
        if Arc::strong_count(&held) > 2 + others {
            return;
        }
        if others > 0 {
            self.last = None;
        }
        let hash = self.hash(&held);
        if let Ok(entry) = self.kept.find_entry(hash, |k| Arc::ptr_eq(k, &held)) {
            entry.remove();
        }
    }

    /// How many distinct projections are kept.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.kept.len()
    }

    fn hash(&self, image: &Image) -> u64 {
        hash_of(&self.hasher, image)
    }

    /// Drops what only the set holds, once it has doubled since the last
    /// sweep: what was held elsewhere when its last row let go.
    fn sweep_if_doubled(&mut self) {
        if self.kept.len() < 2 * self.swept_at.max(1024) {
            return;
        }
        self.kept.retain(|k| Arc::strong_count(k) > 1);
        self.swept_at = self.kept.len();
    }
}

/// A projection's hash: its names and the text of its scalars (an M, L or
/// set counts by its type alone; equality tells such images apart).
fn hash_of(hasher: &foldhash::fast::RandomState, image: &Image) -> u64 {
    let mut state = hasher.build_hasher();
    for (name, value) in image.iter() {
        name.hash(&mut state);
        match value.scalar() {
            Scalar::S(s) => (0u8, s).hash(&mut state),
            Scalar::N(n) => (1u8, n).hash(&mut state),
            Scalar::B(b) => (2u8, b).hash(&mut state),
            Scalar::Bool(b) => (3u8, b).hash(&mut state),
            Scalar::Null(b) => (4u8, b).hash(&mut state),
            Scalar::Other(tag) => (5u8, tag).hash(&mut state),
        }
    }
    state.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::Value;

    fn projection(name: &str, state: &str) -> Projection {
        Projection::new(Image::from([
            ("name", Value::S(name.to_owned())),
            ("state", Value::S(state.to_owned())),
        ]))
    }

    #[test]
    fn equal_projections_are_kept_once_and_leave_with_their_last_row() {
        let mut set = Projections::default();
        let first = set.keep(projection("Issue 1", "open"));
        let again = set.keep(projection("Issue 1", "open"));
        let other = set.keep(projection("Issue 1", "closed"));
        assert!(Arc::ptr_eq(&first, &again), "an equal projection is the one kept");
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(set.len(), 2);
        set.release(first);
        assert_eq!(set.len(), 2, "a row still holds it");
        set.release(again);
        assert_eq!(set.len(), 1, "its last row let go");
        set.release(other);
        assert_eq!(set.len(), 0);
        let back = set.keep(projection("Issue 1", "open"));
        assert_eq!(*back, *projection("Issue 1", "open"), "kept anew");
        assert_eq!(set.len(), 1);
    }

    #[test]
    fn a_record_s_rows_share_its_projection_without_a_lookup_and_let_go_alike() {
        let mut set = Projections::default();
        let given = projection("Issue 2", "open");
        let rows: Vec<Projection> = (0..10).map(|_| set.keep(given.clone())).collect();
        drop(given);
        assert!(rows.iter().all(|r| Arc::ptr_eq(r, &rows[0])));
        for row in rows {
            set.release(row);
        }
        assert_eq!(set.len(), 0, "the last answer does not keep it");
    }

    #[test]
    fn what_was_held_elsewhere_at_its_last_release_goes_at_a_sweep() {
        let mut set = Projections::default();
        let row = set.keep(projection("held", "elsewhere"));
        let elsewhere = row.clone();
        set.release(row);
        assert_eq!(set.len(), 1, "held outside the rows");
        drop(elsewhere);
        let mut rows = Vec::new();
        for i in 0..2048 {
            rows.push(set.keep(projection(&format!("Issue {i}"), "open")));
        }
        assert_eq!(set.len(), 2048, "the sweep dropped the one held by nothing");
    }
}
