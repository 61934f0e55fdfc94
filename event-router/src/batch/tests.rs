//! Router batch semantics: targeted cases, and a property test that runs
//! random batches through the router over a faulty publisher while
//! emulating Lambda's retry rules.

use std::collections::HashMap;

use aws_kit::quarantine::memory::MemoryQuarantine;
use model::config::{self, Config};
use model::delivery::lambda_event;
use model::record::{ChangeRecord, EventKind};
use model::Fault as PublishError;
use model::{Image, Value};
use proptest::prelude::*;

use super::*;
use crate::publish::memory::MemoryPublisher;

type TestRouter = Router<MemoryPublisher, MemoryQuarantine>;

fn example() -> Config {
    config::parse(config::EXAMPLE_CONFIG, "streamdex.example.toml").expect("valid")
}

fn router_with(config: Config) -> TestRouter {
    Router::new(
        Arc::new(config),
        MemoryPublisher::new(),
        MemoryQuarantine::new(),
        Options {
            concurrency: 3,
            backoff: Backoff::immediate(3),
            ..Options::default()
        },
    )
}

fn router() -> TestRouter {
    router_with(example())
}

fn s(v: &str) -> Value {
    Value::S(v.to_owned())
}

fn image(pairs: &[(&str, Value)]) -> Image {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
}

/// A record of `table` (`records` keys source/target, `layers` pk/sk).
fn record(table: &str, kind: EventKind, seq: u64, pk: &str, sk: &str, ttl: bool) -> ChangeRecord {
    let (pk_name, sk_name) = match table {
        "records" => ("source", "target"),
        "layers" => ("pk", "sk"),
        _ => ("id", "rel"),
    };
    let keys = image(&[(pk_name, s(pk)), (sk_name, s(sk))]);
    let mut item = keys.clone();
    item.insert(
        "payload".to_owned(),
        Value::N("12345678901234567890123456789012345678".to_owned()),
    );
    ChangeRecord {
        event_id: None,
        kind,
        table: Some(table.into()),
        source_arn: None,
        keys,
        old: (kind != EventKind::Insert).then(|| item.clone()),
        new: (kind != EventKind::Remove).then_some(item),
        sequence_number: format!("{seq:021}"),
        created: Some(CreationTime {
            seconds: 1_763_719_200 + i64::try_from(seq).unwrap_or(0),
            nanos: 0,
        }),
        size_bytes: None,
        view_type: None,
        ttl_expiry: ttl,
    }
}

fn block<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
        .block_on(f)
}

fn run(router: &TestRouter, records: &[ChangeRecord]) -> Outcome<RouterStats> {
    block(router.handle(&lambda_event(records))).expect("a batch")
}

fn detail(entry: &Entry) -> serde_json::Value {
    serde_json::from_str(&entry.detail).expect("detail is JSON")
}

/// (detail type, sequence number) of every published entry, in order.
fn published(router: &TestRouter) -> Vec<(String, String)> {
    router
        .publisher()
        .published()
        .iter()
        .map(|e| {
            let seq = detail(e)["sequenceNumber"].as_str().unwrap_or("?").to_owned();
            (e.detail_type.clone(), seq)
        })
        .collect()
}

#[test]
fn each_record_becomes_the_events_of_the_routes_it_matches() {
    let router = router();
    let records = [
        record("records", EventKind::Insert, 1, "GOAL-1", "GOAL-1", false),
        record("records", EventKind::Insert, 2, "TEAM-1", "TEAM-1", false),
        record(
            "records",
            EventKind::Insert,
            3,
            "GOAL-1",
            "GOALMEMBERSHIP-USER-1",
            false,
        ),
        record("records", EventKind::Remove, 4, "GOAL-2", "GOAL-2", true),
        record("records", EventKind::Remove, 5, "GOAL-3", "GOAL-3", false),
        record("layers", EventKind::Remove, 6, "lyr#a", "v1", true),
        record("layers", EventKind::Remove, 7, "lyr#b", "v1", false),
        record("layers", EventKind::Remove, 8, "other#c", "v1", true),
    ];
    let outcome = run(&router, &records);
    assert_eq!(outcome.failed, None);
    let want = [("Goal Inserted", 1), ("Node Expired", 4), ("Layer Expired", 6)];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(t, seq)| ((*t).to_owned(), format!("{seq:021}")))
        .collect();
    assert_eq!(published(&router), want);
    assert_eq!(outcome.stats.events, 3);
    assert_eq!(outcome.stats.published_by_type.get("Layer Expired"), Some(&1));
    assert_eq!(outcome.stats.calls, 1, "three small events, one call");

    // The detail is lossless: the 38-digit number is its exact text.
    let entries = router.publisher().published();
    let expired = detail(&entries[1]);
    assert_eq!(expired["expired"], true);
    assert_eq!(expired["eventName"], "REMOVE");
    assert_eq!(
        expired["oldImage"]["payload"]["N"],
        "12345678901234567890123456789012345678"
    );
    assert_eq!(expired["keys"]["source"]["S"], "GOAL-2");
    assert_eq!(entries[1].source, "streamdex");
}

#[test]
fn calls_hold_at_most_ten_entries_within_the_budget() {
    let router = router();
    let records: Vec<ChangeRecord> = (0..25)
        .map(|i| {
            record(
                "records",
                EventKind::Insert,
                i + 1,
                &format!("GOAL-{i}"),
                &format!("GOAL-{i}"),
                false,
            )
        })
        .collect();
    let outcome = run(&router, &records);
    assert_eq!(outcome.failed, None);
    assert_eq!(router.publisher().calls(), [10, 10, 5]);
    assert_eq!(published(&router).len(), 25);
}

#[test]
fn the_budget_packs_calls_by_size_and_strips_what_cannot_fit() {
    let mut config = example();
    config.events.max_request_bytes = 4096;
    let router = router_with(config);
    let big = "x".repeat(4000);
    let mut large = record("records", EventKind::Insert, 1, "GOAL-big", "GOAL-big", false);
    if let Some(new) = large.new.as_mut() {
        new.insert("blob".to_owned(), s(&big));
    }
    // Keys alone over the budget: no event can carry it.
    let huge_key = format!("GOAL-{}", "k".repeat(5000));
    let huge = record("records", EventKind::Insert, 2, &huge_key, &huge_key, false);
    let small: Vec<ChangeRecord> = (3..6)
        .map(|i| {
            record(
                "records",
                EventKind::Insert,
                i,
                &format!("GOAL-{i}"),
                &format!("GOAL-{i}"),
                false,
            )
        })
        .collect();
    let mut records = vec![large, huge];
    records.extend(small);
    let outcome = run(&router, &records);
    assert_eq!(outcome.failed, None);

    let entries = router.publisher().published();
    assert_eq!(entries.len(), 4);
    let first = detail(&entries[0]);
    assert_eq!(first["imagesOmitted"], true, "the large event went without its images");
    assert!(first.get("newImage").is_none());
    assert_eq!(first["keys"]["source"]["S"], "GOAL-big");
    assert_eq!(outcome.stats.images_omitted, 1);
    for entry in &entries {
        let size = entry.source.len() + entry.detail_type.len() + entry.detail.len();
        assert!(size <= 4096, "{size}");
    }

    let quarantined = router.quarantine().entries();
    assert_eq!(quarantined.len(), 1);
    let reason = &quarantined[0].reason;
    assert!(reason.contains(&format!("record {:021}", 2)), "{reason}");
    assert!(reason.contains("even without its images"), "{reason}");
    assert!(reason.contains("budget of 4096 bytes"), "{reason}");
    assert_eq!(quarantined[0].consumer, "event-router");
    assert!(quarantined[0].raw.contains("GOAL-kkk"), "the raw record is kept");
}

#[test]
fn retryable_entries_are_sent_again_and_published_once() {
    let router = router();
    let mut failures = 2;
    router.publisher().fail_entries(move |entry| {
        (entry.detail.contains("GOAL-2") && failures > 0).then(|| {
            failures -= 1;
            "ThrottlingException".to_owned()
        })
    });
    let records: Vec<ChangeRecord> = (1..=3)
        .map(|i| {
            record(
                "records",
                EventKind::Insert,
                i,
                &format!("GOAL-{i}"),
                &format!("GOAL-{i}"),
                false,
            )
        })
        .collect();
    let outcome = run(&router, &records);
    assert_eq!(outcome.failed, None);
    let mut seqs: Vec<String> = published(&router).into_iter().map(|(_, s)| s).collect();
    seqs.sort();
    assert_eq!(seqs.len(), 3, "each event once: {seqs:?}");
    assert_eq!(outcome.stats.retried, 2);
    assert_eq!(router.publisher().calls(), [3, 1, 1]);
}

#[test]
fn a_refused_entry_quarantines_its_record_only() {
    let router = router();
    router
        .publisher()
        .fail_entries(|entry| entry.detail.contains("GOAL-2").then(|| "MalformedDetail".to_owned()));
    let records: Vec<ChangeRecord> = (1..=3)
        .map(|i| {
            record(
                "records",
                EventKind::Insert,
                i,
                &format!("GOAL-{i}"),
                &format!("GOAL-{i}"),
                false,
            )
        })
        .collect();
    let outcome = run(&router, &records);
    assert_eq!(outcome.failed, None, "poison counts as handled");
    assert_eq!(published(&router).len(), 2);
    let quarantined = router.quarantine().entries();
    assert_eq!(quarantined.len(), 1);
    assert_eq!(
        quarantined[0].sequence_number.as_deref(),
        Some(format!("{:021}", 2).as_str())
    );
    assert!(
        quarantined[0].reason.contains("MalformedDetail"),
        "{}",
        quarantined[0].reason
    );
    assert!(
        quarantined[0].reason.contains("Goal Inserted"),
        "{}",
        quarantined[0].reason
    );
}

#[test]
fn persistent_throttling_fails_the_batch_from_the_lowest_record() {
    let router = router();
    router.publisher().fail_entries(|entry| {
        entry
            .detail
            .contains("\"GOAL-2\"")
            .then(|| "ThrottlingException".to_owned())
    });
    let records = [
        record("records", EventKind::Insert, 1, "GOAL-1", "GOAL-1", false),
        record("records", EventKind::Insert, 2, "GOAL-2", "GOAL-2", false),
        record("records", EventKind::Remove, 3, "GOAL-2", "GOAL-2", true),
        record("records", EventKind::Insert, 4, "GOAL-4", "GOAL-4", false),
    ];
    let outcome = run(&router, &records);
    assert_eq!(outcome.failed_at(), Some(format!("{:021}", 2).as_str()));
    assert_eq!(outcome.failures.len(), 1);
    assert_eq!(outcome.failures[0].fault.class(), model::Class::Transient);
    assert!(outcome.failures[0].fault.message().contains("ThrottlingException"));
    // GOAL-2's expiry shares the failed event's call; its own entry went
    // (nothing holds back an entry in the same call), but the record is
    // redelivered with the rest from record 2 on.
    let seqs: Vec<String> = published(&router).into_iter().map(|(_, s)| s).collect();
    assert!(seqs.contains(&format!("{:021}", 1)));
    assert!(seqs.contains(&format!("{:021}", 4)));
    assert!(router.quarantine().entries().is_empty());
}

#[test]
fn a_later_call_of_a_failed_group_is_never_sent() {
    let router = router();
    router.publisher().fail_entries(|entry| {
        entry
            .detail
            .contains("\"seq-first\"")
            .then(|| "ThrottlingException".to_owned())
    });
    // Twelve events of one partition key: calls of 10 and 2, the second
    // waiting for the first.
    let mut records: Vec<ChangeRecord> = (1..=12)
        .map(|i| record("records", EventKind::Insert, i, "GOAL-1", "GOAL-1", false))
        .collect();
    if let Some(new) = records[0].new.as_mut() {
        new.insert("marker".to_owned(), s("seq-first"));
    }
    let outcome = run(&router, &records);
    assert_eq!(outcome.failed_at(), Some(format!("{:021}", 1).as_str()));
    let seqs: Vec<String> = published(&router).into_iter().map(|(_, s)| s).collect();
    assert_eq!(
        seqs.len(),
        9,
        "the first call's other nine went; the second call waited: {seqs:?}"
    );
    assert!(!seqs.contains(&format!("{:021}", 11)));
}

#[test]
fn access_denied_fails_the_batch_and_quarantines_nothing() {
    let router = router();
    router
        .publisher()
        .fail_entries(|_| Some("NotAuthorizedForSourceException".to_owned()));
    let records = [record("records", EventKind::Insert, 5, "GOAL-1", "GOAL-1", false)];
    let outcome = run(&router, &records);
    assert_eq!(outcome.failed_at(), Some(format!("{:021}", 5).as_str()));
    assert_eq!(outcome.failures[0].fault.class(), model::Class::Deployment);
    assert!(router.quarantine().entries().is_empty());
}

#[test]
fn a_failed_call_is_retried_then_succeeds() {
    let router = router();
    router.publisher().fail_calls([
        PublishError::transient("ThrottlingException (HTTP 400)".to_owned()),
        PublishError::transient("timed out".to_owned()),
    ]);
    let records = [record("records", EventKind::Insert, 1, "GOAL-1", "GOAL-1", false)];
    let outcome = run(&router, &records);
    assert_eq!(outcome.failed, None);
    assert_eq!(published(&router).len(), 1);
    assert_eq!(outcome.stats.calls, 3);

    router
        .publisher()
        .fail_calls([PublishError::deployment("ResourceNotFoundException: bus".to_owned())]);
    let outcome = run(
        &router,
        &[record("records", EventKind::Insert, 2, "GOAL-2", "GOAL-2", false)],
    );
    assert_eq!(outcome.failed_at(), Some(format!("{:021}", 2).as_str()));
    assert!(outcome.failures[0]
        .fault
        .message()
        .contains("ResourceNotFoundException"));
}

#[test]
fn records_nothing_routes_and_unreadable_records() {
    let router = router();
    let issue = record("issues", EventKind::Insert, 1, "issue-1", "issue-1", false);
    let mut payload: serde_json::Value = serde_json::from_slice(&lambda_event([&issue])).expect("json");
    // An unreadable record, and one of an undeclared table.
    payload["Records"]
        .as_array_mut()
        .expect("records")
        .push(serde_json::json!({"eventName": "INSERT", "dynamodb": {"SequenceNumber": "2"}}));
    let mut stranger = lambda_event([&record("records", EventKind::Insert, 3, "GOAL-1", "GOAL-1", false)]);
    stranger = String::from_utf8(stranger)
        .expect("utf8")
        .replace("table/records/", "table/strangers/")
        .into_bytes();
    let stranger: serde_json::Value = serde_json::from_slice(&stranger).expect("json");
    payload["Records"]
        .as_array_mut()
        .expect("records")
        .push(stranger["Records"][0].clone());
    let outcome = block(router.handle(payload.to_string().as_bytes())).expect("batch");
    assert_eq!(outcome.failed, None);
    assert_eq!(outcome.stats.events, 0);
    let reasons: Vec<String> = router.quarantine().entries().into_iter().map(|e| e.reason).collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(reasons[0].contains("Keys"), "{reasons:?}");
    assert!(reasons[1].contains("`strangers` is not declared"), "{reasons:?}");
}

#[test]
fn a_payload_read_record_by_record_is_handled_as_its_parsed_records_are() {
    // Records that become events, and every way a record can be poison or
    // unreadable, in one payload.
    let records = [
        record("records", EventKind::Insert, 1, "GOAL-1", "GOAL-1", false),
        record("layers", EventKind::Remove, 2, "lyr#a", "lyrVrsn#v1", true),
        record("records", EventKind::Remove, 3, "GOAL-1", "GOAL-1", true),
        record("layers", EventKind::Insert, 4, "lyr#b", "lyrVrsn#v1", false),
    ];
    let mut payload: serde_json::Value = serde_json::from_slice(&lambda_event(&records)).expect("json");
    let list = payload["Records"].as_array_mut().expect("records");
    let mut stranger = list[0].clone();
    stranger["eventSourceARN"] = "arn:aws:dynamodb:local:000000000000:table/strangers/stream/x".into();
    stranger["dynamodb"]["SequenceNumber"] = "5".into();
    list.insert(1, stranger);
    list.insert(
        2,
        serde_json::json!({"eventName": "INSERT", "dynamodb": {"SequenceNumber": "6"}}),
    );
    list.insert(3, serde_json::json!("not a record"));
    let payload = payload.to_string().into_bytes();

    let streamed = router();
    let outcome = block(streamed.handle(&payload)).expect("a batch");
    let parsed = router();
    let received = model::record::parse_batch(&payload).expect("a batch");
    let expected = block(parsed.handle_received(&received));

    assert_eq!(outcome, expected);
    assert_eq!(streamed.publisher().published(), parsed.publisher().published());
    assert_eq!(streamed.quarantine().entries(), parsed.quarantine().entries());
    assert_eq!(outcome.stats.quarantined, 3, "{outcome:?}");
    assert!(outcome.stats.published > 0, "{outcome:?}");
}

/// A record that may become an event, or not, with other attributes in
/// its images: any value, poison ones too (40-digit numbers, empty sets,
/// `NULL` false...).
fn record_with_values() -> impl Strategy<Value = ChangeRecord> {
    let table = prop::sample::select(vec![
        ("records", "GOAL-1", "GOAL-1"),
        ("records", "USER-2", "USER-2"),
        ("records", "GOAL-1", "TEAMMEMBERSHIP-USER-2"),
        ("layers", "lyr#a", "lyrVrsn#v1"),
        ("layers", "other", "x"),
    ]);
    let kind = prop::sample::select(vec![EventKind::Insert, EventKind::Modify, EventKind::Remove]);
    let values = || proptest::collection::vec(("[a-c]", model::testing::attribute_value()), 0..3);
    (table, kind, any::<bool>(), 1u64..50, values(), values()).prop_map(
        |((table, pk, sk), kind, ttl, seq, new, old)| {
            let mut record = record(table, kind, seq, pk, sk, ttl && kind == EventKind::Remove);
            for (image, values) in [(&mut record.new, new), (&mut record.old, old)] {
                if let Some(image) = image {
                    image.extend(values);
                }
            }
            record
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The router glances at a payload's images (`model::record::read_batch` in `Mode::Glance`)
    /// and reads whole only the records a route takes: what it publishes,
    /// quarantines and answers is what it does with the records read whole.
    #[test]
    fn a_payload_is_routed_as_its_records_read_whole_are(
        records in proptest::collection::vec(record_with_values(), 1..12)
    ) {
        let payload = lambda_event(&records);
        let glanced = router();
        let outcome = block(glanced.handle(&payload)).expect("a batch");
        let whole = router();
        let received = model::record::parse_batch(&payload).expect("a batch");
        let expected = block(whole.handle_received(&received));
        prop_assert_eq!(&outcome, &expected);
        prop_assert_eq!(glanced.publisher().published(), whole.publisher().published());
        prop_assert_eq!(glanced.quarantine().entries(), whole.quarantine().entries());
    }
}

// ---------------------------------------------------------------------------
// Property: Lambda's retry rules over a faulty publisher.
// ---------------------------------------------------------------------------

/// A record of the generated history: a goal node insert or expiry, or a
/// layer expiry, on one of a few partition keys.
#[derive(Debug, Clone)]
struct Gen {
    table: &'static str,
    kind: EventKind,
    ttl: bool,
    pk: usize,
}

fn gen() -> impl Strategy<Value = Gen> {
    prop_oneof![
        (0usize..4).prop_map(|pk| Gen {
            table: "records",
            kind: EventKind::Insert,
            ttl: false,
            pk
        }),
        (0usize..4).prop_map(|pk| Gen {
            table: "records",
            kind: EventKind::Remove,
            ttl: true,
            pk
        }),
        (0usize..4).prop_map(|pk| Gen {
            table: "records",
            kind: EventKind::Remove,
            ttl: false,
            pk
        }),
        (0usize..4).prop_map(|pk| Gen {
            table: "layers",
            kind: EventKind::Remove,
            ttl: true,
            pk
        }),
    ]
}

/// The records of a history, each image tagged `rI` (its place), so that
/// a fault script and the checks can recognise it.
fn tagged(history: &[Gen]) -> Vec<ChangeRecord> {
    history
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let pk = match g.table {
                "records" => format!("GOAL-{}", g.pk),
                _ => format!("lyr#{}", g.pk),
            };
            let sk = if g.table == "records" {
                pk.clone()
            } else {
                "v1".to_owned()
            };
            let mut r = record(g.table, g.kind, i as u64 + 1, &pk, &sk, g.ttl);
            for image in [r.old.as_mut(), r.new.as_mut()].into_iter().flatten() {
                image.insert("tag".to_owned(), s(&format!("r{i}")));
            }
            r
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_event_is_published_at_least_once_or_its_record_quarantined(
        history in proptest::collection::vec(gen(), 1..60),
        throttle_per_mille in 0u32..600,
        refuse in proptest::collection::btree_set(0usize..60, 0..4),
        seed in any::<u64>(),
    ) {
        let router = router();
        let records = tagged(&history);
        let refused: Vec<String> = refuse.iter().map(|i| format!("\"r{i}\"")).collect();
        let mut rng = fastrand_like(seed);
        router.publisher().fail_entries(move |entry| {
            if refused.iter().any(|tag| entry.detail.contains(tag.as_str())) {
                return Some("InvalidArgument".to_owned());
            }
            (rng() % 1000 < u64::from(throttle_per_mille)).then(|| "ThrottlingException".to_owned())
        });

        // Lambda: deliver from the checkpoint until the batch succeeds.
        let mut from = 0;
        let mut invocations = 0;
        while from < records.len() {
            invocations += 1;
            prop_assert!(invocations < 500, "no progress");
            let outcome = run(&router, &records[from..]);
            match outcome.failed {
                None => from = records.len(),
                Some(failed) => {
                    let seq = failed.sequence_number();
                    prop_assert!(seq.is_some(), "the batch names a record, not the whole batch");
                    let at = records.iter().position(|r| Some(r.sequence_number.as_str()) == seq);
                    prop_assert!(at.is_some(), "failed names a record of the batch");
                    let at = at.unwrap_or(records.len());
                    prop_assert!(at >= from);
                    from = at;
                }
            }
        }

        // What should have been published: every routed record not refused.
        let quarantined: Vec<String> = router
            .quarantine()
            .entries()
            .into_iter()
            .filter_map(|e| e.sequence_number)
            .collect();
        let mut published_seqs: HashMap<String, usize> = HashMap::new();
        for (_, seq) in published(&router) {
            *published_seqs.entry(seq).or_default() += 1;
        }
        let config = example();
        for (i, r) in records.iter().enumerate() {
            let table = config.table(r.table.as_deref().unwrap_or("")).expect("table");
            let routed = !model::event::classify(&config, table, r).expect("classifies").is_empty();
            let is_refused = refuse.contains(&i);
            let in_quarantine = quarantined.contains(&r.sequence_number);
            prop_assert_eq!(routed && is_refused, in_quarantine, "record {} quarantined iff refused", i);
            if routed && !is_refused {
                prop_assert!(published_seqs.contains_key(&r.sequence_number), "record {} published", i);
            }
            if !routed {
                prop_assert!(!published_seqs.contains_key(&r.sequence_number));
            }
        }
        // Every call within the limits.
        prop_assert!(router.publisher().calls().iter().all(|&n| (1..=10).contains(&n)));
    }
}

/// A small deterministic generator (xorshift), so a failing case replays.
fn fastrand_like(seed: u64) -> impl FnMut() -> u64 + Send {
    let mut state = seed | 1;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

mod kinesis;
