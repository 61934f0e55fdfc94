//! Write-to-index latency of `streamdex run` against a live endpoint (the
//! moto server): a fresh stack (tables prefixed `latency-PID-`), the
//! runner in the background paced as `streamdex run` paces it (each round
//! followed by the wait it asks for), then N edge writes one after another,
//! each timed from its PutItem until the member shows up in its node's edge
//! set (a consistent GetItem every 2 ms), with a random pause before each
//! write.
//!
//! ```sh
//! AWS_ENDPOINT_URL=http://127.0.0.1:5005 AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test \
//!   AWS_SECRET_ACCESS_KEY=test cargo run --release -p infra --example run_latency -- --pace-ms 600
//! ```
//!
//! `--pace-ms 0` writes back to back (the next write as soon as the last
//! one is in the edge set).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use aws_kit::clock::SystemClock;
use aws_sdk_dynamodb::types::AttributeValue;
use clap::Parser;
use infra::runner::checkpoint::Checkpoints;
use infra::runner::local::{self, Wiring};
use infra::stack;
use model::config::{self, EXAMPLE_CONFIG};

#[derive(Parser)]
struct Args {
    /// How many writes to time.
    #[arg(long, default_value_t = 300)]
    writes: usize,
    /// Before each write, pause a random time between 0 and this (milliseconds).
    #[arg(long, default_value_t = 0)]
    pace_ms: u64,
    /// The runner's poll interval (as `streamdex run --poll-interval-ms`, whose default this is).
    #[arg(long, default_value_t = 250)]
    poll_interval_ms: u64,
    /// Override the mappings' batching window (as `streamdex run --batching-window-ms`).
    #[arg(long)]
    window_ms: Option<u64>,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let Args {
        writes,
        pace_ms,
        poll_interval_ms: poll_ms,
        window_ms,
    } = Args::parse();
    let endpoint = std::env::var("AWS_ENDPOINT_URL").context("set AWS_ENDPOINT_URL to the moto server")?;

    let mut config = config::parse(EXAMPLE_CONFIG, "example").map_err(|e| anyhow::anyhow!("{e}"))?;
    let prefix = format!("latency-{}-", std::process::id());
    for t in &mut config.tables {
        t.name = format!("{prefix}{}", t.name);
    }
    for e in &mut config.edge_sets {
        e.table = format!("{prefix}{}", e.table);
    }
    for i in &mut config.indexes {
        i.table = format!("{prefix}{}", i.table);
        i.source.table = format!("{prefix}{}", i.source.table);
    }
    for r in &mut config.routes {
        r.table = format!("{prefix}{}", r.table);
    }
    config.events.bus = format!("{prefix}{}", config.events.bus);
    let config = Arc::new(config);
    let records = config.tables[0].name.clone();

    let sdk = stack::sdk_config(Some(&endpoint), None).await;
    stack::up(&sdk, &config).await?;
    let wiring = Wiring {
        reaper: true,
        discover_every_ms: 10_000,
        poll_interval_ms: poll_ms,
        local_ttl_every_ms: None,
        window_ms,
        delivery: Default::default(),
    };
    let mut runner = local::connect(
        &sdk,
        config.clone(),
        Arc::new(SystemClock),
        Checkpoints::default(),
        wiring,
        None,
    )
    .await?;
    let runner_task = tokio::spawn(async move {
        loop {
            let round = runner.round().await;
            for e in &round.events {
                if matches!(e, infra::runner::RunEvent::Problem { .. }) {
                    eprintln!("{e}");
                }
            }
            if !round.busy {
                tokio::time::sleep(Duration::from_millis(round.wait_ms)).await;
            }
        }
    });

    let client = aws_sdk_dynamodb::Client::new(&sdk);
    let s = |v: &str| AttributeValue::S(v.to_owned());
    client
        .put_item()
        .table_name(&records)
        .item("source", s("GOAL-1"))
        .item("target", s("GOAL-1"))
        .item("name", s("latency"))
        .send()
        .await?;
    let mut latencies = Vec::with_capacity(writes);
    for i in 0..writes {
        let target = format!("GOALMEMBERSHIP-USER-{i}");
        let member_prefix = format!("{target}#");
        if pace_ms > 0 {
            tokio::time::sleep(Duration::from_millis(fastrand::u64(0..=pace_ms))).await;
        }
        let started = Instant::now();
        client
            .put_item()
            .table_name(&records)
            .item("source", s("GOAL-1"))
            .item("target", s(&target))
            .item("gsi0", s("400-CONTRIBUTOR"))
            .send()
            .await?;
        loop {
            let node = client
                .get_item()
                .table_name(&records)
                .key("source", s("GOAL-1"))
                .key("target", s("GOAL-1"))
                .consistent_read(true)
                .send()
                .await?;
            let found = node
                .item
                .and_then(|mut i| i.remove("edges"))
                .is_some_and(|e| matches!(e, AttributeValue::Ss(m) if m.iter().any(|x| x.starts_with(&member_prefix))));
            if found {
                break;
            }
            if started.elapsed() > Duration::from_secs(30) {
                bail!("write {i} did not reach the edge set within 30 s");
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        latencies.push(started.elapsed());
    }
    runner_task.abort();
    let _ = stack::down(&sdk, &config).await;
    latencies.sort();
    let at = |q: usize| latencies[(latencies.len() * q / 100).min(latencies.len() - 1)];
    println!(
        "{writes} writes {}, poll interval {poll_ms} ms, batching window {}: median {} ms, p90 {} ms, p99 {} ms, max {} ms",
        if pace_ms == 0 {
            "back to back".to_owned()
        } else {
            format!("0-{pace_ms} ms apart")
        },
        window_ms.map_or("the mappings' (none)".to_owned(), |w| format!("{w} ms")),
        at(50).as_millis(),
        at(90).as_millis(),
        at(99).as_millis(),
        latencies.last().map_or(0, |d| d.as_millis())
    );
    Ok(())
}
