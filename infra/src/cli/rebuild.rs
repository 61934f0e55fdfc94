//! `streamdex rebuild`: rebuild index tables and edge sets from the source
//! tables. Per source table: verify, correct (writes what is missing,
//! corrects what is wrong, deletes what should not exist), verify again,
//! until clean. Writes are paced by `--budget`; finished tables are recorded
//! in a checkpoint file, so a rebuild that is interrupted (Ctrl-C, a lost
//! session, an AWS failure) resumes with the tables not done when it is run
//! again with the same flags.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use model::config::Config;
use model::drift::{DriftKind, Scope};
use serde_json::json;
use stream_indexer::rebuild::{self, Checkpoint, CheckpointWriteError, Progress, RebuildOutcome};
use stream_indexer::store::scan::{Marker, Scan};
use stream_indexer::store::Store;

use super::exit;
use super::progress::Bar;
use super::verify::{repair_json, report_json, setup, CommandError, Output, Selection};

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Exit codes: 0 rebuilt and verified clean, 1 an I/O or AWS failure (run the same \
    command again: it resumes from the checkpoint), 2 bad input (a bad config, an unknown index or table, \
    a checkpoint of another config or selection), 3 drift still found after --rounds repairs (the data keeps \
    changing under the rebuild: run it again, or verify once the stream consumers have caught up).\n\n\
Examples:\n  \
    streamdex rebuild streamdex.toml\n  \
    streamdex rebuild streamdex.toml --index issue-attrib --budget 500\n  \
    streamdex rebuild streamdex.toml --edge-set records --checkpoint /var/tmp/records.checkpoint\n  \
    streamdex rebuild streamdex.toml --fresh --output json"
)]
pub struct RebuildArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// Items written per second at most (rows put or deleted, node updates),
    /// so that production traffic keeps its capacity. Default: no limit.
    #[arg(long, value_name = "ITEMS_PER_SECOND", value_parser = clap::value_parser!(u32).range(1..))]
    pub budget: Option<u32>,
    /// The checkpoint file: source tables already rebuilt. Read at the start
    /// (those tables are skipped), written after each table, removed when
    /// everything is done.
    #[arg(long, value_name = "FILE", default_value = "streamdex-rebuild.checkpoint.json")]
    pub checkpoint: PathBuf,
    /// Ignore an existing checkpoint file and start over.
    #[arg(long)]
    pub fresh: bool,
    /// Repairs per table before giving up on drift that keeps coming back
    /// (each is followed by a verification).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
    /// Summary format.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// Runs `streamdex rebuild` on stdout and stderr.
pub fn run(args: &RebuildArgs) -> ExitCode {
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    let code = match setup(&args.selection) {
        Ok((config, scope, runtime)) => runtime.block_on(async {
            let store = args.selection.store(config.clone()).await;
            let bar = Bar::stderr(!args.selection.no_progress);
            execute(&store, &config, &scope, args, &bar, &mut out, &mut err).await
        }),
        Err(e) => {
            let _ = writeln!(err, "streamdex rebuild: {e}");
            e.exit_code()
        }
    };
    ExitCode::from(code)
}

/// Reads the checkpoint (or starts a fresh one).
pub fn load_checkpoint(path: &Path, fresh: bool, config: &Config, scope: &Scope) -> Result<Checkpoint, CommandError> {
    if fresh || !path.exists() {
        return Ok(Checkpoint::new(config, scope));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| CommandError::Failure(format!("cannot read the checkpoint {}: {e}", path.display())))?;
    let checkpoint: Checkpoint = serde_json::from_str(&text)
        .map_err(|e| CommandError::BadInput(format!("{}: not a rebuild checkpoint: {e}", path.display())))?;
    if !checkpoint.fits(config, scope) {
        return Err(CommandError::BadInput(format!(
            "{}: the checkpoint is of another config or another --index/--edge-set selection; \
             run with --fresh to start over, or with --checkpoint naming another file",
            path.display()
        )));
    }
    Ok(checkpoint)
}

/// Writes the checkpoint atomically (a temporary file renamed over it).
pub fn save_checkpoint(path: &Path, checkpoint: &Checkpoint) -> Result<(), CheckpointWriteError> {
    let text = serde_json::to_string_pretty(checkpoint).map_err(CheckpointWriteError::Serialize)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(|source| CheckpointWriteError::Write {
        path: tmp.clone(),
        source,
    })?;
    std::fs::rename(&tmp, path).map_err(|source| CheckpointWriteError::Write {
        path: path.to_owned(),
        source,
    })
}

/// Runs `streamdex rebuild` against `store`; returns the exit code.
pub async fn execute<S: Store + Scan + Marker>(
    store: &S,
    config: &Config,
    scope: &Scope,
    args: &RebuildArgs,
    progress: &dyn Progress,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let mut checkpoint = match load_checkpoint(&args.checkpoint, args.fresh, config, scope) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(err, "streamdex rebuild: {e}");
            return e.exit_code();
        }
    };
    let options = rebuild::Options {
        budget: args.budget,
        rounds: args.rounds,
        ..args.selection.options()
    };
    let path = args.checkpoint.clone();
    let mut save = move |c: &Checkpoint| save_checkpoint(&path, c);
    let started = std::time::Instant::now();
    let outcome = match rebuild::rebuild(store, config, scope, &options, &mut checkpoint, &mut save, progress).await {
        Ok(outcome) => outcome,
        Err(e) => {
            let _ = writeln!(
                err,
                "streamdex rebuild: {e}\nstreamdex rebuild: the tables done so far are in {}; run the same \
                 command again to resume",
                args.checkpoint.display()
            );
            return exit::FAILURE;
        }
    };
    let elapsed = started.elapsed();
    let clean = outcome.is_clean();
    if clean {
        // Everything done: the next rebuild starts over.
        let _ = std::fs::remove_file(&args.checkpoint);
    }
    let written = render(config, &outcome, elapsed, args.output, out);
    if let Err(e) = written {
        let _ = writeln!(err, "streamdex rebuild: cannot write the summary: {e}");
        return exit::FAILURE;
    }
    if clean {
        exit::OK
    } else {
        exit::DRIFT
    }
}

/// Items written per second over `elapsed` (integer arithmetic).
pub fn per_second(items: u64, elapsed: std::time::Duration) -> u64 {
    let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX).max(1);
    items.saturating_mul(1_000_000) / micros
}

fn render(
    config: &Config,
    outcome: &RebuildOutcome,
    elapsed: std::time::Duration,
    output: Output,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let total = outcome.repairs();
    match output {
        Output::Json => {
            let tables: Vec<serde_json::Value> = outcome
                .tables
                .iter()
                .map(|t| {
                    json!({
                        "table": t.table,
                        "resumed": t.resumed,
                        "passes": t.passes,
                        "before": t.before.as_ref().map(|r| report_json(config, r, None, 0)),
                        "repairs": repair_json(&t.repairs),
                        "after": t.after.as_ref().map(|r| report_json(config, r, None, 5)),
                    })
                })
                .collect();
            let value = json!({
                "clean": outcome.is_clean(),
                "tables": tables,
                "repairs": repair_json(&total),
                "elapsed_ms": u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
                "items_written_per_second": per_second(total.items_written, elapsed),
            });
            serde_json::to_writer_pretty(&mut *out, &value)?;
            writeln!(out)
        }
        Output::Text => {
            for t in &outcome.tables {
                if t.resumed {
                    writeln!(out, "{}: done before (checkpoint), skipped", t.table)?;
                    continue;
                }
                let before = t.before.as_ref().map_or(0, |r| r.findings.len());
                let after = t.after.as_ref().map_or(0, |r| r.findings.len());
                writeln!(
                    out,
                    "{}: {before} findings, {} corrections written ({} items, {} skipped, {} lost to newer stream \
                     writes), {} verifications, {after} left",
                    t.table,
                    t.repairs.written.total(),
                    t.repairs.items_written,
                    t.repairs.skipped,
                    t.repairs.stale,
                    t.passes
                )?;
                if let Some(r) = &t.before {
                    for (kind, n) in r.counts() {
                        if n > 0 {
                            writeln!(out, "  {:<17} {n:>8}", kind.as_str())?;
                        }
                    }
                }
                if let Some(r) = t.after.as_ref().filter(|r| !r.is_clean()) {
                    for kind in DriftKind::ALL {
                        let n = r.counts().get(&kind).copied().unwrap_or(0);
                        if n > 0 {
                            writeln!(out, "  still {:<11} {n:>8}", kind.as_str())?;
                        }
                    }
                }
            }
            writeln!(
                out,
                "{}: {} items written in {} ms ({} items/s)",
                if outcome.is_clean() { "clean" } else { "DRIFT LEFT" },
                total.items_written,
                elapsed.as_millis(),
                per_second(total.items_written, elapsed)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::config;

    #[test]
    fn rates_are_integers() {
        assert_eq!(per_second(500, std::time::Duration::from_millis(250)), 2000);
        assert_eq!(per_second(0, std::time::Duration::ZERO), 0);
    }

    #[test]
    fn checkpoints_round_trip_and_refuse_another_selection() {
        let config = config::parse(config::EXAMPLE_CONFIG, "x.toml").expect("valid");
        let scope = Scope::all(&config);
        let dir = std::env::temp_dir().join(format!("streamdex-rebuild-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("c.json");
        let mut c = Checkpoint::new(&config, &scope);
        c.done.push("issues".into());
        save_checkpoint(&path, &c).expect("save");
        assert_eq!(load_checkpoint(&path, false, &config, &scope).expect("load"), c);
        assert!(load_checkpoint(&path, true, &config, &scope)
            .expect("fresh")
            .done
            .is_empty());
        let other = scope.of_table(&config, "issues");
        let e = load_checkpoint(&path, false, &config, &other).unwrap_err();
        assert_eq!(e.exit_code(), exit::BAD_INPUT);
        std::fs::write(&path, "not json").expect("write");
        assert_eq!(
            load_checkpoint(&path, false, &config, &scope).unwrap_err().exit_code(),
            exit::BAD_INPUT
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
