//! What the runner did or saw, for the log: [`RunEvent`], one line each
//! (an invocation's first failures below it), and its EMF line when it is
//! an invocation.

use std::fmt;

use model::filter::Consumer;

use super::age::{self, human, Level, Thresholds, Transition};
use super::failure::FailureNotice;
use super::function::{Invocation, Response};
use super::stream::Position;

/// Something the runner did or saw, for the log.
#[derive(Debug, Clone)]
pub enum RunEvent {
    ShardStarted {
        table: String,
        consumer: Consumer,
        shard: String,
        parent: Option<String>,
        from: Position,
    },
    ShardFinished {
        table: String,
        consumer: Consumer,
        shard: String,
    },
    /// The function was invoked with `records` records (`first`..`last`);
    /// `done` of them are done (all of them on success).
    Invoked {
        table: String,
        consumer: Consumer,
        shard: String,
        records: usize,
        first: String,
        last: String,
        done: usize,
        invocation: Invocation,
    },
    /// Records given up on, reported to the on-failure destination.
    Discarded {
        consumer: Consumer,
        notice: FailureNotice,
    },
    Alarm {
        table: String,
        consumer: Consumer,
        shard: String,
        transition: Transition,
        thresholds: Thresholds,
        /// How long the shard's stream keeps a record.
        retention_ms: u64,
    },
    Reaped(String),
    /// Local TTL deleted an item.
    Expired(String),
    // Something failed and will be tried again (reading, a delivery, a reap).
    Problem {
        context: String,
        error: String,
    },
}

impl RunEvent {
    /// The EMF line of an invocation, if this is one.
    pub fn emf(&self) -> Option<&str> {
        match self {
            RunEvent::Invoked { invocation, .. } => invocation.emf.as_deref(),
            _ => None,
        }
    }
}

impl fmt::Display for RunEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunEvent::ShardStarted {
                table,
                consumer,
                shard,
                parent,
                from,
            } => {
                write!(f, "{table} {consumer}: reading shard {shard} from {from}")?;
                match parent {
                    Some(parent) => write!(f, " (its parent {parent} is done)"),
                    None => Ok(()),
                }
            }
            RunEvent::ShardFinished { table, consumer, shard } => {
                write!(f, "{table} {consumer}: shard {shard} is closed and done")
            }
            RunEvent::Invoked {
                table,
                consumer,
                shard,
                records,
                first,
                last,
                done,
                invocation,
            } => {
                let range = if first == last { first.clone() } else { format!("{first}..{last}") };
                write!(f, "{table} {consumer}: {records} records ({range}) of shard {shard}: ")?;
                match &invocation.response {
                    Response::Success => write!(f, "done")?,
                    Response::FailedFrom(seq) => write!(f, "{done} done, failed from {seq}; retrying")?,
                    Response::Error(e) => write!(f, "failed ({e}); retrying")?,
                }
                if invocation.quarantined > 0 {
                    write!(f, "; {} quarantined", invocation.quarantined)?;
                }
                for failure in invocation.failures.iter().take(3) {
                    write!(f, "\n  {failure}")?;
                }
                Ok(())
            }
            RunEvent::Discarded { consumer, notice } => write!(
                f,
                "{} {consumer}: gave up on {} records ({}..{}) of shard {}: {}; their range went to the on-failure queue \
                 (`streamdex rebuild` restores what they would have changed)",
                notice.table,
                notice.batch_size,
                notice.start_sequence_number,
                notice.end_sequence_number,
                notice.shard_id,
                notice.condition.as_str()
            ),
            RunEvent::Alarm {
                table,
                consumer,
                shard,
                transition,
                thresholds,
                retention_ms,
            } => {
                let threshold = match transition.to.max(transition.from) {
                    Level::Page => thresholds.page_ms,
                    _ => thresholds.warn_ms,
                };
                let relation = if transition.to > transition.from { "≥" } else { "<" };
                write!(
                    f,
                    "{} iterator age of {table} {consumer} shard {shard}: {} {relation} {} (was {})",
                    transition.to,
                    human(transition.age_ms),
                    human(threshold),
                    transition.from
                )?;
                if transition.to != Level::Ok {
                    write!(
                        f,
                        "; {} left before the stream trims the oldest unread record",
                        human(age::time_left_ms(*retention_ms, transition.age_ms))
                    )?;
                }
                Ok(())
            }
            RunEvent::Reaped(what) | RunEvent::Expired(what) => f.write_str(what),
            RunEvent::Problem { context, error } => write!(f, "{context}: {error}"),
        }
    }
}
