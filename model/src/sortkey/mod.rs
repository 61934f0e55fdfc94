//! CSS1 composite sort strings: typed tuples packed into one String whose
//! UTF-8 byte order equals the tuples' order. The format is specified in
//! `docs/css1.md`.
//!
//! - Encoding: [`encode_value`] appends one element, [`encode`] builds a whole
//!   key (and checks its length), [`encode_sort_value`] / [`encode_sort_values`]
//!   do the same from decoded [`SortValue`]s (the only way to put a DATE or
//!   TIMESTAMP into an ANY column).
//! - Decoding: [`decode`] is strict: it accepts exactly the strings that
//!   encoding produces, so `encode_sort_values(decode(k)) == k` for every
//!   accepted `k`. It never panics.
//! - Queries: [`prefix`], [`after`], [`between`] and [`succ`] build the sort
//!   key conditions of a DynamoDB Query ([`KeyCondition`]); [`key_range`]
//!   turns typed conditions (equal leading columns, then one of <, ≤, >, ≥,
//!   between or a string prefix on the next) into the exact [`KeyRange`].
//! - Schemas: [`Schema`] parses the command-line syntax `N:asc,S:desc:nulls-last`.
//!
//! Numbers are parsed exactly from their decimal text (never through `f64`).

mod b64s;
mod bounds;
mod decode;
mod encode;
pub(crate) mod number;
mod range;
mod schema;
mod sink;
mod time;

#[cfg(test)]
mod tests;

pub use bounds::{after, between, prefix, succ, KeyCondition};
pub use decode::decode;
#[cfg(test)]
pub(crate) use range::oracle;
pub use range::{key_range, ColumnCondition, KeyRange, Op, RangeError};
pub use schema::{ColumnSpecError, Schema};

use crate::time::TimeError;
use crate::value::{Attr, Scalar, Value};
use encode::Elem;

/// Keys are never longer than this many UTF-8 bytes (DynamoDB's sort key limit).
pub const MAX_KEY_BYTES: usize = 1024;

/// A column's value type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ColumnType {
    S,
    N,
    B,
    Bool,
    /// A String holding `YYYY-MM-DD`.
    Date,
    /// A String holding an RFC 3339 timestamp with an offset.
    Timestamp,
    /// Any scalar; the encoding's tag carries the type.
    Any,
}

impl ColumnType {
    /// Every column type.
    pub const ALL: [ColumnType; 7] = [
        ColumnType::S,
        ColumnType::N,
        ColumnType::B,
        ColumnType::Bool,
        ColumnType::Date,
        ColumnType::Timestamp,
        ColumnType::Any,
    ];
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    Asc,
    Desc,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Nulls {
    First,
    Last,
}

/// One column of a composite sort string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Column {
    pub ty: ColumnType,
    pub direction: Direction,
    pub nulls: Nulls,
}

impl Column {
    /// A column with the default null placement (FIRST for ASC, LAST for DESC).
    pub fn new(ty: ColumnType, direction: Direction) -> Column {
        let nulls = match direction {
            Direction::Asc => Nulls::First,
            Direction::Desc => Nulls::Last,
        };
        Column { ty, direction, nulls }
    }

    /// The same column with an explicit null placement.
    pub fn with_nulls(self, nulls: Nulls) -> Column {
        Column { nulls, ..self }
    }
}

/// A decoded (canonical) value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SortValue {
    Null,
    Bool(bool),
    /// Canonical decimal text.
    N(String),
    /// `YYYY-MM-DD`.
    Date(String),
    /// `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`.
    Timestamp(String),
    S(String),
    B(Vec<u8>),
}

impl SortValue {
    /// The DynamoDB value this stands for, for printing: DATE and TIMESTAMP
    /// become `S`, numbers keep their canonical text, null is `NULL`.
    pub fn to_value(&self) -> Value {
        match self {
            SortValue::Null => Value::Null(true),
            SortValue::Bool(b) => Value::Bool(*b),
            SortValue::N(n) => Value::N(n.clone()),
            SortValue::Date(s) | SortValue::Timestamp(s) | SortValue::S(s) => Value::S(s.clone()),
            SortValue::B(b) => Value::B(b.clone()),
        }
    }

    /// The type tag used in messages: `NULL`, `BOOL`, `N`, `DATE`, `TIMESTAMP`, `S`, `B`.
    pub fn type_name(&self) -> &'static str {
        match self {
            SortValue::Null => "NULL",
            SortValue::Bool(_) => "BOOL",
            SortValue::N(_) => "N",
            SortValue::Date(_) => "DATE",
            SortValue::Timestamp(_) => "TIMESTAMP",
            SortValue::S(_) => "S",
            SortValue::B(_) => "B",
        }
    }
}

/// Why a value could not be encoded, a key could not be decoded, or a schema
/// could not be parsed.
///
/// Errors from [`encode_value`] and [`encode_sort_value`] do not name the
/// column (the caller knows it); [`encode`], [`prefix`], [`after`] and
/// [`between`] wrap them in [`SortKeyError::InColumn`]. Column numbers in
/// messages are 1-based; byte offsets into a key are 0-based.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SortKeyError {
    /// The N text is not a decimal number (also NaN, Infinity, empty text).
    #[error("not a number: `{text}`")]
    NotANumber { text: Box<str> },
    /// More than 38 significant digits.
    #[error("number has {digits} significant digits (max 38): `{text}`")]
    TooManyDigits { digits: usize, text: Box<str> },
    /// The (scientific) exponent is outside −130..125.
    #[error("number is out of range (exponent {exponent} is outside -130..125; magnitudes run from 1E-130 to 9.99…E+125): `{text}`")]
    NumberOutOfRange { exponent: i64, text: Box<str> },
    /// A DATE column's value is not a valid `YYYY-MM-DD`.
    #[error("not a DATE (YYYY-MM-DD): `{text}`: {reason}")]
    InvalidDate { text: Box<str>, reason: TimeError },
    /// A TIMESTAMP column's value is not a valid RFC 3339 timestamp with an offset.
    #[error("not a TIMESTAMP (RFC 3339 with an offset): `{text}`: {reason}")]
    InvalidTimestamp { text: Box<str>, reason: TimeError },
    /// The value's type does not fit the column (`expected` describes what would).
    #[error("expects {expected}, got {got}")]
    TypeMismatch { expected: &'static str, got: &'static str },
    /// More (or, for a whole key, fewer) values than the schema has columns.
    #[error("schema has {columns} column(s) but {values} value(s) were given")]
    Arity { columns: usize, values: usize },
    /// An element error, with the (1-based) column it happened in.
    #[error("column {column}: {source}")]
    InColumn { column: usize, source: Box<SortKeyError> },
    /// Keys are never empty.
    #[error("key is empty")]
    EmptyKey,
    /// The key (or a query bound) is over [`MAX_KEY_BYTES`].
    #[error("key is {bytes} bytes, over the {max}-byte limit", max = MAX_KEY_BYTES)]
    KeyTooLong { bytes: usize },
    /// Decoding failed inside the element of `column` (1-based), at byte `offset` (0-based).
    #[error("byte {offset} (column {column}): {problem}")]
    Malformed {
        column: usize,
        offset: usize,
        problem: Box<Malformed>,
    },
    /// The key goes on after the last column's element.
    #[error("byte {offset}: trailing characters after the last column")]
    TrailingGarbage { offset: usize },
    /// The schema text is empty.
    #[error("schema is empty (expected e.g. `N:asc,S:desc:nulls-last`)")]
    EmptySchema,
    /// One column of a schema text is wrong (`column` is 1-based; the
    /// message quotes the column's text and says what is wrong with it).
    #[error("schema column {column} {message}")]
    InvalidSchema { column: usize, message: Box<str> },
}

impl SortKeyError {
    /// Wraps this error with the (1-based) column it happened in.
    pub fn in_column(self, column: usize) -> SortKeyError {
        SortKeyError::InColumn {
            column,
            source: Box::new(self),
        }
    }

    /// The error without any [`SortKeyError::InColumn`] wrapping.
    pub fn root(&self) -> &SortKeyError {
        match self {
            SortKeyError::InColumn { source, .. } => source.root(),
            other => other,
        }
    }

    /// True for errors about a key's length ([`SortKeyError::EmptyKey`], [`SortKeyError::KeyTooLong`]).
    pub fn is_length(&self) -> bool {
        matches!(self.root(), SortKeyError::EmptyKey | SortKeyError::KeyTooLong { .. })
    }

    /// True for errors about a value's type not fitting its column.
    pub fn is_type_mismatch(&self) -> bool {
        matches!(self.root(), SortKeyError::TypeMismatch { .. })
    }
}

/// What exactly is wrong inside a key being decoded (see [`SortKeyError::Malformed`]).
///
/// In a DESC column, `found` is the character as it stands in the key, while
/// `expected` describes the ascending form (before the `U+009F − c` mapping).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    #[error("the key ends where {expected} was expected")]
    UnexpectedEnd { expected: &'static str },
    #[error("found {found:?} where {expected} was expected")]
    Unexpected { found: char, expected: &'static str },
    #[error("{found:?} is a null placed {placed}, but this column puts nulls {column}")]
    WrongNullPlacement {
        found: char,
        placed: &'static str,
        column: &'static str,
    },
    #[error("exponent field {0:03} is over 255")]
    ExponentOverflow(u16),
    #[error("the number's digits start with a zero")]
    LeadingZero,
    #[error("the number's digits end with a zero")]
    TrailingZero,
    #[error("the number has more than 38 digits")]
    TooManyDigits,
    #[error("raw U+0000 inside a string (it is written U+0002 U+0001)")]
    RawNul,
    #[error("unknown escape: U+0002 followed by {}", describe_next(*.next))]
    UnknownEscape { next: Option<char> },
    #[error("{0} base64 characters is an impossible length")]
    ImpossibleLength(usize),
    #[error("non-zero padding bits in the last base64 character")]
    NonZeroPadding,
    #[error("the string's bytes are not valid UTF-8")]
    InvalidUtf8,
    #[error("invalid DATE: {0}")]
    Date(TimeError),
    #[error("invalid TIMESTAMP: {0}")]
    Timestamp(TimeError),
    /// A valid TIMESTAMP, but not in the one form a key holds.
    #[error("invalid TIMESTAMP: not in the form YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ")]
    TimestampForm,
}

fn describe_next(next: Option<char>) -> String {
    match next {
        Some(c) => format!("{c:?}"),
        None => "the end of the key".to_owned(),
    }
}

/// Appends the encoding of `value` (`None` or `NULL` is null) in `column` to `out`.
///
/// On error `out` is left as it was.
pub fn encode_value<V: Attr>(column: &Column, value: Option<&V>, out: &mut String) -> Result<(), SortKeyError> {
    encode_scalar(column, value.map(Attr::scalar), out)
}

/// [`encode_value`] of a value read as a scalar.
pub fn encode_scalar(column: &Column, value: Option<Scalar<'_>>, out: &mut String) -> Result<(), SortKeyError> {
    let elem = match value {
        None | Some(Scalar::Null(_)) => Elem::Null,
        Some(value) => value_elem(column.ty, value)?,
    };
    encode::element(column, elem, out)
}

fn value_elem(ty: ColumnType, value: Scalar<'_>) -> Result<Elem<'_>, SortKeyError> {
    let elem = match (ty, value) {
        (ColumnType::S | ColumnType::Any, Scalar::S(s)) => Elem::S(s),
        (ColumnType::N | ColumnType::Any, Scalar::N(n)) => Elem::Num(n),
        (ColumnType::B | ColumnType::Any, Scalar::B(b)) => Elem::B(b),
        (ColumnType::Bool | ColumnType::Any, Scalar::Bool(b)) => Elem::Bool(b),
        (ColumnType::Date, Scalar::S(s)) => Elem::Date(s),
        (ColumnType::Timestamp, Scalar::S(s)) => Elem::Timestamp(s),
        (ty, value) => {
            return Err(SortKeyError::TypeMismatch {
                expected: expected_value(ty),
                got: value.type_name(),
            })
        }
    };
    Ok(elem)
}

fn expected_value(ty: ColumnType) -> &'static str {
    match ty {
        ColumnType::S => "S or NULL",
        ColumnType::N => "N or NULL",
        ColumnType::B => "B or NULL",
        ColumnType::Bool => "BOOL or NULL",
        ColumnType::Date => "S (a DATE, YYYY-MM-DD) or NULL",
        ColumnType::Timestamp => "S (an RFC 3339 TIMESTAMP) or NULL",
        ColumnType::Any => "a scalar (S, N, B, BOOL or NULL)",
    }
}

/// Appends the encoding of a [`SortValue`] in `column` to `out`.
///
/// Unlike [`encode_value`], this can put a DATE or TIMESTAMP into an ANY
/// column. DATE and TIMESTAMP columns also accept `SortValue::S` (validated
/// like a DynamoDB `S`). Numbers and timestamps may be in any accepted
/// spelling; they are canonicalised. On error `out` is left as it was.
pub fn encode_sort_value(column: &Column, value: &SortValue, out: &mut String) -> Result<(), SortKeyError> {
    let elem = match (column.ty, value) {
        (_, SortValue::Null) => Elem::Null,
        (ColumnType::S | ColumnType::Any, SortValue::S(s)) => Elem::S(s),
        (ColumnType::N | ColumnType::Any, SortValue::N(n)) => Elem::Num(n),
        (ColumnType::B | ColumnType::Any, SortValue::B(b)) => Elem::B(b),
        (ColumnType::Bool | ColumnType::Any, SortValue::Bool(b)) => Elem::Bool(*b),
        (ColumnType::Date | ColumnType::Any, SortValue::Date(s)) | (ColumnType::Date, SortValue::S(s)) => Elem::Date(s),
        (ColumnType::Timestamp | ColumnType::Any, SortValue::Timestamp(s))
        | (ColumnType::Timestamp, SortValue::S(s)) => Elem::Timestamp(s),
        (ty, value) => {
            return Err(SortKeyError::TypeMismatch {
                expected: expected_sort_value(ty),
                got: value.type_name(),
            })
        }
    };
    encode::element(column, elem, out)
}

fn expected_sort_value(ty: ColumnType) -> &'static str {
    match ty {
        ColumnType::Date => "DATE, S or NULL",
        ColumnType::Timestamp => "TIMESTAMP, S or NULL",
        ColumnType::Any => "any sort value",
        other => expected_value(other),
    }
}

/// The whole key for `values` (one per column; `None` or `NULL` is null),
/// length-checked with [`check_length`].
pub fn encode(columns: &[Column], values: &[Option<&Value>]) -> Result<String, SortKeyError> {
    if values.len() != columns.len() {
        return Err(SortKeyError::Arity {
            columns: columns.len(),
            values: values.len(),
        });
    }
    let mut out = String::with_capacity(16 * columns.len());
    for (i, (column, value)) in columns.iter().zip(values).enumerate() {
        encode_value(column, *value, &mut out).map_err(|e| e.in_column(i + 1))?;
    }
    check_length(&out)?;
    Ok(out)
}

/// The whole key for decoded values (one per column), length-checked.
/// `encode_sort_values(columns, &decode(columns, k)?) == k` for every key `decode` accepts.
pub fn encode_sort_values(columns: &[Column], values: &[SortValue]) -> Result<String, SortKeyError> {
    if values.len() != columns.len() {
        return Err(SortKeyError::Arity {
            columns: columns.len(),
            values: values.len(),
        });
    }
    let mut out = String::with_capacity(16 * columns.len());
    for (i, (column, value)) in columns.iter().zip(values).enumerate() {
        encode_sort_value(column, value, &mut out).map_err(|e| e.in_column(i + 1))?;
    }
    check_length(&out)?;
    Ok(out)
}

/// Errors unless `key` is non-empty and at most [`MAX_KEY_BYTES`] bytes.
pub fn check_length(key: &str) -> Result<(), SortKeyError> {
    if key.is_empty() {
        Err(SortKeyError::EmptyKey)
    } else if key.len() > MAX_KEY_BYTES {
        Err(SortKeyError::KeyTooLong { bytes: key.len() })
    } else {
        Ok(())
    }
}

/// The canonical decimal text of a DynamoDB number (`1.50` → `1.5`, `15E-1` → `1.5`, `-0` → `0`).
///
/// Canonical text is plain positional notation without an exponent, without
/// leading zeros (except the one before a leading `.`), without trailing
/// fraction zeros and without a `+`: `100`, `-0.001`, `4.2`.
pub fn canonical_number(text: &str) -> Result<String, SortKeyError> {
    Ok(match number::parse(text)? {
        None => "0".to_owned(),
        Some(d) => {
            let mut digits = [0u8; number::MAX_DIGITS];
            let k = d.digits_into(&mut digits);
            number::render(d.neg, d.exp(), &digits[..k])
        }
    })
}

/// True if `text` is a number DynamoDB can hold (exactly what [`canonical_number`] accepts).
pub fn is_number(text: &str) -> bool {
    number::parse(text).is_ok()
}
