//! A quarantine message's body, both ways: the entry as JSON, written by
//! [`message_body`] and [`claimed_body`], read back by [`Stored::parse`].
//!
//! Three shapes, all with the entry's `consumer`, `sequence_number`,
//! `table` and `reason` whole:
//!
//! - the whole record in `raw` (every entry that fits in one message);
//! - a claim check: `raw` empty and `raw_claim` naming the S3 object that
//!   holds the whole record (an entry over the message limit, with a bucket);
//! - the fallback without a bucket: `raw` cut short, `"raw_truncated": true`
//!   and `raw_bytes` (the whole record's size).

use model::fault::Fault;
use serde::{Deserialize, Serialize};

use super::claim::Claim;
use super::QuarantineEntry;

#[derive(Serialize)]
struct Body<'a> {
    consumer: &'a str,
    sequence_number: Option<&'a str>,
    table: Option<&'a str>,
    reason: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cause: Option<&'a str>,
    raw: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    raw_truncated: bool,
    /// The whole raw record's size in bytes, when `raw` was cut short.
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_claim: Option<&'a Claim>,
}

/// A message body that is not a quarantine entry (the JSON parser's reason).
#[derive(Debug, thiserror::Error)]
#[error("not a streamdex quarantine entry: {0}")]
pub struct UnreadableBody(#[source] serde_json::Error);

/// A message body read back.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Stored {
    #[serde(flatten)]
    pub entry: QuarantineEntry,
    /// Where the whole record is, when `entry.raw` is empty because it did not fit.
    #[serde(default)]
    pub raw_claim: Option<Claim>,
    /// `entry.raw` was cut short (written without a bucket).
    #[serde(default)]
    pub raw_truncated: bool,
    /// The whole record's size when cut short.
    #[serde(default)]
    pub raw_bytes: Option<usize>,
}

impl Stored {
    /// Reads a message body; the error says what is wrong with it.
    pub fn parse(body: &str) -> Result<Stored, UnreadableBody> {
        serde_json::from_str(body).map_err(UnreadableBody)
    }

    /// The whole record's size in bytes.
    pub fn raw_size(&self) -> usize {
        match (&self.raw_claim, self.raw_bytes) {
            (Some(claim), _) => claim.bytes,
            (None, Some(bytes)) => bytes,
            (None, None) => self.entry.raw.len(),
        }
    }
}

fn render(entry: &QuarantineEntry, raw: &str, truncated: bool, claim: Option<&Claim>) -> Result<String, Fault> {
    let body = Body {
        consumer: &entry.consumer,
        sequence_number: entry.sequence_number.as_deref(),
        table: entry.table.as_deref(),
        reason: &entry.reason,
        cause: entry.cause.as_deref(),
        raw,
        raw_truncated: truncated,
        raw_bytes: truncated.then_some(entry.raw.len()),
        raw_claim: claim,
    };
    let json = serde_json::to_string(&body)
        .map_err(|e| Fault::refused(format!("{}: cannot serialize the entry: {e}", entry.describe())))?;
    Ok(escape_for_sqs(json))
}

/// SQS accepts only #x9, #xA, #xD, #x20-#xD7FF, #xE000-#xFFFD and
/// #x10000-#x10FFFF in a body. serde_json already escapes the control
/// characters; U+FFFE and U+FFFF can only occur inside JSON strings, where
/// their `\u` escapes mean the same.
fn escape_for_sqs(json: String) -> String {
    if !json.contains(['\u{FFFE}', '\u{FFFF}']) {
        return json;
    }
    json.replace('\u{FFFE}', "\\ufffe").replace('\u{FFFF}', "\\uffff")
}

/// The body with the whole record, if it is at most `max_bytes` long.
pub fn whole_body(entry: &QuarantineEntry, max_bytes: usize) -> Result<Option<String>, Fault> {
    let whole = render(entry, &entry.raw, false, None)?;
    Ok((whole.len() <= max_bytes).then_some(whole))
}

/// The body of an entry whose record is kept in S3 under `claim`.
pub fn claimed_body(entry: &QuarantineEntry, claim: &Claim) -> Result<String, Fault> {
    render(entry, "", false, Some(claim))
}

/// The JSON body for `entry` without a bucket, at most `max_bytes` long:
/// `raw` is cut short (at a character boundary) and flagged when the whole
/// entry does not fit.
pub fn message_body(entry: &QuarantineEntry, max_bytes: usize) -> Result<String, Fault> {
    if let Some(whole) = whole_body(entry, max_bytes)? {
        return Ok(whole);
    }
    let fits = |len: usize| -> Result<Option<String>, Fault> {
        let body = render(entry, prefix(&entry.raw, len), true, None)?;
        Ok((body.len() <= max_bytes).then_some(body))
    };
    let Some(mut best) = fits(0)? else {
        return Err(Fault::refused(format!(
            "{}: the entry is over {max_bytes} bytes even without its raw record",
            entry.describe()
        )));
    };
    // The longest prefix that fits: escaping makes the size grow unevenly.
    let (mut low, mut high) = (0, entry.raw.len());
    while low < high {
        let mid = low + (high - low).div_ceil(2);
        match fits(mid)? {
            Some(body) => {
                best = body;
                low = mid;
            }
            None => high = mid - 1,
        }
    }
    Ok(best)
}

/// The longest prefix of `s` of at most `len` bytes that ends on a character boundary.
fn prefix(s: &str, len: usize) -> &str {
    let mut end = len.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quarantine::sqs::MAX_MESSAGE_BYTES;

    fn entry(raw: String) -> QuarantineEntry {
        QuarantineEntry {
            consumer: "stream-indexer".to_owned(),
            sequence_number: Some("4200".to_owned()),
            table: Some("issues".to_owned()),
            reason: "index `issue-attrib`: bad".to_owned(),
            cause: None,
            raw,
        }
    }

    #[test]
    fn small_entries_are_sent_whole() {
        let e = entry(r#"{"eventName":"INSERT"}"#.to_owned());
        let body = message_body(&e, MAX_MESSAGE_BYTES).unwrap();
        let back: QuarantineEntry = serde_json::from_str(&body).unwrap();
        assert_eq!(back, e);
        assert!(!body.contains("raw_truncated"));
        // The cause's kind goes with it when known, and reads back.
        let e = QuarantineEntry {
            cause: Some("unplannable".to_owned()),
            ..e
        };
        let back = Stored::parse(&message_body(&e, MAX_MESSAGE_BYTES).unwrap()).unwrap();
        assert_eq!(back.entry, e);
    }

    #[test]
    fn large_raw_records_are_truncated_and_flagged() {
        // Quotes and control characters grow when escaped; multibyte characters must not be split.
        let raw = "\"é\u{1}x".repeat(40_000);
        let e = entry(raw.clone());
        let body = message_body(&e, 10_000).unwrap();
        assert!(body.len() <= 10_000, "{}", body.len());
        assert!(body.len() > 9_990, "{}", body.len());
        let value: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(value["raw_truncated"], true);
        assert_eq!(value["raw_bytes"], raw.len());
        assert_eq!(value["sequence_number"], "4200");
        assert_eq!(value["reason"], e.reason);
        let kept = value["raw"].as_str().unwrap();
        assert!(raw.starts_with(kept) && !kept.is_empty());
    }

    #[test]
    fn an_entry_that_cannot_fit_is_an_error() {
        let mut e = entry("x".to_owned());
        e.reason = "r".repeat(500);
        assert!(message_body(&e, 100).is_err());
    }

    #[test]
    fn characters_sqs_refuses_are_escaped() {
        let e = entry("a\u{FFFF}b\u{FFFE}".to_owned());
        let body = message_body(&e, MAX_MESSAGE_BYTES).unwrap();
        assert!(!body.contains(['\u{FFFE}', '\u{FFFF}']));
        let back: QuarantineEntry = serde_json::from_str(&body).unwrap();
        assert_eq!(back, e);
    }

    #[test]
    fn a_claimed_entry_reads_back_with_its_claim_and_without_its_record() {
        let e = entry("x".repeat(1000));
        let claim = Claim {
            bucket: "b".to_owned(),
            key: "stream-indexer/issues/4200-1.json".to_owned(),
            bytes: 1000,
        };
        let stored = Stored::parse(&claimed_body(&e, &claim).unwrap()).unwrap();
        assert_eq!(stored.raw_claim.as_ref(), Some(&claim));
        assert_eq!(stored.entry.raw, "");
        assert_eq!(stored.raw_size(), 1000);
        assert_eq!(
            (stored.entry.reason, stored.entry.sequence_number),
            (e.reason, e.sequence_number)
        );
        let whole = Stored::parse(&message_body(&entry("{}".to_owned()), 1000).unwrap()).unwrap();
        assert_eq!(
            (whole.raw_size(), whole.raw_claim, whole.raw_truncated),
            (2, None, false)
        );
        assert!(Stored::parse(r#"{"foo":1}"#)
            .unwrap_err()
            .to_string()
            .contains("not a streamdex quarantine entry"));
    }
}
