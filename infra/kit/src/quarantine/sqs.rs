//! The quarantine on an SQS queue (a standard queue; typically the
//! indexer's dead-letter queue, alarmed on its depth).
//!
//! Each [`QuarantineEntry`] becomes one message whose body is the entry as
//! JSON ([`super::body`]). Entries go out in `SendMessageBatch` calls of at
//! most [`MAX_BATCH_ENTRIES`] messages and at most the message size limit in
//! total. An entry whose JSON would pass the limit is kept whole in the
//! claim-check bucket ([`super::claim`]), which the template and `streamdex
//! up` create, and its message names the object; only a quarantine set up
//! without a bucket falls back to cutting the record short (flagged in the
//! body). A message SQS does not accept, or an object S3 does not store,
//! makes `put` fail, so the records are retried rather than lost.

use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use aws_sdk_sqs::Client;
use model::fault::Fault;

use super::body::{claimed_body, message_body, whole_body};
use super::claim::ClaimBucket;
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
    claims: Option<ClaimBucket>,
}

impl SqsQuarantine {
    pub fn new(client: Client, queue_url: impl Into<String>) -> SqsQuarantine {
        SqsQuarantine {
            client,
            queue_url: queue_url.into(),
            max_message_bytes: MAX_MESSAGE_BYTES,
            claims: None,
        }
    }

    /// Keeps records too large for a message in `bucket` (claim checks).
    pub fn with_claims(mut self, bucket: ClaimBucket) -> SqsQuarantine {
        self.claims = Some(bucket);
        self
    }

    /// The body of `entry`: whole, a claim check, or (without a bucket) cut short.
    async fn body(&self, entry: &QuarantineEntry) -> Result<String, Fault> {
        if let Some(whole) = whole_body(entry, self.max_message_bytes)? {
            return Ok(whole);
        }
        match &self.claims {
            Some(bucket) => claimed_body(entry, &bucket.put(entry).await?),
            None => {
                tracing::warn!(
                    record = %entry.describe(),
                    bytes = entry.raw.len(),
                    "quarantined record cut short: no claim-check bucket is set up"
                );
                message_body(entry, self.max_message_bytes)
            }
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
                    entry.describe(),
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
                    entry.describe()
                )),
            }
        }
        Ok(problems)
    }
}

impl Quarantine for SqsQuarantine {
    async fn put(&self, entries: Vec<QuarantineEntry>) -> Result<(), Fault> {
        let mut messages = Vec::with_capacity(entries.len());
        for (id, entry) in entries.iter().enumerate() {
            messages.push((id, entry, self.body(entry).await?));
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

#[cfg(test)]
mod tests {
    use super::*;

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
