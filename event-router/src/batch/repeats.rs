//! Repeats of a Kinesis data stream, which may deliver a change more than
//! once: a change whose events were published publishes nothing again
//! (see `model::ledger`).
//!
//! Before publishing, the batch's changes of Kinesis-read tables that
//! have events are looked up: a change seen earlier in the batch, or one
//! the ledger holds, is a repeat, and its events are dropped (counted in
//! `RouterStats::repeats`). After publishing, every change of such a table
//! whose record is finished is noted, with events or not (the reaper reads
//! when an item last changed), but the pipeline's own set updates (seen
//! whole: no events, nothing the reaper deletes). A change whose events went out but whose
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
    /// entries to note once published. Only changes with events are looked
    /// up (a repeat of one without has nothing to drop). When the ledger
    /// cannot be read, the records it was asked about publish nothing and
    /// are unfinished.
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
        let mut has_events = vec![false; handled.len()];
        for event in pending.iter() {
            if let Some(has) = has_events.get_mut(event.record) {
                *has = true;
            }
        }
        let has_events = |record: usize| has_events.get(record).copied().unwrap_or(false);
        let mut dropped: BTreeSet<usize> = BTreeSet::new();
        let mut seen: HashSet<(&str, &model::Version), foldhash::fast::RandomState> =
            HashSet::with_capacity_and_hasher(ledger.len(), foldhash::fast::RandomState::default());
        // The first of each change in the batch: to ask the ledger about
        // (it has events), or to note as it is.
        let (mut asked, mut kept): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::with_capacity(ledger.len()));
        for (i, (record, entry)) in ledger.iter().enumerate() {
            if seen.insert((entry.item.as_str(), &entry.version)) {
                if has_events(*record) {
                    asked.push(i);
                } else {
                    kept.push(i);
                }
            } else if has_events(*record) {
                dropped.insert(*record);
                stats.repeats += 1;
            }
        }
        drop(seen);
        let mut ledger: Vec<Option<(usize, Entry)>> = ledger.into_iter().map(Some).collect();
        let mut take = |i: usize| ledger.get_mut(i).and_then(Option::take);
        let mut kept: Vec<(usize, Entry)> = kept.into_iter().filter_map(&mut take).collect();
        let (records, entries): (Vec<usize>, Vec<Entry>) = asked.into_iter().filter_map(&mut take).unzip();
        let Some(store) = self.ledger.as_ref().filter(|_| !entries.is_empty()) else {
            kept.extend(records.into_iter().zip(entries));
            pending.retain(|p| !dropped.contains(&p.record));
            return kept;
        };
        match retry::call(&self.options.backoff, |_| store.holds(&entries)).await {
            Ok(held) => {
                for ((record, entry), held) in records.into_iter().zip(entries).zip(held) {
                    if held {
                        dropped.insert(record);
                        stats.repeats += 1;
                    } else {
                        kept.push((record, entry));
                    }
                }
            }
            Err(fault) => {
                let fault = fault.context(format!(
                    "reading the ledger table `{}`",
                    self.config.events.ledger_table
                ));
                for record in records {
                    dropped.insert(record);
                    if let Some(handled) = handled.get_mut(record) {
                        handled.unfinished.get_or_insert_with(|| fault.clone());
                    }
                }
            }
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
