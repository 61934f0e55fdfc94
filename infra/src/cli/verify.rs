//! `streamdex verify`: scan the source tables and the index tables, recompute
//! every index row and edge set, and report the drift by kind, with counts
//! and examples (text or JSON); `--repair` then writes exactly the reported
//! corrections that a fresh read still confirms.
//!
//! Also the pieces `rebuild` shares: which derived data to look at
//! ([`Selection`]), the DynamoDB store, and the report's rendering.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, ValueEnum};
use model::config::{self, Config};
use model::drift::{Correction, DriftKind, Finding, Notice, Report, Scope, Target};
use model::{Image, Value};
use serde_json::{json, Map, Value as Json};
use stream_indexer::rebuild::{self, Mode, Options, Progress, RepairStats, WriteBudget};
use stream_indexer::store::dynamo::{dynamodb_client, DynamoStore};
use stream_indexer::store::scan::{Marker, Scan};
use stream_indexer::store::Store;
use stream_indexer::Backoff;

mod json;
mod text;

pub use json::{finding_json, repair_json, report_json};
use text::*;
pub use text::{key_text, target_text};

use super::exit;
use super::progress::Bar;
use super::stack::Endpoint;

/// What to check and how to reach it (shared by `verify` and `rebuild`).
#[derive(Debug, Clone, Args)]
pub struct Selection {
    /// The pipeline config (the same file the indexer runs with).
    #[arg(value_name = "CONFIG", default_value = "streamdex.toml")]
    pub config: PathBuf,
    /// Only this index (its `name` in the config). Repeatable. Without
    /// --index and --edge-set: every index and every edge set.
    #[arg(long = "index", value_name = "NAME")]
    pub indexes: Vec<String>,
    /// Only the edge set of this source table (its table name in the
    /// config). Repeatable.
    #[arg(long = "edge-set", value_name = "TABLE")]
    pub edge_sets: Vec<String>,
    /// Parallel Scan segments per table (DynamoDB `TotalSegments`).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub segments: u32,
    /// Items per Scan page (`Limit`).
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub page_size: u32,
    /// Correction groups (one source item's rows, or one node) written concurrently.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub concurrency: u32,
    #[command(flatten)]
    pub endpoint: Endpoint,
    /// No progress bar (it is drawn on stderr only when stderr is a terminal).
    #[arg(long)]
    pub no_progress: bool,
}

/// Report format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// For people: counts by kind, a few examples each, on stdout.
    Text,
    /// One JSON object on stdout: counts by kind, examples, notices, repairs.
    Json,
}

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Exit codes: 0 no drift (notices such as correctly flagged nodes are not drift), \
    1 an I/O or AWS failure, 2 bad input (a bad config, an unknown index or table), \
    3 drift found (with --repair: drift found and not every correction could be written).\n\n\
Examples:\n  \
    streamdex verify streamdex.toml\n  \
    streamdex verify streamdex.toml --index issue-attrib --output json > drift.json\n  \
    streamdex verify streamdex.toml --edge-set records --examples 20\n  \
    streamdex verify streamdex.toml --repair --budget 200"
)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// Examples shown per kind of drift (and of notice); counts are always complete.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub examples: usize,
    /// After reporting, write the reported corrections. Each is checked again
    /// against a fresh, strongly consistent read right before it is written;
    /// one that no longer holds (the data changed since the scan) is skipped
    /// and counted, never replaced by another.
    #[arg(long)]
    pub repair: bool,
    /// With --repair: items written per second at most (rows put or deleted,
    /// node updates), so production traffic keeps its capacity. Default: no limit.
    #[arg(long, value_name = "ITEMS_PER_SECOND", value_parser = clap::value_parser!(u32).range(1..))]
    pub budget: Option<u32>,
}

/// Why a command could not start: bad input (exit 2) or a failure (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("{0}")]
    BadInput(String),
    #[error("{0}")]
    Failure(String),
}

impl CommandError {
    pub fn exit_code(&self) -> u8 {
        match self {
            CommandError::BadInput(_) => exit::BAD_INPUT,
            CommandError::Failure(_) => exit::FAILURE,
        }
    }
}

impl Selection {
    /// Loads the config named by `CONFIG`.
    pub fn load(&self) -> Result<Config, CommandError> {
        config::load(&self.config).map_err(|e| match e {
            // As `config check`: an unreadable file is an I/O failure, a refused one bad input.
            config::ConfigError::Read { .. } => CommandError::Failure(e.to_string()),
            other => CommandError::BadInput(other.to_string()),
        })
    }

    /// The scope the flags select in `config`.
    pub fn scope(&self, config: &Config) -> Result<Scope, CommandError> {
        if self.indexes.is_empty() && self.edge_sets.is_empty() {
            return Ok(Scope::all(config));
        }
        let mut scope = Scope::default();
        for name in &self.indexes {
            let at = config.indexes.iter().position(|i| &i.name == name).ok_or_else(|| {
                let known: Vec<&str> = config.indexes.iter().map(|i| i.name.as_str()).collect();
                CommandError::BadInput(format!(
                    "--index {name}: no index of that name in the config (indexes: {})",
                    known.join(", ")
                ))
            })?;
            scope.indexes.insert(at);
        }
        for table in &self.edge_sets {
            let at = config.edge_sets.iter().position(|e| &e.table == table).ok_or_else(|| {
                let known: Vec<&str> = config.edge_sets.iter().map(|e| e.table.as_str()).collect();
                CommandError::BadInput(format!(
                    "--edge-set {table}: no edge set on that table in the config (edge sets on: {})",
                    known.join(", ")
                ))
            })?;
            scope.edge_sets.insert(at);
        }
        Ok(scope)
    }

    /// The read and write options the flags give.
    pub fn options(&self) -> Options {
        Options {
            segments: self.segments,
            page_size: self.page_size,
            concurrency: usize::try_from(self.concurrency).unwrap_or(16),
            budget: None,
            backoff: Backoff::default(),
            rounds: 3,
        }
    }

    /// The DynamoDB store (no SDK retries: the commands retry with backoff themselves).
    pub async fn store(&self, config: Arc<Config>) -> DynamoStore {
        let sdk =
            crate::stack::sdk_config(self.endpoint.endpoint_url.as_deref(), self.endpoint.region.as_deref()).await;
        DynamoStore::new(dynamodb_client(&sdk), config)
    }
}

/// Runs `streamdex verify` on stdout and stderr.
pub fn run(args: &VerifyArgs) -> ExitCode {
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    let code = match setup(&args.selection) {
        Ok((config, scope, runtime)) => runtime.block_on(async {
            let store = args.selection.store(config.clone()).await;
            let bar = Bar::stderr(!args.selection.no_progress);
            execute(&store, &config, &scope, args, &bar, &mut out, &mut err).await
        }),
        Err(e) => {
            let _ = writeln!(err, "streamdex verify: {e}");
            e.exit_code()
        }
    };
    ExitCode::from(code)
}

/// The config, the scope and a runtime, or why not.
pub fn setup(selection: &Selection) -> Result<(Arc<Config>, Scope, tokio::runtime::Runtime), CommandError> {
    let config = selection.load()?;
    let scope = selection.scope(&config)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CommandError::Failure(format!("cannot start the async runtime: {e}")))?;
    Ok((Arc::new(config), scope, runtime))
}

/// Runs `streamdex verify` against `store`; returns the exit code.
pub async fn execute<S: Store + Scan + Marker>(
    store: &S,
    config: &Config,
    scope: &Scope,
    args: &VerifyArgs,
    progress: &dyn Progress,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let options = Options {
        budget: args.budget,
        ..args.selection.options()
    };
    let report = match rebuild::verify(store, config, scope, &options, progress).await {
        Ok(report) => report,
        Err(e) => {
            let _ = writeln!(err, "streamdex verify: {e}");
            return exit::FAILURE;
        }
    };
    let mut repaired = None;
    if args.repair && !report.is_clean() {
        let budget = WriteBudget::new(args.budget);
        match rebuild::repair(
            store,
            config,
            &report.findings,
            Mode::Exact,
            &options,
            &budget,
            progress,
        )
        .await
        {
            Ok(stats) => repaired = Some(stats),
            Err(e) => {
                let _ = render(config, &report, None, args.output, args.examples, out);
                let _ = writeln!(err, "streamdex verify: repair stopped: {e}");
                return exit::FAILURE;
            }
        }
    }
    if let Err(e) = render(config, &report, repaired.as_ref(), args.output, args.examples, out) {
        let _ = writeln!(err, "streamdex verify: cannot write the report: {e}");
        return exit::FAILURE;
    }
    match (&repaired, report.is_clean()) {
        (_, true) => exit::OK,
        (Some(stats), false) if stats.skipped == 0 && stats.stale == 0 => exit::OK,
        _ => exit::DRIFT,
    }
}

fn render(
    config: &Config,
    report: &Report,
    repaired: Option<&RepairStats>,
    output: Output,
    examples: usize,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    match output {
        Output::Text => write_text(config, report, repaired, examples, out),
        Output::Json => {
            serde_json::to_writer_pretty(&mut *out, &report_json(config, report, repaired, examples))?;
            writeln!(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: VerifyArgs,
    }

    fn example() -> Config {
        config::parse(config::EXAMPLE_CONFIG, "x.toml").expect("valid")
    }

    #[test]
    fn flags_select_the_scope() {
        let config = example();
        let cli = Cli::parse_from(["verify", "--index", "issue-attrib"]);
        let scope = cli.args.selection.scope(&config).expect("known");
        assert_eq!(scope.indexes.len(), 1);
        assert!(scope.edge_sets.is_empty());
        let cli = Cli::parse_from(["verify", "--edge-set", "records"]);
        assert_eq!(cli.args.selection.scope(&config).expect("known").edge_sets.len(), 1);
        let cli = Cli::parse_from(["verify"]);
        assert_eq!(cli.args.selection.scope(&config).expect("all"), Scope::all(&config));
        let cli = Cli::parse_from(["verify", "--index", "nope"]);
        let e = cli.args.selection.scope(&config).unwrap_err();
        assert_eq!(e.exit_code(), exit::BAD_INPUT);
        assert!(e.to_string().contains("issue-attrib"), "{e}");
        assert!(Cli::try_parse_from(["verify", "--segments", "0"]).is_err());
        assert!(Cli::try_parse_from(["verify", "--budget", "0"]).is_err());
    }

    #[test]
    fn an_unreadable_config_fails_and_a_bad_one_is_bad_input() {
        let cli = Cli::parse_from(["verify", "/nonexistent/streamdex.toml"]);
        let e = setup(&cli.args.selection).expect_err("refused");
        assert_eq!(e.exit_code(), exit::FAILURE);
        let dir = std::env::temp_dir().join(format!("streamdex-verify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let bad = dir.join("bad.toml");
        std::fs::write(&bad, "[table.x]\nnope = 1\n").expect("write");
        let cli = Cli::parse_from(["verify", bad.to_str().expect("utf-8")]);
        let e = setup(&cli.args.selection).expect_err("refused");
        assert_eq!(e.exit_code(), exit::BAD_INPUT);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
