//! Batch semantics of the router: what one Lambda invocation does with its
//! records, and what it reports (`batchItemFailures`). The same rules as the
//! indexer's (`model::settlement`), for events instead of mutations.
//!
//! 1. Every record is parsed ([`model::record::parse_batch`]) and classified
//!    by the config's routes ([`model::event::classify`]): zero or more
//!    events. A record that cannot be read or classified is poison.
//! 2. An event larger than the PutEvents budget (`[events]
//!    max_request_bytes`, counted by [`model::event::entry_size`]) goes
//!    without its images, flagged `imagesOmitted`; one still too large is
//!    poison.
//! 3. Records are grouped by (table, partition key value), in stream order.
//!    The events of the whole batch are packed into PutEvents calls of at
//!    most 10 entries within the budget (`model::pack`); a group's events
//!    go out in stream order: a call holding a later event of a group is
//!    sent only once the call holding its earlier one succeeded. Calls are
//!    in flight at most [`Options::concurrency`] at a time.
//! 4. In one call, entries failing with a retryable code (throttling, an
//!    internal failure) are sent again after a backoff with full jitter
//!    ([`Backoff`]); the attempt count restarts whenever an attempt makes
//!    progress. A call failing as a whole is retried the same way when
//!    transient. A refused entry (`InvalidArgument`, `MalformedDetail`, ...)
//!    makes its record poison, quarantined with the code and message; an
//!    access or missing-bus code fails the record (a deployment error: no
//!    event could go, so nothing is quarantined for it). A resent entry may
//!    land after later events of its group that were in the same call.
//! 5. A record is finished when each of its events is published or refused.
//!    A group stops at its first unfinished record; the batch's failure is
//!    the lowest one; poison before it is quarantined
//!    (`model::settlement`). Lambda retries from the failure,
//!    including events already published: consumers see at least once and
//!    can tell a duplicate by `detail.sequenceNumber` and the detail type.

use std::collections::BTreeMap;
use std::sync::Arc;

use aws_kit::dispatch::dispatch;
use aws_kit::quarantine::Quarantine;
use aws_kit::retry::{Flow, Retry, Step};
use aws_kit::settle::settle;
use model::config::Config;
use model::event::{self, Event};
use model::pack::{self, Limits, SameKey};
use model::record::{self, CreationTime, ParseError, Received};
use model::settlement::{BatchResponse, Groups, Handled};
pub use model::settlement::{Failed, Failure, Quarantined};
use model::{Backoff, Class, Fault};
use serde_json::value::RawValue;

use crate::publish::{entry_class, Entry, EntryResult, Publisher, MAX_ENTRIES};

/// The consumer name quarantine entries carry by default.
pub const CONSUMER: &str = "event-router";

/// How a [`Router`] works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// PutEvents calls in flight at once (at least 1).
    pub concurrency: usize,
    pub backoff: Backoff,
    /// The `consumer` of quarantine entries.
    pub consumer: String,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            concurrency: 8,
            backoff: Backoff::default(),
            consumer: CONSUMER.to_owned(),
        }
    }
}

/// The payload as a whole is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    #[error("the payload is not a Lambda DynamoDB event: {0}")]
    Payload(#[from] ParseError),
}

/// What a batch did, for metrics and logs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RouterStats {
    pub records: usize,
    /// Records that did not parse.
    pub unparsable: usize,
    /// Events the records became.
    pub events: usize,
    /// Events published, in all and by detail type.
    pub published: usize,
    pub published_by_type: BTreeMap<String, usize>,
    /// Events sent without their images (too large with them).
    pub images_omitted: usize,
    /// PutEvents calls made (every attempt counts).
    pub calls: usize,
    /// Entries sent again after a retryable failure (or a failed call).
    pub retried: usize,
    /// Entries EventBridge refused.
    pub refused: usize,
    /// Records quarantined, and calls to the quarantine.
    pub quarantined: usize,
    pub quarantine_requests: usize,
    /// Groups stopped by a failure.
    pub failed_groups: usize,
    /// The oldest `ApproximateCreationDateTime` in the batch, for iterator age.
    pub oldest_created: Option<CreationTime>,
}

impl RouterStats {
    /// Adds another batch's figures (for totals over several batches).
    pub fn add(&mut self, other: &RouterStats) {
        self.records += other.records;
        self.unparsable += other.unparsable;
        self.events += other.events;
        self.published += other.published;
        for (detail_type, n) in &other.published_by_type {
            *self.published_by_type.entry(detail_type.clone()).or_default() += n;
        }
        self.images_omitted += other.images_omitted;
        self.calls += other.calls;
        self.retried += other.retried;
        self.refused += other.refused;
        self.quarantined += other.quarantined;
        self.quarantine_requests += other.quarantine_requests;
        self.failed_groups += other.failed_groups;
        self.oldest_created = model::metrics::oldest(self.oldest_created, other.oldest_created);
    }
}

/// What one batch did.
#[derive(Debug, Clone, PartialEq, Default)]
#[must_use]
pub struct RouterOutcome {
    /// Where Lambda resumes; `None` when every record was handled.
    pub failed: Option<Failed>,
    pub stats: RouterStats,
    /// The records quarantined, in batch order.
    pub quarantined: Vec<Quarantined>,
    /// Why the batch failed, one entry per stopped group or failed quarantine call.
    pub failures: Vec<Failure>,
}

impl RouterOutcome {
    /// The answer to Lambda (`batchItemFailures`).
    pub fn response(&self) -> BatchResponse {
        BatchResponse::new(self.failed.as_ref())
    }

    /// The sequence number Lambda resumes from, if any (`None` also when the
    /// whole batch failed).
    pub fn failed_at(&self) -> Option<&str> {
        self.failed.as_ref().and_then(Failed::sequence_number)
    }
}

/// One event to send.
struct Pending {
    /// Its record (a position in the batch's `Handled` list).
    record: usize,
    group: usize,
    entry: Entry,
    size: usize,
}

/// What became of one event.
#[derive(Debug, Clone)]
enum Fate {
    Published,
    Refused(String),
    Unfinished(Fault),
}

/// The stream router: classifies each record into events and publishes them
/// through a [`Publisher`], quarantining poison into a [`Quarantine`].
pub struct Router<P: Publisher, Q: Quarantine> {
    config: Arc<Config>,
    publisher: P,
    quarantine: Q,
    options: Options,
}

impl<P: Publisher, Q: Quarantine> Router<P, Q> {
    pub fn new(config: Arc<Config>, publisher: P, quarantine: Q, options: Options) -> Self {
        Router {
            config,
            publisher,
            quarantine,
            options,
        }
    }

    pub fn config(&self) -> &Arc<Config> {
        &self.config
    }

    pub fn publisher(&self) -> &P {
        &self.publisher
    }

    pub fn quarantine(&self) -> &Q {
        &self.quarantine
    }

    /// Handles a Lambda DynamoDB event (or a `GetRecords` response) given as bytes.
    pub async fn handle(&self, payload: &[u8]) -> Result<RouterOutcome, BatchError> {
        let records = record::parse_batch(payload)?;
        Ok(self.handle_received(records).await)
    }

    /// Handles parsed records, in stream order. See the module doc.
    pub async fn handle_received(&self, records: Vec<Received>) -> RouterOutcome {
        let mut stats = RouterStats {
            records: records.len(),
            ..RouterStats::default()
        };
        let (mut handled, pending) = self.classify(records, &mut stats);
        let fates = self.publish(&pending, &mut stats).await;

        // A record's events decide it: refused ones make it poison, the
        // first unfinished one leaves it unfinished.
        for (event, fate) in pending.iter().zip(fates) {
            let Some(record) = handled.get_mut(event.record) else {
                continue;
            };
            match fate {
                Fate::Published => {
                    stats.published += 1;
                    *stats
                        .published_by_type
                        .entry(event.entry.detail_type.clone())
                        .or_default() += 1;
                }
                Fate::Refused(reason) => {
                    stats.refused += 1;
                    let seq = record.sequence_number.as_deref().unwrap_or("?");
                    let poison = record.poison.get_or_insert_with(|| format!("record {seq}:"));
                    poison.push(' ');
                    poison.push_str(&reason);
                }
                Fate::Unfinished(fault) => {
                    record.unfinished.get_or_insert(fault);
                }
            }
        }

        let settled = settle(&self.quarantine, &self.options.consumer, handled).await;
        stats.quarantined = settled.quarantined.len();
        stats.quarantine_requests = settled.quarantine_requests;
        stats.failed_groups = settled.stopped_groups();
        RouterOutcome {
            failed: settled.failed,
            stats,
            quarantined: settled.quarantined,
            failures: settled.failures,
        }
    }

    /// Every record as `Handled` (poison marked), and the events to send.
    fn classify(&self, records: Vec<Received>, stats: &mut RouterStats) -> (Vec<Handled>, Vec<Pending>) {
        let config = &*self.config;
        let budget = config.events.max_request_bytes;
        let mut groups = Groups::default();
        let mut handled = Vec::with_capacity(records.len());
        let mut pending = Vec::new();
        for (position, received) in records.into_iter().enumerate() {
            let Received {
                raw,
                sequence_number,
                record,
            } = received;
            let record = match record {
                Ok(record) => record,
                Err(error) => {
                    stats.unparsable += 1;
                    handled.push(lone(position, sequence_number, None, raw, error.to_string()));
                    continue;
                }
            };
            if let Some(created) = record.created {
                stats.oldest_created = Some(stats.oldest_created.map_or(created, |o| o.min(created)));
            }
            let table = match event::table_of(config, &record) {
                Ok(table) => table,
                Err(error) => {
                    handled.push(lone(position, sequence_number, record.table, raw, error.to_string()));
                    continue;
                }
            };
            let group = groups.of(table, &record);
            let mut poison = None;
            match event::classify(config, table, &record) {
                Err(error) => poison = Some(error.to_string()),
                Ok(events) => {
                    for event in events {
                        stats.events += 1;
                        match fit(event, budget, stats) {
                            Ok((entry, size)) => pending.push(Pending {
                                record: handled.len(),
                                group,
                                entry,
                                size,
                            }),
                            Err(reason) => {
                                let poison =
                                    poison.get_or_insert_with(|| format!("record {}:", record.sequence_number));
                                poison.push(' ');
                                poison.push_str(&reason);
                            }
                        }
                    }
                }
            }
            handled.push(Handled {
                position,
                sequence_number: Some(record.sequence_number),
                table: Some(table.name.clone()),
                group: Some(group),
                raw,
                poison,
                unfinished: None,
            });
        }
        (handled, pending)
    }

    /// Sends the events: packed into calls, each call once the calls it
    /// depends on succeeded. One fate per event, in order.
    async fn publish(&self, pending: &[Pending], stats: &mut RouterStats) -> Vec<Fate> {
        let limits = Limits {
            max_items: MAX_ENTRIES,
            max_bytes: self.config.events.max_request_bytes,
            same_key: SameKey::SameOrLater,
        };
        let calls = pack::pack(pending.iter().map(|p| (p.group as u64, p.size)), limits);
        let results = dispatch(
            calls.iter().map(|c| c.after.as_slice()),
            self.options.concurrency,
            |i| {
                let call = calls.get(i);
                async move {
                    let (call_stats, call_fates) = match call {
                        Some(call) => self.send_call(pending, &call.items).await,
                        None => (CallStats::default(), Vec::new()),
                    };
                    let succeeded = call_fates.iter().all(|(_, f)| !matches!(f, Fate::Unfinished(..)));
                    ((call_stats, call_fates), succeeded)
                }
            },
        )
        .await;
        let mut fates: Vec<Option<Fate>> = vec![None; pending.len()];
        for (call_stats, call_fates) in results.into_iter().flatten() {
            stats.calls += call_stats.calls;
            stats.retried += call_stats.retried;
            for (event, fate) in call_fates {
                if let Some(slot) = fates.get_mut(event) {
                    *slot = Some(fate);
                }
            }
        }
        // The events of calls never sent: an earlier event of their
        // partition key failed (its call, or one it waited for).
        fates
            .into_iter()
            .map(|fate| {
                fate.unwrap_or_else(|| {
                    Fate::Unfinished(Fault::transient(
                        "not sent: an earlier event of its partition key was not published",
                    ))
                })
            })
            .collect()
    }

    /// One call: its entries sent until each is published, refused, or
    /// failed for good.
    async fn send_call(&self, pending: &[Pending], events: &[usize]) -> (CallStats, Vec<(usize, Fate)>) {
        let mut stats = CallStats::default();
        let mut fates = Vec::with_capacity(events.len());
        let mut left: Vec<usize> = events.to_vec();
        let mut retry = Retry::new(&self.options.backoff);
        let mut singles = false;
        let outcome = loop {
            if retry.attempt() > 0 {
                stats.retried += left.len();
            }
            let entries: Vec<&Entry> = left.iter().filter_map(|&e| pending.get(e).map(|p| &p.entry)).collect();
            stats.calls += 1;
            let step = match self.publisher.put_events(&entries).await {
                Ok(results) => {
                    let before = left.len();
                    let mut again = Vec::new();
                    let mut last_code = String::new();
                    for (&e, result) in left.iter().zip(results) {
                        let EntryResult::Failed { code, message } = result else {
                            fates.push((e, Fate::Published));
                            continue;
                        };
                        let what = pending.get(e).map_or("?", |p| p.entry.detail_type.as_str());
                        let reason = format!("EventBridge failed the `{what}` event with {code}: {message}");
                        match entry_class(&code) {
                            Class::Transient => again.push(e),
                            Class::Refused => fates.push((e, Fate::Refused(reason))),
                            Class::Deployment => fates.push((e, Fate::Unfinished(Fault::deployment(reason)))),
                        }
                        last_code = code;
                    }
                    left = again;
                    if left.is_empty() {
                        Step::Done(())
                    } else {
                        Step::Again {
                            progressed: left.len() < before,
                            fault: Fault::transient(format!("PutEvents entries still failing with {last_code}")),
                        }
                    }
                }
                Err(fault) if fault.is_refused() && left.len() > 1 => {
                    // The call was refused for its content: send each entry
                    // alone to find the culprit.
                    singles = true;
                    Step::Done(())
                }
                Err(fault) if fault.is_refused() => {
                    let message = fault.message();
                    fates.extend(
                        left.drain(..)
                            .map(|e| (e, Fate::Refused(format!("PutEvents refused: {message}")))),
                    );
                    Step::Done(())
                }
                Err(fault) => Step::of(Err(fault)),
            };
            match retry.next(step).await {
                Flow::Again => continue,
                Flow::Done(()) => break Ok(()),
                Flow::Failed(fault) => break Err(fault),
            }
        };
        match outcome {
            Ok(()) if singles => {
                for e in std::mem::take(&mut left) {
                    let (single_stats, single) = Box::pin(self.send_call(pending, &[e])).await;
                    stats.calls += single_stats.calls;
                    stats.retried += single_stats.retried;
                    fates.extend(single);
                }
            }
            Ok(()) => {}
            Err(fault) => fates.extend(left.drain(..).map(|e| (e, Fate::Unfinished(fault.clone())))),
        }
        (stats, fates)
    }
}

#[derive(Debug, Default)]
struct CallStats {
    calls: usize,
    retried: usize,
}

/// A record that stands alone (unreadable, or of no declared table): poison.
fn lone(
    position: usize,
    sequence_number: Option<String>,
    table: Option<String>,
    raw: Box<RawValue>,
    reason: String,
) -> Handled {
    Handled {
        position,
        sequence_number,
        table,
        group: None,
        raw,
        poison: Some(reason),
        unfinished: None,
    }
}

/// The entry of an event and its size, within `budget`: without its images
/// if need be; an error naming the sizes when not even that fits.
fn fit(event: Event, budget: usize, stats: &mut RouterStats) -> Result<(Entry, usize), String> {
    let mut event = event;
    let mut size = event::entry_size(&event);
    if size > budget {
        let full = size;
        event = event::without_images(event);
        size = event::entry_size(&event);
        if size > budget {
            return Err(format!(
                "its `{}` event is {size} bytes even without its images ({full} with them), over the PutEvents budget of {budget} bytes",
                event.detail_type
            ));
        }
        stats.images_omitted += 1;
        tracing::info!(sequence_number = %event.detail.sequence_number, detail_type = %event.detail_type, bytes = full, budget, "event sent without its images");
    }
    let detail = event.detail_json();
    Ok((
        Entry {
            source: event.source,
            detail_type: event.detail_type,
            detail,
        },
        size,
    ))
}

#[cfg(test)]
mod tests;
