//! Repeats of a Kinesis data stream, which may deliver a change more than
//! once: a change whose events were published publishes nothing again
//! (see `model::ledger`).
//!
//! Before publishing, the batch's changes of Kinesis-read tables that
//! have events are looked up: a change seen earlier in the batch, or one
//! the ledger holds, is a repeat, and its events are dropped (counted in
//! `RouterStats::repeats`). After publishing, the changes classification
//! kept whose records are finished are noted: those with events, and every
//! change of an item the reaper may delete (it reads when an edge last
//! changed: `model::ledger::reaper_reads`); so not the pipeline's own set
//! updates (no events, and of nodes). A change whose events
//! went out but whose note failed is left unfinished: Lambda retries it,
//! and its events go out again (the one window of a second delivery). A
//! change older than one already published of the same item is not a
//! repeat: it is published, with its own creation time.

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
        // The first of each change in the batch is asked about (it has
        // events) or noted as it is; a later one is a repeat.
        let firsts: Vec<bool> = ledger
            .iter()
            .map(|(record, entry)| {
                let first = seen.insert((entry.item.as_str(), &entry.version));
                if !first && has_events(*record) {
                    dropped.insert(*record);
                    stats.repeats += 1;
                }
                first
            })
            .collect();
        drop(seen);
        let (mut records, mut entries, mut kept) = (Vec::new(), Vec::new(), Vec::with_capacity(ledger.len()));
        for ((record, entry), first) in ledger.into_iter().zip(firsts) {
            match (first, has_events(record)) {
                (true, true) => {
                    records.push(record);
                    entries.push(entry);
                }
                (true, false) => kept.push((record, entry)),
                (false, _) => {}
            }
        }
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

    /// Notes the changes of finished records in the ledger, and says how
    /// many it noted; when that fails, they are left unfinished.
    pub(super) async fn note_published(&self, ledger: Vec<(usize, Entry)>, handled: &mut [Handled<'_>]) -> usize {
        let Some(store) = &self.ledger else { return 0 };
        let (records, entries): (Vec<usize>, Vec<Entry>) = ledger
            .into_iter()
            .filter(|(record, _)| handled.get(*record).is_some_and(|h| h.unfinished.is_none()))
            .unzip();
        if entries.is_empty() {
            return 0;
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
            return 0;
        }
        entries.len()
    }
}
