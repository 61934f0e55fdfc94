//! `streamdex quarantine list|show|redrive|failures CONFIG`: the quarantine
//! of a deployment (see [`crate::quarantine`]); the failed batches are
//! [`failures`]'s.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use aws_kit::clock::SystemClock;
use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;

pub mod failures;

use super::stack::{load, Endpoint};
use super::{exit, table};
use crate::quarantine::{Held, Inbox, Redrive, Redriver};
use crate::stack;

#[derive(Debug, Args)]
pub struct QuarantineArgs {
    #[command(subcommand)]
    pub command: QuarantineCommand,
}

#[derive(Debug, Subcommand)]
pub enum QuarantineCommand {
    /// List the quarantined records: id, consumer, table, sequence number, size, reason.
    #[command(
        after_help = "Exit codes: 0 listed (also when empty), 1 an AWS failure (a missing queue: run \
`streamdex up` first), 2 a bad config.\n\n\
Examples:\n  \
    streamdex quarantine list streamdex.toml --endpoint-url http://127.0.0.1:5005\n  \
    streamdex quarantine list streamdex.toml --output json | jq .reason"
    )]
    List(ListArgs),
    /// Print one quarantined entry with its whole record (fetched from the
    /// claim-check bucket when it was too large for a message), as JSON.
    #[command(
        after_help = "ID is a message id (or its first 6+ characters, as `list` shows) or the \
record's sequence number.\n\n\
Exit codes: 0 printed, 1 an AWS failure or no such entry, 2 a bad config.\n\n\
Example:\n  \
    streamdex quarantine show streamdex.toml 4f1c2a9e --endpoint-url http://127.0.0.1:5005"
    )]
    Show(ShowArgs),
    /// Send quarantined records back through the consumer that quarantined
    /// them (after a fix); each one applied is removed from the quarantine,
    /// each one refused again stays, with its new reason.
    #[command(
        after_help = "Records go back one at a time, in the order given (with --all: the queue's). \
A redriven record is applied as the stream would have applied it then, guarded: a write older \
than what the index row or the node's edge set already holds is skipped (see the README, \
\"How it decides\").\n\n\
Exit codes: 0 every selected record applied, 1 some stayed (refused again or failed) or an AWS \
failure, 2 a bad config or no record selected.\n\n\
Examples:\n  \
    streamdex quarantine redrive streamdex.toml 4f1c2a9e --endpoint-url http://127.0.0.1:5005\n  \
    streamdex quarantine redrive streamdex.toml --all"
    )]
    Redrive(RedriveArgs),
    /// List the batches the event source mappings gave up on (retries or
    /// record age ran out), which Lambda keeps whole in the quarantine
    /// bucket; --save writes them as files `streamdex replay` replays.
    #[command(
        after_help = "Exit codes: 0 listed (also when there are none), 1 an AWS or file failure, 2 a bad config.\n\n\
Examples:\n  \
    streamdex quarantine failures streamdex.toml --endpoint-url http://127.0.0.1:5005\n  \
    streamdex quarantine failures streamdex.toml --bucket BUCKET --save failed/   # BUCKET: the stack's QuarantineBucketName\n  \
    streamdex replay failed/BATCH.json --config streamdex.toml --endpoint-url ..."
    )]
    Failures(failures::FailuresArgs),
}

#[derive(Debug, Args)]
pub struct Common {
    /// The pipeline config (TOML).
    #[arg(value_name = "CONFIG")]
    pub config: PathBuf,
    #[command(flatten)]
    pub endpoint: Endpoint,
    /// Read at most this many entries.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub limit: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Aligned columns.
    Table,
    /// One JSON object per entry and line (the record left out).
    Json,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub common: Common,
    #[arg(long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub common: Common,
    /// The entry: a message id, its first 6+ characters, or the record's sequence number.
    #[arg(value_name = "ID")]
    pub id: String,
}

#[derive(Debug, Args)]
pub struct RedriveArgs {
    #[command(flatten)]
    pub common: Common,
    /// The entries to redrive (message ids, prefixes, or sequence numbers).
    #[arg(value_name = "ID", required_unless_present = "all", conflicts_with = "all")]
    pub ids: Vec<String>,
    /// Redrive every entry.
    #[arg(long)]
    pub all: bool,
}

/// Runs `streamdex quarantine`.
pub fn run(args: &QuarantineArgs) -> ExitCode {
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    ExitCode::from(run_with(args, &mut out, &mut err))
}

/// `streamdex quarantine`, writing to `out` and `err`; returns the exit code.
pub fn run_with(args: &QuarantineArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let (common, verb) = match &args.command {
        QuarantineCommand::Failures(a) => return failures::run_with(a, out, err),
        QuarantineCommand::List(a) => (&a.common, "quarantine list"),
        QuarantineCommand::Show(a) => (&a.common, "quarantine show"),
        QuarantineCommand::Redrive(a) => (&a.common, "quarantine redrive"),
    };
    let config = match load(&common.config, verb, err) {
        Ok(config) => Arc::new(config),
        Err(code) => return code,
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = writeln!(err, "streamdex {verb}: cannot start the async runtime: {e}");
            return exit::FAILURE;
        }
    };
    runtime.block_on(async {
        let sdk = stack::sdk_config(
            common.endpoint.endpoint_url.as_deref(),
            common.endpoint.region.as_deref(),
        )
        .await;
        let inbox = match Inbox::open(&sdk, &config).await {
            Ok(inbox) => inbox,
            Err(e) => {
                let _ = writeln!(err, "streamdex {verb}: {e}");
                return exit::FAILURE;
            }
        };
        let held = match inbox.take(common.limit as usize).await {
            Ok(held) => held,
            Err(e) => {
                let _ = writeln!(err, "streamdex {verb}: {e}");
                return exit::FAILURE;
            }
        };
        let (code, kept) = match &args.command {
            QuarantineCommand::List(a) => (list(&inbox, &held, a.output, out, err), held.iter().collect()),
            QuarantineCommand::Show(a) => (show(&inbox, &held, &a.id, out, err).await, held.iter().collect()),
            QuarantineCommand::Redrive(a) => redrive_all(&sdk, &config, &inbox, &held, a, out, err).await,
            QuarantineCommand::Failures(_) => return exit::OK,
        };
        if let Err(e) = inbox.release(&kept).await {
            let _ = writeln!(
                err,
                "streamdex {verb}: {e} (the entries reappear by themselves within {} s)",
                crate::quarantine::HIDE_SECONDS
            );
            return exit::FAILURE;
        }
        code
    })
}

fn list(inbox: &Inbox, held: &[Held], output: Output, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let text = match output {
        Output::Json => held.iter().map(|h| format!("{}\n", json_entry(h))).collect(),
        Output::Table => {
            let rows: Vec<Vec<String>> = held.iter().map(table_row).collect();
            table::for_terminal(&rows, err)
        }
    };
    if out.write_all(text.as_bytes()).is_err() {
        return exit::FAILURE;
    }
    let _ = writeln!(err, "{} entries in {}", held.len(), inbox.name());
    exit::OK
}

/// One entry as a JSON line.
fn json_entry(h: &Held) -> serde_json::Value {
    match &h.stored {
        Ok(s) => json!({
            "id": h.message_id,
            "consumer": s.entry.consumer,
            "table": s.entry.table,
            "sequence_number": s.entry.sequence_number,
            "bytes": s.raw_size(),
            "claim": s.raw_claim.as_ref().map(|c| format!("s3://{}/{}", c.bucket, c.key)),
            "truncated": s.raw_truncated,
            "cause": s.entry.cause,
            "reason": s.entry.reason,
        }),
        Err(e) => json!({ "id": h.message_id, "unreadable": e.to_string() }),
    }
}

/// One entry as a table's cells: id, consumer, table, sequence number,
/// size (with `(s3)` for a claim check), reason.
fn table_row(h: &Held) -> Vec<String> {
    let id = table::escaped(short(&h.message_id));
    match &h.stored {
        Ok(s) => vec![
            id,
            table::escaped(&s.entry.consumer),
            table::escaped(s.entry.table.as_deref().unwrap_or("-")),
            table::escaped(s.entry.sequence_number.as_deref().unwrap_or("-")),
            format!("{}{}", s.raw_size(), if s.raw_claim.is_some() { " (s3)" } else { "" }),
            table::escaped(&s.entry.reason),
        ],
        Err(e) => vec![id, table::escaped(&format!("unreadable: {e}"))],
    }
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

async fn show(inbox: &Inbox, held: &[Held], id: &str, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let Some(h) = one(held, id, inbox, "quarantine show", err) else {
        return exit::FAILURE;
    };
    let stored = match &h.stored {
        Ok(stored) => stored,
        Err(e) => {
            let _ = writeln!(err, "streamdex quarantine show: message {}: {e}", h.message_id);
            return exit::FAILURE;
        }
    };
    let record = match inbox.record(stored).await {
        Ok(record) => record,
        Err(e) => {
            let _ = writeln!(err, "streamdex quarantine show: {e}");
            return exit::FAILURE;
        }
    };
    // The record exactly as delivered (RawValue is written verbatim), or as a string if it is not JSON.
    let record = serde_json::value::RawValue::from_string(record.clone())
        .or_else(|_| serde_json::value::to_raw_value(&record))
        .ok();
    let shown = Shown {
        id: &h.message_id,
        consumer: &stored.entry.consumer,
        table: stored.entry.table.as_deref(),
        sequence_number: stored.entry.sequence_number.as_deref(),
        cause: stored.entry.cause.as_deref(),
        reason: &stored.entry.reason,
        claim: stored.raw_claim.as_ref(),
        truncated: stored.raw_truncated,
        record,
    };
    let Ok(shown) = serde_json::to_string_pretty(&shown) else {
        return exit::FAILURE;
    };
    match writeln!(out, "{shown}") {
        Ok(()) => exit::OK,
        Err(_) => exit::FAILURE,
    }
}

/// What `show` prints.
#[derive(serde::Serialize)]
struct Shown<'a> {
    id: &'a str,
    consumer: &'a str,
    table: Option<&'a str>,
    sequence_number: Option<&'a str>,
    /// The kind of its first cause, when the entry says.
    #[serde(skip_serializing_if = "Option::is_none")]
    cause: Option<&'a str>,
    reason: &'a str,
    claim: Option<&'a aws_kit::quarantine::claim::Claim>,
    truncated: bool,
    record: Option<Box<serde_json::value::RawValue>>,
}

fn one<'h>(held: &'h [Held], id: &str, inbox: &Inbox, verb: &str, err: &mut dyn Write) -> Option<&'h Held> {
    let matching: Vec<&Held> = held.iter().filter(|h| h.is(id)).collect();
    match matching.as_slice() {
        [h] => Some(h),
        [] => {
            let _ = writeln!(
                err,
                "streamdex {verb}: no entry `{id}` in {} ({} entries)",
                inbox.name(),
                held.len()
            );
            None
        }
        _ => {
            let _ = writeln!(
                err,
                "streamdex {verb}: `{id}` names {} entries: give more of the id",
                matching.len()
            );
            None
        }
    }
}

async fn redrive_all<'h>(
    sdk: &aws_config::SdkConfig,
    config: &Arc<model::Config>,
    inbox: &Inbox,
    held: &'h [Held],
    args: &RedriveArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> (u8, Vec<&'h Held>) {
    let mut selected = Vec::new();
    if args.all {
        selected.extend(held.iter());
    } else {
        for id in &args.ids {
            match one(held, id, inbox, "quarantine redrive", err) {
                Some(h) => selected.push(h),
                None => return (exit::BAD_INPUT, held.iter().collect()),
            }
        }
    }
    let redriver = Redriver::new(sdk, config, Arc::new(SystemClock));
    let mut kept: Vec<&Held> = held
        .iter()
        .filter(|h| !selected.iter().any(|s| s.message_id == h.message_id))
        .collect();
    let (mut applied, mut stayed) = (0, 0);
    for h in selected {
        let outcome = redriver.redrive(inbox, h).await;
        let line = match &outcome {
            Redrive::Applied => {
                applied += 1;
                format!("applied      {}", short(&h.message_id))
            }
            Redrive::StillPoison(reason) => format!("refused      {}: {reason}", short(&h.message_id)),
            Redrive::Failed(reason) => format!("failed       {}: {reason}", short(&h.message_id)),
        };
        match outcome {
            Redrive::Applied => {}
            // Put back with its new reason as a new message; the old one is gone.
            Redrive::StillPoison(_) => stayed += 1,
            Redrive::Failed(_) => {
                stayed += 1;
                kept.push(h);
            }
        }
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(err, "{applied} applied and removed, {stayed} still in {}", inbox.name());
    (if stayed == 0 { exit::OK } else { exit::FAILURE }, kept)
}
