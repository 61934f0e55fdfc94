//! What a record is to the router: its events, or the pipeline's own set
//! update (which has none) ([`Classification`]); worked out ahead on
//! replay's reading thread ([`classify_ahead`]) or when the router asks
//! ([`classify_received`]).

use super::{changed_iter, events, route_event, route_matches, routes_taking, table_of, Event, EventError};
use crate::config::{Config, RouteEvent, TableConfig};
use crate::record::{ChangeRecord, Received};
use crate::value::Attrs;

/// What classifying a record found (and what [`classify_ahead`] keeps for
/// [`classify_received`]).
#[derive(Debug)]
pub struct Classification {
    /// The record's events, or why it could not be classified.
    pub events: Result<Vec<Event>, EventError>,
    /// Whether it is a MODIFY that changed nothing but what the pipeline
    /// owns on a node (its edge set, marker and versions): the indexer's
    /// own write, which has no events.
    pub pipeline_own: bool,
    /// Whether the router notes the change in the ledger (see
    /// [`crate::ledger`]): of a table read from Kinesis, with events or of
    /// an item the reaper may delete (any item of a reaped table but a
    /// node). The pipeline's own set updates are neither: they have no
    /// events, and are of nodes.
    pub noted: bool,
    /// The change's ledger entry, when [`classify_ahead`] worked it out (a
    /// noted change); `None`: the router makes it
    /// ([`crate::ledger::entry_of`]) if it notes the change.
    /// Boxed: most classifications have none, and are kept ahead by the
    /// thousand.
    pub entry: Option<Box<crate::ledger::Entry>>,
}

impl Classification {
    /// A change of `table` with these `keys`: its `events`, whether it is
    /// the pipeline's own write, and so whether it is noted; no entry yet.
    fn new<I: Attrs>(
        config: &Config,
        table: &TableConfig,
        keys: &I,
        events: Result<Vec<Event>, EventError>,
        pipeline_own: bool,
    ) -> Classification {
        let noted = table.stream.is_unordered()
            && (events.as_ref().is_ok_and(|e| !e.is_empty()) || crate::ledger::reaper_reads(config, table, keys));
        Classification {
            events,
            pipeline_own,
            noted,
            entry: None,
        }
    }
}

/// [`classify`](super::classify)s a received record of `table`: takes what
/// [`classify_ahead`] found for it with this config, if it did, else
/// classifies `record` (the received record's own).
pub fn classify_received<I: Attrs>(
    config: &Config,
    table: &TableConfig,
    received: &Received<'_, I>,
    record: &ChangeRecord<I>,
) -> Classification {
    if let Some(classified) = received.ahead.take::<_, Classification>(config) {
        return classified;
    }
    if !received.has_whole_images() && needs_images(config, table, record) {
        // Glanced at: read whole for the event's detail.
        let Some(whole) = received.read_whole() else {
            return classification(config, table, record);
        };
        return match &whole.record {
            Ok(record) => classification(config, table, record),
            Err(error) => {
                let events = Err(EventError::Unreadable {
                    sequence_number: record.sequence_number.clone(),
                    source: error.clone(),
                });
                Classification::new(config, table, &record.keys, events, false)
            }
        };
    }
    classification(config, table, record)
}

/// Whether [`classify`](super::classify)'s answer for `record` may depend on its images
/// (beyond its keys): when a route of its table takes its kind of change
/// and its keys, or cannot tell. Otherwise the answer is no event, images
/// or not.
fn needs_images<I: Attrs>(config: &Config, table: &TableConfig, record: &ChangeRecord<I>) -> bool {
    routes_taking(config, table, route_event(record))
        .any(|route| route_matches(config, table, route, record).unwrap_or(true))
}

/// Classifies a received record ahead of the consumer that will ask
/// [`classify_received`] for its events (replay's reading thread does, while
/// the handling thread is busy), with its ledger entry when the router
/// notes it ([`Classification::entry`]). Nothing for a record that is
/// unparsable or of no table of the config.
pub fn classify_ahead<I: Attrs>(config: &Config, received: &Received<'_, I>) {
    classify_ahead_with(config, received, None);
}

/// [`classify_ahead`], given the record's ledger entry when the caller has
/// made it already ([`crate::ledger::entry_of`] of the record), so as not
/// to make it again.
pub fn classify_ahead_with<I: Attrs>(config: &Config, received: &Received<'_, I>, entry: Option<crate::ledger::Entry>) {
    let Ok(record) = &received.record else { return };
    if let Ok(table) = table_of(config, record) {
        let mut classified = classification(config, table, record);
        // Only a change the router notes needs its entry.
        if classified.noted {
            classified.entry = entry.or_else(|| crate::ledger::entry_of(table, record)).map(Box::new);
        }
        received.ahead.keep(config, classified);
    }
}

/// [`classify`](super::classify), saying whether the record is the pipeline's own write.
pub(super) fn classification<I: Attrs>(
    config: &Config,
    table: &TableConfig,
    record: &ChangeRecord<I>,
) -> Classification {
    if route_event(record) == RouteEvent::Modify
        && record.table.as_deref().is_none_or(|name| *name == *table.name)
        && only_pipeline_changes(config, table, record)
    {
        return Classification::new(config, table, &record.keys, Ok(Vec::new()), true);
    }
    Classification::new(config, table, &record.keys, events(config, table, record), false)
}

/// Whether a MODIFY changed nothing but what the pipeline owns (the edge
/// set attribute, the completeness marker and the edge mark of the table's
/// edge set): the indexer's own writes, which are derived data, not domain
/// changes.
fn only_pipeline_changes<I: Attrs>(config: &Config, table: &TableConfig, record: &ChangeRecord<I>) -> bool {
    let Some(set) = config.edge_set(&table.name) else {
        return false;
    };
    let (Some(old), Some(new)) = (&record.old, &record.new) else {
        return false;
    };
    let mut changed = changed_iter(Some(old), Some(new)).peekable();
    changed.peek().is_some()
        && changed.all(|name| {
            name == set.attribute || name == set.complete_attribute || crate::version::is_version_attribute(name)
        })
}
