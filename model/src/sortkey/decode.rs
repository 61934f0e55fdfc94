//! Strict decoding: exactly the strings encoding produces are accepted.

use super::{
    b64s, check_length, number, time, Column, ColumnType, Direction, Malformed, Nulls, SortKeyError, SortValue,
};

/// Decodes a whole key into one canonical value per column.
///
/// Strict: a key is accepted only if it is exactly the encoding of its
/// values (so `encode_sort_values(columns, &decode(columns, k)?) == k`).
/// Leading or trailing zero digits, exponent fields over 255, non-zero
/// base64 padding bits or impossible base64 lengths, raw U+0000 in a string
/// body, unknown escapes, missing terminators, a null marker on the wrong
/// side, non-canonical DATE/TIMESTAMP text, empty or over-long keys and
/// trailing characters are errors. Never panics.
pub fn decode(columns: &[Column], key: &str) -> Result<Vec<SortValue>, SortKeyError> {
    check_length(key)?;
    let mut values = Vec::with_capacity(columns.len());
    let mut pos = 0;
    for (i, column) in columns.iter().enumerate() {
        let (value, next) = element(column, i + 1, key, pos)?;
        values.push(value);
        pos = next;
    }
    if pos != key.len() {
        return Err(SortKeyError::TrailingGarbage { offset: pos });
    }
    Ok(values)
}

/// Decodes the element of `column` (numbered `number`, 1-based) that starts at
/// byte `start` of `key`; returns it and the offset just past it.
pub(crate) fn element(
    column: &Column,
    number: usize,
    key: &str,
    start: usize,
) -> Result<(SortValue, usize), SortKeyError> {
    let mut r = Reader {
        key,
        pos: start,
        desc: column.direction == Direction::Desc,
        column: number,
    };
    let placement = |nulls| match nulls {
        Nulls::First => "first",
        Nulls::Last => "last",
    };
    // Null markers are never mapped.
    match (key.as_bytes().get(start), column.nulls) {
        (Some(b'!'), Nulls::First) | (Some(b'~'), Nulls::Last) => return Ok((SortValue::Null, start + 1)),
        (Some(&c @ (b'!' | b'~')), nulls) => {
            let placed = if c == b'!' { Nulls::First } else { Nulls::Last };
            return Err(r.fail(Malformed::WrongNullPlacement {
                found: char::from(c),
                placed: placement(placed),
                column: placement(nulls),
            }));
        }
        _ => {}
    }
    let ty = column.ty;
    let value = match (ty, r.peek()) {
        (ColumnType::Bool | ColumnType::Any, Some(c @ (b'0' | b'1'))) => {
            r.pos += 1;
            SortValue::Bool(c == b'1')
        }
        (ColumnType::N | ColumnType::Any, Some(b'=')) => {
            r.pos += 1;
            SortValue::N("0".to_owned())
        }
        (ColumnType::N | ColumnType::Any, Some(c @ (b'>' | b'<'))) => {
            r.pos += 1;
            r.number(c == b'<')?
        }
        (ColumnType::Date | ColumnType::Any, Some(b'D')) => {
            r.pos += 1;
            SortValue::Date(r.date()?)
        }
        (ColumnType::Timestamp | ColumnType::Any, Some(b'I')) => {
            r.pos += 1;
            SortValue::Timestamp(r.timestamp()?)
        }
        (ColumnType::S | ColumnType::Any, Some(b'S')) => {
            r.pos += 1;
            let s = if r.desc {
                let at = r.pos;
                let bytes = r.b64s()?;
                String::from_utf8(bytes).map_err(|_| r.fail_at(at, Malformed::InvalidUtf8))?
            } else {
                r.escaped_string()?
            };
            SortValue::S(s)
        }
        (ColumnType::B | ColumnType::Any, Some(b'X')) => {
            r.pos += 1;
            SortValue::B(r.b64s()?)
        }
        _ => return Err(r.unexpected(expected_tag(ty))),
    };
    Ok((value, r.pos))
}

fn expected_tag(ty: ColumnType) -> &'static str {
    match ty {
        ColumnType::S => "an S value or the column's null",
        ColumnType::N => "an N value or the column's null",
        ColumnType::B => "a B value or the column's null",
        ColumnType::Bool => "a BOOL value or the column's null",
        ColumnType::Date => "a DATE value or the column's null",
        ColumnType::Timestamp => "a TIMESTAMP value or the column's null",
        ColumnType::Any => "a type tag or the column's null",
    }
}

struct Reader<'a> {
    key: &'a str,
    /// Byte offset; always on a character boundary.
    pos: usize,
    desc: bool,
    column: usize,
}

impl Reader<'_> {
    /// The next character in ascending form: a DESC key's character mapped
    /// back, or 0 if it is not printable ASCII (which no caller accepts).
    /// In ASC keys non-ASCII bytes are returned as they are (no caller
    /// outside string bodies accepts them either).
    fn peek(&self) -> Option<u8> {
        let raw = *self.key.as_bytes().get(self.pos)?;
        Some(match (self.desc, raw) {
            (false, raw) => raw,
            (true, 0x21..=0x7E) => 0x9F - raw,
            (true, _) => 0,
        })
    }

    fn fail(&self, problem: Malformed) -> SortKeyError {
        self.fail_at(self.pos, problem)
    }

    fn fail_at(&self, offset: usize, problem: Malformed) -> SortKeyError {
        SortKeyError::Malformed {
            column: self.column,
            offset,
            problem: Box::new(problem),
        }
    }

    /// The error for whatever stands at the current position.
    fn unexpected(&self, expected: &'static str) -> SortKeyError {
        match self.key.get(self.pos..).and_then(|s| s.chars().next()) {
            Some(found) => self.fail(Malformed::Unexpected { found, expected }),
            None => self.fail(Malformed::UnexpectedEnd { expected }),
        }
    }

    fn digit(&mut self, expected: &'static str) -> Result<u8, SortKeyError> {
        match self.peek() {
            Some(c @ b'0'..=b'9') => {
                self.pos += 1;
                Ok(c - b'0')
            }
            _ => Err(self.unexpected(expected)),
        }
    }

    /// After the tag: EEE (or 255 − EEE) and the digits up to the terminator.
    fn number(&mut self, neg: bool) -> Result<SortValue, SortKeyError> {
        let eee_at = self.pos;
        let mut field = 0u16;
        for _ in 0..3 {
            field = field * 10 + u16::from(self.digit("an exponent digit")?);
        }
        if field > 255 {
            return Err(self.fail_at(eee_at, Malformed::ExponentOverflow(field)));
        }
        let eee = if neg { 255 - field } else { field };
        let terminator = if neg { b'~' } else { b'!' };
        let mut digits = [0u8; number::MAX_DIGITS];
        let mut k = 0;
        loop {
            match self.peek() {
                Some(c @ b'0'..=b'9') => {
                    let d = if neg { b'9' - c } else { c - b'0' };
                    if k == 0 && d == 0 {
                        return Err(self.fail(Malformed::LeadingZero));
                    }
                    let Some(slot) = digits.get_mut(k) else {
                        return Err(self.fail(Malformed::TooManyDigits));
                    };
                    *slot = d;
                    k += 1;
                    self.pos += 1;
                }
                Some(c) if c == terminator && k > 0 => {
                    if digits.get(k - 1) == Some(&0) {
                        return Err(self.fail_at(self.pos - 1, Malformed::TrailingZero));
                    }
                    self.pos += 1;
                    break;
                }
                _ => {
                    return Err(self.unexpected(if k == 0 {
                        "a digit"
                    } else {
                        "a digit or the number's terminator"
                    }))
                }
            }
        }
        let exp = i32::from(eee) - number::BIAS as i32;
        Ok(SortValue::N(number::render(neg, exp, &digits[..k])))
    }

    /// `n` characters of the ascending form, all printable ASCII.
    fn ascii(&mut self, n: usize, expected: &'static str) -> Result<String, SortKeyError> {
        let mut s = String::with_capacity(n);
        for _ in 0..n {
            match self.peek() {
                Some(c @ 0x21..=0x7E) => {
                    s.push(char::from(c));
                    self.pos += 1;
                }
                _ => return Err(self.unexpected(expected)),
            }
        }
        Ok(s)
    }

    fn date(&mut self) -> Result<String, SortKeyError> {
        let at = self.pos;
        let text = self.ascii(10, "a DATE character")?;
        time::check_date(&text).map_err(|reason| self.fail_at(at, Malformed::Date(reason)))?;
        Ok(text)
    }

    fn timestamp(&mut self) -> Result<String, SortKeyError> {
        let at = self.pos;
        let text = self.ascii(30, "a TIMESTAMP character")?;
        let utc = time::parse_timestamp(&text).map_err(|reason| self.fail_at(at, Malformed::Timestamp(reason)))?;
        if utc.to_text() != text {
            return Err(self.fail_at(at, Malformed::TimestampForm));
        }
        Ok(text)
    }

    /// b64s text up to its `!` terminator.
    fn b64s(&mut self) -> Result<Vec<u8>, SortKeyError> {
        let start = self.pos;
        let mut bytes = Vec::new();
        let (mut acc, mut bits, mut n) = (0u32, 0u32, 0usize);
        loop {
            match self.peek() {
                Some(b'!') => break,
                Some(c) => match b64s::value(c) {
                    Some(v) => {
                        acc = acc << 6 | v;
                        bits += 6;
                        if bits >= 8 {
                            bits -= 8;
                            bytes.push((acc >> bits) as u8);
                            acc &= (1 << bits) - 1;
                        }
                        n += 1;
                        self.pos += 1;
                    }
                    None => return Err(self.unexpected("a base64 character or the terminator")),
                },
                None => return Err(self.unexpected("a base64 character or the terminator")),
            }
        }
        if n % 4 == 1 {
            return Err(self.fail_at(start, Malformed::ImpossibleLength(n)));
        }
        if acc != 0 {
            return Err(self.fail_at(self.pos - 1, Malformed::NonZeroPadding));
        }
        self.pos += 1;
        Ok(bytes)
    }

    /// An ascending string body up to its U+0001 terminator.
    fn escaped_string(&mut self) -> Result<String, SortKeyError> {
        let body = self.key.get(self.pos..).unwrap_or_default();
        let mut s = String::new();
        let mut chars = body.char_indices();
        let mut run = 0;
        loop {
            match chars.next() {
                None => {
                    self.pos = self.key.len();
                    return Err(self.fail(Malformed::UnexpectedEnd {
                        expected: "the string terminator U+0001",
                    }));
                }
                Some((i, '\u{1}')) => {
                    s.push_str(body.get(run..i).unwrap_or_default());
                    self.pos += i + 1;
                    return Ok(s);
                }
                Some((i, '\u{0}')) => {
                    self.pos += i;
                    return Err(self.fail(Malformed::RawNul));
                }
                Some((i, '\u{2}')) => {
                    s.push_str(body.get(run..i).unwrap_or_default());
                    match chars.next() {
                        Some((_, c @ '\u{1}'..='\u{3}')) => s.push(char::from(c as u8 - 1)),
                        next => {
                            self.pos += i;
                            return Err(self.fail(Malformed::UnknownEscape {
                                next: next.map(|(_, c)| c),
                            }));
                        }
                    }
                    run = i + 2;
                }
                Some(_) => {}
            }
        }
    }
}
