use std::panic::AssertUnwindSafe;
use std::sync::mpsc;
use std::time::Duration;

use super::*;
use crate::test_support::example;
use crate::workload::example_batches;
use model::{validate, Planner};

/// What `admit` is handed, record by record: the text, the sequence
/// number, whether it is a record, and its poison verdict.
type Seen = Vec<(String, Option<String>, bool, Option<model::record::Invalid>)>;

fn read(payload: &[u8], reading: Reading) -> (Seen, Result<(), ParseError>) {
    let config = example();
    let planner = Planner::new(&config);
    let mut seen = Vec::new();
    let ended = read_each(payload, reading, |raw, received| {
        let verdict = received
            .record
            .as_ref()
            .ok()
            .and_then(|r| planner.table_of(r).ok())
            .and_then(|table| validate::poison(received, table));
        let text = match raw {
            RawJson::Text(text) => text.to_owned(),
            _ => String::new(),
        };
        seen.push((text, received.sequence_number.clone(), received.record.is_ok(), verdict));
    });
    (seen, ended)
}

/// A payload of `records` example records (many chunks), with poison
/// among them: a record of no known table, one without keys, one whose
/// image disagrees with its keys, one with a key the table does not have.
fn payload(records: usize) -> Vec<u8> {
    let (_, batches) = example_batches(example(), records, records, 11);
    let batch = batches.first().cloned().unwrap_or_default();
    let mut event: serde_json::Value = serde_json::from_slice(&batch).unwrap_or_else(|e| panic!("{e}"));
    let list = event["Records"].as_array_mut().unwrap_or_else(|| panic!("no Records"));
    assert!(list.len() > 3 * CHUNK, "a payload of several chunks: {}", list.len());
    let mut unknown = list[5].clone();
    unknown["eventSourceARN"] = "arn:aws:dynamodb:local:000000000000:table/nowhere/stream/x".into();
    list[5] = unknown;
    list[CHUNK]["dynamodb"]
        .as_object_mut()
        .unwrap_or_else(|| panic!("no dynamodb"))
        .remove("Keys");
    let mut disagreeing = list[2 * CHUNK + 1].clone();
    if let Some(keys) = disagreeing["dynamodb"]["Keys"].as_object_mut() {
        for value in keys.values_mut() {
            *value = serde_json::json!({"S": "someone else"});
        }
    }
    list[2 * CHUNK + 1] = disagreeing;
    // A key attribute the table does not have (the images agree): a record
    // that reads, but is poison.
    let extra = list
        .iter_mut()
        .skip(3 * CHUNK)
        .find(|r| r["dynamodb"]["NewImage"].get("memberRole").is_some())
        .unwrap_or_else(|| panic!("no record with a memberRole"));
    let role = extra["dynamodb"]["NewImage"]["memberRole"].clone();
    extra["dynamodb"]["Keys"]["memberRole"] = role.clone();
    if extra["dynamodb"].get("OldImage").is_some() {
        extra["dynamodb"]["OldImage"]["memberRole"] = role;
    }
    serde_json::to_vec(&event).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn records_read_ahead_are_handed_over_as_records_read_here() {
    let payload = payload(5 * CHUNK);
    let (here, here_ended) = read(&payload, Reading::Here);
    let (ahead, ahead_ended) = read(&payload, Reading::Ahead);
    assert_eq!(here_ended, Ok(()));
    assert_eq!(ahead_ended, Ok(()));
    assert!(here.len() > 3 * CHUNK, "{}", here.len());
    assert_eq!(here.iter().filter(|(_, _, is_record, _)| !is_record).count(), 2);
    assert_eq!(here.iter().filter(|(_, _, _, verdict)| verdict.is_some()).count(), 1);
    assert_eq!(ahead, here);
}

#[test]
fn a_payload_broken_part_way_ends_with_the_same_error_either_way() {
    let mut payload = payload(5 * CHUNK);
    // Cut inside a record well into the payload: the records before it are
    // read, then the payload is not JSON.
    let cut = payload.len() * 2 / 3;
    payload.truncate(cut);
    let (here, here_ended) = read(&payload, Reading::Here);
    let (ahead, ahead_ended) = read(&payload, Reading::Ahead);
    assert!(here_ended.is_err(), "{here_ended:?}");
    assert_eq!(ahead_ended, here_ended);
    // Ahead, the same records up to the last whole chunk before the error
    // (the reader stops at the error, its last chunk unsent).
    assert!(here.len() > CHUNK, "{}", here.len());
    assert_eq!(ahead.len(), here.len() / CHUNK * CHUNK);
    assert_eq!(ahead[..], here[..ahead.len()]);
}

#[test]
fn a_panic_while_admitting_reaches_the_caller_and_the_reader_stops() {
    let payload = payload(5 * CHUNK);
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            read_each(&payload, Reading::Ahead, |_, _| panic!("admitting failed"))
        }));
        let _ = done.send(outcome.is_err());
    });
    let patience = Duration::from_secs(60);
    match finished.recv_timeout(patience) {
        Ok(panicked) => assert!(panicked, "the panic did not reach the caller"),
        Err(_) => panic!("reading ahead did not end within {patience:?} after the admitting side panicked"),
    }
}
