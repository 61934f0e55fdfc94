//! Cost against batch size: every path of a batch (the indexer, the router,
//! the reaper fed by the router's expiry events) on a 1,000-record and a
//! 10,000-record batch of the example mix (node and layer expiries marked as
//! the TTL service's). Linear paths cost about 10x as much for the larger
//! batch; criterion's throughput (records/s) shows it as the same rate.
//!
//! Both batches run against tables of the same size: the batch is the last
//! part of a history over a fixed key space ([`TABLES`] changes made before
//! it), so what grows is the batch, not the tables. And the 10,000 records
//! are handled once more as ten batches of 1,000 (`..._in_1000s`): the same
//! records and work, so the ratio of the two is what the batch's size alone
//! costs.
//!
//! `cargo bench -p streamdex-tests --features testing --bench scaling`

use std::sync::Arc;

#[global_allocator]
static ALLOCATOR: aws_kit::alloc::Allocator = aws_kit::alloc::Allocator;

use aws_kit::quarantine::memory::MemoryQuarantine;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use event_router::{MemoryPublisher, Options, Reaper, Router};
use infra::runner::graph::StoreGraph;
use model::config::{self, Config, EXAMPLE_CONFIG};
use model::delivery::lambda_event;
use model::{Backoff, EventKind};
use stream_indexer::workload::write_mix_over;
use stream_indexer::{Indexer, MemoryStore};

/// The key space of the tables, and the changes made before the batch.
const TABLES: usize = 20_000;

/// A store holding the final tables of a history of `TABLES + records`
/// changes over a `TABLES` key space, and its last `records` changes as one
/// Lambda payload (expiries marked).
fn history(config: &Arc<Config>, records: usize) -> (Arc<MemoryStore>, Vec<u8>, Vec<Vec<u8>>, usize) {
    let store = MemoryStore::new(config.clone());
    write_mix_over(&store, TABLES + records, TABLES, 7, true);
    let mut stream: Vec<_> = store.take_stream().into_iter().map(|e| e.record).collect();
    stream.drain(..stream.len().saturating_sub(records));
    store.record_stream(false);
    for record in &mut stream {
        let node = record.keys.contains_key("source") && record.keys.get("source") == record.keys.get("target");
        let layer = record.table.as_deref() == Some("layers");
        if record.kind == EventKind::Remove && (node || layer) {
            record.ttl_expiry = true;
        }
    }
    let n = stream.len();
    let in_1000s = stream.chunks(1_000).map(|c| lambda_event(c.iter())).collect();
    (Arc::new(store), lambda_event(stream.iter()), in_1000s, n)
}

fn bench(c: &mut Criterion) {
    let config = Arc::new(config::parse(EXAMPLE_CONFIG, "streamdex.example.toml").expect("example config"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("scaling");
    group.sample_size(10);
    for size in [1_000, 10_000] {
        let (store, payload, in_1000s, records) = history(&config, size);
        group.throughput(Throughput::Elements(records as u64));

        let indexer = Indexer::new(
            config.clone(),
            store.clone(),
            MemoryQuarantine::new(),
            Default::default(),
        );
        group.bench_function(format!("indexer_{size}"), |b| {
            b.iter(|| runtime.block_on(indexer.handle(&payload)).expect("handled"))
        });
        if in_1000s.len() > 1 {
            group.bench_function(format!("indexer_{size}_in_1000s"), |b| {
                b.iter(|| {
                    for payload in &in_1000s {
                        let _ = runtime.block_on(indexer.handle(payload)).expect("handled");
                    }
                })
            });
        }

        let router = || {
            Router::new(
                config.clone(),
                MemoryPublisher::new(),
                MemoryQuarantine::new(),
                Options::default(),
            )
        };
        group.bench_function(format!("router_{size}"), |b| {
            b.iter_batched(
                router,
                |r| runtime.block_on(r.handle(&payload)).expect("routed"),
                BatchSize::SmallInput,
            )
        });
        if in_1000s.len() > 1 {
            group.bench_function(format!("router_{size}_in_1000s"), |b| {
                b.iter_batched(
                    router,
                    |r| {
                        for payload in &in_1000s {
                            let _ = runtime.block_on(r.handle(payload)).expect("routed");
                        }
                    },
                    BatchSize::SmallInput,
                )
            });
        }

        // The reaper: every `Node Expired` event of the batch, over the
        // final tables (a reap deletes edges, so each run starts from a copy).
        let probe = Router::new(
            config.clone(),
            MemoryPublisher::new(),
            MemoryQuarantine::new(),
            Options::default(),
        );
        let _ = runtime.block_on(probe.handle(&payload)).expect("routed");
        let expiries: Vec<String> = probe
            .publisher()
            .published()
            .into_iter()
            .filter(|e| e.detail_type == "Node Expired")
            .map(|e| e.delivered())
            .collect();
        let items = |table: &str| store.items(table);
        let copy = || {
            let fresh = MemoryStore::new(config.clone());
            for table in ["records", "issues", "layers"] {
                for item in items(table) {
                    let _ = fresh.put_item(table, item);
                }
            }
            Reaper::new(config.clone(), StoreGraph(Arc::new(fresh)), Backoff::immediate(3))
        };
        group.bench_function(format!("reaper_{size}_{}_expiries", expiries.len()), |b| {
            b.iter_batched(
                copy,
                |reaper| {
                    for event in &expiries {
                        let _ = runtime.block_on(reaper.reap(event.as_bytes()));
                    }
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
