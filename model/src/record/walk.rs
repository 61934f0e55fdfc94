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
//! which says what is wrong with it, as [`super::parse_batch`] always has.
//!
//! A record that is JSON but does not read as a record (an `eventID` that
//! is a number, an array where an object was expected) is read again on its
//! own as the strict way reads it, so that it is named and explained the
//! same way; the walk then goes on.

use serde::de::{Deserialize, IgnoredAny};
use serde_json::value::RawValue;

use super::attr::Text;
use super::one::{read_leading, received};
use super::{Received, RecordId};

/// The walk met something it does not expect (see the module doc).
#[derive(Debug)]
pub(super) struct Unexpected;

/// Where a walk over one document is: at a record of `Records`, or past
/// the array (see the module doc).
#[derive(Debug, Clone, Copy)]
pub(super) struct Walk<'a> {
    text: &'a str,
    at: usize,
    /// Records read so far.
    index: usize,
    done: bool,
}

impl<'a> Walk<'a> {
    /// A walk at the first record of `text`'s `Records` array.
    pub(super) fn start(text: &'a str) -> Result<Walk<'a>, Unexpected> {
        let mut walk = Walk {
            text,
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
    pub(super) fn next_record(&mut self) -> Result<Option<(&'a str, Received<'a>)>, Unexpected> {
        if self.done {
            return Ok(None);
        }
        self.skip_whitespace();
        let start = self.at;
        let rest = self.text.get(start..).ok_or(Unexpected)?;
        let position = RecordId::Index(self.index);
        let (text, received) = match read_leading(rest, position.clone()) {
            Some(read) => read,
            None => {
                // Not a record: read as the strict way reads it.
                let raw: &'a RawValue = self.value()?;
                (raw.get(), received(raw, position))
            }
        };
        self.at = start + text.len();
        match self.next_byte() {
            Some(b',') => {}
            Some(b']') => self.finish()?,
            _ => return Err(Unexpected),
        }
        // Counted once all around it is as expected: a record the walk
        // gives up at is read again by the strict way.
        self.index += 1;
        Ok(Some((text, received)))
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
