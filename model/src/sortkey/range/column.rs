//! The column a condition is on: its value ends as key bounds, its type's
//! band of keys, and string prefixes in both directions (see the parent
//! module for the rules).

use super::super::encode::escape;
use super::super::sink::Sink;
use super::super::{b64s, encode_sort_value, succ, Column, ColumnType, Direction, SortValue};
use super::{Op, RangeError};

/// One end of a value interval.
#[derive(Clone, Copy)]
pub(super) struct End<'a> {
    value: &'a SortValue,
    inclusive: bool,
}

impl<'a> End<'a> {
    pub(super) fn open(value: &'a SortValue) -> End<'a> {
        End {
            value,
            inclusive: false,
        }
    }

    pub(super) fn closed(value: &'a SortValue) -> End<'a> {
        End { value, inclusive: true }
    }
}

pub(super) enum Bounds {
    /// Every key that extends this.
    Prefix(String),
    /// `[lower, upper)`.
    Range(String, String),
}

/// The column a condition is on, and the equal columns' encoding before it.
pub(super) struct On<'a> {
    pub column: &'a Column,
    pub number: usize,
    pub op: Op,
    pub p: &'a str,
}

impl On<'_> {
    fn desc(&self) -> bool {
        self.column.direction == Direction::Desc
    }

    /// `P + enc(value)`.
    fn enc(&self, value: &SortValue) -> Result<String, RangeError> {
        if *value == SortValue::Null {
            return Err(RangeError::NullBound {
                op: self.op,
                column: self.number,
            });
        }
        let mut e = self.p.to_owned();
        encode_sort_value(self.column, value, &mut e).map_err(|source| RangeError::Value {
            op: self.op,
            column: self.number,
            source,
        })?;
        Ok(e)
    }

    /// `[lower, upper)` of the keys whose element lies between the value
    /// ends `low` and `high` (a missing end: the band of the other's type).
    pub(super) fn interval(&self, low: Option<End<'_>>, high: Option<End<'_>>) -> Result<(String, String), RangeError> {
        let (key_low, key_high) = if self.desc() { (high, low) } else { (low, high) };
        // Either end's type: the two are of one type (checked by `ordered`).
        let typed = low.or(high).map(|e| e.value);
        let (band_low, band_high) = self.band(typed);
        // On a DESC column a value's closed lower end is the key's upper end,
        // and the other way round: the same formulas apply in key order.
        let lower = match key_low {
            None => band_low,
            Some(end) if end.inclusive => self.enc(end.value)?,
            Some(end) => succ(&self.enc(end.value)?),
        };
        let upper = match key_high {
            None => band_high,
            Some(end) if end.inclusive => succ(&self.enc(end.value)?),
            Some(end) => self.enc(end.value)?,
        };
        Ok((lower, upper))
    }

    /// The two ends of a BETWEEN, lower value first; of one type, non-null.
    pub(super) fn ordered<'v>(
        &self,
        a: &'v SortValue,
        b: &'v SortValue,
    ) -> Result<(&'v SortValue, &'v SortValue), RangeError> {
        let (ea, eb) = (self.enc(a)?, self.enc(b)?);
        let (ta, tb) = (self.band_type(a), self.band_type(b));
        if ta != tb {
            return Err(RangeError::MixedTypes {
                column: self.number,
                low: a.type_name(),
                high: b.type_name(),
            });
        }
        // Key order is value order on an ASC column, its reverse on a DESC one.
        let a_first = (ea <= eb) != self.desc();
        Ok(if a_first { (a, b) } else { (b, a) })
    }

    /// The type whose band a bound's value lies in.
    fn band_type(&self, value: &SortValue) -> ColumnType {
        match (self.column.ty, value) {
            (ColumnType::Any, SortValue::Bool(_)) => ColumnType::Bool,
            (ColumnType::Any, SortValue::N(_)) => ColumnType::N,
            (ColumnType::Any, SortValue::Date(_)) => ColumnType::Date,
            (ColumnType::Any, SortValue::Timestamp(_)) => ColumnType::Timestamp,
            (ColumnType::Any, SortValue::S(_)) => ColumnType::S,
            (ColumnType::Any, SortValue::B(_)) => ColumnType::B,
            (ty, _) => ty,
        }
    }

    /// `[P + first tag, P + succ(last tag))` of the bound's type, in key order.
    fn band(&self, value: Option<&SortValue>) -> (String, String) {
        let ty = value.map_or(self.column.ty, |v| self.band_type(v));
        let (first, last) = tags(ty);
        let (low, high) = if self.desc() {
            (mapped(last), mapped(first))
        } else {
            (first, last)
        };
        let mut lower = self.p.to_owned();
        lower.push(char::from(low));
        let mut upper = self.p.to_owned();
        upper.push(char::from(high + 1));
        (lower, upper)
    }

    /// The keys whose element is an S value starting with `s`.
    pub(super) fn begins(&self, s: &str) -> Result<Bounds, RangeError> {
        let ty = self.column.ty;
        if !matches!(ty, ColumnType::S | ColumnType::Any) {
            return Err(RangeError::NotAString {
                column: self.number,
                ty: ty.as_str(),
            });
        }
        let mut x = self.p.to_owned();
        if !self.desc() {
            // `S` esc(s), without the terminator.
            x.push('S');
            escape(s, &mut x);
            return Ok(Bounds::Prefix(x));
        }
        let bytes = s.as_bytes();
        let mut text = String::new();
        b64s::encode(bytes, &mut Sink::new(&mut text, false));
        let whole = bytes.len() * 8 / 6;
        let left = bytes.len() * 8 % 6;
        {
            let mut sink = Sink::new(&mut x, true);
            sink.byte(b'S');
            sink.ascii(text.get(..whole).unwrap_or_default());
        }
        let next = text.as_bytes().get(whole).and_then(|&c| b64s::value(c));
        match next {
            Some(v) if left > 0 => {
                // The next character keeps the `left` top bits and may have
                // any low bits: values v ..= v | low.
                let low_bits = (1u32 << (6 - left)) - 1;
                let (first, last) = (b64s::symbol(v), b64s::symbol(v | low_bits));
                // Mapped, the last comes first.
                let mut lower = x.clone();
                lower.push(char::from(mapped(last)));
                let mut upper = x;
                upper.push(char::from(mapped(first) + 1));
                Ok(Bounds::Range(lower, upper))
            }
            _ => Ok(Bounds::Prefix(x)),
        }
    }
}

/// The first and last tag character of a type's ascending encodings.
fn tags(ty: ColumnType) -> (u8, u8) {
    match ty {
        ColumnType::Bool => (b'0', b'1'),
        ColumnType::N => (b'<', b'>'),
        ColumnType::Date => (b'D', b'D'),
        ColumnType::Timestamp => (b'I', b'I'),
        ColumnType::S => (b'S', b'S'),
        ColumnType::B => (b'X', b'X'),
        // Every non-null value (a bound always has a type: never reached).
        ColumnType::Any => (b'0', b'X'),
    }
}

/// A character of the ascending form as a DESC column writes it.
fn mapped(c: u8) -> u8 {
    0x9F - c
}
