//! Typed conditions on a key's columns → the exact sort key range of one
//! DynamoDB Query (css1.md, "Queries").
//!
//! A query fixes the first columns by equality ([`key_range`]'s `equal`,
//! NULL allowed: it selects nulls) and may then put one [`ColumnCondition`]
//! on the next column. Conditions are in *value* order, whatever the
//! column's direction (`Gt(5)` on a DESC column still means "greater than
//! 5"), and, as in SQL, a range or prefix condition never matches NULL; on an
//! ANY column it matches only values of its bound's type (`Gt(N 5)` takes no
//! strings). How each becomes key bounds, with `P` the equal columns'
//! encoding and `e(v) = P + enc(v)`:
//!
//! - the values of one type lie in a band of keys: every non-null encoding
//!   starts with its type's tag (`0`/`1` BOOL, `<` `=` `>` N, `D` DATE, `I`
//!   TIMESTAMP, `S` S, `X` B; DESC maps each through `U+009F − c`), so the
//!   band is `[P + first tag, P + succ(last tag))`;
//! - an inclusive end `v` is `e(v)` below and `succ(e(v))` above (every key
//!   whose element is `enc(v)` extends `e(v)`, and no other key lies between
//!   the two: encodings of one column are prefix-free); an exclusive end is
//!   `succ(e(v))` below and `e(v)` above; on a DESC column the value's lower
//!   end is the key's upper end and the other way round;
//! - `BeginsWith(s)`: ascending strings are `S` esc(s) U+0001, so the rows
//!   are `begins_with(P + "S" + esc(s))` (without the terminator: "ab"
//!   extends "a"). Descending strings are base64 of the UTF-8 bytes: the
//!   `8·len / 6` whole characters are a prefix, and the 2 or 4 bits left over
//!   fix the top bits of the next character, a contiguous run of the
//!   alphabet, so the rows are a range.
//!
//! The result is a half-open range `[lower, upper)`. DynamoDB allows one
//! condition on the sort key, and its BETWEEN includes both ends; `upper` is
//! never a key of an index row (the source key always follows), so
//! `BETWEEN lower AND upper` is exact. For keys that may end right after
//! the columns, [`key_range`] checks whether `upper` decodes as a whole key
//! and, if it does, names it in [`KeyRange::Keys::exclude`] to be dropped.

use std::fmt;

use super::{decode, encode_sort_value, Column, KeyCondition, SortKeyError, SortValue, MAX_KEY_BYTES};
use column::{Bounds, End, On};

/// A condition on one column's value, in value order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnCondition {
    /// Below the value.
    Lt(SortValue),
    /// At most the value.
    Le(SortValue),
    /// Above the value.
    Gt(SortValue),
    /// At least the value.
    Ge(SortValue),
    /// Between the two values, both inclusive, given in either order; they
    /// must have one type.
    Between(SortValue, SortValue),
    /// S values that start with this string (S and ANY columns only).
    BeginsWith(String),
}

impl ColumnCondition {
    /// Which comparison this is.
    pub fn op(&self) -> Op {
        match self {
            ColumnCondition::Lt(_) => Op::Lt,
            ColumnCondition::Le(_) => Op::Le,
            ColumnCondition::Gt(_) => Op::Gt,
            ColumnCondition::Ge(_) => Op::Ge,
            ColumnCondition::Between(..) => Op::Between,
            ColumnCondition::BeginsWith(_) => Op::Begins,
        }
    }
}

/// The comparisons a query can make, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
    Between,
    Begins,
}

impl Op {
    /// `eq`, `lt`, `le`, `gt`, `ge`, `between`, `begins` (the command line's flags, without `--`).
    pub fn name(self) -> &'static str {
        match self {
            Op::Eq => "eq",
            Op::Lt => "lt",
            Op::Le => "le",
            Op::Gt => "gt",
            Op::Ge => "ge",
            Op::Between => "between",
            Op::Begins => "begins",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The sort keys one Query reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyRange {
    /// No key can match (`Gt(true)` on a BOOL column): nothing to read.
    Empty,
    /// The keys that satisfy `condition` (every key of the partition when
    /// `None`), except `exclude`, a key the condition takes in but the query
    /// does not (the upper end of a BETWEEN that is itself a whole key).
    Keys {
        condition: Option<KeyCondition>,
        exclude: Option<String>,
    },
}

impl KeyRange {
    /// Whether the query selects `key` (comparing UTF-8 bytes, as DynamoDB does).
    pub fn matches(&self, key: &str) -> bool {
        match self {
            KeyRange::Empty => false,
            KeyRange::Keys { condition, exclude } => {
                condition.as_ref().is_none_or(|c| c.matches(key)) && exclude.as_deref() != Some(key)
            }
        }
    }

    /// The key to drop from what the condition reads, if any.
    pub fn exclude(&self) -> Option<&str> {
        match self {
            KeyRange::Keys { exclude, .. } => exclude.as_deref(),
            KeyRange::Empty => None,
        }
    }
}

/// Why conditions could not become a key range. Columns are 1-based.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    /// More equality values than columns.
    #[error("{values} `eq` value(s), but there are only {columns} sort column(s)")]
    TooManyEquals { values: usize, columns: usize },
    /// A range condition, but every column is already fixed by equality.
    #[error("`{op}` needs a sort column after the {equals} `eq` value(s), but there are only {columns}")]
    NoColumn { op: Op, equals: usize, columns: usize },
    /// A value that does not fit its column.
    #[error("`{op}` on sort column {column}: {source}")]
    Value {
        op: Op,
        column: usize,
        source: SortKeyError,
    },
    /// A range bound that is NULL.
    #[error("`{op}` on sort column {column}: a range bound cannot be NULL (a range never matches nulls; select them with `eq` NULL)")]
    NullBound { op: Op, column: usize },
    /// `BeginsWith` on a column that holds no strings.
    #[error("`begins` on sort column {column}: the column is {ty}; a string prefix needs an S or ANY column")]
    NotAString { column: usize, ty: &'static str },
    /// `Between` with ends of two types (on an ANY column).
    #[error("`between` on sort column {column}: one end is {low}, the other {high}; both must be of one type")]
    MixedTypes {
        column: usize,
        low: &'static str,
        high: &'static str,
    },
    /// A bound longer than a sort key can be.
    #[error(
        "`{op}` on sort column {column}: the bound is {bytes} bytes, over the {MAX_KEY_BYTES}-byte limit of a sort key"
    )]
    TooLong { op: Op, column: usize, bytes: usize },
}

impl RangeError {
    /// The comparison the error is about (`None` for too many equality values).
    pub fn op(&self) -> Option<Op> {
        match self {
            RangeError::TooManyEquals { .. } => Some(Op::Eq),
            RangeError::NoColumn { op, .. }
            | RangeError::Value { op, .. }
            | RangeError::NullBound { op, .. }
            | RangeError::TooLong { op, .. } => Some(*op),
            RangeError::NotAString { .. } => Some(Op::Begins),
            RangeError::MixedTypes { .. } => Some(Op::Between),
        }
    }

    /// The (1-based) column the error is about, if one.
    pub fn column(&self) -> Option<usize> {
        match self {
            RangeError::TooManyEquals { .. } | RangeError::NoColumn { .. } => None,
            RangeError::Value { column, .. }
            | RangeError::NullBound { column, .. }
            | RangeError::NotAString { column, .. }
            | RangeError::MixedTypes { column, .. }
            | RangeError::TooLong { column, .. } => Some(*column),
        }
    }
}

/// The sort keys whose first `equal.len()` columns equal `equal` and whose
/// next column satisfies `condition`.
///
/// `columns` are the conditions' columns; `tail` the columns keys go on with
/// after them (for index rows, the source item's key), used only to tell
/// whether a bound could be a whole key.
pub fn key_range(
    columns: &[Column],
    tail: &[Column],
    equal: &[SortValue],
    condition: Option<&ColumnCondition>,
) -> Result<KeyRange, RangeError> {
    if equal.len() > columns.len() {
        return Err(RangeError::TooManyEquals {
            values: equal.len(),
            columns: columns.len(),
        });
    }
    let mut p = String::new();
    for (i, (column, value)) in columns.iter().zip(equal).enumerate() {
        encode_sort_value(column, value, &mut p).map_err(|source| RangeError::Value {
            op: Op::Eq,
            column: i + 1,
            source,
        })?;
    }
    let Some(condition) = condition else {
        if p.is_empty() {
            return Ok(KeyRange::Keys {
                condition: None,
                exclude: None,
            });
        }
        check_length(&p, Op::Eq, equal.len())?;
        return Ok(KeyRange::Keys {
            condition: Some(KeyCondition::BeginsWith(p)),
            exclude: None,
        });
    };
    let op = condition.op();
    let number = equal.len() + 1;
    let column = columns.get(equal.len()).ok_or(RangeError::NoColumn {
        op,
        equals: equal.len(),
        columns: columns.len(),
    })?;
    let on = On {
        column,
        number,
        op,
        p: &p,
    };
    let (lower, upper) = match condition {
        ColumnCondition::Lt(v) => on.interval(None, Some(End::open(v)))?,
        ColumnCondition::Le(v) => on.interval(None, Some(End::closed(v)))?,
        ColumnCondition::Gt(v) => on.interval(Some(End::open(v)), None)?,
        ColumnCondition::Ge(v) => on.interval(Some(End::closed(v)), None)?,
        ColumnCondition::Between(a, b) => {
            let (low, high) = on.ordered(a, b)?;
            on.interval(Some(End::closed(low)), Some(End::closed(high)))?
        }
        ColumnCondition::BeginsWith(s) => match on.begins(s)? {
            Bounds::Prefix(prefix) => {
                check_length(&prefix, op, number)?;
                return Ok(KeyRange::Keys {
                    condition: Some(KeyCondition::BeginsWith(prefix)),
                    exclude: None,
                });
            }
            Bounds::Range(lower, upper) => (lower, upper),
        },
    };
    check_length(&lower, op, number)?;
    check_length(&upper, op, number)?;
    if lower >= upper {
        return Ok(KeyRange::Empty);
    }
    let whole: Vec<Column> = columns.iter().chain(tail).copied().collect();
    let exclude = decode(&whole, &upper).is_ok().then(|| upper.clone());
    Ok(KeyRange::Keys {
        condition: Some(KeyCondition::Between(lower, upper)),
        exclude,
    })
}

fn check_length(bound: &str, op: Op, column: usize) -> Result<(), RangeError> {
    if bound.len() > MAX_KEY_BYTES {
        return Err(RangeError::TooLong {
            op,
            column,
            bytes: bound.len(),
        });
    }
    Ok(())
}

mod column;
#[cfg(test)]
pub(crate) mod oracle;
#[cfg(test)]
mod tests;
