//! The indexer's figures per batch, as one CloudWatch Embedded Metric Format line.

use std::time::Duration;

use model::metrics::{Emf, Unit};

use crate::BatchStats;

pub use model::metrics::{finish, iterator_age_ms, NAMESPACE};

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

#[cfg(test)]
mod tests {
    use super::*;
    use model::record::CreationTime;

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
