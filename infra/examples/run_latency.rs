//! Write-to-index latency of `streamdex run` against a live endpoint (the
//! moto server): a fresh stack (tables prefixed `latency-PID-`), the
//! runner in the background exactly as `streamdex run` drives it, then N
//! edge writes one after another, each timed from its PutItem until the
//! member shows up in its node's edge set (a consistent GetItem every 2 ms).
//!
//! ```sh
//! AWS_ENDPOINT_URL=http://127.0.0.1:5005 AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test \
//!   AWS_SECRET_ACCESS_KEY=test cargo run --release -p infra --example run_latency -- 300 250
//! ```
//!
//! Arguments: writes (default 300), the poll interval in ms (default 250, as
//! `streamdex run`), the batching window in ms (default: the mappings', none,
//! as `streamdex run` without `--batching-window-ms`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use aws_sdk_dynamodb::types::AttributeValue;
use infra::runner::checkpoint::Checkpoints;
use infra::runner::clock::SystemClock;
use infra::runner::local::{self, Wiring};
use infra::stack;
use model::config::{self, EXAMPLE_CONFIG};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let writes: usize = args.next().map_or(Ok(300), |a| a.parse()).context("writes: a number")?;
    let poll_ms: u64 = args
        .next()
        .map_or(Ok(250), |a| a.parse())
        .context("poll interval: a number")?;
    let window_ms: Option<u64> = args.next().map(|a| a.parse()).transpose().context("window: a number")?;
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
        window_ms,
    };
    let mut runner = local::connect(
        &sdk,
        config.clone(),
        Arc::new(SystemClock),
        Checkpoints::default(),
        wiring,
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
                tokio::time::sleep(Duration::from_millis(poll_ms)).await;
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
        "{writes} writes, poll interval {poll_ms} ms, batching window {}: median {} ms, p90 {} ms, p99 {} ms, max {} ms",
        window_ms.map_or("the mappings' (none)".to_owned(), |w| format!("{w} ms")),
        at(50).as_millis(),
        at(90).as_millis(),
        at(99).as_millis(),
        latencies.last().map_or(0, |d| d.as_millis())
    );
    Ok(())
}
