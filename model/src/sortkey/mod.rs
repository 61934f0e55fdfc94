//! CSS1 composite sort strings: typed tuples packed into one String whose
//! UTF-8 byte order equals the tuples' order. The format is specified in
//! `shared/css1.md` (copied to `docs/css1.md`).
//!
//! API CONTRACT — bodies are TODO (helper). Signatures may gain items but
//! these must stay as they are: the planner uses them.

use crate::value::Value;

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

/// Why a value could not be encoded or a key could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SortKeyError {
    #[error("TODO")]
    Todo,
}

/// Appends the encoding of `value` (`None` or `NULL` is null) in `column` to `out`.
pub fn encode_value(column: &Column, value: Option<&Value>, out: &mut String) -> Result<(), SortKeyError> {
    let _ = (column, value, out);
    Err(SortKeyError::Todo)
}

/// Errors unless `key` is non-empty and at most [`MAX_KEY_BYTES`] bytes.
pub fn check_length(key: &str) -> Result<(), SortKeyError> {
    let _ = key;
    Err(SortKeyError::Todo)
}

/// The canonical decimal text of a DynamoDB number (`1.50` → `1.5`, `15E-1` → `1.5`, `-0` → `0`).
pub fn canonical_number(text: &str) -> Result<String, SortKeyError> {
    let _ = text;
    Err(SortKeyError::Todo)
}
