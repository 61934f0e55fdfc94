//! How `streamdex query` prints rows.
//!
//! - `json`: one object per line, `{"columns": [...], "row": {...}}`: the
//!   row's sort columns decoded from its sort key (DynamoDB JSON, DATE and
//!   TIMESTAMP as S, numbers canonical; `null` when the key does not decode,
//!   e.g. a row written by hand), and the row's attributes as stored
//!   (DynamoDB JSON, numbers exact).
//! - `table`: a header of the sort columns' value references, the source
//!   key attributes and the projected attributes, then one aligned line per
//!   row (strings as they are, control characters escaped; B in base64;
//!   maps, lists and sets as DynamoDB JSON; blank when absent).

use std::fmt::Write as _;

use base64::Engine as _;
use model::config::{IndexConfig, TableConfig};
use model::sortkey::{self, Column};
use model::Value;
use serde_json::{json, Value as Json};

use super::fetch::Row;

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

/// The table of rows, header first, columns separated by two spaces.
pub fn table(index: &IndexConfig, source: &TableConfig, key_columns: &[Column], rows: &[Row]) -> String {
    let count = index.sort.len();
    let mut header: Vec<String> = index.sort.iter().map(|c| c.value.to_string()).collect();
    let attributes: Vec<&str> = source
        .primary_key()
        .into_iter()
        .chain(index.project.iter().map(String::as_str))
        .collect();
    header.extend(attributes.iter().map(|a| (*a).to_owned()));
    let mut lines = vec![header];
    for row in rows {
        let mut line: Vec<String> = match columns(row, key_columns, count) {
            Some(values) => values.iter().map(cell).collect(),
            None => vec!["?".to_owned(); count],
        };
        line.extend(attributes.iter().map(|a| row.item.get(a).map(cell).unwrap_or_default()));
        lines.push(line);
    }
    let widths: Vec<usize> = (0..lines.first().map_or(0, Vec::len))
        .map(|i| {
            lines
                .iter()
                .filter_map(|l| l.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for line in &lines {
        let mut text = String::new();
        for (i, (value, width)) in line.iter().zip(&widths).enumerate() {
            if i + 1 == line.len() {
                text.push_str(value);
            } else {
                let _ = write!(text, "{value:<width$}  ");
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out
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

/// A string with its control characters (which would break the table) escaped.
fn escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::config::{parse, EXAMPLE_CONFIG};
    use model::Image;

    fn row(sort: &str, attributes: &[(&str, Value)]) -> Row {
        Row {
            sort: sort.to_owned(),
            item: attributes
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect::<Image>(),
        }
    }

    #[test]
    fn renders_rows() {
        let config = parse(EXAMPLE_CONFIG, "example").unwrap();
        let index = config.index("issue-attrib").unwrap();
        let source = config.table("issues").unwrap();
        let key_columns = model::query::plan(index, source, "p", &Default::default())
            .unwrap()
            .key_columns;
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
        assert_eq!(
            table(index, source, &key_columns, &rows),
            "{entry.value}  {num}  id       rel      name          state\n\
             high           7      issue-7  issue-7  tab\\u{9}here\n\
             ?              ?      x\n"
        );
        assert_eq!(
            json_line(&rows[0], &key_columns, 2),
            r#"{"columns":[{"S":"high"},{"N":"7"}],"row":{"id":{"S":"issue-7"},"name":{"S":"tab\there"},"pk":{"S":"prio"},"rel":{"S":"issue-7"}}}"#
        );
        assert_eq!(
            json_line(&rows[1], &key_columns, 2),
            r#"{"columns":null,"row":{"id":{"S":"x"}}}"#
        );
    }
}
