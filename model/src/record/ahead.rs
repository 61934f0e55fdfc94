//! Work on a received record that a consumer would do, done ahead of it:
//! replay's reading thread plans and classifies each record it parses while
//! the handling thread is busy with the batch before, and the consumers take
//! what it made instead of doing it again. Planning and classifying are pure
//! (the config and the record decide), so the result is the same.
//!
//! Each result is kept with the address of the config it was made with and
//! taken (not copied) by the consumer that asks with that same config; a
//! consumer with another config, or one asking again (a retried batch),
//! works it out afresh. The slot knows neither plans nor events: it keeps
//! one value of each type (`crate::plan` and `crate::event` put theirs).

use std::any::Any;
use std::fmt;
use std::sync::Mutex;

/// What was worked out ahead for one record (see the module doc). Empty,
/// it allocates nothing: only replay works ahead, and every record, in
/// every consumer, is moved from reader to consumer with its empty slot.
#[derive(Debug, Default)]
pub(crate) struct Ahead {
    worked: Mutex<Vec<Worked>>,
}

/// One result, with the address of what it was made with (see [`key`]).
struct Worked {
    made_with: usize,
    value: Box<dyn Any + Send>,
}

impl fmt::Debug for Worked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worked")
            .field("made_with", &self.made_with)
            .finish_non_exhaustive()
    }
}

/// Which config (or other context) a result was made with.
fn key<K: ?Sized>(made_with: &K) -> usize {
    std::ptr::from_ref(made_with).cast::<()>() as usize
}

impl Ahead {
    /// The results, to store or take one.
    fn worked<T>(&self, with: impl FnOnce(&mut Vec<Worked>) -> T) -> T {
        with(&mut self.worked.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// Keeps `value`, made with `made_with`, in place of any earlier value of its type.
    pub(crate) fn keep<K: ?Sized, T: Any + Send>(&self, made_with: &K, value: T) {
        let made_with = key(made_with);
        self.worked(|worked| {
            worked.retain(|w| !w.value.is::<T>());
            worked.push(Worked {
                made_with,
                value: Box::new(value),
            });
        });
    }

    /// Takes the value of type `T`, if it was made with `made_with`; any
    /// other value of that type is dropped (asked again, it is worked out afresh).
    pub(crate) fn take<K: ?Sized, T: Any + Send>(&self, made_with: &K) -> Option<T> {
        let made_with = key(made_with);
        let worked = self.worked(|worked| {
            let at = worked.iter().position(|w| w.value.is::<T>())?;
            Some(worked.swap_remove(at))
        })?;
        if worked.made_with != made_with {
            return None;
        }
        worked.value.downcast::<T>().ok().map(|value| *value)
    }
}

/// A copy of a record starts with nothing worked out.
impl Clone for Ahead {
    fn clone(&self) -> Ahead {
        Ahead::default()
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{self, Config, EXAMPLE_CONFIG};
    use crate::event;
    use crate::record::{parse_batch, Received};
    use crate::Planner;

    fn example() -> Config {
        config::parse(EXAMPLE_CONFIG, "streamdex.example.toml").expect("the example config is valid")
    }

    /// The example without what the record fixtures need to plan or route
    /// anything: its index, its edge set and its routes.
    fn bare() -> Config {
        let mut text = String::new();
        let mut skipping = false;
        for line in EXAMPLE_CONFIG.lines() {
            if line.starts_with('[') {
                skipping = ["[[route]]", "[[index]]", "[[edge_set]]"].contains(&line.trim());
            }
            if !skipping {
                text.push_str(line);
                text.push('\n');
            }
        }
        config::parse(&text, "bare.toml").expect("the bare config is valid")
    }

    fn fixtures() -> Vec<u8> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        std::fs::read(dir.join("lambda-records.json")).expect("fixture")
    }

    /// What a consumer with `config` gets for each record: plan, events.
    fn consume(config: &Config, received: &[Received<'_>]) -> Vec<(crate::Plan, Option<usize>)> {
        let planner = Planner::new(config);
        received
            .iter()
            .filter_map(|r| {
                let record = r.record.as_ref().ok()?;
                let events = event::table_of(config, record).ok().map(|table| {
                    event::classify_received(config, table, r, record)
                        .events
                        .map_or(0, |e| e.len())
                });
                Some((planner.plan_received(r, record), events))
            })
            .collect()
    }

    fn prepare(config: &Config, received: &[Received<'_>]) {
        let planner = Planner::new(config);
        for r in received {
            planner.plan_ahead(r);
            event::classify_ahead(config, r);
        }
    }

    #[test]
    fn what_was_worked_out_ahead_is_what_the_consumer_would_work_out() {
        let (example, bare) = (example(), bare());
        let bytes = fixtures();
        let fresh = parse_batch(&bytes).expect("fixture");
        let expected = consume(&example, &fresh);
        // The fixtures plan mutations and route events: the check has teeth.
        assert!(expected.iter().any(|(plan, _)| !plan.mutations.is_empty()));
        assert!(expected.iter().any(|(_, events)| events.is_some_and(|n| n > 0)));
        assert_ne!(consume(&bare, &fresh), expected);

        let ahead = parse_batch(&bytes).expect("fixture");
        prepare(&example, &ahead);
        assert_eq!(consume(&example, &ahead), expected);
        // Taken, not kept: asked again, the consumer works it out afresh.
        assert_eq!(consume(&example, &ahead), expected);
    }

    #[test]
    fn a_consumer_with_another_config_does_not_take_what_was_worked_out_for_one() {
        let (example, bare) = (example(), bare());
        let bytes = fixtures();
        let expected = consume(&bare, &parse_batch(&bytes).expect("fixture"));

        let ahead = parse_batch(&bytes).expect("fixture");
        prepare(&example, &ahead);
        assert_eq!(consume(&bare, &ahead), expected);
    }
}
