//! `streamdex config ...`: check a pipeline config, print the annotated example.
//!
//! - `streamdex config check FILE`: loads and validates FILE. On success prints
//!   a short summary (tables, edge sets, indexes, routes) and exits 0; on a bad
//!   config prints every problem (`FILE:LINE:COLUMN: KEY: REASON`, one per line)
//!   to stderr and exits 2; when FILE cannot be read prints the OS reason and
//!   exits 1.
//! - `streamdex config example`: prints the annotated example config.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use model::config::{self, Config, ConfigError, IndexConfig, RouteConfig, SortColumn};
use model::sortkey::{ColumnType, Direction, Nulls};

/// Exit status: the config is valid.
pub const EXIT_OK: u8 = 0;
/// Exit status: the file could not be read.
pub const EXIT_UNREADABLE: u8 = 1;
/// Exit status: the config was refused.
pub const EXIT_INVALID: u8 = 2;

#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub command: ConfigCommand,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Load and validate a config: print a summary (exit 0), every problem
    /// (exit 2), or why the file could not be read (exit 1).
    Check {
        /// The config file (TOML).
        file: PathBuf,
    },
    /// Print the annotated example config (every key explained).
    Example {
        /// Where its tables' changes are read: `dynamodb` (their DynamoDB
        /// streams, as written) or `kinesis` (every table with `stream =
        /// "kinesis"`).
        #[arg(long, value_name = "SOURCE", default_value = "dynamodb", value_parser = ["dynamodb", "kinesis"])]
        stream: String,
    },
}

/// Runs `streamdex config ...` on stdout and stderr.
pub fn run(args: &ConfigArgs) -> ExitCode {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    ExitCode::from(run_with(args, &mut stdout.lock(), &mut stderr.lock()))
}

/// Runs `streamdex config ...`, writing to `out` and `err`; returns the exit status.
/// Write errors (a closed pipe) are ignored: the status still tells the outcome.
pub fn run_with(args: &ConfigArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match &args.command {
        ConfigCommand::Check { file } => check(file, out, err),
        ConfigCommand::Example { stream } if stream == "kinesis" => {
            let _ = out.write_all(kinesis_example().as_bytes());
            EXIT_OK
        }
        ConfigCommand::Example { .. } => {
            let _ = out.write_all(config::EXAMPLE_CONFIG.as_bytes());
            EXIT_OK
        }
    }
}

/// The example config with every table read from a Kinesis data stream.
pub fn kinesis_example() -> String {
    let mut out = String::with_capacity(config::EXAMPLE_CONFIG.len() + 128);
    for line in config::EXAMPLE_CONFIG.lines() {
        out.push_str(line);
        out.push('\n');
        if line.starts_with("[table.") {
            out.push_str("stream = \"kinesis\"\n");
        }
    }
    out
}

fn check(file: &std::path::Path, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match config::load(file) {
        Ok(config) => {
            let _ = write!(out, "{}", summary(&file.display().to_string(), &config));
            EXIT_OK
        }
        Err(e @ ConfigError::Read { .. }) => {
            let _ = writeln!(err, "error: {e}");
            EXIT_UNREADABLE
        }
        Err(e @ ConfigError::Invalid { .. }) => {
            let n = e.problems().len();
            let _ = writeln!(err, "{e}");
            let _ = writeln!(
                err,
                "{}: refused, {n} problem{}",
                file.display(),
                if n == 1 { "" } else { "s" }
            );
            EXIT_INVALID
        }
    }
}

/// A short, human summary of a valid config.
pub fn summary(file: &str, config: &Config) -> String {
    let mut s = String::new();
    let mut line = |text: String| {
        s.push_str(&text);
        s.push('\n');
    };
    line(format!("{file}: ok"));

    line(format!("tables ({}):", config.tables.len()));
    for t in &config.tables {
        let mut text = format!("  {}: key {}", t.name, t.primary_key().join("/"));
        if let Some(ttl) = &t.ttl_attribute {
            text.push_str(&format!(", ttl {ttl}"));
        }
        line(text);
    }

    line(format!("edge sets ({}):", config.edge_sets.len()));
    for e in &config.edge_sets {
        line(format!(
            "  {}.{}: include {}; member {}; max {} members (else {} = false)",
            e.table,
            e.attribute,
            e.include.join(", "),
            e.member.join(" + "),
            e.max_members,
            e.complete_attribute
        ));
    }

    line(format!("indexes ({}):", config.indexes.len()));
    for i in &config.indexes {
        line(format!("  {}", index_summary(i)));
    }

    line(format!("routes ({}):", config.routes.len()));
    for r in &config.routes {
        line(format!("  {}", route_summary(r)));
    }

    line(format!(
        "events: source {}, bus {}; alarms: warn at {} s, page at {} s",
        config.events.source,
        config.events.bus,
        config.alarms.iterator_age_warn_seconds,
        config.alarms.iterator_age_page_seconds
    ));
    s
}

fn index_summary(i: &IndexConfig) -> String {
    let mut text = format!("{}: {}", i.name, i.source.table);
    if let Some(prefix) = &i.source.key_prefix {
        text.push_str(&format!(" ({prefix}*)"));
    }
    text.push_str(&format!(" -> {}", i.table));
    if let Some(each) = &i.for_each {
        text.push_str(&format!(", for each entry of {each}"));
    }
    text.push_str(&format!(", partition \"{}\"", i.partition));
    if i.shards > 1 {
        text.push_str(&format!(
            " in {} shards (\"...#0\" to \"...#{}\")",
            i.shards,
            i.shards - 1
        ));
    }
    if !i.sort.is_empty() {
        let columns: Vec<String> = i.sort.iter().map(column_summary).collect();
        text.push_str(&format!(", sort {}", columns.join(", ")));
    }
    if !i.project.is_empty() {
        text.push_str(&format!(", project {}", i.project.join(", ")));
    }
    text
}

fn column_summary(c: &SortColumn) -> String {
    let ty = match c.column.ty {
        ColumnType::S => "s",
        ColumnType::N => "n",
        ColumnType::B => "b",
        ColumnType::Bool => "bool",
        ColumnType::Date => "date",
        ColumnType::Timestamp => "timestamp",
        ColumnType::Any => "any",
    };
    let order = match c.column.direction {
        Direction::Asc => "asc",
        Direction::Desc => "desc",
    };
    let nulls = match c.column.nulls {
        Nulls::First => "nulls first",
        Nulls::Last => "nulls last",
    };
    format!("{} {ty} {order} {nulls}", c.value)
}

fn route_summary(r: &RouteConfig) -> String {
    let events: Vec<&str> = r.events.iter().map(|e| e.as_str()).collect();
    let mut text = format!("\"{}\": {} {}", r.detail_type, r.table, events.join("|"));
    text.push_str(&format!(", {} items", r.items.as_str()));
    if let Some(prefix) = &r.key_prefix {
        text.push_str(&format!(" of {prefix}*"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(subcommand)]
        command: Top,
    }

    #[derive(Debug, Subcommand)]
    enum Top {
        Config(ConfigArgs),
    }

    fn run_args(args: &[&str]) -> (u8, String, String) {
        let cli = Cli::try_parse_from(std::iter::once("streamdex").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{e}"));
        let Top::Config(config_args) = cli.command;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_with(&config_args, &mut out, &mut err);
        (
            code,
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        )
    }

    fn temp_file(name: &str, text: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("streamdex-cli-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        path
    }

    #[test]
    fn check_prints_a_summary_of_a_valid_config() {
        let path = temp_file("good.toml", config::EXAMPLE_CONFIG.as_bytes());
        let (code, out, err) = run_args(&["config", "check", &path.display().to_string()]);
        assert_eq!(code, EXIT_OK, "{err}");
        assert!(err.is_empty());
        assert!(out.contains(": ok\n"), "{out}");
        assert!(out.contains("tables (3):"), "{out}");
        assert!(out.contains("  records: key source/target, ttl expiresAt"), "{out}");
        assert!(out.contains("edge sets (1):"), "{out}");
        assert!(out.contains("indexes (1):"), "{out}");
        assert!(
            out.contains("issue-attrib: issues (issue-*) -> IssueAttribIndex"),
            "{out}"
        );
        assert!(out.contains("routes (3):"), "{out}");
        assert!(
            out.contains("\"Layer Expired\": layers EXPIRE, all items of lyr#*"),
            "{out}"
        );
    }

    #[test]
    fn check_prints_every_problem_of_a_bad_config() {
        let path = temp_file(
            "bad.toml",
            b"[table.records]\npartition_key = \"\"\n\n[[route]]\ntable = \"nope\"\ndetail_type = \"X\"\nevents = []\n",
        );
        let (code, out, err) = run_args(&["config", "check", &path.display().to_string()]);
        assert_eq!(code, EXIT_INVALID);
        assert!(out.is_empty());
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 4, "{err}");
        assert!(
            lines[0].contains("bad.toml:2:17: [table.records] partition_key: empty attribute name"),
            "{err}"
        );
        assert!(
            lines[1].contains(":5:9: [[route]] \"X\" table: table \"nope\" is not declared"),
            "{err}"
        );
        assert!(lines[2].contains(":7:10: [[route]] \"X\" events: no events"), "{err}");
        assert!(lines[3].ends_with("refused, 3 problems"), "{err}");
    }

    #[test]
    fn check_reports_an_unreadable_file() {
        let path = std::env::temp_dir().join("streamdex-cli-config-does-not-exist.toml");
        let (code, out, err) = run_args(&["config", "check", &path.display().to_string()]);
        assert_eq!(code, EXIT_UNREADABLE);
        assert!(out.is_empty());
        assert!(err.starts_with("error: cannot read "), "{err}");
    }

    #[test]
    fn example_prints_the_example() {
        let (code, out, _) = run_args(&["config", "example"]);
        assert_eq!(code, EXIT_OK);
        assert_eq!(out, config::EXAMPLE_CONFIG);
    }

    #[test]
    fn the_kinesis_example_reads_every_table_from_kinesis() {
        let (code, out, _) = run_args(&["config", "example", "--stream", "kinesis"]);
        assert_eq!(code, EXIT_OK);
        let parsed = config::parse(&out, "kinesis example").unwrap_or_else(|e| panic!("{e}"));
        let example = config::parse(config::EXAMPLE_CONFIG, "example").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(parsed.tables.len(), example.tables.len());
        assert!(parsed.tables.iter().all(|t| t.stream.is_unordered()));
        assert_eq!((parsed.indexes, parsed.edge_sets), (example.indexes, example.edge_sets));
    }
}
