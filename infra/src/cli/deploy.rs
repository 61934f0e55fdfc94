//! `streamdex deploy TEMPLATE --stack-name NAME`: a packaged and expanded
//! template created as a CloudFormation stack, reported resource by
//! resource (see [`crate::deploy`]).
//!
//! Exit codes: 0 the stack was created (the report names anything it left
//! out), 1 it failed, timed out or an AWS call failed, 2 a bad template or
//! parameter.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use super::exit;
use super::stack::Endpoint;
use crate::deploy::{self, DeployError};

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamdex deploy target/expanded.json --stack-name streamdex \\\n    \
    --parameter AlarmEndpoint=oncall@example.com --parameter Architecture=x86_64 \\\n    \
    --endpoint-url http://127.0.0.1:5005\n\n\
    On AWS, `sam deploy` does the same and more (updates, change sets); this command is what the\n\
    rehearsal uses against the local endpoint. Every resource the stack did not create is named.")]
pub struct DeployArgs {
    /// The template: plain CloudFormation (`infra/expand.py`'s output), its code in S3.
    #[arg(value_name = "TEMPLATE")]
    pub template: PathBuf,
    /// The stack's name; it must not exist yet.
    #[arg(long, value_name = "NAME")]
    pub stack_name: String,
    /// A template parameter, as KEY=VALUE (repeat for more).
    #[arg(long = "parameter", value_name = "KEY=VALUE", value_parser = parameter)]
    pub parameters: Vec<(String, String)>,
    /// How long to wait for the stack to be created, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 900)]
    pub timeout: u64,
    /// Keep the event source mappings out of the stack and write them,
    /// resolved against it, to FILE for `streamdex run --functions DIR
    /// --mappings FILE`. For a local endpoint: moto's own mappings would
    /// consume the streams (they invoke the function, which moto cannot
    /// run, and drop the records).
    #[arg(long, value_name = "FILE")]
    pub defer_mappings: Option<PathBuf>,
    #[command(flatten)]
    pub endpoint: Endpoint,
}

/// Parses `KEY=VALUE`.
pub fn parameter(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!(
            "`{text}` is not KEY=VALUE (e.g. AlarmEndpoint=oncall@example.com)"
        )),
    }
}

/// Runs `streamdex deploy`.
pub fn run(args: &DeployArgs) -> ExitCode {
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    ExitCode::from(run_with(args, &mut out, &mut err))
}

/// `streamdex deploy`, writing to `out` and `err`; returns the exit code.
pub fn run_with(args: &DeployArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let template = match super::package::read_template(&args.template, "deploy", err) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let parameters: BTreeMap<String, String> = args.parameters.iter().cloned().collect();
    let runtime = match super::stack::runtime("deploy", err) {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let result = runtime.block_on(async {
        let sdk =
            crate::stack::sdk_config(args.endpoint.endpoint_url.as_deref(), args.endpoint.region.as_deref()).await;
        let cf = aws_sdk_cloudformation::Client::new(&sdk);
        let timeout = Duration::from_secs(args.timeout);
        let defer = args.defer_mappings.is_some();
        deploy::deploy(
            &cf,
            &aws_kit::clock::SystemClock,
            &template,
            &args.stack_name,
            &parameters,
            timeout,
            defer,
        )
        .await
    });
    match result {
        Ok(report) => {
            let _ = write!(out, "{report}");
            if let Some(path) = &args.defer_mappings {
                let mut text = serde_json::to_string_pretty(&report.deferred).unwrap_or_default();
                text.push('\n');
                if let Err(e) = std::fs::write(path, text) {
                    let _ = writeln!(err, "streamdex deploy: cannot write {}: {e}", path.display());
                    return exit::FAILURE;
                }
                let _ = writeln!(out, "wrote {} mappings to {}", report.deferred.len(), path.display());
            }
            let absent = report.absent().count();
            if absent > 0 {
                let _ = writeln!(
                    err,
                    "streamdex deploy: {absent} resources are not in the stack (listed as `absent`); \
                     against a local endpoint, `streamdex up` creates what the consumers need of them"
                );
            }
            if report.is_complete() {
                exit::OK
            } else {
                let _ = writeln!(err, "streamdex deploy: stack {} is {}", report.stack, report.status);
                exit::FAILURE
            }
        }
        Err(e) => {
            let _ = writeln!(err, "streamdex deploy: {e}");
            match e {
                DeployError::NoResources | DeployError::TooLarge { .. } => exit::BAD_INPUT,
                _ => exit::FAILURE,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parameter;

    #[test]
    fn parameters_are_key_equals_value() {
        assert_eq!(parameter("A=b=c"), Ok(("A".to_owned(), "b=c".to_owned())));
        assert_eq!(parameter("A="), Ok(("A".to_owned(), String::new())));
        for bad in ["A", "=b", ""] {
            assert!(parameter(bad).unwrap_err().contains("KEY=VALUE"), "{bad}");
        }
    }
}
