//! `streamdex seed CONFIG`: write sample goals, users, memberships, issues
//! and layers (shaped by the config, see [`crate::seed`]) to an endpoint,
//! for the developer loop: `up`, `run`, `seed`, then look at the derived data.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use aws_kit::clock::{Clock, SystemClock};

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget};

use super::exit;
use super::stack::{load, Endpoint};
use crate::{seed, stack};

#[derive(Debug, Args)]
#[command(
    after_help = "Exit codes: 0 written, 1 an AWS failure (a missing table: run `streamdex up` first), \
2 a bad config.\n\n\
Examples:\n  \
    streamdex seed streamdex.example.toml --endpoint-url http://127.0.0.1:5005\n  \
    streamdex seed streamdex.toml --size 20 --dry-run        # print the items as JSON Lines, write nothing"
)]
pub struct SeedArgs {
    /// The pipeline config (TOML).
    #[arg(value_name = "CONFIG")]
    pub config: PathBuf,
    #[command(flatten)]
    pub endpoint: Endpoint,
    /// How many of each kind (goals, teams, issues, layers; one user more).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub size: u32,
    /// Print the items (JSON Lines: table and item) instead of writing them.
    #[arg(long)]
    pub dry_run: bool,
}

/// Runs `streamdex seed`.
pub fn run(args: &SeedArgs) -> ExitCode {
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    ExitCode::from(run_with(args, &mut out, &mut err))
}

/// `streamdex seed`, writing to `out` and `err`; returns the exit code.
pub fn run_with(args: &SeedArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let config = match load(&args.config, "seed", err) {
        Ok(config) => config,
        Err(code) => return code,
    };
    let now = SystemClock.now_ms() / 1000;
    let items = seed::sample(&config, usize::try_from(args.size).unwrap_or(3), now);
    if args.dry_run {
        for item in &items {
            let image: serde_json::Map<String, serde_json::Value> = item
                .item
                .iter()
                .map(|(k, v)| (k.to_owned(), serde_json::to_value(v).unwrap_or(serde_json::Value::Null)))
                .collect();
            let _ = writeln!(out, "{}", serde_json::json!({"table": item.table, "item": image}));
        }
        return exit::OK;
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(err, "streamdex seed: cannot start the async runtime: {e}");
            return exit::FAILURE;
        }
    };
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(Some(items.len() as u64), ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    let result = runtime.block_on(async {
        let sdk = stack::sdk_config(args.endpoint.endpoint_url.as_deref(), args.endpoint.region.as_deref()).await;
        seed::write(&sdk, &items, &|done| bar.set_position(done as u64)).await
    });
    bar.finish_and_clear();
    match result {
        Ok(()) => {
            let mut counts: std::collections::BTreeMap<(&str, &str), usize> = std::collections::BTreeMap::new();
            for item in &items {
                *counts.entry((item.table.as_str(), item.kind)).or_default() += 1;
            }
            let summary: Vec<String> = counts.iter().map(|((t, k), n)| format!("{t}: {n} {k}s")).collect();
            let _ = writeln!(out, "wrote {} items ({})", items.len(), summary.join(", "));
            exit::OK
        }
        Err(e) => {
            if e.is_missing_table() {
                let _ = writeln!(
                    err,
                    "streamdex seed: {e}; run `streamdex up {}` first",
                    args.config.display()
                );
            } else {
                let _ = writeln!(err, "streamdex seed: {e}");
            }
            exit::FAILURE
        }
    }
}
