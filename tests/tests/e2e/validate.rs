//! Both consumers validate alike (`model::validate`): records that
//! DynamoDB would never stream, made by mutating a valid one, are
//! quarantined by the indexer and by the router with the same reason, and
//! valid ones by neither. Never a panic, never a silent accept.

use std::sync::Arc;

use event_router::{MemoryPublisher, Router};
use model::config::{self, Config, EXAMPLE_CONFIG};
use model::delivery::lambda_event;
use model::record::{ChangeRecord, CreationTime, EventKind};
use model::{validate, Image, Value};
use proptest::prelude::*;
use stream_indexer::{Indexer, MemoryQuarantine, MemoryStore};
use streamdex_tests::images::s;

/// A valid INSERT of an issue with custom fields (indexed) and tags.
fn issue(id: &str, seq: u32) -> ChangeRecord {
    let keys: Image = [("id".to_owned(), s(id)), ("rel".to_owned(), s(id))].into();
    let mut new = keys.clone();
    new.insert("num".to_owned(), Value::N("42".to_owned()));
    new.insert("state".to_owned(), s("open"));
    new.insert(
        "custom_fields".to_owned(),
        Value::M(
            [
                ("f000".to_owned(), Value::N("1.5".to_owned())),
                ("f001".to_owned(), s("x")),
            ]
            .into(),
        ),
    );
    new.insert("tags".to_owned(), Value::Ss(vec!["a".into(), "b".into()]));
    ChangeRecord {
        event_id: Some(format!("e{seq}")),
        kind: EventKind::Insert,
        table: Some("issues".into()),
        source_arn: Some(model::delivery::stream_arn("issues").into()),
        keys,
        old: None,
        new: Some(new),
        sequence_number: format!("{}", 100_000 + seq),
        created: Some(CreationTime {
            seconds: 1_763_719_200,
            nanos: 0,
        }),
        size_bytes: None,
        view_type: None,
        ttl_expiry: false,
    }
}

/// One way to spoil a record (or not: `Keep`).
#[derive(Debug, Clone, Copy)]
enum Spoil {
    Keep,
    HugeNumber,
    LongNumber,
    TinyNumberInMap,
    EmptySet,
    DuplicateNumbers,
    NullFalse,
    DropKey,
    OtherKeyInImage,
    TtlOnInsert,
    Milliseconds,
}

const SPOILS: [Spoil; 11] = [
    Spoil::Keep,
    Spoil::HugeNumber,
    Spoil::LongNumber,
    Spoil::TinyNumberInMap,
    Spoil::EmptySet,
    Spoil::DuplicateNumbers,
    Spoil::NullFalse,
    Spoil::DropKey,
    Spoil::OtherKeyInImage,
    Spoil::TtlOnInsert,
    Spoil::Milliseconds,
];

fn spoil(record: &mut ChangeRecord, how: Spoil) {
    let new = record.new.get_or_insert_with(Image::new);
    match how {
        Spoil::Keep => {}
        Spoil::HugeNumber => {
            new.insert("num".to_owned(), Value::N("1E+126".to_owned()));
        }
        Spoil::LongNumber => {
            new.insert("other".to_owned(), Value::N("1".repeat(39)));
        }
        Spoil::TinyNumberInMap => {
            new.insert(
                "custom_fields".to_owned(),
                Value::M([("f000".to_owned(), Value::N("1E-131".to_owned()))].into()),
            );
        }
        Spoil::EmptySet => {
            new.insert("tags".to_owned(), Value::Ss(Vec::new()));
        }
        Spoil::DuplicateNumbers => {
            new.insert("nums".to_owned(), Value::Ns(vec!["1".to_owned(), "1.0".to_owned()]));
        }
        Spoil::NullFalse => {
            new.insert("gone".to_owned(), Value::Null(false));
        }
        Spoil::DropKey => {
            record.keys.remove("rel");
        }
        Spoil::OtherKeyInImage => {
            new.insert("id".to_owned(), s("someone-else"));
        }
        Spoil::TtlOnInsert => record.ttl_expiry = true,
        Spoil::Milliseconds => {
            record.created = Some(CreationTime {
                seconds: 1_763_719_200_000,
                nanos: 0,
            });
        }
    }
}

fn config() -> Arc<Config> {
    Arc::new(config::parse(EXAMPLE_CONFIG, "example").expect("the example config"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn both_consumers_quarantine_exactly_the_invalid_records(
        spoils in proptest::collection::vec((0usize..SPOILS.len(), 0usize..SPOILS.len()), 1..8),
    ) {
        let config = config();
        let table = config.table("issues").expect("the issues table").clone();
        let mut records = Vec::new();
        let mut invalid = Vec::new();
        for (i, (a, b)) in spoils.iter().enumerate() {
            let mut record = issue(&format!("i{i}"), i as u32);
            spoil(&mut record, SPOILS[*a]);
            spoil(&mut record, SPOILS[*b]);
            if let Err(why) = validate::check(&record, &table) {
                invalid.push((record.sequence_number.clone(), why.to_string()));
            }
            records.push(record);
        }
        let payload = lambda_event(records.iter());
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        let indexer = Indexer::new(
            config.clone(),
            Arc::new(MemoryStore::new(config.clone())),
            MemoryQuarantine::new(),
            Default::default(),
        );
        let router = Router::new(config.clone(), MemoryPublisher::new(), MemoryQuarantine::new(), Default::default());
        let indexed = runtime.block_on(indexer.handle(&payload)).expect("a batch");
        let routed = runtime.block_on(router.handle(&payload)).expect("a batch");
        prop_assert_eq!(indexed.failed, None);
        prop_assert_eq!(routed.failed, None);
        // Each invalid record, quarantined by both, with one reason (the
        // parser's, or `model::validate`'s); nothing else quarantined.
        let reasons = |quarantined: &[model::settlement::Quarantined]| -> Vec<(String, String)> {
            quarantined
                .iter()
                .map(|q| (q.sequence_number.clone().unwrap_or_default(), q.reason.to_string()))
                .collect()
        };
        let (by_indexer, by_router) = (reasons(&indexed.quarantined), reasons(&routed.quarantined));
        let seqs = |got: &[(String, String)]| got.iter().map(|(seq, _)| seq.clone()).collect::<Vec<_>>();
        let want: Vec<String> = invalid.iter().map(|(seq, _)| seq.clone()).collect();
        prop_assert_eq!(seqs(&by_indexer), want.clone(), "indexer: {:?} against {:?}", by_indexer, invalid);
        prop_assert_eq!(seqs(&by_router), want, "router: {:?} against {:?}", by_router, invalid);
        prop_assert_eq!(&by_indexer, &by_router, "the same reasons");
    }
}
