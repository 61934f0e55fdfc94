//! Local TTL's memory: the TTL deletions the [`sweeper`](super::sweeper)
//! decided on and whose stream records the runner has yet to read.
//!
//! DynamoDB marks the REMOVE record of a TTL deletion with the service's
//! `userIdentity`; a local endpoint's REMOVE of a DeleteItem carries none.
//! So the sweeper notes each deletion here one sweep before it deletes
//! (the note is in the saved checkpoints by then, so a crash cannot lose
//! it), and the
//! stream source ([`super::stream::dynamo::DynamoStreams`]) gives the
//! matching REMOVE record (same table, same key, the same TTL value in its
//! old image) the TTL service's identity, so every consumer, rule and the
//! reaper see what they would see in AWS. The first record that matches
//! pins the entry to its sequence number (the other consumers reading the
//! same shard match the same record, and only it). Entries are kept in the
//! checkpoints file, so a restart still marks them, and dropped once older
//! than the stream's retention (their records are gone by then).

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::age::STREAM_RETENTION_MS;

/// One TTL deletion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expiry {
    pub table: String,
    /// The item's key attributes: (name, type `S`/`N`/`B`, value as
    /// DynamoDB JSON spells it).
    pub key: Vec<(String, String, String)>,
    /// The TTL attribute and the value (N text) it had when deleted.
    pub attribute: String,
    pub ttl: String,
    /// When it was noted (epoch milliseconds).
    pub noted_ms: u64,
    /// Whether the DeleteItem was made (or found the item changed or gone).
    #[serde(default)]
    pub deleted: bool,
    /// The sequence number of its REMOVE record, once read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_number: Option<String>,
}

/// The TTL deletions not yet forgotten. See the module doc.
#[derive(Debug, Default)]
pub struct Expiries {
    entries: Mutex<Vec<Expiry>>,
}

impl Expiry {
    /// The key as [`key_text`].
    pub fn key_text(&self) -> String {
        key_text(self.key.iter().map(|(n, k, v)| (n.as_str(), k.as_str(), v.as_str())))
    }
}

impl Expiries {
    pub fn new(entries: Vec<Expiry>) -> Expiries {
        Expiries {
            entries: Mutex::new(entries),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Expiry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes a deletion to be made; whether it is new (not noted already).
    pub fn add(&self, expiry: Expiry) -> bool {
        let mut entries = self.lock();
        let known = entries
            .iter()
            .any(|e| e.table == expiry.table && e.key == expiry.key && e.ttl == expiry.ttl);
        if !known {
            entries.push(expiry);
        }
        !known
    }

    /// The deletions noted and not yet made.
    pub fn pending(&self) -> Vec<Expiry> {
        self.lock().iter().filter(|e| !e.deleted).cloned().collect()
    }

    /// The deletion of `expiry` was made (or found nothing to delete).
    pub fn made(&self, expiry: &Expiry) {
        for e in self.lock().iter_mut() {
            if e.table == expiry.table && e.key == expiry.key && e.ttl == expiry.ttl {
                e.deleted = true;
            }
        }
    }

    /// Whether the REMOVE record `sequence_number` of `table` with key `key`
    /// is a TTL deletion; `old` gives an attribute of its old image as N text.
    pub fn claim(&self, table: &str, key: &str, sequence_number: &str, old: impl Fn(&str) -> Option<String>) -> bool {
        let mut entries = self.lock();
        if entries
            .iter()
            .any(|e| e.sequence_number.as_deref() == Some(sequence_number) && e.table == table)
        {
            return true;
        }
        let found = entries.iter_mut().find(|e| {
            e.sequence_number.is_none()
                && e.deleted
                && e.table == table
                && e.key_text() == key
                && old(&e.attribute).as_deref() == Some(e.ttl.as_str())
        });
        match found {
            Some(e) => {
                e.sequence_number = Some(sequence_number.to_owned());
                true
            }
            None => false,
        }
    }

    /// Forgets entries older than the stream's retention; whether any went.
    pub fn prune(&self, now_ms: u64) -> bool {
        let mut entries = self.lock();
        let before = entries.len();
        entries.retain(|e| now_ms.saturating_sub(e.noted_ms) <= STREAM_RETENTION_MS);
        entries.len() != before
    }

    pub fn snapshot(&self) -> Vec<Expiry> {
        self.lock().clone()
    }
}

/// A key as text: its attributes as `name=TYPE:value`, sorted by name,
/// joined by newlines (`value` as DynamoDB JSON spells it: N text, B base64).
pub fn key_text<'a>(parts: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>) -> String {
    let mut parts: Vec<_> = parts.into_iter().collect();
    parts.sort_unstable();
    parts
        .iter()
        .map(|(name, kind, value)| format!("{name}={kind}:{value}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expiry(key: &str, ttl: &str) -> Expiry {
        Expiry {
            table: "t".to_owned(),
            key: vec![("pk".to_owned(), "S".to_owned(), key.to_owned())],
            attribute: "expires".to_owned(),
            ttl: ttl.to_owned(),
            noted_ms: 1_000,
            deleted: false,
            sequence_number: None,
        }
    }

    fn old(ttl: &'static str) -> impl Fn(&str) -> Option<String> {
        move |attribute: &str| (attribute == "expires").then(|| ttl.to_owned())
    }

    #[test]
    fn keys_are_text_sorted_by_name() {
        assert_eq!(key_text([("sk", "S", "a"), ("pk", "N", "1")]), "pk=N:1\nsk=S:a");
    }

    #[test]
    fn a_remove_of_the_same_key_and_ttl_is_claimed_and_pinned_to_its_record() {
        let expiries = Expiries::default();
        let noted = expiry("a", "100");
        let key = noted.key_text();
        assert!(expiries.add(noted.clone()));
        assert!(!expiries.add(noted.clone()), "noted once");
        assert!(
            !expiries.claim("t", &key, "4", old("100")),
            "not deleted yet: not its record"
        );
        assert_eq!(expiries.pending(), std::slice::from_ref(&noted));
        expiries.made(&noted);
        assert!(expiries.pending().is_empty());
        assert!(
            !expiries.claim("t", &key, "5", old("101")),
            "another TTL value: another item"
        );
        assert!(!expiries.claim("other", &key, "5", old("100")), "another table");
        assert!(expiries.claim("t", &key, "6", old("100")));
        assert!(
            expiries.claim("t", &key, "6", old("100")),
            "the other consumer reads the same record"
        );
        assert!(
            !expiries.claim("t", &key, "9", old("100")),
            "a later REMOVE of the key is not the TTL's"
        );
    }

    #[test]
    fn old_notes_are_pruned() {
        let expiries = Expiries::default();
        expiries.add(expiry("k", "100"));
        assert!(!expiries.prune(1_000 + STREAM_RETENTION_MS));
        assert!(expiries.prune(1_001 + STREAM_RETENTION_MS));
        assert!(expiries.snapshot().is_empty());
    }
}
