use super::*;

fn record(position: usize, seq: &str, group: Option<usize>) -> Handled<'static> {
    Handled {
        position,
        sequence_number: Some(seq.to_owned()),
        table: Some("t".to_owned()),
        group,
        raw: RawJson::Text(Box::leak(format!("{{\"n\":{position}}}").into_boxed_str())),
        poison: None,
        unfinished: None,
    }
}

fn poison_of(decision: &Decision<'_>) -> Vec<String> {
    decision
        .quarantine
        .iter()
        .filter_map(|&i| decision.records[i].poison.clone())
        .collect()
}

#[test]
fn a_group_stops_at_its_first_unfinished_record() {
    let mut records = vec![
        record(0, "100", Some(0)),
        record(1, "200", Some(1)),
        record(2, "300", Some(0)),
        record(3, "400", Some(0)),
        record(4, "500", Some(1)),
    ];
    records[2].unfinished = Some(Fault::transient("throttled"));
    // Poison after the stop in its group waits; poison in the other group
    // but after the batch's failure waits too; before it, it goes.
    records[3].poison = Some("bad".to_owned());
    records[4].poison = Some("bad too".to_owned());
    records[1].poison = Some("early".to_owned());
    let decision = decide(records);
    assert_eq!(poison_of(&decision), ["early"]);
    let settled = decision.quarantined();
    assert_eq!(settled.failed, Some(Failed::From("300".into())));
    assert_eq!(settled.stopped_groups(), 1);
    assert_eq!(settled.quarantined.len(), 1);
    assert_eq!(settled.quarantine_requests, 1);
}

#[test]
fn the_lowest_failure_wins_as_a_number() {
    let mut records = vec![record(0, "99", Some(0)), record(1, "100", Some(1))];
    records[0].position = 5;
    records[0].unfinished = Some(Fault::transient("x"));
    records[1].unfinished = Some(Fault::deployment("y"));
    let settled = decide(records).quarantined();
    assert_eq!(settled.failed, Some(Failed::From("99".into())));
    assert_eq!(settled.failures.len(), 2);
    assert_eq!(settled.quarantine_requests, 0);
}

#[test]
fn a_failed_quarantine_fails_its_records_or_the_whole_batch() {
    let mut records = vec![record(0, "7", None), record(1, "8", Some(0))];
    records[0].poison = Some("p".to_owned());
    records[1].poison = Some("q".to_owned());
    let settled = decide(records).quarantine_failed(Fault::transient("queue down"));
    assert_eq!(settled.failed, Some(Failed::From("7".into())));
    assert!(settled.quarantined.is_empty());
    assert_eq!(settled.stopped_groups(), 0, "a quarantine failure stops no group");

    let mut nameless = record(0, "", None);
    nameless.sequence_number = None;
    nameless.poison = Some("unreadable".to_owned());
    let settled = decide(vec![nameless]).quarantine_failed(Fault::transient("queue down"));
    assert_eq!(settled.failed, Some(Failed::WholeBatch), "the whole batch fails");
    assert_eq!(
        settled.response().to_json(),
        r#"{"batchItemFailures":[{"itemIdentifier":""}]}"#
    );
}

#[test]
fn the_response_names_the_failure_or_nothing() {
    assert_eq!(BatchResponse::new(None).to_json(), r#"{"batchItemFailures":[]}"#);
    assert_eq!(
        BatchResponse::new(Some(&Failed::From("42".into()))).to_json(),
        r#"{"batchItemFailures":[{"itemIdentifier":"42"}]}"#
    );
}
