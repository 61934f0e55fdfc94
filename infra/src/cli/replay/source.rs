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
use std::io::{BufRead, BufReader, Read};
use std::ops::ControlFlow;
use std::path::Path;

use std::sync::mpsc::{Receiver, Sender};

use model::config::Config;
use model::record::{kinesis, parse_any, read_line, BorrowedReceived, Mode, ParseError};
use serde::Deserialize;
use serde_json::value::RawValue;

/// The read buffer: large enough that a read costs little against parsing.
const READ_BUFFER: usize = 1 << 20;
/// Records (at least; whole batches) read and parsed ahead at a time, on the
/// reading thread: enough that handing a part over costs little against
/// parsing it, few enough that a part takes a few MB at most: larger parts
/// only add memory (see `docs/PERFORMANCE.md`).
const READ_AHEAD_RECORDS: usize = 500;

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
    mut each: impl FnMut(&[BorrowedReceived<'_>], &mut [T], u64) -> ControlFlow<()>,
) -> Result<(), SourceError> {
    let read_error = |source| SourceError::Read {
        path: path.display().to_string(),
        source,
    };
    let parse_error = |error| SourceError::Parse {
        path: path.display().to_string(),
        error,
    };
    let batch_size = batch_size.max(1);
    let mut input = Input {
        reader: BufReader::with_capacity(READ_BUFFER, File::open(path).map_err(read_error)?),
        line: 0,
        consumed: 0,
        kinesis: None,
    };
    let mut first = Lines::default();
    if !input.starts_json_lines(&mut first).map_err(read_error)? {
        // A document: read it whole (the part already read is in `first`).
        let mut bytes = std::mem::take(&mut first.text);
        input.reader.read_to_end(&mut bytes).map_err(read_error)?;
        if model::record::is_failed_batch(&bytes) {
            // A failed batch from an S3 on-failure destination: its payload is the event.
            bytes = failed_batch_payload(&bytes).map_err(|message| SourceError::FailedBatch {
                path: path.display().to_string(),
                message,
            })?;
        }
        let unwrapped = if config.reads_kinesis() && kinesis::is_kinesis_event(&bytes) {
            Some(kinesis::unwrap_event(&bytes, config).map_err(parse_error)?)
        } else {
            None
        };
        let text = unwrapped.as_ref().map_or(bytes.as_slice(), |u| u.batch.as_bytes());
        let mut records: Vec<BorrowedReceived<'_>> = parse_any(text)
            .map_err(parse_error)?
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
        return Ok(());
    }
    // JSON Lines: a second thread reads and parses part after part, one
    // ahead of the batches handed to `each` (see `read_ahead`). Changes as
    // DynamoDB writes them to Kinesis are read as such.
    if config.reads_kinesis() && first.last_is_kinesis_change() {
        input.kinesis = Some(config);
    }
    let part_size = batch_size.saturating_mul(READ_AHEAD_RECORDS.div_ceil(batch_size));
    std::thread::scope(|scope| {
        let (parts, spent) = read_ahead(scope, input, first, part_size, prepare);
        for part in parts {
            let (part, mut prepared) = part.map_err(read_error)?;
            let Part {
                records,
                ends,
                more,
                error,
            } = part.borrow_dependent();
            // Before a line that does not parse: its whole batches only.
            let whole = if error.is_some() {
                records.len() / batch_size * batch_size
            } else {
                records.len()
            };
            let batches = records[..whole]
                .chunks(batch_size)
                .zip(ends.chunks(batch_size))
                .zip(prepared.chunks_mut(batch_size));
            for ((batch, ends), prepared) in batches {
                if each(batch, prepared, ends.last().copied().unwrap_or_default()).is_break() {
                    return Ok(());
                }
            }
            let more = *more;
            let mut part = part;
            if let Some(error) = part.with_dependent_mut(|_, part| part.error.take()) {
                return Err(parse_error(error));
            }
            // Dropped, and its buffer reused, on the reading thread.
            let _ = spent.send(part);
            if !more {
                break;
            }
        }
        Ok(())
    })
}

self_cell::self_cell!(
    /// A part of the file: its text, and the records that borrow it, owned
    /// together so that the part can cross threads, and its buffer be
    /// reused once its records are dropped.
    struct ReadPart {
        owner: Lines,
        #[covariant]
        dependent: Part,
    }
);

/// Starts the reading thread: it reads and parses the file part by part
/// into the first channel, one part ahead of the caller (a rendezvous: it
/// parses the next part while the caller handles one, then waits), and
/// takes the parts handed back on the second, to drop their records and
/// reuse their buffers. One thread for the whole file, so the records are
/// allocated and freed by the same thread. It stops at the end of the file,
/// at a line that does not parse, at a read error, or when the caller drops
/// the first channel's end. Each part comes with what `prepare` answered for
/// its records.
#[allow(clippy::type_complexity)]
fn read_ahead<'scope, R: BufRead + Send + 'scope, T: Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    mut input: Input<'scope, R>,
    first: Lines,
    part_size: usize,
    prepare: &'scope (dyn Fn(&BorrowedReceived<'_>) -> T + Sync),
) -> (Receiver<std::io::Result<(ReadPart, Vec<T>)>>, Sender<ReadPart>) {
    let (parts_in, parts) = std::sync::mpsc::sync_channel(0);
    let (spent, spent_out) = std::sync::mpsc::channel::<ReadPart>();
    scope.spawn(move || {
        let mut next = Some(first);
        loop {
            let mut lines = next.take().unwrap_or_else(|| match spent_out.try_recv() {
                Ok(part) => {
                    let mut lines = part.into_owner();
                    lines.clear();
                    lines
                }
                Err(_) => Lines::default(),
            });
            let more = match input.fill(&mut lines, part_size) {
                Ok(more) => more,
                Err(error) => {
                    let _ = parts_in.send(Err(error));
                    return;
                }
            };
            let mut prepared = Vec::new();
            let part = ReadPart::new(lines, |lines| {
                let part = lines.parse(more, input.kinesis);
                prepared = part.records.iter().map(prepare).collect();
                part
            });
            let last = !part.borrow_dependent().more;
            if parts_in.send(Ok((part, prepared))).is_err() || last {
                return;
            }
        }
    });
    (parts, spent)
}

/// Records read and parsed together: the batches of one read-ahead.
struct Part<'a> {
    /// Their images borrow the part's text.
    records: Vec<BorrowedReceived<'a>>,
    /// Per record: the bytes of the file read up to the end of its line.
    ends: Vec<u64>,
    /// Whether the file goes on past it.
    more: bool,
    /// The line that stopped the parsing (the records are those before it).
    error: Option<ParseError>,
}

/// The file being read: where it is.
struct Input<'c, R> {
    reader: R,
    /// Lines of the file read so far.
    line: usize,
    /// Bytes of the file read so far.
    consumed: u64,
    /// For a file of changes as DynamoDB writes them to Kinesis: the config
    /// each line is read under.
    kinesis: Option<&'c Config>,
}

impl<R: BufRead> Input<'_, R> {
    /// Reads the file's first non-blank line into `lines` and says whether
    /// the file is JSON Lines. What was read stays in `lines` either way.
    fn starts_json_lines(&mut self, lines: &mut Lines) -> std::io::Result<bool> {
        loop {
            let Some((start, end)) = self.read_line(lines)? else {
                return Ok(true); // empty: no records either way
            };
            let line = lines.text.get(start..end).unwrap_or_default();
            let Ok(line) = std::str::from_utf8(line) else {
                return Ok(false);
            };
            if line.trim().is_empty() {
                continue;
            }
            #[derive(Deserialize)]
            struct Document<'a> {
                #[serde(rename = "Records", borrow)]
                records: Option<&'a RawValue>,
            }
            return Ok(match serde_json::from_str::<&RawValue>(line) {
                Err(_) => false,
                Ok(value) => {
                    let event = serde_json::from_str::<Document<'_>>(value.get()).is_ok_and(|d| d.records.is_some());
                    !event && !model::record::is_failed_batch(value.get().as_bytes())
                }
            });
        }
    }

    /// Reads lines until `lines` holds `wanted` non-blank ones; `false`
    /// when the file has ended.
    fn fill(&mut self, lines: &mut Lines, wanted: usize) -> std::io::Result<bool> {
        let mut records = lines
            .spans
            .iter()
            .filter(|span| !blank(&lines.text[span.start..span.end]))
            .count();
        let mut more = true;
        while records < wanted {
            let Some((start, end)) = self.read_line(lines)? else {
                more = false;
                break;
            };
            records += usize::from(!blank(&lines.text[start..end]));
        }
        Ok(more)
    }

    /// Reads one line (without its `\n`) onto the end of `lines`.
    fn read_line(&mut self, lines: &mut Lines) -> std::io::Result<Option<(usize, usize)>> {
        let start = lines.text.len();
        let read = read_until_newline(&mut self.reader, &mut lines.text)?;
        if read == 0 {
            return Ok(None);
        }
        self.consumed += read as u64;
        self.line += 1;
        let mut start = start;
        let mut shift = 0;
        if self.line == 1 && lines.text.get(start..start + 3) == Some(b"\xEF\xBB\xBF".as_slice()) {
            // A byte-order mark: stripped; columns on line 1 move by 3.
            start += 3;
            shift = 3;
        }
        let end = if lines.text.last() == Some(&b'\n') {
            lines.text.len() - 1
        } else {
            lines.text.len()
        };
        lines.spans.push(Span {
            start,
            end,
            line: self.line,
            shift,
            consumed: self.consumed,
        });
        Ok(Some((start, end)))
    }
}

/// Reads through the next `\n` (or to the end of the input) onto the end
/// of `out`, as `BufRead::read_until` does; returns the bytes read. The
/// newline is found with `memchr`'s vector search, which costs replay far
/// less than std's word-at-a-time one (see `docs/PERFORMANCE.md`).
fn read_until_newline<R: BufRead>(reader: &mut R, out: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut read = 0;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let (used, done) = match memchr::memchr(b'\n', available) {
            Some(at) => (at + 1, true),
            None => (available.len(), available.is_empty()),
        };
        out.extend_from_slice(&available[..used]);
        reader.consume(used);
        read += used;
        if done {
            return Ok(read);
        }
    }
}

/// Where a line is in its part's text.
struct Span {
    start: usize,
    end: usize,
    /// Its line number in the file, from 1.
    line: usize,
    /// Bytes before `start` on its line that columns count (a byte-order mark).
    shift: usize,
    /// Bytes of the file read up to the end of the line.
    consumed: u64,
}

/// A part of a JSON Lines file: the text of its lines, back to back, and
/// where each line is.
#[derive(Default)]
struct Lines {
    text: Vec<u8>,
    spans: Vec<Span>,
}

impl Lines {
    /// The records, borrowing the text, up to the first line that does
    /// not parse; `more` says whether the file goes on past them. With
    /// `kinesis`, each line is a change as DynamoDB writes it to Kinesis,
    /// read under that config (one that cannot be read is unusable, with
    /// its reason).
    fn parse(&self, more: bool, kinesis: Option<&Config>) -> Part<'_> {
        let mut records = Vec::with_capacity(self.spans.len());
        let mut ends = Vec::with_capacity(self.spans.len());
        for span in &self.spans {
            let bytes = self.text.get(span.start..span.end).unwrap_or_default();
            let parsed = std::str::from_utf8(bytes)
                .map_err(|e| ParseError {
                    line: span.line,
                    column: e.valid_up_to() + 1 + span.shift,
                    message: "not valid UTF-8".to_owned(),
                })
                .and_then(|line| match kinesis {
                    Some(_) if blank(line.as_bytes()) => Ok(None),
                    Some(config) => Ok(Some(kinesis::read_change_line(line, span.line, config))),
                    None => read_line(line, span.line, span.shift, Mode::Whole),
                });
            match parsed {
                Ok(Some(received)) => {
                    records.push(received);
                    ends.push(span.consumed);
                }
                Ok(None) => {}
                Err(error) => {
                    return Part {
                        records,
                        ends,
                        more: false,
                        error: Some(error),
                    }
                }
            }
        }
        Part {
            records,
            ends,
            more,
            error: None,
        }
    }

    fn clear(&mut self) {
        self.text.clear();
        self.spans.clear();
    }

    /// Whether the last line is a change as DynamoDB writes it to Kinesis.
    fn last_is_kinesis_change(&self) -> bool {
        self.spans.last().is_some_and(|span| {
            std::str::from_utf8(&self.text[span.start..span.end]).is_ok_and(kinesis::is_kinesis_change)
        })
    }
}

fn blank(line: &[u8]) -> bool {
    line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

#[cfg(test)]
mod tests;
