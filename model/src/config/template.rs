//! Value references and partition templates, as written in the config.
//!
//! - `{entry.key}`, `{entry.value}`: the current `for_each` entry;
//! - `{attr}`: the top-level attribute `attr` of the item (the name is taken
//!   literally, `{a.b}` is the attribute named `a.b`, not a path);
//! - whitespace just inside the braces is ignored (`{ entry.key }`);
//! - `{{` and `}}` are literal braces;
//! - `entry` and `entry.*` are reserved: `{entry}` and `{entry.x}` are refused.
//!
//! A sort column's `value` is one reference, braced or bare (`num`, `{num}`,
//! `{entry.value}`); a bare `entry.key` is refused as ambiguous.

use std::fmt;

use super::{Template, TemplatePart, ValueRef};

/// Why a partition template or a sort column's value reference was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateSyntaxError {
    /// A template with no text at all.
    #[error("empty template")]
    EmptyTemplate,
    /// `{}` (or braces around only whitespace).
    #[error("empty reference `{{}}`")]
    EmptyReference,
    /// `{entry}` or `{entry.x}` other than `{entry.key}`/`{entry.value}`;
    /// `name` is the reference, trimmed.
    #[error("unknown entry reference `{{{name}}}` (expected `{{entry.key}}` or `{{entry.value}}`)")]
    UnknownEntryReference { name: String },
    /// A `}` with no `{` before it, at `at` (counted in characters, from 1).
    #[error("unmatched `}}` at character {at} (write `}}}}` for a literal brace)")]
    UnmatchedClose { at: usize },
    /// A `{` with no `}` after it, at `at` (counted in characters, from 1).
    #[error("unclosed `{{` at character {at} (write `{{{{` for a literal brace)")]
    UnclosedOpen { at: usize },
    /// A sort column's `value` that is empty or only whitespace.
    #[error("empty value reference")]
    EmptyValueReference,
    /// A sort column's `value` with braces that is not exactly one reference.
    #[error(
        "`{text}` is not a single value reference (a sort column takes one: `attr`, `{{attr}}`, `{{entry.key}}` or `{{entry.value}}`)"
    )]
    NotSingleReference { text: String },
    /// A sort column's `value` that is a bare `entry` or `entry.*`.
    #[error("bare `{text}` is ambiguous: write `{{entry.key}}` or `{{entry.value}}` for the entry")]
    AmbiguousEntry { text: String },
}

impl ValueRef {
    /// Whether this refers to the current `for_each` entry.
    pub fn is_entry(&self) -> bool {
        matches!(self, ValueRef::EntryKey | ValueRef::EntryValue)
    }

    /// Parses the inside of `{...}`.
    fn parse_braced(inner: &str) -> Result<ValueRef, TemplateSyntaxError> {
        let name = inner.trim();
        match name {
            "" => Err(TemplateSyntaxError::EmptyReference),
            "entry.key" => Ok(ValueRef::EntryKey),
            "entry.value" => Ok(ValueRef::EntryValue),
            _ if name == "entry" || name.starts_with("entry.") => {
                Err(TemplateSyntaxError::UnknownEntryReference { name: name.to_string() })
            }
            _ => Ok(ValueRef::Attribute(name.to_string())),
        }
    }

    /// Parses a sort column's `value`: one reference, braced (`{num}`,
    /// `{entry.value}`) or a bare attribute name (`num`).
    pub fn parse_sort_value(text: &str) -> Result<ValueRef, TemplateSyntaxError> {
        if text.trim().is_empty() {
            return Err(TemplateSyntaxError::EmptyValueReference);
        }
        if text.contains(['{', '}']) {
            let template = Template::parse(text)?;
            return match template.parts.as_slice() {
                [TemplatePart::Ref(r)] => Ok(r.clone()),
                _ => Err(TemplateSyntaxError::NotSingleReference { text: text.to_string() }),
            };
        }
        if text == "entry" || text.starts_with("entry.") {
            return Err(TemplateSyntaxError::AmbiguousEntry { text: text.to_string() });
        }
        Ok(ValueRef::Attribute(text.to_string()))
    }
}

impl ValueRef {
    /// What it names, unbraced: `entry.key`, `entry.value`, `num` (a
    /// column's heading).
    pub fn name(&self) -> &str {
        match self {
            ValueRef::Attribute(name) => name,
            ValueRef::EntryKey => "entry.key",
            ValueRef::EntryValue => "entry.value",
        }
    }
}

impl fmt::Display for ValueRef {
    /// The braced form: `{entry.key}`, `{entry.value}`, `{num}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueRef::Attribute(name) => write!(f, "{{{name}}}"),
            ValueRef::EntryKey => f.write_str("{entry.key}"),
            ValueRef::EntryValue => f.write_str("{entry.value}"),
        }
    }
}

impl Template {
    /// Parses a template such as `field#{entry.key}`. Refuses an empty
    /// template, an unclosed `{`, an unmatched `}` and unknown entry references.
    pub fn parse(text: &str) -> Result<Template, TemplateSyntaxError> {
        if text.is_empty() {
            return Err(TemplateSyntaxError::EmptyTemplate);
        }
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut chars = text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '{' if chars.peek().map(|&(_, n)| n) == Some('{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek().map(|&(_, n)| n) == Some('}') => {
                    chars.next();
                    literal.push('}');
                }
                '}' => {
                    return Err(TemplateSyntaxError::UnmatchedClose {
                        at: text[..i].chars().count() + 1,
                    })
                }
                '{' => {
                    let rest = &text[i + 1..];
                    let close = match rest.find(['}', '{']) {
                        Some(j) if rest[j..].starts_with('}') => j,
                        _ => {
                            return Err(TemplateSyntaxError::UnclosedOpen {
                                at: text[..i].chars().count() + 1,
                            })
                        }
                    };
                    let r = ValueRef::parse_braced(&rest[..close])?;
                    if !literal.is_empty() {
                        parts.push(TemplatePart::Literal(std::mem::take(&mut literal)));
                    }
                    parts.push(TemplatePart::Ref(r));
                    // skip the reference and its closing brace
                    let end = i + 1 + close;
                    while chars.peek().is_some_and(|&(k, _)| k <= end) {
                        chars.next();
                    }
                }
                _ => literal.push(c),
            }
        }
        if !literal.is_empty() {
            parts.push(TemplatePart::Literal(literal));
        }
        Ok(Template { parts })
    }

    /// The value references of the template, in order.
    pub fn refs(&self) -> impl Iterator<Item = &ValueRef> {
        self.parts.iter().filter_map(|p| match p {
            TemplatePart::Ref(r) => Some(r),
            TemplatePart::Literal(_) => None,
        })
    }

    /// Whether the template refers to the current `for_each` entry.
    pub fn uses_entry(&self) -> bool {
        self.refs().any(ValueRef::is_entry)
    }
}

impl fmt::Display for Template {
    /// The template as it would be written (braces in literals doubled), so
    /// that `Template::parse(&t.to_string()) == Ok(t)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for part in &self.parts {
            match part {
                TemplatePart::Literal(s) => f.write_str(&s.replace('{', "{{").replace('}', "}}"))?,
                TemplatePart::Ref(r) => write!(f, "{r}")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> TemplatePart {
        TemplatePart::Literal(s.to_string())
    }
    fn attr(s: &str) -> TemplatePart {
        TemplatePart::Ref(ValueRef::Attribute(s.to_string()))
    }

    #[test]
    fn templates_parse() {
        let cases: Vec<(&str, Vec<TemplatePart>)> = vec![
            ("{entry.key}", vec![TemplatePart::Ref(ValueRef::EntryKey)]),
            (
                "field#{entry.key}",
                vec![lit("field#"), TemplatePart::Ref(ValueRef::EntryKey)],
            ),
            (
                "{ entry.value }/{num}x",
                vec![TemplatePart::Ref(ValueRef::EntryValue), lit("/"), attr("num"), lit("x")],
            ),
            ("a{{b}}c", vec![lit("a{b}c")]),
            ("{{{a}}}", vec![lit("{"), attr("a"), lit("}")]),
            ("{a.b}{c}", vec![attr("a.b"), attr("c")]),
            ("all", vec![lit("all")]),
            ("é{x}é", vec![lit("é"), attr("x"), lit("é")]),
        ];
        for (text, parts) in cases {
            let t = Template::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(t.parts, parts, "{text}");
            assert_eq!(Template::parse(&t.to_string()), Ok(t.clone()), "{text} round trip");
        }
    }

    #[test]
    fn bad_templates_are_refused() {
        let cases = [
            ("", "empty template"),
            ("{entry.x}", "unknown entry reference `{entry.x}`"),
            ("{entry}", "unknown entry reference"),
            ("a{b", "unclosed `{` at character 2"),
            ("a{b{c}", "unclosed `{`"),
            ("a}b", "unmatched `}` at character 2"),
            ("{}", "empty reference"),
            ("{  }", "empty reference"),
        ];
        for (text, reason) in cases {
            let err = Template::parse(text).expect_err(text).to_string();
            assert!(err.contains(reason), "{text}: {err}");
        }
    }

    #[test]
    fn sort_values_parse() {
        assert_eq!(ValueRef::parse_sort_value("num"), Ok(ValueRef::Attribute("num".into())));
        assert_eq!(
            ValueRef::parse_sort_value("{num}"),
            Ok(ValueRef::Attribute("num".into()))
        );
        assert_eq!(ValueRef::parse_sort_value("{entry.key}"), Ok(ValueRef::EntryKey));
        assert_eq!(ValueRef::parse_sort_value("{entry.value}"), Ok(ValueRef::EntryValue));
        for (text, reason) in [
            ("", "empty"),
            ("entry.key", "ambiguous"),
            ("x{num}", "not a single value reference"),
            ("{a}{b}", "not a single value reference"),
            ("{{a}}", "not a single value reference"),
            ("{entry.nope}", "unknown entry reference"),
            ("a}", "unmatched"),
        ] {
            let err = ValueRef::parse_sort_value(text).expect_err(text).to_string();
            assert!(err.contains(reason), "{text}: {err}");
        }
    }
}
