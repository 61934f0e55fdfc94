//! Parsing a Lambda batch at the invoke payload limit (6 MB), in the Lambda
//! shape and as JSON Lines.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use model::record::{parse_any, parse_batch, Received};
use serde_json::value::RawValue;

/// The fixture records, repeated up to about `target` bytes of JSON.
fn records(target: usize) -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut samples = Vec::new();
    for name in ["lambda-records.json", "lambda-issues.json", "lambda-layers.json"] {
        let text = std::fs::read_to_string(dir.join(name)).expect("fixture");
        #[derive(serde::Deserialize)]
        struct Batch {
            #[serde(rename = "Records")]
            records: Vec<Box<RawValue>>,
        }
        let batch: Batch = serde_json::from_str(&text).expect("batch");
        for raw in batch.records {
            // Compact, as Lambda delivers it.
            let value: serde_json::Value = serde_json::from_str(raw.get()).expect("json");
            samples.push(value.to_string());
        }
    }
    let mut out = Vec::new();
    let mut size = 0;
    while size < target {
        let sample = &samples[out.len() % samples.len()];
        size += sample.len() + 1;
        out.push(sample.clone());
    }
    out
}

fn bench(c: &mut Criterion) {
    let records = records(6 * 1024 * 1024);
    let batch = format!("{{\"Records\":[{}]}}", records.join(","));
    let lines = records.join("\n");
    let count = records.len();
    let check = |received: &[Received]| {
        assert_eq!(received.len(), count);
        assert!(received.iter().all(|r| r.record.is_ok()));
    };
    check(&parse_batch(batch.as_bytes()).expect("batch"));

    let mut group = c.benchmark_group("record_parse_6MB");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(batch.len() as u64));
    group.bench_function("parse_batch", |b| b.iter(|| parse_batch(batch.as_bytes())));
    group.bench_function("parse_any_batch", |b| b.iter(|| parse_any(batch.as_bytes())));
    group.bench_function("parse_any_json_lines", |b| b.iter(|| parse_any(lines.as_bytes())));
    group.bench_function("serde_json_value_baseline", |b| {
        b.iter(|| serde_json::from_str::<serde_json::Value>(&batch))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
