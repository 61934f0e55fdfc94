//! The developer loop through the `streamdex` command line itself, against
//! the moto server: `seed` writes sample data, `lag` sees the backlog,
//! `run --exit-when-idle` consumes it, `lag` then sees none, `show` prints
//! the edge sets and index rows it built, `record` tails the stream into
//! JSON Lines, and `replay` reads that file back. Each step
//! is parsed from its argument list as a user would type it, and its exit
//! code is checked.
//!
//! It needs a moto server at `STREAMDEX_TEST_ENDPOINT`, so it is
//! `#[ignore]`d: `scripts/test.sh` starts one and runs it with
//! `--include-ignored`.

use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use clap::Parser;
use infra::cli::{self, Cli, Command};
use infra::stack;
use model::config::{self, EXAMPLE_CONFIG};
use streamdex_tests::moto::{prefixed, prefixed_toml, unique_prefix, Moto};

/// Runs one command line; returns its exit code, stdout and stderr.
pub(crate) fn streamdex(args: &[&str]) -> Result<(u8, String, String)> {
    let parsed = Cli::try_parse_from(std::iter::once("streamdex").chain(args.iter().copied()))
        .with_context(|| format!("streamdex {}", args.join(" ")))?;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = match &parsed.command {
        Command::Seed(a) => cli::seed::run_with(a, &mut out, &mut err),
        Command::Lag(a) => cli::lag::run_with(a, &mut out, &mut err),
        Command::Run(a) => cli::run::run_with(a, &mut out, &mut err),
        Command::Record(a) => cli::record::run_with(a, &mut err),
        Command::Replay(a) => cli::replay::run_with(a, &mut out, &mut err)?,
        Command::Show(a) => cli::show::run_with(a, &mut out, &mut err),
        Command::Quarantine(a) => cli::quarantine::run_with(a, &mut out, &mut err),
        Command::Up(a) => cli::stack::up_with(a, &mut out, &mut err),
        Command::Query(a) => cli::query::run_with(a, &mut out, &mut err),
        other => bail!("not a command this test drives: {other:?}"),
    };
    Ok((code, String::from_utf8(out)?, String::from_utf8(err)?))
}

fn text(path: &Path) -> String {
    path.display().to_string()
}

/// The commands start their own runtimes, so the test runs on none (its
/// setup borrows one).
#[test]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
fn seed_lag_run_record_replay_through_the_command_line() -> Result<()> {
    let setup = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let moto = setup.block_on(Moto::connect("seed_lag_run_record_replay_through_the_command_line"));
    let prefix = unique_prefix("cli");
    let dir: PathBuf = std::env::temp_dir().join(format!("streamdex-cli-{}", prefix.trim_end_matches('-')));
    std::fs::create_dir_all(&dir)?;
    let config_path = dir.join("streamdex.toml");
    std::fs::write(&config_path, prefixed_toml(&prefix))?;
    let config = config::load(&config_path).map_err(|e| anyhow::anyhow!("{e}"))?;
    let example = config::parse(EXAMPLE_CONFIG, "example").map_err(|e| anyhow::anyhow!("{e}"))?;
    ensure!(
        config == prefixed(&example, &prefix),
        "the prefixed file is the prefixed example"
    );
    let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".to_owned());
    setup.block_on(async {
        let sdk = stack::sdk_config(Some(&moto.endpoint), Some(&region)).await;
        stack::up(&sdk, &config).await
    })?;
    drop(setup);

    let (cfg, state, recorded) = (
        text(&config_path),
        text(&dir.join("state.json")),
        dir.join("recorded.jsonl"),
    );
    let endpoint = ["--endpoint-url", moto.endpoint.as_str(), "--region", region.as_str()];
    let with = |args: &[&str]| -> Vec<String> { args.iter().chain(endpoint.iter()).map(|s| (*s).to_owned()).collect() };
    let run_line = |args: Vec<String>| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        streamdex(&refs)
    };

    let (code, out, err) = run_line(with(&["seed", &cfg, "--size", "2"]))?;
    ensure!(code == 0, "seed: {code}\n{out}\n{err}");

    // Everything seeded waits: a backlog, young records (exit 0 under a day).
    let (code, out, err) = run_line(with(&[
        "lag",
        &cfg,
        "--state",
        &state,
        "--max-age",
        "86400",
        "--output",
        "json",
    ]))?;
    ensure!(code == 0, "lag: {code}\n{out}\n{err}");
    let lag: serde_json::Value = serde_json::from_str(&out).context("lag --output json")?;
    let backlog = |lag: &serde_json::Value| -> u64 {
        lag["shards"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["backlog"].as_u64())
            .sum()
    };
    ensure!(backlog(&lag) > 0, "a backlog before run: {lag}");
    ensure!(lag["lagging"] == false, "{lag}");

    let (code, out, err) = run_line(with(&[
        "run",
        &cfg,
        "--state",
        &state,
        "--exit-when-idle",
        "--give-up-after",
        "120",
        "--no-emf",
    ]))?;
    ensure!(code == 0, "run: {code}\n{out}\n{err}");

    let (code, out, err) = run_line(with(&["lag", &cfg, "--state", &state, "--output", "json"]))?;
    ensure!(code == 0, "lag after run: {code}\n{out}\n{err}");
    let lag: serde_json::Value = serde_json::from_str(&out)?;
    ensure!(backlog(&lag) == 0, "run consumed everything: {lag}");

    // The seeded memberships are in the edge sets, the issues in the index.
    let (code, out, err) = run_line(with(&["show", &cfg]))?;
    ensure!(code == 0, "show: {code}\n{err}");
    let shown: serde_json::Value = serde_json::from_str(&out).context("show prints JSON")?;
    let sets = shown["edge_sets"][format!("{prefix}records.edges")]
        .as_object()
        .context("the records edge set")?;
    let members: usize = sets
        .values()
        .filter_map(|n| n["members"].as_array())
        .map(Vec::len)
        .sum();
    ensure!(members > 0, "no member in any edge set: {shown}");
    ensure!(
        sets.values().all(|n| n["edgesComplete"] == true),
        "every node built: {shown}"
    );
    let rows = shown["indexes"][format!("{prefix}IssueAttribIndex")]
        .as_array()
        .context("the index")?;
    ensure!(!rows.is_empty(), "no index row: {shown}");

    let (code, out, err) = run_line(with(&[
        "record",
        &cfg,
        "--out",
        &text(&recorded),
        "--from",
        "trim-horizon",
        "--idle-exit",
        "1",
        "--no-progress",
    ]))?;
    ensure!(code == 0, "record: {code}\n{out}\n{err}");
    let lines = std::fs::read_to_string(&recorded)?.lines().count();
    ensure!(lines > 0, "record wrote nothing");

    // What was recorded replays on the embedded default, record for record.
    let (code, out, err) = streamdex(&["replay", "--config", &cfg, "--no-progress", &text(&recorded)])?;
    ensure!(code == 0, "replay: {code}\n{out}\n{err}");
    ensure!(err.contains(&format!("replayed {lines} records")), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// A moto server and the config of a stack that was never stood up (`up`
/// not run): its tables, named with a fresh prefix, do not exist.
struct NoStack {
    moto: Moto,
    prefix: String,
    dir: tempfile::TempDir,
    config: String,
    region: String,
}

fn no_stack(test: &str) -> Result<NoStack> {
    let setup = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let moto = setup.block_on(Moto::connect(test));
    let prefix = unique_prefix(test);
    let dir = tempfile::tempdir()?;
    let config_path = dir.path().join("streamdex.toml");
    std::fs::write(&config_path, prefixed_toml(&prefix))?;
    let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".to_owned());
    Ok(NoStack {
        moto,
        prefix,
        config: text(&config_path),
        dir,
        region,
    })
}

/// A config naming tables that were never created (`up` not run): `run`
/// stops at once with one line naming the table and `streamdex up`,
/// instead of saying so every round forever.
#[test]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
fn run_stops_on_a_table_that_does_not_exist() -> Result<()> {
    let NoStack {
        moto,
        prefix,
        dir,
        config: cfg,
        region,
    } = no_stack("run_stops_on_a_table_that_does_not_exist")?;
    let state = text(&dir.path().join("state.json"));
    let (code, out, err) = streamdex(&[
        "run",
        &cfg,
        "--state",
        &state,
        "--exit-when-idle",
        "--no-emf",
        "--endpoint-url",
        &moto.endpoint,
        "--region",
        &region,
    ])?;
    ensure!(code == 1, "run: exit {code}\n{out}\n{err}");
    let stopped: Vec<&str> = err.lines().filter(|l| l.contains("does not exist")).collect();
    ensure!(stopped.len() == 1, "one line about the missing table:\n{err}");
    ensure!(
        stopped[0].contains(&format!("`{prefix}")) && stopped[0].contains("streamdex up"),
        "names the table and the fix: {}",
        stopped[0]
    );
    Ok(())
}

/// Every command that talks to AWS, against a port where nothing listens:
/// exit 1 and one line in the CLI's own words (no `Debug` of SDK types);
/// and a bad `--endpoint-url` is a usage error before anything is tried.
#[test]
fn a_closed_port_and_a_bad_url_are_one_line_each() -> Result<()> {
    let closed = {
        let socket = std::net::TcpListener::bind("127.0.0.1:0")?;
        format!("http://{}", socket.local_addr()?)
    }; // the listener is dropped: nothing listens there now
    let dir = tempfile::tempdir()?;
    let cfg = text(&dir.path().join("streamdex.toml"));
    std::fs::write(&cfg, EXAMPLE_CONFIG)?;
    let state = text(&dir.path().join("state.json"));
    let out_file = text(&dir.path().join("recorded.jsonl"));
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/example-history.jsonl");
    let commands: Vec<Vec<&str>> = vec![
        vec!["up", &cfg],
        vec!["lag", &cfg, "--state", &state],
        vec!["seed", &cfg],
        vec!["run", &cfg, "--state", &state, "--exit-when-idle", "--no-emf"],
        vec!["record", &cfg, "--out", &out_file, "--idle-exit", "1"],
        vec!["show", &cfg],
        vec!["replay", "--config", &cfg, "--no-progress", fixture],
        vec!["quarantine", "list", &cfg],
        vec!["quarantine", "show", &cfg, "4f1c2a9e"],
        vec!["quarantine", "redrive", &cfg, "--all"],
    ];
    for command in &commands {
        let mut line = command.clone();
        line.extend(["--endpoint-url", &closed, "--region", "us-east-1"]);
        let (code, _out, err) = streamdex(&line)?;
        let name = command[0];
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        let last = lines.last().copied().unwrap_or_default();
        ensure!(code == 1, "{name}: exit {code}\n{err}");
        ensure!(
            !err.contains("DispatchFailure") && !err.contains("ConnectorError") && !err.contains(" { "),
            "{name}: an SDK dump:\n{err}"
        );
        ensure!(
            last.starts_with(&format!("streamdex {name}")),
            "{name}: ends with its own line:\n{err}"
        );
        if name != "replay" {
            ensure!(lines.len() == 1, "{name}: one line, got:\n{err}");
        }
        let mut bad = command.clone();
        bad.extend(["--endpoint-url", "not a url"]);
        let parsed = Cli::try_parse_from(std::iter::once("streamdex").chain(bad.iter().copied()));
        match parsed {
            Err(e) => ensure!(
                e.kind() == clap::error::ErrorKind::ValueValidation && e.exit_code() == 2,
                "{name}: {e}"
            ),
            Ok(_) => bail!("{name}: `--endpoint-url 'not a url'` was accepted"),
        }
    }
    Ok(())
}

/// `seed` into tables that were never created writes nothing and says so
/// in one line, naming the table and `streamdex up`.
#[test]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
fn seed_checks_its_tables_before_it_writes() -> Result<()> {
    let NoStack {
        moto,
        prefix,
        dir: _dir,
        config: cfg,
        region,
    } = no_stack("seed_checks_its_tables_before_it_writes")?;
    let (code, out, err) = streamdex(&["seed", &cfg, "--endpoint-url", &moto.endpoint, "--region", &region])?;
    ensure!(code == 1, "seed: exit {code}\n{out}\n{err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    ensure!(lines.len() == 1, "one line:\n{err}");
    ensure!(
        lines[0].contains(&format!("`{prefix}"))
            && lines[0].contains("nothing was written")
            && lines[0].contains("streamdex up"),
        "names the table, says nothing was written and what fixes it: {}",
        lines[0]
    );
    Ok(())
}
