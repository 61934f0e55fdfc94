//! Tables read from Kinesis, end to end against the moto server over real
//! HTTP: `up` creates the data streams and the ledger; `run`'s engine
//! copies each table's changes into its data stream reordered and
//! repeated (moto does not copy them, as DynamoDB does on AWS), and the
//! consumers read them from the data stream. A history written so leaves
//! no drift and the same derived data as the same history read from the
//! tables' DynamoDB streams.
//!
//! Needs a moto server at `STREAMDEX_TEST_ENDPOINT` (see `run.rs`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use aws_kit::clock::SystemClock;
use infra::runner::checkpoint::Checkpoints;
use infra::runner::copier::Delivery;
use infra::runner::local::{self, Wiring};
use infra::stack;
use model::config;
use model::{Config, Image, Value};
use streamdex_tests::derived::verify;
use streamdex_tests::images::s;
use streamdex_tests::moto::{prefixed_toml, unique_prefix, Moto};

fn item(pairs: &[(&str, &str)]) -> Image {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), s(v))).collect()
}

/// The example config's text, prefixed, its tables read from Kinesis (48
/// hours' retention, the ledger prefixed too) or not.
fn config_text(prefix: &str, kinesis: bool) -> String {
    let text = prefixed_toml(prefix);
    if !kinesis {
        return text;
    }
    let mut out = String::new();
    for line in text.lines() {
        out.push_str(line);
        out.push('\n');
        if line.starts_with("[table.") {
            out.push_str("stream = \"kinesis\"\nretention_hours = 48\n");
        }
        if line.starts_with("bus = ") {
            out.push_str(&format!("ledger_table = \"{prefix}ledger\"\n"));
        }
    }
    out
}

fn config(text: &str) -> Result<Config> {
    config::parse(text, "kinesis.toml").map_err(|e| anyhow!("{e}"))
}

/// Writes the history to `config`'s tables, in a few steps, running the
/// runner between them; returns when it is idle with the copy done.
async fn write_and_run(moto: &Moto, config: &Arc<Config>, delivery: Delivery) -> Result<()> {
    let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".to_owned());
    let sdk = stack::sdk_config(Some(&moto.endpoint), Some(&region)).await;
    stack::up(&sdk, config).await.context("streamdex up")?;
    let wiring = Wiring {
        reaper: false,
        discover_every_ms: 10_000,
        poll_interval_ms: 100,
        local_ttl_every_ms: None,
        window_ms: Some(0),
        delivery,
    };
    let mut runner = local::connect(
        &sdk,
        config.clone(),
        Arc::new(SystemClock),
        Checkpoints::default(),
        wiring,
        None,
    )
    .await
    .context("connecting the runner")?;
    let (records, issues) = (config.tables[0].name.clone(), config.tables[1].name.clone());
    let edge = |node: &str, user: u32, role: &str| {
        item(&[
            ("source", node),
            ("target", &format!("GOALMEMBERSHIP-USER-{user}")),
            ("gsi0", role),
        ])
    };
    let issue = |id: &str, field: &str, value: &str| {
        let mut issue = item(&[("id", id), ("rel", id), ("name", "n"), ("state", "open")]);
        issue.insert("num".to_owned(), Value::N("7".to_owned()));
        issue.insert(
            "custom_fields".to_owned(),
            Value::M([(field.to_owned(), s(value))].into_iter().collect()),
        );
        issue
    };
    for node in ["GOAL-1", "GOAL-2"] {
        moto.put(
            &records,
            &item(&[("source", node), ("target", node), ("name", "a goal")]),
        )
        .await?;
    }
    for user in 1..=6 {
        moto.put(&records, &edge("GOAL-1", user, "300-MEMBER")).await?;
    }
    // The same items changed again in quick succession: the order matters.
    moto.put(&records, &edge("GOAL-1", 2, "500-LEAD")).await?;
    moto.delete(
        &records,
        &item(&[("source", "GOAL-1"), ("target", "GOALMEMBERSHIP-USER-3")]),
    )
    .await?;
    moto.put(&records, &edge("GOAL-1", 3, "400-CONTRIBUTOR")).await?;
    moto.delete(
        &records,
        &item(&[("source", "GOAL-1"), ("target", "GOALMEMBERSHIP-USER-4")]),
    )
    .await?;
    moto.put(&records, &edge("GOAL-2", 1, "300-MEMBER")).await?;
    idle(&mut runner).await?;
    for (field, value) in [("3fe6", "a"), ("3fe6", "b"), ("882a", "c"), ("3fe6", "d")] {
        moto.put(&issues, &issue("issue-1", field, value)).await?;
    }
    moto.put(&issues, &issue("issue-2", "3fe6", "x")).await?;
    moto.delete(&issues, &item(&[("id", "issue-2"), ("rel", "issue-2")]))
        .await?;
    moto.put(&records, &edge("GOAL-2", 1, "310-MANAGER")).await?;
    moto.delete(
        &records,
        &item(&[("source", "GOAL-1"), ("target", "GOALMEMBERSHIP-USER-5")]),
    )
    .await?;
    idle(&mut runner).await?;
    Ok(())
}

/// Runs rounds until the runner is idle, within a minute; the runner's
/// events say what it waited on when it is not.
async fn idle(runner: &mut infra::runner::Runner) -> Result<()> {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut log = Vec::new();
    runner.look_again();
    loop {
        let round = runner.round().await;
        log.extend(round.events.iter().map(ToString::to_string));
        if !round.busy && runner.idle() {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            let tail = log.len().saturating_sub(30);
            anyhow::bail!(
                "the runner was not idle within a minute; it said:\n{}",
                log[tail..].join("\n")
            );
        }
        if !round.busy {
            tokio::time::sleep(Duration::from_millis(round.wait_ms)).await;
        }
    }
}

/// The derived data: each node's members and the index rows (keys and
/// projected attributes), without the pipeline's version attributes.
async fn derived(moto: &Moto, config: &Config) -> Result<(Vec<(String, Vec<String>)>, Vec<Image>)> {
    let mut sets = Vec::new();
    for item in moto.scan(&config.tables[0].name).await? {
        if item.get("source") == item.get("target") {
            let members = match item.get("edges") {
                Some(Value::Ss(m)) => {
                    let mut m = m.clone();
                    m.sort();
                    m
                }
                _ => Vec::new(),
            };
            let node = match item.get("source") {
                Some(Value::S(node)) => node.clone(),
                _ => String::new(),
            };
            sets.push((node, members));
        }
    }
    sets.sort();
    let mut rows: Vec<Image> = moto
        .scan(&config.indexes[0].table)
        .await?
        .into_iter()
        .filter_map(model::version::live_row)
        .collect();
    rows.sort_by_key(|r| format!("{r:?}"));
    Ok((sets, rows))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn a_history_read_from_kinesis_reordered_and_repeated_ends_as_from_dynamodb() -> Result<()> {
    let moto = Moto::connect("a_history_read_from_kinesis_reordered_and_repeated_ends_as_from_dynamodb").await;
    let text = config_text(&unique_prefix("kinesis"), true);
    let from_kinesis = Arc::new(config(&text)?);
    assert!(from_kinesis.tables.iter().all(|t| t.stream.is_unordered()));
    let delivery = Delivery {
        reorder_window: 8,
        repeat_percent: 40,
        seed: 7,
    };
    write_and_run(&moto, &from_kinesis, delivery).await?;
    let rows = verify(&moto, &from_kinesis)
        .await
        .context("verify of the Kinesis-read tables")?;
    assert!(rows > 0, "the issues have index rows");
    let ledger = moto.scan(&from_kinesis.events.ledger_table).await?;
    assert!(!ledger.is_empty(), "the router noted the changes it published");
    // `lag` from no checkpoint: the data streams' shards, with the time
    // left under their 48-hour retention.
    let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".to_owned());
    let sdk = stack::sdk_config(Some(&moto.endpoint), Some(&region)).await;
    let stack = stack::Stack::new(&from_kinesis);
    let source = infra::runner::stream::kinesis::KinesisStreams::new(&sdk, stack.kinesis_streams());
    let now = aws_kit::clock::Clock::now_ms(&SystemClock);
    let lags = infra::runner::lag::measure(&source, &stack, &Checkpoints::default(), now).await?;
    let records = lags
        .iter()
        .find(|l| l.table == from_kinesis.tables[0].name && l.backlog > 0);
    let records = records.ok_or_else(|| anyhow!("no backlog on the records table's data stream: {lags:?}"))?;
    assert_eq!(records.retention_ms, 48 * 3_600_000);
    assert!(
        records.time_left_ms.is_some_and(|left| left > 47 * 3_600_000),
        "{records:?}"
    );

    // `record` tails the data streams into the changes as DynamoDB writes
    // them; `replay` reads them back.
    let dir = tempfile::tempdir()?;
    let (file, out) = (dir.path().join("kinesis.toml"), dir.path().join("recorded.jsonl"));
    std::fs::write(&file, &text)?;
    let args = infra::cli::record::RecordArgs {
        config: file.clone(),
        endpoint: infra::cli::stack::Endpoint {
            endpoint_url: Some(moto.endpoint.clone()),
            region: Some(region.clone()),
        },
        out: out.clone(),
        tables: Vec::new(),
        from: infra::cli::record::From::TrimHorizon,
        max_records: None,
        idle_exit: Some(1),
        poll_interval_ms: 100,
        no_progress: true,
    };
    let (code, said) = tokio::task::spawn_blocking(move || {
        let mut err = Vec::new();
        (
            infra::cli::record::run_with(&args, &mut err),
            String::from_utf8_lossy(&err).into_owned(),
        )
    })
    .await?;
    assert_eq!(code, 0, "{said}");
    let recorded = std::fs::read_to_string(&out)?;
    assert!(recorded.lines().count() >= 20, "{recorded}");
    assert!(
        recorded.lines().all(model::record::kinesis::is_kinesis_change),
        "{recorded}"
    );
    let replay = infra::cli::replay::ReplayArgs {
        config: Some(file),
        ..infra::cli::replay::ReplayArgs::embedded(vec![out])
    };
    let (code, said) = tokio::task::spawn_blocking(move || {
        let (mut replayed, mut said) = (Vec::new(), Vec::new());
        let code = infra::cli::replay::run_with(&replay, &mut replayed, &mut said);
        (code.ok(), String::from_utf8_lossy(&said).into_owned())
    })
    .await?;
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("quarantined: 0"), "{said}");

    let from_dynamodb = Arc::new(config(&config_text(&unique_prefix("dynamodb"), false))?);
    write_and_run(&moto, &from_dynamodb, Delivery::default()).await?;
    verify(&moto, &from_dynamodb)
        .await
        .context("verify of the DynamoDB-stream tables")?;
    assert_eq!(
        derived(&moto, &from_kinesis).await?,
        derived(&moto, &from_dynamodb).await?
    );
    Ok(())
}
