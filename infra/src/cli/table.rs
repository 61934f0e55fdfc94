//! Tables for a terminal: cells laid out in columns within a width (the
//! terminal's, or 100 columns when stdout is not a terminal), by display
//! width (wide and combining characters), a cell wider than its share cut
//! with `…`; control characters escaped so that a cell is one line.

use std::borrow::Cow;
use std::fmt::Write as _;

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// The width tables are laid out in: the terminal's, when stdout is one,
/// else 100 columns.
pub fn terminal_width() -> usize {
    terminal_size::terminal_size_of(std::io::stdout())
        .map_or(DEFAULT_WIDTH, |(terminal_size::Width(w), _)| usize::from(w).max(1))
}

/// What a command says on stderr when it cut a value to fit.
pub const CUT_NOTE: &str = "values too wide for the terminal are cut with …: --output json gives them whole";

/// The width when stdout is not a terminal.
pub const DEFAULT_WIDTH: usize = 100;

/// A table laid out for a terminal: its text, and whether a cell was cut to fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub text: String,
    /// Some cell was wider than its share of the width and was cut with `…`.
    pub cut: bool,
}

/// `lines` laid out for this terminal ([`terminal_width`]); when a value
/// was cut, [`CUT_NOTE`] goes to `err`.
pub fn for_terminal(lines: &[Vec<String>], err: &mut dyn std::io::Write) -> String {
    let laid = layout(lines, terminal_width());
    if laid.cut {
        let _ = writeln!(err, "({CUT_NOTE})");
    }
    laid.text
}

/// Lays `lines` of cells out in columns within `width` (see [the module doc](self)).
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
pub fn shares(natural: &[usize], width: usize) -> Vec<usize> {
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
pub fn fit(text: &str, width: usize) -> (Cow<'_, str>, bool) {
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

/// A string with its control characters (which would break the table) escaped.
pub fn escaped(s: &str) -> String {
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

    }
}
