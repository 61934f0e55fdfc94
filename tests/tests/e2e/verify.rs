//! `streamdex verify` and `streamdex rebuild` against DynamoDB (the run's moto
//! server), through the commands' own entry points.
//!
//! A small graph and issue table are written with the SDK and indexed by the
//! real indexer from the tables' real streams. Then the derived data is
//! broken in every way verify reports (a row deleted, a stray row, a changed
//! projection, a member removed, a bogus member, a node flagged needlessly,
//! a node past max_members unflagged, a node without its marker): verify
//! must report exactly those, `verify --repair` must fix them, and a second
//! verify must be clean. Then a stretch of stream records is lost (written
//! but never indexed, as a consumer broken for more than a day leaves
//! them): verify must see drift, rebuild must end clean and remove its
//! checkpoint, and a last verify must be clean.
//!
//! They need a moto server at `STREAMDEX_TEST_ENDPOINT`, so they are
//! `#[ignore]`d: `scripts/test.sh` starts one and runs them with
//! `--include-ignored`; run so without the variable, they fail at once
//! saying what is missing.

use std::sync::Arc;

use anyhow::{anyhow, ensure, Result};
use aws_kit::quarantine::memory::MemoryQuarantine;
use infra::cli::exit;
use infra::cli::rebuild::{execute as rebuild, RebuildArgs};
use infra::cli::verify::{execute as verify, Output, Selection, VerifyArgs};
use model::config::{self, EXAMPLE_CONFIG};
use model::drift::Scope;
use model::{Config, Image, Value};
use serde_json::Value as Json;
use stream_indexer::rebuild::Quiet;
use stream_indexer::store::dynamo::{to_item, DynamoStore};
use stream_indexer::{Indexer, Options};
use streamdex_tests::images::{item, node, s};
use streamdex_tests::moto::{lambda_event, prefixed, unique_prefix, Moto, StreamReader};

fn edge(source: &str, target: &str, role: &str) -> Image {
    item(&[("source", s(source)), ("target", s(target)), ("gsi0", s(role))])
}

fn issue(id: &str, fields: &[(&str, Value)]) -> Image {
    item(&[
        ("id", s(id)),
        ("rel", s(id)),
        ("num", Value::N("7".into())),
        ("name", s("an issue")),
        ("state", s("open")),
        ("custom_fields", Value::M(item(fields).into_map())),
    ])
}

fn selection() -> Selection {
    Selection {
        config: "unused.toml".into(),
        indexes: Vec::new(),
        edge_sets: Vec::new(),
        segments: 3,
        page_size: 4,
        concurrency: 4,
        endpoint: Default::default(),
        no_progress: true,
    }
}

fn verify_args(repair: bool) -> VerifyArgs {
    VerifyArgs {
        selection: selection(),
        output: Output::Json,
        examples: 100,
        repair,
        budget: None,
    }
}

/// Runs `streamdex verify --output json`; returns the exit code and the report.
async fn run_verify(store: &DynamoStore, config: &Config, repair: bool) -> Result<(u8, Json)> {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = verify(
        store,
        config,
        &Scope::all(config),
        &verify_args(repair),
        &Quiet,
        &mut out,
        &mut err,
    )
    .await;
    let report: Json = serde_json::from_slice(&out)
        .map_err(|e| anyhow!("verify printed no JSON ({e}): {}", String::from_utf8_lossy(&err)))?;
    Ok((code, report))
}

fn count(report: &Json, kind: &str) -> u64 {
    report["counts"][kind].as_u64().unwrap_or(u64::MAX)
}

/// Feeds every unread stream record to the indexer until the streams are dry.
async fn drain(
    moto: &Moto,
    indexer: &Indexer<DynamoStore, MemoryQuarantine>,
    readers: &mut [StreamReader],
) -> Result<()> {
    for _ in 0..8 {
        let mut new = 0;
        for reader in readers.iter_mut() {
            let records = reader.read_new(moto).await?;
            new += records.len();
            for batch in records.chunks(25) {
                let outcome = indexer
                    .handle(&lambda_event(batch))
                    .await
                    .map_err(|e| anyhow!("batch from {}: {e:?}", reader.table))?;
                ensure!(outcome.failed.is_none(), "a batch failed at {:?}", outcome.failed);
            }
        }
        if new == 0 {
            return Ok(());
        }
    }
    Err(anyhow!("the streams never ran dry"))
}

async fn update(moto: &Moto, table: &str, key: &Image, expression: &str, values: &[(&str, Value)]) -> Result<()> {
    let mut request = moto
        .dynamodb
        .update_item()
        .table_name(table)
        .set_key(Some(to_item(key)))
        .update_expression(expression);
    for (name, value) in values {
        request = request.expression_attribute_values(*name, to_item(&item(&[("v", value.clone())]))["v"].clone());
    }
    request.send().await.map_err(|e| anyhow!("UpdateItem {table}: {e:?}"))?;
    Ok(())
}

struct Setup {
    config: Arc<Config>,
    records: String,
    issues: String,
    index_table: String,
    store: DynamoStore,
    indexer: Indexer<DynamoStore, MemoryQuarantine>,
    readers: Vec<StreamReader>,
}

async fn setup(moto: &Moto, test: &str) -> Result<Setup> {
    let mut config = prefixed(
        &config::parse(EXAMPLE_CONFIG, "streamdex.example.toml").map_err(|e| anyhow!("{e}"))?,
        &unique_prefix(test),
    );
    config.edge_sets[0].max_members = 3;
    moto.create_tables(&config).await?;
    let config = Arc::new(config);
    let name = |suffix: &str| {
        config
            .tables
            .iter()
            .find(|t| t.name.ends_with(suffix))
            .map(|t| t.name.clone())
            .ok_or_else(|| anyhow!("no table {suffix}"))
    };
    let (records, issues) = (name("records")?, name("issues")?);
    let readers = vec![
        StreamReader::open(moto, &records).await?,
        StreamReader::open(moto, &issues).await?,
    ];
    Ok(Setup {
        store: DynamoStore::new(moto.dynamodb.clone(), config.clone()),
        indexer: Indexer::new(
            config.clone(),
            DynamoStore::new(moto.dynamodb.clone(), config.clone()),
            MemoryQuarantine::new(),
            Options::default(),
        ),
        index_table: config.indexes[0].table.clone(),
        config,
        records,
        issues,
        readers,
    })
}

#[tokio::test]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn verify_finds_every_kind_of_drift_and_repair_and_rebuild_clear_it() -> Result<()> {
    let moto = Moto::connect("verify_finds_every_kind_of_drift").await;
    let mut t = setup(&moto, "verify-kinds").await?;
    let (records, issues) = (t.records.clone(), t.issues.clone());

    // A graph: GOAL-1 with 2 edges, GOAL-2 past max_members (4 > 3), TEAM-1
    // with 1, USER-1 with none; and issues, one with an unindexable entry.
    for id in ["GOAL-1", "GOAL-2", "TEAM-1", "USER-1"] {
        moto.put(&records, &node(id)).await?;
    }
    for (n, target) in [
        ("GOAL-1", "GOALMEMBERSHIP-USER-1"),
        ("GOAL-1", "GOALMEMBERSHIP-USER-2"),
        ("GOAL-2", "GOALMEMBERSHIP-USER-1"),
        ("GOAL-2", "GOALMEMBERSHIP-USER-2"),
        ("GOAL-2", "GOALMEMBERSHIP-USER-3"),
        ("GOAL-2", "GOALMEMBERSHIP-USER-4"),
        ("TEAM-1", "TEAMMEMBERSHIP-USER-1"),
    ] {
        moto.put(&records, &edge(n, target, "400-CONTRIBUTOR")).await?;
    }
    moto.put(
        &issues,
        &issue("issue-1", &[("f1", Value::N("3".into())), ("f2", s("Approved"))]),
    )
    .await?;
    moto.put(&issues, &issue("issue-2", &[("f1", s("x")), ("f3", Value::Bool(true))]))
        .await?;
    moto.put(&issues, &issue("issue-3", &[("f1", Value::L(vec![])), ("f2", s("y"))]))
        .await?;
    drain(&moto, &t.indexer, &mut t.readers).await?;

    let (code, report) = run_verify(&t.store, &t.config, false).await?;
    ensure!(code == exit::OK, "the indexer's result has drift: {report:#}");
    ensure!(report["notice_counts"]["flagged"] == 1, "GOAL-2 is flagged: {report:#}");
    ensure!(
        report["notice_counts"]["unindexable"] == 1,
        "issue-3's list: {report:#}"
    );

    // Break it in every way.
    let rows = moto.scan(&t.index_table).await?;
    ensure!(rows.len() == 5, "5 rows expected, got {}", rows.len());
    let row_key = |row: &Image| item(&[("pk", row["pk"].clone()), ("sk", row["sk"].clone())]);
    moto.delete(&t.index_table, &row_key(&rows[0])).await?;
    let mut tampered = rows[1].clone();
    tampered.insert("state", s("tampered"));
    moto.put(&t.index_table, &tampered).await?;
    moto.put(
        &t.index_table,
        &item(&[
            ("pk", s("f9")),
            ("sk", s("stray")),
            ("id", s("issue-9")),
            ("rel", s("issue-9")),
        ]),
    )
    .await?;
    let key = |id: &str| item(&[("source", s(id)), ("target", s(id))]);
    update(
        &moto,
        &records,
        &key("GOAL-1"),
        "DELETE edges :m",
        &[(":m", Value::Ss(vec!["GOALMEMBERSHIP-USER-1#400-CONTRIBUTOR".into()]))],
    )
    .await?;
    update(
        &moto,
        &records,
        &key("TEAM-1"),
        "ADD edges :m SET edgesComplete = :f",
        &[(":m", Value::Ss(vec!["BOGUS#1".into()])), (":f", Value::Bool(false))],
    )
    .await?;
    update(
        &moto,
        &records,
        &key("GOAL-2"),
        "SET edgesComplete = :t",
        &[(":t", Value::Bool(true))],
    )
    .await?;
    update(&moto, &records, &key("USER-1"), "REMOVE edgesComplete", &[]).await?;

    let (code, report) = run_verify(&t.store, &t.config, false).await?;
    ensure!(code == exit::DRIFT, "exit {code}: {report:#}");
    for kind in [
        "missing_row",
        "extra_row",
        "wrong_projection",
        "missing_member",
        "extra_member",
        "flag_missing",
        "flag_stale",
        "marker_missing",
    ] {
        ensure!(count(&report, kind) == 1, "{kind}: {report:#}");
    }
    ensure!(report["findings"] == 8, "{report:#}");

    // verify --repair writes exactly those, and the next verify is clean.
    let (code, repaired) = run_verify(&t.store, &t.config, true).await?;
    ensure!(code == exit::OK, "exit {code}: {repaired:#}");
    ensure!(repaired["repair"]["written"] == 8, "{repaired:#}");
    ensure!(repaired["repair"]["skipped"] == 0, "{repaired:#}");
    let (code, report) = run_verify(&t.store, &t.config, false).await?;
    ensure!(code == exit::OK && report["findings"] == 0, "after repair: {report:#}");
    // The pipeline's view agrees: the repair's own writes plan nothing.
    drain(&moto, &t.indexer, &mut t.readers).await?;
    let (code, report) = run_verify(&t.store, &t.config, false).await?;
    ensure!(code == exit::OK, "after the repair's records: {report:#}");

    // A lost stretch: changes whose stream records never reach the indexer.
    moto.put(
        &issues,
        &issue("issue-1", &[("f1", Value::N("4".into())), ("f4", s("new"))]),
    )
    .await?;
    moto.delete(&issues, &item(&[("id", s("issue-2")), ("rel", s("issue-2"))]))
        .await?;
    moto.put(&issues, &issue("issue-4", &[("f5", Value::Bool(false))]))
        .await?;
    moto.put(&records, &edge("GOAL-1", "GOALMEMBERSHIP-USER-9", "500-LEAD"))
        .await?;
    moto.delete(&records, &key("TEAM-1")).await?;
    moto.delete(
        &records,
        &item(&[("source", s("GOAL-2")), ("target", s("GOALMEMBERSHIP-USER-4"))]),
    )
    .await?;
    moto.put(&records, &node("USER-1")).await?;
    moto.put(&records, &node("USER-2")).await?;
    moto.put(&records, &edge("USER-2", "TEAMMEMBERSHIP-X", "300-MEMBER"))
        .await?;
    for reader in t.readers.iter_mut() {
        let lost = reader.read_new(&moto).await?;
        ensure!(!lost.is_empty(), "records to lose");
    }
    let (code, report) = run_verify(&t.store, &t.config, false).await?;
    ensure!(code == exit::DRIFT, "the lost stretch left drift: {report:#}");
    for kind in [
        "missing_row",
        "extra_row",
        "missing_member",
        "flag_stale",
        "marker_missing",
    ] {
        ensure!(count(&report, kind) >= 1, "{kind}: {report:#}");
    }

    let dir = std::env::temp_dir().join(unique_prefix("verify-checkpoint"));
    std::fs::create_dir_all(&dir)?;
    let checkpoint = dir.join("rebuild.json");
    let args = RebuildArgs {
        selection: selection(),
        budget: Some(1000),
        checkpoint: checkpoint.clone(),
        fresh: false,
        rounds: 3,
        output: Output::Json,
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = rebuild(
        &t.store,
        &t.config,
        &Scope::all(&t.config),
        &args,
        &Quiet,
        &mut out,
        &mut err,
    )
    .await;
    let summary: Json = serde_json::from_slice(&out)
        .map_err(|e| anyhow!("rebuild printed no JSON ({e}): {}", String::from_utf8_lossy(&err)))?;
    ensure!(code == exit::OK, "rebuild exit {code}: {summary:#}");
    ensure!(summary["clean"] == true, "{summary:#}");
    ensure!(!checkpoint.exists(), "a finished rebuild removes its checkpoint");
    let _ = std::fs::remove_dir_all(&dir);

    let (code, report) = run_verify(&t.store, &t.config, false).await?;
    ensure!(code == exit::OK && report["findings"] == 0, "after rebuild: {report:#}");
    Ok(())
}
