//! The local runner: the stand-in for Lambda's event source mappings
//! (`streamdex run`), against any endpoint that speaks DynamoDB Streams.
//!
//! For each table of the config and each of its consumers (the mappings
//! [`crate::stack::Stack`] describes, with their batch size, batching
//! window, retries, bisect, maximum record age, on-failure queue and
//! filter patterns), the runner
//!
//! 1. discovers the stream's shards ([`stream::StreamSource::shards`],
//!    every page of DescribeStream) and starts a shard only once its parent
//!    is done ([`shards::ready`]);
//! 2. reads each shard from its checkpoint ([`poller`]), drops what the
//!    mapping's filter drops, and invokes the function in process (the
//!    same indexer and router code as the Lambdas, [`function`]) following
//!    Lambda's retry, bisect, maximum-age and on-failure rules
//!    ([`mapping`], [`failure`]);
//! 3. keeps the checkpoints ([`checkpoint`]), which the caller saves after
//!    each round, so a restart resumes where it stopped;
//! 4. measures the iterator age of each shard and consumer and raises and
//!    clears its alarm at the config's thresholds ([`age`]);
//! 5. feeds the reaper the events the reap rules routed to their queues
//!    ([`reaper_feed`]);
//! 6. with local TTL on, deletes the items whose TTL has passed, as
//!    DynamoDB's TTL service does ([`sweeper`], [`expiry`]).
//!
//! The runner works in rounds ([`Runner::round`]): each shard whose turn has
//! come, concurrently. A shard that returned records is read again in the
//! next round; an idle one backs off on its own, up to the poll interval
//! ([`poller`]); the reaper's queues are polled at the poll interval, or at
//! once again while they bring events. A round says how long the caller may
//! pause before the next turn is due ([`Round::wait_ms`]; no pause while
//! there is work). Time comes from a [`Clock`], so tests drive
//! windows, ages, back-offs and alarms without sleeping.
//! [`local::connect`] wires it to an endpoint.

pub mod age;
pub mod checkpoint;
pub mod copier;
mod event;
pub mod expiry;
pub mod failure;
pub mod function;
pub mod graph;
pub mod host;
pub mod lag;
pub mod local;
pub mod mapping;
pub mod poller;
pub mod reaper_feed;
pub mod replay;
pub mod shards;
pub mod stream;
pub mod sweeper;
pub mod tail;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use model::filter::{Consumer, Pattern};

use self::age::Thresholds;
use self::checkpoint::Checkpoints;
use self::expiry::Expiries;
use self::failure::OnFailure;
use self::function::Function;
use self::poller::{TickContext, Worker};
use self::reaper_feed::ReaperFeed;
use self::stream::{ShardInfo, StreamSource};
use self::sweeper::Sweeper;
use aws_kit::clock::Clock;
pub use event::RunEvent;

/// One event source mapping: a consumer of a table's stream.
pub struct MappingSpec {
    pub table: String,
    pub consumer: Consumer,
    pub settings: mapping::Settings,
    /// ORed; empty: every record passes.
    pub filters: Vec<Pattern>,
    pub function: Arc<dyn Function>,
    pub on_failure: Arc<dyn OnFailure>,
    /// How long the table's stream keeps a record ([`age::retention_ms`]):
    /// what an iterator-age alarm's time left counts down from.
    pub retention_ms: u64,
}

/// How the runner works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunnerOptions {
    /// How often to list the shards again (milliseconds of the clock); a
    /// shard that finishes makes the next round list them at once.
    pub discover_every_ms: u64,
    /// The longest wait between reads of an idle shard, and between polls
    /// of the reaper's queues (milliseconds).
    pub poll_interval_ms: u64,
    pub thresholds: Thresholds,
}

/// What one round did.
#[derive(Debug, Default)]
pub struct Round {
    pub events: Vec<RunEvent>,
    /// Whether there may be more to do right away.
    pub busy: bool,
    /// When not busy: how long until the next turn is due (milliseconds, at
    /// most the poll interval).
    pub wait_ms: u64,
    /// Tables or streams the config names that are not there (also among
    /// the events, as problems): what only `streamdex up` fixes.
    pub missing: Vec<String>,
}

#[derive(Debug, Default)]
struct StreamState {
    arn: Option<String>,
    shards: Vec<ShardInfo>,
    listed_ms: Option<u64>,
}

/// The runner. See the module doc.
pub struct Runner {
    source: Arc<dyn StreamSource>,
    clock: Arc<dyn Clock>,
    options: RunnerOptions,
    mappings: Vec<MappingSpec>,
    streams: BTreeMap<String, StreamState>,
    workers: Vec<Worker>,
    checkpoints: Checkpoints,
    changed: bool,
    reaper: Option<ReaperFeed>,
    /// When to poll the reaper's queues next.
    reaper_due_ms: u64,
    /// The last round whose poll found the reaper's queues empty.
    reaper_quiet_round: u64,
    /// Local TTL: the sweeper, its interval, when it is due, and what it deleted.
    sweeper: Option<(Sweeper, u64)>,
    /// The stand-in for DynamoDB's copy of changes into Kinesis (see
    /// [`copier`]), with the config it copies.
    copier: Option<(copier::Copier, Arc<model::Config>)>,
    sweep_due_ms: u64,
    expiries: Option<Arc<Expiries>>,
    /// Rounds so far, and the last one that did something (read records,
    /// invoked, reaped): an idle shard must have looked since.
    rounds: u64,
    last_busy_round: u64,
}

impl Runner {
    pub fn new(
        source: Arc<dyn StreamSource>,
        clock: Arc<dyn Clock>,
        options: RunnerOptions,
        checkpoints: Checkpoints,
    ) -> Runner {
        Runner {
            source,
            clock,
            options,
            mappings: Vec::new(),
            streams: BTreeMap::new(),
            workers: Vec::new(),
            checkpoints,
            changed: false,
            reaper: None,
            reaper_due_ms: 0,
            reaper_quiet_round: 0,
            sweeper: None,
            copier: None,
            sweep_due_ms: 0,
            expiries: None,
            rounds: 0,
            last_busy_round: 0,
        }
    }

    /// Adds a mapping.
    pub fn add_mapping(&mut self, spec: MappingSpec) {
        self.streams.entry(spec.table.clone()).or_default();
        self.mappings.push(spec);
    }

    /// Feeds the reaper from its rules' queues every round.
    /// Copies the changes of the tables read from Kinesis into their data
    /// streams each round, before the shards are read (see [`copier`]).
    pub fn set_copier(&mut self, copier: copier::Copier, config: Arc<model::Config>) {
        self.copier = Some((copier, config));
    }

    pub fn set_reaper_feed(&mut self, feed: ReaperFeed) {
        self.reaper = Some(feed);
    }

    /// Acts as the TTL service every `every_ms` (see [`sweeper`]); the
    /// deletions it made are kept in the checkpoints.
    pub fn set_sweeper(&mut self, sweeper: Sweeper, every_ms: u64, expiries: Arc<Expiries>) {
        self.sweeper = Some((sweeper, every_ms));
        self.expiries = Some(expiries);
    }

    pub fn mappings(&self) -> &[MappingSpec] {
        &self.mappings
    }

    pub fn checkpoints(&self) -> &Checkpoints {
        &self.checkpoints
    }

    /// Whether the checkpoints changed since the last call (then save them).
    pub fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// Whether every started shard is read to its end or its tip with
    /// nothing left to do, each by a read after the last round that did
    /// something (whose writes may be on the streams by now), and the
    /// reaper's queues were found empty since (a consumer's events may be
    /// on their way to them).
    pub fn idle(&self) -> bool {
        let reaper_quiet = self.reaper.is_none() || self.reaper_quiet_round > self.last_busy_round;
        reaper_quiet && self.workers.iter().all(|w| w.idle(self.last_busy_round + 1))
    }

    /// Asks every shard for a fresh look: [`Runner::idle`] is false until
    /// each has read again in a later round. For a caller that wrote to the
    /// tables since the runner's last round and waits for the runner to
    /// apply it: a look at the tip taken before the write says nothing
    /// about it, and a shard not due for a read would still count as idle.
    pub fn look_again(&mut self) {
        self.last_busy_round = self.rounds;
    }

    /// The largest iterator age over every shard and consumer (milliseconds).
    pub fn max_age_ms(&self) -> u64 {
        self.workers.iter().map(Worker::age_ms).max().unwrap_or(0)
    }

    /// (table, consumer, shard, iterator age ms, records read and not yet done) of every active shard.
    pub fn shards(&self) -> Vec<(String, Consumer, String, u64, usize)> {
        self.workers
            .iter()
            .map(|w| (w.table.clone(), w.consumer, w.shard.clone(), w.age_ms(), w.backlog()))
            .collect()
    }

    /// One round. See the module doc.
    pub async fn round(&mut self) -> Round {
        let mut round = Round::default();
        self.rounds += 1;
        if let Some((copier, config)) = &mut self.copier {
            let copied = copier.copy(config).await;
            round.busy |= copied.busy;
            round.events.extend(copied.events);
        }
        self.discover(&mut round).await;

        let context = TickContext {
            source: &*self.source,
            clock: &*self.clock,
            thresholds: &self.options.thresholds,
            poll_interval_ms: self.options.poll_interval_ms,
        };
        let (mappings, number) = (&self.mappings, self.rounds);
        let ticks = futures::future::join_all(self.workers.iter_mut().map(|w| {
            let spec = &mappings[w.mapping];
            w.tick(spec, number, &context)
        }))
        .await;
        let mut finished_any = false;
        for tick in ticks {
            round.busy |= tick.busy;
            round.events.extend(tick.events);
        }
        for w in &self.workers {
            self.changed |= self
                .checkpoints
                .set(&w.table, &w.stream, &w.shard, w.consumer, w.position());
            finished_any |= w.finished();
        }
        if finished_any {
            self.workers.retain(|w| !w.finished());
            // Start the children now.
            for state in self.streams.values_mut() {
                state.listed_ms = None;
            }
            round.busy = true;
        }
        if let Some(feed) = &self.reaper {
            if self.clock.now_ms() >= self.reaper_due_ms {
                let fed = feed.poll().await;
                if !fed.busy {
                    self.reaper_quiet_round = self.rounds;
                }
                round.busy |= fed.busy;
                round.events.extend(fed.events);
                self.reaper_due_ms = if fed.busy {
                    0
                } else {
                    self.clock.now_ms().saturating_add(self.options.poll_interval_ms)
                };
            }
        }
        if let Some((sweeper, every_ms)) = &self.sweeper {
            let now = self.clock.now_ms();
            if now >= self.sweep_due_ms {
                let swept = sweeper.sweep(now).await;
                round.busy |= swept.deleted > 0;
                if swept.noted {
                    // Delete once the checkpoints with the notes are saved: after this round.
                    self.sweep_due_ms = now;
                } else {
                    self.sweep_due_ms = now.saturating_add(*every_ms);
                }
                round.events.extend(swept.events);
            }
        }
        if let Some(expiries) = &self.expiries {
            expiries.prune(self.clock.now_ms());
            let now = expiries.snapshot();
            if now != self.checkpoints.expiries {
                self.checkpoints.expiries = now;
                self.changed = true;
            }
        }
        if round.busy {
            self.last_busy_round = self.rounds;
        } else {
            round.wait_ms = self.wait_ms();
        }
        round
    }

    /// How long until the next turn of a shard, the reaper's queues or a
    /// listing of shards is due, at most the poll interval.
    fn wait_ms(&self) -> u64 {
        let now = self.clock.now_ms();
        let shards = self.workers.iter().filter_map(|w| w.due_ms(&self.mappings[w.mapping]));
        let reaper = self.reaper.as_ref().map(|_| self.reaper_due_ms);
        let sweep = self.sweeper.as_ref().map(|_| self.sweep_due_ms);
        let listings = self.streams.values().map(|s| {
            s.listed_ms
                .map_or(now, |at| at.saturating_add(self.options.discover_every_ms))
        });
        shards
            .chain(reaper)
            .chain(sweep)
            .chain(listings)
            .min()
            .map_or(self.options.poll_interval_ms, |due| due.saturating_sub(now))
            .min(self.options.poll_interval_ms)
    }

    /// Lists shards when due and starts those that are ready.
    async fn discover(&mut self, round: &mut Round) {
        let now = self.clock.now_ms();
        let tables: Vec<String> = self.streams.keys().cloned().collect();
        for table in tables {
            let due = self.streams.get(&table).is_none_or(|s| {
                s.listed_ms
                    .is_none_or(|at| now.saturating_sub(at) >= self.options.discover_every_ms)
            });
            if !due {
                continue;
            }
            let arn = match self.source.stream_arn(&table).await {
                Ok(arn) => arn,
                Err(e) if e.is_missing_resource() => {
                    round.missing.push(e.to_string());
                    continue;
                }
                Err(e) => {
                    round.events.push(RunEvent::Problem {
                        context: format!("table {table}"),
                        error: e.to_string(),
                    });
                    continue;
                }
            };
            let shards = match self.source.shards(&arn).await {
                Ok(shards) => shards,
                Err(e) => {
                    round.events.push(RunEvent::Problem {
                        context: format!("table {table}"),
                        error: e.to_string(),
                    });
                    continue;
                }
            };
            // A new stream (the table was re-created): its old shards are gone.
            self.workers.retain(|w| w.table != table || w.stream == arn);
            let state = self.streams.entry(table.clone()).or_default();
            state.arn = Some(arn.clone());
            state.shards = shards;
            state.listed_ms = Some(now);
            for (m, spec) in self.mappings.iter().enumerate().filter(|(_, s)| s.table == table) {
                let finished = self.checkpoints.finished(&arn, spec.consumer);
                let started: BTreeSet<String> = self
                    .workers
                    .iter()
                    .filter(|w| w.mapping == m)
                    .map(|w| w.shard.clone())
                    .collect();
                for shard in shards::ready(&state.shards, &finished, &started) {
                    let from = self.checkpoints.get(&arn, &shard.id, spec.consumer);
                    let worker = Worker::new(m, spec, &arn, &shard.id, from);
                    round.events.push(RunEvent::ShardStarted {
                        table: table.clone(),
                        consumer: spec.consumer,
                        shard: shard.id.clone(),
                        parent: shard.parent.clone(),
                        from: worker.start().clone(),
                    });
                    self.workers.push(worker);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
