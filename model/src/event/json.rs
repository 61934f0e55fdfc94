//! An event's `Detail` as JSON: one writer that builds the text or only
//! counts its bytes (what EventBridge's size limit needs), with DynamoDB
//! JSON for images (numbers as their exact text, binary as base64).

use base64::Engine as _;

use super::Detail;
use crate::record::CreationTime;
use crate::value::{Image, Value};

impl Detail {
    /// The JSON text (see the [`event` module docs](crate::event)).
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(256);
        self.write(&mut out);
        out
    }

    /// The length in bytes of [`Detail::to_json`], without building it.
    pub fn json_len(&self) -> usize {
        let mut counter = Counter(0);
        self.write(&mut counter);
        counter.0
    }

    fn write<O: Out>(&self, out: &mut O) {
        out.push("{\"table\":");
        write_str(out, &self.table);
        out.push(",\"eventName\":\"");
        out.push(self.event_name.as_str());
        out.push("\",\"keys\":");
        write_image(out, &self.keys);
        if !self.images_omitted {
            out.push(",\"oldImage\":");
            write_opt_image(out, self.old_image.as_ref());
            out.push(",\"newImage\":");
            write_opt_image(out, self.new_image.as_ref());
        }
        out.push(",\"changed\":[");
        for (i, name) in self.changed.iter().enumerate() {
            if i > 0 {
                out.push(",");
            }
            write_str(out, name);
        }
        out.push("],\"expired\":");
        out.push(if self.expired { "true" } else { "false" });
        out.push(",\"sequenceNumber\":");
        write_str(out, &self.sequence_number);
        out.push(",\"approximateCreationTime\":");
        match self.approximate_creation_time {
            Some(time) => {
                out.push("\"");
                out.push(&rfc3339(time));
                out.push("\"");
            }
            None => out.push("null"),
        }
        out.push(",\"imagesOmitted\":");
        out.push(if self.images_omitted { "true" } else { "false" });
        out.push("}");
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction]Z`, the fraction without trailing zeros.
pub(super) fn rfc3339(time: CreationTime) -> String {
    crate::time::format_utc(time.seconds, time.nanos, crate::time::Fraction::Trimmed)
}

pub(super) trait Out {
    fn push(&mut self, s: &str);
    fn push_base64(&mut self, bytes: &[u8]);
}

impl Out for String {
    fn push(&mut self, s: &str) {
        self.push_str(s);
    }

    fn push_base64(&mut self, bytes: &[u8]) {
        base64::engine::general_purpose::STANDARD.encode_string(bytes, self);
    }
}

struct Counter(usize);

impl Out for Counter {
    fn push(&mut self, s: &str) {
        self.0 += s.len();
    }

    fn push_base64(&mut self, bytes: &[u8]) {
        // 4 characters per started group of 3 bytes, padded.
        self.0 += bytes.len().div_ceil(3) * 4;
    }
}

pub(super) fn write_str<O: Out>(out: &mut O, s: &str) {
    out.push("\"");
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escaped = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0x08 => Some("\\b"),
            0x0c => Some("\\f"),
            0x00..=0x1f => None,
            _ => continue,
        };
        // `i` is at an ASCII byte, so both slices are on char boundaries.
        out.push(&s[start..i]);
        match escaped {
            Some(escaped) => out.push(escaped),
            None => out.push(&format!("\\u{b:04x}")),
        }
        start = i + 1;
    }
    out.push(&s[start..]);
    out.push("\"");
}

fn write_opt_image<O: Out>(out: &mut O, image: Option<&Image>) {
    match image {
        Some(image) => write_image(out, image),
        None => out.push("null"),
    }
}

fn write_image<O: Out>(out: &mut O, image: &Image) {
    // An image iterates by name.
    write_entries(out, image.iter());
}

/// Writes a map's entries, given in name order.
fn write_entries<'a, O: Out>(out: &mut O, entries: impl Iterator<Item = (&'a str, &'a Value)>) {
    out.push("{");
    for (i, (name, value)) in entries.enumerate() {
        if i > 0 {
            out.push(",");
        }
        write_str(out, name);
        out.push(":");
        write_value(out, value);
    }
    out.push("}");
}

fn write_value<O: Out>(out: &mut O, value: &Value) {
    match value {
        Value::S(s) => {
            out.push("{\"S\":");
            write_str(out, s);
        }
        Value::N(n) => {
            out.push("{\"N\":");
            write_str(out, n);
        }
        Value::B(b) => {
            out.push("{\"B\":\"");
            out.push_base64(b);
            out.push("\"");
        }
        Value::Bool(b) => out.push(if *b { "{\"BOOL\":true" } else { "{\"BOOL\":false" }),
        Value::Null(b) => out.push(if *b { "{\"NULL\":true" } else { "{\"NULL\":false" }),
        Value::M(m) => {
            out.push("{\"M\":");
            let mut names: Vec<(&str, &Value)> = m.iter().map(|(name, value)| (name.as_str(), value)).collect();
            names.sort_unstable_by(|a, b| a.0.cmp(b.0));
            write_entries(out, names.into_iter());
        }
        Value::L(l) => {
            out.push("{\"L\":[");
            for (i, v) in l.iter().enumerate() {
                if i > 0 {
                    out.push(",");
                }
                write_value(out, v);
            }
            out.push("]");
        }
        Value::Ss(items) | Value::Ns(items) => {
            out.push(if matches!(value, Value::Ss(_)) {
                "{\"SS\":["
            } else {
                "{\"NS\":["
            });
            for (i, s) in items.iter().enumerate() {
                if i > 0 {
                    out.push(",");
                }
                write_str(out, s);
            }
            out.push("]");
        }
        Value::Bs(items) => {
            out.push("{\"BS\":[");
            for (i, b) in items.iter().enumerate() {
                if i > 0 {
                    out.push(",");
                }
                out.push("\"");
                out.push_base64(b);
                out.push("\"");
            }
            out.push("]");
        }
    }
    out.push("}");
}
