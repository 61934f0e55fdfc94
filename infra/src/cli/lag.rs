//! `streamdex lag CONFIG`: each consumer's backlog and iterator age on each
//! shard of each configured table, from `streamdex run`'s checkpoints (or
//! from the trim horizon without them); exit 4 when one is older than
//! `--max-age`, for scripts and health checks.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::run::state_path;
use super::stack::{load, Endpoint};
use super::{exit, table};
use crate::runner::age::human;
use crate::runner::checkpoint::Checkpoints;
use crate::runner::lag;
use crate::runner::stream::dynamo::DynamoStreams;
use crate::runner::stream::kinesis::source_for;
use crate::stack::{self, Stack};
use aws_kit::clock::{Clock, SystemClock};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// A table for people.
    Text,
    /// One JSON object: {"max_age_seconds": N, "lagging": bool, "shards": [...]}.
    Json,
}

#[derive(Debug, Args)]
#[command(
    after_help = "The backlog is every record after the checkpoint (filtered or not); the age is that \
of the oldest of them, 0 without backlog. Without a checkpoints file everything in the stream counts.\n\n\
Exit codes: 0 every shard within --max-age, 4 at least one older (LAGGING), 1 an AWS or I/O failure, \
2 a bad config or checkpoints file.\n\n\
Examples:\n  \
    streamdex lag streamdex.example.toml --endpoint-url http://127.0.0.1:5005\n  \
    streamdex lag streamdex.toml --max-age 60 || echo 'the consumers are behind'\n  \
    streamdex lag streamdex.toml --output json | jq '.shards[] | select(.backlog > 0)'"
)]
pub struct LagArgs {
    /// The pipeline config (TOML).
    #[arg(value_name = "CONFIG")]
    pub config: PathBuf,
    #[command(flatten)]
    pub endpoint: Endpoint,
    /// The checkpoints file `streamdex run` keeps (same default as `run --state`).
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Exit 4 when a shard's iterator age is above this many seconds.
    /// Default: the config's `[alarms]` `iterator_age_warn_seconds`.
    #[arg(long, value_name = "SECONDS")]
    pub max_age: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// Runs `streamdex lag`.
pub fn run(args: &LagArgs) -> ExitCode {
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    ExitCode::from(run_with(args, &mut out, &mut err))
}

/// `streamdex lag`, writing to `out` and `err`; returns the exit code.
pub fn run_with(args: &LagArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let config = match load(&args.config, "lag", err) {
        Ok(config) => config,
        Err(code) => return code,
    };
    let path = state_path(args.state.as_ref(), &config);
    let checkpoints = match Checkpoints::load(&path) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(err, "streamdex lag: {e}");
            return exit::BAD_INPUT;
        }
    };
    let max_age = args.max_age.unwrap_or(config.alarms.iterator_age_warn_seconds);
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(err, "streamdex lag: cannot start the async runtime: {e}");
            return exit::FAILURE;
        }
    };
    let measured = runtime.block_on(async {
        let sdk = stack::sdk_config(args.endpoint.endpoint_url.as_deref(), args.endpoint.region.as_deref()).await;
        let stack = Stack::new(&config);
        let source = source_for(&sdk, &stack, DynamoStreams::new(&sdk));
        lag::measure(&*source, &stack, &checkpoints, SystemClock.now_ms()).await
    });
    let lags = match measured {
        Ok(lags) => lags,
        Err(e) => {
            let _ = writeln!(err, "streamdex lag: {e}");
            return exit::FAILURE;
        }
    };
    let limit_ms = max_age.saturating_mul(1000);
    let lagging = lags.iter().any(|l| l.age_ms > limit_ms);
    match args.output {
        Output::Json => {
            let json = serde_json::json!({"max_age_seconds": max_age, "lagging": lagging, "shards": lags});
            let _ = writeln!(out, "{json}");
        }
        Output::Text => {
            let header = [
                "TABLE",
                "CONSUMER",
                "SHARD",
                "BACKLOG",
                "AGE",
                "TIME LEFT",
                "CHECKPOINT",
            ];
            let mut rows = vec![header.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>()];
            for l in &lags {
                let age = if l.backlog == 0 {
                    "-".to_owned()
                } else {
                    human(l.age_ms)
                };
                let left = l.time_left_ms.map_or_else(|| "-".to_owned(), human);
                let flag = if l.age_ms > limit_ms { " LAGGING" } else { "" };
                let checkpoint = if l.finished {
                    "finished".to_owned()
                } else {
                    l.checkpoint.clone().unwrap_or_else(|| "none (TRIM_HORIZON)".to_owned())
                };
                rows.push(vec![
                    table::escaped(&l.table),
                    table::escaped(&l.consumer),
                    table::escaped(&l.shard),
                    l.backlog.to_string(),
                    age,
                    left,
                    format!("{checkpoint}{flag}"),
                ]);
            }
            let _ = out.write_all(table::for_terminal(&rows, err).as_bytes());
            let _ = writeln!(
                err,
                "checkpoints: {}{}",
                path.display(),
                if path.exists() {
                    ""
                } else {
                    " (none yet: counted from TRIM_HORIZON)"
                }
            );
        }
    }
    if lagging {
        let _ = writeln!(err, "streamdex lag: iterator age above {max_age} s (--max-age)");
        exit::LAGGING
    } else {
        exit::OK
    }
}
