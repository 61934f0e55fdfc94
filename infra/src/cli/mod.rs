//! The `streamdex` command line, one module per subcommand; each parses its
//! arguments, calls the library and prints (the work itself lives in
//! `stack`, `template`, `runner`, `stream_indexer::rebuild`).
//!
//! - [`config`]: `config check`, `config example`.
//! - [`sortkey`]: `sortkey encode`, `sortkey decode` (CSS1).
//! - [`template`]: `template` (the AWS template of a config); [`package`](mod@package):
//!   `package` (the functions' zips to S3); [`deploy`](mod@deploy): `deploy` (a stack, reported).
//! - [`stack`]: `up`, `down`, and the `--endpoint-url`/`--region` flags every networked command takes.
//! - [`replay`]: `replay` (recorded streams through both consumers).
//! - [`run`](mod@run): `run` (the local runner); [`lag`]: `lag`; [`record`]: `record`.
//! - [`seed`]: `seed`; [`show`]: `show`; [`quarantine`](mod@quarantine): `quarantine list|show|redrive`.
//! - [`query`](mod@query): `query` (an index's rows by typed conditions on its sort columns).
//! - [`verify`]: `verify` (and the selection and report rendering `rebuild` shares); [`rebuild`]: `rebuild`.
//! - [`exit`]: the exit codes; [`progress`]: progress bars on a terminal.
//! - [`reference`](mod@reference): the command-line reference (`docs/cli.md`), rendered from the above.
//! - [`table`]: tables laid out for the terminal (`query`, `quarantine list`).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod config;
pub mod deploy;
pub mod exit;
pub mod lag;
pub mod package;
pub mod progress;
pub mod quarantine;
pub mod query;
pub mod rebuild;
pub mod record;
pub mod reference;
pub mod replay;
pub mod run;
pub mod seed;
pub mod show;
pub mod signal;
pub mod sortkey;
pub mod stack;
pub mod table;
pub mod template;
pub mod verify;

/// streamdex keeps edge sets, multikey index tables and EventBridge events in
/// step with a DynamoDB table by consuming its stream.
///
/// Exit codes: 0 success, 1 an I/O or AWS failure, 2 bad input (a bad config,
/// a bad value, a bad flag), 3 drift found (`verify`, `rebuild`), 4 a consumer
/// is behind (`lag`).
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
    /// Replay recorded stream records through both consumers (the indexer,
    /// the router and its TTL reaper) on the embedded in-memory store, or
    /// into an endpoint, and show the index rows, edge sets and events.
    Replay(replay::ReplayArgs),
    /// Create the config's tables, GSIs, streams, bus, rules, queues and rule
    /// targets on an endpoint (a local moto server), or bring them up to
    /// date; a second run changes nothing and says so.
    Up(stack::UpArgs),
    /// Delete what `up` created (source tables included, with their items).
    Down(stack::DownArgs),
    /// Render the AWS SAM / CloudFormation template of a config (JSON).
    Template(template::TemplateArgs),
    /// Upload the built functions' zips to S3 and point the template at
    /// them, as `sam package` does.
    Package(package::PackageArgs),
    /// Create a packaged, expanded template as a CloudFormation stack and
    /// report each resource: created, skipped by a condition, failed, or
    /// absent.
    Deploy(deploy::DeployArgs),
    /// Check every index row and edge set against the source tables and
    /// report drift by kind (exit 3 when there is drift); --repair fixes it.
    Verify(verify::VerifyArgs),
    /// Rebuild index tables and edge sets from the source tables, resumably,
    /// within a write budget, and verify the result.
    Rebuild(rebuild::RebuildArgs),
    /// Consume the tables' streams as Lambda's event source mappings would:
    /// the indexer and the router in process, checkpoints in a file, the
    /// reaper fed from its rules' queues, iterator-age alarms logged.
    Run(run::RunArgs),
    /// Show each shard's backlog and iterator age per consumer; exit 4 above --max-age.
    Lag(lag::LagArgs),
    /// Tail the tables' streams into JSON Lines that `replay` reads.
    Record(record::RecordArgs),
    /// Write sample goals, memberships, issues and layers to an endpoint.
    Seed(seed::SeedArgs),
    /// Print the derived data of an endpoint (index rows in key order, edge
    /// sets) as JSON, the shape of `replay --dump json`.
    Show(show::ShowArgs),
    /// Read an index's rows of one partition by typed conditions on its
    /// sort columns (=, <, <=, >, >=, between, a string prefix), in sort
    /// order or reversed, merging a sharded index's partitions.
    Query(query::QueryArgs),
    /// List, show and redrive the records the consumers quarantined.
    Quarantine(quarantine::QuarantineArgs),
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Config(args) => config::run(&args),
        Command::Sortkey(args) => sortkey::run_stdio(&args),
        Command::Replay(args) => replay::run(&args),
        Command::Up(args) => stack::run_up(&args),
        Command::Down(args) => stack::run_down(&args),
        Command::Template(args) => template::run(&args),
        Command::Package(args) => package::run(&args),
        Command::Deploy(args) => deploy::run(&args),
        Command::Verify(args) => verify::run(&args),
        Command::Rebuild(args) => rebuild::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Lag(args) => lag::run(&args),
        Command::Record(args) => record::run(&args),
        Command::Seed(args) => seed::run(&args),
        Command::Show(args) => show::run(&args),
        Command::Query(args) => query::run(&args),
        Command::Quarantine(args) => quarantine::run(&args),
    }
}
