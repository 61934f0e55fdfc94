//! What `shards` buys a bulk import: a simulation of writing the index rows
//! of ITEMS issues that all share one custom field (one partition value of
//! the example's `issue-attrib` index) against DynamoDB's ceiling of 1,000
//! writes per second per partition, for 1, 4 and 16 shards.
//!
//!     cargo run --release -p model --example shard_import -- [ITEMS] [OFFERED]
//!
//! ITEMS (default 1,000,000) issues `issue-1` … with `custom_fields =
//! {"release": "2024.1"}` go through the real row derivation
//! (`model::index::rows`, so through the real shard hash) with `shards = N`.
//! The importer offers OFFERED writes per second (default 40,000, e.g. 64
//! BatchWriteItems of 25 in flight), rows in item order, throttled writes
//! first in the next second. Each partition takes at most 1,000 writes in a
//! second; the rest are throttled. Second by second until every row is in.
//! Not modelled: burst capacity (up to 300 s of a partition's unused
//! capacity), adaptive capacity, and DynamoDB splitting a hot item
//! collection by sort key, which can raise the ceiling of one partition key
//! over time; the 1,000 writes/s per partition is what to plan with.

use std::collections::{HashMap, VecDeque};
use std::error::Error;
use std::time::Instant;

use model::config::{parse, EXAMPLE_CONFIG};
use model::index;
use model::{Image, Value};

/// DynamoDB's write ceiling of one partition, in writes (of up to 1 KB) per second.
const PARTITION_WRITES_PER_SECOND: usize = 1000;

fn item(i: usize) -> Image {
    let id = Value::S(format!("issue-{i}"));
    let fields: Image = [("release".to_owned(), Value::S("2024.1".to_owned()))]
        .into_iter()
        .collect();
    [
        ("id".to_owned(), id.clone()),
        ("rel".to_owned(), id),
        ("num".to_owned(), Value::N(i.to_string())),
        ("name".to_owned(), Value::S(format!("Issue {i}"))),
        ("state".to_owned(), Value::S("open".to_owned())),
        ("custom_fields".to_owned(), Value::M(fields.into_map())),
    ]
    .into_iter()
    .collect()
}

struct Outcome {
    partitions: usize,
    busiest: usize,
    quietest: usize,
    seconds: usize,
    throttled: usize,
}

/// The partition of each row, in import order.
fn rows(items: usize, shards: u32) -> Result<(Vec<u16>, usize), Box<dyn Error>> {
    let text = EXAMPLE_CONFIG.replace(
        "project = [\"name\", \"state\"]\n",
        &format!("project = [\"name\", \"state\"]\nshards = {shards}\n"),
    );
    let config = parse(&text, "sharded").map_err(|e| e.to_string())?;
    let index = config.index("issue-attrib").ok_or("no index issue-attrib")?;
    let table = config.table("issues").ok_or("no table issues")?;
    let mut ids: HashMap<String, u16> = HashMap::new();
    let mut order = Vec::with_capacity(items);
    for i in 1..=items {
        for key in index::rows(index, table, &item(i))?.keys {
            let next = u16::try_from(ids.len())?;
            order.push(*ids.entry(key.partition).or_insert(next));
        }
    }
    Ok((order, ids.len()))
}

fn simulate(order: &[u16], partitions: usize, offered: usize) -> Outcome {
    let mut per_partition = vec![0usize; partitions];
    for &p in order {
        per_partition[usize::from(p)] += 1;
    }
    let mut next = 0;
    let mut retry: VecDeque<u16> = VecDeque::new();
    let (mut seconds, mut throttled, mut written) = (0, 0, 0);
    while written < order.len() {
        seconds += 1;
        let mut taken = vec![0usize; partitions];
        let mut again = VecDeque::new();
        for _ in 0..offered {
            let p = match retry.pop_front() {
                Some(p) => p,
                None => match order.get(next) {
                    Some(&p) => {
                        next += 1;
                        p
                    }
                    None => break,
                },
            };
            let slot = &mut taken[usize::from(p)];
            if *slot < PARTITION_WRITES_PER_SECOND {
                *slot += 1;
                written += 1;
            } else {
                throttled += 1;
                again.push_back(p);
            }
        }
        again.extend(retry);
        retry = again;
    }
    Outcome {
        partitions,
        busiest: per_partition.iter().copied().max().unwrap_or(0),
        quietest: per_partition.iter().copied().min().unwrap_or(0),
        seconds,
        throttled,
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let items: usize = match args.next() {
        Some(text) => text.parse().map_err(|e| format!("ITEMS `{text}`: {e}"))?,
        None => 1_000_000,
    };
    let offered: usize = match args.next() {
        Some(text) => text.parse().map_err(|e| format!("OFFERED `{text}`: {e}"))?,
        None => 40_000,
    };
    println!(
        "{items} issues sharing one field, offered {offered} writes/s, {PARTITION_WRITES_PER_SECOND} writes/s per partition"
    );
    println!("| shards | partitions | rows in the busiest / quietest | import time | writes/s | throttled writes |");
    println!("|---|---|---|---|---|---|");
    for shards in [1u32, 4, 16] {
        let started = Instant::now();
        let (order, partitions) = rows(items, shards)?;
        let derived = started.elapsed();
        let o = simulate(&order, partitions, offered);
        println!(
            "| {shards} | {} | {} / {} | {} s | {} | {} |",
            o.partitions,
            o.busiest,
            o.quietest,
            o.seconds,
            order.len() / o.seconds.max(1),
            o.throttled
        );
        eprintln!("(shards {shards}: {} rows derived in {derived:.2?})", order.len());
    }
    Ok(())
}
