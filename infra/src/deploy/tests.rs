use super::*;
use serde_json::json;

fn template() -> Json {
    json!({
        "Parameters": { "KmsKeyArn": { "Type": "String", "Default": "" } },
        "Conditions": { "HasKmsKey": { "Fn::Not": [{ "Fn::Equals": [{ "Ref": "KmsKeyArn" }, ""] }] } },
        "Resources": {
            "Table": { "Type": "AWS::DynamoDB::Table" },
            "Alarm": { "Type": "AWS::CloudWatch::Alarm" },
            "KeyPolicy": { "Type": "AWS::IAM::Policy", "Condition": "HasKmsKey" },
            "Rule": { "Type": "AWS::Events::Rule" },
        },
    })
}

#[test]
fn each_resource_is_created_skipped_failed_or_absent() {
    let created = BTreeMap::from([("Table".to_owned(), "issues".to_owned())]);
    let failures = BTreeMap::from([("Rule".to_owned(), "bus not found".to_owned())]);
    let resources = report(&template(), &BTreeMap::new(), &created, &failures, false).unwrap();
    let fates: BTreeMap<&str, &Fate> = resources.iter().map(|r| (r.logical_id.as_str(), &r.fate)).collect();
    assert_eq!(fates["Table"], &Fate::Created("issues".to_owned()));
    assert_eq!(fates["KeyPolicy"], &Fate::Conditioned("HasKmsKey".to_owned()));
    assert_eq!(fates["Rule"], &Fate::Failed("bus not found".to_owned()));
    assert_eq!(fates["Alarm"], &Fate::Absent);

    // With a key given, the policy's absence is a gap, not a condition.
    let given = BTreeMap::from([("KmsKeyArn".to_owned(), "arn:aws:kms:k".to_owned())]);
    let resources = report(&template(), &given, &created, &failures, false).unwrap();
    assert!(resources
        .iter()
        .any(|r| r.logical_id == "KeyPolicy" && r.fate == Fate::Absent));
}

#[test]
fn the_report_names_every_absent_resource_and_counts() {
    let resources = report(&template(), &BTreeMap::new(), &BTreeMap::new(), &BTreeMap::new(), false).unwrap();
    let report = Report {
        stack: "s".to_owned(),
        status: "CREATE_COMPLETE".to_owned(),
        resources,
        outputs: BTreeMap::from([("Out".to_owned(), "v".to_owned())]),
        deferred: Vec::new(),
    };
    let text = report.to_string();
    assert!(text.contains("absent   AWS::CloudWatch::Alarm"), "{text}");
    assert!(text.contains("made no AWS::CloudWatch::Alarm"), "{text}");
    assert!(text.contains("output   Out = v"), "{text}");
    assert!(
        text.ends_with("0 created, 1 skipped by a condition, 0 failed, 3 absent, 0 deferred\n"),
        "{text}"
    );
    assert_eq!(report.absent().count(), 3);
    assert!(report.is_complete());
}

#[test]
fn a_template_without_resources_is_refused() {
    assert!(matches!(
        report(&json!({}), &BTreeMap::new(), &BTreeMap::new(), &BTreeMap::new(), false),
        Err(DeployError::NoResources)
    ));
}

#[test]
fn deferred_mappings_are_neither_absent_nor_created() {
    let mut t = template();
    t["Resources"]["Mapping"] = json!({ "Type": mappings::MAPPING_TYPE });
    let resources = report(&t, &BTreeMap::new(), &BTreeMap::new(), &BTreeMap::new(), true).unwrap();
    let mapping = resources.iter().find(|r| r.logical_id == "Mapping").unwrap();
    assert_eq!(mapping.fate, Fate::Deferred);
    let resources = report(&t, &BTreeMap::new(), &BTreeMap::new(), &BTreeMap::new(), false).unwrap();
    let mapping = resources.iter().find(|r| r.logical_id == "Mapping").unwrap();
    assert_eq!(mapping.fate, Fate::Absent);
}
