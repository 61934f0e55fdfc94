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
use crate::runner::copier::Delivery;
use crate::runner::function::Response;
use crate::runner::host::Hosting;
use crate::runner::local::{self, Wiring};
use crate::runner::{RunEvent, Runner};
use crate::stack;
use aws_kit::clock::SystemClock;

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
    /// The longest wait between reads of an idle shard, in milliseconds
    /// (Lambda polls each shard about 4 times a second: 250). Each shard is
    /// paced on its own: read again at once while it returns records; once
    /// idle, after 10 ms, then half as long again each time, up to this. The
    /// reaper's queues are polled at this interval.
    #[arg(long, value_name = "MS", default_value_t = 250, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub poll_interval_ms: u64,
    /// How often to list the streams' shards again, in seconds (new shards after a split).
    #[arg(long, value_name = "SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub discover_every: u64,
    /// Overrides every mapping's batching window, in milliseconds (0: invoke
    /// with whatever each poll read). Default: the mappings' own, 0 as in
    /// the AWS template (a lone write is handled as soon as a poll reads
    /// it); a larger window trades that latency for fuller batches.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(0..=300_000))]
    pub batching_window_ms: Option<u64>,
    /// Do not poll the reap rules' queues (the reaper then gets nothing).
    #[arg(long)]
    pub no_reaper: bool,
    /// Act as DynamoDB's TTL service, which a local endpoint lacks: every
    /// second, delete the items of tables with a `ttl_attribute` whose TTL
    /// (a Number of epoch seconds, at most five years old) has passed, and
    /// deliver their REMOVE records as TTL deletions (the TTL service's
    /// `userIdentity`), so EXPIRE routes, the router and the reaper see
    /// what they see in AWS. Not against AWS, whose TTL service does this.
    #[arg(long)]
    pub local_ttl: bool,
    /// For tables read from Kinesis (`stream = "kinesis"`): a change is put
    /// into the table's data stream at most this many places from where
    /// it stood in the table's DynamoDB stream, as a Kinesis data stream
    /// may deliver it. `run` copies each such table's changes into its data
    /// stream, as DynamoDB does on AWS and a local endpoint does not.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pub reorder_window: u64,
    /// For tables read from Kinesis: the percent of changes put into the
    /// data stream twice, as a Kinesis data stream may deliver them.
    #[arg(long, value_name = "PERCENT", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub repeat: u32,
    /// The seed of --reorder-window's and --repeat's choices: the same seed
    /// and the same changes give the same delivery. Default: the clock.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Do not print the EMF metric lines on stdout.
    #[arg(long)]
    pub no_emf: bool,
    /// Stop once every shard is read to its end or tip with nothing left to
    /// do and the reaper's queues are empty (for scripts and tests).
    #[arg(long)]
    pub exit_when_idle: bool,
    /// With --exit-when-idle: give up (exit 1, saying what it waited on)
    /// when no checkpoint has moved for this long and it is still not idle,
    /// rather than wait forever on a stuck shard or a failing function.
    #[arg(long, value_name = "SECONDS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400), requires = "exit_when_idle")]
    pub give_up_after: u64,
    /// Run the built functions instead of the consumers in process: each
    /// `DIR/BINARY/bootstrap.zip` (what scripts/build-functions.sh writes)
    /// is started as Lambda starts it, with the environment of the function
    /// deployed on the endpoint (`streamdex deploy`), under a Lambda Runtime
    /// API stand-in, and fed as the deployed event source mappings say.
    /// Each function's output goes to DIR/BINARY/run.log. One run at a time
    /// per DIR: a run holds DIR/run.lock while it runs.
    #[arg(long, value_name = "DIR", requires = "mappings")]
    pub functions: Option<PathBuf>,
    /// With --functions: the event source mappings that feed them, as
    /// `streamdex deploy --defer-mappings FILE` wrote them down.
    #[arg(long, value_name = "FILE", requires = "functions")]
    pub mappings: Option<PathBuf>,
}

/// Runs `streamdex run`.
/// How often `--local-ttl` sweeps (milliseconds).
pub const LOCAL_TTL_EVERY_MS: u64 = 1_000;

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
        let wiring = wiring(args);
        let hosting = match start_hosting(args, &sdk, &config, err).await {
            Ok(hosting) => hosting,
            Err(code) => return code,
        };
        let connected = local::connect(
            &sdk,
            config.clone(),
            Arc::new(SystemClock),
            checkpoints,
            wiring,
            hosting.as_ref(),
        )
        .await;
        let mut runner = match connected {
            Ok(runner) => runner,
            Err(e) => {
                let _ = writeln!(err, "streamdex run: {e}");
                if let Some(hosting) = &hosting {
                    hosting.stop().await;
                }
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
        let code = drive(&mut runner, args, &path, out, err).await;
        if let Some(hosting) = &hosting {
            report_cold_starts(hosting, err);
            hosting.stop().await;
        }
        code
    })
}

/// How the runner is wired, from the command's flags.
fn wiring(args: &RunArgs) -> Wiring {
    Wiring {
        reaper: !args.no_reaper,
        discover_every_ms: args.discover_every.saturating_mul(1000),
        poll_interval_ms: args.poll_interval_ms,
        local_ttl_every_ms: args.local_ttl.then_some(LOCAL_TTL_EVERY_MS),
        window_ms: args.batching_window_ms,
        delivery: Delivery {
            reorder_window: usize::try_from(args.reorder_window).unwrap_or(usize::MAX),
            repeat_percent: args.repeat,
            seed: args.seed.unwrap_or_else(|| aws_kit::clock::Clock::now_ms(&SystemClock)),
        },
    }
}

/// The built functions started as processes (`--functions` with
/// `--mappings`; `None` without). `Err`: the exit code, the reason said
/// on `err`.
async fn start_hosting(
    args: &RunArgs,
    sdk: &aws_config::SdkConfig,
    config: &model::Config,
    err: &mut dyn Write,
) -> Result<Option<Hosting>, u8> {
    match (&args.functions, &args.mappings) {
        (Some(dir), Some(mappings)) => {
            let lambda = aws_sdk_lambda::Client::new(sdk);
            let extra = function_environment(sdk).await;
            let stack = stack::Stack::new(config);
            match Hosting::start(&lambda, &stack, dir, mappings, &extra, Arc::new(SystemClock)).await {
                Ok(hosting) => Ok(Some(hosting)),
                Err(e) => {
                    let _ = writeln!(err, "streamdex run: {e}");
                    Err(exit::FAILURE)
                }
            }
        }
        _ => Ok(None),
    }
}

/// Each hosted function's invocations and cold start, on `err`.
fn report_cold_starts(hosting: &Hosting, err: &mut dyn Write) {
    for (_, hosted) in &hosting.functions {
        let cold = hosted.cold_start().map_or_else(
            || "never invoked".to_owned(),
            |(init, first)| {
                format!(
                    "cold start {:.1} ms (start-up {:.1} ms, first invocation {:.1} ms)",
                    (init + first).as_secs_f64() * 1e3,
                    init.as_secs_f64() * 1e3,
                    first.as_secs_f64() * 1e3
                )
            },
        );
        let _ = writeln!(
            err,
            "streamdex run: {}: {} invocations, {cold}",
            hosted.name,
            hosted.invocations()
        );
    }
}

/// What a hosted function's process gets besides the deployed environment:
/// the endpoint, region and credentials this command uses, from wherever
/// its SDK config found them (on Lambda, the region and the role's
/// credentials). Credentials that cannot be had are left out: the
/// function's AWS calls then say so in its log.
async fn function_environment(sdk: &aws_config::SdkConfig) -> std::collections::BTreeMap<String, String> {
    use aws_credential_types::provider::ProvideCredentials;
    let mut extra = std::collections::BTreeMap::new();
    if let Some(region) = sdk.region() {
        extra.insert("AWS_REGION".to_owned(), region.to_string());
        extra.insert("AWS_DEFAULT_REGION".to_owned(), region.to_string());
    }
    if let Some(endpoint) = sdk.endpoint_url() {
        extra.insert("AWS_ENDPOINT_URL".to_owned(), endpoint.to_owned());
    }
    if let Some(provider) = sdk.credentials_provider() {
        if let Ok(credentials) = provider.provide_credentials().await {
            extra.insert("AWS_ACCESS_KEY_ID".to_owned(), credentials.access_key_id().to_owned());
            extra.insert(
                "AWS_SECRET_ACCESS_KEY".to_owned(),
                credentials.secret_access_key().to_owned(),
            );
            if let Some(token) = credentials.session_token() {
                extra.insert("AWS_SESSION_TOKEN".to_owned(), token.to_owned());
            }
        }
    }
    extra
}

/// The shards not idle (their backlog), for the give-up message.
fn waiting_on(runner: &Runner) -> String {
    let busy: Vec<String> = runner
        .shards()
        .into_iter()
        .filter(|(_, _, _, _, backlog)| *backlog > 0)
        .map(|(table, consumer, shard, _, backlog)| {
            format!("{table} {consumer} shard {shard} ({backlog} records read, not done)")
        })
        .collect();
    if busy.is_empty() {
        "shards not yet at their tip, or the reaper's queues".to_owned()
    } else {
        busy.join(", ")
    }
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
    let give_up_after = Duration::from_secs(args.give_up_after);
    let mut last_progress = tokio::time::Instant::now();
    let mut last_problem: Option<String> = None;
    loop {
        let round = runner.round().await;
        let failed = |e: &&RunEvent| match e {
            RunEvent::Problem { .. } => true,
            RunEvent::Invoked { invocation, .. } => invocation.response != Response::Success,
            _ => false,
        };
        if let Some(problem) = round.events.iter().rev().find(failed) {
            last_problem = Some(problem.to_string());
        }
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
            last_progress = tokio::time::Instant::now();
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
        if args.exit_when_idle && last_progress.elapsed() >= give_up_after {
            let _ = runner.checkpoints().save(path);
            let _ = writeln!(
                err,
                "streamdex run: gave up: no checkpoint moved in {} s and not idle; waiting on {}{}",
                give_up_after.as_secs(),
                waiting_on(runner),
                last_problem
                    .map(|p| format!("; the last problem: {p}"))
                    .unwrap_or_default()
            );
            return exit::FAILURE;
        }
        if !round.busy {
            // Until the next shard's turn; back off while something keeps failing (up to 32 poll
            // intervals), so a dead endpoint is not hammered.
            let wait = if had_problem {
                pause.saturating_mul(1 << problems_in_a_row.min(5))
            } else {
                Duration::from_millis(round.wait_ms)
            };
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

#[cfg(test)]
mod tests {
    use futures::future::BoxFuture;
    use futures::FutureExt;
    use model::filter::Consumer;

    use super::*;
    use crate::runner::age::Thresholds;
    use crate::runner::failure::MemoryOnFailure;
    use crate::runner::function::{Function, Invocation};
    use crate::runner::mapping::Settings;
    use crate::runner::stream::memory::{stream_arn, MemoryStreams};
    use crate::runner::{MappingSpec, RunnerOptions};

    /// A function that fails every batch, as one whose store is unreachable.
    struct Failing;

    impl Function for Failing {
        fn name(&self) -> &str {
            "failing"
        }

        fn invoke<'a>(&'a self, _payload: &'a [u8], _now_ms: u64) -> BoxFuture<'a, Invocation> {
            async {
                Invocation {
                    response: Response::Error("the store is unreachable".to_owned()),
                    emf: None,
                    failures: Vec::new(),
                    quarantined: 0,
                }
            }
            .boxed()
        }
    }

    #[tokio::test]
    async fn exit_when_idle_gives_up_when_nothing_moves_and_says_on_what() {
        let streams = Arc::new(MemoryStreams::new());
        streams.add_shard("t", "s", None);
        let record = serde_json::json!({
            "eventName": "INSERT",
            "eventSourceARN": stream_arn("t"),
            "dynamodb": {"Keys": {"pk": {"S": "a"}}, "NewImage": {"pk": {"S": "a"}}, "SequenceNumber": "1"},
        });
        streams.push("s", "1", None, record.to_string());
        let mut runner = Runner::new(
            streams,
            Arc::new(SystemClock),
            RunnerOptions {
                discover_every_ms: 10_000,
                poll_interval_ms: 10,
                thresholds: Thresholds {
                    warn_ms: 300_000,
                    page_ms: 3_600_000,
                },
            },
            Checkpoints::default(),
        );
        runner.add_mapping(MappingSpec {
            table: "t".to_owned(),
            consumer: Consumer::Indexer,
            settings: Settings {
                batch_size: 10,
                window_ms: 0,
                max_retry_attempts: None,
                max_record_age_ms: None,
                bisect_on_error: false,
            },
            filters: Vec::new(),
            function: Arc::new(Failing),
            on_failure: Arc::new(MemoryOnFailure::new()),
            retention_ms: crate::runner::age::STREAM_RETENTION_MS,
        });
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("state.json");
        let args = RunArgs {
            config: PathBuf::from("unused.toml"),
            endpoint: Endpoint::default(),
            state: None,
            poll_interval_ms: 10,
            discover_every: 10,
            batching_window_ms: None,
            no_reaper: true,
            local_ttl: false,
            reorder_window: 0,
            repeat: 0,
            seed: None,
            no_emf: true,
            exit_when_idle: true,
            give_up_after: 1,
            functions: None,
            mappings: None,
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = tokio::time::timeout(
            Duration::from_secs(60),
            drive(&mut runner, &args, &path, &mut out, &mut err),
        )
        .await
        .expect("drive gave up within a minute");
        let err = String::from_utf8(err).expect("utf-8");
        assert_eq!(code, exit::FAILURE, "{err}");
        let last = err.lines().last().unwrap_or_default();
        assert!(last.contains("gave up"), "{err}");
        assert!(
            last.contains("t indexer shard s (1 records read, not done)"),
            "says on what: {last}"
        );
        assert!(
            last.contains("the store is unreachable"),
            "and the last problem: {last}"
        );
    }
}
