//! `streamdex query` as typed: flags, values and every refusal, which must
//! name the flag, the value and the column, and exit 2 before any request.
//! (Against DynamoDB: `tests/tests/e2e/query.rs`, on the moto server.)

use clap::{Parser, Subcommand};
use model::config::EXAMPLE_CONFIG;

use super::*;

#[derive(Debug, Parser)]
struct Cli {
    #[command(subcommand)]
    command: Top,
}

#[derive(Debug, Subcommand)]
enum Top {
    Query(QueryArgs),
}

/// [`super::conditions`] with its error as the message it shows.
fn conditions(args: &QueryArgs, index: &IndexConfig) -> Result<Conditions, String> {
    super::conditions(args, index).map_err(|e| e.to_string())
}

fn parse(argv: &[&str]) -> Result<QueryArgs, clap::Error> {
    Cli::try_parse_from(["streamdex", "query"].into_iter().chain(argv.iter().copied())).map(|cli| {
        let Top::Query(args) = cli.command;
        args
    })
}

/// The example config with a second index of every column type, in a file.
fn config_file() -> tempfile::NamedTempFile {
    let text = format!(
        r#"{EXAMPLE_CONFIG}
[[index]]
name = "typed"
source = {{ table = "issues" }}
table = "TypedIndex"
partition = "{{state}}"
sort = [
  {{ value = "name", type = "s", order = "desc" }},
  {{ value = "done", type = "bool" }},
  {{ value = "due", type = "date" }},
  {{ value = "blob", type = "b" }},
]
shards = 4
"#
    );
    let mut file = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
    file
}

/// Runs with `argv` after `streamdex query CONFIG`; returns (code, stdout, stderr).
fn run_args(argv: &[&str]) -> (u8, String, String) {
    let file = config_file();
    let path = file.path().display().to_string();
    let mut full = vec![path.as_str()];
    full.extend_from_slice(argv);
    let args = parse(&full).unwrap_or_else(|e| panic!("{full:?}: {e}"));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run_with(&args, &mut out, &mut err);
    (code, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

/// A refusal: exit 2, nothing on stdout, one line on stderr.
fn refused(argv: &[&str]) -> String {
    let (code, out, err) = run_args(argv);
    assert_eq!((code, out.as_str()), (exit::BAD_INPUT, ""), "{argv:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    err.trim_end().to_owned()
}

#[test]
fn flags_parse_with_negative_values_and_json_values() {
    let args = parse(&[
        "c.toml",
        "issue-attrib",
        "--partition",
        "prio",
        "--eq",
        "-1",
        "--between",
        "-5",
        "{\"N\":\"7\"}",
        "--desc",
        "--limit",
        "3",
        "--output",
        "json",
    ])
    .unwrap();
    assert_eq!(args.eq, ["-1"]);
    assert_eq!(
        args.between.as_deref(),
        Some(&["-5".to_owned(), "{\"N\":\"7\"}".to_owned()][..])
    );
    assert!(args.desc);
    assert_eq!((args.limit, args.output), (Some(3), Output::Json));
}

#[test]
fn usage_errors_are_clap_errors() {
    // Two range conditions, a zero limit, a missing partition, one value for --between.
    for argv in [
        &["c", "i", "--partition", "p", "--lt", "1", "--gt", "0"][..],
        &["c", "i", "--partition", "p", "--limit", "0"],
        &["c", "i"],
        &["c", "i", "--partition", "p", "--between", "1"],
        &["c", "i", "--partition", "p", "--output", "yaml"],
    ] {
        let e = parse(argv).expect_err(&format!("{argv:?}"));
        assert_eq!(e.exit_code(), 2, "{argv:?}");
    }
}

#[test]
fn conditions_are_typed_by_their_columns() {
    let config = model::config::parse(EXAMPLE_CONFIG, "example").unwrap();
    let index = config.index("issue-attrib").unwrap();
    let args = parse(&["c", "issue-attrib", "--partition", "p", "--eq", "42", "--le", "1E+1"]).unwrap();
    assert_eq!(
        conditions(&args, index),
        Ok(Conditions {
            equal: vec![SortValue::N("42".into())],
            range: Some(ColumnCondition::Le(SortValue::N("1E+1".into()))),
        })
    );
    let args = parse(&["c", "issue-attrib", "--partition", "p", "--begins", "4"]).unwrap();
    assert_eq!(
        conditions(&args, index).map(|c| c.range),
        Ok(Some(ColumnCondition::BeginsWith("4".into())))
    );
    let args = parse(&[
        "c",
        "issue-attrib",
        "--partition",
        "p",
        "--eq",
        "{\"S\":\"42\"}",
        "--eq",
        "null",
    ])
    .unwrap();
    assert_eq!(
        conditions(&args, index).map(|c| c.equal),
        Ok(vec![SortValue::S("42".into()), SortValue::Null])
    );
}

#[test]
fn refusals_name_the_flag_the_value_and_the_column() {
    let p = ["--partition", "prio"];
    let with = |rest: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["issue-attrib"];
        v.extend_from_slice(&p);
        v.extend_from_slice(rest);
        v
    };
    assert_eq!(
        refused(&["nope", "--partition", "p"]),
        "streamdex query: unknown index `nope` (the config's indexes: issue-attrib, typed)"
    );
    assert_eq!(
        refused(&with(&["--eq", "a", "--lt", "x"])),
        "streamdex query: --lt `x`: sort column 2 ({num}, N asc nulls last): not a number: `x`"
    );
    assert_eq!(
        refused(&with(&["--eq", "a", "--eq", "1", "--eq", "2"])),
        "streamdex query: 3 --eq values, but index `issue-attrib` has 2 sort column(s) ({entry.value}, {num})"
    );
    assert_eq!(
        refused(&with(&["--eq", "a", "--eq", "1", "--gt", "2"])),
        "streamdex query: --gt: no sort column is left after the 2 --eq value(s): index `issue-attrib` has 2 ({entry.value}, {num})"
    );
    assert_eq!(
        refused(&with(&["--eq", "a", "--begins", "x"])),
        "streamdex query: --begins `x`: sort column 2 ({num}, N asc nulls last): the column is N; --begins takes S and ANY columns"
    );
    assert_eq!(
        refused(&with(&["--between", "1", "a"])),
        "streamdex query: --between `1` `a`: sort column 1 ({entry.value}, ANY asc nulls first): one end is N, the other S; both must be of one type"
    );
    assert_eq!(
        refused(&with(&["--ge", "null"])),
        "streamdex query: --ge `null`: sort column 1 ({entry.value}, ANY asc nulls first): a range bound cannot be null (a range never matches nulls; select them with --eq null)"
    );
    assert_eq!(
        refused(&with(&["--eq", "a", "--eq", "1.5E+300"])),
        "streamdex query: --eq `1.5E+300`: sort column 2 ({num}, N asc nulls last): number is out of range (exponent 300 is outside -130..125; magnitudes run from 1E-130 to 9.99…E+125): `1.5E+300`"
    );
    assert_eq!(
        refused(&["typed", "--partition", "open", "--eq", "a", "--eq", "maybe"]),
        "streamdex query: --eq `maybe`: sort column 2 ({done}, BOOL asc nulls first): not a BOOL: expected true or false"
    );
    assert_eq!(
        refused(&["typed", "--partition", "open", "--eq", "a", "--eq", "true", "--gt", "2024-02-30"]),
        "streamdex query: --gt `2024-02-30`: sort column 3 ({due}, DATE asc nulls first): not a DATE (YYYY-MM-DD): `2024-02-30`: day 30 does not exist in 2024-02"
    );
    assert_eq!(
        refused(&["typed", "--partition", "", "--eq", "a"]),
        "streamdex query: --partition ``: the partition value is empty"
    );
    let long = "p".repeat(2047);
    let e = refused(&["typed", "--partition", &long]);
    assert!(e.contains("is 2049 bytes, over DynamoDB's 2048-byte limit"), "{e}");
    assert!(e.len() < 200, "the value is cut short: {e}");
}

#[test]
fn a_bad_config_is_refused_with_its_line() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut file, b"[table.things]\npartition_key = \"id\"\n[[index]]\nname = \"i\"\nsource = { table = \"things\" }\ntable = \"Ix1\"\npartition = \"{a}\"\nshards = 1000\n").unwrap();
    let path = file.path().display().to_string();
    let args = parse(&[&path, "i", "--partition", "p"]).unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert_eq!(run_with(&args, &mut out, &mut err), exit::BAD_INPUT);
    let err = String::from_utf8(err).unwrap();
    assert!(
        err.contains(":8:10: [[index]] \"i\" shards: 1000 is out of range (1..=256)"),
        "{err}"
    );
}

#[test]
fn help_explains_with_examples() {
    let e = Cli::try_parse_from(["streamdex", "query", "--help"]).unwrap_err();
    let help = e.to_string();
    for needle in [
        "--between <LOW> <HIGH>",
        "--begins <PREFIX>",
        "never matches NULL",
        "Examples",
        "--eq high --ge 10",
    ] {
        assert!(help.contains(needle), "{needle}: {help}");
    }
}
