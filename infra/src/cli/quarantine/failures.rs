//! `streamdex quarantine failures CONFIG`: the batches the event source
//! mappings gave up on, kept whole in the quarantine bucket (see
//! [`crate::quarantine::failed`]); `--save DIR` writes each as a file that
//! `streamdex replay` replays.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::Output;
use crate::cli::stack::Endpoint;
use crate::cli::{exit, table};
use crate::quarantine::failed::{self, FailedObject};
use crate::stack;

#[derive(Debug, Args)]
pub struct FailuresArgs {
    /// The pipeline config (TOML).
    #[arg(value_name = "CONFIG")]
    pub config: PathBuf,
    #[command(flatten)]
    pub endpoint: Endpoint,
    /// The bucket: on AWS the stack's `QuarantineBucketName` output.
    /// Default: the one `streamdex up` creates for the config.
    #[arg(long, value_name = "NAME")]
    pub bucket: Option<String>,
    /// Read at most this many batches.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub limit: u32,
    #[arg(long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// Write each batch's record to DIR (named for its key), for `streamdex replay`.
    #[arg(long, value_name = "DIR")]
    pub save: Option<PathBuf>,
}

/// One batch as a table row: key, condition, table, shard, range, records.
fn row(o: &FailedObject) -> Vec<String> {
    match &o.batch {
        Ok(b) => vec![
            o.key.clone(),
            b.condition.clone(),
            model::record::table_from_arn(&b.stream_arn).unwrap_or("?").to_owned(),
            b.shard_id.clone(),
            format!("{}..{}", b.start_sequence_number, b.end_sequence_number),
            b.batch_size.to_string(),
            if b.payload.is_some() { "whole" } else { "metadata only" }.to_owned(),
        ],
        Err(e) => vec![o.key.clone(), format!("unreadable: {e}")],
    }
}

fn json_row(o: &FailedObject) -> serde_json::Value {
    match &o.batch {
        Ok(b) => json!({
            "key": o.key,
            "condition": b.condition,
            "timestamp": b.timestamp,
            "stream_arn": b.stream_arn,
            "shard_id": b.shard_id,
            "start_sequence_number": b.start_sequence_number,
            "end_sequence_number": b.end_sequence_number,
            "batch_size": b.batch_size,
            "records_kept": b.payload.is_some(),
        }),
        Err(e) => json!({ "key": o.key, "error": e }),
    }
}

/// `streamdex quarantine failures`, writing to `out` and `err`; returns the exit code.
pub fn run_with(args: &FailuresArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let config = match crate::cli::stack::load(&args.config, "quarantine failures", err) {
        Ok(config) => config,
        Err(code) => return code,
    };
    let bucket = args
        .bucket
        .clone()
        .unwrap_or_else(|| stack::Stack::new(&config).quarantine_bucket);
    let runtime = match crate::cli::stack::runtime("quarantine failures", err) {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let listed = runtime.block_on(async {
        let sdk = stack::sdk_config(args.endpoint.endpoint_url.as_deref(), args.endpoint.region.as_deref()).await;
        failed::list(&aws_kit::clients::s3_client(&sdk), &bucket, args.limit as usize).await
    });
    let objects = match listed {
        Ok(objects) => objects,
        Err(e) => {
            let _ = writeln!(err, "streamdex quarantine failures: {e}");
            return exit::FAILURE;
        }
    };
    let text: String = match args.output {
        Output::Json => objects.iter().map(|o| format!("{}\n", json_row(o))).collect(),
        Output::Table => {
            let rows: Vec<Vec<String>> = objects.iter().map(row).collect();
            table::for_terminal(&rows, err)
        }
    };
    if out.write_all(text.as_bytes()).is_err() {
        return exit::FAILURE;
    }
    if let Some(dir) = &args.save {
        if let Err(e) = std::fs::create_dir_all(dir) {
            let _ = writeln!(
                err,
                "streamdex quarantine failures: cannot create {}: {e}",
                dir.display()
            );
            return exit::FAILURE;
        }
        for o in &objects {
            let path = dir.join(failed::file_name(&o.key));
            if let Err(e) = std::fs::write(&path, &o.body) {
                let _ = writeln!(
                    err,
                    "streamdex quarantine failures: cannot write {}: {e}",
                    path.display()
                );
                return exit::FAILURE;
            }
        }
        let _ = writeln!(
            err,
            "saved {} batches to {} (replay one with `streamdex replay FILE --config CONFIG`)",
            objects.len(),
            dir.display()
        );
    }
    let _ = writeln!(
        err,
        "{} failed batches in s3://{bucket}/{}",
        objects.len(),
        model::record::FAILED_BATCH_PREFIX
    );
    exit::OK
}
