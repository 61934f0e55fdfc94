//! `streamdex up CONFIG` and `streamdex down CONFIG --yes`: the config's
//! stack created on, or removed from, an endpoint (see [`crate::stack`]).
//!
//! Both print one line per resource on stdout (`created`, `updated`,
//! `unchanged`, `deleted`, `absent`) and a summary line. Exit codes: 0 done
//! (also when nothing needed doing), 1 an AWS failure, 2 a bad config, a
//! resource in a shape that conflicts with the config, or `down` without
//! `--yes`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use model::config::{self, Config};

use super::exit;
use crate::stack::{self, StackError};

/// Where the stack goes.
#[derive(Debug, Clone, Default, Args)]
pub struct Endpoint {
    /// The endpoint of every AWS service (a moto server:
    /// `http://127.0.0.1:5005`). Default: `AWS_ENDPOINT_URL` (checked the
    /// same way: a bad value is exit 2), else AWS itself.
    #[arg(long, value_name = "URL", env = "AWS_ENDPOINT_URL", hide_env_values = true, value_parser = endpoint_url)]
    pub endpoint_url: Option<String>,
    /// The region. Default: `AWS_REGION`, else the profile's.
    #[arg(long, value_name = "REGION")]
    pub region: Option<String>,
}

/// Why an `--endpoint-url` (or `AWS_ENDPOINT_URL`) value is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointUrlError {
    #[error("not a URL ({0}); expected e.g. http://127.0.0.1:5005{FROM}")]
    NotUrl(#[source] url::ParseError),
    #[error("the scheme is `{scheme}`; expected http or https, e.g. http://127.0.0.1:5005{FROM}")]
    Scheme { scheme: String },
    #[error("no host; expected e.g. http://127.0.0.1:5005{FROM}")]
    NoHost,
}

/// Where an endpoint URL comes from, said after every [`EndpointUrlError`].
const FROM: &str = " (from --endpoint-url, or else AWS_ENDPOINT_URL)";

/// Checks an `--endpoint-url` value: an `http` or `https` URL with a host
/// (a bad one is a usage error, exit 2, before anything is tried).
pub fn endpoint_url(value: &str) -> Result<String, EndpointUrlError> {
    let url = url::Url::parse(value).map_err(EndpointUrlError::NotUrl)?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(EndpointUrlError::Scheme {
            scheme: url.scheme().to_owned(),
        });
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(EndpointUrlError::NoHost);
    }
    Ok(value.to_owned())
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamdex up streamdex.example.toml --endpoint-url http://127.0.0.1:5005\n  \
    AWS_ENDPOINT_URL=http://127.0.0.1:5005 streamdex up streamdex.toml   # a second run says \"nothing to change\"")]
pub struct UpArgs {
    /// The pipeline config (TOML).
    #[arg(value_name = "CONFIG")]
    pub config: PathBuf,
    #[command(flatten)]
    pub endpoint: Endpoint,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamdex down streamdex.example.toml --endpoint-url http://127.0.0.1:5005          # lists what it would delete\n  \
    streamdex down streamdex.example.toml --endpoint-url http://127.0.0.1:5005 --yes    # deletes it")]
pub struct DownArgs {
    /// The pipeline config (TOML).
    #[arg(value_name = "CONFIG")]
    pub config: PathBuf,
    #[command(flatten)]
    pub endpoint: Endpoint,
    /// Really delete: the source tables go too, with every item in them.
    /// Without it, `down` lists what it would delete and exits 2.
    #[arg(long)]
    pub yes: bool,
}

/// Runs `streamdex up`.
pub fn run_up(args: &UpArgs) -> ExitCode {
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    ExitCode::from(up_with(args, &mut out, &mut err))
}

/// Runs `streamdex down`.
pub fn run_down(args: &DownArgs) -> ExitCode {
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    ExitCode::from(down_with(args, &mut out, &mut err))
}

/// Loads the config, or writes why not and gives the exit code.
pub(crate) fn load(path: &std::path::Path, command: &str, err: &mut dyn Write) -> Result<Config, u8> {
    config::load(path).map_err(|e| {
        let _ = writeln!(err, "{e}");
        let _ = writeln!(err, "streamdex {command}: refused {}", path.display());
        match e {
            config::ConfigError::Read { .. } => exit::FAILURE,
            _ => exit::BAD_INPUT,
        }
    })
}

pub(crate) fn runtime(command: &str, err: &mut dyn Write) -> Result<tokio::runtime::Runtime, u8> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            let _ = writeln!(err, "streamdex {command}: cannot start the async runtime: {e}");
            exit::FAILURE
        })
}

fn failed(command: &str, e: &StackError, err: &mut dyn Write) -> u8 {
    let _ = writeln!(err, "streamdex {command}: {e}");
    if e.is_conflict() {
        exit::BAD_INPUT
    } else {
        exit::FAILURE
    }
}

/// `streamdex up`, writing to `out` and `err`; returns the exit code.
pub fn up_with(args: &UpArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let config = match load(&args.config, "up", err) {
        Ok(config) => config,
        Err(code) => return code,
    };
    let runtime = match runtime("up", err) {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let result = runtime.block_on(async {
        let sdk = stack::sdk_config(args.endpoint.endpoint_url.as_deref(), args.endpoint.region.as_deref()).await;
        stack::up(&sdk, &config).await
    });
    match result {
        Ok(report) => {
            let _ = write!(out, "{report}");
            exit::OK
        }
        Err(e) => failed("up", &e, err),
    }
}

/// `streamdex down`, writing to `out` and `err`; returns the exit code.
pub fn down_with(args: &DownArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let config = match load(&args.config, "down", err) {
        Ok(config) => config,
        Err(code) => return code,
    };
    if !args.yes {
        let stack = stack::Stack::new(&config);
        let _ = writeln!(out, "would delete, with --yes:");
        for rule in &stack.rules {
            let _ = writeln!(out, "  rule  {} (bus {})", rule.name, stack.bus.name);
        }
        for queue in &stack.queues {
            let _ = writeln!(out, "  queue {}", queue.name);
        }
        if !stack.bus.is_default() {
            let _ = writeln!(out, "  bus   {}", stack.bus.name);
        }
        for table in &stack.index_tables {
            let _ = writeln!(out, "  table {} (index {})", table.name, table.index);
        }
        for table in &stack.source_tables {
            let _ = writeln!(out, "  table {} (a source table: its items are lost)", table.name);
        }
        let _ = writeln!(err, "streamdex down: nothing deleted; pass --yes to delete the above");
        return exit::BAD_INPUT;
    }
    let runtime = match runtime("down", err) {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let result = runtime.block_on(async {
        let sdk = stack::sdk_config(args.endpoint.endpoint_url.as_deref(), args.endpoint.region.as_deref()).await;
        stack::down(&sdk, &config).await
    });
    match result {
        Ok(report) => {
            let _ = write!(out, "{report}");
            exit::OK
        }
        Err(e) => failed("down", &e, err),
    }
}

#[cfg(test)]
mod tests {
    use super::endpoint_url;

    #[test]
    fn endpoint_urls_are_http_urls_with_a_host() {
        assert_eq!(
            endpoint_url("http://127.0.0.1:5005").as_deref(),
            Ok("http://127.0.0.1:5005")
        );
        assert!(endpoint_url("https://dynamodb.eu-west-1.amazonaws.com").is_ok());
        for bad in ["not a url", "127.0.0.1:5005", "ftp://host", "http://", ""] {
            let error = endpoint_url(bad).expect_err(bad);
            assert!(error.to_string().contains("expected"), "{bad}: {error}");
        }
    }
}
