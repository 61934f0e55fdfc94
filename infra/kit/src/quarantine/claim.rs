//! Claim checks: a quarantined record too large for one SQS message is kept
//! whole as an S3 object, and the message carries where (a [`Claim`]).
//!
//! Objects are named `CONSUMER/TABLE/SEQUENCE-NONCE.json`
//! (`unknown-table`, `no-sequence` when the record names none), so a
//! function's role may write only under its own consumer's prefix. The body
//! is the record's JSON exactly as delivered.

use std::sync::atomic::{AtomicU64, Ordering};

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;
use model::fault::Fault;
use serde::{Deserialize, Serialize};

use super::QuarantineEntry;
use crate::clock::{Clock, SystemClock};
use crate::error::sdk_fault;

/// Where a quarantined record is kept whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    pub bucket: String,
    pub key: String,
    /// The record's size in bytes.
    pub bytes: usize,
}

/// The bucket claim checks go to.
#[derive(Debug, Clone)]
pub struct ClaimBucket {
    client: Client,
    bucket: String,
}

/// The object key of an entry: unique per call (the time `clock` gives, and a
/// count of the calls in this process).
pub fn object_key(entry: &QuarantineEntry, clock: &dyn Clock) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nonce = format!(
        "{}{:04}",
        clock.now_ms(),
        COUNTER.fetch_add(1, Ordering::Relaxed) % 10_000
    );
    format!(
        "{}/{}/{}-{nonce}.json",
        entry.consumer,
        entry.table.as_deref().unwrap_or("unknown-table"),
        entry.sequence_number.as_deref().unwrap_or("no-sequence"),
    )
}

impl ClaimBucket {
    pub fn new(client: Client, bucket: impl Into<String>) -> ClaimBucket {
        ClaimBucket {
            client,
            bucket: bucket.into(),
        }
    }

    /// Keeps the entry's whole record; the claim says where.
    pub async fn put(&self, entry: &QuarantineEntry) -> Result<Claim, Fault> {
        let key = object_key(entry, &SystemClock);
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(&key)
            .content_type("application/json")
            .body(ByteStream::from(entry.raw.as_bytes().to_vec()))
            .send()
            .await
            .map_err(|e| {
                sdk_fault(
                    &format!("PutObject of {} to s3://{}/{key}", entry.describe(), self.bucket),
                    e,
                )
            })?;
        Ok(Claim {
            bucket: self.bucket.clone(),
            key,
            bytes: entry.raw.len(),
        })
    }
}

/// The whole record a claim names.
pub async fn fetch(client: &Client, claim: &Claim) -> Result<String, Fault> {
    let place = format!("s3://{}/{}", claim.bucket, claim.key);
    let output = client
        .get_object()
        .bucket(&claim.bucket)
        .key(&claim.key)
        .send()
        .await
        .map_err(|e| sdk_fault(&format!("GetObject of {place}"), e))?;
    let bytes = output
        .body
        .collect()
        .await
        .map_err(|e| Fault::transient(format!("reading {place}: {e}")))?
        .into_bytes();
    String::from_utf8(bytes.to_vec()).map_err(|_| Fault::refused(format!("{place} is not UTF-8 text")))
}

/// Deletes the object a claim names (after its record was redriven).
pub async fn remove(client: &Client, claim: &Claim) -> Result<(), Fault> {
    client
        .delete_object()
        .bucket(&claim.bucket)
        .key(&claim.key)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| sdk_fault(&format!("DeleteObject of s3://{}/{}", claim.bucket, claim.key), e))
}
