//! Encoding one element, straight into the output string.

use super::sink::Sink;
use super::{b64s, number, time, Column, Direction, Nulls, SortKeyError};

/// A value to encode, already matched against its column's type.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Elem<'a> {
    Null,
    Bool(bool),
    Num(&'a str),
    Date(&'a str),
    Timestamp(&'a str),
    S(&'a str),
    B(&'a [u8]),
}

/// Appends the encoding of `elem` in `column`; on error `out` is unchanged.
pub(crate) fn element(column: &Column, elem: Elem<'_>, out: &mut String) -> Result<(), SortKeyError> {
    let start = out.len();
    let result = write(column, elem, out);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn write(column: &Column, elem: Elem<'_>, out: &mut String) -> Result<(), SortKeyError> {
    let desc = column.direction == Direction::Desc;
    let mut sink = Sink::new(out, desc);
    match elem {
        Elem::Null => sink.out.push(match column.nulls {
            Nulls::First => '!',
            Nulls::Last => '~',
        }),
        Elem::Bool(b) => sink.byte(if b { b'1' } else { b'0' }),
        Elem::Num(text) => number(text, &mut sink)?,
        Elem::Date(text) => {
            time::check_date(text).map_err(|reason| SortKeyError::InvalidDate {
                text: text.into(),
                reason,
            })?;
            sink.byte(b'D');
            sink.ascii(text);
        }
        Elem::Timestamp(text) => {
            let utc = time::parse_timestamp(text).map_err(|reason| SortKeyError::InvalidTimestamp {
                text: text.into(),
                reason,
            })?;
            sink.byte(b'I');
            utc.write(&mut sink);
        }
        Elem::S(s) if desc => {
            sink.byte(b'S');
            b64s::encode(s.as_bytes(), &mut sink);
            sink.byte(b'!');
        }
        Elem::S(s) => {
            let out = sink.out;
            out.reserve(s.len() + 2);
            out.push('S');
            escape(s, out);
            out.push('\u{1}');
        }
        Elem::B(bytes) => {
            sink.byte(b'X');
            b64s::encode(bytes, &mut sink);
            sink.byte(b'!');
        }
    }
    Ok(())
}

/// N: `=` for zero, `>` EEE D `!` above, `<` (255 − EEE) D̄ `~` below.
fn number(text: &str, sink: &mut Sink<'_>) -> Result<(), SortKeyError> {
    match number::parse(text)? {
        None => sink.byte(b'='),
        Some(d) if !d.neg => {
            sink.byte(b'>');
            sink.digits(u32::from(d.eee), 3);
            sink.ascii(d.head);
            sink.ascii(d.tail);
            sink.byte(b'!');
        }
        Some(d) => {
            sink.byte(b'<');
            sink.digits(u32::from(255 - d.eee), 3);
            sink.complement(d.head);
            sink.complement(d.tail);
            sink.byte(b'~');
        }
    }
    Ok(())
}

/// esc: U+0000 → U+0002 U+0001, U+0001 → U+0002 U+0002, U+0002 → U+0002 U+0003.
/// These are single bytes in UTF-8 that never occur inside a multi-byte
/// character, so runs between them are copied as they are.
pub(crate) fn escape(s: &str, out: &mut String) {
    let mut run = 0;
    for (i, b) in s.bytes().enumerate() {
        if b <= 2 {
            out.push_str(s.get(run..i).unwrap_or_default());
            out.push('\u{2}');
            out.push(char::from(b + 1));
            run = i + 1;
        }
    }
    out.push_str(s.get(run..).unwrap_or_default());
}
