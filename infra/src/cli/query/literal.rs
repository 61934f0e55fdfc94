//! The values of `streamdex query`'s conditions: DynamoDB JSON, or plain
//! literals typed by their sort column.
//!
//! - A value that starts with `{` is DynamoDB JSON: `{"S":"42"}`,
//!   `{"N":"-1.5"}`, `{"BOOL":true}`, `{"B":"AAE="}`, `{"NULL":true}`.
//! - `null` is NULL in every column (the string "null" is `{"S":"null"}`).
//! - Otherwise the column's type reads it: S, DATE and TIMESTAMP take the
//!   text as it is; N the decimal text (exactly, never through a float); BOOL
//!   `true` or `false`; B base64. An ANY column reads `true`/`false` as BOOL,
//!   a number as N and anything else as S.
//!
//! Whether the value fits its column (a valid number, date, timestamp) is
//! checked by the encoder, with the reason it gives.

use base64::Engine as _;
use model::sortkey::{self, Column, ColumnType, SortValue};
use model::Value;

/// The literal for NULL.
pub const NULL: &str = "null";

/// Why a condition's value cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum LiteralError {
    #[error("not a BOOL: expected true or false")]
    NotBool,
    #[error("not base64 ({0}); a B value is given in base64, e.g. AAE=")]
    NotBase64(#[source] base64::DecodeError),
    #[error("not a DynamoDB JSON value (e.g. {{\"S\":\"ab\"}} or {{\"N\":\"4.2\"}}): {0}")]
    NotJson(#[source] serde_json::Error),
    /// DynamoDB JSON of a type no sort column holds (`ty`: SS, M, L...).
    #[error("a sort column holds S, N, B, BOOL or NULL, not {ty}")]
    NotScalar { ty: &'static str },
    /// A `--begins` prefix given as DynamoDB JSON of another type than S.
    #[error("a prefix is a string; got {ty} (give it plainly, or as {{\"S\":\"...\"}})")]
    NotAString { ty: &'static str },
}

/// A condition's value, for a column `column`.
pub fn value(text: &str, column: &Column) -> Result<SortValue, LiteralError> {
    if text.trim_start().starts_with('{') {
        return json(text);
    }
    if text == NULL {
        return Ok(SortValue::Null);
    }
    Ok(match column.ty {
        ColumnType::S | ColumnType::Date | ColumnType::Timestamp => SortValue::S(text.to_owned()),
        ColumnType::N => SortValue::N(text.to_owned()),
        ColumnType::Bool => SortValue::Bool(boolean(text).ok_or(LiteralError::NotBool)?),
        ColumnType::B => SortValue::B(
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(LiteralError::NotBase64)?,
        ),
        ColumnType::Any => match boolean(text) {
            Some(b) => SortValue::Bool(b),
            None if sortkey::is_number(text) => SortValue::N(text.to_owned()),
            None => SortValue::S(text.to_owned()),
        },
    })
}

/// The string of `--begins`: plain text, or DynamoDB JSON `{"S":"..."}`.
pub fn prefix(text: &str) -> Result<String, LiteralError> {
    if !text.trim_start().starts_with('{') {
        return Ok(text.to_owned());
    }
    match json(text)? {
        SortValue::S(s) => Ok(s),
        other => Err(LiteralError::NotAString { ty: other.type_name() }),
    }
}

fn boolean(text: &str) -> Option<bool> {
    match text {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// One scalar DynamoDB JSON value.
fn json(text: &str) -> Result<SortValue, LiteralError> {
    let value: Value = serde_json::from_str(text.trim()).map_err(LiteralError::NotJson)?;
    Ok(match value {
        Value::Null(_) => SortValue::Null,
        Value::S(s) => SortValue::S(s),
        Value::N(n) => SortValue::N(n),
        Value::B(b) => SortValue::B(b),
        Value::Bool(b) => SortValue::Bool(b),
        other => {
            return Err(LiteralError::NotScalar {
                ty: model::value::Attr::type_name(&other),
            })
        }
    })
}

#[cfg(test)]
mod tests;
