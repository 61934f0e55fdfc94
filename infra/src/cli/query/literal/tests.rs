//! `literal`: plain literals typed by their column, DynamoDB JSON, and the
//! messages of what is refused.

use super::*;
use model::sortkey::Direction;

/// [`super::value`] with its error as the message it shows.
fn value(text: &str, column: &Column) -> Result<SortValue, String> {
    super::value(text, column).map_err(|e| e.to_string())
}

/// [`super::prefix`] with its error as the message it shows.
fn prefix(text: &str) -> Result<String, String> {
    super::prefix(text).map_err(|e| e.to_string())
}

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
