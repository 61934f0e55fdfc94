//! The `streamdex` command line, one module per subcommand.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod config;
pub mod exit;
pub mod replay;
pub mod sortkey;

/// streamdex keeps edge sets, multikey index tables and EventBridge events in
/// step with a DynamoDB table by consuming its stream.
///
/// Exit codes: 0 success, 1 an I/O or AWS failure, 2 bad input (a bad config,
/// a bad value, a bad flag).
#[derive(Debug, Parser)]
#[command(name = "streamdex", version, about, long_about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a pipeline config, or print the annotated example.
    ///
    /// Examples:
    ///   streamdex config check streamdex.example.toml
    ///   streamdex config example > streamdex.toml
    Config(config::ConfigArgs),
    /// Encode typed values into CSS1 composite sort strings, or decode them.
    Sortkey(sortkey::SortkeyArgs),
    /// Replay recorded stream records through the indexer into the embedded
    /// in-memory store, and show the resulting index rows and edge sets.
    Replay(replay::ReplayArgs),
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Config(args) => config::run(&args),
        Command::Sortkey(args) => sortkey::run_stdio(&args),
        Command::Replay(args) => replay::run(&args),
    }
}
