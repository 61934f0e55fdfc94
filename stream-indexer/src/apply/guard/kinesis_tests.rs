//! A table read from a Kinesis data stream, whose records may come
//! reordered and more than once: any such delivery of a history leaves the
//! derived data exactly as the in-order delivery of a DynamoDB stream does.

use std::sync::Arc;

use model::config::{ChangeSource, Config, KinesisSource, Precision};
use model::delivery::{kinesis_event, kinesis_stream_arn};
use model::record::{ChangeRecord, CreationTime};
use model::testing;
use proptest::prelude::*;

use super::tests::{batches, indexer, written_in, TestIndexer};
use super::Guard;
use crate::test_support::{block, example};

/// The example config with every table read from Kinesis.
fn kinesis(precision: Precision) -> Arc<Config> {
    let mut config = (*example()).clone();
    for table in &mut config.tables {
        table.stream = ChangeSource::Kinesis(KinesisSource {
            precision,
            retention_hours: 24,
        });
    }
    config.pipeline.tombstone_ttl_hours = 48;
    Arc::new(config)
}

/// `records` with creation times a few microseconds apart, in order (what
/// DynamoDB stamps on the changes as they happen).
fn timed(records: Vec<ChangeRecord>, seed: u64) -> Vec<ChangeRecord> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut micros: u32 = 0;
    records
        .into_iter()
        .map(|mut record| {
            micros += rng.u32(1..40);
            record.created = Some(CreationTime {
                seconds: 1_763_730_000,
                nanos: micros * 1000 + rng.u32(..1000),
            });
            record
        })
        .collect()
}

/// A delivery of `records` reordered within `window` places and repeated:
/// each record, and each repeat of it (one in four has one), lands at most
/// `window` places after where it stood.
fn shuffled(records: &[ChangeRecord], window: usize, seed: u64) -> Vec<&ChangeRecord> {
    let mut rng = fastrand::Rng::with_seed(seed ^ 0x0dd);
    let mut keyed = Vec::with_capacity(records.len() * 5 / 4);
    for (i, record) in records.iter().enumerate() {
        keyed.push((i + rng.usize(..=window), keyed.len(), record));
        if rng.u8(..4) == 0 {
            keyed.push((i + rng.usize(..=window), keyed.len(), record));
        }
    }
    keyed.sort_by_key(|&(at, n, _)| (at, n));
    keyed.into_iter().map(|(_, _, record)| record).collect()
}

/// Delivers `delivery` as Lambda Kinesis events, in batches; each record
/// gets the next Kinesis sequence number (a repeat is a new Kinesis record).
fn deliver_kinesis(ix: &TestIndexer, delivery: &[&ChangeRecord], precision: Precision, seed: u64) -> usize {
    let arn = kinesis_stream_arn("changes");
    let mut sequence = 49_590_338_271_490_256_608u128;
    let mut stale = 0;
    for batch in batches(delivery, seed) {
        let payload = kinesis_event(
            batch.iter().map(|record| {
                sequence += 1;
                (*record, sequence.to_string())
            }),
            precision,
            &arn,
        );
        let outcome = block(ix.handle(&payload)).unwrap_or_else(|e| panic!("{e}"));
        assert!(outcome.failed.is_none(), "{:?}", outcome.failures);
        stale += outcome.stats.apply.stale;
    }
    stale
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Whatever the window and the repeats, the derived data ends as the
    /// in-order run of the same history through a DynamoDB stream leaves it.
    #[test]
    fn reordered_and_repeated_kinesis_records_end_as_in_order(
        history in proptest::collection::vec(testing::write(), 1..40),
        window in 0usize..16,
        millis in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let (ordered_store, records) = written_in(example(), &history);
        let ordered = indexer(&ordered_store, Guard::InOrder);
        for batch in batches(&records, seed) {
            let outcome = block(ordered.handle(&model::delivery::lambda_event(batch))).unwrap_or_else(|e| panic!("{e}"));
            prop_assert!(outcome.failed.is_none(), "{:?}", outcome.failures);
        }

        let precision = if millis { Precision::Millisecond } else { Precision::Microsecond };
        let (store, records) = written_in(kinesis(precision), &history);
        // At millisecond precision, changes a millisecond apart: what the
        // precision can tell apart (see docs/kinesis.md for the rest).
        let records = if millis {
            records
                .into_iter()
                .enumerate()
                .map(|(i, mut r)| {
                    r.created = Some(CreationTime { seconds: 1_763_730_000 + i as i64 / 1000, nanos: (i as u32 % 1000) * 1_000_000 + 17 });
                    r
                })
                .collect()
        } else {
            timed(records, seed)
        };
        let delivery = shuffled(&records, window, seed);
        // The Lambda's own guard: a Kinesis-read table guards itself.
        let unordered = indexer(&store, Guard::InOrder);
        deliver_kinesis(&unordered, &delivery, precision, seed);
        prop_assert_eq!(store.snapshot(), ordered_store.snapshot());
        prop_assert_eq!(store.snapshot(), store.recompute());
    }
}

#[test]
fn a_late_add_of_a_member_loses_to_its_newer_remove_but_not_to_a_sibling() {
    use testing::Write;
    // Two edges of one node: the second edge's records come first, and the
    // first edge's ADD comes after its own DELETE.
    let history = [
        Write::PutNode { node: 0, name: 1 },
        Write::PutEdge {
            node: 0,
            ty: 0,
            user: 1,
            role: Some(0),
        },
        Write::PutEdge {
            node: 0,
            ty: 0,
            user: 2,
            role: Some(0),
        },
        Write::DeleteEdge {
            node: 0,
            ty: 0,
            user: 1,
        },
    ];
    let (store, records) = written_in(kinesis(Precision::Microsecond), &history);
    let records = timed(records, 7);
    assert_eq!(records.len(), 4);
    let delivery = [
        &records[0],
        &records[2],
        &records[3],
        &records[1],
        &records[1],
        &records[2],
    ];
    let unordered = indexer(&store, Guard::InOrder);
    let stale = deliver_kinesis(&unordered, &delivery, Precision::Microsecond, 1);
    let sets = store.node_sets(0);
    let members: Vec<&String> = sets.values().flat_map(|s| s.members.iter()).collect();
    assert_eq!(members.len(), 1, "only the second edge: {sets:?}");
    assert!(
        members[0].contains("USER-2") || members[0].ends_with('2'),
        "{members:?}"
    );
    assert!(stale >= 3, "the late ADD and both repeats are skipped: {stale}");
    assert_eq!(store.snapshot(), store.recompute());
}
