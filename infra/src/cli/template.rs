//! `streamdex template CONFIG [--output FILE]`: the AWS SAM / CloudFormation
//! template of a config (see [`crate::template`]), as JSON.
//!
//! Exit codes: 0 written, 1 the config or the output file could not be read
//! or written, 2 a bad config (or one too large for the functions' environment).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use model::config;

use super::exit;
use crate::template;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamdex template streamdex.toml -o infra/template.json\n  \
    streamdex template streamdex.example.toml -o infra/streamdex.template.json   # the committed example\n\n\
    Build the functions with `cargo lambda build --release --arm64`, then deploy with `sam deploy` \
    (docs/deploying.md: the commands and the parameters).")]
pub struct TemplateArgs {
    /// The pipeline config (TOML). Its file name (not its folder) appears in the template's description.
    #[arg(value_name = "CONFIG")]
    pub config: PathBuf,
    /// Write the template to FILE instead of stdout. The template's `CodeUri`s
    /// are relative to it and expect it in a folder beside `target/`
    /// (as `infra/` is).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Runs `streamdex template`.
pub fn run(args: &TemplateArgs) -> ExitCode {
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    ExitCode::from(run_with(args, &mut out, &mut err))
}

/// `streamdex template`, writing to `out` (without `--output`) and `err`; returns the exit code.
pub fn run_with(args: &TemplateArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let text = match std::fs::read_to_string(&args.config) {
        Ok(text) => text,
        Err(e) => {
            let _ = writeln!(err, "streamdex template: cannot read {}: {e}", args.config.display());
            return exit::FAILURE;
        }
    };
    let file = args.config.file_name().map_or_else(
        || args.config.display().to_string(),
        |f| f.to_string_lossy().into_owned(),
    );
    let config = match config::parse(&text, &args.config.display().to_string()) {
        Ok(config) => config,
        Err(e) => {
            let _ = writeln!(err, "{e}");
            let _ = writeln!(err, "streamdex template: refused {}", args.config.display());
            return exit::BAD_INPUT;
        }
    };
    let rendered = match template::render(&config, &text, &file) {
        Ok(rendered) => template::to_text(&rendered),
        Err(e) => {
            let _ = writeln!(err, "streamdex template: {e}");
            return exit::BAD_INPUT;
        }
    };
    match &args.output {
        Some(path) => match std::fs::write(path, rendered) {
            Ok(()) => exit::OK,
            Err(e) => {
                let _ = writeln!(err, "streamdex template: cannot write {}: {e}", path.display());
                exit::FAILURE
            }
        },
        None => match out.write_all(rendered.as_bytes()) {
            Ok(()) => exit::OK,
            Err(e) => {
                let _ = writeln!(err, "streamdex template: cannot write the template: {e}");
                exit::FAILURE
            }
        },
    }
}
