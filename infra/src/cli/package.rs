//! `streamdex package TEMPLATE --bucket BUCKET -o PACKAGED`: the functions'
//! zips uploaded to S3 and the template pointed at them, as `sam package`
//! does (see [`crate::package`]).
//!
//! Exit codes: 0 packaged, 1 a file or AWS failure, 2 a template that is
//! not JSON or names no code.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::Value as Json;

use super::exit;
use super::stack::Endpoint;
use crate::package::{self, PackageError};

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    scripts/build-functions.sh x86_64\n  \
    streamdex template streamdex.toml -o infra/template.json\n  \
    streamdex package infra/template.json --bucket my-artifacts -o target/packaged.json\n  \
    .venv-judges/bin/python infra/expand.py target/packaged.json target/expanded.json\n\n\
    The zips are the ones scripts/build-functions.sh writes; each template's CodeUri is relative to the template.")]
pub struct PackageArgs {
    /// The template (`streamdex template`'s output), its CodeUris local zips.
    #[arg(value_name = "TEMPLATE")]
    pub template: PathBuf,
    /// The S3 bucket the zips go to.
    #[arg(long, value_name = "BUCKET")]
    pub bucket: String,
    /// The key prefix of the zips (each key is the prefix and the zip's SHA-256).
    #[arg(long, value_name = "PREFIX", default_value = "streamdex")]
    pub prefix: String,
    /// Create the bucket when it does not exist (a local endpoint's, say).
    #[arg(long)]
    pub create_bucket: bool,
    /// Where the packaged template goes.
    #[arg(long, short, value_name = "FILE")]
    pub output: PathBuf,
    #[command(flatten)]
    pub endpoint: Endpoint,
}

/// Runs `streamdex package`.
pub fn run(args: &PackageArgs) -> ExitCode {
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    ExitCode::from(run_with(args, &mut out, &mut err))
}

/// Reads a JSON template, or says why not and gives the exit code.
pub(crate) fn read_template(path: &Path, command: &str, err: &mut dyn Write) -> Result<Json, u8> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        let _ = writeln!(err, "streamdex {command}: cannot read {}: {e}", path.display());
        exit::FAILURE
    })?;
    serde_json::from_str(&text).map_err(|e| {
        let _ = writeln!(
            err,
            "streamdex {command}: {} is not a JSON template: {e}",
            path.display()
        );
        exit::BAD_INPUT
    })
}

/// `streamdex package`, writing to `out` and `err`; returns the exit code.
pub fn run_with(args: &PackageArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let mut template = match read_template(&args.template, "package", err) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let base = args.template.parent().unwrap_or(Path::new("."));
    let runtime = match super::stack::runtime("package", err) {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let result = runtime.block_on(async {
        let sdk =
            crate::stack::sdk_config(args.endpoint.endpoint_url.as_deref(), args.endpoint.region.as_deref()).await;
        let s3 = aws_kit::clients::s3_client(&sdk);
        package::package(&s3, &mut template, base, &args.bucket, &args.prefix, args.create_bucket).await
    });
    let uploaded = match result {
        Ok(uploaded) => uploaded,
        Err(e) => {
            let _ = writeln!(err, "streamdex package: {e}");
            return match e {
                PackageError::NoResources => exit::BAD_INPUT,
                _ => exit::FAILURE,
            };
        }
    };
    if uploaded.is_empty() {
        let _ = writeln!(
            err,
            "streamdex package: {} names no local code to upload",
            args.template.display()
        );
    }
    for u in &uploaded {
        let _ = writeln!(
            out,
            "uploaded {} ({} bytes) to {} for {}",
            u.path.display(),
            u.bytes,
            u.location,
            u.resource
        );
    }
    let mut text = serde_json::to_string_pretty(&template).unwrap_or_default();
    text.push('\n');
    if let Err(e) = std::fs::write(&args.output, text) {
        let _ = writeln!(err, "streamdex package: cannot write {}: {e}", args.output.display());
        return exit::FAILURE;
    }
    let _ = writeln!(out, "wrote {}", args.output.display());
    exit::OK
}
