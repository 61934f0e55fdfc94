//! The ways in, one per use: a Lambda payload ([`read_batch`], in `walk`;
//! [`parse_batch`] collects it), a line of JSON Lines ([`read_line`]), a
//! file of any accepted shape ([`parse_any`]), one record's JSON
//! ([`parse_record`]).

use serde::de::Deserialize;
use serde_json::value::RawValue;

use super::document::{decode, is_json_whitespace, json_message, line_col, Probe};
use super::one::received;
use super::walk::{read_batch, Form, ImageForm, Mode};
use super::{ParseError, Received, RecordId};
use crate::value::Image;

/// Parses a Lambda DynamoDB event or a DynamoDB Streams `GetRecords`
/// response whole: [`read_batch`] in [`Mode::Whole`], collected.
///
/// Input that is not UTF-8 JSON, not an object, or has no `Records` array is
/// a [`ParseError`]; otherwise every element of `Records` gives one
/// [`Received`], in order, whether or not it is a usable record.
pub fn parse_batch(bytes: &[u8]) -> Result<Vec<Received<'_>>, ParseError> {
    read_batch::<Image>(bytes, Mode::Whole)?
        .map(|read| read.map(|(_, received)| received))
        .collect()
}

/// Parses JSON Lines: one record object per line, in the Lambda or the
/// `GetRecords` spelling; blank lines are skipped. Each record comes with its
/// line number (from 1). A line that is not JSON is a [`ParseError`] with its
/// line number; a line that is JSON but not a usable record is a [`Received`]
/// whose `record` is the error.
#[cfg(test)]
pub(super) fn parse_json_lines(text: &str) -> Result<Vec<(usize, Received<'_>)>, ParseError> {
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

fn json_lines(text: &str, bom: usize) -> Result<Vec<(usize, Received<'_>)>, ParseError> {
    let mut out = Vec::new();
    for (index, line) in text.split('\n').enumerate() {
        let number = index + 1;
        let column_shift = if number == 1 { bom } else { 0 };
        if let Some(received) = read_line(line, number, column_shift, Mode::Whole)? {
            out.push((number, received));
        }
    }
    Ok(out)
}

/// Reads line `number` (from 1) of a JSON Lines file, its images built as
/// `I` in `mode` (as [`read_batch`] reads a payload's records), for readers
/// that take a file a line at a time: `None` for a blank line, an error (at
/// that line, its column moved right by `column_shift`, as for a byte-order
/// mark the caller stripped) for a line that is not JSON, else the record.
pub fn read_line<'a, I: ImageForm<'a>>(
    line: &'a str,
    number: usize,
    column_shift: usize,
    mode: Mode,
) -> Result<Option<Received<'a, I>>, ParseError> {
    json_line(line, number, column_shift, I::form(mode))
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
