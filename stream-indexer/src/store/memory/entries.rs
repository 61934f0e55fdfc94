//! The entries of a [`super::dense::DenseMap`], in one of two layouts:
//!
//! - [`Entries::flat`]: one vector. For a map whose size follows its live
//!   keys (churn reuses the spare half a vector keeps).
//! - [`Entries::chunked`]: fixed-size chunks, never moved once made. For a
//!   map that only grows (index rows that leave tombstones): a vector
//!   would copy every entry each time it doubled, and hold its old and new
//!   buffer at once while it did; chunks are never copied, and at most one
//!   is part empty.

/// Entries per chunk: a few hundred KiB of index rows, so that a chunk is
/// a large allocation of its own and the chunk list stays short.
const CHUNK: usize = 4096;

pub(super) enum Entries<T> {
    Flat(Vec<T>),
    Chunked { chunks: Vec<Vec<T>>, len: usize },
}

impl<T> Entries<T> {
    pub(super) fn flat() -> Entries<T> {
        Entries::Flat(Vec::new())
    }

    pub(super) fn chunked() -> Entries<T> {
        Entries::Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        match self {
            Entries::Flat(entries) => entries.len(),
            Entries::Chunked { len, .. } => *len,
        }
    }

    #[inline]
    pub(super) fn get(&self, at: usize) -> Option<&T> {
        match self {
            Entries::Flat(entries) => entries.get(at),
            Entries::Chunked { chunks, .. } => chunks.get(at / CHUNK)?.get(at % CHUNK),
        }
    }

    #[inline]
    pub(super) fn get_mut(&mut self, at: usize) -> Option<&mut T> {
        match self {
            Entries::Flat(entries) => entries.get_mut(at),
            Entries::Chunked { chunks, .. } => chunks.get_mut(at / CHUNK)?.get_mut(at % CHUNK),
        }
    }

    pub(super) fn push(&mut self, entry: T) {
        match self {
            Entries::Flat(entries) => entries.push(entry),
            Entries::Chunked { chunks, len } => {
                match chunks.last_mut() {
                    Some(last) if last.len() < CHUNK => last.push(entry),
                    _ => {
                        let mut chunk = Vec::with_capacity(CHUNK);
                        chunk.push(entry);
                        chunks.push(chunk);
                    }
                }
                *len += 1;
            }
        }
    }

    /// Removes the entry at `at`; the last takes its place.
    pub(super) fn swap_remove(&mut self, at: usize) -> Option<T> {
        match self {
            Entries::Flat(entries) => (at < entries.len()).then(|| entries.swap_remove(at)),
            Entries::Chunked { chunks, len } => {
                if at >= *len {
                    return None;
                }
                let last = chunks.last_mut()?.pop()?;
                if chunks.last().is_some_and(Vec::is_empty) {
                    chunks.pop();
                }
                *len -= 1;
                if at == *len {
                    return Some(last);
                }
                let slot = chunks.get_mut(at / CHUNK)?.get_mut(at % CHUNK)?;
                Some(std::mem::replace(slot, last))
            }
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        let (flat, chunks): (&[T], &[Vec<T>]) = match self {
            Entries::Flat(entries) => (entries, &[]),
            Entries::Chunked { chunks, .. } => (&[], chunks),
        };
        flat.iter().chain(chunks.iter().flatten())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Both layouts answer every call as a vector does, across chunk
        /// boundaries (pushes and removes anywhere, the last included).
        #[test]
        fn both_layouts_behave_as_a_vector(
            pushes in 0usize..3 * CHUNK,
            removes in proptest::collection::vec(any::<proptest::sample::Index>(), 0..64),
        ) {
            for mut entries in [Entries::flat(), Entries::chunked()] {
                let mut model: Vec<usize> = Vec::new();
                for value in 0..pushes {
                    entries.push(value);
                    model.push(value);
                }
                for remove in &removes {
                    let at = if model.is_empty() { 0 } else { remove.index(model.len()) };
                    let expected = (at < model.len()).then(|| model.swap_remove(at));
                    prop_assert_eq!(entries.swap_remove(at), expected);
                    prop_assert_eq!(entries.len(), model.len());
                }
                prop_assert_eq!(entries.swap_remove(model.len()), None);
                for (at, value) in model.iter().enumerate() {
                    prop_assert_eq!(entries.get(at), Some(value));
                }
                prop_assert_eq!(entries.get(model.len()), None);
                prop_assert_eq!(entries.iter().copied().collect::<Vec<_>>(), model);
            }
        }
    }
}
