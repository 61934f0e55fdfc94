//! Repeats of a Kinesis data stream, which may deliver a change more than
//! once: a change whose events were published publishes nothing again
//! (see `model::ledger`).
//!
//! Before publishing, the batch's changes of Kinesis-read tables are
//! looked up: a change seen earlier in the batch, or one the ledger holds,
//! is a repeat, and its events are dropped (counted in
//! `RouterStats::repeats`). After publishing, every such change whose
//! record is finished is noted. A change whose events went out but whose
//! note failed is left unfinished: Lambda retries it, and its events go
//! out again (the one window of a second delivery). A change older than
//! one already published of the same item is not a repeat: it is
//! published, with its own creation time.

use std::collections::{BTreeSet, HashSet};

use aws_kit::quarantine::Quarantine;
use aws_kit::retry;
use model::ledger::Entry;
use model::settlement::Handled;

use super::{Pending, Router, RouterStats};
use crate::publish::Publisher;

impl<P: Publisher, Q: Quarantine> Router<P, Q> {
    /// Drops the events of the records that are repeats; returns the
    /// entries to note once published. When the ledger cannot be read,
    /// the records it was asked about publish nothing and are unfinished.
    pub(super) async fn drop_repeats(
        &self,
        ledger: Vec<(usize, Entry)>,
        handled: &mut [Handled<'_>],
        pending: &mut Vec<Pending>,
        stats: &mut RouterStats,
    ) -> Vec<(usize, Entry)> {
        if ledger.is_empty() {
            return ledger;
        }
        let mut dropped: BTreeSet<usize> = BTreeSet::new();
        let mut seen: HashSet<(&str, &model::Version)> = HashSet::with_capacity(ledger.len());
        let mut fresh: Vec<usize> = Vec::with_capacity(ledger.len());
        for (i, (record, entry)) in ledger.iter().enumerate() {
            if seen.insert((entry.item.as_str(), &entry.version)) {
                fresh.push(i);
            } else {
                dropped.insert(*record);
                stats.repeats += 1;
            }
        }
        let mut kept: Vec<(usize, Entry)> = Vec::with_capacity(fresh.len());
        if let Some(store) = &self.ledger {
            let entries: Vec<Entry> = fresh.iter().map(|&i| ledger[i].1.clone()).collect();
            match retry::call(&self.options.backoff, |_| store.holds(&entries)).await {
                Ok(held) => {
                    for (&i, held) in fresh.iter().zip(held) {
                        let (record, entry) = &ledger[i];
                        if held {
                            dropped.insert(*record);
                            stats.repeats += 1;
                        } else {
                            kept.push((*record, entry.clone()));
                        }
                    }
                }
                Err(fault) => {
                    let fault = fault.context(format!(
                        "reading the ledger table `{}`",
                        self.config.events.ledger_table
                    ));
                    for &i in &fresh {
                        let record = ledger[i].0;
                        dropped.insert(record);
                        if let Some(handled) = handled.get_mut(record) {
                            handled.unfinished.get_or_insert_with(|| fault.clone());
                        }
                    }
                }
            }
        } else {
            kept = fresh.iter().map(|&i| ledger[i].clone()).collect();
        }
        pending.retain(|p| !dropped.contains(&p.record));
        kept
    }

    /// Notes the changes of finished records in the ledger; when that
    /// fails, they are left unfinished.
    pub(super) async fn note_published(&self, ledger: Vec<(usize, Entry)>, handled: &mut [Handled<'_>]) {
        let Some(store) = &self.ledger else { return };
        let (records, entries): (Vec<usize>, Vec<Entry>) = ledger
            .into_iter()
            .filter(|(record, _)| handled.get(*record).is_some_and(|h| h.unfinished.is_none()))
            .unzip();
        if entries.is_empty() {
            return;
        }
        if let Err(fault) = retry::call(&self.options.backoff, |_| store.note(&entries)).await {
            let fault = fault.context(format!(
                "noting published changes in the ledger table `{}`",
                self.config.events.ledger_table
            ));
            for record in records {
                if let Some(handled) = handled.get_mut(record) {
                    handled.unfinished.get_or_insert_with(|| fault.clone());
                }
            }
        }
    }
}
