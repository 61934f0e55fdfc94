use std::io::{BufRead, Write};

use super::lines::{read_until_newline, READ_AHEAD_RECORDS};
use super::*;

fn file(text: &[u8]) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("a temporary file");
    file.write_all(text).expect("write it");
    file
}

fn record(seq: u32) -> String {
    format!(
        r#"{{"eventName":"INSERT","dynamodb":{{"Keys":{{"id":{{"S":"a{seq}"}}}},"NewImage":{{"id":{{"S":"a{seq}"}}}},"SequenceNumber":"{seq}","StreamViewType":"NEW_AND_OLD_IMAGES"}}}}"#
    )
}

/// Every batch's sequence numbers, as read.
fn batches(path: &Path, size: usize) -> Result<Vec<Vec<String>>, SourceError> {
    let mut out = Vec::new();
    each_batch(
        path,
        size,
        &model::config::parse(model::config::EXAMPLE_CONFIG, "example").expect("example"),
        &|_| {},
        |batch, _, _| {
            out.push(
                batch
                    .iter()
                    .map(|r| r.sequence_number.clone().unwrap_or_default())
                    .collect(),
            );
            ControlFlow::Continue(())
        },
    )?;
    Ok(out)
}

/// The records handed over before the file failed to parse, and why it did.
fn seen_before_error(path: &Path, size: usize) -> (usize, ParseError) {
    let mut seen = 0;
    let error = each_batch(
        path,
        size,
        &model::config::parse(model::config::EXAMPLE_CONFIG, "example").expect("example"),
        &|_| {},
        |batch, _, _| {
            seen += batch.len();
            ControlFlow::Continue(())
        },
    )
    .unwrap_err();
    match error {
        SourceError::Parse { error, .. } => (seen, error),
        other => panic!("{other}"),
    }
}

#[test]
fn json_lines_come_in_batches_of_the_size_asked_with_blank_lines_skipped() {
    let mut text = Vec::new();
    for seq in 1..=7 {
        writeln!(text, "{}", record(seq)).unwrap();
        if seq == 3 {
            writeln!(text, "   ").unwrap();
        }
    }
    let path = file(&text);
    let got = batches(path.path(), 3).unwrap();
    assert_eq!(got, vec![vec!["1", "2", "3"], vec!["4", "5", "6"], vec!["7"]]);
}

#[test]
fn the_same_records_as_parse_any_whatever_the_batch_size() {
    let text = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/example-history.jsonl"
    ))
    .expect("the example history fixture");
    let whole: Vec<String> = parse_any(&text)
        .unwrap()
        .iter()
        .map(|r| r.sequence_number.clone().unwrap_or_default())
        .collect();
    let path = file(&text);
    for size in [1, 7, 100, 10_000] {
        let got: Vec<String> = batches(path.path(), size).unwrap().concat();
        assert_eq!(got, whole, "batch size {size}");
    }
}

#[test]
fn many_parts_come_in_order_and_a_bad_line_in_a_later_part_stops_there() {
    let count = 3 * READ_AHEAD_RECORDS as u32 + 17;
    let mut text: String = (1..=count).map(|seq| format!("{}\n", record(seq))).collect();
    let path = file(text.as_bytes());
    let all: Vec<String> = (1..=count).map(|seq| seq.to_string()).collect();
    for size in [1, 7, 100, 1_000] {
        let got: Vec<String> = batches(path.path(), size).unwrap().concat();
        assert_eq!(got, all, "batch size {size}");
    }
    text.push_str("{oops\n");
    let path = file(text.as_bytes());
    let (seen, error) = seen_before_error(path.path(), 100);
    assert_eq!(error.line, count as usize + 1);
    assert_eq!(
        seen,
        count as usize / 100 * 100,
        "the whole batches before the bad line"
    );
}

#[test]
fn a_lambda_event_is_read_whole_and_cut_into_batches() {
    let records: Vec<String> = (1..=5).map(record).collect();
    let text = format!("{{\"Records\": [{}]}}", records.join(",\n"));
    let path = file(text.as_bytes());
    assert_eq!(
        batches(path.path(), 2).unwrap(),
        vec![vec!["1", "2"], vec!["3", "4"], vec!["5"]]
    );
}

#[test]
fn a_bad_line_names_its_line_in_the_file_not_in_its_batch() {
    let text = format!("{}\n{}\n{}\n{{oops\n", record(1), record(2), record(3));
    let path = file(text.as_bytes());
    let (seen, error) = seen_before_error(path.path(), 2);
    assert_eq!((error.line, error.column), (4, 2));
    assert_eq!(seen, 2, "the first batch was handed over before the bad line");
}

#[test]
fn a_stop_is_the_last_batch_handed_over_and_bytes_count_up_to_each_batch() {
    let text: String = (1..=7).map(|seq| format!("{}\n", record(seq))).collect();
    let line = text.len() as u64 / 7;
    let path = file(text.as_bytes());
    let mut seen = Vec::new();
    each_batch(
        path.path(),
        3,
        &model::config::parse(model::config::EXAMPLE_CONFIG, "example").expect("example"),
        &|_| {},
        |batch, _, bytes| {
            seen.push((batch.len(), bytes));
            if seen.len() == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        },
    )
    .unwrap();
    assert_eq!(seen, vec![(3, 3 * line), (3, 6 * line)]);
}

#[test]
fn a_byte_order_mark_is_skipped_and_counted_in_columns() {
    let text = format!("\u{feff}{}\n", record(1));
    let path = file(text.as_bytes());
    assert_eq!(batches(path.path(), 10).unwrap(), vec![vec!["1"]]);
    let path = file("\u{feff}{oops\n".as_bytes());
    match batches(path.path(), 10).unwrap_err() {
        SourceError::Parse { error, .. } => assert_eq!((error.line, error.column), (1, 5)),
        other => panic!("{other}"),
    }
}

#[test]
fn an_empty_file_has_no_batches_and_a_missing_one_is_a_read_error() {
    let path = file(b"");
    assert!(batches(path.path(), 10).unwrap().is_empty());
    let missing = std::env::temp_dir().join("streamdex-source-no-such-file.jsonl");
    assert!(matches!(batches(&missing, 10), Err(SourceError::Read { .. })));
}

proptest::proptest! {
    /// Line by line, the memchr reader reads what std's `read_until` reads,
    /// over buffers small enough that lines cross their refills.
    #[test]
    fn lines_are_read_as_read_until_reads_them(
        text in proptest::collection::vec(proptest::sample::select(b"ab\n{}\" \r".to_vec()), 0..300),
        capacity in 1usize..40,
    ) {
        let mut ours = std::io::BufReader::with_capacity(capacity, text.as_slice());
        let mut std = std::io::BufReader::with_capacity(capacity, text.as_slice());
        loop {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let read = read_until_newline(&mut ours, &mut a).expect("a slice reads");
            let expected = std.read_until(b'\n', &mut b).expect("a slice reads");
            proptest::prop_assert_eq!((read, &a), (expected, &b));
            if read == 0 {
                break;
            }
        }
    }
}

/// The example config with every table read from Kinesis.
fn kinesis_config() -> model::Config {
    model::config::parse(&crate::cli::config::kinesis_example(), "kinesis example").expect("config")
}

fn kinesis_fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../model/tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn kinesis_events_and_lines_of_changes_are_read_unwrapped() {
    let config = kinesis_config();
    let read = |text: &[u8]| {
        let path = file(text);
        let mut out: Vec<(Option<String>, Result<String, String>)> = Vec::new();
        each_batch(path.path(), 4, &config, &|_| {}, |batch, _, _| {
            out.extend(batch.iter().map(|r| {
                let table = r.record.as_ref().map(|c| c.table.as_deref().unwrap_or("?").to_owned());
                (r.sequence_number.clone(), table.map_err(|e| e.to_string()))
            }));
            ControlFlow::Continue(())
        })
        .expect("read");
        out
    };
    let event = read(&kinesis_fixture("kinesis-event.json"));
    assert_eq!(event.len(), 13);
    assert!(event
        .iter()
        .all(|(seq, table)| seq.as_deref().is_some_and(|s| s.len() == 56) && table.is_ok()));

    let mut lines = kinesis_fixture("kinesis-changes.jsonl");
    lines.extend_from_slice(
        b"\n{\"tableName\":\"records\",\"eventName\":\"INSERT\",\"dynamodb\":{\"ApproximateCreationDateTime\":1763719200}}\n",
    );
    let lines = read(&lines);
    assert_eq!(lines.len(), 14, "the blank line is skipped");
    assert!(lines[..13]
        .iter()
        .enumerate()
        .all(|(i, (seq, table))| { seq.as_deref() == Some((i + 1).to_string().as_str()) && table.is_ok() }));
    let (seq, bad) = &lines[13];
    assert_eq!(seq.as_deref(), Some("15"), "named by its line");
    assert!(
        bad.as_ref()
            .is_err_and(|e| e.contains("record 15") && e.contains("precision = \"millisecond\"")),
        "{bad:?}"
    );
}
