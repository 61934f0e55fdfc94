//! How the config reaches the functions: inline, in `STREAMDEX_CONFIG`.
//!
//! The config file is re-written without comments or layout as compact
//! TOML ([`compact_toml`]: every top-level key on one line, tables inline,
//! keys sorted), checked to parse back to the very same config, and put in
//! the functions' environment. Lambda allows 4 KB of environment in all
//! (names and values); the config may use [`CONFIG_ENV_BYTES`] of it, the
//! rest is for the quarantine URL and the log level. A config too large for
//! that is refused: the template would not deploy.

use std::fmt::Write as _;

use model::config::{self, Config};
use toml::Value;

use super::TemplateError;

/// The config's key of the source tables (`[table.NAME]`).
const TABLES_KEY: &str = "table";

/// The most of the functions' 4 KB environment the inline config may take.
pub const CONFIG_ENV_BYTES: usize = 3584;

/// The config text `text` (read from `file`) as compact TOML that parses to
/// `config` exactly.
pub fn compact_toml(text: &str, file: &str, config: &Config) -> Result<String, TemplateError> {
    let table: toml::Table = toml::from_str(text).map_err(|e| TemplateError::Compact {
        file: file.to_owned(),
        reason: e.message().to_owned(),
    })?;
    let mut out = String::with_capacity(text.len() / 2);
    for (key, value) in &table {
        push_key(&mut out, key);
        out.push_str(" = ");
        match (key.as_str(), value) {
            // The source tables, in the config's order (a TOML table's keys come back sorted).
            (TABLES_KEY, Value::Table(tables)) => {
                let mut entries: Vec<(&String, &Value)> = tables.iter().collect();
                entries.sort_by_key(|(name, _)| config.tables.iter().position(|t| t.name == **name));
                push_table(&mut out, entries);
            }
            _ => push_value(&mut out, value),
        }
        out.push('\n');
    }
    let reparsed = config::parse(&out, file).map_err(|e| TemplateError::Compact {
        file: file.to_owned(),
        reason: format!("the compact form does not parse: {e}"),
    })?;
    if reparsed != *config {
        return Err(TemplateError::Compact {
            file: file.to_owned(),
            reason: "the compact form parses to a different config".to_owned(),
        });
    }
    if out.len() > CONFIG_ENV_BYTES {
        return Err(TemplateError::ConfigTooLarge {
            file: file.to_owned(),
            bytes: out.len(),
            limit: CONFIG_ENV_BYTES,
        });
    }
    Ok(out)
}

fn push_key(out: &mut String, key: &str) {
    if !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        out.push_str(key);
    } else {
        push_string(out, key);
    }
}

fn push_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn push_value(out: &mut String, value: &Value) {
    match value {
        Value::String(s) => push_string(out, s),
        Value::Integer(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => {
            // TOML floats keep a fraction or exponent; `{:?}` always writes one.
            let _ = write!(out, "{f:?}");
        }
        Value::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Datetime(d) => {
            let _ = write!(out, "{d}");
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_value(out, item);
            }
            out.push(']');
        }
        Value::Table(table) => push_table(out, table.iter().collect()),
    }
}

fn push_table(out: &mut String, entries: Vec<(&String, &Value)>) {
    out.push('{');
    for (i, (key, item)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_key(out, key);
        out.push('=');
        push_value(out, item);
    }
    out.push('}');
}
