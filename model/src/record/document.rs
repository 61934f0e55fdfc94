//! A payload's text as a document: decoded from bytes, found to be a
//! batch (`{"Records": [...]}`) the strict way, and what goes wrong with it
//! said with a line and column ([`ParseError`]), clipped.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::attr::Text;
use super::ParseError;

/// The records of a batch, every one found first (`RawValue`s) and read
/// after: the strict way, which explains what is wrong with a payload.
pub(super) fn strict(text: &str, bom: usize) -> Result<Vec<&RawValue>, ParseError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let probe = Probe::deserialize(&mut de).map_err(|e| ParseError::from_json(&e, bom))?;
    de.end().map_err(|e| ParseError::from_json(&e, bom))?;
    match probe {
        Probe::Batch(records) => Ok(records),
        Probe::Object => Err(ParseError::at_start(
            text,
            bom,
            "an object without a `Records` array: expected a Lambda event or a GetRecords response",
        )),
        Probe::Other => Err(ParseError::at_start(
            text,
            bom,
            "not a JSON object: expected a Lambda event or a GetRecords response",
        )),
    }
}

pub(super) fn is_json_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// The input as UTF-8 without a leading byte-order mark, and the mark's length.
pub(super) fn decode(bytes: &[u8]) -> Result<(&str, usize), ParseError> {
    let bom = if bytes.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 };
    let body = bytes.get(bom..).unwrap_or_default();
    match std::str::from_utf8(body) {
        Ok(text) => Ok((text, bom)),
        Err(e) => {
            let (line, column) = line_col(bytes, bom + e.valid_up_to());
            Err(ParseError {
                line,
                column,
                message: "not valid UTF-8".to_owned(),
            })
        }
    }
}

/// 1-based line and column (in bytes) of a byte offset.
pub(super) fn line_col(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = bytes.get(..offset).unwrap_or(bytes);
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    (line, before.len() - line_start + 1)
}

impl ParseError {
    pub(super) fn from_json(e: &serde_json::Error, bom: usize) -> ParseError {
        let column = if e.line() == 1 { e.column() + bom } else { e.column() };
        ParseError {
            line: e.line(),
            column,
            message: json_message(e),
        }
    }

    pub(super) fn at_start(text: &str, bom: usize, message: &str) -> ParseError {
        let start = text.len() - text.trim_start_matches(is_json_whitespace).len();
        let (line, column) = line_col(text.as_bytes(), start);
        let column = if line == 1 { column + bom } else { column };
        ParseError {
            line,
            column,
            message: message.to_owned(),
        }
    }
}

/// A serde_json error's message without its " at line L column C" suffix,
/// clipped (type errors quote the value they met).
pub(super) fn json_message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    clip(full.strip_suffix(suffix.as_str()).unwrap_or(&full), 160)
}

/// The top level of a document: a batch (`Records`), another object, or not an object.
pub(super) enum Probe<'a> {
    Batch(Vec<&'a RawValue>),
    Object,
    Other,
}

impl<'de> Deserialize<'de> for Probe<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Probe<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Probe<'de>, A::Error> {
                let mut records = None;
                while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
                    if key == "Records" {
                        if records.is_some() {
                            return Err(de::Error::custom("duplicate `Records`"));
                        }
                        records = Some(map.next_value::<RecordsArray<'de>>()?.0);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(records.map_or(Probe::Object, Probe::Batch))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Probe<'de>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Probe::Other)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Probe<'de>, E> {
                Ok(Probe::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Probe<'de>, E> {
                Ok(Probe::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Probe<'de>, E> {
                Ok(Probe::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Probe<'de>, E> {
                Ok(Probe::Other)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Probe<'de>, E> {
                Ok(Probe::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Probe<'de>, E> {
                Ok(Probe::Other)
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// `Records`: an array of raw records.
struct RecordsArray<'a>(Vec<&'a RawValue>);

impl<'de> Deserialize<'de> for RecordsArray<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RecordsArray<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of records")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RecordsArray<'de>, A::Error> {
                let mut records = Vec::with_capacity(seq.size_hint().unwrap_or(128).min(16_384));
                while let Some(raw) = seq.next_element::<&'de RawValue>()? {
                    records.push(raw);
                }
                Ok(RecordsArray(records))
            }
        }
        // Not `deserialize_seq`: serde_json's type error would quote the value.
        deserializer.deserialize_any(NotQuoting(V))
    }
}

/// Wraps a visitor so that a value of the wrong JSON type gives an error that
/// names the type but never quotes the value.
struct NotQuoting<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for NotQuoting<V> {
    type Value = V::Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<V::Value, A::Error> {
        Err(de::Error::custom(format!(
            "expected {}, found an object",
            Expecting(&self.0)
        )))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<V::Value, E> {
        Err(E::custom(format!("expected {}, found a boolean", Expecting(&self.0))))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<V::Value, E> {
        Err(E::custom(format!("expected {}, found a number", Expecting(&self.0))))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<V::Value, E> {
        Err(E::custom(format!("expected {}, found a number", Expecting(&self.0))))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<V::Value, E> {
        Err(E::custom(format!("expected {}, found a number", Expecting(&self.0))))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<V::Value, E> {
        Err(E::custom(format!("expected {}, found a string", Expecting(&self.0))))
    }
    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        Err(E::custom(format!("expected {}, found null", Expecting(&self.0))))
    }
}

struct Expecting<'v, V>(&'v V);

impl<'de, V: Visitor<'de>> fmt::Display for Expecting<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }
}

/// `text`, cut to at most `max` characters (marked with `…`).
pub(super) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}
