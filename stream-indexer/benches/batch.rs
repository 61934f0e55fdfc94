//! Handling whole Lambda batches of the example mix against the in-memory
//! store, on one task: parse, plan, apply. Run:
//! `cargo bench -p stream-indexer --features testing --bench batch`.

use std::sync::Arc;

#[global_allocator]
static ALLOCATOR: aws_kit::alloc::Allocator = aws_kit::alloc::Allocator;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use model::config::{self, EXAMPLE_CONFIG};
use stream_indexer::workload::{example_batches, example_payload_of_size};
use stream_indexer::{Indexer, MemoryQuarantine, Options};

fn bench(c: &mut Criterion) {
    let config = Arc::new(config::parse(EXAMPLE_CONFIG, "streamdex.example.toml").expect("example config"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("indexer");
    group.sample_size(20);

    let (store, batches) = example_batches(config.clone(), 1_000, 1_000, 7);
    let payload = batches.into_iter().next().expect("one batch");
    let indexer = Indexer::new(config.clone(), store, MemoryQuarantine::default(), Options::default());
    group.throughput(Throughput::Elements(1_000));
    group.bench_function("batch_1000_records", |b| {
        b.iter(|| runtime.block_on(indexer.handle(&payload)).expect("handled"))
    });

    let (store, payload, records) = example_payload_of_size(config.clone(), 6 * 1024 * 1024, 7);
    let indexer = Indexer::new(config, store, MemoryQuarantine::default(), Options::default());
    group.throughput(Throughput::Elements(records as u64));
    group.bench_function(format!("batch_6mb_{records}_records"), |b| {
        b.iter(|| runtime.block_on(indexer.handle(&payload)).expect("handled"))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
