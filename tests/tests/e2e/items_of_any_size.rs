//! Every command that prints items or records, fed items as odd as
//! DynamoDB accepts, through the command line against the moto server: a
//! string of 180,000 characters (wide, combining and control
//! characters), empty strings, a set of 3,000 members and a map nested 30
//! deep; and a poison item (a `num` that is a string) as large, which the
//! indexer quarantines. `run`, `show`, `query` (table and JSON), `record`,
//! `replay --dump json`, `quarantine list` (table and JSON) and `show`,
//! `lag` and `verify`'s report must each exit as documented, never panic,
//! and keep every table line within 100 columns (stdout is not a terminal
//! here).
//!
//! It needs a moto server at `STREAMDEX_TEST_ENDPOINT`, so it is
//! `#[ignore]`d: `scripts/test.sh` runs it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{ensure, Context, Result};
use clap::Parser;
use infra::cli::verify::execute as verify;
use infra::cli::{exit, Cli, Command};
use infra::stack;
use model::drift::Scope;
use model::{Image, Value};
use stream_indexer::rebuild::Quiet;
use stream_indexer::store::dynamo::DynamoStore;
use streamdex_tests::images::{item, s};
use streamdex_tests::moto::{prefixed, prefixed_toml, unique_prefix, Moto};
use unicode_width::UnicodeWidthStr;

use crate::cli::streamdex;

/// 180,000 characters (270 KB): CJK, a combining accent, a control character.
fn huge() -> String {
    "ab\u{4e2d}e\u{301}\u{7}".repeat(30_000)
}

/// A map `depth` levels deep.
fn nested(depth: usize) -> Value {
    (0..depth).fold(Value::S("bottom".to_owned()), |inner, level| {
        Value::M(HashMap::from([(format!("level{level}"), inner)]))
    })
}

/// Every line of `text` is within `width` columns.
fn fits(text: &str, width: usize) -> Result<()> {
    for line in text.lines() {
        ensure!(
            line.width() <= width,
            "a line of {} columns: {:.200}",
            line.width(),
            line
        );
    }
    Ok(())
}

#[test]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
fn every_printing_command_takes_items_of_any_size_and_shape() -> Result<()> {
    let setup = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let moto = setup.block_on(Moto::connect(
        "every_printing_command_takes_items_of_any_size_and_shape",
    ));
    let prefix = unique_prefix("odd");
    let dir: PathBuf = std::env::temp_dir().join(format!("streamdex-odd-{}", prefix.trim_end_matches('-')));
    std::fs::create_dir_all(&dir)?;
    let config_path = dir.join("streamdex.toml");
    std::fs::write(&config_path, prefixed_toml(&prefix))?;
    let example = model::config::parse(model::config::EXAMPLE_CONFIG, "example").map_err(|e| anyhow::anyhow!("{e}"))?;
    let config = prefixed(&example, &prefix);
    let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".to_owned());
    let issues = format!("{prefix}issues");
    ensure!(config.table(&issues).is_some(), "the prefixed config declares {issues}");
    let tags: Vec<String> = (0..3_000).map(|i| format!("tag-{i}")).collect();
    let odd: Image = item(&[
        ("id", s("issue-1")),
        ("rel", s("issue-1")),
        ("num", Value::N("7".to_owned())),
        ("name", Value::S(huge())),
        ("state", s("")),
        (
            "custom_fields",
            Value::M(HashMap::from([
                ("priority".to_owned(), s("high")),
                ("empty".to_owned(), s("")),
            ])),
        ),
        ("tags", Value::Ss(tags)),
        ("deep", nested(30)),
    ]);
    let poison: Image = item(&[
        ("id", s("issue-2")),
        ("rel", s("issue-2")),
        ("num", s("not a number")),
        ("name", Value::S(huge())),
        (
            "custom_fields",
            Value::M(HashMap::from([("priority".to_owned(), s("high"))])),
        ),
    ]);
    setup.block_on(async {
        let sdk = stack::sdk_config(Some(&moto.endpoint), Some(&region)).await;
        stack::up(&sdk, &config).await?;
        moto.put(&issues, &odd).await?;
        moto.put(&issues, &poison).await
    })?;
    drop(setup);

    let cfg = config_path.display().to_string();
    let state = dir.join("state.json").display().to_string();
    let recorded = dir.join("recorded.jsonl").display().to_string();
    let endpoint = ["--endpoint-url", moto.endpoint.as_str(), "--region", region.as_str()];
    let run = |args: &[&str]| -> Result<(u8, String, String)> {
        let line: Vec<&str> = args.iter().chain(endpoint.iter()).copied().collect();
        streamdex(&line)
    };

    // `record` first: it reads the streams from their start.
    let (code, out, err) = run(&["record", &cfg, "--out", &recorded, "--idle-exit", "2"])?;
    ensure!(code == 0, "record: {code}\n{out}\n{err}");
    let (code, out, err) = run(&[
        "run",
        &cfg,
        "--state",
        &state,
        "--exit-when-idle",
        "--give-up-after",
        "120",
        "--no-emf",
    ])?;
    ensure!(code == 0, "run: {code}\n{out}\n{err}");

    let (code, out, err) = run(&["show", &cfg])?;
    ensure!(code == 0, "show: {code}\n{err}");
    ensure!(out.contains("high"), "show prints the odd issue's row: {:.300}", out);

    let query = [
        "query",
        cfg.as_str(),
        "issue-attrib",
        "--partition",
        "priority",
        "--eq",
        "high",
    ];
    let (code, out, err) = run(&query)?;
    ensure!(code == 0, "query: {code}\n{err}");
    fits(&out, 100)?;
    ensure!(out.lines().count() == 2 && out.contains('…'), "one row, cut: {out}");
    ensure!(
        err.contains("--output json gives them whole"),
        "the summary says so: {err}"
    );
    let (code, out, err) = run(&[&query[..], &["--output", "json"]].concat())?;
    ensure!(code == 0, "query --output json: {code}\n{err}");
    let row: serde_json::Value = serde_json::from_str(out.trim()).context("one JSON line")?;
    ensure!(row["row"]["name"]["S"] == huge().as_str(), "the whole value in JSON");

    let (code, out, err) = run(&["quarantine", "list", &cfg])?;
    ensure!(code == 0, "quarantine list: {code}\n{err}");
    fits(&out, 100)?;
    ensure!(out.lines().count() == 1, "the poison issue, quarantined: {out}\n{err}");
    let (code, out, err) = run(&["quarantine", "list", &cfg, "--output", "json"])?;
    ensure!(code == 0, "quarantine list --output json: {code}\n{err}");
    let listed: serde_json::Value = serde_json::from_str(out.trim()).context("one JSON line")?;
    ensure!(listed["cause"] == "unplannable", "{listed}");
    let id = listed["id"].as_str().context("an id")?.to_owned();
    let (code, out, err) = run(&["quarantine", "show", &cfg, &id])?;
    ensure!(code == 0, "quarantine show: {code}\n{err}");
    let shown: serde_json::Value = serde_json::from_str(&out).context("show's JSON")?;
    ensure!(
        shown["record"]["dynamodb"]["NewImage"]["name"]["S"] == huge().as_str(),
        "the whole record, from its claim check"
    );

    let (code, out, err) = run(&["lag", &cfg, "--state", &state])?;
    ensure!(code == 0, "lag: {code}\n{out}\n{err}");
    fits(&out, 100)?;

    // `verify`'s report, on drift that holds the huge value: the odd
    // issue's index row, deleted.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (code, report) = runtime.block_on(async {
        let index_table = format!("{prefix}IssueAttribIndex");
        for row in moto.scan(&index_table).await? {
            moto.delete(
                &index_table,
                &item(&[("pk", row["pk"].clone()), ("sk", row["sk"].clone())]),
            )
            .await?;
        }
        let sdk = stack::sdk_config(Some(&moto.endpoint), Some(&region)).await;
        let store = DynamoStore::new(aws_kit::clients::dynamodb_client(&sdk), Arc::new(config.clone()));
        let parsed = Cli::try_parse_from(["streamdex", "verify", cfg.as_str(), "--no-progress"])?;
        let Command::Verify(args) = parsed.command else {
            anyhow::bail!("not verify");
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = verify(&store, &config, &Scope::all(&config), &args, &Quiet, &mut out, &mut err).await;
        anyhow::Ok((code, String::from_utf8(out)? + &String::from_utf8(err)?))
    })?;
    drop(runtime);
    ensure!(code == exit::DRIFT, "verify: exit {code}\n{report:.2000}");
    ensure!(
        report.contains("missing"),
        "the deleted row is reported: {report:.2000}"
    );

    let (code, out, err) = streamdex(&["replay", &recorded, "--config", &cfg, "--no-progress", "--dump", "json"])?;
    ensure!(code == 0, "replay: {code}\n{err}");
    let dump: serde_json::Value = serde_json::from_str(&out).context("replay's dump")?;
    ensure!(dump.to_string().contains("high"), "replay indexed the odd issue");
    ensure!(err.contains("quarantined: 1"), "and quarantined the poison one: {err}");
    Ok(())
}
