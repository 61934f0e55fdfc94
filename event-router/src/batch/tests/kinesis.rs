//! Records of tables read from a Kinesis data stream, delivered reordered
//! and repeated, through Lambda's retries from the failed record: every
//! change's events are published exactly once, repeats of changes with
//! events are counted, and a late change is still published with its own
//! creation time.

use std::sync::Arc;

use model::config::{ChangeSource, KinesisSource, Precision};
use model::delivery::{kinesis_event, kinesis_stream_arn};

use super::*;
use crate::ledger::MemoryLedger;

fn kinesis_router(ledger: Option<Arc<MemoryLedger>>) -> TestRouter {
    let mut config = example();
    for table in &mut config.tables {
        table.stream = ChangeSource::Kinesis(KinesisSource {
            precision: Precision::Microsecond,
            retention_hours: 24,
        });
    }
    router_with(config).with_ledger(ledger.map(|l| l as Arc<dyn Ledger>))
}

/// `records` reordered within `window` places, one in four repeated.
fn shuffled(records: &[ChangeRecord], window: usize, seed: u64) -> Vec<&ChangeRecord> {
    let mut next = fastrand_like(seed);
    let mut keyed = Vec::new();
    for (i, record) in records.iter().enumerate() {
        let at = |n: u64| i + usize::try_from(n % (window as u64 + 1)).unwrap_or(0);
        keyed.push((at(next()), keyed.len(), record));
        if next().is_multiple_of(4) {
            keyed.push((at(next()), keyed.len(), record));
        }
    }
    keyed.sort_by_key(|&(at, n, _)| (at, n));
    keyed.into_iter().map(|(_, _, r)| r).collect()
}

/// Delivers `delivery` as Lambda does from a Kinesis shard: batches of at
/// most `batch`, each retried from its failed record until it succeeds.
/// Returns the repeats counted.
fn deliver(router: &TestRouter, delivery: &[&ChangeRecord], batch: usize) -> Result<usize, TestCaseError> {
    let arn = kinesis_stream_arn("changes");
    let sequence = |i: usize| (1_000_000 + i).to_string();
    let (mut from, mut invocations, mut repeats) = (0, 0, 0);
    while from < delivery.len() {
        invocations += 1;
        prop_assert!(invocations < 1000, "no progress");
        let end = (from + batch).min(delivery.len());
        let payload = kinesis_event(
            delivery[from..end]
                .iter()
                .enumerate()
                .map(|(i, r)| (*r, sequence(from + i))),
            Precision::Microsecond,
            &arn,
        );
        let outcome = block(router.handle(&payload)).expect("a batch");
        repeats += outcome.stats.repeats;
        match outcome.failed {
            None => from = end,
            Some(failed) => {
                let at = (from..end).find(|&i| failed.sequence_number() == Some(sequence(i).as_str()));
                prop_assert!(at.is_some(), "the failure names a Kinesis sequence number of the batch");
                from = at.unwrap_or(end);
            }
        }
    }
    Ok(repeats)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn each_change_is_published_once_whatever_the_order_repeats_and_retries(
        history in proptest::collection::vec(gen(), 1..50),
        window in 0usize..10,
        batch in 1usize..12,
        throttle_per_mille in 0u32..400,
        seed in any::<u64>(),
    ) {
        let router = kinesis_router(Some(Arc::new(MemoryLedger::new())));
        let records = tagged(&history);
        let delivery = shuffled(&records, window, seed);
        let mut next = fastrand_like(seed ^ 7);
        router.publisher().fail_entries(move |_| {
            (next() % 1000 < u64::from(throttle_per_mille)).then(|| "ThrottlingException".to_owned())
        });
        let repeats = deliver(&router, &delivery, batch)?;

        let config = router.config().clone();
        let mut published: HashMap<String, usize> = HashMap::new();
        for entry in router.publisher().published() {
            let detail = detail(&entry);
            let tag = detail["newImage"]["tag"]["S"]
                .as_str()
                .or_else(|| detail["oldImage"]["tag"]["S"].as_str())
                .unwrap_or("?")
                .to_owned();
            *published.entry(tag).or_default() += 1;
        }
        // Deliveries after the first of changes with events: each a repeat.
        let mut repeated = 0;
        for (i, r) in records.iter().enumerate() {
            let table = config.table(r.table.as_deref().unwrap_or("")).expect("table");
            let events = model::event::classify(&config, table, r).expect("classifies").len();
            prop_assert_eq!(published.get(&format!("r{i}")).copied().unwrap_or(0), events, "record {}", i);
            if events > 0 {
                repeated += delivery.iter().filter(|d| std::ptr::eq(**d, r)).count() - 1;
            }
        }
        prop_assert!(repeats >= repeated, "every repeat of a change with events counted: {} < {}", repeats, repeated);
        prop_assert!(router.quarantine().entries().is_empty());
    }
}

#[test]
fn without_a_ledger_only_repeats_within_a_batch_are_dropped() {
    let records = tagged(&[Gen {
        table: "layers",
        kind: EventKind::Remove,
        ttl: true,
        pk: 1,
    }]);
    let twice = [&records[0], &records[0]];
    let router = kinesis_router(None);
    assert_eq!(deliver(&router, &twice, 2).ok(), Some(1));
    assert_eq!(router.publisher().published().len(), 1);
    assert_eq!(deliver(&router, &twice, 1).ok(), Some(0));
    assert_eq!(
        router.publisher().published().len(),
        3,
        "across batches, only a ledger tells"
    );
    let router = kinesis_router(Some(Arc::new(MemoryLedger::new())));
    assert_eq!(deliver(&router, &twice, 1).ok(), Some(1));
    assert_eq!(router.publisher().published().len(), 1);
}

#[test]
fn a_late_change_is_published_with_its_own_creation_time() {
    let router = kinesis_router(Some(Arc::new(MemoryLedger::new())));
    // A layer expired twice (written again between): two changes of one
    // item, both routed; the newer comes first.
    let older = record("layers", EventKind::Remove, 1, "lyr#1", "v1", true);
    let newer = record("layers", EventKind::Remove, 2, "lyr#1", "v1", true);
    assert_eq!(deliver(&router, &[&newer, &older], 1).ok(), Some(0), "not a repeat");
    let times: Vec<String> = router
        .publisher()
        .published()
        .iter()
        .map(|e| detail(e)["approximateCreationTime"].as_str().unwrap_or("?").to_owned())
        .collect();
    assert_eq!(times.len(), 2, "both published: {times:?}");
    assert!(
        times[1] < times[0],
        "the late one second, with its own, older time: {times:?}"
    );
    // Delivered again, neither publishes.
    assert_eq!(deliver(&router, &[&older, &newer], 2).ok(), Some(2));
    assert_eq!(router.publisher().published().len(), 2);
}

#[test]
fn a_node_change_without_events_is_not_noted_whoever_made_it() {
    let ledger = Arc::new(MemoryLedger::new());
    let router = kinesis_router(Some(ledger.clone()));
    let set = router.config().edge_sets[0].clone();
    // A node whose edge set and version attributes alone change: the
    // indexer's own write.
    let mut own = record("records", EventKind::Modify, 1, "GOAL-1", "GOAL-1", false);
    if let Some(new) = own.new.as_mut() {
        new.insert(set.attribute.clone(), Value::Ss(vec!["TEAM-1".to_owned()]));
        new.insert(
            model::version::member_version_attribute("TEAM-1"),
            s("00000000000000000000001763719200000000"),
        );
    }
    // The same node changed by the application.
    let mut domain = record("records", EventKind::Modify, 2, "GOAL-1", "GOAL-1", false);
    if let Some(new) = domain.new.as_mut() {
        new.insert("title".to_owned(), s("renamed"));
    }
    // An edge of that node, which the reaper may delete.
    let edge = record("records", EventKind::Modify, 3, "GOAL-1", "TEAM-1", false);
    let handle = |record: &ChangeRecord| block(router.handle_received(&[Received::typed(record.clone())]));
    assert!(handle(&own).failed.is_none());
    assert_eq!(ledger.len(), 0, "the pipeline's own write is not noted");
    assert!(handle(&domain).failed.is_none());
    assert_eq!(ledger.len(), 0, "nor the application's change of the node");
    assert!(handle(&edge).failed.is_none());
    assert_eq!(ledger.len(), 1, "a change of an edge is");
}

#[test]
fn a_change_is_noted_when_it_has_events_or_the_reaper_may_delete_its_item() {
    let ledger = Arc::new(MemoryLedger::new());
    let router = kinesis_router(Some(ledger.clone()));
    assert!(router.config().reaps("records") && !router.config().reaps("layers"));
    let noted = |record: &ChangeRecord| {
        let before = ledger.len();
        let outcome = block(router.handle_received(&[Received::typed(record.clone())]));
        assert!(outcome.failed.is_none(), "{:?}", outcome.failed);
        let noted = ledger.len() - before;
        assert_eq!(outcome.stats.noted, noted, "the router counts what it noted");
        noted
    };
    // No events, and a table the reaper does not reap: nothing to note.
    assert_eq!(
        noted(&record("issues", EventKind::Insert, 1, "issue-1", "issue-1", false)),
        0
    );
    assert_eq!(noted(&record("layers", EventKind::Insert, 2, "lyr#a", "v1", false)), 0);
    // Events ("Layer Expired"): noted, so that a repeat publishes nothing.
    assert_eq!(noted(&record("layers", EventKind::Remove, 3, "lyr#a", "v1", true)), 1);
    // No events, but the reaper reads when an edge of a reaped table last
    // changed.
    assert_eq!(
        noted(&record("records", EventKind::Insert, 4, "TEAM-1", "GOAL-1", false)),
        1
    );
    // A node of that table without events: the reaper never deletes a node.
    assert_eq!(
        noted(&record("records", EventKind::Insert, 5, "TEAM-1", "TEAM-1", false)),
        0
    );
    // With events ("Goal Inserted"), a node is noted.
    assert_eq!(
        noted(&record("records", EventKind::Insert, 6, "GOAL-1", "GOAL-1", false)),
        1
    );
}
