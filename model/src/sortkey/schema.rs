//! Column schemas in the command-line syntax `N:asc,S:desc:nulls-last`.

use std::fmt;
use std::ops::Deref;
use std::str::FromStr;

use super::{Column, ColumnType, Direction, Nulls, SortKeyError};

/// The columns of a key, parsed from `TYPE[:asc|:desc][:nulls-first|:nulls-last],...`.
///
/// Types (case-insensitive): `S`, `N`, `B`, `BOOL`, `DATE`, `TIMESTAMP`,
/// `ANY`. The direction defaults to `asc`; the null placement defaults to
/// first for `asc` and last for `desc`. Options may come in either order;
/// spaces around parts are ignored. `Display` gives the canonical text
/// (`N:asc,S:desc`, with the null placement only where it is not the default).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Schema(pub Vec<Column>);

impl Schema {
    pub fn columns(&self) -> &[Column] {
        &self.0
    }
}

impl Deref for Schema {
    type Target = [Column];

    fn deref(&self) -> &[Column] {
        &self.0
    }
}

impl From<Vec<Column>> for Schema {
    fn from(columns: Vec<Column>) -> Self {
        Schema(columns)
    }
}

impl FromStr for Schema {
    type Err = SortKeyError;

    fn from_str(text: &str) -> Result<Self, SortKeyError> {
        if text.trim().is_empty() {
            return Err(SortKeyError::EmptySchema);
        }
        text.split(',')
            .enumerate()
            .map(|(i, part)| parse_column(part).map_err(|reason| invalid(i + 1, part, &reason)))
            .collect::<Result<Vec<_>, _>>()
            .map(Schema)
    }
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, column) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{column}")?;
        }
        Ok(())
    }
}

impl FromStr for Column {
    type Err = SortKeyError;

    /// One column, `TYPE[:asc|:desc][:nulls-first|:nulls-last]`.
    fn from_str(text: &str) -> Result<Self, SortKeyError> {
        parse_column(text).map_err(|reason| invalid(1, text, &reason))
    }
}

impl fmt::Display for Column {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.ty, self.direction)?;
        if self.nulls != Column::new(self.ty, self.direction).nulls {
            f.write_str(match self.nulls {
                Nulls::First => ":nulls-first",
                Nulls::Last => ":nulls-last",
            })?;
        }
        Ok(())
    }
}

/// The reason is rendered into the message here: holding the
/// [`ColumnSpecError`] as well as the column's text would take
/// [`SortKeyError`] past its 40-byte budget (see the sortkey tests).
fn invalid(column: usize, text: &str, reason: &ColumnSpecError) -> SortKeyError {
    SortKeyError::InvalidSchema {
        column,
        message: format!("`{}`: {reason}", text.trim()).into(),
    }
}

/// What is wrong with one column of a schema text (or a column type or
/// direction given on its own).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ColumnSpecError {
    #[error("missing type (expected S, N, B, BOOL, DATE, TIMESTAMP or ANY)")]
    MissingType,
    /// `text` is the type as written, trimmed.
    #[error("unknown type `{text}` (expected S, N, B, BOOL, DATE, TIMESTAMP or ANY)")]
    UnknownType { text: Box<str> },
    /// `text` is the direction as written, trimmed.
    #[error("unknown direction `{text}` (expected asc or desc)")]
    UnknownDirection { text: Box<str> },
    #[error("the direction is given twice")]
    DirectionTwice,
    #[error("the null placement is given twice")]
    NullsTwice,
    #[error("empty option (a stray `:`)")]
    EmptyOption,
    /// `option` is the option as written, trimmed.
    #[error("unknown option `{option}` (expected asc, desc, nulls-first or nulls-last)")]
    UnknownOption { option: Box<str> },
}

impl FromStr for ColumnType {
    type Err = ColumnSpecError;

    /// `S`, `N`, `B`, `BOOL`, `DATE`, `TIMESTAMP` or `ANY`, case-insensitive.
    fn from_str(text: &str) -> Result<Self, ColumnSpecError> {
        let ty = match text.trim().to_ascii_lowercase().as_str() {
            "s" => ColumnType::S,
            "n" => ColumnType::N,
            "b" => ColumnType::B,
            "bool" => ColumnType::Bool,
            "date" => ColumnType::Date,
            "timestamp" => ColumnType::Timestamp,
            "any" => ColumnType::Any,
            "" => return Err(ColumnSpecError::MissingType),
            _ => {
                return Err(ColumnSpecError::UnknownType {
                    text: text.trim().into(),
                })
            }
        };
        Ok(ty)
    }
}

impl ColumnType {
    /// The type's name in upper case (`S`, `BOOL`, `TIMESTAMP`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ColumnType::S => "S",
            ColumnType::N => "N",
            ColumnType::B => "B",
            ColumnType::Bool => "BOOL",
            ColumnType::Date => "DATE",
            ColumnType::Timestamp => "TIMESTAMP",
            ColumnType::Any => "ANY",
        }
    }
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Direction {
    type Err = ColumnSpecError;

    /// `asc` or `desc`, case-insensitive.
    fn from_str(text: &str) -> Result<Self, ColumnSpecError> {
        match text.trim().to_ascii_lowercase().as_str() {
            "asc" => Ok(Direction::Asc),
            "desc" => Ok(Direction::Desc),
            _ => Err(ColumnSpecError::UnknownDirection {
                text: text.trim().into(),
            }),
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::Asc => "asc",
            Direction::Desc => "desc",
        })
    }
}

fn parse_column(text: &str) -> Result<Column, ColumnSpecError> {
    let mut parts = text.split(':');
    let ty: ColumnType = parts.next().unwrap_or_default().parse()?;
    let mut direction = None;
    let mut nulls = None;
    for option in parts {
        let option = option.trim();
        match option.to_ascii_lowercase().as_str() {
            "asc" | "desc" if direction.is_some() => return Err(ColumnSpecError::DirectionTwice),
            "asc" => direction = Some(Direction::Asc),
            "desc" => direction = Some(Direction::Desc),
            "nulls-first" | "nulls-last" if nulls.is_some() => return Err(ColumnSpecError::NullsTwice),
            "nulls-first" => nulls = Some(Nulls::First),
            "nulls-last" => nulls = Some(Nulls::Last),
            "" => return Err(ColumnSpecError::EmptyOption),
            _ => return Err(ColumnSpecError::UnknownOption { option: option.into() }),
        }
    }
    let column = Column::new(ty, direction.unwrap_or(Direction::Asc));
    Ok(match nulls {
        Some(nulls) => column.with_nulls(nulls),
        None => column,
    })
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn parses_and_displays() {
        let schema: Schema = "N:asc,S:desc:nulls-last".parse().unwrap();
        assert_eq!(
            schema.0,
            vec![
                Column::new(ColumnType::N, Direction::Asc),
                Column::new(ColumnType::S, Direction::Desc)
            ]
        );
        assert_eq!(schema.to_string(), "N:asc,S:desc");
        let schema: Schema = " any , Bool:DESC:Nulls-First, date:nulls-last ,timestamp,b:desc"
            .parse()
            .unwrap();
        assert_eq!(
            schema.0,
            vec![
                Column::new(ColumnType::Any, Direction::Asc),
                Column::new(ColumnType::Bool, Direction::Desc).with_nulls(Nulls::First),
                Column::new(ColumnType::Date, Direction::Asc).with_nulls(Nulls::Last),
                Column::new(ColumnType::Timestamp, Direction::Asc),
                Column::new(ColumnType::B, Direction::Desc),
            ]
        );
        assert_eq!(
            schema.to_string(),
            "ANY:asc,BOOL:desc:nulls-first,DATE:asc:nulls-last,TIMESTAMP:asc,B:desc"
        );
        assert_eq!(schema.to_string().parse::<Schema>().unwrap(), schema);
        assert_eq!(
            "n".parse::<Column>().unwrap(),
            Column::new(ColumnType::N, Direction::Asc)
        );
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let err = |text: &str| text.parse::<Schema>().unwrap_err().to_string();
        assert_eq!(err(""), "schema is empty (expected e.g. `N:asc,S:desc:nulls-last`)");
        assert_eq!(
            err("N,X:asc"),
            "schema column 2 `X:asc`: unknown type `X` (expected S, N, B, BOOL, DATE, TIMESTAMP or ANY)"
        );
        assert_eq!(
            err("N,"),
            "schema column 2 ``: missing type (expected S, N, B, BOOL, DATE, TIMESTAMP or ANY)"
        );
        assert_eq!(
            err("N:up"),
            "schema column 1 `N:up`: unknown option `up` (expected asc, desc, nulls-first or nulls-last)"
        );
        assert_eq!(
            err("N:asc:desc"),
            "schema column 1 `N:asc:desc`: the direction is given twice"
        );
        assert_eq!(
            err("N:nulls-last:nulls-first"),
            "schema column 1 `N:nulls-last:nulls-first`: the null placement is given twice"
        );
        assert_eq!(err("N::asc"), "schema column 1 `N::asc`: empty option (a stray `:`)");
    }
}
