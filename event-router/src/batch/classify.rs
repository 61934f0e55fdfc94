//! Classification: each record of a batch as `Handled` (poison marked),
//! and the events it becomes, each sized within the PutEvents budget
//! (without its images if need be).

use model::event::{self, Event, Oversized};
use model::poison::{Cause, Poison};
use model::record::{RawJson, Received};
use model::settlement::{table_name, Groups, Handled};
use model::validate;
use model::value::Attrs;

use super::{Pending, Router, RouterStats};
use crate::publish::{Entry, Publisher};
use aws_kit::quarantine::Quarantine;

/// The records of a batch as they are read: each as `Handled` (poison
/// marked), and the events it becomes. What it keeps of a record outlives
/// the record, so that a record can be let go once classified.
#[derive(Default)]
pub(super) struct Classified<'a> {
    groups: Groups,
    pub(super) handled: Vec<Handled<'a>>,
    pub(super) pending: Vec<Pending>,
    /// The ledger entry of each record to note, of a table read from
    /// Kinesis, that is not poison (by its place in `handled`): see
    /// `model::ledger`.
    pub(super) ledger: Vec<(usize, model::ledger::Entry)>,
}

impl Classified<'_> {
    /// Ready for a batch of `records` records (each is handled once).
    pub(super) fn with_capacity(records: usize) -> Self {
        Classified {
            groups: Groups::with_capacity(records),
            handled: Vec::with_capacity(records),
            ..Classified::default()
        }
    }
}

impl<P: Publisher, Q: Quarantine> Router<P, Q> {
    /// Classifies the record at `position`, whose text is `raw`: as
    /// `Handled` (poison marked), and the events to send.
    pub(super) fn classify<'a, I: Attrs>(
        &self,
        into: &mut Classified<'a>,
        stats: &mut RouterStats,
        position: usize,
        received: &Received<'_, I>,
        raw: RawJson<'a>,
    ) {
        let config = &*self.config;
        let budget = config.events.max_request_bytes;
        let handled = &mut into.handled;
        let sequence_number = received.sequence_number.clone();
        let record = match &received.record {
            Ok(record) => record,
            Err(error) => {
                stats.unparsable += 1;
                let poison = Poison::new(sequence_number.as_deref(), Cause::Unreadable(error.clone()));
                handled.push(lone(position, sequence_number, None, raw, poison));
                return;
            }
        };
        if let Some(created) = record.created {
            stats.oldest_created = Some(stats.oldest_created.map_or(created, |o| o.min(created)));
        }
        let table = match event::table_of(config, record) {
            Ok(table) => table,
            Err(error) => {
                let poison = Poison::new(Some(&record.sequence_number), Cause::Unroutable(error));
                handled.push(lone(position, sequence_number, record.table.clone(), raw, poison));
                return;
            }
        };
        // What DynamoDB never streams is poison, as the indexer finds.
        if let Some(invalid) = validate::poison(received, table) {
            stats.unparsable += 1;
            let poison = Poison::new(Some(&record.sequence_number), Cause::Invalid(invalid));
            handled.push(lone(
                position,
                sequence_number,
                Some(table_name(record, table)),
                raw,
                poison,
            ));
            return;
        }
        let group = into.groups.of(table, record);
        let mut poison: Option<Poison> = None;
        let classified = event::classify_received(config, table, received, record);
        // Noted (see `model::ledger`): a change with events (its repeat
        // publishes nothing) and every change of an item the reaper may
        // delete (see `model::ledger::reaper_reads`);
        // a poison record is not.
        let event::Classification {
            events, entry, noted, ..
        } = classified;
        match events {
            Err(error) => poison = Some(Poison::new(Some(&record.sequence_number), Cause::Unroutable(error))),
            Ok(events) => {
                for event in events {
                    stats.events += 1;
                    match fit(event, budget, stats) {
                        Ok((entry, size)) => into.pending.push(Pending {
                            record: handled.len(),
                            group,
                            entry,
                            size,
                        }),
                        Err(oversized) => {
                            Poison::add(&mut poison, Some(&record.sequence_number), Cause::Oversized(oversized))
                        }
                    }
                }
            }
        }
        if poison.is_none() && noted {
            if let Some(entry) = entry.map(|e| *e).or_else(|| model::ledger::entry_of(table, record)) {
                into.ledger.push((handled.len(), entry));
            }
        }
        handled.push(Handled {
            position,
            sequence_number,
            table: Some(table_name(record, table)),
            group: Some(group),
            raw,
            poison,
            unfinished: None,
        });
    }
}

/// A record that stands alone (unreadable, or of no declared table): poison.
fn lone(
    position: usize,
    sequence_number: Option<String>,
    table: Option<model::record::SharedText>,
    raw: RawJson<'_>,
    poison: Poison,
) -> Handled<'_> {
    Handled {
        position,
        sequence_number,
        table,
        group: None,
        raw,
        poison: Some(poison),
        unfinished: None,
    }
}

/// The entry of an event and its size, within `budget`: without its images
/// if need be; an error naming the sizes when not even that fits.
fn fit(event: Event, budget: usize, stats: &mut RouterStats) -> Result<(Entry, usize), Oversized> {
    let mut event = event;
    // Serialized once (and once more only when the images must go).
    let mut detail = event.detail_json();
    let mut size = event::entry_size_with(&event, detail.len());
    if size > budget {
        let full = size;
        event = event::without_images(event);
        detail = event.detail_json();
        size = event::entry_size_with(&event, detail.len());
        if size > budget {
            return Err(Oversized {
                detail_type: event.detail_type,
                bytes: size,
                full,
                budget,
            });
        }
        stats.images_omitted += 1;
        tracing::info!(sequence_number = %event.detail.sequence_number, detail_type = %event.detail_type, bytes = full, budget, "event sent without its images");
    }
    Ok((
        Entry {
            source: event.source,
            detail_type: event.detail_type,
            detail,
        },
        size,
    ))
}
