//! The router's figures per batch, as one CloudWatch Embedded Metric Format line.

use std::time::Duration;

use model::metrics::{finish, NAMESPACE};
use model::metrics::{Emf, Unit};

use crate::batch::RouterStats;
use crate::reaper::Reaped;

/// The EMF line for one batch of `function`.
pub fn batch_line(function: &str, stats: &RouterStats, duration: Duration, now_ms: u64) -> String {
    let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    let emf = Emf::new(NAMESPACE, function, now_ms)
        .metric("Records", Unit::Count, count(stats.records))
        .metric("EventsPublished", Unit::Count, count(stats.published))
        .metric("EventsRetried", Unit::Count, count(stats.retried))
        .metric("EventsRefused", Unit::Count, count(stats.refused))
        .metric("Repeats", Unit::Count, count(stats.repeats))
        .metric("LedgerNotes", Unit::Count, count(stats.noted))
        .metric("ImagesOmitted", Unit::Count, count(stats.images_omitted))
        .metric("PutEventsCalls", Unit::Count, count(stats.calls))
        .metric("Quarantined", Unit::Count, count(stats.quarantined))
        .metric("FailedGroups", Unit::Count, count(stats.failed_groups));
    finish(emf, duration, stats.oldest_created, now_ms)
}

/// The reaper's line for one reaped event: whether the node was reaped (it
/// was still gone) and how many of its edges were deleted.
pub fn reaped_line(function: &str, reaped: &Reaped, duration: Duration, now_ms: u64) -> String {
    let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    Emf::new(NAMESPACE, function, now_ms)
        .metric("NodesReaped", Unit::Count, u64::from(!reaped.node_exists))
        .metric("EdgesDeleted", Unit::Count, count(reaped.deleted))
        .metric("Requests", Unit::Count, count(reaped.requests))
        .metric(
            "ReapDuration",
            Unit::Milliseconds,
            u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
        )
        .to_line()
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
            repeats: 3,
            noted: 6,
            oldest_created: Some(CreationTime { seconds: 10, nanos: 0 }),
            ..RouterStats::default()
        };
        let line = batch_line("event-router", &stats, Duration::from_millis(3), 12_000);
        let json: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(json["EventsPublished"], 4);
        assert_eq!(json["EventsRetried"], 2);
        assert_eq!(json["Quarantined"], 1);
        assert_eq!(json["Repeats"], 3);
        assert_eq!(json["LedgerNotes"], 6);
        assert_eq!(json["IteratorAge"], 2_000);
        assert_eq!(json["Function"], "event-router");
    }

    #[test]
    fn a_reaped_line_counts_a_node_only_when_it_was_still_gone() {
        let mut reaped = Reaped {
            deleted: 3,
            requests: 2,
            ..Reaped::default()
        };
        let json = |r: &Reaped| -> serde_json::Value {
            serde_json::from_str(&reaped_line("reaper", r, Duration::from_millis(4), 9)).expect("JSON")
        };
        let line = json(&reaped);
        assert_eq!(
            (line["NodesReaped"].as_u64(), line["EdgesDeleted"].as_u64()),
            (Some(1), Some(3))
        );
        assert_eq!(line["Function"], "reaper");
        reaped.node_exists = true;
        reaped.deleted = 0;
        let line = json(&reaped);
        assert_eq!(
            (line["NodesReaped"].as_u64(), line["EdgesDeleted"].as_u64()),
            (Some(0), Some(0))
        );
    }
}
