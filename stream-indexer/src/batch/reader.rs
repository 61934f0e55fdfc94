//! A payload's records, read on a second thread while this one plans them.
//!
//! Reading a record (the payload's UTF-8 check, the scan, and the checks
//! that make it a record) costs a little more than admitting it (the poison
//! check and the plan). So where the process may use more than one core, a
//! long payload is read on a second thread, which hands the records over in
//! chunks, in order, and this thread admits them as they come. Every record
//! is handed over exactly as when read on one thread (a test compares the
//! two): only where the work is done changes. (The poison check stays on
//! this thread: done ahead too, it would make the reading thread the slower
//! of the two.) Each chunk, once admitted, is handed back and dropped on the
//! reading thread, where its records were allocated, and its room used for a
//! later chunk.

use std::sync::mpsc;

use model::record::{self, BorrowedReceived, Mode, ParseError, RawJson};

/// Records handed over at once (about 100 KB of payload).
const CHUNK: usize = 128;

/// Chunks read and not yet admitted, at most: the second thread waits for
/// this one beyond that, so what is read ahead stays small.
const CHUNKS_AHEAD: usize = 4;

/// How a payload is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reading {
    /// On this thread, each record admitted as soon as it is read.
    Here,
    /// On a second thread, ahead of this one.
    Ahead,
}

/// Reads the records of `payload` ([`record::read_batch`], borrowed) and
/// hands each to `admit`, in order, read as `reading` says. Returns the
/// error the payload ends with, if any: after the records before it when
/// read here, after those of the whole chunks before it when read ahead
/// (the indexer then fails the whole batch either way).
pub(super) fn read_each<'a>(
    payload: &'a [u8],
    reading: Reading,
    mut admit: impl FnMut(RawJson<'a>, &BorrowedReceived<'a>),
) -> Result<(), ParseError> {
    if reading == Reading::Here {
        return record::read_batch(payload, Mode::Whole)?.for_each_lent(admit);
    }
    std::thread::scope(|scope| {
        let (sender, chunks) = mpsc::sync_channel::<Chunk<'a>>(CHUNKS_AHEAD);
        // Chunks admitted, handed back to be dropped where they were made.
        let (give_back, spent) = mpsc::channel::<Chunk<'a>>();
        let reader = scope.spawn(move || {
            let mut chunk = Vec::with_capacity(CHUNK);
            for read in record::read_batch(payload, Mode::Whole)? {
                chunk.push(read?);
                if chunk.len() == CHUNK {
                    let next = match spent.try_recv() {
                        // Its records dropped here; its room used again.
                        Ok(mut again) => {
                            again.clear();
                            drop_all(spent.try_iter());
                            again
                        }
                        Err(_) => Vec::with_capacity(CHUNK),
                    };
                    if sender.send(std::mem::replace(&mut chunk, next)).is_err() {
                        // The admitting thread is gone (it panicked): its
                        // panic is the one the scope passes on.
                        return Ok(());
                    }
                }
            }
            if !chunk.is_empty() {
                let _ = sender.send(chunk);
            }
            drop(sender);
            // Until the admitting thread has handed back the last one.
            drop_all(spent.iter());
            Ok(())
        });
        for chunk in chunks {
            for (raw, received) in &chunk {
                admit(*raw, received);
            }
            // If the reading thread has ended (an error), dropped here.
            let _ = give_back.send(chunk);
        }
        drop(give_back);
        match reader.join() {
            Ok(ended) => ended,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// Records handed over at once, as read.
type Chunk<'a> = Vec<(RawJson<'a>, BorrowedReceived<'a>)>;

/// Drops the chunks handed back: on the reading thread, which allocated
/// their records, a free is a local one. Dropped on the admitting thread,
/// each of a record's blocks would go back to the reading thread's pages
/// through an atomic list, which the reading thread would then have to
/// collect, a sizeable share of its time (see `docs/PERFORMANCE.md`).
fn drop_all<'a>(chunks: impl Iterator<Item = Chunk<'a>>) {
    chunks.for_each(drop);
}

#[cfg(test)]
mod tests;
