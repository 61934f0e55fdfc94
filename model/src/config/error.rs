//! Why a config was refused: every problem found, each with its place.

use std::fmt;
use std::path::PathBuf;

/// One problem in a config file: where it is, which key, and why.
///
/// Displays as `FILE:LINE:COLUMN: KEY: REASON`, for example
/// `streamdex.toml:14:10: [[index]] "issue-attrib" source.table: table "issuez" is not declared (declared: records, issues, layers)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file name as given to [`super::parse`] (or the path given to [`super::load`]).
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// Where in the config: the section and the key, e.g. `[table.records] sort_key`
    /// or `[[index]] "issue-attrib" source.table`.
    pub key: String,
    /// Why it was refused.
    pub reason: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: ", self.file, self.line, self.column)?;
        if !self.key.is_empty() {
            write!(f, "{}: ", self.key)?;
        }
        f.write_str(&self.reason)
    }
}

/// A config that could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read (the OS reason is the source).
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file was read but refused. Holds every problem found, in file order;
    /// never empty. Displays one problem per line.
    #[error("{}", lines(.problems))]
    Invalid { problems: Vec<Problem> },
}

impl ConfigError {
    /// The problems of an invalid config (empty for a read error).
    pub fn problems(&self) -> &[Problem] {
        match self {
            ConfigError::Read { .. } => &[],
            ConfigError::Invalid { problems } => problems,
        }
    }
}

fn lines(problems: &[Problem]) -> String {
    let mut out = String::new();
    for (i, p) in problems.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&p.to_string());
    }
    out
}

/// The 1-based line and column (in characters) of byte `offset` in `text`.
/// Offsets past the end, or inside a character, are clamped.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.matches('\n').count() + 1;
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_lines_and_characters() {
        let text = "ab\ncdé\nf";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 1), (1, 2));
        assert_eq!(line_column(text, 2), (1, 3));
        assert_eq!(line_column(text, 3), (2, 1));
        assert_eq!(line_column(text, 5), (2, 3));
        // inside the two-byte é: clamped back to its start
        assert_eq!(line_column(text, 6), (2, 3));
        assert_eq!(line_column(text, 7), (2, 4));
        assert_eq!(line_column(text, 8), (3, 1));
        assert_eq!(line_column(text, 100), (3, 2));
        assert_eq!(line_column("", 5), (1, 1));
        assert_eq!(line_column("a\r\nb", 3), (2, 1));
    }

    #[test]
    fn invalid_displays_one_problem_per_line() {
        let p = |line, key: &str, reason: &str| Problem {
            file: "s.toml".into(),
            line,
            column: 1,
            key: key.into(),
            reason: reason.into(),
        };
        let err = ConfigError::Invalid {
            problems: vec![p(1, "[alarms]", "bad"), p(3, "", "worse")],
        };
        assert_eq!(err.to_string(), "s.toml:1:1: [alarms]: bad\ns.toml:3:1: worse");
        assert_eq!(err.problems().len(), 2);
    }
}
