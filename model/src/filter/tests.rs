use super::*;
use crate::config::{parse, EXAMPLE_CONFIG};
use crate::event;
use crate::record::parse_record;
use crate::Planner;
use proptest::prelude::*;
use serde_json::json;

fn example() -> Config {
    parse(EXAMPLE_CONFIG, "streamdex.example.toml").unwrap()
}

/// More routes than patterns fit (merging), every event combination, items of each kind.
const BUSY_CONFIG: &str = r#"
[table.records]
partition_key = "source"
sort_key = "target"
ttl_attribute = "expiresAt"

[table.issues]
partition_key = "id"
sort_key = "rel"

[[edge_set]]
table = "records"
attribute = "edges"
include = ["GOALMEMBERSHIP", "TEAMMEMBERSHIP"]
member = ["target", "gsi0"]

[[index]]
name = "by-num"
source = { table = "records", key_prefix = "USER-" }
table = "RecordsByNum"
partition = "all"
sort = [ { value = "num", type = "N" } ]

[[index]]
name = "issue-attrib"
source = { table = "issues" }
table = "IssueAttribIndex"
for_each = "custom_fields"
partition = "{entry.key}"
sort = [ { value = "{entry.value}", type = "any" } ]

[[route]]
table = "records"
detail_type = "Edge Changed"
events = ["MODIFY", "REMOVE"]
items = "edges"

[[route]]
table = "records"
detail_type = "Goal Seen"
events = ["INSERT", "REMOVE"]
key_prefix = "GOAL-"
items = "nodes"

[[route]]
table = "records"
detail_type = "User Changed"
events = ["MODIFY"]
key_prefix = "USER-"

[[route]]
table = "records"
detail_type = "Anything Inserted"
events = ["INSERT", "MODIFY"]
key_prefix = "x"

[[route]]
table = "records"
detail_type = "Team Expired"
events = ["EXPIRE"]
key_prefix = "TEAM-"
items = "nodes"

[[route]]
table = "issues"
detail_type = "Issue Removed"
events = ["REMOVE"]
key_prefix = "issue-"
"#;

fn busy() -> Config {
    parse(BUSY_CONFIG, "busy.toml").unwrap()
}

fn arn(table: &str) -> String {
    format!("arn:aws:dynamodb:us-east-1:123456789012:table/{table}/stream/2026-01-01T00:00:00.000")
}

fn record(table: &str, kind: &str, keys: Json, old: Option<Json>, new: Option<Json>) -> Json {
    let mut dynamodb = json!({"Keys": keys, "SequenceNumber": "100", "StreamViewType": "NEW_AND_OLD_IMAGES"});
    if let Some(old) = old {
        dynamodb["OldImage"] = old;
    }
    if let Some(new) = new {
        dynamodb["NewImage"] = new;
    }
    json!({"eventID": "1", "eventName": kind, "eventSourceARN": arn(table), "dynamodb": dynamodb})
}

fn patterns_of(config: &Config, table: &str, consumer: Consumer) -> Vec<Pattern> {
    patterns(config, config.table(table).unwrap(), consumer)
}

#[test]
fn consumers_are_the_readers_a_table_needs() {
    let config = example();
    assert_eq!(consumers(&config, "records"), [Consumer::Indexer, Consumer::Router]);
    assert_eq!(consumers(&config, "issues"), [Consumer::Indexer]);
    assert_eq!(consumers(&config, "layers"), [Consumer::Router]);
}

#[test]
fn the_matcher_follows_lambdas_rules() {
    let p = Pattern::default()
        .with(
            &["dynamodb", "Keys", "pk", "S"],
            vec![Allowed::Prefix("a".into()), Allowed::Exactly("b".into())],
        )
        .with(&["dynamodb", "NewImage", "set", "SS"], vec![Allowed::Exists(false)]);
    let with = |pk: &str, new: Json| json!({"dynamodb": {"Keys": {"pk": {"S": pk}}, "NewImage": new}});
    assert!(p.matches(&with("abc", json!({}))));
    assert!(p.matches(&with("b", json!({"x": {"S": "1"}}))));
    assert!(!p.matches(&with("bc", json!({}))), "exact is exact");
    assert!(
        !p.matches(&with("abc", json!({"set": {"SS": ["m"]}}))),
        "present is not missing"
    );
    assert!(
        p.matches(&json!({"dynamodb": {"Keys": {"pk": {"S": "a"}}}})),
        "a missing parent is missing"
    );
    assert!(
        !p.matches(&json!({"dynamodb": {"Keys": {"pk": {"N": "1"}}}})),
        "no S leaf, no value match"
    );
    // An array leaf matches when any element does.
    let set = Pattern::default().with(&["x"], vec![Allowed::Exactly("m".into())]);
    assert!(set.matches(&json!({"x": ["a", "m"]})));
    assert!(!set.matches(&json!({"x": ["a"]})));
    assert!(!set.matches(&json!({"x": {"m": 1}})), "an object is no value");
    assert!(Pattern::default()
        .with(&["x"], vec![Allowed::Exists(true)])
        .matches(&json!({"x": {"S": "1"}})));
    assert!(passes(&[], &json!({})), "no patterns: everything passes");
}

#[test]
fn patterns_render_as_lambda_filter_json() {
    let config = example();
    let texts: Vec<String> = patterns_of(&config, "layers", Consumer::Router)
        .iter()
        .map(Pattern::to_text)
        .collect();
    assert_eq!(
        texts,
        [r#"{"dynamodb":{"Keys":{"pk":{"S":[{"prefix":"lyr#"}]}},"NewImage":{"pk":{"S":[{"exists":false}]}}}}"#]
    );
    for table in &config.tables {
        for consumer in consumers(&config, &table.name) {
            for p in patterns(&config, table, consumer) {
                let text = p.to_text();
                assert!(text.len() <= MAX_PATTERN_CHARS);
                let back: Json = serde_json::from_str(&text).unwrap();
                assert_eq!(back, p.to_json());
                assert!(text.starts_with(r#"{"dynamodb":"#), "only the dynamodb key: {text}");
            }
        }
    }
}

/// Lambda filters a Kinesis record on its decoded `data`: a table read from
/// Kinesis has its DynamoDB patterns under it, and a change passes them
/// there exactly when it passes them as a DynamoDB record.
#[test]
fn a_kinesis_read_tables_patterns_are_its_dynamodb_ones_under_data() {
    let config = example();
    let mut kinesis = config.clone();
    for table in &mut kinesis.tables {
        table.stream = ChangeSource::Kinesis(crate::source::KinesisSource {
            precision: crate::source::Precision::Microsecond,
            retention_hours: 24,
        });
    }
    let mut checked = 0;
    for (table, read_from_kinesis) in config.tables.iter().zip(&kinesis.tables) {
        for consumer in Consumer::ALL {
            let plain = patterns(&config, table, consumer);
            let under: Vec<Pattern> = plain.iter().cloned().map(|p| p.under(KINESIS_DATA)).collect();
            assert_eq!(patterns(&kinesis, read_from_kinesis, consumer), under);
            for (p, k) in plain.iter().zip(&under) {
                assert!(k.to_text().starts_with(r#"{"data":{"dynamodb":"#), "{}", k.to_text());
                // Keys of every kind the example's patterns tell apart.
                let keys = ["lyr#1", "GOAL-1", "issue-1", "GOALMEMBERSHIP-USER-1", "other"].map(|value| {
                    let mut key = json!({ table.partition_key.as_str(): {"S": value} });
                    if let Some(sort) = &table.sort_key {
                        key[sort.as_str()] = json!({"S": value});
                    }
                    key
                });
                let changes = keys.iter().flat_map(|key| {
                    [
                        record(&table.name, "INSERT", key.clone(), None, Some(key.clone())),
                        record(&table.name, "MODIFY", key.clone(), Some(key.clone()), Some(key.clone())),
                        record(&table.name, "REMOVE", key.clone(), Some(key.clone()), None),
                    ]
                });
                for change in changes {
                    assert_eq!(
                        p.matches(&change),
                        k.matches(&json!({ KINESIS_DATA: change })),
                        "{change}"
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 10, "only {checked} checks");
}

#[test]
fn records_nothing_needs_are_dropped() {
    let config = example();
    let node = json!({"source": {"S": "GOAL-7"}, "target": {"S": "GOAL-7"}});
    let with = |extra: Json| {
        let mut image = node.clone();
        image
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        image
    };
    let indexer = patterns_of(&config, "records", Consumer::Indexer);
    // The pipeline's own write to a node (set and marker kept) comes back as a MODIFY: dropped.
    let own = record(
        "records",
        "MODIFY",
        node.clone(),
        Some(with(json!({"edges": {"SS": ["a"]}, "edgesComplete": {"BOOL": true}}))),
        Some(with(
            json!({"edges": {"SS": ["a", "b"]}, "edgesComplete": {"BOOL": true}}),
        )),
    );
    assert!(!passes(&indexer, &own));
    // A PutItem that wiped the set and the marker: passes (the set is restored).
    let wiped = record(
        "records",
        "MODIFY",
        node.clone(),
        Some(with(json!({"edges": {"SS": ["a"]}, "edgesComplete": {"BOOL": true}}))),
        Some(with(json!({"title": {"S": "new"}}))),
    );
    assert!(passes(&indexer, &wiped));
    // A node's REMOVE: the indexer has nothing to do.
    assert!(!passes(
        &indexer,
        &record("records", "REMOVE", node.clone(), Some(node.clone()), None)
    ));
    // An edge of a skipped type, removed: nothing to do.
    let skipped = json!({"source": {"S": "GOAL-7"}, "target": {"S": "OWNER-USER-1"}});
    assert!(!passes(
        &indexer,
        &record("records", "REMOVE", skipped.clone(), Some(skipped), None)
    ));
    // An issue outside the index's key prefix.
    let other = json!({"id": {"S": "task-1"}, "rel": {"S": "task-1"}});
    let issues = patterns_of(&config, "issues", Consumer::Indexer);
    assert!(!passes(
        &issues,
        &record("issues", "INSERT", other.clone(), None, Some(other))
    ));
    // The router: a layer INSERT, and a record MODIFY, are no routes' business.
    let layer = json!({"pk": {"S": "lyr#a"}, "sk": {"S": "v1"}});
    let layers = patterns_of(&config, "layers", Consumer::Router);
    assert!(!passes(
        &layers,
        &record("layers", "INSERT", layer.clone(), None, Some(layer.clone()))
    ));
    assert!(passes(
        &layers,
        &record("layers", "REMOVE", layer.clone(), Some(layer), None)
    ));
    let router = patterns_of(&config, "records", Consumer::Router);
    assert!(!passes(
        &router,
        &record("records", "MODIFY", node.clone(), Some(node.clone()), Some(node))
    ));
}

#[test]
fn too_many_patterns_are_merged_into_wider_ones() {
    let config = busy();
    let table = config.table("records").unwrap();
    let raw = router_patterns(&config, table);
    assert!(raw.len() > MAX_PATTERNS, "the busy config needs merging: {}", raw.len());
    let bounded = patterns(&config, table, Consumer::Router);
    assert!(!bounded.is_empty() && bounded.len() <= MAX_PATTERNS, "{bounded:?}");
    // Every record a raw pattern takes, the merged ones take too.
    for p in &raw {
        let mut sample = Map::new();
        for (path, allowed) in &p.fields {
            let value = match &allowed[0] {
                Allowed::Exactly(s) | Allowed::Prefix(s) => Some(Json::String(s.clone())),
                Allowed::Exists(true) => Some(Json::String("x".into())),
                Allowed::Exists(false) => None,
            };
            if let Some(value) = value {
                insert(&mut sample, path, value);
            }
        }
        let sample = Json::Object(sample);
        assert!(p.matches(&sample), "{sample}");
        assert!(passes(&bounded, &sample), "{sample} lost by merging");
    }
}

#[test]
fn an_unconditional_need_means_no_filter() {
    let mut config = example();
    config.indexes[0].source.key_prefix = None;
    assert!(patterns_of(&config, "issues", Consumer::Indexer).is_empty());
}

#[test]
fn an_oversized_pattern_is_widened_below_the_limit() {
    let mut config = example();
    config.edge_sets[0].include = (0..400).map(|i| format!("EDGETYPE{i:04}")).collect();
    let ps = patterns_of(&config, "records", Consumer::Indexer);
    assert!(ps.iter().all(|p| p.to_text().len() <= MAX_PATTERN_CHARS));
}

// ---------------------------------------------------------------------------
// Soundness: every record a consumer acts on passes its filter.
// ---------------------------------------------------------------------------

fn s(v: &str) -> Json {
    json!({ "S": v })
}

fn attribute() -> impl Strategy<Value = Option<Json>> {
    prop_oneof![
        Just(None),
        "[a-c]{0,2}".prop_map(|v| Some(s(&v))),
        "-?[0-9]{1,3}".prop_map(|v| Some(json!({ "N": v }))),
        Just(Some(json!({ "BOOL": true }))),
        Just(Some(json!({ "NULL": true }))),
        proptest::collection::vec("[a-c]{1,2}", 1..3).prop_map(|v| Some(json!({ "SS": v }))),
        proptest::collection::btree_map("[a-c]{1,2}", "[a-c0-9]{0,2}", 0..3)
            .prop_map(|m| Some(json!({ "M": m.into_iter().map(|(k, v)| (k, s(&v))).collect::<Map<_, _>>() }))),
    ]
}

/// An image: the keys plus any of the attributes the configs read or own.
fn image(keys: Json) -> impl Strategy<Value = Json> {
    let names = [
        "edges",
        "edgesComplete",
        "gsi0",
        "num",
        "name",
        "state",
        "custom_fields",
        "expiresAt",
    ];
    proptest::collection::vec(attribute(), names.len()).prop_map(move |values| {
        let mut image = keys.as_object().cloned().unwrap_or_default();
        for (name, value) in names.iter().zip(values) {
            if let Some(value) = value {
                image.insert((*name).to_owned(), value);
            }
        }
        Json::Object(image)
    })
}

const KEY_VALUES: &[&str] = &[
    "GOAL-7",
    "GOAL-",
    "USER-1",
    "TEAM-2",
    "issue-3",
    "issue",
    "lyr#a",
    "x",
    "GOALMEMBERSHIP-USER-1",
    "GOALMEMBERSHIP",
    "TEAMMEMBERSHIP-GOAL-7",
    "GOALMEMBERSHIPX-1",
    "OWNER-USER-1",
];

/// A record of one of `config`'s tables, as Lambda delivers it (NEW_AND_OLD_IMAGES).
fn any_record(tables: Vec<(String, String, String)>) -> impl Strategy<Value = Json> {
    (
        proptest::sample::select(tables),
        proptest::sample::select(KEY_VALUES),
        prop_oneof![Just(None), proptest::sample::select(KEY_VALUES).prop_map(Some)],
        0..3usize,
        any::<bool>(),
    )
        .prop_flat_map(|((table, pk, sk), pk_value, sk_value, kind, ttl)| {
            // A node (sort key = partition key) as often as not.
            let sk_value = sk_value.unwrap_or(pk_value);
            let keys = json!({ pk: s(pk_value), sk: s(sk_value) });
            (image(keys.clone()), image(keys.clone())).prop_map(move |(old, new)| {
                let (name, old, new) = match kind {
                    0 => ("INSERT", None, Some(new)),
                    1 => ("MODIFY", Some(old), Some(new)),
                    _ => ("REMOVE", Some(old), None),
                };
                let mut r = record(&table, name, keys.clone(), old, new);
                if ttl && name == "REMOVE" {
                    r["userIdentity"] = json!({"type": "Service", "principalId": "dynamodb.amazonaws.com"});
                }
                r
            })
        })
}

fn tables_of(config: &Config) -> Vec<(String, String, String)> {
    config
        .tables
        .iter()
        .map(|t| {
            (
                t.name.clone(),
                t.partition_key.clone(),
                t.sort_key.clone().unwrap_or_default(),
            )
        })
        .collect()
}

fn check_soundness(config: &Config, json: &Json) -> Result<(), TestCaseError> {
    let raw = serde_json::value::to_raw_value(json).unwrap();
    let Ok(record) = parse_record(&raw).record else {
        return Ok(());
    };
    let table = config.table_of_record(&record).unwrap();
    let plan = Planner::new(config).plan(&record);
    if !plan.mutations.is_empty() || !plan.problems.is_empty() {
        prop_assert!(
            reads(config, &table.name, Consumer::Indexer),
            "{plan:?} for a table the indexer does not read"
        );
        let ps = patterns(config, table, Consumer::Indexer);
        prop_assert!(
            passes(&ps, json),
            "the indexer needs {json} ({plan:?}) but its filter drops it: {ps:?}"
        );
    }
    let events = event::classify(config, table, &record);
    if events.as_ref().map_or(true, |e| !e.is_empty()) {
        prop_assert!(
            reads(config, &table.name, Consumer::Router),
            "{events:?} for a table the router does not read"
        );
        let ps = patterns(config, table, Consumer::Router);
        prop_assert!(
            passes(&ps, json),
            "the router needs {json} ({events:?}) but its filter drops it: {ps:?}"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_example_filters_pass_every_record_a_consumer_needs(json in any_record(tables_of(&example()))) {
        check_soundness(&example(), &json)?;
    }

    #[test]
    fn merged_filters_pass_every_record_a_consumer_needs(json in any_record(tables_of(&busy()))) {
        check_soundness(&busy(), &json)?;
    }
}
