//! JSON Lines, streamed: one reading thread reads and parses the file part
//! after part (whole batches, at least [`READ_AHEAD_RECORDS`] records), one
//! part ahead of the batches handed over; handled parts come back to it, to
//! drop their records and reuse their buffers (see the parent module).

use std::io::BufRead;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::mpsc::{Receiver, Sender};

use model::config::Config;
use model::record::{kinesis, read_line, BorrowedReceived, Mode, ParseError};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::SourceError;

/// Records (at least; whole batches) read and parsed ahead at a time, on the
/// reading thread: enough that handing a part over costs little against
/// parsing it, few enough that a part takes a few MB at most: larger parts
/// only add memory (see `docs/PERFORMANCE.md`).
pub(super) const READ_AHEAD_RECORDS: usize = 500;

/// [`super::each_batch`] of JSON Lines: `input` past its first line, read
/// into `first`.
pub(super) fn each_batch<'c, T: Send, R: BufRead + Send>(
    path: &Path,
    mut input: Input<'c, R>,
    first: Lines,
    batch_size: usize,
    config: &'c Config,
    prepare: &(dyn Fn(&BorrowedReceived<'_>) -> T + Sync),
    mut each: impl FnMut(&[BorrowedReceived<'_>], &mut [T], u64) -> ControlFlow<()>,
) -> Result<(), SourceError> {
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
            let (part, mut prepared) = part.map_err(|e| SourceError::read(path, e))?;
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
                return Err(SourceError::parse(path, error));
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
pub(super) struct Input<'c, R> {
    reader: R,
    /// Lines of the file read so far.
    line: usize,
    /// Bytes of the file read so far.
    consumed: u64,
    /// For a file of changes as DynamoDB writes them to Kinesis: the config
    /// each line is read under.
    kinesis: Option<&'c Config>,
}

impl<'c, R: BufRead> Input<'c, R> {
    /// The file `reader` reads, from its start.
    pub(super) fn new(reader: R) -> Input<'c, R> {
        Input {
            reader,
            line: 0,
            consumed: 0,
            kinesis: None,
        }
    }

    /// The whole file, a document: what `first` holds of it, and the rest.
    pub(super) fn into_document(mut self, first: Lines) -> std::io::Result<Vec<u8>> {
        let mut bytes = first.text;
        self.reader.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// Reads the file's first non-blank line into `lines` and says whether
    /// the file is JSON Lines. What was read stays in `lines` either way.
    pub(super) fn starts_json_lines(&mut self, lines: &mut Lines) -> std::io::Result<bool> {
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
pub(super) fn read_until_newline<R: BufRead>(reader: &mut R, out: &mut Vec<u8>) -> std::io::Result<usize> {
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
pub(super) struct Lines {
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
