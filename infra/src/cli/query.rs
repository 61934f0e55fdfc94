//! `streamdex query CONFIG INDEX --partition VALUE [conditions]`: read an
//! index table the way its sort columns order it.
//!
//! The conditions are typed by the index's sort columns, in order: `--eq`
//! fixes the first columns (one `--eq` per column), then at most one of
//! `--lt`, `--le`, `--gt`, `--ge`, `--between LOW HIGH` or `--begins PREFIX`
//! applies to the next column. `model::query::plan` turns them into the
//! exact CSS1 bounds of one Query per partition (per shard, for a sharded
//! index); [`fetch`] runs them with the AWS SDK, page by page, and the
//! model's merge puts the partitions' rows in order and stops at `--limit`.
//! [`literal`] reads the values; [`render`] prints the rows.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use model::config::{Config, IndexConfig};
use model::query::{self, Conditions, QueryError};
use model::sortkey::{ColumnCondition, Direction, Nulls, Op, RangeError, SortValue};
use model::Backoff;

use super::exit;
use super::stack::{load, Endpoint};
use crate::stack;

pub mod fetch;
pub mod literal;
pub mod render;

const HELP: &str = "\
Conditions apply to the index's sort columns in order: each --eq fixes the
next column (the first --eq the first column), then one of --lt, --le, --gt,
--ge, --between or --begins applies to the column after them. A range means
the value's order, whatever the column's direction, and never matches NULL
(select nulls with --eq null); on an ANY column it matches only values of
the bound's type. --begins takes a string prefix, on S and ANY columns.

Values are DynamoDB JSON when they start with `{` ({\"S\":\"42\"}, {\"N\":\"1.5\"},
{\"NULL\":true}), `null` is NULL, and anything else is read by the column's
type: S, DATE and TIMESTAMP as text, N as a decimal number (exact), BOOL as
true or false, B as base64; an ANY column reads true/false as BOOL, a number
as N, anything else as S.

A sharded index (`shards = N`) is read from its N partitions, merged in sort
order. --desc reads in descending sort key order; --limit stops after N rows.

Output: `table` (default) aligns the decoded sort columns, the source key and
the projected attributes; `json` prints one object per row, {\"columns\": [the
decoded sort columns], \"row\": {every attribute, DynamoDB JSON}}.

Exit codes: 0 printed (also when no row matched), 1 an AWS failure (one line;
a missing table: run `streamdex up`), 2 bad input (the config, the index, a
flag or a value, named).

Examples (the example config: issues by custom field, sorted by the field's
value (ANY), then by issue number (N)):
  streamdex query streamdex.toml issue-attrib --partition prio
  streamdex query streamdex.toml issue-attrib --partition prio --eq high --ge 10 --limit 5
  streamdex query streamdex.toml issue-attrib --partition size --between 1 10 --desc
  streamdex query streamdex.toml issue-attrib --partition owner --begins al --output json
  streamdex query streamdex.toml issue-attrib --partition prio --eq '{\"S\":\"42\"}' --eq null";

/// Why the arguments name no index of the config, or give conditions its
/// sort columns cannot take (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum QueryArgsError {
    #[error("unknown index `{name}`: the config declares no [[index]]")]
    NoIndexes { name: String },
    /// `known`: the config's index names.
    #[error("unknown index `{name}` (the config's indexes: {})", .known.join(", "))]
    UnknownIndex { name: String, known: Vec<String> },
    #[error("index `{name}`: its source table `{table}` is not declared")]
    NoSourceTable { name: String, table: String },
    /// `count` --eq values for an index of `columns` sort columns (`list`: their values).
    #[error("{count} --eq values, but index `{index}` has {columns} sort column(s) ({list})")]
    TooManyEq {
        count: usize,
        index: String,
        columns: usize,
        list: String,
    },
    /// A range condition after `eq` --eq values that take every sort column.
    #[error("--{op}: no sort column is left after the {eq} --eq value(s): index `{index}` has {columns} ({list})")]
    NoColumnLeft {
        op: Op,
        eq: usize,
        index: String,
        columns: usize,
        list: String,
    },
    /// The value `text` of `--op` that `column` (its label) cannot read.
    #[error("--{op} `{text}`: {column}: {source}")]
    Value {
        op: Op,
        text: String,
        column: String,
        #[source]
        source: literal::LiteralError,
    },
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Aligned columns, a header first.
    Table,
    /// One JSON object per row.
    Json,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = HELP)]
pub struct QueryArgs {
    /// The pipeline config (TOML).
    #[arg(value_name = "CONFIG")]
    pub config: PathBuf,
    /// The index to read (its `name` in the config).
    #[arg(value_name = "INDEX")]
    pub index: String,
    /// The partition: the value the index's `partition` template renders
    /// (for a sharded index, without the shard suffix).
    #[arg(long, value_name = "VALUE")]
    pub partition: String,
    /// Equal to VALUE: the first --eq on the first sort column, the second on
    /// the second, and so on.
    #[arg(long = "eq", value_name = "VALUE", allow_hyphen_values = true)]
    pub eq: Vec<String>,
    /// Below VALUE, on the sort column after the --eq ones.
    #[arg(long, value_name = "VALUE", allow_hyphen_values = true, group = "range")]
    pub lt: Option<String>,
    /// At most VALUE.
    #[arg(long, value_name = "VALUE", allow_hyphen_values = true, group = "range")]
    pub le: Option<String>,
    /// Above VALUE.
    #[arg(long, value_name = "VALUE", allow_hyphen_values = true, group = "range")]
    pub gt: Option<String>,
    /// At least VALUE.
    #[arg(long, value_name = "VALUE", allow_hyphen_values = true, group = "range")]
    pub ge: Option<String>,
    /// Between LOW and HIGH, both included (in either order).
    #[arg(long, num_args = 2, value_names = ["LOW", "HIGH"], allow_hyphen_values = true, group = "range")]
    pub between: Option<Vec<String>>,
    /// Strings starting with PREFIX (S and ANY columns).
    #[arg(long, value_name = "PREFIX", allow_hyphen_values = true, group = "range")]
    pub begins: Option<String>,
    /// Descending sort key order.
    #[arg(long)]
    pub desc: bool,
    /// At most N rows.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    #[command(flatten)]
    pub endpoint: Endpoint,
}

/// Runs `streamdex query`.
pub fn run(args: &QueryArgs) -> ExitCode {
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    ExitCode::from(run_with(args, &mut out, &mut err))
}

/// A problem with the input, already worded: exit 2.
fn bad(err: &mut dyn Write, message: impl std::fmt::Display) -> u8 {
    let _ = writeln!(err, "streamdex query: {message}");
    exit::BAD_INPUT
}

/// `streamdex query`, writing to `out` and `err`; returns the exit code.
pub fn run_with(args: &QueryArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let config = match load(&args.config, "query", err) {
        Ok(config) => config,
        Err(code) => return code,
    };
    let (index, source) = match index_of(&config, &args.index) {
        Ok(found) => found,
        Err(message) => return bad(err, message),
    };
    let conditions = match conditions(args, index) {
        Ok(conditions) => conditions,
        Err(message) => return bad(err, message),
    };
    let plan = match query::plan(index, source, &args.partition, &conditions) {
        Ok(plan) => plan,
        Err(e) => return bad(err, refusal(args, index, &e)),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = writeln!(err, "streamdex query: cannot start the async runtime: {e}");
            return exit::FAILURE;
        }
    };
    let limit = args.limit.map(|l| usize::try_from(l).unwrap_or(usize::MAX));
    let count = index.sort.len();
    let mut rows = Vec::new();
    let mut written = 0usize;
    let result = runtime.block_on(async {
        let sdk = stack::sdk_config(args.endpoint.endpoint_url.as_deref(), args.endpoint.region.as_deref()).await;
        let client = aws_kit::clients::dynamodb_client(&sdk);
        fetch::run(&client, index, &plan, args.desc, limit, &Backoff::default(), |row| {
            written += 1;
            match args.output {
                Output::Json => writeln!(out, "{}", render::json_line(&row, &plan.key_columns, count))
                    .map_err(|e| model::Fault::refused(format!("cannot write the output: {e}"))),
                Output::Table => {
                    rows.push(row);
                    Ok(())
                }
            }
        })
        .await
    });
    let requests = match result {
        Ok(requests) => requests,
        Err(fault) => {
            let _ = writeln!(err, "streamdex query: {}", fault.message());
            return exit::FAILURE;
        }
    };
    let mut cut = false;
    if args.output == Output::Table {
        let table = render::table(index, source, &plan.key_columns, &rows, super::table::terminal_width());
        cut = table.cut;
        if let Err(e) = out.write_all(table.text.as_bytes()) {
            let _ = writeln!(err, "streamdex query: cannot write the output: {e}");
            return exit::FAILURE;
        }
    }
    let _ = writeln!(
        err,
        "{written} row(s) from {} partition(s) of {} ({requests} Query request(s)){}{}",
        plan.partitions.len(),
        index.table,
        if cut { "; " } else { "" },
        if cut { super::table::CUT_NOTE } else { "" }
    );
    exit::OK
}

/// The index named `name` and its source table.
fn index_of<'c>(
    config: &'c Config,
    name: &str,
) -> Result<(&'c IndexConfig, &'c model::config::TableConfig), QueryArgsError> {
    let index = config.index(name).ok_or_else(|| {
        let name = name.to_owned();
        let known: Vec<String> = config.indexes.iter().map(|i| i.name.clone()).collect();
        if known.is_empty() {
            QueryArgsError::NoIndexes { name }
        } else {
            QueryArgsError::UnknownIndex { name, known }
        }
    })?;
    let source = config
        .table(&index.source.table)
        .ok_or_else(|| QueryArgsError::NoSourceTable {
            name: name.to_owned(),
            table: index.source.table.clone(),
        })?;
    Ok((index, source))
}

/// `sort column 2 (num, N desc nulls last)`.
fn column_label(index: &IndexConfig, column: usize) -> String {
    let Some(c) = column.checked_sub(1).and_then(|i| index.sort.get(i)) else {
        return format!("sort column {column}");
    };
    let ty = c.column.ty;
    let order = match c.column.direction {
        Direction::Asc => "asc",
        Direction::Desc => "desc",
    };
    let nulls = match c.column.nulls {
        Nulls::First => "first",
        Nulls::Last => "last",
    };
    format!("sort column {column} ({}, {ty} {order} nulls {nulls})", c.value)
}

/// The flag that carries a range condition, and its value(s) as given.
fn range_flag(args: &QueryArgs) -> Option<(Op, Vec<&str>)> {
    fn one(op: Op, v: &Option<String>) -> Option<(Op, Vec<&str>)> {
        v.as_deref().map(|v| (op, vec![v]))
    }
    one(Op::Lt, &args.lt)
        .or_else(|| one(Op::Le, &args.le))
        .or_else(|| one(Op::Gt, &args.gt))
        .or_else(|| one(Op::Ge, &args.ge))
        .or_else(|| {
            args.between
                .as_ref()
                .map(|v| (Op::Between, v.iter().map(String::as_str).collect()))
        })
        .or_else(|| one(Op::Begins, &args.begins))
}

fn columns_list(index: &IndexConfig) -> String {
    index
        .sort
        .iter()
        .map(|c| c.value.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The flags' values, typed by the sort columns they apply to.
fn conditions(args: &QueryArgs, index: &IndexConfig) -> Result<Conditions, QueryArgsError> {
    let columns = index.sort.len();
    if args.eq.len() > columns {
        return Err(QueryArgsError::TooManyEq {
            count: args.eq.len(),
            index: index.name.clone(),
            columns,
            list: columns_list(index),
        });
    }
    // The value `text` of `--op` on sort column `number` (from 1), refused.
    let refused = |op: Op, text: &str, number: usize, source: literal::LiteralError| QueryArgsError::Value {
        op,
        text: text.to_owned(),
        column: column_label(index, number),
        source,
    };
    let mut equal = Vec::new();
    // No more --eq values than sort columns (checked above): each has its column.
    for (i, (text, sort)) in args.eq.iter().zip(&index.sort).enumerate() {
        let value = literal::value(text, &sort.column).map_err(|e| refused(Op::Eq, text, i + 1, e))?;
        equal.push(value);
    }
    let Some((op, texts)) = range_flag(args) else {
        return Ok(Conditions { equal, range: None });
    };
    let j = args.eq.len();
    let Some(column) = index.sort.get(j).map(|c| c.column) else {
        return Err(QueryArgsError::NoColumnLeft {
            op,
            eq: j,
            index: index.name.clone(),
            columns,
            list: columns_list(index),
        });
    };
    let typed = |text: &str| -> Result<SortValue, QueryArgsError> {
        literal::value(text, &column).map_err(|e| refused(op, text, j + 1, e))
    };
    let first = texts.first().copied().unwrap_or_default();
    let range = match op {
        Op::Lt => ColumnCondition::Lt(typed(first)?),
        Op::Le => ColumnCondition::Le(typed(first)?),
        Op::Gt => ColumnCondition::Gt(typed(first)?),
        Op::Ge => ColumnCondition::Ge(typed(first)?),
        Op::Between => {
            let second = texts.get(1).copied().unwrap_or_default();
            ColumnCondition::Between(typed(first)?, typed(second)?)
        }
        Op::Begins | Op::Eq => {
            ColumnCondition::BeginsWith(literal::prefix(first).map_err(|e| refused(Op::Begins, first, j + 1, e))?)
        }
    };
    Ok(Conditions {
        equal,
        range: Some(range),
    })
}

/// A refused plan, worded with the flag, its value(s) and the column.
fn refusal(args: &QueryArgs, index: &IndexConfig, e: &QueryError) -> String {
    let QueryError::Condition(range) = e else {
        let shown: String = args.partition.chars().take(40).collect();
        let more = if shown.len() < args.partition.len() { "…" } else { "" };
        return format!("--partition `{shown}{more}`: {e}");
    };
    let column = range.column().map(|c| column_label(index, c));
    let flag = match range.op() {
        Some(Op::Eq) => {
            let text = range
                .column()
                .and_then(|c| c.checked_sub(1))
                .and_then(|i| args.eq.get(i));
            match text {
                Some(text) => format!("--eq `{text}`"),
                None => "--eq".to_owned(),
            }
        }
        _ => match range_flag(args) {
            Some((op, texts)) => format!("--{op} `{}`", texts.join("` `")),
            None => "the conditions".to_owned(),
        },
    };
    // The library's message names the comparison and the column by number;
    // say it again with the column's name, and the reason at its root.
    let reason = match range {
        RangeError::Value { source, .. } => source.to_string(),
        RangeError::NullBound { .. } => {
            "a range bound cannot be null (a range never matches nulls; select them with --eq null)".to_owned()
        }
        RangeError::NotAString { ty, .. } => format!("the column is {ty}; --begins takes S and ANY columns"),
        RangeError::MixedTypes { low, high, .. } => {
            format!("one end is {low}, the other {high}; both must be of one type")
        }
        RangeError::TooLong { bytes, .. } => format!(
            "the bound is {bytes} bytes, over the {}-byte limit of a sort key",
            model::sortkey::MAX_KEY_BYTES
        ),
        other => other.to_string(),
    };
    match column {
        Some(column) => format!("{flag}: {column}: {reason}"),
        None => format!("{flag}: {reason}"),
    }
}

#[cfg(test)]
mod tests;
