//! The template of a config that reads its tables from Kinesis
//! (`streamdex config example --stream kinesis`), committed as
//! `infra/streamdex.kinesis.template.json` for the template judges: the
//! data streams, the tables' `KinesisStreamSpecification`, the mappings
//! on the streams, the ledger table and the roles' permissions.

use serde_json::Value as Json;

use super::*;

/// The committed Kinesis example template.
const KINESIS_TEMPLATE: &str = include_str!("../../streamdex.kinesis.template.json");
/// The name the Kinesis example config is rendered under.
const KINESIS_FILE: &str = "streamdex.kinesis.toml";

fn kinesis_config() -> (Config, String) {
    let text = crate::cli::config::kinesis_example();
    let config = model::config::parse(&text, KINESIS_FILE).unwrap_or_else(|e| panic!("{e}"));
    (config, text)
}

fn rendered() -> Json {
    let (config, text) = kinesis_config();
    render(&config, &text, KINESIS_FILE).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_committed_kinesis_template_is_up_to_date() {
    let text = to_text(&rendered());
    if std::env::var_os("STREAMDEX_WRITE_DOCS").is_some() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("streamdex.kinesis.template.json");
        std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    assert!(
        text == KINESIS_TEMPLATE,
        "infra/streamdex.kinesis.template.json is stale: write it anew with\n  \
         STREAMDEX_WRITE_DOCS=1 cargo test -p infra template::kinesis_tests"
    );
}

#[test]
fn each_table_sends_its_changes_to_an_encrypted_on_demand_stream_the_mappings_read() {
    let template = rendered();
    let (config, _) = kinesis_config();
    let resources = &template["Resources"];
    for table in &config.tables {
        let stream = &resources[ids::kinesis_stream(&table.name)];
        assert_eq!(stream["Type"], "AWS::Kinesis::Stream", "{}", table.name);
        let p = &stream["Properties"];
        assert_eq!(p["RetentionPeriodHours"], 24);
        assert_eq!(p["StreamModeDetails"]["StreamMode"], "ON_DEMAND");
        assert_eq!(p["StreamEncryption"]["EncryptionType"], "KMS");
        let t = &resources[ids::source_table(&table.name)]["Properties"];
        assert_eq!(
            t["KinesisStreamSpecification"]["ApproximateCreationDateTimePrecision"],
            "MICROSECOND"
        );
        assert_eq!(
            t["KinesisStreamSpecification"]["StreamArn"]["Fn::GetAtt"][0],
            ids::kinesis_stream(&table.name)
        );
        assert!(t.get("StreamSpecification").is_none(), "no DynamoDB stream to pay for");
    }
    let mappings: Vec<&Json> = resources
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, r)| r["Type"] == "AWS::Lambda::EventSourceMapping")
        .map(|(_, r)| &r["Properties"])
        .collect();
    assert!(!mappings.is_empty());
    for m in &mappings {
        let stream = m["EventSourceArn"]["Fn::GetAtt"][0].as_str().unwrap_or_default();
        assert!(stream.starts_with("ChangeStream"), "{m}");
        assert_eq!(m["FunctionResponseTypes"][0], "ReportBatchItemFailures");
        assert_eq!(m["BisectBatchOnFunctionError"], true);
        assert!(m["DestinationConfig"]["OnFailure"]["Destination"].is_object());
        // Lambda filters a Kinesis record on its decoded data.
        for filter in m["FilterCriteria"]["Filters"].as_array().into_iter().flatten() {
            let pattern: Json =
                serde_json::from_str(filter["Pattern"].as_str().unwrap_or_default()).unwrap_or_default();
            assert!(pattern["data"]["dynamodb"].is_object(), "{pattern}");
            assert_eq!(pattern.as_object().map(|o| o.len()), Some(1), "{pattern}");
        }
    }
    // At most two readers a stream: within a shard's five reads a second.
    for table in &config.tables {
        let readers = mappings
            .iter()
            .filter(|m| m["EventSourceArn"]["Fn::GetAtt"][0] == ids::kinesis_stream(&table.name).as_str())
            .count();
        assert!(readers <= 2, "{}: {readers}", table.name);
    }
    let ledger = &resources[ids::LEDGER_TABLE]["Properties"];
    assert_eq!(ledger["TableName"], config.events.ledger_table.as_str());
    assert_eq!(
        ledger["TimeToLiveSpecification"]["AttributeName"],
        model::ledger::EXPIRES_ATTRIBUTE
    );
}

#[test]
fn the_roles_read_the_streams_and_the_ledger_and_nothing_more() {
    let template = rendered();
    let policy = |role: FunctionRole| {
        template["Resources"][ids::role(role)]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"].clone()
    };
    let sids = |role: FunctionRole| -> Vec<String> {
        policy(role)
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["Sid"].as_str().map(str::to_owned))
            .collect()
    };
    for role in [FunctionRole::Indexer, FunctionRole::Router] {
        let sids = sids(role);
        assert!(sids.contains(&"ReadChangeStreams".to_owned()), "{role:?}: {sids:?}");
        assert!(
            !sids.contains(&"ReadStreams".to_owned()),
            "no DynamoDB stream to read: {sids:?}"
        );
    }
    assert!(sids(FunctionRole::Router).contains(&"Ledger".to_owned()));
    assert!(sids(FunctionRole::Reaper).contains(&"Ledger".to_owned()));
    let indexer = policy(FunctionRole::Indexer);
    let edge_set = indexer
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["Sid"].as_str().is_some_and(|sid| sid.starts_with("EdgeSetOnly")))
        .cloned()
        .unwrap_or_default();
    let attributes = &edge_set["Condition"]["ForAllValues:StringLike"]["dynamodb:Attributes"];
    assert!(
        attributes.as_array().is_some_and(|a| a
            .iter()
            .any(|x| x == &Json::from(format!("{}*", model::version::MEMBER_VERSION_PREFIX)))),
        "{edge_set}"
    );
    for statement in indexer.as_array().into_iter().flatten() {
        let actions = statement["Action"].as_array().cloned().unwrap_or_default();
        assert!(
            actions.iter().all(|a| a.as_str().is_some_and(|a| !a.ends_with('*'))),
            "{statement}"
        );
    }
}
