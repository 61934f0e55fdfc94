//! A batch's records read in one pass over the payload, one at a time.
//!
//! [`Walk`] steps through `{"Records": [...], ...}` itself: each element is
//! read straight into a record by serde_json, and where it ended tells where
//! its text ends, so no earlier pass has to find each record's text first.
//! The document is still checked whole: the walk checks what lies between
//! the records (keys, colons, commas, the other members, the end), and each
//! record's text is read by serde_json, which checks it. Anything the walk
//! does not expect (not JSON, another shape, a record that is not JSON) is
//! an [`Unexpected`]: the caller then reads the document the strict way,
//! which says what is wrong with it, as
//! [`parse_batch`](super::parse_batch) always has.
//!
//! A record that is JSON but does not read as a record (an `eventID` that
//! is a number, an array where an object was expected) is read again on its
//! own as the strict way reads it, so that it is named and explained the
//! same way; the walk then goes on.

use serde::de::{Deserialize, IgnoredAny};
use serde_json::value::RawValue;

use super::attr::Text;
use super::document::{decode, strict};
use super::glance::{glance_leading, glance_leading_borrowed};
use super::one::{read_leading, read_leading_borrowed, received, received_borrowed};
use super::{ParseError, RawJson, Received, RecordId};
use crate::value::{borrowed, Image};

/// How a reader reads each record's images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every record's images built: the indexer's reading.
    Whole,
    /// Each record's images checked as they go by and not built (see
    /// `glance`): such a record comes without its images
    /// ([`Received::has_whole_images`]; [`Received::whole`] reads it again
    /// whole). For a consumer that needs the images of few records: the
    /// router. A record the glance is unsure of, or read the strict way, is
    /// read whole.
    Glance,
}

/// What a reader builds a record's keys and images as: owned ([`Image`]),
/// or borrowed from the payload ([`borrowed::Image`]: their strings are
/// slices of it, owned only where the JSON has an escape).
pub trait ImageForm<'a>: Sized + sealed::Sealed {
    /// How a record is read in this form and `mode`.
    #[doc(hidden)]
    fn form(mode: Mode) -> Form<'a, Self>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::value::Image {}
    impl Sealed for crate::value::borrowed::Image<'_> {}
}

impl<'a> ImageForm<'a> for Image {
    fn form(mode: Mode) -> Form<'a, Image> {
        match mode {
            Mode::Whole => Form {
                leading: read_leading,
                strict: received,
            },
            Mode::Glance => Form {
                leading: glance_leading,
                strict: received,
            },
        }
    }
}

impl<'a> ImageForm<'a> for borrowed::Image<'a> {
    fn form(mode: Mode) -> Form<'a, borrowed::Image<'a>> {
        match mode {
            Mode::Whole => Form {
                leading: read_leading_borrowed,
                strict: received_borrowed,
            },
            Mode::Glance => Form {
                leading: glance_leading_borrowed,
                strict: received_borrowed,
            },
        }
    }
}

/// Reads a Lambda event or a `GetRecords` response (`{"Records": [...]}`),
/// a record at a time, its images built as `I` in `mode`: the records come
/// from the iterator (or [`BatchReader::for_each_lent`]) in order, each read
/// only when reached, in one pass over the payload.
///
/// A consumer that works out each record and lets it go before the next
/// holds one record's images at a time instead of the whole batch's, and
/// touches about half the memory on a large batch.
///
/// Errors: at once when the payload does not start as a batch, else from
/// the iterator when it meets what makes the payload no batch (after which
/// it ends). So a consumer must read to the end before it acts on any record.
pub fn read_batch<'a, I: ImageForm<'a>>(bytes: &'a [u8], mode: Mode) -> Result<BatchReader<'a, I>, ParseError> {
    reader(bytes, I::form(mode))
}

/// A record read from the text it starts: its own text, and the record.
pub(super) type Leading<'a, I> = (&'a str, Received<'a, I>);

/// How a walk reads each record: from the text it starts (with what
/// follows it), `None` when that does not read as a record object; and
/// the strict way, from the record's whole text. Both ways fall back alike:
/// the hand scanner (the `scan` module) to serde_json, a glance to a whole
/// reading, and the leading reading to the strict one.
pub struct Form<'a, I> {
    pub(super) leading: fn(&'a str, RecordId) -> Option<Leading<'a, I>>,
    pub(super) strict: fn(&'a RawValue, RecordId) -> Received<'a, I>,
}

impl<I> Clone for Form<'_, I> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<I> Copy for Form<'_, I> {}

impl<I> std::fmt::Debug for Form<'_, I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Form")
    }
}

fn reader<'a, I>(bytes: &'a [u8], form: Form<'a, I>) -> Result<BatchReader<'a, I>, ParseError> {
    let (text, bom) = decode(bytes)?;
    let reading = match Walk::start(text, form) {
        Ok(walk) => Reading::Walk(walk),
        Err(Unexpected) => Reading::Found {
            records: strict(text, bom)?,
            next: 0,
        },
    };
    Ok(BatchReader {
        text,
        bom,
        form,
        reading,
    })
}

/// A batch's records, read one at a time (see [`read_batch`]): each with
/// the handle on its text, which outlives the record (it borrows the
/// payload). Records are named in errors as
/// [`parse_batch`](super::parse_batch) names them.
#[derive(Debug)]
pub struct BatchReader<'a, I = Image> {
    text: &'a str,
    bom: usize,
    form: Form<'a, I>,
    reading: Reading<'a, I>,
}

#[derive(Debug)]
enum Reading<'a, I> {
    /// In one pass, where the payload is as a batch is expected to be.
    Walk(Walk<'a, I>),
    /// Otherwise, the strict way: every record's text found first.
    Found {
        records: Vec<&'a RawValue>,
        next: usize,
    },
    Done,
}

impl<'a, I> BatchReader<'a, I> {
    /// Hands each record, with its handle on its text, to `f`, as the
    /// iterator would give them, but lent where they were read instead of
    /// moved out (a record is about 300 bytes, and each layer of the
    /// iterator's `Option<Result<...>>` moved it once more). Returns the
    /// error the iterator would end with, after the records before it.
    pub fn for_each_lent(mut self, mut f: impl FnMut(RawJson<'a>, &Received<'a, I>)) -> Result<(), ParseError> {
        while let Reading::Walk(walk) = &mut self.reading {
            match walk.lend_next_record(|text, received| f(RawJson::Text(text), received)) {
                Ok(true) => {}
                Ok(false) => return Ok(()),
                Err(Unexpected) => {
                    let read = walk.read();
                    if let Some(error) = self.give_up_walking(read) {
                        return Err(error);
                    }
                }
            }
        }
        // What is left, the strict way.
        for read in self {
            let (raw, received) = read?;
            f(raw, &received);
        }
        Ok(())
    }

    /// The walk met what it does not expect after `read` records: the
    /// strict way says what is wrong (the error), or (were the walk ever
    /// stricter than serde_json) goes on from the records read so far.
    fn give_up_walking(&mut self, read: usize) -> Option<ParseError> {
        match strict(self.text, self.bom) {
            Ok(records) => {
                self.reading = Reading::Found { records, next: read };
                None
            }
            Err(error) => {
                self.reading = Reading::Done;
                Some(error)
            }
        }
    }

    /// Whether the reader is reading the strict way.
    #[cfg(test)]
    pub(super) fn is_strict(&self) -> bool {
        matches!(self.reading, Reading::Found { .. })
    }
}

impl<'a, I> Iterator for BatchReader<'a, I> {
    type Item = Result<(RawJson<'a>, Received<'a, I>), ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match &mut self.reading {
                Reading::Walk(walk) => match walk.next_record() {
                    Ok(Some((text, received))) => return Some(Ok((RawJson::Text(text), received))),
                    Ok(None) => self.reading = Reading::Done,
                    Err(Unexpected) => {
                        let read = walk.read();
                        if let Some(error) = self.give_up_walking(read) {
                            return Some(Err(error));
                        }
                    }
                },
                Reading::Found { records, next } => {
                    let raw = *records.get(*next)?;
                    let position = RecordId::Index(*next);
                    *next += 1;
                    return Some(Ok((RawJson::Text(raw.get()), (self.form.strict)(raw, position))));
                }
                Reading::Done => return None,
            }
        }
    }
}

/// The walk met something it does not expect (see the module doc).
#[derive(Debug)]
pub(super) struct Unexpected;

/// Where a walk over one document is: at a record of `Records`, or past
/// the array (see the module doc).
#[derive(Debug, Clone, Copy)]
pub(super) struct Walk<'a, I> {
    text: &'a str,
    form: Form<'a, I>,
    at: usize,
    /// Records read so far.
    index: usize,
    done: bool,
}

impl<'a, I> Walk<'a, I> {
    /// A walk at the first record of `text`'s `Records` array.
    fn start(text: &'a str, form: Form<'a, I>) -> Result<Walk<'a, I>, Unexpected> {
        let mut walk = Walk {
            text,
            form,
            at: 0,
            index: 0,
            done: false,
        };
        walk.expect(b'{')?;
        if walk.peek() == Some(b'}') {
            return Err(Unexpected);
        }
        loop {
            let key: Text<'a> = walk.value()?;
            walk.expect(b':')?;
            if key.0 == "Records" {
                walk.expect(b'[')?;
                if walk.peek() == Some(b']') {
                    walk.at += 1;
                    walk.finish()?;
                }
                return Ok(walk);
            }
            walk.value::<IgnoredAny>()?;
            walk.expect(b',')?;
        }
    }

    /// How many records the walk has read.
    pub(super) fn read(&self) -> usize {
        self.index
    }

    /// The next record, with its text; `None` past the last one.
    pub(super) fn next_record(&mut self) -> Result<Option<Leading<'a, I>>, Unexpected> {
        let Some((start, rest, position)) = self.record_start()? else {
            return Ok(None);
        };
        let read = match (self.form.leading)(rest, position.clone()) {
            Some(read) => read,
            None => {
                // Not a record: read as the strict way reads it.
                let raw: &'a RawValue = self.value()?;
                (raw.get(), (self.form.strict)(raw, position))
            }
        };
        self.record_end(start, read.0.len())?;
        Ok(Some(read))
    }

    /// The next record, with its text, lent to `f` where it was read (not
    /// moved out first); false past the last one.
    fn lend_next_record(&mut self, f: impl FnOnce(&'a str, &Received<'a, I>)) -> Result<bool, Unexpected> {
        let Some((start, rest, position)) = self.record_start()? else {
            return Ok(false);
        };
        let leading = (self.form.leading)(rest, position.clone());
        let strict;
        let (text, received) = match &leading {
            Some((text, received)) => (*text, received),
            None => {
                // Not a record: read as the strict way reads it.
                let raw: &'a RawValue = self.value()?;
                strict = (self.form.strict)(raw, position);
                (raw.get(), &strict)
            }
        };
        self.record_end(start, text.len())?;
        f(text, received);
        Ok(true)
    }

    /// Where the next record starts, the text from there, and the
    /// record's position; `None` past the last one.
    fn record_start(&mut self) -> Result<Option<(usize, &'a str, RecordId)>, Unexpected> {
        if self.done {
            return Ok(None);
        }
        self.skip_whitespace();
        let start = self.at;
        let rest = self.text.get(start..).ok_or(Unexpected)?;
        Ok(Some((start, rest, RecordId::Index(self.index))))
    }

    /// Steps past the record of `len` bytes at `start` and what follows it.
    fn record_end(&mut self, start: usize, len: usize) -> Result<(), Unexpected> {
        self.at = start + len;
        match self.next_byte() {
            Some(b',') => {}
            Some(b']') => self.finish()?,
            _ => return Err(Unexpected),
        }
        // Counted once all around it is as expected: a record the walk
        // gives up at is read again by the strict way.
        self.index += 1;
        Ok(())
    }

    /// Past `Records`: the other members, then the end of the document.
    fn finish(&mut self) -> Result<(), Unexpected> {
        loop {
            match self.next_byte() {
                Some(b'}') => break,
                Some(b',') => {
                    let key: Text<'a> = self.value()?;
                    if key.0 == "Records" {
                        return Err(Unexpected);
                    }
                    self.expect(b':')?;
                    self.value::<IgnoredAny>()?;
                }
                _ => return Err(Unexpected),
            }
        }
        self.skip_whitespace();
        if self.at != self.text.len() {
            return Err(Unexpected);
        }
        self.done = true;
        Ok(())
    }

    /// Reads one JSON value from where the walk is, and steps past it.
    fn value<T: Deserialize<'a>>(&mut self) -> Result<T, Unexpected> {
        self.skip_whitespace();
        let rest = self.text.get(self.at..).ok_or(Unexpected)?;
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<T>();
        let value = values.next().ok_or(Unexpected)?.map_err(|_| Unexpected)?;
        self.at += values.byte_offset();
        Ok(value)
    }

    fn skip_whitespace(&mut self) {
        let bytes = self.text.as_bytes();
        while bytes
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_whitespace();
        self.text.as_bytes().get(self.at).copied()
    }

    fn next_byte(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    fn expect(&mut self, byte: u8) -> Result<(), Unexpected> {
        match self.next_byte() {
            Some(b) if b == byte => Ok(()),
            _ => Err(Unexpected),
        }
    }
}
