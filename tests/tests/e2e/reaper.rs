//! The reaper over the in-memory tables (end to end: it needs both
//! consumers, which the reaper's crate does not depend on), fed by the
//! router and followed by the indexer: an expired node ends with no edge touching it and every
//! other node's edge set correct.

use std::sync::Arc;

use model::config::{self, Config};
use model::delivery::lambda_event;
use model::{Image, Value};
use stream_indexer::store::memory::{MemoryStore, StreamEntry};
use stream_indexer::{Indexer, MemoryQuarantine};

use event_router::{MemoryPublisher, Options, Reaped, Reaper, Router};
use infra::runner::graph::StoreGraph;
use model::Backoff;
use streamdex_tests::images::s;

fn example() -> Arc<Config> {
    Arc::new(config::parse(config::EXAMPLE_CONFIG, "example").expect("example"))
}

fn item(source: &str, target: &str, extra: &[(&str, &str)]) -> Image {
    let mut image = Image::from([("source".to_owned(), s(source)), ("target".to_owned(), s(target))]);
    for (k, v) in extra {
        image.insert((*k).to_owned(), s(v));
    }
    image
}

fn key(source: &str, target: &str) -> Image {
    item(source, target, &[])
}

fn block<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
        .block_on(f)
}

struct World {
    config: Arc<Config>,
    indexer: Indexer<Arc<MemoryStore>, MemoryQuarantine>,
    router: Router<MemoryPublisher, MemoryQuarantine>,
    reaper: Reaper<StoreGraph>,
}

impl World {
    fn new() -> World {
        let config = example();
        let store = Arc::new(MemoryStore::new(config.clone()));
        store.record_stream(true);
        World {
            indexer: Indexer::new(
                config.clone(),
                store.clone(),
                MemoryQuarantine::new(),
                Default::default(),
            ),
            router: Router::new(
                config.clone(),
                MemoryPublisher::new(),
                MemoryQuarantine::new(),
                Options::default(),
            ),
            reaper: Reaper::new(config.clone(), StoreGraph(store), Backoff::immediate(3)),
            config,
        }
    }

    fn store(&self) -> &Arc<MemoryStore> {
        &self.reaper.graph().0
    }

    /// Hands `entries` to both consumers, and the events of `reap` routes
    /// to the reaper; then the stream those wrote, until it is drained.
    /// Returns what the reaper did.
    fn deliver(&self, mut entries: Vec<StreamEntry>) -> Vec<Reaped> {
        let mut reaped = Vec::new();
        for _ in 0..20 {
            if entries.is_empty() {
                return reaped;
            }
            let payload = lambda_event(entries.iter().map(|e| &e.record));
            assert_eq!(block(self.indexer.handle(&payload)).expect("batch").failed, None);
            assert_eq!(block(self.router.handle(&payload)).expect("batch").failed, None);
            for entry in self.router.publisher().take() {
                if self
                    .config
                    .routes
                    .iter()
                    .any(|r| r.reap && r.detail_type == entry.detail_type)
                {
                    reaped.push(block(self.reaper.reap(entry.delivered().as_bytes())).expect("reaped"));
                }
            }
            entries = self.store().take_stream();
        }
        panic!("the stream never drained");
    }

    /// Delivers what the stream holds.
    fn settle(&self) -> Vec<Reaped> {
        self.deliver(self.store().take_stream())
    }

    /// Deletes an item as the TTL service would (its record says so), and
    /// delivers that.
    fn expire(&self, key: &Image) -> Vec<Reaped> {
        self.settle();
        self.store().delete_item("records", key).expect("delete");
        let mut entries = self.store().take_stream();
        for entry in &mut entries {
            entry.record.ttl_expiry = true;
        }
        self.deliver(entries)
    }
}

fn members(world: &World, node: &str) -> Vec<String> {
    let set = world.store().node_sets(0);
    set.get(node)
        .map(|n| n.members.iter().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn an_expired_node_loses_every_edge_and_the_other_sets_follow() {
    let world = World::new();
    let store = world.store();
    for node in ["USER-42", "GOAL-7", "TEAM-1", "GOAL-8"] {
        store.put_item("records", item(node, node, &[])).expect("put");
    }
    let edges = [
        ("GOAL-7", "GOALMEMBERSHIP-USER-42", "400-CONTRIBUTOR"),
        ("GOAL-7", "GOALMEMBERSHIP-USER-43", "400-CONTRIBUTOR"),
        ("GOAL-8", "GOALMEMBERSHIP-USER-42", "500-LEAD"),
        ("USER-42", "TEAMMEMBERSHIP-TEAM-1", "100-MEMBER"),
        ("TEAM-1", "TEAMMEMBERSHIP-USER-42", "100-MEMBER"),
        ("GOAL-8", "WATCHER-USER-42", "x"),
    ];
    for (source, target, role) in edges {
        store
            .put_item("records", item(source, target, &[("gsi0", role)]))
            .expect("put");
    }
    world.settle();
    assert_eq!(members(&world, "GOAL-7").len(), 2);

    let reaped = world.expire(&key("USER-42", "USER-42"));
    assert_eq!(reaped.len(), 1, "one Node Expired event reached the reaper");
    assert_eq!(reaped[0].node, "USER-42");
    assert_eq!(reaped[0].out_edges, 1);
    assert_eq!(reaped[0].in_edges, 3, "two goal memberships and a team membership");

    // No edge of an included type touches USER-42 any more; the edge of a
    // type the config does not declare is not the reaper's to find.
    let left: Vec<(String, String)> = store
        .items("records")
        .iter()
        .filter_map(|i| match (i.get("source"), i.get("target")) {
            (Some(Value::S(a)), Some(Value::S(b))) => Some((a.clone(), b.clone())),
            _ => None,
        })
        .collect();
    let touching: Vec<&(String, String)> = left
        .iter()
        .filter(|(a, b)| a == "USER-42" || b.ends_with("-USER-42"))
        .collect();
    assert_eq!(touching, [&("GOAL-8".to_owned(), "WATCHER-USER-42".to_owned())]);
    // The other nodes' sets followed through the stream.
    assert_eq!(members(&world, "GOAL-7").len(), 1);
    assert!(members(&world, "GOAL-8").is_empty());
    assert!(members(&world, "TEAM-1").is_empty());
    assert_eq!(
        store.snapshot(),
        store.recompute(),
        "every set and row as a recomputation gives"
    );

    // A redelivered event finds nothing more to delete.
    let event = r#"{"detail": {"table": "records", "keys": {"source": {"S": "USER-42"}, "target": {"S": "USER-42"}}, "sequenceNumber": "9"}}"#;
    let again = block(world.reaper.reap(event.as_bytes())).expect("reaped");
    assert_eq!((again.deleted, again.node_exists), (0, false));
    assert!(store.take_stream().is_empty(), "and writes nothing");
}

#[test]
fn a_node_written_again_is_not_reaped() {
    let world = World::new();
    let store = world.store();
    store.put_item("records", item("USER-1", "USER-1", &[])).expect("put");
    store
        .put_item("records", item("USER-1", "TEAMMEMBERSHIP-TEAM-1", &[("gsi0", "m")]))
        .expect("put");
    world.settle();
    let event = r#"{"detail": {"table": "records", "keys": {"source": {"S": "USER-1"}, "target": {"S": "USER-1"}}}}"#;
    let reaped = block(world.reaper.reap(event.as_bytes())).expect("reaped");
    assert!(reaped.node_exists);
    assert_eq!(reaped.deleted, 0);
    assert_eq!(store.items("records").len(), 2);
}

#[test]
fn a_bad_event_is_an_error_that_is_not_retried() {
    let world = World::new();
    let err = block(world.reaper.reap(br#"{"detail": {"table": "layers", "keys": {}}}"#)).expect_err("no edge set");
    assert!(!err.is_retryable());
    assert!(err.to_string().contains("no edge set"), "{err}");
}

#[test]
fn an_edge_changed_after_a_kinesis_node_expired_is_kept() {
    use event_router::{Ledger, MemoryLedger};
    use model::config::{ChangeSource, KinesisSource, Precision};
    use model::record::CreationTime;

    let mut config = (*example()).clone();
    for table in &mut config.tables {
        table.stream = ChangeSource::Kinesis(KinesisSource {
            precision: Precision::Microsecond,
            retention_hours: 24,
        });
    }
    let config = Arc::new(config);
    let store = Arc::new(MemoryStore::new(config.clone()));
    let older = item("USER-42", "TEAMMEMBERSHIP-TEAM-1", &[("gsi0", "m")]);
    let newer = item("GOAL-7", "GOALMEMBERSHIP-USER-42", &[("gsi0", "m")]);
    let unknown = item("GOAL-8", "GOALMEMBERSHIP-USER-42", &[("gsi0", "m")]);
    for edge in [&older, &newer, &unknown] {
        store.put_item("records", edge.clone()).expect("put");
    }
    // The node expired at 10:00:00.000100; the ledger knows one edge last
    // changed just before, the other just after.
    let at = |micros: u32| CreationTime {
        seconds: 1_763_719_200,
        nanos: micros * 1000,
    };
    let table = config.table("records").expect("records");
    let ledger = Arc::new(MemoryLedger::new());
    let entry = |image: &Image, created| {
        let version = model::Version::of_created(created, Precision::Microsecond).expect("version");
        model::ledger::Entry {
            item: model::ledger::item_of(table, image),
            version,
            expires: 0,
        }
    };
    block(ledger.note(&[entry(&older, at(99)), entry(&newer, at(50)), entry(&newer, at(101))])).expect("noted");
    let reaper = Reaper::new(config.clone(), StoreGraph(store.clone()), Backoff::immediate(3))
        .with_ledger(Some(ledger as Arc<dyn Ledger>));
    let event = r#"{"detail": {"table": "records", "keys": {"source": {"S": "USER-42"}, "target": {"S": "USER-42"}},
        "sequenceNumber": "9", "approximateCreationTime": "2025-11-21T10:00:00.0001Z"}}"#;
    let reaped = block(reaper.reap(event.as_bytes())).expect("reaped");
    assert_eq!((reaped.deleted, reaped.newer_kept), (2, 1), "{reaped:?}");
    let left: Vec<Image> = store.items("records");
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(
        left[0].get("source"),
        Some(&s("GOAL-7")),
        "the edge changed after the expiry stays"
    );
}
