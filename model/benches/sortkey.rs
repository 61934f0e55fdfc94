//! CSS1 codec throughput: encoding numbers in a mix of spellings (the target
//! is at least 5,000,000 numbers/s on one core), encoding a 2-column
//! (ANY, N) key, and decoding those keys.
//! Run: `cargo bench -p model --bench sortkey`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use model::sortkey::{self, Column, ColumnType, Direction};
use model::Value;

/// Numbers as they come in records: integers, decimals, negatives, exponents,
/// zeros, padding, 38-digit values (deterministic, no RNG).
fn numbers(count: usize) -> Vec<Value> {
    let spellings = [
        "0",
        "42",
        "-17",
        "4.2",
        "-0.0625",
        "1700000000",
        "1E+2",
        "15E-1",
        "0.000123",
        "-9.5e-3",
        "100.500",
        "12345678901234567890123456789012345678",
        "-1.2345678901234567890123456789012345678E+100",
        "+007.250",
        "3.14159265358979",
        "1E-130",
    ];
    (0..count)
        .map(|i| Value::N(spellings[i % spellings.len()].to_owned()))
        .collect()
}

/// (ANY value, N) tuples: strings, numbers, booleans and nulls in the ANY column.
fn tuples(count: usize) -> Vec<(Option<Value>, Value)> {
    (0..count)
        .map(|i| {
            let any = match i % 5 {
                0 => Some(Value::S(format!("value-{i}"))),
                1 => Some(Value::N(format!("{}.{}", i, i % 7))),
                2 => Some(Value::Bool(i % 2 == 0)),
                3 => None,
                _ => Some(Value::S(format!("Ünïcode \u{0} {i}"))),
            };
            (any, Value::N(format!("{}", (i as i64 - 500) * 37)))
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let nums = numbers(1024);
    let asc = Column::new(ColumnType::N, Direction::Asc);
    let desc = Column::new(ColumnType::N, Direction::Desc);
    let mut group = c.benchmark_group("sortkey");
    group.throughput(Throughput::Elements(nums.len() as u64));
    for (name, column) in [("encode_number_asc", asc), ("encode_number_desc", desc)] {
        group.bench_function(name, |b| {
            let mut out = String::with_capacity(64);
            b.iter(|| {
                for n in &nums {
                    out.clear();
                    sortkey::encode_value(&column, Some(n), &mut out).unwrap();
                    black_box(&out);
                }
            })
        });
    }

    let columns = [
        Column::new(ColumnType::Any, Direction::Asc),
        Column::new(ColumnType::N, Direction::Asc),
    ];
    let rows = tuples(1024);
    let keys: Vec<String> = rows
        .iter()
        .map(|(a, n)| sortkey::encode(&columns, &[a.as_ref(), Some(n)]).unwrap())
        .collect();
    group.throughput(Throughput::Elements(rows.len() as u64));
    group.bench_function("encode_key_any_n", |b| {
        b.iter(|| {
            for (a, n) in &rows {
                black_box(sortkey::encode(&columns, &[a.as_ref(), Some(n)]).unwrap());
            }
        })
    });
    group.bench_function("decode_key_any_n", |b| {
        b.iter(|| {
            for key in &keys {
                black_box(sortkey::decode(&columns, key).unwrap());
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
