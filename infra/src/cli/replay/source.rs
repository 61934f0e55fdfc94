//! Reading a recorded stream file a batch at a time, so that replay's
//! memory is bounded by a part of it (a few batches), not by the file.
//!
//! - JSON Lines (one record per line: what `streamdex record` and the
//!   history generator write) is streamed: `batch_size` records are read into
//!   a buffer a part at a time (whole batches, at least
//!   [`READ_AHEAD_RECORDS`] records), parsed into records that borrow from
//!   it, handed over batch by batch, and the buffer is reused. One reading
//!   thread parses the next part while the caller handles one, so parsing
//!   costs replay little wall time on a machine with a core to spare (one
//!   part is read ahead: a few MB); handled parts go back to it, which drops
//!   their records (allocated and freed by one thread) and reuses their
//!   buffers.
//! - A document (a Lambda event or a `GetRecords` response, or one record,
//!   perhaps pretty-printed) is read whole and parsed with
//!   [`model::record::parse_any`]; those are a few MB at most.
//!
//! - A failed batch's record from an S3 on-failure destination
//!   ([`model::record::FailedBatch`]) is a document whose `payload` is the
//!   event: that event is read.
//!
//! - Changes from a Kinesis data stream (for a config that reads a table
//!   from one): a Lambda Kinesis event is a document, unwrapped
//!   ([`model::record::kinesis::unwrap_event`]); JSON Lines of the changes
//!   as DynamoDB writes them are streamed, each line read as a record of
//!   the DynamoDB stream, its line number its sequence number
//!   ([`model::record::kinesis::read_change_line`]).
//!
//! Which one a file is: its first non-blank line is a JSON value on its own
//! and not an object with `Records` or `DDBStreamBatchInfo` → JSON Lines;
//! anything else → a document (so errors in it are reported exactly as
//! `parse_any` reports them).

use std::fs::File;
use std::io::BufReader;
use std::ops::ControlFlow;
use std::path::Path;

use model::config::Config;
use model::record::{kinesis, parse_any, BorrowedReceived, ParseError};

mod lines;

use lines::{Input, Lines};

/// The read buffer: large enough that a read costs little against parsing.
const READ_BUFFER: usize = 1 << 20;

/// Why a file could not be replayed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("cannot read {path}")]
    Read { path: String, source: std::io::Error },
    /// A failed batch's record that holds no event to replay.
    #[error("{path}: {message}")]
    FailedBatch { path: String, message: String },
    /// Not a stream record file: where, and why.
    #[error("{path}:{}:{}: {}", .error.line, .error.column, .error.message)]
    Parse { path: String, error: ParseError },
}

impl SourceError {
    fn read(path: &Path, source: std::io::Error) -> SourceError {
        SourceError::Read {
            path: path.display().to_string(),
            source,
        }
    }

    fn parse(path: &Path, error: ParseError) -> SourceError {
        SourceError::Parse {
            path: path.display().to_string(),
            error,
        }
    }
}

/// The event a failed batch's record carries, or why there is none.
fn failed_batch_payload(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let batch = model::record::read_failed_batch(bytes).map_err(|e| e.to_string())?;
    batch.payload.map(String::into_bytes).ok_or_else(|| {
        format!(
            "a failed batch's record without its payload (shard {}, {}..{}): only an S3 on-failure \
             destination keeps the records; rebuild that range instead",
            batch.shard_id, batch.start_sequence_number, batch.end_sequence_number
        )
    })
}

/// Calls `each` with the records of `path`, at most `batch_size` at a time,
/// in file order, and the bytes of the file read so far, until it answers
/// [`ControlFlow::Break`]. A line that is not JSON stops the reading there
/// with [`SourceError::Parse`] (the batches before it have been handed over).
/// `prepare` sees every record first, on the thread that parsed it (work
/// done ahead of `each`); what it answers for each record of a batch comes
/// with the batch, for `each` to take.
pub fn each_batch<T: Send>(
    path: &Path,
    batch_size: usize,
    config: &Config,
    prepare: &(dyn Fn(&BorrowedReceived<'_>) -> T + Sync),
    each: impl FnMut(&[BorrowedReceived<'_>], &mut [T], u64) -> ControlFlow<()>,
) -> Result<(), SourceError> {
    let batch_size = batch_size.max(1);
    let file = File::open(path).map_err(|e| SourceError::read(path, e))?;
    let mut input = Input::new(BufReader::with_capacity(READ_BUFFER, file));
    let mut first = Lines::default();
    if input
        .starts_json_lines(&mut first)
        .map_err(|e| SourceError::read(path, e))?
    {
        return lines::each_batch(path, input, first, batch_size, config, prepare, each);
    }
    let bytes = input.into_document(first).map_err(|e| SourceError::read(path, e))?;
    each_in_document(path, bytes, batch_size, config, prepare, each)
}

/// [`each_batch`] of a document, `bytes`: a Lambda event (of a DynamoDB or
/// a Kinesis stream), a `GetRecords` response, one record, or a failed
/// batch's record that holds one of those.
fn each_in_document<T>(
    path: &Path,
    mut bytes: Vec<u8>,
    batch_size: usize,
    config: &Config,
    prepare: &(dyn Fn(&BorrowedReceived<'_>) -> T + Sync),
    mut each: impl FnMut(&[BorrowedReceived<'_>], &mut [T], u64) -> ControlFlow<()>,
) -> Result<(), SourceError> {
    if model::record::is_failed_batch(&bytes) {
        // A failed batch from an S3 on-failure destination: its payload is the event.
        bytes = failed_batch_payload(&bytes).map_err(|message| SourceError::FailedBatch {
            path: path.display().to_string(),
            message,
        })?;
    }
    let unwrapped = if config.reads_kinesis() && kinesis::is_kinesis_event(&bytes) {
        Some(kinesis::unwrap_event(&bytes, config).map_err(|e| SourceError::parse(path, e))?)
    } else {
        None
    };
    let text = unwrapped.as_ref().map_or(bytes.as_slice(), |u| u.batch.as_bytes());
    let mut records: Vec<BorrowedReceived<'_>> = parse_any(text)
        .map_err(|e| SourceError::parse(path, e))?
        .into_iter()
        .map(|received| received.into_borrowed())
        .collect();
    // Records that could not be unwrapped, in their places.
    for (at, bad) in unwrapped.iter().flat_map(|u| u.unusable.iter()) {
        records.insert((*at).min(records.len()), bad.clone().into_borrowed());
    }
    let mut prepared: Vec<T> = records.iter().map(prepare).collect();
    let total = bytes.len() as u64;
    for (batch, prepared) in records.chunks(batch_size).zip(prepared.chunks_mut(batch_size)) {
        if each(batch, prepared, total).is_break() {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
