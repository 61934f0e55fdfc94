//! `streamdex record CONFIG --out FILE`: tail the configured tables' streams
//! (or `--table` ones) into JSON Lines, one record per line in the Lambda
//! shape (with `eventSourceARN`), which `streamdex replay` reads back. A
//! table read from Kinesis is tailed in its data stream, each change
//! written as DynamoDB writes it there; one file holds one kind.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::exit;
use super::stack::{load, Endpoint};
use crate::runner::stream::dynamo::DynamoStreams;
use crate::runner::stream::kinesis::{kinesis_data, source_for};
use crate::runner::stream::Position;
use crate::runner::tail::Tail;
use crate::stack;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum From {
    /// Everything still in the stream (the last 24 hours).
    TrimHorizon,
    /// Only what is written from now on.
    Latest,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Stops on Ctrl-C or SIGTERM, after --max-records records, or after --idle-exit seconds without \
a new record; what was read is always written whole.\n\n\
Exit codes: 0 stopped, 1 an AWS or I/O failure (a table without a stream: run `streamdex up`), 2 a bad \
config or an unknown --table.\n\n\
Examples:\n  \
    streamdex record streamdex.example.toml --out history.jsonl --idle-exit 2\n  \
    streamdex record streamdex.toml --table records --from latest --out live.jsonl\n  \
    streamdex replay --config streamdex.toml history.jsonl"
)]
pub struct RecordArgs {
    /// The pipeline config (TOML).
    #[arg(value_name = "CONFIG")]
    pub config: PathBuf,
    #[command(flatten)]
    pub endpoint: Endpoint,
    /// The JSON Lines file to write (replaced if it exists).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Only this table's stream (a table of the config). Repeatable. Default: every table.
    #[arg(long = "table", value_name = "NAME")]
    pub tables: Vec<String>,
    /// Where to start.
    #[arg(long, value_enum, default_value_t = From::TrimHorizon)]
    pub from: From,
    /// Stop after this many records.
    #[arg(long, value_name = "N")]
    pub max_records: Option<u64>,
    /// Stop after this many seconds without a new record (exit 0; exit 1,
    /// saying why, if reading failed in that time).
    #[arg(long, value_name = "SECONDS")]
    pub idle_exit: Option<u64>,
    /// How long to wait between polls of an idle stream, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 250, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub poll_interval_ms: u64,
    /// No progress bar (drawn on stderr only when it is a terminal).
    #[arg(long)]
    pub no_progress: bool,
}

/// Runs `streamdex record`.
pub fn run(args: &RecordArgs) -> ExitCode {
    let mut err = std::io::stderr();
    ExitCode::from(run_with(args, &mut err))
}

/// `streamdex record`, reporting on `err`; returns the exit code.
pub fn run_with(args: &RecordArgs, err: &mut dyn Write) -> u8 {
    let config = match load(&args.config, "record", err) {
        Ok(config) => config,
        Err(code) => return code,
    };
    let stack = stack::Stack::new(&config);
    let tables = match tables_to_record(args, &config, &stack, err) {
        Ok(tables) => tables,
        Err(code) => return code,
    };
    let file = match std::fs::File::create(&args.out) {
        Ok(f) => f,
        Err(e) => {
            let _ = writeln!(err, "streamdex record: cannot create {}: {e}", args.out.display());
            return exit::FAILURE;
        }
    };
    let writer = std::io::BufWriter::new(file);
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(err, "streamdex record: cannot start the async runtime: {e}");
            return exit::FAILURE;
        }
    };
    let bar = spinner(args);
    runtime.block_on(record(args, &stack, tables, writer, &bar, err))
}

/// The tables to record: `--table`s, each of the config, or every table;
/// all read from Kinesis or all from DynamoDB streams (one shape a file).
/// `Err`: the exit code, the reason said on `err`.
fn tables_to_record(
    args: &RecordArgs,
    config: &model::Config,
    stack: &stack::Stack,
    err: &mut dyn Write,
) -> Result<Vec<String>, u8> {
    let tables: Vec<String> = if args.tables.is_empty() {
        config.tables.iter().map(|t| t.name.clone()).collect()
    } else {
        if let Some(unknown) = args.tables.iter().find(|t| config.table(t).is_none()) {
            let known: Vec<&str> = config.tables.iter().map(|t| t.name.as_str()).collect();
            let _ = writeln!(
                err,
                "streamdex record: --table {unknown}: not a table of the config (tables: {})",
                known.join(", ")
            );
            return Err(exit::BAD_INPUT);
        }
        args.tables.clone()
    };
    let (kinesis, dynamodb): (Vec<&String>, Vec<&String>) = tables.iter().partition(|t| stack.reads_kinesis(t));
    if !kinesis.is_empty() && !dynamodb.is_empty() {
        let names: Vec<&str> = kinesis.iter().map(|t| t.as_str()).collect();
        let _ = writeln!(
            err,
            "streamdex record: tables read from Kinesis ({}) and from DynamoDB streams are recorded in two \
             shapes: record each kind into a file of its own (--table)",
            names.join(", ")
        );
        return Err(exit::BAD_INPUT);
    }
    Ok(tables)
}

/// A spinner of the records written, on stderr when it is a terminal.
fn spinner(args: &RecordArgs) -> ProgressBar {
    let bar = if !args.no_progress && std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {pos} records ({per_sec}) {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(format!("→ {}", args.out.display()));
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Tails `tables` into `writer` until `--max-records`, `--idle-exit` or a
/// signal; returns the exit code.
async fn record(
    args: &RecordArgs,
    stack: &stack::Stack,
    tables: Vec<String>,
    mut writer: std::io::BufWriter<std::fs::File>,
    bar: &ProgressBar,
    err: &mut dyn Write,
) -> u8 {
    let sdk = stack::sdk_config(args.endpoint.endpoint_url.as_deref(), args.endpoint.region.as_deref()).await;
    let source = source_for(&sdk, stack, DynamoStreams::new(&sdk));
    let start = match args.from {
        From::TrimHorizon => Position::TrimHorizon,
        From::Latest => Position::Latest,
    };
    let mut tail = Tail::new(&*source, tables, start);
    if let Err(e) = tail.list().await {
        bar.finish_and_clear();
        let _ = writeln!(err, "streamdex record: {e}");
        return exit::FAILURE;
    }
    let mut stop = super::signal::stop_watch();
    let mut written = 0u64;
    let mut last_record = Instant::now();
    // A problem since the last record: an idle exit after one is a
    // failure (the quiet may be the endpoint's, not the table's).
    let mut problem_since: Option<String> = None;
    loop {
        let polled = tail.poll().await;
        for problem in &polled.problems {
            bar.suspend(|| {
                let _ = writeln!(err, "streamdex record: {problem}; trying again");
            });
            problem_since = Some(problem.to_string());
        }
        let got = !polled.records.is_empty();
        for (_, record) in polled.records {
            if args.max_records.is_some_and(|max| written >= max) {
                break;
            }
            // A Kinesis record: the change it carries, as DynamoDB wrote it.
            let line = kinesis_data(&record.json).unwrap_or(record.json);
            if let Err(e) = writeln!(writer, "{line}") {
                bar.finish_and_clear();
                let _ = writeln!(err, "streamdex record: writing {}: {e}", args.out.display());
                return exit::FAILURE;
            }
            written += 1;
            bar.inc(1);
        }
        if got {
            last_record = Instant::now();
            problem_since = None;
            if let Err(e) = writer.flush() {
                bar.finish_and_clear();
                let _ = writeln!(err, "streamdex record: writing {}: {e}", args.out.display());
                return exit::FAILURE;
            }
        }
        if args.max_records.is_some_and(|max| written >= max) || *stop.borrow() {
            break;
        }
        if let Some(secs) = args
            .idle_exit
            .filter(|secs| last_record.elapsed() >= Duration::from_secs(*secs))
        {
            if let Some(problem) = problem_since.take() {
                bar.finish_and_clear();
                let _ = writer.flush();
                let _ = writeln!(
                    err,
                    "streamdex record: gave up: no record in {secs} s while reading failed (the last problem: {problem}); wrote {written} records to {}",
                    args.out.display()
                );
                return exit::FAILURE;
            }
            break;
        }
        if !got {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(args.poll_interval_ms)) => {}
                _ = stop.changed() => break,
            }
        }
    }
    bar.finish_and_clear();
    if let Err(e) = writer.flush() {
        let _ = writeln!(err, "streamdex record: writing {}: {e}", args.out.display());
        return exit::FAILURE;
    }
    let _ = writeln!(
        err,
        "streamdex record: wrote {written} records to {}",
        args.out.display()
    );
    exit::OK
}
