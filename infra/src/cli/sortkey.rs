//! `streamdex sortkey ...`: encode tuples into CSS1 composite sort strings and
//! decode keys back into tuples (format: `docs/css1.md`).
//!
//! - `streamdex sortkey encode --schema SCHEMA [--escape] [TUPLE]...`: each
//!   TUPLE is a DynamoDB JSON array (`[{"N":"4.2"},{"S":"ab"}]`); prints one
//!   key per line. Without TUPLE arguments, reads one tuple per line from stdin.
//! - `streamdex sortkey decode --schema SCHEMA [--escaped] [KEY]...`: prints
//!   one DynamoDB JSON array per key. Without KEY arguments, reads one key per
//!   line from stdin.
//!
//! A bad tuple or key prints `line N: REASON` (or `argument N: REASON`) to
//! stderr; the others are still processed, and the exit status is 2. Exit
//! status 1 is for I/O failures.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use model::sortkey::{self, Schema, SortKeyError};
use model::Value;

/// Exit status: every input was good.
pub const EXIT_OK: u8 = 0;
/// Exit status: reading or writing failed.
pub const EXIT_IO: u8 = super::exit::FAILURE;
/// Exit status: at least one tuple or key was bad (the others were still processed).
pub const EXIT_BAD_INPUT: u8 = 2;

const SCHEMA_HELP: &str = "The key's columns, comma-separated: TYPE[:asc|:desc][:nulls-first|:nulls-last]. \
TYPE is S, N, B, BOOL, DATE, TIMESTAMP or ANY (case-insensitive); the direction defaults to asc; \
nulls default to first for asc and last for desc. Example: 'N:asc,S:desc:nulls-last'";

const ENCODE_EXAMPLES: &str = r#"Keys can contain the control characters U+0001 and U+0002 (ascending
strings use them as terminator and escape). They are printed raw by default;
--escape prints each key as a JSON string literal instead ("Sa\u0001...").
A raw key whose strings contain a line break cannot be read back line by
line: use --escape / --escaped for those.

Examples:
  $ streamdex sortkey encode --schema 'N:asc,S:desc:nulls-last' '[{"N":"4.2"},{"S":"ab"}]'
  >13042!LQSh~
  $ streamdex sortkey encode --schema S,N --escape '[{"S":"a"},{"N":"-1"}]' '[{"S":"ab"},null]'
  "Sa\u0001<1258~"
  "Sab\u0001!"
  $ printf '%s\n' '[{"N":"1E+2"}]' '[{"NULL":true}]' | streamdex sortkey encode --schema N:desc
  anlmn~
  ~

A tuple is a JSON array with one DynamoDB JSON value per column; null (or
{"NULL":true}) is a missing value. ANY columns take S, N, B, BOOL and NULL;
DATE and TIMESTAMP columns take S values holding YYYY-MM-DD or an RFC 3339
timestamp with an offset."#;

const DECODE_EXAMPLES: &str = r#"Keys are read raw, one per line, unless --escaped is given: then each key
is a JSON string literal, as `encode --escape` prints it. Raw keys with
control characters can be passed on the command line with the shell's
$'...' quoting.

Examples:
  $ streamdex sortkey decode --schema N:desc 'anlmn~'
  [{"N":"100"}]
  $ streamdex sortkey decode --schema S,N --escaped '"Sa\u0001<1258~"'
  [{"S":"a"},{"N":"-1"}]
  $ streamdex sortkey decode --schema S,N $'Sab\x01!'
  [{"S":"ab"},{"NULL":true}]
  $ streamdex sortkey encode --schema any,n --escape < tuples | streamdex sortkey decode --schema any,n --escaped

Values print as DynamoDB JSON: numbers in canonical form, DATE and
TIMESTAMP values as S, nulls as {"NULL":true}."#;

/// `streamdex sortkey`: CSS1 composite sort strings.
#[derive(Debug, Args)]
pub struct SortkeyArgs {
    #[command(subcommand)]
    pub command: SortkeyCommand,
}

#[derive(Debug, Subcommand)]
pub enum SortkeyCommand {
    /// Encode tuples (DynamoDB JSON arrays) into keys, one key per line.
    #[command(after_help = ENCODE_EXAMPLES)]
    Encode {
        #[arg(long, short, help = SCHEMA_HELP)]
        schema: Schema,
        /// Print each key as a JSON string literal (control characters as \u0001).
        #[arg(long)]
        escape: bool,
        /// Tuples as DynamoDB JSON arrays, e.g. '[{"N":"4.2"},{"S":"ab"}]'. None: read one per line from stdin.
        tuples: Vec<String>,
    },
    /// Decode keys into tuples, one DynamoDB JSON array per line.
    #[command(after_help = DECODE_EXAMPLES)]
    Decode {
        #[arg(long, short, help = SCHEMA_HELP)]
        schema: Schema,
        /// Each key is a JSON string literal (as `encode --escape` prints it).
        #[arg(long)]
        escaped: bool,
        /// Keys. None: read one per line from stdin.
        keys: Vec<String>,
    },
}

/// Runs `streamdex sortkey ...` on the process's stdin, stdout and stderr.
pub fn run_stdio(args: &SortkeyArgs) -> ExitCode {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let mut err = stderr.lock();
    let result = run(args, &mut stdin.lock(), &mut stdout.lock(), &mut err);
    // A closed pipe (`... | head`) ends the run quietly; another error is
    // an I/O failure (`EXIT_IO`, which is `exit::FAILURE`).
    ExitCode::from(super::exit::of_result(result, "error", &mut err))
}

/// Runs `streamdex sortkey ...`: reads `stdin` only when no values are given
/// as arguments. Returns the exit status ([`EXIT_OK`] or [`EXIT_BAD_INPUT`]);
/// an error is an I/O failure.
pub fn run(
    args: &SortkeyArgs,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> anyhow::Result<u8> {
    let mut bad = false;
    match &args.command {
        SortkeyCommand::Encode { schema, escape, tuples } => {
            let one = |text: &str| encode_line(schema, *escape, text);
            for_each_input(tuples, stdin, stdout, stderr, &mut bad, one)?;
        }
        SortkeyCommand::Decode { schema, escaped, keys } => {
            let one = |text: &str| decode_line(schema, *escaped, text);
            for_each_input(keys, stdin, stdout, stderr, &mut bad, one)?;
        }
    }
    stdout.flush().context("writing stdout")?;
    Ok(if bad { EXIT_BAD_INPUT } else { EXIT_OK })
}

/// Why one tuple or key (an argument or a line of stdin) was not converted.
#[derive(Debug, thiserror::Error)]
pub enum SortkeyInputError {
    #[error("not valid UTF-8 ({0})")]
    NotUtf8(#[source] std::str::Utf8Error),
    #[error("not a DynamoDB JSON array (e.g. [{{\"N\":\"4.2\"}},{{\"S\":\"ab\"}}]): {0}")]
    NotTuple(#[source] serde_json::Error),
    #[error("not a JSON string literal (e.g. \"Sa\\u0001=\"): {0}")]
    NotStringLiteral(#[source] serde_json::Error),
    /// The tuple does not fit the schema, or the key is not one of it.
    #[error(transparent)]
    Key(#[from] SortKeyError),
    /// The key or tuple could not be written as JSON.
    #[error(transparent)]
    Json(serde_json::Error),
}

/// Applies `one` to each argument, or to each non-blank line of `stdin` when
/// there are none; prints results to `stdout` and failures (with their
/// argument or line number) to `stderr`.
fn for_each_input(
    arguments: &[String],
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
    bad: &mut bool,
    one: impl Fn(&str) -> Result<String, SortkeyInputError>,
) -> anyhow::Result<()> {
    let mut emit = |place: String, result: Result<String, SortkeyInputError>| -> anyhow::Result<()> {
        match result {
            Ok(line) => writeln!(stdout, "{line}").context("writing stdout"),
            Err(reason) => {
                *bad = true;
                writeln!(stderr, "{place}: {reason}").context("writing stderr")
            }
        }
    };
    if !arguments.is_empty() {
        for (i, argument) in arguments.iter().enumerate() {
            emit(format!("argument {}", i + 1), one(argument))?;
        }
        return Ok(());
    }
    let mut buf = Vec::new();
    for number in 1.. {
        buf.clear();
        if stdin.read_until(b'\n', &mut buf).context("reading stdin")? == 0 {
            break;
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let result = match std::str::from_utf8(line) {
            Ok(text) if text.trim().is_empty() => continue,
            Ok(text) => one(text),
            Err(e) => Err(SortkeyInputError::NotUtf8(e)),
        };
        emit(format!("line {number}"), result)?;
    }
    Ok(())
}

/// One tuple (a DynamoDB JSON array) → its key, raw or as a JSON string literal.
fn encode_line(schema: &Schema, escape: bool, text: &str) -> Result<String, SortkeyInputError> {
    let values: Vec<Option<Value>> = serde_json::from_str(text.trim()).map_err(SortkeyInputError::NotTuple)?;
    let refs: Vec<Option<&Value>> = values.iter().map(Option::as_ref).collect();
    let key = sortkey::encode(schema, &refs)?;
    if escape {
        serde_json::to_string(&key).map_err(SortkeyInputError::Json)
    } else {
        Ok(key)
    }
}

/// One key (raw, or a JSON string literal) → its tuple as a DynamoDB JSON array.
fn decode_line(schema: &Schema, escaped: bool, text: &str) -> Result<String, SortkeyInputError> {
    let unescaped;
    let key = if escaped {
        unescaped = serde_json::from_str::<String>(text.trim()).map_err(SortkeyInputError::NotStringLiteral)?;
        unescaped.as_str()
    } else {
        text
    };
    let values = sortkey::decode(schema, key)?;
    let values: Vec<Value> = values.iter().map(|v| v.to_value()).collect();
    serde_json::to_string(&values).map_err(SortkeyInputError::Json)
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
        Sortkey(SortkeyArgs),
    }

    fn args(argv: &[&str]) -> SortkeyArgs {
        let cli = Cli::try_parse_from(std::iter::once("streamdex").chain(argv.iter().copied())).unwrap();
        let Top::Sortkey(args) = cli.command;
        args
    }

    /// Runs with `input` on stdin; returns (status, stdout, stderr).
    fn run_with(argv: &[&str], input: &str) -> (u8, String, String) {
        let args = args(argv);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let status = run(&args, &mut input.as_bytes(), &mut out, &mut err).unwrap();
        (status, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
    }

    /// Output into a pipe whose reading end is closed (`... | head` once
    /// `head` has had its line) ends the run quietly, with success.
    #[test]
    fn a_closed_pipe_ends_the_run_quietly() {
        let args = args(&["sortkey", "encode", "--schema", "N"]);
        let (reader, mut writer) = std::io::pipe().unwrap();
        drop(reader);
        let input = "[{\"N\":\"1\"}]\n".repeat(10);
        let mut err = Vec::new();
        let result = run(&args, &mut input.as_bytes(), &mut writer, &mut err);
        assert!(result.is_err(), "the write fails");
        assert_eq!(super::super::exit::of_result(result, "error", &mut err), EXIT_OK);
        assert_eq!(String::from_utf8(err).unwrap(), "");
    }

    #[test]
    fn encodes_arguments() {
        let (status, out, err) = run_with(
            &[
                "sortkey",
                "encode",
                "--schema",
                "N:asc,S:desc:nulls-last",
                r#"[{"N":"4.2"},{"S":"ab"}]"#,
            ],
            "",
        );
        assert_eq!((status, out.as_str(), err.as_str()), (0, ">13042!LQSh~\n", ""));
    }

    #[test]
    fn encodes_stdin_escaped_and_reports_bad_lines() {
        let input = "[{\"S\":\"a\"},{\"N\":\"-1\"}]\n\n[{\"S\":\"ab\"},null]\r\n[{\"S\":\"a\"},{\"S\":\"x\"}]\nnope\n[{\"S\":\"c\"},{\"NULL\":true}]";
        let (status, out, err) = run_with(&["sortkey", "encode", "-s", "s,n", "--escape"], input);
        assert_eq!(status, EXIT_BAD_INPUT);
        assert_eq!(out, "\"Sa\\u0001<1258~\"\n\"Sab\\u0001!\"\n\"Sc\\u0001!\"\n");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 2, "{err}");
        assert_eq!(lines[0], "line 4: column 2: expects N or NULL, got S");
        assert!(
            lines[1].starts_with("line 5: not a DynamoDB JSON array"),
            "{}",
            lines[1]
        );
    }

    #[test]
    fn encodes_raw_control_characters() {
        let (status, out, _) = run_with(&["sortkey", "encode", "--schema", "S", r#"[{"S":"a\u0000"}]"#], "");
        assert_eq!(status, 0);
        assert_eq!(out, "Sa\u{2}\u{1}\u{1}\n");
    }

    #[test]
    fn encode_errors_name_the_argument() {
        let (status, out, err) = run_with(
            &[
                "sortkey",
                "encode",
                "--schema",
                "N",
                r#"[{"N":"1"}]"#,
                r#"[{"N":"1E+126"}]"#,
                r#"[{"N":"1"},{"N":"2"}]"#,
            ],
            "",
        );
        assert_eq!(status, EXIT_BAD_INPUT);
        assert_eq!(out, ">1301!\n");
        assert_eq!(
            err,
            "argument 2: column 1: number is out of range (exponent 126 is outside -130..125; magnitudes run from 1E-130 to 9.99…E+125): `1E+126`\n\
             argument 3: schema has 1 column(s) but 2 value(s) were given\n"
        );
    }

    #[test]
    fn decodes_raw_and_escaped() {
        let (status, out, err) = run_with(&["sortkey", "decode", "--schema", "N:desc", "anlmn~", "~"], "");
        assert_eq!(
            (status, out.as_str(), err.as_str()),
            (0, "[{\"N\":\"100\"}]\n[{\"NULL\":true}]\n", "")
        );
        let (status, out, _) = run_with(
            &[
                "sortkey",
                "decode",
                "--schema",
                "S,N",
                "--escaped",
                r#""Sa\u0001<1258~""#,
            ],
            "",
        );
        assert_eq!((status, out.as_str()), (0, "[{\"S\":\"a\"},{\"N\":\"-1\"}]\n"));
        let (status, out, _) = run_with(
            &["sortkey", "decode", "--schema", "S,N"],
            "Sab\u{1}!\nSa\u{2}\u{1}\u{1}<1254~\n",
        );
        assert_eq!(
            (status, out.as_str()),
            (
                0,
                "[{\"S\":\"ab\"},{\"NULL\":true}]\n[{\"S\":\"a\\u0000\"},{\"N\":\"-5\"}]\n"
            )
        );
    }

    #[test]
    fn decode_reports_bad_lines_and_goes_on() {
        let input = "=\n>13040!\n\"=\"\n=x\n>1301!\n";
        let (status, out, err) = run_with(&["sortkey", "decode", "--schema", "N"], input);
        assert_eq!(status, EXIT_BAD_INPUT);
        assert_eq!(out, "[{\"N\":\"0\"}]\n[{\"N\":\"1\"}]\n");
        assert_eq!(
            err,
            "line 2: byte 5 (column 1): the number's digits end with a zero\n\
             line 3: byte 0 (column 1): found '\"' where an N value or the column's null was expected\n\
             line 4: byte 1: trailing characters after the last column\n"
        );
        let (status, _, err) = run_with(&["sortkey", "decode", "--schema", "N", "--escaped"], "=\n");
        assert_eq!(status, EXIT_BAD_INPUT);
        assert!(err.starts_with("line 1: not a JSON string literal"), "{err}");
        let (status, _, err) = run_with(&["sortkey", "decode", "--schema", "N"], "\u{0}\n");
        assert_eq!(status, EXIT_BAD_INPUT);
        assert_eq!(
            err,
            "line 1: byte 0 (column 1): found '\\0' where an N value or the column's null was expected\n"
        );
    }

    #[test]
    fn invalid_utf8_lines_are_bad_input() {
        let args = args(&["sortkey", "decode", "--schema", "N"]);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let status = run(&args, &mut &b"=\n\xff\n"[..], &mut out, &mut err).unwrap();
        assert_eq!(status, EXIT_BAD_INPUT);
        assert_eq!(out, b"[{\"N\":\"0\"}]\n");
        assert!(String::from_utf8(err).unwrap().starts_with("line 2: not valid UTF-8"));
    }

    #[test]
    fn round_trips_through_escape() {
        let tuples = "[{\"S\":\"x\\n\\u0001y\"},{\"N\":\"-0.50\"}]\n[{\"B\":\"AAE=\"},{\"N\":\"12E3\"}]\n[{\"BOOL\":true},null]\n";
        let (status, keys, _) = run_with(&["sortkey", "encode", "--schema", "any,n:desc", "--escape"], tuples);
        assert_eq!(status, 0);
        let (status, out, err) = run_with(&["sortkey", "decode", "--schema", "any,n:desc", "--escaped"], &keys);
        assert_eq!((status, err.as_str()), (0, ""));
        assert_eq!(
            out,
            "[{\"S\":\"x\\n\\u0001y\"},{\"N\":\"-0.5\"}]\n[{\"B\":\"AAE=\"},{\"N\":\"12000\"}]\n[{\"BOOL\":true},{\"NULL\":true}]\n"
        );
    }

    #[test]
    fn bad_schema_is_a_usage_error() {
        let e = Cli::try_parse_from(["streamdex", "sortkey", "encode", "--schema", "N,X", "[]"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("schema column 2 `X`: unknown type `X`"), "{e}");
    }

    #[test]
    fn help_has_examples() {
        let e = Cli::try_parse_from(["streamdex", "sortkey", "encode", "--help"]).unwrap_err();
        let help = e.to_string();
        assert!(help.contains("--escape"), "{help}");
        assert!(help.contains("streamdex sortkey encode --schema"), "{help}");
        let e = Cli::try_parse_from(["streamdex", "sortkey", "decode", "--help"]).unwrap_err();
        assert!(e.to_string().contains("--escaped"));
    }
}
