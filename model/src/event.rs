//! Event classification: which `[[route]]`s a change record matches, and the
//! EventBridge entries it becomes. Pure: no I/O, no AWS SDK; the
//! `event-router` crate publishes what this module decides.
//!
//! # Matching
//!
//! A record of table `T` matches every `[[route]]` with `table = T` when all of:
//!
//! - its kind is one of the route's `events`: `INSERT`, `MODIFY`, `REMOVE`
//!   (a REMOVE not done by the TTL service) or `EXPIRE` (a REMOVE done by the
//!   TTL service, [`ChangeRecord::ttl_expiry`]);
//! - its partition key value is a String starting with the route's
//!   `key_prefix` (when it has one; a non-String partition key never matches);
//! - it is the route's `items`: `all`, or `nodes` / `edges` as
//!   [`crate::edge::classify`] decides with the table's edge set (an edge of
//!   a type the edge set skips is neither).
//!
//! Each matching route gives one [`Event`], in route order.
//!
//! A MODIFY that changed only what the pipeline owns (the table's edge-set
//! attribute and completeness marker: the indexer's own writes) is derived
//! data, not a domain change: it matches no route.
//!
//! # The entry
//!
//! - `Source`: `[events] source`.
//! - `DetailType`: the route's `detail_type`.
//! - `Time`: **not set** (EventBridge stamps the time of the PutEvents call);
//!   the change's own time is `detail.approximateCreationTime`.
//! - `Resources`: none.
//! - `Detail`: a JSON object, described below.
//!
//! # The detail
//!
//! ```json
//! {
//!   "table": "layers",
//!   "eventName": "REMOVE",
//!   "keys": {"pk": {"S": "lyr#eu-west-1.requests"}, "sk": {"S": "lyrVrsn#v12"}},
//!   "oldImage": {"pk": {"S": "lyr#eu-west-1.requests"}, "sk": {"S": "lyrVrsn#v12"}, "ttl": {"N": "1763722740"}},
//!   "newImage": null,
//!   "changed": ["pk", "sk", "ttl"],
//!   "expired": true,
//!   "sequenceNumber": "4421585900000000017450447212",
//!   "approximateCreationTime": "2025-11-21T11:00:00Z",
//!   "imagesOmitted": false
//! }
//! ```
//!
//! - `table`: the source table's name.
//! - `eventName`: the stream's `INSERT`, `MODIFY` or `REMOVE` (a TTL expiry is
//!   a `REMOVE` with `expired: true`).
//! - `keys`, `oldImage`, `newImage`: DynamoDB JSON, exactly as the stream
//!   delivers it, so nothing is lost: a number is its decimal text in a
//!   string (`{"N": "12345678901234567890123456789012345678"}`), binary is
//!   standard base64 with padding (`{"B": "AAH/"}`), sets are arrays
//!   (`SS`, `NS`, `BS`), and `M`/`L`/`BOOL`/`NULL` nest as usual. Map keys
//!   are written sorted. An image the record does not have (an INSERT's old
//!   image, a REMOVE's new image, or any image of a `KEYS_ONLY` stream) is
//!   `null`. When `imagesOmitted` is true both keys are absent.
//! - `changed`: the top-level attribute names whose values differ between
//!   the old and new image (an attribute present in only one counts), sorted
//!   by byte order. For INSERT every attribute of the new image, for REMOVE
//!   every attribute of the old one. Sets compare as sets (order ignored).
//!   A missing image counts as empty.
//! - `expired`: true when the TTL service deleted the item.
//! - `sequenceNumber`: the stream record's `SequenceNumber` (a decimal string).
//! - `approximateCreationTime`: RFC 3339 in UTC (`Z`), with the fraction of a
//!   second when there is one (trailing zeros dropped), or `null` when the
//!   record carried no time.
//! - `imagesOmitted`: true when the entry was too large for the PutEvents
//!   budget and was sent without `oldImage`/`newImage` ([`without_images`]):
//!   read the item instead.
//!
//! Patterns are written against this, e.g. every layer whose partition key
//! starts with `lyr#`:
//!
//! ```json
//! {"source": ["streamdex"], "detail-type": ["Layer Expired"],
//!  "detail": {"keys": {"pk": {"S": [{"prefix": "lyr#"}]}}}}
//! ```
//!
//! # Size
//!
//! [`entry_size`] counts as EventBridge does: the UTF-8 bytes of `Source`,
//! `DetailType` and `Detail` (the JSON exactly as [`Detail::to_json`] writes
//! it). `Resources` is empty and `Time` unset, so nothing else is added.

use crate::config::{Config, RouteConfig, RouteEvent, RouteItems, TableConfig, TableLookupError};
use crate::edge::{self, GraphItem};
use crate::record::{ChangeRecord, CreationTime, EventKind};
use crate::value::{Attr, Attrs, Image, Scalar, Shape};

/// One EventBridge entry to put (`Time` unset, no `Resources`).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// `Source`: `[events] source`.
    pub source: String,
    /// `DetailType`: the route's `detail_type`.
    pub detail_type: String,
    /// `Detail`, typed; [`Detail::to_json`] gives the text to send.
    pub detail: Detail,
}

impl Event {
    /// The `Detail` JSON text to send.
    pub fn detail_json(&self) -> String {
        self.detail.to_json()
    }
}

/// The `Detail` of an [`Event`] (see the [module docs](self) for its JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct Detail {
    pub table: String,
    pub event_name: EventKind,
    pub keys: Image,
    /// `None` when the record has no old image, or when images are omitted.
    pub old_image: Option<Image>,
    /// `None` when the record has no new image, or when images are omitted.
    pub new_image: Option<Image>,
    /// Sorted top-level attribute names that changed.
    pub changed: Vec<String>,
    pub expired: bool,
    pub sequence_number: String,
    pub approximate_creation_time: Option<CreationTime>,
    /// When true, `oldImage` and `newImage` are left out of the JSON.
    pub images_omitted: bool,
}

/// The declared table a record comes from: the one its `eventSourceARN`
/// names, or else the one declared table whose key attributes are exactly
/// the record's keys.
pub fn table_of<'c, I: Attrs>(config: &'c Config, record: &ChangeRecord<I>) -> Result<&'c TableConfig, EventError> {
    config.table_of_record(record).map_err(|e| {
        let sequence_number = record.sequence_number.clone();
        match e {
            TableLookupError::Undeclared(table) => EventError::UnknownTable { sequence_number, table },
            TableLookupError::NoMatch(keys) => EventError::NoTable { sequence_number, keys },
        }
    })
}

/// The route event a record is: its kind, with a TTL REMOVE as `EXPIRE`.
pub fn route_event<I>(record: &ChangeRecord<I>) -> RouteEvent {
    match record.kind {
        EventKind::Insert => RouteEvent::Insert,
        EventKind::Modify => RouteEvent::Modify,
        EventKind::Remove if record.ttl_expiry => RouteEvent::Expire,
        EventKind::Remove => RouteEvent::Remove,
    }
}

/// The routes of `table` that take its changes of `kind`, in route order.
fn routes_taking<'a>(
    config: &'a Config,
    table: &'a TableConfig,
    kind: RouteEvent,
) -> impl Iterator<Item = &'a RouteConfig> + 'a {
    config
        .routes
        .iter()
        .filter(move |route| route.table == table.name && route.events.contains(&kind))
}

/// The events `record` (of `table`) becomes: one per matching route of the
/// table, in route order (see the [module docs](self)).
pub fn classify<I: Attrs>(
    config: &Config,
    table: &TableConfig,
    record: &ChangeRecord<I>,
) -> Result<Vec<Event>, EventError> {
    classification(config, table, record).events
}

/// The events of a record that is not the pipeline's own write.
fn events<I: Attrs>(config: &Config, table: &TableConfig, record: &ChangeRecord<I>) -> Result<Vec<Event>, EventError> {
    if let Some(name) = &record.table {
        if **name != *table.name {
            return Err(EventError::TableMismatch {
                sequence_number: record.sequence_number.clone(),
                record_table: name.to_string(),
                table: table.name.clone(),
            });
        }
    }
    let kind = route_event(record);
    let mut matched: Vec<&RouteConfig> = Vec::new();
    for route in routes_taking(config, table, kind) {
        if route_matches(config, table, route, record)? {
            matched.push(route);
        }
    }
    let Some((last, others)) = matched.split_last() else {
        return Ok(Vec::new());
    };
    let event = |route: &RouteConfig, detail| Event {
        source: config.events.source.clone(),
        detail_type: route.detail_type.clone(),
        detail,
    };
    // One detail, cloned for each route but the last, which takes it.
    let detail = detail(table, record);
    let mut events: Vec<Event> = others.iter().map(|route| event(route, detail.clone())).collect();
    events.push(event(last, detail));
    Ok(events)
}

/// The same event without `oldImage`/`newImage`, flagged `imagesOmitted`:
/// for an entry too large for the PutEvents budget.
pub fn without_images(mut event: Event) -> Event {
    event.detail.old_image = None;
    event.detail.new_image = None;
    event.detail.images_omitted = true;
    event
}

/// The entry's size as EventBridge counts it: UTF-8 bytes of `Source`,
/// `DetailType` and `Detail` (no `Resources`, `Time` unset so no +14).
pub fn entry_size(event: &Event) -> usize {
    entry_size_with(event, event.detail.json_len())
}

/// [`entry_size`] when the `Detail` text is built already: its length in bytes.
pub fn entry_size_with(event: &Event, detail_bytes: usize) -> usize {
    event.source.len() + event.detail_type.len() + detail_bytes
}

fn route_matches<I: Attrs>(
    config: &Config,
    table: &TableConfig,
    route: &RouteConfig,
    record: &ChangeRecord<I>,
) -> Result<bool, EventError> {
    if let Some(prefix) = &route.key_prefix {
        match record.keys.get(&table.partition_key).map(Attr::scalar) {
            Some(Scalar::S(pk)) if pk.starts_with(prefix.as_str()) => {}
            Some(_) => return Ok(false),
            None => {
                return Err(EventError::KeyMissing {
                    sequence_number: record.sequence_number.clone(),
                    attribute: table.partition_key.clone(),
                })
            }
        }
    }
    if route.items == RouteItems::All {
        return Ok(true);
    }
    let set = config.edge_set(&table.name).ok_or_else(|| EventError::NoEdgeSet {
        sequence_number: record.sequence_number.clone(),
        detail_type: route.detail_type.clone(),
        items: route.items.as_str(),
        table: table.name.clone(),
    })?;
    let item = edge::classify(set, table, &record.keys).map_err(|source| EventError::Graph {
        sequence_number: record.sequence_number.clone(),
        source,
    })?;
    Ok(matches!(
        (route.items, item),
        (RouteItems::Nodes, GraphItem::Node { .. }) | (RouteItems::Edges, GraphItem::Edge { .. })
    ))
}

fn detail<I: Attrs>(table: &TableConfig, record: &ChangeRecord<I>) -> Detail {
    Detail {
        table: table.name.clone(),
        event_name: record.kind,
        keys: record.keys.to_image(),
        old_image: record.old.as_ref().map(Attrs::to_image),
        new_image: record.new.as_ref().map(Attrs::to_image),
        changed: changed(record.old.as_ref(), record.new.as_ref()),
        expired: record.ttl_expiry,
        sequence_number: record.sequence_number.clone(),
        approximate_creation_time: record.created,
        images_omitted: false,
    }
}

/// Top-level names whose values differ between `old` and `new` (a missing
/// image is empty), sorted. For an INSERT (no old image) that is every new
/// name; for a REMOVE every old name.
pub fn changed<I: Attrs>(old: Option<&I>, new: Option<&I>) -> Vec<String> {
    changed_iter(old, new).map(str::to_owned).collect()
}

/// The names [`changed`] gives, by name, none allocated: both images'
/// attributes walked once, side by side (a node carries hundreds of
/// per-member versions; looking each one up in the other image cost more
/// than the walk).
fn changed_iter<'i, I: Attrs>(old: Option<&'i I>, new: Option<&'i I>) -> impl Iterator<Item = &'i str> {
    let by_name = |image: Option<&'i I>| image.map(Attrs::by_name).unwrap_or_default().into_iter().peekable();
    let (mut old, mut new) = (by_name(old), by_name(new));
    std::iter::from_fn(move || loop {
        let order = match (old.peek(), new.peek()) {
            (None, None) => return None,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some((a, _)), Some((b, _))) => a.cmp(b),
        };
        match order {
            std::cmp::Ordering::Less => return old.next().map(|(name, _)| name),
            std::cmp::Ordering::Greater => return new.next().map(|(name, _)| name),
            std::cmp::Ordering::Equal => {
                let (Some((name, a)), Some((_, b))) = (old.next(), new.next()) else {
                    return None;
                };
                if !same(a, b) {
                    return Some(name);
                }
            }
        }
    })
}

/// Value equality with sets compared as sets.
fn same<V: Attr>(a: &V, b: &V) -> bool {
    fn same_set<T: Ord>(a: &[T], b: &[T]) -> bool {
        if a.len() != b.len() {
            return false;
        }
        let mut a: Vec<&T> = a.iter().collect();
        let mut b: Vec<&T> = b.iter().collect();
        a.sort_unstable();
        b.sort_unstable();
        a == b
    }
    match (a.shape(), b.shape()) {
        (Shape::Ss(a), Shape::Ss(b)) | (Shape::Ns(a), Shape::Ns(b)) => same_set(a, b),
        (Shape::Bs(a), Shape::Bs(b)) => same_set(a, b),
        (Shape::M(a), Shape::M(b)) => a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same(v, w))),
        (Shape::L(a), Shape::L(b)) => a.len() == b.len() && a.iter().zip(b).all(|(v, w)| same(v, w)),
        _ => a == b,
    }
}

mod classification;
mod error;
mod json;
mod rule;

use classification::classification;
pub use classification::{classify_ahead, classify_ahead_with, classify_received, Classification};
pub use error::{EventError, Oversized};
pub use rule::{pattern, rule_name, RULE_NAME_CHARS};

#[cfg(test)]
mod tests;
