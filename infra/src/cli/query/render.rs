//! How `streamdex query` prints rows.
//!
//! - `json`: one object per line, `{"columns": [...], "row": {...}}`: the
//!   row's sort columns decoded from its sort key (DynamoDB JSON, DATE and
//!   TIMESTAMP as S, numbers canonical; `null` when the key does not decode,
//!   e.g. a row written by hand), and the row's attributes as stored
//!   (DynamoDB JSON, numbers exact).
//! - `table`: a header of the sort columns (named after what they hold:
//!   `entry.value`, `num`), the source key attributes and the projected
//!   attributes, then one aligned line per row (strings as they are, control
//!   characters escaped; B in base64; maps, lists and sets as DynamoDB JSON;
//!   blank when absent), every line within the terminal's width (100 columns
//!   when stdout is not a terminal): a wider cell is cut with `…`.

use base64::Engine as _;
use model::config::{IndexConfig, TableConfig};
use model::sortkey::{self, Column};
use model::Value;
use serde_json::{json, Value as Json};

use super::fetch::Row;
use crate::cli::table::{escaped, layout, Table};

/// The sort columns' values decoded from a row's sort key (`None` when it does not decode).
fn columns(row: &Row, key_columns: &[Column], count: usize) -> Option<Vec<Value>> {
    let values = sortkey::decode(key_columns, &row.sort).ok()?;
    Some(values.iter().take(count).map(|v| v.to_value()).collect())
}

/// One JSON line for a row.
pub fn json_line(row: &Row, key_columns: &[Column], count: usize) -> String {
    let line = json!({
        "columns": columns(row, key_columns, count),
        "row": row.item.iter().collect::<std::collections::BTreeMap<_, _>>(),
    });
    line.to_string()
}

/// The table of rows, header first (the sort columns named after what they
/// hold, then the source key and projected attributes), columns separated
/// by two spaces, every line at most `width` columns wide as a terminal
/// shows it: a cell wider than its share is cut with `…`.
pub fn table(index: &IndexConfig, source: &TableConfig, key_columns: &[Column], rows: &[Row], width: usize) -> Table {
    let count = index.sort.len();
    let mut header: Vec<String> = index.sort.iter().map(|c| c.value.name().to_owned()).collect();
    let attributes: Vec<&str> = source
        .primary_key()
        .into_iter()
        .chain(index.project.iter().map(String::as_str))
        .collect();
    header.extend(attributes.iter().map(|a| escaped(a)));
    let mut lines = vec![header];
    for row in rows {
        let mut line: Vec<String> = match columns(row, key_columns, count) {
            Some(values) => values.iter().map(cell).collect(),
            None => vec!["?".to_owned(); count],
        };
        line.extend(attributes.iter().map(|a| row.item.get(a).map(cell).unwrap_or_default()));
        lines.push(line);
    }
    layout(&lines, width)
}

/// A value as one table cell.
fn cell(value: &Value) -> String {
    match value {
        Value::S(s) => escaped(s),
        Value::N(n) => n.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Null(_) => "null".to_owned(),
        Value::B(b) => base64::engine::general_purpose::STANDARD.encode(b),
        other => serde_json::to_value(other).map_or_else(|_| "?".to_owned(), |j: Json| j.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::table::DEFAULT_WIDTH;
    use model::config::{parse, EXAMPLE_CONFIG};
    use model::Image;
    use unicode_width::UnicodeWidthStr;

    fn row(sort: &str, attributes: &[(&str, Value)]) -> Row {
        Row {
            sort: sort.to_owned(),
            item: attributes
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect::<Image>(),
        }
    }

    /// `check` with the example's `issue-attrib` index, its source table and sort key columns.
    fn with_example_index(check: impl FnOnce(&IndexConfig, &TableConfig, &[Column])) {
        let config = parse(EXAMPLE_CONFIG, "example").unwrap();
        let index = config.index("issue-attrib").unwrap();
        let source = config.table("issues").unwrap();
        let key_columns = model::query::plan(index, source, "p", &Default::default())
            .unwrap()
            .key_columns;
        check(index, source, &key_columns);
    }

    #[test]
    fn renders_rows() {
        with_example_index(renders_rows_of);
    }

    fn renders_rows_of(index: &IndexConfig, source: &TableConfig, key_columns: &[Column]) {
        let s = |v: &str| Value::S(v.to_owned());
        // ("high", 7) then the source key issue-7/issue-7; a row that does not decode.
        let rows = [
            row(
                "Shigh\u{1}>1307!Sissue-7\u{1}Sissue-7\u{1}",
                &[
                    ("pk", s("prio")),
                    ("id", s("issue-7")),
                    ("rel", s("issue-7")),
                    ("name", s("tab\there")),
                ],
            ),
            row("junk", &[("id", s("x"))]),
        ];
        let laid = table(index, source, key_columns, &rows, DEFAULT_WIDTH);
        assert_eq!(
            laid.text,
            "entry.value  num  id       rel      name          state\n\
             high         7    issue-7  issue-7  tab\\u{9}here\n\
             ?            ?    x\n"
        );
        assert!(!laid.cut);
        assert_eq!(
            json_line(&rows[0], key_columns, 2),
            r#"{"columns":[{"S":"high"},{"N":"7"}],"row":{"id":{"S":"issue-7"},"name":{"S":"tab\there"},"pk":{"S":"prio"},"rel":{"S":"issue-7"}}}"#
        );
        assert_eq!(
            json_line(&rows[1], key_columns, 2),
            r#"{"columns":null,"row":{"id":{"S":"x"}}}"#
        );
    }

    #[test]
    fn a_value_of_any_length_is_cut_to_its_share_of_the_width() {
        with_example_index(a_value_of_any_length_is_cut_in);
    }

    fn a_value_of_any_length_is_cut_in(index: &IndexConfig, source: &TableConfig, key_columns: &[Column]) {
        let long = "\u{4e2d}e\u{301}x".repeat(100_000);
        let rows = [row(
            "junk",
            &[("id", Value::S("x".to_owned())), ("name", Value::S(long))],
        )];
        let laid = table(index, source, key_columns, &rows, 80);
        assert!(laid.cut);
        for line in laid.text.lines() {
            assert!(line.width() <= 80, "{} columns: {line}", line.width());
        }
        assert!(laid.text.lines().nth(1).is_some_and(|l| l.ends_with('…')));
    }

    proptest::proptest! {
        #[test]
        fn the_json_of_the_same_rows_gives_them_back_whole(
            values in proptest::collection::vec(proptest::prelude::any::<String>(), 1..4),
        ) {
            let attributes: Vec<(String, Value)> =
                values.iter().enumerate().map(|(i, v)| (format!("a{i}"), Value::S(v.clone()))).collect();
            let borrowed: Vec<(&str, Value)> = attributes.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
            let row = row("junk", &borrowed);
            let line: Json = serde_json::from_str(&json_line(&row, &[], 0)).unwrap();
            let back: Image = serde_json::from_value(line["row"].clone()).unwrap();
            proptest::prop_assert_eq!(back, row.item);
        }
    }
}
