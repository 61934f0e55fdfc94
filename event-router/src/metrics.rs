//! The router's figures per batch, as one CloudWatch Embedded Metric Format line.

use std::time::Duration;

use model::metrics::{finish, NAMESPACE};
use model::metrics::{Emf, Unit};

use crate::batch::RouterStats;

/// The EMF line for one batch of `function`.
pub fn batch_line(function: &str, stats: &RouterStats, duration: Duration, now_ms: u64) -> String {
    let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    let emf = Emf::new(NAMESPACE, function, now_ms)
        .metric("Records", Unit::Count, count(stats.records))
        .metric("EventsPublished", Unit::Count, count(stats.published))
        .metric("EventsRetried", Unit::Count, count(stats.retried))
        .metric("EventsRefused", Unit::Count, count(stats.refused))
        .metric("ImagesOmitted", Unit::Count, count(stats.images_omitted))
        .metric("PutEventsCalls", Unit::Count, count(stats.calls))
        .metric("Quarantined", Unit::Count, count(stats.quarantined))
        .metric("FailedGroups", Unit::Count, count(stats.failed_groups));
    finish(emf, duration, stats.oldest_created, now_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::record::CreationTime;

    #[test]
    fn a_batch_line_carries_the_router_figures() {
        let stats = RouterStats {
            records: 5,
            published: 4,
            retried: 2,
            quarantined: 1,
            oldest_created: Some(CreationTime { seconds: 10, nanos: 0 }),
            ..RouterStats::default()
        };
        let line = batch_line("event-router", &stats, Duration::from_millis(3), 12_000);
        let json: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(json["EventsPublished"], 4);
        assert_eq!(json["EventsRetried"], 2);
        assert_eq!(json["Quarantined"], 1);
        assert_eq!(json["IteratorAge"], 2_000);
        assert_eq!(json["Function"], "event-router");
    }
}
