//! Routing a 1,000-record Lambda batch of the example mix on one task:
//! parse, classify by the config's routes, size, pack into PutEvents calls
//! and publish to the in-memory publisher. Every REMOVE of the mix is
//! marked as the TTL service's, so goal inserts, node expiries and layer
//! expiries all become events. Run:
//! `cargo bench -p streamdex-tests --features testing --bench route` (it lives in the
//! end-to-end crate because the example-mix generator is the indexer's).

use std::sync::Arc;

#[global_allocator]
static ALLOCATOR: aws_kit::alloc::Allocator = aws_kit::alloc::Allocator;

use aws_kit::quarantine::memory::MemoryQuarantine;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use event_router::{MemoryPublisher, Options, Router};
use model::config::{self, EXAMPLE_CONFIG};
use stream_indexer::workload::example_batches;

/// The batch with every REMOVE turned into a TTL expiry.
fn expiring(payload: &[u8]) -> Vec<u8> {
    let mut event: serde_json::Value = serde_json::from_slice(payload).expect("a Lambda event");
    if let Some(records) = event["Records"].as_array_mut() {
        for record in records {
            if record["eventName"] == "REMOVE" {
                record["userIdentity"] =
                    serde_json::json!({"type": "Service", "principalId": "dynamodb.amazonaws.com"});
            }
        }
    }
    event.to_string().into_bytes()
}

fn bench(c: &mut Criterion) {
    let config = Arc::new(config::parse(EXAMPLE_CONFIG, "streamdex.example.toml").expect("example config"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (_store, batches) = example_batches(config.clone(), 1_000, 1_000, 7);
    let payload = expiring(&batches[0]);
    let router = || {
        Router::new(
            config.clone(),
            MemoryPublisher::new(),
            MemoryQuarantine::new(),
            Options::default(),
        )
    };
    let probe = runtime.block_on(router().handle(&payload)).expect("routed");
    eprintln!(
        "batch: {} records, {} events ({:?}), {} PutEvents calls",
        probe.stats.records, probe.stats.published, probe.stats.published_by_type, probe.stats.calls
    );

    let mut group = c.benchmark_group("router");
    group.sample_size(30);
    group.throughput(Throughput::Elements(1_000));
    group.bench_function("batch_1000_records", |b| {
        b.iter_batched(
            router,
            |router| runtime.block_on(router.handle(&payload)).expect("routed"),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
