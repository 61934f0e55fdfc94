//! The parsers: documents into raw records, raw records into borrowed serde
//! structs, and those, validated, into [`ChangeRecord`]s.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::attr::Text;
use super::one::{clip, received};
use super::walk::{read_batch, Form};
use super::{BorrowedReceived, ParseError, Received, RecordId, SharedText};

// ---------------------------------------------------------------------------
// Public entry points
// ---------------------------------------------------------------------------

/// Parses a Lambda DynamoDB event or a DynamoDB Streams `GetRecords`
/// response: an object with a `Records` array (other members, such as
/// `NextShardIterator`, are ignored).
///
/// Input that is not UTF-8 JSON, not an object, or has no `Records` array is
/// a [`ParseError`]; otherwise every element of `Records` gives one
/// [`Received`], in order, whether or not it is a usable record.
pub fn parse_batch(bytes: &[u8]) -> Result<Vec<Received<'_>>, ParseError> {
    read_batch(bytes)?
        .map(|read| read.map(|(_, received)| received))
        .collect()
}

/// The records of a batch, every one found first (`RawValue`s) and read
/// after: the strict way, which explains what is wrong with a payload.
pub(super) fn strict(text: &str, bom: usize) -> Result<Vec<&RawValue>, ParseError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let probe = Probe::deserialize(&mut de).map_err(|e| ParseError::from_json(&e, bom))?;
    de.end().map_err(|e| ParseError::from_json(&e, bom))?;
    match probe {
        Probe::Batch(records) => Ok(records),
        Probe::Object => Err(ParseError::at_start(
            text,
            bom,
            "an object without a `Records` array: expected a Lambda event or a GetRecords response",
        )),
        Probe::Other => Err(ParseError::at_start(
            text,
            bom,
            "not a JSON object: expected a Lambda event or a GetRecords response",
        )),
    }
}

/// Parses JSON Lines: one record object per line, in the Lambda or the
/// `GetRecords` spelling; blank lines are skipped. Each record comes with its
/// line number (from 1). A line that is not JSON is a [`ParseError`] with its
/// line number; a line that is JSON but not a usable record is a [`Received`]
/// whose `record` is the error.
pub fn parse_json_lines(text: &str) -> Result<Vec<(usize, Received<'_>)>, ParseError> {
    let (text, bom) = match text.strip_prefix('\u{feff}') {
        Some(rest) => (rest, 3),
        None => (text, 0),
    };
    json_lines(text, bom)
}

/// Parses any accepted shape: an object with `Records` (Lambda event or
/// `GetRecords` response), JSON Lines, or a single record object (which may
/// span lines). Empty input (or only whitespace) is no records.
///
/// Errors carry the line and column of the input as a whole.
pub fn parse_any(bytes: &[u8]) -> Result<Vec<Received<'_>>, ParseError> {
    let (text, bom) = decode(bytes)?;
    let start = text.len() - text.trim_start_matches(is_json_whitespace).len();
    if start == text.len() {
        return Ok(Vec::new());
    }
    let lines_only = |text| json_lines(text, bom).map(|lines| lines.into_iter().map(|(_, r)| r).collect());
    if !text[start..].starts_with('{') {
        return lines_only(text);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    match Probe::deserialize(&mut de) {
        Ok(Probe::Batch(records)) => {
            de.end().map_err(|e| ParseError::from_json(&e, bom))?;
            Ok(records
                .into_iter()
                .enumerate()
                .map(|(i, raw)| received(raw, RecordId::Index(i)))
                .collect())
        }
        Ok(Probe::Object | Probe::Other) => {
            if de.end().is_err() {
                return lines_only(text);
            }
            // A single value: one record, perhaps pretty-printed.
            let raw: &RawValue = serde_json::from_str(text).map_err(|e| ParseError::from_json(&e, bom))?;
            let line = line_col(text.as_bytes(), start).0;
            Ok(vec![received(raw, RecordId::Line(line))])
        }
        Err(e) => {
            let start_line = line_col(text.as_bytes(), start).0;
            if e.line() > start_line {
                // The first value spans lines: a pretty-printed document with
                // an error in it, not JSON Lines.
                Err(ParseError::from_json(&e, bom))
            } else {
                lines_only(text)
            }
        }
    }
}

/// Parses one record's JSON (either spelling). The returned `raw` borrows `raw`.
pub fn parse_record(raw: &RawValue) -> Received<'_> {
    received(raw, RecordId::Unidentified)
}

/// The table name in a DynamoDB table or stream ARN
/// (`arn:PARTITION:dynamodb:REGION:ACCOUNT:table/NAME[/stream/LABEL]`), if it
/// is one and the name is a valid table name.
pub fn table_from_arn(arn: &str) -> Option<&str> {
    let mut parts = arn.splitn(6, ':');
    if parts.next()? != "arn" || parts.next()?.is_empty() || parts.next()? != "dynamodb" {
        return None;
    }
    let (_region, _account) = (parts.next()?, parts.next()?);
    let name = parts.next()?.strip_prefix("table/")?.split('/').next()?;
    let valid = !name.is_empty()
        && name.len() <= 255
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    valid.then_some(name)
}

/// A stream ARN and the name of its table, if it names one.
pub(super) type SharedArn = (SharedText, Option<SharedText>);

/// How many ARNs [`shared_arn`] keeps: a Lambda batch comes from one
/// stream, a replayed file from a few.
const SHARED_ARNS: usize = 8;

/// `arn` and the name of its table ([`table_from_arn`]), shared. The last
/// few ARNs met on the thread are kept, so that the records of one stream
/// share one of each instead of each making its own.
pub(super) fn shared_arn(arn: &str) -> SharedArn {
    std::thread_local! {
        static KEPT: RefCell<Vec<SharedArn>> = const { RefCell::new(Vec::new()) };
    }
    KEPT.with_borrow_mut(|kept| {
        if let Some((known, table)) = kept.iter().find(|(known, _)| **known == *arn) {
            return (known.clone(), table.clone());
        }
        if kept.len() == SHARED_ARNS {
            kept.remove(0);
        }
        let shared = (SharedText::kept(arn), table_from_arn(arn).map(SharedText::kept));
        kept.push(shared.clone());
        shared
    })
}

// ---------------------------------------------------------------------------
// Documents
// ---------------------------------------------------------------------------

fn is_json_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// The input as UTF-8 without a leading byte-order mark, and the mark's length.
pub(super) fn decode(bytes: &[u8]) -> Result<(&str, usize), ParseError> {
    let bom = if bytes.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 };
    let body = bytes.get(bom..).unwrap_or_default();
    match std::str::from_utf8(body) {
        Ok(text) => Ok((text, bom)),
        Err(e) => {
            let (line, column) = line_col(bytes, bom + e.valid_up_to());
            Err(ParseError {
                line,
                column,
                message: "not valid UTF-8".to_owned(),
            })
        }
    }
}

/// 1-based line and column (in bytes) of a byte offset.
fn line_col(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = bytes.get(..offset).unwrap_or(bytes);
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    (line, before.len() - line_start + 1)
}

fn json_lines(text: &str, bom: usize) -> Result<Vec<(usize, Received<'_>)>, ParseError> {
    let mut out = Vec::new();
    for (index, line) in text.split('\n').enumerate() {
        let number = index + 1;
        let column_shift = if number == 1 { bom } else { 0 };
        if let Some(received) = parse_json_line(line, number, column_shift)? {
            out.push((number, received));
        }
    }
    Ok(out)
}

/// Parses line `number` (from 1) of a JSON Lines file, for readers that
/// take a file a line at a time: `None` for a blank line, an error (at that
/// line, its column moved right by `column_shift`, as for a byte-order mark
/// the caller stripped) for a line that is not JSON, else the record.
pub fn parse_json_line(line: &str, number: usize, column_shift: usize) -> Result<Option<Received<'_>>, ParseError> {
    json_line(line, number, column_shift, Form::whole())
}

/// [`parse_json_line`], the record's images borrowed from `line` (as
/// [`super::read_batch_borrowed`] reads them).
pub fn parse_json_line_borrowed(
    line: &str,
    number: usize,
    column_shift: usize,
) -> Result<Option<BorrowedReceived<'_>>, ParseError> {
    json_line(line, number, column_shift, Form::borrowed())
}

/// One line, its record read as `form` reads one: in one pass where it
/// starts the line, else the strict way.
fn json_line<'a, I>(
    line: &'a str,
    number: usize,
    column_shift: usize,
    form: Form<'a, I>,
) -> Result<Option<Received<'a, I>>, ParseError> {
    if line.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
        return Ok(None);
    }
    // In one pass when the line is a record object, as in `read_batch`.
    let rest = line.trim_start_matches(is_json_whitespace);
    if let Some((text, received)) = (form.leading)(rest, RecordId::Line(number)) {
        if rest[text.len()..]
            .bytes()
            .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            return Ok(Some(received));
        }
    }
    let raw: &RawValue = serde_json::from_str(line).map_err(|e| ParseError {
        line: number,
        column: e.column() + column_shift,
        message: json_message(&e),
    })?;
    Ok(Some((form.strict)(raw, RecordId::Line(number))))
}

impl ParseError {
    fn from_json(e: &serde_json::Error, bom: usize) -> ParseError {
        let column = if e.line() == 1 { e.column() + bom } else { e.column() };
        ParseError {
            line: e.line(),
            column,
            message: json_message(e),
        }
    }

    fn at_start(text: &str, bom: usize, message: &str) -> ParseError {
        let start = text.len() - text.trim_start_matches(is_json_whitespace).len();
        let (line, column) = line_col(text.as_bytes(), start);
        let column = if line == 1 { column + bom } else { column };
        ParseError {
            line,
            column,
            message: message.to_owned(),
        }
    }
}

/// A serde_json error's message without its " at line L column C" suffix,
/// clipped (type errors quote the value they met).
pub(super) fn json_message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    clip(full.strip_suffix(suffix.as_str()).unwrap_or(&full), 160)
}

/// The top level of a document: a batch (`Records`), another object, or not an object.
enum Probe<'a> {
    Batch(Vec<&'a RawValue>),
    Object,
    Other,
}

impl<'de> Deserialize<'de> for Probe<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Probe<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Probe<'de>, A::Error> {
                let mut records = None;
                while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
                    if key == "Records" {
                        if records.is_some() {
                            return Err(de::Error::custom("duplicate `Records`"));
                        }
                        records = Some(map.next_value::<RecordsArray<'de>>()?.0);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(records.map_or(Probe::Object, Probe::Batch))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Probe<'de>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Probe::Other)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Probe<'de>, E> {
                Ok(Probe::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Probe<'de>, E> {
                Ok(Probe::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Probe<'de>, E> {
                Ok(Probe::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Probe<'de>, E> {
                Ok(Probe::Other)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Probe<'de>, E> {
                Ok(Probe::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Probe<'de>, E> {
                Ok(Probe::Other)
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// `Records`: an array of raw records.
struct RecordsArray<'a>(Vec<&'a RawValue>);

impl<'de> Deserialize<'de> for RecordsArray<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RecordsArray<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of records")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RecordsArray<'de>, A::Error> {
                let mut records = Vec::with_capacity(seq.size_hint().unwrap_or(128).min(16_384));
                while let Some(raw) = seq.next_element::<&'de RawValue>()? {
                    records.push(raw);
                }
                Ok(RecordsArray(records))
            }
        }
        // Not `deserialize_seq`: serde_json's type error would quote the value.
        deserializer.deserialize_any(NotQuoting(V))
    }
}

/// Wraps a visitor so that a value of the wrong JSON type gives an error that
/// names the type but never quotes the value.
struct NotQuoting<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for NotQuoting<V> {
    type Value = V::Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<V::Value, A::Error> {
        Err(de::Error::custom(format!(
            "expected {}, found an object",
            Expecting(&self.0)
        )))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<V::Value, E> {
        Err(E::custom(format!("expected {}, found a boolean", Expecting(&self.0))))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<V::Value, E> {
        Err(E::custom(format!("expected {}, found a number", Expecting(&self.0))))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<V::Value, E> {
        Err(E::custom(format!("expected {}, found a number", Expecting(&self.0))))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<V::Value, E> {
        Err(E::custom(format!("expected {}, found a number", Expecting(&self.0))))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<V::Value, E> {
        Err(E::custom(format!("expected {}, found a string", Expecting(&self.0))))
    }
    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        Err(E::custom(format!("expected {}, found null", Expecting(&self.0))))
    }
}

struct Expecting<'v, V>(&'v V);

impl<'de, V: Visitor<'de>> fmt::Display for Expecting<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }
}
