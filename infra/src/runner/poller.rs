//! One consumer reading one shard, as one event source mapping's poller:
//! GetRecords into a buffer (records that pass the mapping's filter; the
//! others are done as soon as they are read), then the [`mapping`](super::mapping) rules
//! decide what is invoked, retried, bisected or discarded; the checkpoint
//! follows; the iterator age feeds the alarm.
//!
//! Pacing, per shard: a read that returned records is followed by another
//! at once; after a read that returned nothing the worker waits
//! [`FIRST_IDLE_WAIT_MS`], then half as long again after each further empty
//! read, up to the poll interval (`Worker::due_ms` says when it wants its
//! next turn). A failed invocation is retried after the poll interval.
//!
//! Iterators: each GetRecords hands out the iterator for the next read,
//! and the worker keeps it while it is valid. It takes a new one
//! (`AFTER_SEQUENCE_NUMBER` the last record read) when a read fails (an
//! invalid or expired iterator: moto answers HTTP 500) and when the shard
//! has been silent for [`ITERATOR_REFRESH_MS`] on the same iterator (moto's
//! iterators go blind after a cancelled transaction; a refresh a second
//! bounds the blindness). Trimmed records are reported and reading restarts
//! at the trim horizon.
//!
//! Repeats: a record a read hands out again ([`RecentReads`]) is skipped,
//! and a read that brought only repeats found nothing new (taken as new, a
//! record moto hands out on every read kept the shard busy forever).

use std::collections::VecDeque;

use model::filter::Consumer;

use super::age::{Alarm, Thresholds};
use super::failure::FailureNotice;
use super::function::Response;
use super::mapping::{Candidate, MappingState, Outcome, Step};
use super::stream::{Position, RecentReads, StreamRecord, StreamSource};
use super::{MappingSpec, RunEvent};
use crate::runner::checkpoint;
use aws_kit::clock::Clock;

/// At most this many invocations or discards per worker per round (others get their turn).
const STEPS_PER_ROUND: usize = 8;

/// The wait after the first read that found nothing (milliseconds).
pub const FIRST_IDLE_WAIT_MS: u64 = 10;

/// A shard silent this long on one iterator gets a new one (milliseconds).
pub const ITERATOR_REFRESH_MS: u64 = 1_000;

struct Buffered {
    record: StreamRecord,
    read_ms: u64,
}

/// One mapping on one shard.
pub(crate) struct Worker {
    pub mapping: usize,
    pub table: String,
    pub consumer: Consumer,
    pub stream: String,
    pub shard: String,
    read_from: Position,
    iterator: Option<String>,
    /// When the kept iterator was taken or last returned records.
    iterator_fresh_ms: u64,
    /// When to read next (clock milliseconds).
    next_read_ms: u64,
    /// The current wait between empty reads (0 while records flow).
    idle_wait_ms: u64,
    /// No invocation or discard before this (after a failed one).
    retry_at_ms: u64,
    /// The runner's round of the last read that found the shard at its tip.
    tip_round: u64,
    /// The last sequence number done with.
    checkpoint: Option<String>,
    last_read: Option<StreamRecord>,
    /// The records read last, to skip one handed out again.
    recent: RecentReads,
    buffer: VecDeque<Buffered>,
    state: MappingState,
    at_tip: bool,
    /// A closed shard, read to its end.
    ended: bool,
    finished: bool,
    alarm: Alarm,
    age_ms: u64,
}

/// What one round of a worker did.
pub(crate) struct Tick {
    pub busy: bool,
    pub events: Vec<RunEvent>,
}

impl Worker {
    pub fn new(mapping: usize, spec: &MappingSpec, stream: &str, shard: &str, from: checkpoint::Position) -> Worker {
        let (read_from, checkpoint) = match from.sequence_number {
            Some(seq) => (Position::After(seq.clone()), Some(seq)),
            None => (Position::TrimHorizon, None),
        };
        Worker {
            mapping,
            table: spec.table.clone(),
            consumer: spec.consumer,
            stream: stream.to_owned(),
            shard: shard.to_owned(),
            read_from,
            iterator: None,
            iterator_fresh_ms: 0,
            next_read_ms: 0,
            idle_wait_ms: 0,
            retry_at_ms: 0,
            tip_round: 0,
            checkpoint,
            last_read: None,
            recent: RecentReads::default(),
            buffer: VecDeque::new(),
            state: MappingState::default(),
            at_tip: false,
            ended: false,
            finished: from.finished,
            alarm: Alarm::default(),
            age_ms: 0,
        }
    }

    pub fn start(&self) -> &Position {
        &self.read_from
    }

    pub fn position(&self) -> checkpoint::Position {
        checkpoint::Position {
            sequence_number: self.checkpoint.clone(),
            finished: self.finished,
        }
    }

    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Whether it has read everything there is and has nothing left to do,
    /// as of a read in round `since` or later (an older look at the tip
    /// says nothing about records written meanwhile).
    pub fn idle(&self, since: u64) -> bool {
        self.finished || (self.buffer.is_empty() && ((self.at_tip && self.tip_round >= since) || self.ended))
    }

    /// When it wants its next turn (clock milliseconds): its next read, the
    /// end of a batching window or of a retry wait; `None` when finished.
    pub fn due_ms(&self, spec: &MappingSpec) -> Option<u64> {
        if self.finished {
            return None;
        }
        let read = (!self.ended && self.buffer.len() < read_ahead(spec)).then_some(self.next_read_ms);
        let step = self.buffer.front().map(|first| {
            self.retry_at_ms
                .max(first.read_ms.saturating_add(spec.settings.window_ms))
        });
        match (read, step) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The iterator age it last measured (milliseconds).
    pub fn age_ms(&self) -> u64 {
        self.age_ms
    }

    /// Records read and not yet done.
    pub fn backlog(&self) -> usize {
        self.buffer.len()
    }

    /// One turn in round `round`: read if the read is due, then invoke or
    /// discard until the mapping waits.
    pub async fn tick(&mut self, spec: &MappingSpec, round: u64, context: &TickContext<'_>) -> Tick {
        let mut tick = Tick {
            busy: false,
            events: Vec::new(),
        };
        if self.finished {
            return tick;
        }
        let read_ahead = read_ahead(spec);
        let now_ms = context.clock.now_ms();
        if !self.ended && self.buffer.len() < read_ahead && now_ms >= self.next_read_ms {
            let room = u32::try_from(read_ahead - self.buffer.len()).unwrap_or(1000).min(1000);
            self.read(spec, context.source, room, now_ms, &mut tick).await;
            if tick.busy {
                self.idle_wait_ms = 0;
                self.next_read_ms = now_ms;
            } else {
                self.idle_wait_ms = if self.idle_wait_ms == 0 {
                    FIRST_IDLE_WAIT_MS
                } else {
                    self.idle_wait_ms.saturating_add(self.idle_wait_ms / 2)
                }
                .min(context.poll_interval_ms.max(FIRST_IDLE_WAIT_MS));
                self.next_read_ms = now_ms.saturating_add(self.idle_wait_ms);
            }
            if self.at_tip {
                self.tip_round = round;
            }
        }
        if context.clock.now_ms() >= self.retry_at_ms {
            for _ in 0..STEPS_PER_ROUND {
                if !self
                    .step(spec, context.clock.now_ms(), context.poll_interval_ms, &mut tick)
                    .await
                {
                    break;
                }
            }
        }
        if self.buffer.is_empty() {
            if let Some(last) = &self.last_read {
                self.checkpoint = Some(last.sequence_number.clone());
            }
            if self.ended && !self.state.retrying() {
                self.finished = true;
                tick.events.push(RunEvent::ShardFinished {
                    table: self.table.clone(),
                    consumer: self.consumer,
                    shard: self.shard.clone(),
                });
            }
        }
        let now_ms = context.clock.now_ms();
        self.age_ms = match (self.buffer.front(), &self.last_read) {
            (Some(front), _) => front.record.created_ms.map_or(0, |c| now_ms.saturating_sub(c)),
            (None, _) if self.at_tip || self.ended => 0,
            (None, Some(last)) => last.created_ms.map_or(0, |c| now_ms.saturating_sub(c)),
            (None, None) => 0,
        };
        if let Some(transition) = self.alarm.observe(self.age_ms, context.thresholds) {
            tick.events.push(RunEvent::Alarm {
                table: self.table.clone(),
                consumer: self.consumer,
                shard: self.shard.clone(),
                transition,
                thresholds: *context.thresholds,
                retention_ms: spec.retention_ms,
            });
        }
        tick
    }

    /// One step of the mapping; whether to go on. A failed one waits
    /// `retry_wait_ms` before the next.
    async fn step(&mut self, spec: &MappingSpec, now_ms: u64, retry_wait_ms: u64, tick: &mut Tick) -> bool {
        let candidates: Vec<Candidate> = self
            .buffer
            .iter()
            .map(|b| Candidate {
                created_ms: b.record.created_ms,
                read_ms: b.read_ms,
            })
            .collect();
        match self.state.next(&candidates, &spec.settings, now_ms, !self.ended) {
            Step::Wait => false,
            Step::Discard(discard) => {
                let count = discard.count.min(self.buffer.len());
                let (Some(first), Some(last)) = (self.buffer.front(), self.buffer.get(count.saturating_sub(1))) else {
                    self.state.discarded(count);
                    return true;
                };
                let notice = FailureNotice {
                    condition: discard.condition,
                    function: spec.function.name().to_owned(),
                    table: self.table.clone(),
                    stream_arn: self.stream.clone(),
                    shard_id: self.shard.clone(),
                    start_sequence_number: first.record.sequence_number.clone(),
                    end_sequence_number: last.record.sequence_number.clone(),
                    first_created_ms: first.record.created_ms,
                    last_created_ms: last.record.created_ms,
                    batch_size: count,
                    attempts: discard.attempts,
                    timestamp_ms: now_ms,
                    payload: event_payload(self.buffer.iter().take(count).map(|b| &b.record)),
                };
                match spec.on_failure.send(&notice).await {
                    Ok(()) => {
                        self.state.discarded(count);
                        self.done(count);
                        tick.busy = true;
                        tick.events.push(RunEvent::Discarded {
                            consumer: self.consumer,
                            notice,
                        });
                        true
                    }
                    Err(e) => {
                        tick.events.push(RunEvent::Problem {
                            context: format!("{} {} shard {}", self.table, self.consumer, self.shard),
                            error: format!("{e}; the records are kept and the notice sent again"),
                        });
                        self.retry_at_ms = now_ms.saturating_add(retry_wait_ms);
                        false
                    }
                }
            }
            Step::Invoke(n) => {
                let n = n.min(self.buffer.len());
                let batch: Vec<&StreamRecord> = self.buffer.iter().take(n).map(|b| &b.record).collect();
                let payload = event_payload(batch.iter().copied());
                let first = batch.first().map(|r| r.sequence_number.clone()).unwrap_or_default();
                let last = batch.last().map(|r| r.sequence_number.clone()).unwrap_or_default();
                let invocation = spec.function.invoke(payload.as_bytes(), now_ms).await;
                let outcome = match &invocation.response {
                    Response::Success => Outcome::Success,
                    Response::FailedFrom(seq) => {
                        Outcome::FailedAt(batch.iter().position(|r| r.sequence_number == *seq).unwrap_or(0))
                    }
                    Response::Error(_) => Outcome::FailedAt(0),
                };
                let done = self.state.settle(n, outcome, &spec.settings);
                self.done(done);
                tick.busy |= outcome == Outcome::Success;
                if outcome != Outcome::Success {
                    self.retry_at_ms = now_ms.saturating_add(retry_wait_ms);
                }
                tick.events.push(RunEvent::Invoked {
                    table: self.table.clone(),
                    consumer: self.consumer,
                    shard: self.shard.clone(),
                    records: n,
                    first,
                    last,
                    done,
                    invocation,
                });
                outcome == Outcome::Success
            }
        }
    }

    /// The first `count` buffered records are done.
    fn done(&mut self, count: usize) {
        for _ in 0..count {
            if let Some(b) = self.buffer.pop_front() {
                self.checkpoint = Some(b.record.sequence_number);
            }
        }
    }
}

/// The Lambda event of `records`: `{"Records":[...]}`, each as read.
fn event_payload<'a>(records: impl Iterator<Item = &'a StreamRecord>) -> String {
    let mut payload = String::from("{\"Records\":[");
    for (i, record) in records.enumerate() {
        if i > 0 {
            payload.push(',');
        }
        payload.push_str(&record.json);
    }
    payload.push_str("]}");
    payload
}

/// What every worker of a runner shares in a round.
pub(crate) struct TickContext<'a> {
    pub source: &'a dyn StreamSource,
    pub clock: &'a dyn Clock,
    pub thresholds: &'a Thresholds,
    /// The longest wait between reads of an idle shard (milliseconds).
    pub poll_interval_ms: u64,
}

/// How many records a worker reads ahead of its function.
fn read_ahead(spec: &MappingSpec) -> usize {
    spec.settings.batch_size.saturating_mul(2).clamp(100, 10_000)
}

mod read;
mod view;
