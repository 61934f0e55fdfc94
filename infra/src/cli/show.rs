//! `streamdex show CONFIG`: the derived data of a deployment (every index
//! table's rows in key order, every node's edge set) as one JSON object on
//! stdout, read from an endpoint: what the developer loop looks at after
//! `up`, `run` and `seed`. The shape is `streamdex replay --dump json`'s
//! (see [`crate::derived`]).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use stream_indexer::store::dynamo::{dynamodb_client, DynamoStore};

use super::exit;
use super::stack::{load, Endpoint};
use crate::derived::derived_json;
use crate::stack;

#[derive(Debug, Args)]
#[command(
    after_help = "Exit codes: 0 printed, 1 an AWS failure (a missing table: run `streamdex up` first), \
2 a bad config.\n\n\
Examples:\n  \
    streamdex show streamdex.example.toml --endpoint-url http://127.0.0.1:5005\n  \
    streamdex show streamdex.toml | jq '.edge_sets[\"records.edges\"][\"GOAL-1\"]'"
)]
pub struct ShowArgs {
    /// The pipeline config (TOML).
    #[arg(value_name = "CONFIG")]
    pub config: PathBuf,
    #[command(flatten)]
    pub endpoint: Endpoint,
}

/// Runs `streamdex show`.
pub fn run(args: &ShowArgs) -> ExitCode {
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    ExitCode::from(run_with(args, &mut out, &mut err))
}

/// `streamdex show`, writing to `out` and `err`; returns the exit code.
pub fn run_with(args: &ShowArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let config = match load(&args.config, "show", err) {
        Ok(config) => Arc::new(config),
        Err(code) => return code,
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = writeln!(err, "streamdex show: cannot start the async runtime: {e}");
            return exit::FAILURE;
        }
    };
    let derived = runtime.block_on(async {
        let sdk = stack::sdk_config(args.endpoint.endpoint_url.as_deref(), args.endpoint.region.as_deref()).await;
        derived_json(&DynamoStore::new(dynamodb_client(&sdk), config.clone()), &config).await
    });
    match derived {
        Ok(json) => match writeln!(out, "{json:#}") {
            Ok(()) => exit::OK,
            Err(e) => {
                let _ = writeln!(err, "streamdex show: cannot write the output: {e}");
                exit::FAILURE
            }
        },
        Err(e) => {
            let _ = writeln!(err, "streamdex show: {e}");
            exit::FAILURE
        }
    }
}
