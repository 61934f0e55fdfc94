//! The glance's fast path: a record in the shape AWS sends it, read by hand.
//!
//! serde_json reads a record's text token by token through visitors; most
//! of the router's time went there, for records of which it needs a few
//! fields and a check of every value. [`glance_record`] reads the same
//! record in one loop over its bytes and makes exactly what serde_json
//! makes of it for the glance ([`leading`](super::one::leading) with
//! [`ImageGlance`]), or nothing: it knows only the common case, and
//! anything else makes it give up, so that serde_json reads the record as
//! before and says what is wrong, if anything. It gives up on:
//!
//! - a string with an escape (`\`) or a control character in it;
//! - a value the glance would be unsure of (see `glance`), a key attribute
//!   that is not an S or an N, a repeated name anywhere it matters;
//! - a known member of another JSON type than usual, `null` included;
//! - a `Records` member, JSON nested deeper than [`DEPTH`], and anything
//!   that is not JSON.
//!
//! So a record it reads is one that serde_json reads without error, to the
//! same fields (the tests read every record both ways and compare).

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::attr::{is_number, ImageField, Text};
use super::glance::{distinct_sorted, sure_number, ImageGlance, Scalar};
use super::raw::{RawIdentity, RawRecord, RawStreamRecord};
use crate::value::{Image, Value};

/// How deep JSON may nest below a record's members before the scan gives
/// up: far below serde_json's own limit (128), so that a record the scan
/// reads is never one serde_json refuses as too deep.
const DEPTH: u8 = 32;

/// Up to this many names, a nested map's names are checked for repeats
/// without sorting them.
const FEW: usize = 16;

/// Reads the record object that `text` starts with, as
/// `leading::<ImageGlance>` does; `None` when the scan gives up.
pub(super) fn glance_record(text: &str) -> Option<(&str, RawRecord<'_, ImageGlance<'_>>)> {
    if !text.starts_with('{') {
        return None;
    }
    let mut scan = Scan { text, at: 0 };
    let mut record = RawRecord {
        event_id: None,
        event_name: None,
        event_source_arn: None,
        user_identity: None,
        dynamodb: None,
        records: None,
    };
    scan.object(|scan, name| match name {
        "eventID" => once(&mut record.event_id, scan.string()?.to_owned()),
        "eventName" => once(&mut record.event_name, Text(Cow::Borrowed(scan.string()?))),
        "eventSourceARN" => once(&mut record.event_source_arn, Text(Cow::Borrowed(scan.string()?))),
        "userIdentity" => {
            let identity = scan.identity()?;
            once(&mut record.user_identity, identity)
        }
        "dynamodb" => {
            let stream = scan.stream()?;
            once(&mut record.dynamodb, stream)
        }
        "Records" => None,
        _ => scan.skip(DEPTH),
    })?;
    Some((text.get(..scan.at)?, record))
}

/// Sets a member read once; `None` (give up) when it was already read:
/// serde refuses a repeated member.
fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    match slot {
        Some(_) => None,
        None => {
            *slot = Some(value);
            Some(())
        }
    }
}

/// Where the string that `bytes` starts inside ends: the first `"`, `\\`
/// or control character, eight bytes at a time (most strings here are
/// names and short values).
fn string_end(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // The high bit of each byte of `word` that is zero (exact for the
    // lowest such byte, which is all that is used).
    let zero = |word: u64| word.wrapping_sub(ONES) & !word & HIGHS;
    let mut chunks = bytes.chunks_exact(8);
    for (index, chunk) in chunks.by_ref().enumerate() {
        let Ok(chunk) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let word = u64::from_le_bytes(chunk);
        let found = zero(word ^ (ONES * u64::from(b'"')))
            | zero(word ^ (ONES * u64::from(b'\\')))
            | (word.wrapping_sub(ONES * 0x20) & !word & HIGHS);
        if found != 0 {
            return Some(index * 8 + found.trailing_zeros() as usize / 8);
        }
    }
    let tail = chunks.remainder();
    let at = tail.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    Some(bytes.len() - tail.len() + at)
}

/// A position in a record's text. Every method reads one JSON token or
/// value at the position (after whitespace) and moves past it, or answers
/// `None` (give up), after which the scan is not used again.
struct Scan<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scan<'a> {
    /// The next byte that is not whitespace, left unread.
    fn peek(&mut self) -> Option<u8> {
        let bytes = self.text.as_bytes();
        while let Some(&byte) = bytes.get(self.at) {
            if !matches!(byte, b' ' | b'\n' | b'\r' | b'\t') {
                return Some(byte);
            }
            self.at += 1;
        }
        None
    }

    /// Reads `byte` (after whitespace), or gives up.
    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// A string without escapes or control characters, borrowed.
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        let rest = self.text.as_bytes().get(start..)?;
        let length = string_end(rest)?;
        if rest[length] != b'"' {
            return None;
        }
        self.at = start + length + 1;
        self.text.get(start..start + length)
    }

    /// `true` or `false`.
    fn boolean(&mut self) -> Option<bool> {
        match self.peek()? {
            b't' => self.literal("true").map(|()| true),
            b'f' => self.literal("false").map(|()| false),
            _ => None,
        }
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        self.text
            .get(self.at..)?
            .starts_with(word)
            .then(|| self.at += word.len())
    }

    /// A JSON number, as its text: `-`, an integer part without leading
    /// zeros, then an optional fraction and exponent.
    fn number(&mut self) -> Option<&'a str> {
        self.peek()?;
        let bytes = self.text.as_bytes();
        let start = self.at;
        let digits = |at: &mut usize| {
            let from = *at;
            while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            *at > from
        };
        let mut at = start;
        if bytes.get(at) == Some(&b'-') {
            at += 1;
        }
        match bytes.get(at)? {
            b'0' => at += 1,
            b'1'..=b'9' => {
                digits(&mut at);
            }
            _ => return None,
        }
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            digits(&mut at).then_some(())?;
        }
        if matches!(bytes.get(at), Some(b'e' | b'E')) {
            at += 1;
            if matches!(bytes.get(at), Some(b'+' | b'-')) {
                at += 1;
            }
            digits(&mut at).then_some(())?;
        }
        self.at = at;
        self.text.get(start..at)
    }

    /// An object: `member` reads each member's value, given its name.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            let name = self.string()?;
            self.eat(b':')?;
            member(self, name)?;
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// An array: `element` reads each element.
    fn array(&mut self, mut element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.at += 1;
            return Some(());
        }
        loop {
            element(self)?;
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Any JSON value, nested at most `depth` deep, read and dropped.
    fn skip(&mut self, depth: u8) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(|scan, _| scan.skip(depth.checked_sub(1)?)),
            b'[' => self.array(|scan| scan.skip(depth.checked_sub(1)?)),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => self.number().map(drop),
        }
    }

    /// `userIdentity`, either spelling.
    fn identity(&mut self) -> Option<RawIdentity<'a>> {
        let mut identity = RawIdentity {
            kind: None,
            principal: None,
        };
        self.object(|scan, name| match name {
            "type" | "Type" => once(&mut identity.kind, Text(Cow::Borrowed(scan.string()?))),
            "principalId" | "PrincipalId" => once(&mut identity.principal, Text(Cow::Borrowed(scan.string()?))),
            _ => scan.skip(DEPTH),
        })?;
        Some(identity)
    }

    /// The `dynamodb` member.
    fn stream(&mut self) -> Option<RawStreamRecord<'a, ImageGlance<'a>>> {
        let mut stream = RawStreamRecord {
            created: None,
            keys: None,
            new_image: None,
            old_image: None,
            sequence_number: None,
            size_bytes: None,
            view_type: None,
        };
        self.object(|scan, name| match name {
            "ApproximateCreationDateTime" => {
                let created = scan.created()?;
                once(&mut stream.created, created)
            }
            "Keys" => {
                let keys = scan.keys()?;
                once(&mut stream.keys, ImageField(Ok(keys)))
            }
            "NewImage" => {
                let image = scan.image()?;
                once(&mut stream.new_image, image)
            }
            "OldImage" => {
                let image = scan.image()?;
                once(&mut stream.old_image, image)
            }
            "SequenceNumber" => once(&mut stream.sequence_number, scan.string()?.to_owned()),
            "SizeBytes" => {
                let size = scan.number()?.parse::<u64>().ok()?;
                once(&mut stream.size_bytes, size)
            }
            "StreamViewType" => once(&mut stream.view_type, Text(Cow::Borrowed(scan.string()?))),
            _ => scan.skip(DEPTH),
        })?;
        Some(stream)
    }

    /// `ApproximateCreationDateTime`: a number or a string, as its JSON text.
    fn created(&mut self) -> Option<&'a RawValue> {
        let first = self.peek()?;
        let start = self.at;
        match first {
            b'"' => self.string().map(drop)?,
            _ => self.number().map(drop)?,
        }
        serde_json::from_str(self.text.get(start..self.at)?).ok()
    }

    /// `Keys`: S and N values only.
    fn keys(&mut self) -> Option<Image> {
        let mut entries = Vec::with_capacity(2);
        self.object(|scan, name| {
            scan.eat(b'{')?;
            let tag = scan.string()?;
            scan.eat(b':')?;
            let text = scan.string()?;
            let value = match tag {
                "S" => Value::S(text.to_owned()),
                "N" if is_number(text) => Value::N(text.to_owned()),
                _ => return None,
            };
            scan.eat(b'}')?;
            entries.push((name.to_owned(), value));
            Some(())
        })?;
        Image::from_distinct(entries).ok()
    }

    /// An image the glance is sure of: its top-level S and N values kept.
    fn image(&mut self) -> Option<ImageGlance<'a>> {
        let mut entries = Vec::with_capacity(16);
        self.object(|scan, name| {
            let value = scan.attribute(DEPTH)?;
            entries.push((Cow::Borrowed(name), value));
            Some(())
        })?;
        ImageGlance::sure(entries)
    }

    /// An attribute value the glance is sure of: `Some(scalar)` for an S or
    /// an N, `None` for the others.
    fn attribute(&mut self, depth: u8) -> Option<Option<Scalar<'a>>> {
        let depth = depth.checked_sub(1)?;
        self.eat(b'{')?;
        let tag = self.string()?;
        self.eat(b':')?;
        let scalar = match tag {
            "S" => Some(Scalar::S(Cow::Borrowed(self.string()?))),
            "N" => {
                let number = self.string()?;
                sure_number(number).then_some(())?;
                Some(Scalar::N(Cow::Borrowed(number)))
            }
            "BOOL" => self.boolean().map(|_| None)?,
            "NULL" => self.boolean()?.then_some(None)?,
            "SS" => {
                let mut members = Vec::new();
                self.array(|scan| {
                    members.push(scan.string()?);
                    Some(())
                })?;
                (!members.is_empty() && distinct_sorted(&mut members)).then_some(None)?
            }
            "L" => self.array(|scan| scan.attribute(depth).map(drop)).map(|()| None)?,
            "M" => self.map(depth).map(|()| None)?,
            _ => return None,
        };
        self.eat(b'}')?;
        Some(scalar)
    }

    /// An M's object: every value sure, the names distinct.
    fn map(&mut self, depth: u8) -> Option<()> {
        let mut few: [&str; FEW] = [""; FEW];
        let mut many: Vec<&str> = Vec::new();
        let mut count = 0;
        self.object(|scan, name| {
            scan.attribute(depth)?;
            if count < FEW {
                // Compared inline: most names are short.
                if few[..count]
                    .iter()
                    .any(|seen| seen.as_bytes().iter().eq(name.as_bytes()))
                {
                    return None;
                }
                few[count] = name;
            } else {
                if count == FEW {
                    many.extend_from_slice(&few);
                }
                many.push(name);
            }
            count += 1;
            Some(())
        })?;
        (count <= FEW || distinct_sorted(&mut many)).then_some(())
    }
}

#[cfg(test)]
mod tests;
