//! Classification against the example config's routes, with records shaped
//! like the Lambda event fixture (`/work/shared/fixtures/lambda-event.json`).

use proptest::prelude::*;
use serde_json::json;

use super::json::{rfc3339, write_str};
use super::*;
use crate::config::{self, Config};
use crate::record::parse_batch;
use crate::testing::attribute_value;
use crate::value::Value;

fn example() -> Config {
    config::parse(config::EXAMPLE_CONFIG, "streamdex.example.toml").expect("the example config is valid")
}

const ARN: &str = "arn:aws:dynamodb:eu-west-1:123456789012:table/{T}/stream/2025-11-21T09:00:00.000";
const TTL_SERVICE: &str = r#""userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},"#;

/// One Lambda-shaped record, parsed the way the router will parse it.
fn lambda_record(
    event_name: &str,
    table: &str,
    keys: serde_json::Value,
    old: Option<serde_json::Value>,
    new: Option<serde_json::Value>,
    ttl: bool,
) -> ChangeRecord {
    let mut dynamodb = json!({
        "ApproximateCreationDateTime": 1763722800,
        "Keys": keys,
        "SequenceNumber": "4421585900000000017450447212",
        "SizeBytes": 212,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    });
    if let Some(old) = old {
        dynamodb["OldImage"] = old;
    }
    if let Some(new) = new {
        dynamodb["NewImage"] = new;
    }
    let text = format!(
        r#"{{"Records": [{{
            "eventID": "9a8b7c6d5e4f40318293a4b5c6d7e8f9",
            "eventName": "{event_name}",
            "eventVersion": "1.1",
            "eventSource": "aws:dynamodb",
            "awsRegion": "eu-west-1",
            {identity}
            "dynamodb": {dynamodb},
            "eventSourceARN": "{arn}"
        }}]}}"#,
        identity = if ttl { TTL_SERVICE } else { "" },
        arn = ARN.replace("{T}", table),
    );
    let mut received = parse_batch(text.as_bytes()).expect("a Lambda event");
    assert_eq!(received.len(), 1);
    received.remove(0).record.expect("a usable record")
}

fn layer_keys() -> serde_json::Value {
    json!({"pk": {"S": "lyr#eu-west-1.requests"}, "sk": {"S": "lyrVrsn#v12"}})
}

fn layer_image() -> serde_json::Value {
    json!({
        "pk": {"S": "lyr#eu-west-1.requests"},
        "sk": {"S": "lyrVrsn#v12"},
        "pckg": {"S": "requests"},
        "rgn": {"S": "eu-west-1"},
        "arn": {"S": "arn:aws:lambda:eu-west-1:123456789012:layer:requests:12"},
        "ttl": {"N": "1763722740"}
    })
}

const GOAL: &str = "GOAL-cb421e73-43bb-4c68-bea3-be8f1f6140e8";
const MEMBERSHIP: &str = "GOALMEMBERSHIP-USER-5f0c2b7e-9a51-4d4f-8d0e-1b2c3d4e5f60";

fn records_keys(source: &str, target: &str) -> serde_json::Value {
    json!({"source": {"S": source}, "target": {"S": target}})
}

fn run(config: &Config, record: &ChangeRecord) -> Vec<Event> {
    let table = table_of(config, record).expect("a declared table");
    classify(config, table, record).expect("classifiable")
}

fn detail_value(event: &Event) -> serde_json::Value {
    serde_json::from_str(&event.detail_json()).expect("the detail is JSON")
}

#[test]
fn layer_ttl_expiry_is_one_layer_expired_event() {
    let config = example();
    let record = lambda_record("REMOVE", "layers", layer_keys(), Some(layer_image()), None, true);
    let events = run(&config, &record);
    assert_eq!(events.len(), 1);
    let event = &events[0];
    assert_eq!(event.source, "streamdex");
    assert_eq!(event.detail_type, "Layer Expired");
    let detail = detail_value(event);
    assert_eq!(
        detail,
        json!({
            "table": "layers",
            "eventName": "REMOVE",
            "keys": layer_keys(),
            "oldImage": layer_image(),
            "newImage": null,
            "changed": ["arn", "pckg", "pk", "rgn", "sk", "ttl"],
            "expired": true,
            "sequenceNumber": "4421585900000000017450447212",
            "approximateCreationTime": "2025-11-21T11:00:00Z",
            "imagesOmitted": false
        })
    );
}

#[test]
fn layer_remove_not_by_ttl_is_no_event() {
    let config = example();
    let record = lambda_record("REMOVE", "layers", layer_keys(), Some(layer_image()), None, false);
    assert_eq!(route_event(&record), RouteEvent::Remove);
    assert!(run(&config, &record).is_empty());
}

#[test]
fn layer_expiry_outside_the_prefix_is_no_event() {
    let config = example();
    let keys = json!({"pk": {"S": "pkg#requests"}, "sk": {"S": "v1"}});
    let record = lambda_record("REMOVE", "layers", keys.clone(), Some(keys), None, true);
    assert!(run(&config, &record).is_empty());
}

#[test]
fn goal_node_insert_is_goal_inserted() {
    let config = example();
    let keys = records_keys(GOAL, GOAL);
    let mut image = keys.clone();
    image["name"] = json!({"S": "Ship it"});
    let record = lambda_record("INSERT", "records", keys, None, Some(image), false);
    let events = run(&config, &record);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].detail_type, "Goal Inserted");
    let detail = detail_value(&events[0]);
    assert_eq!(detail["eventName"], "INSERT");
    assert_eq!(detail["expired"], false);
    assert_eq!(detail["oldImage"], serde_json::Value::Null);
    assert_eq!(detail["newImage"]["name"], json!({"S": "Ship it"}));
    assert_eq!(detail["changed"], json!(["name", "source", "target"]));
}

#[test]
fn goal_edge_insert_is_no_event() {
    let config = example();
    let keys = records_keys(GOAL, MEMBERSHIP);
    let mut image = keys.clone();
    image["gsi0"] = json!({"S": "400-CONTRIBUTOR"});
    let record = lambda_record("INSERT", "records", keys, None, Some(image), false);
    assert!(run(&config, &record).is_empty());
}

#[test]
fn team_node_insert_is_no_event() {
    let config = example();
    let keys = records_keys("TEAM-1", "TEAM-1");
    let record = lambda_record("INSERT", "records", keys.clone(), None, Some(keys), false);
    assert!(run(&config, &record).is_empty());
}

#[test]
fn records_node_ttl_expiry_is_node_expired() {
    let config = example();
    let keys = records_keys("TEAM-1", "TEAM-1");
    let mut image = keys.clone();
    image["expiresAt"] = json!({"N": "1763722740"});
    let record = lambda_record("REMOVE", "records", keys, Some(image), None, true);
    let events = run(&config, &record);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].detail_type, "Node Expired");
    assert_eq!(detail_value(&events[0])["expired"], true);
}

#[test]
fn records_edge_ttl_expiry_is_no_event() {
    let config = example();
    let keys = records_keys(GOAL, MEMBERSHIP);
    let record = lambda_record("REMOVE", "records", keys.clone(), Some(keys), None, true);
    assert!(run(&config, &record).is_empty());
}

#[test]
fn one_record_matching_two_routes_gives_two_events() {
    // One record can match several routes: one event each, in route order.
    let mut config = example();
    config.routes.push(RouteConfig {
        table: "records".to_owned(),
        detail_type: "Anything Expired".to_owned(),
        events: vec![RouteEvent::Expire],
        key_prefix: None,
        items: RouteItems::All,
        reap: false,
    });
    let keys = records_keys(GOAL, GOAL);
    let record = lambda_record("REMOVE", "records", keys.clone(), Some(keys), None, true);
    let types: Vec<String> = run(&config, &record).into_iter().map(|e| e.detail_type).collect();
    assert_eq!(types, ["Node Expired", "Anything Expired"]);
}

#[test]
fn thirty_eight_digit_numbers_round_trip_exactly() {
    let config = example();
    let big = "12345678901234567890123456789012345678";
    let tiny = "-0.00000000000000000000000000000000000001";
    let keys = layer_keys();
    let mut image = layer_image();
    image["big"] = json!({"N": big});
    image["tiny"] = json!({"N": tiny});
    image["set"] = json!({"NS": [big, "1E+125"]});
    image["nested"] = json!({"M": {"deep": {"L": [{"N": big}]}}});
    let record = lambda_record("REMOVE", "layers", keys, Some(image), None, true);
    let events = run(&config, &record);
    let detail = detail_value(&events[0]);
    let old = &detail["oldImage"];
    assert_eq!(old["big"]["N"].as_str(), Some(big));
    assert_eq!(old["tiny"]["N"].as_str(), Some(tiny));
    assert_eq!(old["set"]["NS"], json!([big, "1E+125"]));
    assert_eq!(old["nested"]["M"]["deep"]["L"][0]["N"].as_str(), Some(big));
    // And the whole image reads back as the same DynamoDB values.
    let back: Image = serde_json::from_value(old.clone()).expect("DynamoDB JSON");
    assert_eq!(Some(&back), record.old.as_ref());
}

#[test]
fn binary_attributes_are_base64() {
    let config = example();
    let mut image = layer_image();
    image["blob"] = json!({"B": "AAH/"});
    image["blobs"] = json!({"BS": ["AA==", "3q2+7w=="]});
    let record = lambda_record("REMOVE", "layers", layer_keys(), Some(image), None, true);
    assert_eq!(
        record.old.as_ref().and_then(|o| o.get("blob")),
        Some(&Value::B(vec![0, 1, 255]))
    );
    let events = run(&config, &record);
    let detail = detail_value(&events[0]);
    assert_eq!(detail["oldImage"]["blob"], json!({"B": "AAH/"}));
    assert_eq!(detail["oldImage"]["blobs"], json!({"BS": ["AA==", "3q2+7w=="]}));
    let back: Image = serde_json::from_value(detail["oldImage"].clone()).expect("DynamoDB JSON");
    assert_eq!(Some(&back), record.old.as_ref());
    // The counted size agrees with the text for odd base64 lengths too.
    assert_eq!(entry_size(&events[0]), 9 + 13 + events[0].detail_json().len());
}

#[test]
fn changed_names_of_a_modify() {
    let config = example();
    let mut config_routes = config.clone();
    config_routes.routes.push(RouteConfig {
        table: "records".to_owned(),
        detail_type: "Edge Modified".to_owned(),
        events: vec![RouteEvent::Modify],
        key_prefix: None,
        items: RouteItems::Edges,
        reap: false,
    });
    let keys = records_keys(GOAL, MEMBERSHIP);
    let mut old = keys.clone();
    old["memberRole"] = json!({"S": "CONTRIBUTOR"});
    old["date"] = json!({"S": "2020-07-01"});
    old["gsi0"] = json!({"S": "400-CONTRIBUTOR"});
    old["tags"] = json!({"SS": ["a", "b"]});
    old["gone"] = json!({"BOOL": true});
    let mut new = keys.clone();
    new["memberRole"] = json!({"S": "LEAD"});
    new["date"] = json!({"S": "2020-07-01"});
    new["gsi0"] = json!({"S": "500-LEAD"});
    new["tags"] = json!({"SS": ["b", "a"]});
    new["added"] = json!({"NULL": true});
    let record = lambda_record("MODIFY", "records", keys, Some(old), Some(new), false);
    assert!(run(&config, &record).is_empty(), "the example routes take no MODIFY");
    let events = run(&config_routes, &record);
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0].detail.changed,
        ["added", "gone", "gsi0", "memberRole"].map(String::from)
    );
    assert_eq!(
        detail_value(&events[0])["changed"],
        json!(["added", "gone", "gsi0", "memberRole"])
    );
}

#[test]
fn changed_of_insert_and_remove_and_missing_images() {
    let image: Image = [("b", Value::S("x".into())), ("a", Value::N("1".into()))]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    assert_eq!(changed(None, Some(&image)), ["a", "b"]);
    assert_eq!(changed(Some(&image), None), ["a", "b"]);
    assert_eq!(changed(Some(&image), Some(&image)), Vec::<String>::new());
    assert_eq!(changed::<Image>(None, None), Vec::<String>::new());
}

/// A small detail whose exact text is written out below.
fn small_event() -> Event {
    let keys: Image = [("pk".to_owned(), Value::S("lyr#a".into()))].into_iter().collect();
    let mut old = keys.clone();
    old.insert("ttl".to_owned(), Value::N("17".into()));
    old.insert("note".to_owned(), Value::S("é\"\n".into()));
    Event {
        source: "streamdex".to_owned(),
        detail_type: "Layer Expired".to_owned(),
        detail: Detail {
            table: "layers".to_owned(),
            event_name: EventKind::Remove,
            keys,
            old_image: Some(old),
            new_image: None,
            changed: vec!["note".to_owned(), "pk".to_owned(), "ttl".to_owned()],
            expired: true,
            sequence_number: "42".to_owned(),
            approximate_creation_time: Some(CreationTime {
                seconds: 1_763_722_800,
                nanos: 120_000_000,
            }),
            images_omitted: false,
        },
    }
}

#[test]
fn detail_text_and_entry_size_of_a_known_example() {
    let event = small_event();
    let expected = concat!(
        r#"{"table":"layers","eventName":"REMOVE","keys":{"pk":{"S":"lyr#a"}},"#,
        r#""oldImage":{"note":{"S":"é\"\n"},"pk":{"S":"lyr#a"},"ttl":{"N":"17"}},"#,
        r#""newImage":null,"changed":["note","pk","ttl"],"expired":true,"#,
        r#""sequenceNumber":"42","approximateCreationTime":"2025-11-21T11:00:00.12Z","#,
        r#""imagesOmitted":false}"#
    );
    assert_eq!(event.detail_json(), expected);
    // "é" is two UTF-8 bytes: sizes count bytes, not characters.
    assert_eq!(expected.len(), 295);
    assert_eq!(expected.chars().count(), 294);
    assert_eq!(event.detail.json_len(), 295);
    assert_eq!(entry_size(&event), "streamdex".len() + "Layer Expired".len() + 295);
    assert_eq!(entry_size(&event), 317);
}

#[test]
fn without_images_keeps_keys_and_changed() {
    let event = small_event();
    let slim = without_images(event.clone());
    assert_eq!(slim.source, event.source);
    assert_eq!(slim.detail_type, event.detail_type);
    let expected = concat!(
        r#"{"table":"layers","eventName":"REMOVE","keys":{"pk":{"S":"lyr#a"}},"#,
        r#""changed":["note","pk","ttl"],"expired":true,"#,
        r#""sequenceNumber":"42","approximateCreationTime":"2025-11-21T11:00:00.12Z","#,
        r#""imagesOmitted":true}"#
    );
    assert_eq!(slim.detail_json(), expected);
    assert_eq!(entry_size(&slim), 9 + 13 + expected.len());
    assert!(entry_size(&slim) < entry_size(&event));
}

#[test]
fn creation_times() {
    let at = |seconds, nanos| rfc3339(CreationTime { seconds, nanos });
    assert_eq!(at(0, 0), "1970-01-01T00:00:00Z");
    assert_eq!(at(1_763_719_200, 0), "2025-11-21T10:00:00Z");
    assert_eq!(at(951_782_400, 1), "2000-02-29T00:00:00.000000001Z");
    assert_eq!(at(4_102_444_799, 999_999_000), "2099-12-31T23:59:59.999999Z");
}

#[test]
fn control_characters_are_escaped() {
    let mut out = String::new();
    write_str(&mut out, "a\u{1}b\u{1f}\t\\");
    assert_eq!(out, r#""a\u0001b\u001f\t\\""#);
    let back: String = serde_json::from_str(&out).expect("a JSON string");
    assert_eq!(back, "a\u{1}b\u{1f}\t\\");
}

#[test]
fn errors_name_the_sequence_number() {
    let config = example();
    let mut record = lambda_record("REMOVE", "layers", layer_keys(), Some(layer_image()), None, true);
    let records = config.table("records").expect("declared");
    let err = classify(&config, records, &record).expect_err("another table");
    assert!(matches!(err, EventError::TableMismatch { .. }));
    assert_eq!(err.sequence_number(), "4421585900000000017450447212");
    assert!(err.to_string().contains("4421585900000000017450447212"));

    record.table = Some("nope".into());
    let err = table_of(&config, &record).expect_err("undeclared");
    assert_eq!(
        err.to_string(),
        "record 4421585900000000017450447212: table `nope` is not declared in the config"
    );

    // Without a table name the keys decide; `pk`/`sk` are only the layers table's.
    record.table = None;
    assert_eq!(table_of(&config, &record).map(|t| t.name.as_str()), Ok("layers"));
    record.keys.remove("sk");
    assert!(matches!(table_of(&config, &record), Err(EventError::NoTable { .. })));
}

#[test]
fn a_numeric_key_on_a_graph_route_is_an_error_not_a_panic() {
    let config = example();
    let keys = json!({"source": {"N": "1"}, "target": {"N": "1"}});
    let record = lambda_record("REMOVE", "records", keys.clone(), Some(keys), None, true);
    let table = config.table("records").expect("declared");
    let err = classify(&config, table, &record).expect_err("not a String key");
    assert!(matches!(err, EventError::Graph { .. }), "{err}");
}

// ---- property: classify never panics, and what it returns is consistent ----

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("source".to_owned()),
        Just("target".to_owned()),
        Just("pk".to_owned()),
        Just("sk".to_owned()),
        Just("id".to_owned()),
        ".{1,6}",
    ]
}

fn key_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop_oneof![
            Just("GOAL-1"), Just("TEAM-1"), Just("lyr#x"), Just("GOALMEMBERSHIP-USER-1"), Just("TEAMMEMBERSHIP-x"), Just("")
        ].prop_map(|s| Value::S(s.to_owned())),
        1 => attribute_value(),
    ]
}

fn image(values: impl Strategy<Value = Value>) -> impl Strategy<Value = Image> {
    proptest::collection::hash_map(name(), values, 0..5).prop_map(Image::from)
}

fn any_record() -> impl Strategy<Value = ChangeRecord> {
    (
        prop_oneof![
            Just(EventKind::Insert),
            Just(EventKind::Modify),
            Just(EventKind::Remove)
        ],
        proptest::option::of(prop_oneof![
            Just("records"),
            Just("issues"),
            Just("layers"),
            Just("other")
        ]),
        image(key_value()),
        proptest::option::of(image(attribute_value())),
        proptest::option::of(image(attribute_value())),
        any::<bool>(),
        proptest::option::of((0i64..10_000_000_000, 0u32..1_000_000_000)),
    )
        .prop_map(|(kind, table, keys, old, new, ttl_expiry, created)| ChangeRecord {
            event_id: None,
            kind,
            table: table.map(Into::into),
            source_arn: None,
            keys,
            old,
            new,
            sequence_number: "7".to_owned(),
            created: created.map(|(seconds, nanos)| CreationTime { seconds, nanos }),
            size_bytes: None,
            view_type: None,
            ttl_expiry,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn classify_never_panics(record in any_record(), pick in 0usize..3) {
        let config = example();
        // Against the table the record names (or its keys give), and against any table.
        let tables = [table_of(&config, &record).ok(), config.tables.get(pick)];
        for table in tables.into_iter().flatten() {
            let Ok(events) = classify(&config, table, &record) else { continue };
            for event in events {
                let text = event.detail_json();
                let parsed: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
                prop_assert_eq!(entry_size(&event), event.source.len() + event.detail_type.len() + text.len());
                prop_assert_eq!(&parsed["sequenceNumber"], "7");
                let keys: Image = serde_json::from_value(parsed["keys"].clone()).expect("DynamoDB JSON");
                prop_assert_eq!(&keys, &record.keys);
                let slim = without_images(event);
                let parsed: serde_json::Value = serde_json::from_str(&slim.detail_json()).expect("valid JSON");
                prop_assert!(parsed.get("oldImage").is_none() && parsed.get("newImage").is_none());
                prop_assert_eq!(entry_size(&slim), slim.source.len() + slim.detail_type.len() + slim.detail_json().len());
            }
        }
    }
}

#[test]
fn each_route_has_a_rule_that_matches_its_events_only() {
    let config = example();
    let names: Vec<String> = config.routes.iter().map(rule_name).collect();
    assert_eq!(
        names,
        ["records-goal-inserted", "records-node-expired", "layers-layer-expired"]
    );
    let expired = &config.routes[1];
    assert_eq!(
        pattern(&config, expired),
        serde_json::json!({
            "source": ["streamdex"],
            "detail-type": ["Node Expired"],
            "detail": {"table": ["records"]},
        })
    );
}

#[test]
fn long_rule_names_stay_within_the_limit_and_distinct() {
    let route = |detail_type: &str| RouteConfig {
        table: "records".to_owned(),
        detail_type: detail_type.to_owned(),
        events: vec![RouteEvent::Insert],
        key_prefix: None,
        items: RouteItems::All,
        reap: false,
    };
    let long_a = rule_name(&route(&"A very long detail type ".repeat(5)));
    let long_b = rule_name(&route(&"A very long detail type ".repeat(6)));
    for name in [&long_a, &long_b] {
        assert!(name.len() <= RULE_NAME_CHARS, "{name}");
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)),
            "{name}"
        );
    }
    assert_ne!(long_a, long_b, "a shared prefix must not make one name");
    assert_eq!(rule_name(&route("Ünïcode  & Stuff!")), "records-n-code-stuff");
}

#[test]
fn the_pipelines_own_set_updates_are_not_domain_events() {
    let mut config = example();
    config.routes.push(RouteConfig {
        table: "records".to_owned(),
        detail_type: "Node Modified".to_owned(),
        events: vec![RouteEvent::Modify],
        key_prefix: None,
        items: RouteItems::Nodes,
        reap: false,
    });
    let keys = records_keys(GOAL, GOAL);
    let mut old = keys.clone();
    old["name"] = json!({"S": "Ship v2"});
    let mut new = old.clone();
    new["edges"] = json!({"SS": ["GOALMEMBERSHIP-USER-1#400-CONTRIBUTOR"]});
    new["edgesComplete"] = json!({"BOOL": true});
    let set_update = lambda_record(
        "MODIFY",
        "records",
        keys.clone(),
        Some(old.clone()),
        Some(new.clone()),
        false,
    );
    assert!(run(&config, &set_update).is_empty(), "only the set and marker changed");
    // The edge mark (versioning) is the pipeline's too.
    let mut marked = new.clone();
    marked[crate::version::EDGE_MARK_ATTRIBUTE] = json!({"S": "0000000000000000000000000000000000000042"});
    let mark_update = lambda_record(
        "MODIFY",
        "records",
        keys.clone(),
        Some(new.clone()),
        Some(marked),
        false,
    );
    assert!(run(&config, &mark_update).is_empty(), "only the edge mark changed");

    // A user's change alongside is a domain change: one event.
    let mut renamed = new.clone();
    renamed["name"] = json!({"S": "Ship v3"});
    let both = lambda_record("MODIFY", "records", keys, Some(old), Some(renamed), false);
    let events = run(&config, &both);
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0].detail.changed,
        ["edges", "edgesComplete", "name"].map(String::from)
    );
}

proptest! {
    /// `changed` walks both images side by side: it names exactly the
    /// attributes that one image has and the other lacks, or that differ
    /// (sets compared as sets), sorted, each once.
    #[test]
    fn changed_names_what_differs_by_lookup(
        old in proptest::option::of(image(attribute_value())),
        mut new in proptest::option::of(image(attribute_value())),
        shared in image(attribute_value()),
    ) {
        // Attributes both images have, unchanged, so that most names match.
        let with = |image: Option<Image>| image.map(|mut i| {
            for (name, value) in shared.iter() {
                i.insert(name.to_owned(), value.clone());
            }
            i
        });
        let old = with(old);
        new = with(new);
        let mut expected: Vec<String> = Vec::new();
        for (name, value) in old.iter().flat_map(Image::iter) {
            if new.as_ref().and_then(|n| n.get(name)).is_none_or(|n| !same(value, n)) {
                expected.push(name.to_owned());
            }
        }
        for (name, _) in new.iter().flat_map(Image::iter) {
            if old.as_ref().and_then(|o| o.get(name)).is_none() {
                expected.push(name.to_owned());
            }
        }
        expected.sort_unstable();
        prop_assert_eq!(changed(old.as_ref(), new.as_ref()), expected);
    }
}
