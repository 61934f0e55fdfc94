//! The quarantine on an SQS queue (a standard queue; typically the
//! indexer's dead-letter queue, alarmed on its depth).
//!
//! Each [`QuarantineEntry`] becomes one message whose body is the entry as
//! JSON (it deserializes back into a `QuarantineEntry`). Entries go out in
//! `SendMessageBatch` calls of at most [`MAX_BATCH_ENTRIES`] messages and at
//! most the message size limit in total. An entry whose JSON would pass the
//! limit has its `raw` record cut short, and the body then says so with
//! `"raw_truncated": true` and `"raw_bytes"` (the whole record's size); the
//! record's sequence number, table and reason are always kept whole. A
//! message SQS does not accept (a failed batch entry, a refused call) makes
//! `put` fail, so the records are retried rather than lost.

use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use aws_sdk_sqs::Client;
use model::fault::Fault;
use serde::Serialize;

use super::{Quarantine, QuarantineEntry};
use crate::error::sdk_fault;

/// SQS's long-standing limit on one message, and on one batch in total (256 KiB).
pub const MAX_MESSAGE_BYTES: usize = 262_144;

/// At most this many messages in one `SendMessageBatch`.
pub const MAX_BATCH_ENTRIES: usize = 10;

/// The quarantine on an SQS queue.
#[derive(Debug, Clone)]
pub struct SqsQuarantine {
    client: Client,
    queue_url: String,
    max_message_bytes: usize,
}

impl SqsQuarantine {
    pub fn new(client: Client, queue_url: impl Into<String>) -> SqsQuarantine {
        SqsQuarantine {
            client,
            queue_url: queue_url.into(),
            max_message_bytes: MAX_MESSAGE_BYTES,
        }
    }

    /// Uses another message size limit (a queue configured lower, or a
    /// region that accepts more). Also the limit of one batch in total.
    pub fn with_max_message_bytes(mut self, bytes: usize) -> SqsQuarantine {
        self.max_message_bytes = bytes;
        self
    }

    pub fn queue_url(&self) -> &str {
        &self.queue_url
    }

    async fn send_batch(&self, batch: &[(usize, &QuarantineEntry, String)]) -> Result<Vec<String>, Fault> {
        let mut request = self.client.send_message_batch().queue_url(&self.queue_url);
        for (id, _, body) in batch {
            let entry = SendMessageBatchRequestEntry::builder()
                .id(id.to_string())
                .message_body(body)
                .build()
                .map_err(|e| Fault::refused(format!("SendMessageBatch to {}: {e}", self.queue_url)))?;
            request = request.entries(entry);
        }
        let output = request.send().await.map_err(|e| {
            sdk_fault(
                &format!("SendMessageBatch of {} entries to {}", batch.len(), self.queue_url),
                e,
            )
        })?;
        let mut problems = Vec::new();
        for (id, entry, _) in batch {
            let id = id.to_string();
            if output.successful.iter().any(|s| s.id == id) {
                continue;
            }
            match output.failed.iter().find(|f| f.id == id) {
                Some(failed) => problems.push(format!(
                    "{}: {} ({}): {}",
                    describe(entry),
                    failed.code,
                    if failed.sender_fault {
                        "sender's fault"
                    } else {
                        "not the sender's fault"
                    },
                    failed.message.as_deref().unwrap_or("no message")
                )),
                None => problems.push(format!(
                    "{}: SendMessageBatch reported no result for it",
                    describe(entry)
                )),
            }
        }
        Ok(problems)
    }
}

/// Names an entry in an error (never its contents).
fn describe(entry: &QuarantineEntry) -> String {
    match &entry.sequence_number {
        Some(seq) => format!("record {seq}"),
        None => "record without sequence number".to_owned(),
    }
}

impl Quarantine for SqsQuarantine {
    async fn put(&self, entries: Vec<QuarantineEntry>) -> Result<(), Fault> {
        let mut messages = Vec::with_capacity(entries.len());
        for (id, entry) in entries.iter().enumerate() {
            messages.push((id, entry, message_body(entry, self.max_message_bytes)?));
        }
        let mut problems = Vec::new();
        for batch in batches(&messages, self.max_message_bytes) {
            problems.extend(self.send_batch(batch).await?);
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Fault::transient(format!(
                "{} of {} entries not sent to {}: {}",
                problems.len(),
                entries.len(),
                self.queue_url,
                problems.join("; ")
            )))
        }
    }
}

/// Splits messages into batches of at most [`MAX_BATCH_ENTRIES`] and at most
/// `max_bytes` of bodies in total (each body is at most `max_bytes` itself).
fn batches<T>(messages: &[(usize, T, String)], max_bytes: usize) -> Vec<&[(usize, T, String)]> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, (_, _, body)) in messages.iter().enumerate() {
        if i > start && (i - start == MAX_BATCH_ENTRIES || bytes + body.len() > max_bytes) {
            out.push(&messages[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += body.len();
    }
    if start < messages.len() {
        out.push(&messages[start..]);
    }
    out
}

/// The message body of an entry.
#[derive(Serialize)]
struct Body<'a> {
    consumer: &'a str,
    sequence_number: Option<&'a str>,
    table: Option<&'a str>,
    reason: &'a str,
    raw: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    raw_truncated: bool,
    /// The whole raw record's size in bytes, when `raw` was cut short.
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_bytes: Option<usize>,
}

fn render(entry: &QuarantineEntry, raw: &str, truncated: bool) -> Result<String, Fault> {
    let body = Body {
        consumer: &entry.consumer,
        sequence_number: entry.sequence_number.as_deref(),
        table: entry.table.as_deref(),
        reason: &entry.reason,
        raw,
        raw_truncated: truncated,
        raw_bytes: truncated.then_some(entry.raw.len()),
    };
    let json = serde_json::to_string(&body)
        .map_err(|e| Fault::refused(format!("{}: cannot serialize the entry: {e}", describe(entry))))?;
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

/// The JSON body for `entry`, at most `max_bytes` long: `raw` is cut short
/// (at a character boundary) and flagged when the whole entry does not fit.
pub fn message_body(entry: &QuarantineEntry, max_bytes: usize) -> Result<String, Fault> {
    let whole = render(entry, &entry.raw, false)?;
    if whole.len() <= max_bytes {
        return Ok(whole);
    }
    let fits = |len: usize| -> Result<Option<String>, Fault> {
        let body = render(entry, prefix(&entry.raw, len), true)?;
        Ok((body.len() <= max_bytes).then_some(body))
    };
    let Some(mut best) = fits(0)? else {
        return Err(Fault::refused(format!(
            "{}: the entry is over {max_bytes} bytes even without its raw record",
            describe(entry)
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

    fn entry(raw: String) -> QuarantineEntry {
        QuarantineEntry {
            consumer: "stream-indexer".to_owned(),
            sequence_number: Some("4200".to_owned()),
            table: Some("issues".to_owned()),
            reason: "index `issue-attrib`: bad".to_owned(),
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
    fn batches_respect_count_and_size() {
        let messages: Vec<(usize, (), String)> = (0..23).map(|i| (i, (), "x".repeat(100))).collect();
        let sizes: Vec<usize> = batches(&messages, 1_000_000).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, [10, 10, 3]);
        let sizes: Vec<usize> = batches(&messages, 350).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, [3, 3, 3, 3, 3, 3, 3, 2]);
        let none: Vec<(usize, (), String)> = Vec::new();
        assert!(batches(&none, 10).is_empty());
    }
}
