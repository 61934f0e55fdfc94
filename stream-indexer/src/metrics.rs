//! The indexer's figures per batch, as one CloudWatch Embedded Metric Format line.

use std::time::Duration;

use model::metrics::{Emf, Unit};
use model::record::CreationTime;

use crate::BatchStats;

/// The CloudWatch namespace of every streamdex metric.
pub const NAMESPACE: &str = "streamdex";

/// Iterator age: from the oldest record's approximate creation to `now_ms`
/// (epoch milliseconds); zero for a clock behind the record.
pub fn iterator_age_ms(oldest: CreationTime, now_ms: u64) -> u64 {
    let created_ms = u64::try_from(oldest.seconds)
        .unwrap_or(0)
        .saturating_mul(1000)
        .saturating_add(u64::from(oldest.nanos / 1_000_000));
    now_ms.saturating_sub(created_ms)
}

/// The EMF line for one batch of `function`.
pub fn batch_line(function: &str, stats: &BatchStats, duration: Duration, now_ms: u64) -> String {
    let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    let a = &stats.apply.applied;
    let emf = Emf::new(NAMESPACE, function, now_ms)
        .metric("Records", Unit::Count, count(stats.records))
        .metric("RowsPut", Unit::Count, count(a.put_row))
        .metric("RowsDeleted", Unit::Count, count(a.delete_row))
        .metric("MembersAdded", Unit::Count, count(a.add_member))
        .metric("MembersRemoved", Unit::Count, count(a.remove_member))
        .metric("SetsRestored", Unit::Count, count(a.restore_set))
        .metric("Requests", Unit::Count, count(stats.apply.requests.total()))
        .metric("Retries", Unit::Count, count(stats.apply.requests.retries))
        .metric("NodesFlagged", Unit::Count, count(stats.apply.flagged))
        .metric("Quarantined", Unit::Count, count(stats.quarantined))
        .metric("FailedGroups", Unit::Count, count(stats.failed_groups));
    finish(emf, duration, stats.oldest_created, now_ms)
}

/// Ends a consumer's batch line: its duration and, when the batch had a
/// creation time, the iterator age (shared by both consumers).
pub fn finish(emf: Emf, duration: Duration, oldest: Option<CreationTime>, now_ms: u64) -> String {
    let mut emf = emf.metric(
        "BatchDuration",
        Unit::Milliseconds,
        u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
    );
    if let Some(oldest) = oldest {
        emf = emf.metric("IteratorAge", Unit::Milliseconds, iterator_age_ms(oldest, now_ms));
    }
    emf.to_line()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iterator_age_counts_from_the_oldest_record() {
        let oldest = CreationTime {
            seconds: 1_763_719_200,
            nanos: 500_000_000,
        };
        assert_eq!(iterator_age_ms(oldest, 1_763_719_200_500 + 2_000), 2_000);
        assert_eq!(
            iterator_age_ms(oldest, 0),
            0,
            "a clock behind the record gives zero, not a wrap"
        );
    }

    #[test]
    fn a_batch_line_carries_the_figures() {
        let mut stats = BatchStats {
            records: 7,
            quarantined: 1,
            ..BatchStats::default()
        };
        stats.apply.applied.put_row = 3;
        stats.oldest_created = Some(CreationTime { seconds: 10, nanos: 0 });
        let line = batch_line("stream-indexer", &stats, Duration::from_millis(12), 15_000);
        let json: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(json["Records"], 7);
        assert_eq!(json["RowsPut"], 3);
        assert_eq!(json["Quarantined"], 1);
        assert_eq!(json["BatchDuration"], 12);
        assert_eq!(json["IteratorAge"], 5_000);
        assert_eq!(json["Function"], "stream-indexer");
    }
}
