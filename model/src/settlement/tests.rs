use super::*;
use crate::poison::Cause;

/// A poison whose text is `text`.
fn poison(text: &str) -> Poison {
    Poison::new(None, Cause::Refused(Fault::refused(text)))
}

fn record(position: usize, seq: &str, group: Option<usize>) -> Handled<'static> {
    Handled {
        position,
        sequence_number: Some(seq.to_owned()),
        table: Some("t".into()),
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
        .filter_map(|&i| decision.records[i].poison.as_ref().map(ToString::to_string))
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
    records[3].poison = Some(poison("bad"));
    records[4].poison = Some(poison("bad too"));
    records[1].poison = Some(poison("early"));
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
    records[0].poison = Some(poison("p"));
    records[1].poison = Some(poison("q"));
    let settled = decide(records).quarantine_failed(Fault::transient("queue down"));
    assert_eq!(settled.failed, Some(Failed::From("7".into())));
    assert!(settled.quarantined.is_empty());
    assert_eq!(settled.stopped_groups(), 0, "a quarantine failure stops no group");

    let mut nameless = record(0, "", None);
    nameless.sequence_number = None;
    nameless.poison = Some(poison("unreadable"));
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

mod groups {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;
    use crate::value::{Image, Value};
    use crate::EventKind;

    fn keyed(table: &str, pk: Value) -> ChangeRecord {
        let keys: Image = [("pk".to_owned(), pk)].into_iter().collect();
        ChangeRecord {
            event_id: None,
            kind: EventKind::Insert,
            table: Some(table.into()),
            source_arn: None,
            keys,
            old: None,
            new: None,
            sequence_number: "100".to_owned(),
            created: None,
            size_bytes: None,
            view_type: None,
            ttl_expiry: false,
        }
    }

    #[test]
    fn a_table_name_is_the_records_own_when_it_names_the_table() {
        let config = crate::config::parse(crate::config::EXAMPLE_CONFIG, "example").unwrap();
        let table = &config.tables[0];
        let record = keyed(&table.name, Value::S("a".to_owned()));
        let own = record.table.clone().unwrap();
        assert!(
            std::ptr::eq(table_name(&record, table).as_str(), own.as_str()),
            "shared, not copied"
        );
        let other = keyed("another", Value::S("a".to_owned()));
        assert_eq!(&*table_name(&other, table), table.name.as_str());
        let unnamed = ChangeRecord { table: None, ..record };
        assert_eq!(&*table_name(&unnamed, table), table.name.as_str());
    }

    proptest! {
        /// Groups are numbered in order of first appearance, one per table
        /// and partition key value: equal numbers (`1` and `1.0`) are one
        /// group, an S and an N of the same text are two, and so are the
        /// same key in two tables.
        #[test]
        fn groups_number_table_and_key_in_order_of_appearance(
            records in proptest::collection::vec((0usize..2, 0usize..2, 0u8..6, any::<bool>()), 0..40),
        ) {
            let config = crate::config::parse(crate::config::EXAMPLE_CONFIG, "example").unwrap();
            let mut tables: Vec<TableConfig> = config.tables.iter().take(2).cloned().collect();
            for t in &mut tables {
                t.partition_key = "pk".to_owned();
            }
            let mut groups = Groups::default();
            let mut expected: HashMap<(usize, usize, u8), usize> = HashMap::new();
            for (table, ty, n, padded) in records {
                let text = if padded { format!("{n}.0") } else { n.to_string() };
                let pk = if ty == 0 { Value::N(text) } else { Value::S(n.to_string()) };
                let next = expected.len();
                let want = *expected.entry((table, ty, n)).or_insert(next);
                let got = groups.of(&tables[table], &keyed(&tables[table].name, pk));
                prop_assert_eq!(got, want);
            }
            prop_assert_eq!(groups.len(), expected.len());
        }
    }
}
