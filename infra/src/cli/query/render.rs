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

use std::borrow::Cow;
use std::fmt::Write as _;

use base64::Engine as _;
use model::config::{IndexConfig, TableConfig};
use model::sortkey::{self, Column};
use model::Value;
use serde_json::{json, Value as Json};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

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

/// The width tables are laid out in: the terminal's, when stdout is one,
/// else 100 columns.
pub fn terminal_width() -> usize {
    terminal_size::terminal_size_of(std::io::stdout())
        .map_or(DEFAULT_WIDTH, |(terminal_size::Width(w), _)| usize::from(w).max(1))
}

/// The width when stdout is not a terminal.
pub const DEFAULT_WIDTH: usize = 100;

/// A table laid out for a terminal: its text, and whether a cell was cut to fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub text: String,
    /// Some cell was wider than its share of the width and was cut with `…`.
    pub cut: bool,
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

/// Lays `lines` of cells out in columns within `width` (see [`table`]).
pub fn layout(lines: &[Vec<String>], width: usize) -> Table {
    let columns = lines.iter().map(Vec::len).max().unwrap_or(0);
    let natural: Vec<usize> = (0..columns)
        .map(|i| {
            lines
                .iter()
                .filter_map(|l| l.get(i))
                .map(|c| c.width())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let widths = shares(&natural, width);
    let mut cut = false;
    let mut out = String::new();
    for line in lines {
        let mut text = String::new();
        for (i, (value, &room)) in line.iter().zip(&widths).enumerate() {
            let (shown, was_cut) = fit(value, room);
            cut |= was_cut;
            text.push_str(&shown);
            if i + 1 < line.len() {
                text.extend(std::iter::repeat_n(' ', room.saturating_sub(shown.width()) + 2));
            }
        }
        let text = text.trim_end();
        // More columns than the width has room for: the line itself is cut.
        let (text, was_cut) = fit(text, width);
        cut |= was_cut;
        out.push_str(&text);
        out.push('\n');
    }
    Table { text: out, cut }
}

/// Each column's width: its widest cell's when all fit in `width` (two
/// spaces between columns), else a fair share of it, the narrow columns
/// keeping their own width and the wide ones sharing what is left.
fn shares(natural: &[usize], width: usize) -> Vec<usize> {
    let n = natural.len();
    let room = width.saturating_sub(2 * n.saturating_sub(1));
    if natural.iter().sum::<usize>() <= room {
        return natural.to_vec();
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| natural[i]);
    let mut widths = vec![0; n];
    let mut left = room;
    for (k, &i) in order.iter().enumerate() {
        let share = left / (n - k);
        widths[i] = natural[i].min(share).max(1);
        left = left.saturating_sub(widths[i]);
    }
    widths
}

/// `text` cut to at most `width` terminal columns, ending in `…` when cut;
/// whether it was.
fn fit(text: &str, width: usize) -> (Cow<'_, str>, bool) {
    if text.width() <= width {
        return (Cow::Borrowed(text), false);
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    if width > 0 {
        out.push('…');
    }
    (Cow::Owned(out), true)
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

    #[test]
    fn a_table_wider_than_the_width_gives_each_column_a_fair_share() {
        // Narrow columns keep their width; the wide ones share the rest.
        assert_eq!(shares(&[3, 50, 50], 40), vec![3, 16, 17]);
        assert_eq!(shares(&[3, 5], 40), vec![3, 5]);
        // More columns than room: each gets one, and the line is cut.
        let lines = vec![vec!["abc".to_owned(); 10]];
        let laid = layout(&lines, 12);
        assert!(laid.cut && laid.text.trim_end().width() <= 12, "{:?}", laid.text);
    }

    proptest::proptest! {
        #[test]
        fn every_line_fits_the_width_and_nothing_panics(
            cells in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<String>(), 0..6), 0..6),
            width in 1usize..300,
        ) {
            let lines: Vec<Vec<String>> = cells.iter().map(|l| l.iter().map(|c| escaped(c)).collect()).collect();
            let laid = layout(&lines, width);
            proptest::prop_assert_eq!(laid.text.lines().count(), lines.len());
            for line in laid.text.lines() {
                proptest::prop_assert!(line.width() <= width, "{} > {}: {:?}", line.width(), width, line);
            }
        }

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
