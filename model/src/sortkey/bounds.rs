//! Query bounds (css1.md, "Queries"): the sort key conditions that select
//! rows by their leading elements, so callers never build them by hand.
//!
//! All functions take the key's columns (the index's sort columns; keys may
//! go on with more columns after them, such as the source item's primary key)
//! and DynamoDB values (`None` or `NULL` is null), like [`encode`](super::encode).
//! "Greater" always means later in key order: in a DESC column that is a
//! smaller value, and nulls are wherever their column places them.

use super::{decode, encode_value, Column, SortKeyError, MAX_KEY_BYTES};
use crate::value::Value;

/// A condition on the sort key `sk` of a DynamoDB Query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyCondition {
    /// `begins_with(sk, :prefix)`.
    BeginsWith(String),
    /// `sk >= :lower`.
    AtLeast(String),
    /// `sk BETWEEN :lower AND :upper` (both ends inclusive).
    Between(String, String),
}

impl KeyCondition {
    /// Whether `key` satisfies the condition, comparing UTF-8 bytes like DynamoDB.
    pub fn matches(&self, key: &str) -> bool {
        match self {
            KeyCondition::BeginsWith(prefix) => key.starts_with(prefix.as_str()),
            KeyCondition::AtLeast(lower) => key >= lower.as_str(),
            KeyCondition::Between(lower, upper) => lower.as_str() <= key && key <= upper.as_str(),
        }
    }
}

/// `key` with its last character replaced by the next code point (css1.md
/// "succ"): every key that extends `key` sorts before `succ(key)`.
///
/// Every CSS1 encoding ends in an ASCII character below U+007F, so for keys
/// this only ever bumps that one character. For other strings a last
/// U+10FFFF (which has no successor) is dropped and the character before it
/// bumped instead; a string with no successor at all (empty, or only
/// U+10FFFF) is returned unchanged.
pub fn succ(key: &str) -> String {
    let mut s = key.to_owned();
    while let Some(c) = s.pop() {
        if let Some(next) = succ_char(c) {
            s.push(next);
            return s;
        }
    }
    key.to_owned()
}

fn succ_char(c: char) -> Option<char> {
    match c {
        '\u{D7FF}' => Some('\u{E000}'),
        c => char::from_u32(u32::from(c) + 1),
    }
}

/// The encoding of the leading elements `values` (fewer values than columns
/// is fine): rows whose leading elements equal them are
/// `begins_with(sk, prefix)`. With no values the prefix is empty, which
/// means "no condition" (DynamoDB refuses an empty `begins_with` operand).
pub fn prefix(columns: &[Column], values: &[Option<&Value>]) -> Result<String, SortKeyError> {
    let (key, _) = leading(columns, values, 0)?;
    check_bound(&key)?;
    Ok(key)
}

/// Rows whose leading elements equal `values` and whose next element is
/// greater (in key order) than `value`.
///
/// The lower end is `succ(enc(p) + enc(v))`. With no leading values that is
/// the whole condition ([`KeyCondition::AtLeast`]); otherwise the rows must
/// also extend `enc(p)` and DynamoDB allows one condition per sort key, so it
/// is a [`KeyCondition::Between`] whose upper end is `succ(enc(p))` (see
/// [`between`] for the one case where that is adjusted).
pub fn after(
    columns: &[Column],
    values: &[Option<&Value>],
    value: Option<&Value>,
) -> Result<KeyCondition, SortKeyError> {
    let j = values.len();
    let (p, p_last) = leading(columns, values, 1)?;
    let mut e = p.clone();
    let column = columns.get(j).ok_or(SortKeyError::Arity {
        columns: columns.len(),
        values: j + 1,
    })?;
    encode_value(column, value, &mut e).map_err(|err| err.in_column(j + 1))?;
    let lower = succ(&e);
    check_bound(&lower)?;
    if j == 0 {
        return Ok(KeyCondition::AtLeast(lower));
    }
    let upper = upper_bound(columns, j - 1, &p, p_last);
    check_bound(&upper)?;
    Ok(KeyCondition::Between(lower, upper))
}

/// Rows whose leading elements equal `values` and whose next element lies
/// between `low` and `high`, both inclusive. The order of `low` and `high`
/// does not matter (for a DESC column the larger value sorts first; they are
/// swapped as needed).
///
/// This is `sk BETWEEN enc(p)+enc(a) AND succ(enc(p)+enc(b))` with `a` the
/// end that sorts first. The upper end is exclusive in effect because no key
/// equals it — with one exception the spec's formula misses: when the last
/// element is a BOOL or DATE (or an ANY holding one) and it is the last of
/// `columns` (so `columns` may be the whole key), `succ` of that element's
/// encoding can be the encoding of the next value (`succ("0")` is `"1"`,
/// false → true; `succ("D2024-02-28")` is the next day). Then the upper end is
/// `enc(p)+enc(b)` followed by U+007F instead (which sorts after every key
/// extending it: the next element of a key always starts below U+007F), or
/// just `enc(p)+enc(b)` if that is already [`MAX_KEY_BYTES`] long.
pub fn between(
    columns: &[Column],
    values: &[Option<&Value>],
    low: Option<&Value>,
    high: Option<&Value>,
) -> Result<KeyCondition, SortKeyError> {
    let j = values.len();
    let (p, _) = leading(columns, values, 1)?;
    let column = columns.get(j).ok_or(SortKeyError::Arity {
        columns: columns.len(),
        values: j + 1,
    })?;
    let mut a = p.clone();
    encode_value(column, low, &mut a).map_err(|err| err.in_column(j + 1))?;
    let mut b = p.clone();
    encode_value(column, high, &mut b).map_err(|err| err.in_column(j + 1))?;
    if a > b {
        std::mem::swap(&mut a, &mut b);
    }
    let upper = upper_bound(columns, j, &b, p.len());
    check_bound(&a)?;
    check_bound(&upper)?;
    Ok(KeyCondition::Between(a, upper))
}

/// Encodes the leading `values`; returns the text and where its last element starts.
/// `more` is how many further columns the caller needs.
fn leading(columns: &[Column], values: &[Option<&Value>], more: usize) -> Result<(String, usize), SortKeyError> {
    if values.len() + more > columns.len() {
        return Err(SortKeyError::Arity {
            columns: columns.len(),
            values: values.len() + more,
        });
    }
    let mut out = String::new();
    let mut last = 0;
    for (i, (column, value)) in columns.iter().zip(values).enumerate() {
        last = out.len();
        encode_value(column, *value, &mut out).map_err(|err| err.in_column(i + 1))?;
    }
    Ok((out, last))
}

/// An inclusive upper bound for the keys that extend `e`, whose last element
/// (of column `index`) starts at byte `last`.
fn upper_bound(columns: &[Column], index: usize, e: &str, last: usize) -> String {
    let s = succ(e);
    // succ(e) could only be a key if its last element is valid and no columns follow.
    let succ_is_key = index + 1 == columns.len()
        && columns.get(index).is_some_and(
            |column| matches!(decode::element(column, index + 1, &s, last), Ok((_, end)) if end == s.len()),
        );
    if !succ_is_key {
        s
    } else if e.len() < MAX_KEY_BYTES {
        format!("{e}\u{7f}")
    } else {
        e.to_owned()
    }
}

fn check_bound(bound: &str) -> Result<(), SortKeyError> {
    if bound.len() > MAX_KEY_BYTES {
        return Err(SortKeyError::KeyTooLong { bytes: bound.len() });
    }
    Ok(())
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::sortkey::{ColumnType, Direction};

    #[test]
    fn succ_bumps_the_last_character() {
        assert_eq!(succ(">1304!"), ">1304\"");
        assert_eq!(succ("<1255~"), "<1255\u{7f}");
        assert_eq!(succ("Sab\u{1}"), "Sab\u{2}");
        assert_eq!(succ("a\u{D7FF}"), "a\u{E000}");
        assert_eq!(succ("a\u{10FFFF}"), "b");
        assert_eq!(succ("\u{10FFFF}"), "\u{10FFFF}");
        assert_eq!(succ(""), "");
    }

    #[test]
    fn bool_upper_end_does_not_catch_the_next_value() {
        let columns = [Column::new(ColumnType::Bool, Direction::Asc)];
        let f = Value::Bool(false);
        let cond = between(&columns, &[], Some(&f), Some(&f)).unwrap();
        assert_eq!(cond, KeyCondition::Between("0".into(), "0\u{7f}".into()));
        assert!(cond.matches("0"));
        assert!(!cond.matches("1"));
        // With a following column the spec's succ is used as is.
        let columns = [
            Column::new(ColumnType::Bool, Direction::Asc),
            Column::new(ColumnType::S, Direction::Asc),
        ];
        assert_eq!(
            between(&columns, &[], Some(&f), Some(&f)).unwrap(),
            KeyCondition::Between("0".into(), "1".into())
        );
    }

    #[test]
    fn arity() {
        let columns = [Column::new(ColumnType::N, Direction::Asc)];
        let one = Value::N("1".into());
        assert_eq!(
            after(&columns, &[Some(&one)], None).unwrap_err(),
            SortKeyError::Arity { columns: 1, values: 2 }
        );
        assert_eq!(prefix(&columns, &[Some(&one)]).unwrap(), ">1301!");
        assert_eq!(prefix(&columns, &[]).unwrap(), "");
    }
}
