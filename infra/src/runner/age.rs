//! Iterator age and its alarm, per shard and consumer: the age of the
//! oldest record the consumer has not dealt with yet (0 when it has caught
//! up), against the config's `[alarms]` thresholds. The alarm has three
//! levels; every change of level is a [`Transition`] the runner logs
//! (`OK → ALARM (warn) → ALARM (page) → OK`).

use std::fmt;

use model::config::AlarmConfig;

/// How far behind a consumer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Ok,
    /// At least `iterator_age_warn_seconds`.
    Warn,
    /// At least `iterator_age_page_seconds`.
    Page,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Ok => "OK",
            Level::Warn => "ALARM (warn)",
            Level::Page => "ALARM (page)",
        })
    }
}

/// The thresholds, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    pub warn_ms: u64,
    pub page_ms: u64,
}

impl Thresholds {
    pub fn of(alarms: &AlarmConfig) -> Thresholds {
        Thresholds {
            warn_ms: alarms.iterator_age_warn_seconds.saturating_mul(1000),
            page_ms: alarms.iterator_age_page_seconds.saturating_mul(1000),
        }
    }

    /// The level of an age.
    pub fn level(&self, age_ms: u64) -> Level {
        if age_ms >= self.page_ms {
            Level::Page
        } else if age_ms >= self.warn_ms {
            Level::Warn
        } else {
            Level::Ok
        }
    }
}

/// A change of level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    pub from: Level,
    pub to: Level,
    pub age_ms: u64,
}

/// One alarm's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alarm {
    level: Level,
}

impl Default for Alarm {
    fn default() -> Alarm {
        Alarm { level: Level::Ok }
    }
}

impl Alarm {
    pub fn level(&self) -> Level {
        self.level
    }

    /// Takes a new age; returns the transition when the level changed.
    pub fn observe(&mut self, age_ms: u64, thresholds: &Thresholds) -> Option<Transition> {
        let to = thresholds.level(age_ms);
        (to != self.level).then(|| {
            let from = std::mem::replace(&mut self.level, to);
            Transition { from, to, age_ms }
        })
    }
}

/// How long a DynamoDB stream keeps a record: 24 h from its creation,
/// after which an unread record is trimmed, lost to every consumer.
pub const STREAM_RETENTION_MS: u64 = model::config::limits::STREAM_RETENTION_SECONDS.unsigned_abs() * 1000;

/// How long the stream a table's changes come from keeps a record: a
/// DynamoDB stream's 24 h, or the Kinesis data stream's `retention_hours`.
pub fn retention_ms(source: model::config::ChangeSource) -> u64 {
    match source {
        model::config::ChangeSource::DynamoDb => STREAM_RETENTION_MS,
        model::config::ChangeSource::Kinesis(kinesis) => u64::from(kinesis.retention_hours) * 3_600_000,
    }
}

/// Time left before the oldest unread record, `age_ms` old, is trimmed
/// from a stream that keeps records `retention_ms` (0: it may be gone
/// already).
pub fn time_left_ms(retention_ms: u64, age_ms: u64) -> u64 {
    retention_ms.saturating_sub(age_ms)
}

/// Milliseconds as a short human duration: `850 ms`, `42 s`, `7 min 5 s`, `3 h 2 min`.
pub fn human(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0 => format!("{ms} ms"),
        1..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_left_counts_down_from_the_stream_s_retention() {
        let day = retention_ms(model::config::ChangeSource::DynamoDb);
        assert_eq!(time_left_ms(day, 0), 86_400_000);
        assert_eq!(time_left_ms(day, 3_600_000), 82_800_000);
        assert_eq!(time_left_ms(day, 86_400_000), 0);
        assert_eq!(time_left_ms(day, u64::MAX), 0);
        let week = retention_ms(model::config::ChangeSource::Kinesis(model::config::KinesisSource {
            precision: model::config::Precision::Microsecond,
            retention_hours: 168,
        }));
        assert_eq!(time_left_ms(week, 3_600_000), 167 * 3_600_000);
    }

    #[test]
    fn an_alarm_reports_each_change_of_level_once() {
        let t = Thresholds {
            warn_ms: 300_000,
            page_ms: 3_600_000,
        };
        let mut alarm = Alarm::default();
        assert_eq!(alarm.observe(299_999, &t), None);
        let up = alarm.observe(300_000, &t).map(|t| (t.from, t.to));
        assert_eq!(up, Some((Level::Ok, Level::Warn)));
        assert_eq!(alarm.observe(400_000, &t), None, "no repeat while it stays");
        let page = alarm.observe(3_600_000, &t).map(|t| (t.from, t.to));
        assert_eq!(page, Some((Level::Warn, Level::Page)));
        let ok = alarm.observe(0, &t).map(|t| (t.from, t.to));
        assert_eq!(ok, Some((Level::Page, Level::Ok)));
        assert_eq!(alarm.level(), Level::Ok);
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(human(850), "850 ms");
        assert_eq!(human(42_000), "42 s");
        assert_eq!(human(425_000), "7 min 5 s");
        assert_eq!(human(10_920_000), "3 h 2 min");
    }
}
