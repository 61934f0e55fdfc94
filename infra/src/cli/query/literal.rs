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

/// A condition's value, for a column `column`.
pub fn value(text: &str, column: &Column) -> Result<SortValue, String> {
    if text.trim_start().starts_with('{') {
        return json(text);
    }
    if text == NULL {
        return Ok(SortValue::Null);
    }
    Ok(match column.ty {
        ColumnType::S | ColumnType::Date | ColumnType::Timestamp => SortValue::S(text.to_owned()),
        ColumnType::N => SortValue::N(text.to_owned()),
        ColumnType::Bool => SortValue::Bool(boolean(text).ok_or("not a BOOL: expected true or false")?),
        ColumnType::B => SortValue::B(
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| format!("not base64 ({e}); a B value is given in base64, e.g. AAE="))?,
        ),
        ColumnType::Any => match boolean(text) {
            Some(b) => SortValue::Bool(b),
            None if sortkey::is_number(text) => SortValue::N(text.to_owned()),
            None => SortValue::S(text.to_owned()),
        },
    })
}

/// The string of `--begins`: plain text, or DynamoDB JSON `{"S":"..."}`.
pub fn prefix(text: &str) -> Result<String, String> {
    if !text.trim_start().starts_with('{') {
        return Ok(text.to_owned());
    }
    match json(text)? {
        SortValue::S(s) => Ok(s),
        other => Err(format!(
            "a prefix is a string; got {} (give it plainly, or as {{\"S\":\"...\"}})",
            other.type_name()
        )),
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
fn json(text: &str) -> Result<SortValue, String> {
    let value: Value = serde_json::from_str(text.trim())
        .map_err(|e| format!("not a DynamoDB JSON value (e.g. {{\"S\":\"ab\"}} or {{\"N\":\"4.2\"}}): {e}"))?;
    Ok(match value {
        Value::Null(_) => SortValue::Null,
        Value::S(s) => SortValue::S(s),
        Value::N(n) => SortValue::N(n),
        Value::B(b) => SortValue::B(b),
        Value::Bool(b) => SortValue::Bool(b),
        other => {
            return Err(format!(
                "a sort column holds S, N, B, BOOL or NULL, not {}",
                model::value::Attr::type_name(&other)
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::sortkey::Direction;

    fn col(ty: ColumnType) -> Column {
        Column::new(ty, Direction::Asc)
    }

    fn s(text: &str) -> SortValue {
        SortValue::S(text.to_owned())
    }

    #[test]
    fn plain_literals_take_their_column_type() {
        assert_eq!(value("42", &col(ColumnType::S)), Ok(s("42")));
        assert_eq!(value("42", &col(ColumnType::N)), Ok(SortValue::N("42".into())));
        assert_eq!(
            value("-1.50E+3", &col(ColumnType::N)),
            Ok(SortValue::N("-1.50E+3".into()))
        );
        assert_eq!(value("42", &col(ColumnType::Any)), Ok(SortValue::N("42".into())));
        assert_eq!(value("4x", &col(ColumnType::Any)), Ok(s("4x")));
        assert_eq!(value("NaN", &col(ColumnType::Any)), Ok(s("NaN")));
        assert_eq!(value("true", &col(ColumnType::Any)), Ok(SortValue::Bool(true)));
        assert_eq!(value("false", &col(ColumnType::Bool)), Ok(SortValue::Bool(false)));
        assert_eq!(value("true", &col(ColumnType::S)), Ok(s("true")));
        assert_eq!(value("2024-02-29", &col(ColumnType::Date)), Ok(s("2024-02-29")));
        assert_eq!(value("AAE=", &col(ColumnType::B)), Ok(SortValue::B(vec![0, 1])));
        assert_eq!(value("", &col(ColumnType::S)), Ok(s("")));
        for ty in ColumnType::ALL {
            assert_eq!(value("null", &col(ty)), Ok(SortValue::Null), "{ty:?}");
        }
    }

    #[test]
    fn json_values_say_their_type() {
        assert_eq!(value(r#"{"S":"null"}"#, &col(ColumnType::S)), Ok(s("null")));
        assert_eq!(value(r#"{"S":"42"}"#, &col(ColumnType::Any)), Ok(s("42")));
        assert_eq!(
            value(
                r#" {"N":"12345678901234567890123456789012345678"}"#,
                &col(ColumnType::Any)
            ),
            Ok(SortValue::N("12345678901234567890123456789012345678".into()))
        );
        assert_eq!(value(r#"{"NULL":true}"#, &col(ColumnType::N)), Ok(SortValue::Null));
        assert_eq!(
            value(r#"{"BOOL":false}"#, &col(ColumnType::Any)),
            Ok(SortValue::Bool(false))
        );
        // A type that does not fit is the encoder's to refuse (with its reason).
        assert_eq!(value(r#"{"S":"x"}"#, &col(ColumnType::N)), Ok(s("x")));
    }

    #[test]
    fn refusals_say_why() {
        assert_eq!(
            value("yes", &col(ColumnType::Bool)),
            Err("not a BOOL: expected true or false".into())
        );
        assert!(value("***", &col(ColumnType::B)).unwrap_err().starts_with("not base64"));
        let e = value(r#"{"SS":["a"]}"#, &col(ColumnType::Any)).unwrap_err();
        assert_eq!(e, "a sort column holds S, N, B, BOOL or NULL, not SS");
        let e = value("{oops", &col(ColumnType::S)).unwrap_err();
        assert!(e.starts_with("not a DynamoDB JSON value"), "{e}");
    }

    #[test]
    fn prefixes_are_strings() {
        assert_eq!(prefix("ab"), Ok("ab".into()));
        assert_eq!(prefix("null"), Ok("null".into()));
        assert_eq!(prefix(r#"{"S":"{x"}"#), Ok("{x".into()));
        assert_eq!(
            prefix(r#"{"N":"1"}"#),
            Err("a prefix is a string; got N (give it plainly, or as {\"S\":\"...\"})".into())
        );
    }
}
