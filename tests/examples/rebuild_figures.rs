//! Rebuild throughput: a fresh deployment whose source tables hold data and
//! whose derived data is empty (a new index, edge sets never built), rebuilt
//! from scratch; prints items written per second and source items per second.
//!
//!     cargo run --release -p streamdex-tests --example rebuild_figures -- memory 5000
//!     STREAMDEX_TEST_ENDPOINT=http://127.0.0.1:5005 \
//!       cargo run --release -p streamdex-tests --example rebuild_figures -- moto 200
//!
//! The number is the count of issues (each with 10 custom fields: 10 index
//! rows); there are a fifth as many nodes with 5 edges each.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, bail, Result};
use model::config::{self, EXAMPLE_CONFIG};
use model::drift::Scope;
use model::{Config, Image, Value};
use stream_indexer::rebuild::{rebuild, Checkpoint, Options, Quiet, RebuildOutcome};
use stream_indexer::store::dynamo::DynamoStore;
use stream_indexer::store::scan::{Marker, Scan};
use stream_indexer::store::Store;
use stream_indexer::MemoryStore;
use streamdex_tests::moto::{prefixed, unique_prefix, Moto};

fn s(v: String) -> Value {
    Value::S(v)
}

/// The source items: (table suffix, item).
fn items(issues: usize) -> Vec<(&'static str, Image)> {
    let mut out = Vec::new();
    for i in 0..issues {
        let id = format!("issue-{i:06}");
        let fields = (0..10)
            .map(|f| {
                let v = match f % 3 {
                    0 => Value::N(format!("{}.{}", i % 997, f)),
                    1 => s(format!("value-{}", (i + f) % 13)),
                    _ => Value::Bool(i % 2 == 0),
                };
                (format!("field-{f}"), v)
            })
            .collect();
        out.push((
            "issues",
            Image::from([
                ("id".to_owned(), s(id.clone())),
                ("rel".to_owned(), s(id)),
                ("num".to_owned(), Value::N(i.to_string())),
                ("name".to_owned(), s(format!("issue {i}"))),
                ("state".to_owned(), s("open".to_owned())),
                ("custom_fields".to_owned(), Value::M(fields)),
            ]),
        ));
    }
    for n in 0..issues / 5 {
        let node = format!("GOAL-{n:06}");
        out.push((
            "records",
            Image::from([
                ("source".to_owned(), s(node.clone())),
                ("target".to_owned(), s(node.clone())),
            ]),
        ));
        for e in 0..5 {
            out.push((
                "records",
                Image::from([
                    ("source".to_owned(), s(node.clone())),
                    ("target".to_owned(), s(format!("GOALMEMBERSHIP-USER-{e}"))),
                    ("gsi0".to_owned(), s("400-CONTRIBUTOR".to_owned())),
                ]),
            ));
        }
    }
    out
}

fn table_of(config: &Config, suffix: &str) -> Result<String> {
    config
        .tables
        .iter()
        .find(|t| t.name.ends_with(suffix))
        .map(|t| t.name.clone())
        .ok_or_else(|| anyhow!("no table {suffix}"))
}

async fn measure<S: Store + Scan + Marker>(store: &S, config: &Config, sources: usize, what: &str) -> Result<()> {
    let scope = Scope::all(config);
    let mut checkpoint = Checkpoint::new(config, &scope);
    let options = Options::default();
    let started = Instant::now();
    let outcome: RebuildOutcome = rebuild(
        store,
        config,
        &scope,
        &options,
        &mut checkpoint,
        &mut |_| Ok(()),
        &Quiet,
    )
    .await
    .map_err(|e| anyhow!("{e}"))?;
    let elapsed = started.elapsed();
    if !outcome.is_clean() {
        bail!("the rebuild left drift: {outcome:?}");
    }
    let repairs = outcome.repairs();
    let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX).max(1);
    println!(
        "{what}: {sources} source items, {} corrections, {} items written, {} requests in {} ms: \
         {} items written/s, {} source items/s (scans and final verification included)",
        repairs.written.total(),
        repairs.items_written,
        repairs.requests,
        elapsed.as_millis(),
        repairs.items_written * 1_000_000 / micros,
        (sources as u64) * 1_000_000 / micros,
    );
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let target = args.get(1).map(String::as_str).unwrap_or("memory");
    let issues: usize = args.get(2).map(|n| n.parse()).transpose()?.unwrap_or(1000);
    let example = config::parse(EXAMPLE_CONFIG, "streamdex.example.toml").map_err(|e| anyhow!("{e}"))?;
    let sources = items(issues);
    match target {
        "memory" => {
            let config = Arc::new(example);
            let store = MemoryStore::new(config.clone());
            for (table, item) in &sources {
                store.put_item(table, item.clone()).map_err(|e| anyhow!("{e}"))?;
            }
            measure(&store, &config, sources.len(), "in-memory store").await
        }
        "moto" => {
            let moto = Moto::connect("rebuild_figures").await;
            let config = Arc::new(prefixed(&example, &unique_prefix("figures")));
            moto.create_tables(&config).await?;
            let (records, issues_table) = (table_of(&config, "records")?, table_of(&config, "issues")?);
            for (table, item) in &sources {
                let name = if *table == "issues" { &issues_table } else { &records };
                moto.put(name, item).await?;
            }
            let store = DynamoStore::new(moto.dynamodb.clone(), config.clone());
            measure(&store, &config, sources.len(), "moto server").await
        }
        other => bail!("unknown target {other}: memory or moto"),
    }
}
