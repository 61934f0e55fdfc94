//! `streamdex run CONFIG`: the local stand-in for Lambda's event source
//! mappings (see [`crate::runner`]), until Ctrl-C or SIGTERM (or, with
//! `--exit-when-idle`, until every shard is caught up).
//!
//! stdout: one CloudWatch EMF line per invocation, as the Lambdas print.
//! stderr: what it does (shards started, failures and retries, records given
//! up on, alarm transitions, reaped nodes) and where the checkpoints are.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::exit;
use super::stack::{load, Endpoint};
use crate::runner::checkpoint::{default_path, Checkpoints};
use crate::runner::clock::SystemClock;
use crate::runner::local::{self, Wiring};
use crate::runner::{RunEvent, Runner};
use crate::stack;

#[derive(Debug, Args)]
#[command(
    after_help = "What it does, per table and consumer (as the template's event source mappings): reads \
the stream's shards (parents before children) from the checkpoints, drops what the mapping's filter drops, \
invokes the indexer or the router in process with the mapping's batch size and batching window, retries from \
the reported failure, bisects failing batches, sends the range of records it gives up on (retries or record \
age exhausted) to the consumer's on-failure queue, and feeds the reaper the events its rules route. Iterator \
age alarms are logged at the config's [alarms] thresholds.\n\n\
Exit codes: 0 stopped (Ctrl-C or SIGTERM, or idle with --exit-when-idle), 1 an AWS or I/O failure (the endpoint is \
unreachable, the stack is missing: run `streamdex up` first), 2 a bad config or checkpoints file.\n\n\
Examples:\n  \
    streamdex run streamdex.example.toml --endpoint-url http://127.0.0.1:5005\n  \
    streamdex run streamdex.toml --state .streamdex/dev.json --no-emf\n  \
    streamdex run streamdex.toml --exit-when-idle        # drain what is there, then stop"
)]
pub struct RunArgs {
    /// The pipeline config (TOML).
    #[arg(value_name = "CONFIG")]
    pub config: PathBuf,
    #[command(flatten)]
    pub endpoint: Endpoint,
    /// The checkpoints file: read at start (a restart resumes where the last
    /// run stopped), written after every round that moved a checkpoint.
    /// Default: $XDG_STATE_HOME/streamdex/checkpoints-NAMESPACE.json, else
    /// ~/.local/state/streamdex/..., else .streamdex/... (NAMESPACE: the bus name).
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// How long to wait between polls of an idle stream, in milliseconds
    /// (Lambda polls each shard about 4 times a second: 250).
    #[arg(long, value_name = "MS", default_value_t = 250, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub poll_interval_ms: u64,
    /// How often to list the streams' shards again, in seconds (new shards after a split).
    #[arg(long, value_name = "SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub discover_every: u64,
    /// Overrides every mapping's batching window, in milliseconds (0: invoke
    /// with whatever each poll read). Default: the mappings' own, 0 as in
    /// the AWS template (a lone write reaches the index after about 50 ms
    /// against moto, at the median); a larger window trades that latency
    /// for fuller batches.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(0..=300_000))]
    pub batching_window_ms: Option<u64>,
    /// Do not poll the reap rules' queues (the reaper then gets nothing).
    #[arg(long)]
    pub no_reaper: bool,
    /// Do not print the EMF metric lines on stdout.
    #[arg(long)]
    pub no_emf: bool,
    /// Stop once every shard is read to its end or tip with nothing left to
    /// do and the reaper's queues are empty (for scripts and tests).
    #[arg(long)]
    pub exit_when_idle: bool,
}

/// Runs `streamdex run`.
pub fn run(args: &RunArgs) -> ExitCode {
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    ExitCode::from(run_with(args, &mut out, &mut err))
}

/// The checkpoints file `args` name, or the default one for `config`.
pub fn state_path(state: Option<&PathBuf>, config: &model::Config) -> PathBuf {
    state
        .cloned()
        .unwrap_or_else(|| default_path(&stack::namespace(config), |name| std::env::var(name).ok()))
}

/// Prints one event: EMF lines on `out` (unless `emf` is false), the rest on `err`.
pub fn print_event(event: &RunEvent, emf: bool, out: &mut dyn Write, err: &mut dyn Write) {
    if let Some(line) = event.emf() {
        if emf {
            let _ = writeln!(out, "{line}");
        }
        // A successful invocation is in the EMF line; only failures are worth a log line.
        if matches!(event, RunEvent::Invoked { invocation, .. } if invocation.response == crate::runner::function::Response::Success && invocation.quarantined == 0)
        {
            return;
        }
    }
    let _ = writeln!(err, "{event}");
}

/// `streamdex run`, writing to `out` and `err`; returns the exit code.
pub fn run_with(args: &RunArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let config = match load(&args.config, "run", err) {
        Ok(config) => Arc::new(config),
        Err(code) => return code,
    };
    let path = state_path(args.state.as_ref(), &config);
    let checkpoints = match Checkpoints::load(&path) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(err, "streamdex run: {e}");
            return match e {
                crate::runner::checkpoint::CheckpointError::Read { .. } => exit::FAILURE,
                _ => exit::BAD_INPUT,
            };
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(err, "streamdex run: cannot start the async runtime: {e}");
            return exit::FAILURE;
        }
    };
    runtime.block_on(async {
        let sdk = stack::sdk_config(args.endpoint.endpoint_url.as_deref(), args.endpoint.region.as_deref()).await;
        let wiring = Wiring {
            reaper: !args.no_reaper,
            discover_every_ms: args.discover_every.saturating_mul(1000),
            window_ms: args.batching_window_ms,
        };
        let mut runner = match local::connect(&sdk, config.clone(), Arc::new(SystemClock), checkpoints, wiring).await {
            Ok(runner) => runner,
            Err(e) => {
                let _ = writeln!(err, "streamdex run: {e}");
                return exit::FAILURE;
            }
        };
        let _ = writeln!(
            err,
            "streamdex run: {} mappings ({}); checkpoints in {}; Ctrl-C or SIGTERM stops",
            runner.mappings().len(),
            runner
                .mappings()
                .iter()
                .map(|m| format!("{} {}", m.table, m.consumer))
                .collect::<Vec<_>>()
                .join(", "),
            path.display()
        );
        drive(&mut runner, args, &path, out, err).await
    })
}

async fn drive(
    runner: &mut Runner,
    args: &RunArgs,
    path: &std::path::Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let mut stop = super::signal::stop_watch();
    let pause = Duration::from_millis(args.poll_interval_ms);
    let mut problems_in_a_row = 0u32;
    loop {
        let round = runner.round().await;
        let had_problem = round.events.iter().any(|e| matches!(e, RunEvent::Problem { .. }));
        problems_in_a_row = if had_problem {
            problems_in_a_row.saturating_add(1)
        } else {
            0
        };
        for event in &round.events {
            print_event(event, !args.no_emf, out, err);
        }
        let _ = out.flush();
        if runner.take_changed() {
            if let Err(e) = runner.checkpoints().save(path) {
                let _ = writeln!(err, "streamdex run: {e}");
                return exit::FAILURE;
            }
        }
        if let Some(missing) = round.missing.first() {
            let _ = runner.checkpoints().save(path);
            let _ = writeln!(err, "streamdex run: stopped: {missing}");
            return exit::FAILURE;
        }
        if *stop.borrow() {
            break;
        }
        if args.exit_when_idle && !round.busy && runner.idle() && !had_problem {
            let _ = writeln!(err, "streamdex run: every shard is caught up");
            break;
        }
        if !round.busy {
            // Back off while something keeps failing (up to 32 polls), so a dead endpoint is not hammered.
            let wait = pause.saturating_mul(1 << problems_in_a_row.min(5));
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                _ = stop.changed() => break,
            }
        }
    }
    if let Err(e) = runner.checkpoints().save(path) {
        let _ = writeln!(err, "streamdex run: {e}");
        return exit::FAILURE;
    }
    let _ = writeln!(err, "streamdex run: stopped; checkpoints saved in {}", path.display());
    exit::OK
}
