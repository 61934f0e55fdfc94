//! Out-of-order safety against DynamoDB (the run's moto server): an old
//! record never overwrites newer derived data.
//!
//! - `replay --endpoint-url` of a recorded history into tables, then of an
//!   older prefix of it again: the derived data (rows, tombstones, sets and
//!   marks, as stored) is unchanged, and the summary counts the writes it
//!   skipped.
//! - `rebuild` and `verify --repair` racing a writer and `streamdex run`'s
//!   engine (the runner, polling the tables' real streams): a store wrapper
//!   lands a user write, and runs the runner until it is idle (its record
//!   applied), right after the command's read of the source item (or of the
//!   node's partition) and before its write. The stream's write must stand:
//!   the end state equals a recomputation and verify is clean.
//!
//! They need a moto server at `STREAMDEX_TEST_ENDPOINT`, so they are
//! `#[ignore]`d: `scripts/test.sh` starts one and runs them.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, ensure, Result};
use aws_kit::clock::SystemClock;
use aws_sdk_dynamodb::types::AttributeValue;
use infra::cli::exit;
use infra::cli::rebuild::{execute as rebuild, RebuildArgs};
use infra::cli::replay::{self, ReplayArgs};
use infra::cli::verify::{execute as verify, Output, Selection, VerifyArgs};
use infra::runner::checkpoint::Checkpoints;
use infra::runner::local::{self, Wiring};
use infra::runner::Runner;
use model::config;
use model::drift::Scope;
use model::{Config, Image, Value};
use serde_json::Value as Json;
use stream_indexer::rebuild::Quiet;
use stream_indexer::store::dynamo::DynamoStore;
use stream_indexer::store::hooked::{AfterRead, Hooked, Read};
use stream_indexer::store::scan::Scan;
use stream_indexer::store::Store;
use streamdex_tests::derived;
use streamdex_tests::images::{item, node, s};
use streamdex_tests::moto::{lambda_event, prefixed_toml, unique_prefix, Moto, StreamReader, StreamRecord};
use streamdex_tests::runner::run_until_idle;

fn edge(source: &str, user: u8, role: &str) -> Image {
    item(&[
        ("source", s(source)),
        ("target", s(&format!("GOALMEMBERSHIP-USER-{user}"))),
        ("gsi0", s(role)),
    ])
}

fn edge_key(source: &str, user: u8) -> Image {
    item(&[
        ("source", s(source)),
        ("target", s(&format!("GOALMEMBERSHIP-USER-{user}"))),
    ])
}

fn issue(id: &str, fields: &[(&str, &str)]) -> Image {
    let map = fields.iter().map(|(k, v)| ((*k).to_owned(), s(v))).collect();
    item(&[
        ("id", s(id)),
        ("rel", s(id)),
        ("num", Value::N("7".into())),
        ("name", s("an issue")),
        ("state", s("open")),
        ("custom_fields", Value::M(map)),
    ])
}

/// A test's tables on the server, its config as a file, and stream readers.
struct Stack {
    config: Arc<Config>,
    path: PathBuf,
    records: String,
    issues: String,
    readers: Vec<StreamReader>,
}

/// With `up`, the whole stack as `streamdex up` makes it (bus, queues,
/// TTL); else the tables only.
async fn stack(moto: &Moto, test: &str, up: bool) -> Result<Stack> {
    let prefix = unique_prefix(test);
    let text = prefixed_toml(&prefix);
    let dir = std::env::temp_dir().join(format!("{prefix}dir"));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("streamdex.toml");
    std::fs::write(&path, &text)?;
    let config = Arc::new(config::load(&path)?);
    if up {
        infra::stack::up(&sdk(moto).await, &config).await?;
    } else {
        moto.create_tables(&config).await?;
    }
    let (records, issues) = (format!("{prefix}records"), format!("{prefix}issues"));
    let readers = vec![
        StreamReader::open(moto, &records).await?,
        StreamReader::open(moto, &issues).await?,
    ];
    Ok(Stack {
        config,
        path,
        records,
        issues,
        readers,
    })
}

async fn sdk(moto: &Moto) -> aws_config::SdkConfig {
    infra::stack::sdk_config(Some(&moto.endpoint), Some("us-east-1")).await
}

/// Every unread record of the stack's streams (user writes only: nothing
/// of the pipeline has run yet when this is called).
async fn read_all(moto: &Moto, stack: &mut Stack) -> Result<Vec<StreamRecord>> {
    let mut all = Vec::new();
    for reader in stack.readers.iter_mut() {
        all.extend(reader.read_new(moto).await?);
    }
    Ok(all)
}

/// The derived data exactly as stored: every index row and tombstone with
/// its version, every node item with its set, marker and mark.
async fn stored(moto: &Moto, stack: &Stack) -> Result<(Vec<Image>, Vec<Image>)> {
    let mut rows = moto.scan(&stack.config.indexes[0].table).await?;
    rows.sort_by_key(|r| format!("{:?}{:?}", r.get("pk"), r.get("sk")));
    let mut nodes: Vec<Image> = moto
        .scan(&stack.records)
        .await?
        .into_iter()
        .filter(|i| i.get("source") == i.get("target"))
        .collect();
    nodes.sort_by_key(|n| format!("{:?}", n.get("source")));
    Ok((rows, nodes))
}

fn replay_args(stack: &Stack, moto: &Moto, file: PathBuf) -> ReplayArgs {
    ReplayArgs {
        config: Some(stack.path.clone()),
        endpoint_url: Some(moto.endpoint.clone()),
        region: Some("us-east-1".to_owned()),
        batch_size: 4,
        dump: None,
        no_progress: true,
        ..ReplayArgs::embedded(vec![file])
    }
}

/// Runs `streamdex replay`; returns the exit code and the summary.
fn run_replay(args: &ReplayArgs) -> Result<(u8, String)> {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = replay::run_with(args, &mut out, &mut err)?;
    Ok((code, String::from_utf8_lossy(&err).into_owned()))
}

/// The figure after `label` in the summary.
fn figure(summary: &str, label: &str) -> Option<usize> {
    let at = summary.find(label)? + label.len();
    summary[at..].split_whitespace().next()?.parse().ok()
}

/// A plain test: the CLI starts its own runtime, which cannot nest in the test's.
#[test]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
fn replaying_an_older_prefix_changes_nothing_and_counts_what_it_skipped() -> Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    let moto = runtime.block_on(Moto::connect("replaying_an_older_prefix"));
    let mut stack = runtime.block_on(stack(&moto, "older-prefix", true))?;
    // `up` enabled TTL on the index table: tombstones expire.
    let ttl = runtime.block_on(
        moto.dynamodb
            .describe_time_to_live()
            .table_name(&stack.config.indexes[0].table)
            .send(),
    )?;
    let ttl = ttl.time_to_live_description;
    ensure!(
        ttl.as_ref().and_then(|d| d.attribute_name()) == Some(model::version::TOMBSTONE_ATTRIBUTE),
        "{ttl:?}"
    );
    let (records, issues) = (stack.records.clone(), stack.issues.clone());

    // A history with deletes and moves: what an old prefix would bring back.
    let history = runtime.block_on(async {
        moto.put(&records, &node("GOAL-1")).await?;
        moto.put(&records, &edge("GOAL-1", 1, "400-CONTRIBUTOR")).await?;
        moto.put(&records, &edge("GOAL-1", 2, "400-CONTRIBUTOR")).await?;
        moto.put(&issues, &issue("issue-1", &[("f1", "a"), ("f2", "b")]))
            .await?;
        moto.put(&issues, &issue("issue-2", &[("f1", "c")])).await?;
        // Newer: a role change, an edge deleted, a field moved, an issue deleted.
        moto.put(&records, &edge("GOAL-1", 1, "500-LEAD")).await?;
        moto.delete(&records, &edge_key("GOAL-1", 2)).await?;
        moto.put(&issues, &issue("issue-1", &[("f2", "b"), ("f3", "d")]))
            .await?;
        moto.delete(&issues, &item(&[("id", s("issue-2")), ("rel", s("issue-2"))]))
            .await?;
        read_all(&moto, &mut stack).await
    })?;
    ensure!(history.len() == 9, "{} records", history.len());
    // Records of two tables: in each table's order, issues after records.
    let dir = stack.path.parent().map(PathBuf::from).unwrap_or_default();
    let (whole, prefix) = (dir.join("history.json"), dir.join("prefix.json"));
    std::fs::write(&whole, lambda_event(&history))?;
    // The older prefix: the first record of every item (before the newer ones above).
    let mut seen = std::collections::BTreeSet::new();
    let mut old: Vec<StreamRecord> = Vec::new();
    for record in &history {
        let json: Json = serde_json::from_str(&record.json)?;
        if seen.insert(json["dynamodb"]["Keys"].to_string()) {
            old.push(record.clone());
        }
    }
    ensure!(old.len() == 5, "the prefix: {} records", old.len());
    std::fs::write(&prefix, lambda_event(&old))?;

    let (code, summary) = run_replay(&replay_args(&stack, &moto, whole))?;
    ensure!(code == exit::OK, "replay: {code}\n{summary}");
    let rows = runtime.block_on(derived::verify(&moto, &stack.config))?;
    ensure!(rows == 2, "issue-1's f2 and f3: {rows} rows\n{summary}");
    let before = runtime.block_on(stored(&moto, &stack))?;
    ensure!(
        before.0.len() == 4,
        "2 rows and 2 tombstones (f1 of issue-1, f1 of issue-2): {:?}",
        before.0
    );

    let (code, summary) = run_replay(&replay_args(&stack, &moto, prefix))?;
    ensure!(code == exit::OK, "replay of the prefix: {code}\n{summary}");
    let after = runtime.block_on(stored(&moto, &stack))?;
    ensure!(
        after == before,
        "the prefix changed derived data:\n{before:#?}\n{after:#?}"
    );
    runtime.block_on(derived::verify(&moto, &stack.config))?;
    // Every row write of the prefix (issue-1: 2 puts, issue-2: 1 put) and
    // every set update (the node's restore, 2 ADDs) was skipped.
    let skipped = figure(&summary, "skipped:").ok_or_else(|| anyhow!("no skipped count:\n{summary}"))?;
    ensure!(skipped == 6, "skipped {skipped}:\n{summary}");
    ensure!(figure(&summary, "index rows:") == Some(0), "{summary}");
    runtime.block_on(infra::stack::down(&runtime.block_on(sdk(&moto)), &stack.config))?;
    std::fs::remove_dir_all(dir)?;
    Ok(())
}

/// When the race fires: right after the read it names returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    ReadItem,
    Query,
}

type Writer = Box<dyn FnOnce(Moto) -> futures::future::BoxFuture<'static, Result<()>> + Send>;

/// The DynamoDB store, racing a writer and the runner once.
type Racing = Hooked<DynamoStore, Race>;

/// The race: a writer, then the runner applying what it wrote.
struct Race {
    moto: Moto,
    runner: tokio::sync::Mutex<Runner>,
    race: Mutex<Option<(After, Writer)>>,
    fired: Mutex<usize>,
}

impl Race {
    async fn fire(&self, now: After) {
        let writer = {
            let mut race = self.race.lock().unwrap_or_else(|p| p.into_inner());
            match race.take() {
                Some((after, writer)) if after == now => writer,
                other => {
                    *race = other;
                    return;
                }
            }
        };
        *self.fired.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        let written = writer(self.moto.clone()).await;
        let ran = self.run().await;
        if let Err(e) = written.and(ran) {
            panic!("the racing writer or runner failed: {e}");
        }
    }

    async fn run(&self) -> Result<()> {
        run_until_idle(&mut *self.runner.lock().await, Duration::from_secs(30)).await
    }
}

impl AfterRead for Race {
    async fn after_read(&self, read: Read<'_>) {
        match read {
            Read::Query { .. } => self.fire(After::Query).await,
            // Repair reads a node (its mark) before its partition: only a
            // source item read of the issues table is the race's moment.
            Read::Item { key, .. } if !key.contains_key("source") => self.fire(After::ReadItem).await,
            Read::Item { .. } => {}
        }
    }
}

fn selection() -> Selection {
    Selection {
        config: "unused.toml".into(),
        indexes: Vec::new(),
        edge_sets: Vec::new(),
        segments: 2,
        page_size: 10,
        concurrency: 2,
        endpoint: Default::default(),
        no_progress: true,
    }
}

async fn run_verify<S: Store + Scan>(store: &S, config: &Config, repair: bool) -> Result<(u8, Json, String)> {
    let args = VerifyArgs {
        selection: selection(),
        output: Output::Json,
        examples: 100,
        repair,
        budget: None,
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = verify(store, config, &Scope::all(config), &args, &Quiet, &mut out, &mut err).await;
    let report: Json = serde_json::from_slice(&out)
        .map_err(|e| anyhow!("verify printed no JSON ({e}): {}", String::from_utf8_lossy(&err)))?;
    Ok((code, report, String::from_utf8_lossy(&err).into_owned()))
}

/// A stack run by the runner, whose derived data then lost two things (an
/// index table edited by hand: issue-1's row deleted; GOAL-1's member of
/// USER-2 removed). The race, armed at `after`: the user moves issue-1's
/// field (a ReadItem race) or deletes the edge to USER-2 (a Query race),
/// and the runner applies it, between the command's read and its write.
async fn racing(moto: &Moto, test: &str, after: After) -> Result<Racing> {
    let stack = stack(moto, test, true).await?;
    let (records, issues) = (stack.records.clone(), stack.issues.clone());
    let config = stack.config.clone();
    let wiring = Wiring {
        reaper: false,
        discover_every_ms: 10_000,
        poll_interval_ms: 100,
        window_ms: Some(0),
        local_ttl_every_ms: None,
        delivery: Default::default(),
    };
    let runner = local::connect(
        &sdk(moto).await,
        config.clone(),
        Arc::new(SystemClock),
        Checkpoints::default(),
        wiring,
        None,
    )
    .await?;
    let racing = Hooked {
        store: DynamoStore::new(moto.dynamodb.clone(), config.clone()),
        hook: Race {
            moto: moto.clone(),
            runner: tokio::sync::Mutex::new(runner),
            race: Mutex::new(None),
            fired: Mutex::new(0),
        },
    };
    moto.put(&records, &node("GOAL-1")).await?;
    moto.put(&records, &edge("GOAL-1", 1, "400-CONTRIBUTOR")).await?;
    moto.put(&records, &edge("GOAL-1", 2, "400-CONTRIBUTOR")).await?;
    moto.put(&issues, &issue("issue-1", &[("f1", "a")])).await?;
    racing.hook.run().await?;
    derived::verify(moto, &config).await?;

    // The drift, by hand (no stream record of the pipeline's plans it).
    let index_table = &config.indexes[0].table;
    let rows = moto.scan(index_table).await?;
    ensure!(rows.len() == 1, "issue-1's one row: {rows:?}");
    moto.delete(
        index_table,
        &item(&[("pk", rows[0]["pk"].clone()), ("sk", rows[0]["sk"].clone())]),
    )
    .await?;
    let goal = moto
        .get(&records, &item(&[("source", s("GOAL-1")), ("target", s("GOAL-1"))]))
        .await?
        .ok_or_else(|| anyhow!("no GOAL-1"))?;
    let member = match goal.get("edges") {
        Some(Value::Ss(members)) => members.iter().find(|m| m.contains("USER-2")).cloned(),
        _ => None,
    }
    .ok_or_else(|| anyhow!("no member of USER-2: {goal:?}"))?;
    moto.dynamodb
        .update_item()
        .table_name(&records)
        .key("source", AttributeValue::S("GOAL-1".to_owned()))
        .key("target", AttributeValue::S("GOAL-1".to_owned()))
        .update_expression("DELETE edges :m")
        .expression_attribute_values(":m", AttributeValue::Ss(vec![member]))
        .send()
        .await?;
    // The runner sees that MODIFY too (it plans nothing).
    racing.hook.run().await?;

    let writer: Writer = match after {
        After::ReadItem => Box::new(move |moto: Moto| {
            Box::pin(async move { moto.put(&issues, &issue("issue-1", &[("f2", "b")])).await })
        }),
        After::Query => {
            Box::new(move |moto: Moto| Box::pin(async move { moto.delete(&records, &edge_key("GOAL-1", 2)).await }))
        }
    };
    *racing.hook.race.lock().unwrap_or_else(|p| p.into_inner()) = Some((after, writer));
    Ok(racing)
}

fn fired(racing: &Racing) -> usize {
    *racing.hook.fired.lock().unwrap_or_else(|p| p.into_inner())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn verify_repair_racing_a_writer_and_run_ends_clean() -> Result<()> {
    let moto = Moto::connect("verify_repair_racing").await;
    for after in [After::ReadItem, After::Query] {
        let racing = racing(&moto, &format!("repair-race-{after:?}"), after).await?;
        let config = racing.store.config().clone();
        let (code, report, err) = run_verify(&racing.store, &config, false).await?;
        ensure!(code == exit::DRIFT, "the lost records left drift: {report:#}\n{err}");
        let (code, report, err) = run_verify(&racing, &config, true).await?;
        ensure!(fired(&racing) == 1, "the race did not run");
        // The stream's write stands: the derived data is the recomputation.
        derived::verify(&moto, &config)
            .await
            .map_err(|e| anyhow!("{after:?}: after verify --repair: {e}"))?;
        ensure!(
            report["repair"]["stale"] == 1,
            "{after:?}: the stale correction lost: {report:#}\n{err}"
        );
        ensure!(code == exit::DRIFT, "a lost correction asks for another verify: {code}");
        let (code, report, err) = run_verify(&racing.store, &config, false).await?;
        ensure!(code == exit::OK, "{after:?}: verify after the race: {report:#}\n{err}");
        infra::stack::down(&sdk(&moto).await, &config).await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn rebuild_racing_a_writer_and_run_ends_clean() -> Result<()> {
    let moto = Moto::connect("rebuild_racing").await;
    for after in [After::ReadItem, After::Query] {
        let racing = racing(&moto, &format!("rebuild-race-{after:?}"), after).await?;
        let config = racing.store.config().clone();
        let checkpoint = std::env::temp_dir().join(format!("{}checkpoint.json", config.tables[0].name));
        let args = RebuildArgs {
            selection: selection(),
            budget: None,
            checkpoint: checkpoint.clone(),
            fresh: true,
            rounds: 3,
            output: Output::Text,
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = rebuild(
            &racing,
            &config,
            &Scope::all(&config),
            &args,
            &Quiet,
            &mut out,
            &mut err,
        )
        .await;
        let (out, err) = (String::from_utf8_lossy(&out), String::from_utf8_lossy(&err));
        ensure!(fired(&racing) == 1, "the race did not run");
        ensure!(code == exit::OK, "{after:?}: rebuild: {code}\n{out}\n{err}");
        ensure!(out.contains("1 lost to newer stream writes"), "{after:?}:\n{out}");
        derived::verify(&moto, &config).await?;
        let (code, report, err) = run_verify(&racing.store, &config, false).await?;
        ensure!(code == exit::OK, "{after:?}: verify after rebuild: {report:#}\n{err}");
        let _ = std::fs::remove_file(checkpoint);
        infra::stack::down(&sdk(&moto).await, &config).await?;
    }
    Ok(())
}
