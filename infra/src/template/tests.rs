use super::*;
use model::config::{parse, EXAMPLE_CONFIG};
use model::filter::{Consumer, Pattern};
use serde_json::Value as Json;

fn example() -> Config {
    parse(EXAMPLE_CONFIG, "streamdex.example.toml").unwrap()
}

fn rendered() -> Json {
    render(&example(), EXAMPLE_CONFIG, "streamdex.example.toml").unwrap()
}

fn of_type<'t>(template: &'t Json, ty: &str) -> Vec<(&'t String, &'t Json)> {
    template["Resources"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, r)| r["Type"] == ty)
        .collect()
}

#[test]
fn the_committed_example_template_is_up_to_date() {
    assert!(
        to_text(&rendered()) == EXAMPLE_TEMPLATE,
        "infra/streamdex.template.json is stale: regenerate it with\n  \
         cargo run -p infra --bin streamdex -- template streamdex.example.toml -o infra/streamdex.template.json"
    );
}

#[test]
fn source_tables_have_keys_stream_ttl_pitr_and_the_target_gsi() {
    let template = rendered();
    let config = example();
    for table in &config.tables {
        let t = &template["Resources"][ids::source_table(&table.name)];
        assert_eq!(t["DeletionPolicy"], "Retain", "{}: source data is retained", table.name);
        let p = &t["Properties"];
        assert_eq!(p["TableName"], table.name.as_str());
        assert_eq!(p["KeySchema"][0]["AttributeName"], table.partition_key.as_str());
        assert_eq!(p["KeySchema"][0]["KeyType"], "HASH");
        assert_eq!(p["KeySchema"][1]["AttributeName"], table.sort_key.as_deref().unwrap());
        assert_eq!(p["StreamSpecification"]["StreamViewType"], "NEW_AND_OLD_IMAGES");
        assert_eq!(
            p["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"],
            true
        );
        match &table.ttl_attribute {
            Some(ttl) => {
                assert_eq!(p["TimeToLiveSpecification"]["AttributeName"], ttl.as_str());
                assert_eq!(p["TimeToLiveSpecification"]["Enabled"], true);
            }
            None => assert!(p.get("TimeToLiveSpecification").is_none()),
        }
        match config.edge_set(&table.name) {
            Some(set) => {
                let gsi = &p["GlobalSecondaryIndexes"][0];
                assert_eq!(gsi["IndexName"], set.target_index.as_str());
                assert_eq!(gsi["KeySchema"][0]["AttributeName"], table.sort_key.as_deref().unwrap());
                assert_eq!(gsi["KeySchema"][0]["KeyType"], "HASH");
                assert_eq!(gsi["KeySchema"][1]["AttributeName"], table.partition_key.as_str());
                assert_eq!(gsi["KeySchema"][1]["KeyType"], "RANGE");
            }
            None => assert!(p.get("GlobalSecondaryIndexes").is_none()),
        }
    }
    for index in &config.indexes {
        let p = &template["Resources"][ids::index_table(&index.table)]["Properties"];
        assert_eq!(p["TableName"], index.table.as_str());
        assert_eq!(p["KeySchema"][0]["AttributeName"], index.partition_key.as_str());
        assert_eq!(
            p["TimeToLiveSpecification"]["AttributeName"],
            model::version::TOMBSTONE_ATTRIBUTE,
            "tombstones expire"
        );
        assert_eq!(p["TimeToLiveSpecification"]["Enabled"], true);
    }
}

/// The binary a function runs: its name after the namespace.
fn names_binary(function: &str) -> &str {
    function.strip_prefix("streamdex-").unwrap()
}

#[test]
fn the_architecture_is_a_parameter_arm64_by_default() {
    let parameter = &rendered()["Parameters"]["Architecture"];
    assert_eq!(parameter["Default"], "arm64");
    assert_eq!(parameter["AllowedValues"], serde_json::json!(["arm64", "x86_64"]));
}

#[test]
fn functions_are_al2023_on_the_architecture_parameter_with_the_config_inline() {
    let template = rendered();
    let functions = of_type(&template, "AWS::Serverless::Function");
    let names: Vec<&str> = functions
        .iter()
        .map(|(_, f)| f["Properties"]["FunctionName"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["streamdex-stream-indexer", "streamdex-reaper", "streamdex-event-router"]
    );
    for (id, f) in functions {
        let p = &f["Properties"];
        assert_eq!(p["Runtime"], "provided.al2023", "{id}");
        assert_eq!(
            p["Architectures"],
            serde_json::json!([{ "Ref": "Architecture" }]),
            "{id}"
        );
        let binary = names_binary(p["FunctionName"].as_str().unwrap());
        assert_eq!(p["CodeUri"], format!("../target/lambda/{binary}/bootstrap.zip"), "{id}");
        assert_eq!(p["Handler"], "bootstrap");
        let inline = p["Environment"]["Variables"]["STREAMDEX_CONFIG"].as_str().unwrap();
        assert_eq!(
            parse(inline, "env").unwrap(),
            example(),
            "{id}: the inline config is the config"
        );
        let env_bytes: usize = p["Environment"]["Variables"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| k.len() + v.as_str().map_or(120, str::len))
            .sum();
        assert!(env_bytes < 4096, "{id}: {env_bytes} bytes of environment");
    }
}

#[test]
fn one_mapping_per_consumer_per_table_never_more_than_two_per_stream() {
    let template = rendered();
    let config = example();
    let mappings = of_type(&template, "AWS::Lambda::EventSourceMapping");
    let mut per_table: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (id, m) in &mappings {
        let p = &m["Properties"];
        let table = p["EventSourceArn"]["Fn::GetAtt"][0].as_str().unwrap().to_owned();
        per_table
            .entry(table)
            .or_default()
            .push(p["FunctionName"]["Ref"].as_str().unwrap().to_owned());
        assert_eq!(
            p["FunctionResponseTypes"],
            serde_json::json!(["ReportBatchItemFailures"]),
            "{id}"
        );
        assert_eq!(p["BisectBatchOnFunctionError"], true, "{id}");
        let retries = p["MaximumRetryAttempts"].as_i64().unwrap();
        assert!((0..=10_000).contains(&retries), "{id}: bounded retries");
        let age = p["MaximumRecordAgeInSeconds"].as_i64().unwrap();
        assert!(
            (60..86_400).contains(&age),
            "{id}: records leave before the 24 h retention"
        );
        assert!(
            age > config.alarms.iterator_age_page_seconds as i64,
            "{id}: the page comes before the skip"
        );
        // Failed batches go whole to the quarantine bucket (an S3 destination keeps the records).
        assert_eq!(
            p["DestinationConfig"]["OnFailure"]["Destination"],
            serde_json::json!({ "Fn::GetAtt": [ids::QUARANTINE_BUCKET, "Arn"] })
        );
        assert!((1..=10).contains(&p["ParallelizationFactor"].as_i64().unwrap()));
        assert!(p["BatchSize"].as_i64().unwrap() >= 1 && p["MaximumBatchingWindowInSeconds"].as_i64().unwrap() <= 300);
        let filters = p["FilterCriteria"]["Filters"].as_array().unwrap();
        assert!(!filters.is_empty() && filters.len() <= 5, "{id}");
        for f in filters {
            let text = f["Pattern"].as_str().unwrap();
            assert!(text.len() <= 4096);
            let _: Json = serde_json::from_str(text).unwrap();
        }
    }
    for (table, functions) in &per_table {
        assert!(functions.len() <= 2, "{table}: {functions:?}");
        let mut distinct = functions.clone();
        distinct.dedup();
        assert_eq!(&distinct, functions, "{table}: one mapping per consumer");
    }
    assert_eq!(
        per_table.len(),
        config.tables.len(),
        "every source table is read by someone in the example"
    );
    assert_eq!(mappings.len(), 4, "records ×2, issues (indexer), layers (router)");
}

#[test]
fn mapping_filters_take_the_records_their_consumer_needs() {
    let template = rendered();
    let filters = |id: &str| -> Vec<Json> {
        template["Resources"][id]["Properties"]["FilterCriteria"]["Filters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| serde_json::from_str(f["Pattern"].as_str().unwrap()).unwrap())
            .collect()
    };
    let rendered_patterns = filters(&ids::mapping(Consumer::Indexer, "records"));
    let config = example();
    let expected: Vec<Json> = model::filter::patterns(&config, config.table("records").unwrap(), Consumer::Indexer)
        .iter()
        .map(Pattern::to_json)
        .collect();
    assert_eq!(rendered_patterns, expected);
    // An edge INSERT of an included type: the indexer gets it; a layer expiry: the router gets it.
    let edge = serde_json::json!({"dynamodb": {"Keys": {"source": {"S": "GOAL-7"}, "target": {"S": "GOALMEMBERSHIP-USER-1"}},
        "NewImage": {"source": {"S": "GOAL-7"}, "target": {"S": "GOALMEMBERSHIP-USER-1"}}}});
    let expected_patterns: Vec<Pattern> =
        model::filter::patterns(&config, config.table("records").unwrap(), Consumer::Indexer);
    assert!(model::filter::passes(&expected_patterns, &edge));
    let layers = model::filter::patterns(&config, config.table("layers").unwrap(), Consumer::Router);
    let expiry = serde_json::json!({"dynamodb": {"Keys": {"pk": {"S": "lyr#x"}, "sk": {"S": "1"}}, "OldImage": {"pk": {"S": "lyr#x"}}}});
    assert!(model::filter::passes(&layers, &expiry));
    assert_eq!(
        filters(&ids::mapping(Consumer::Router, "layers")),
        layers.iter().map(Pattern::to_json).collect::<Vec<_>>()
    );
}

#[test]
fn rules_have_the_model_pattern_and_the_reaper_targets_reap_routes() {
    let template = rendered();
    let config = example();
    let rules = of_type(&template, "AWS::Events::Rule");
    assert_eq!(rules.len(), config.routes.len());
    for route in &config.routes {
        let name = model::event::rule_name(route);
        let (_, rule) = rules
            .iter()
            .find(|(_, r)| r["Properties"]["Name"] == name.as_str())
            .unwrap_or_else(|| panic!("no rule {name}"));
        assert_eq!(
            rule["Properties"]["EventPattern"],
            model::event::pattern(&config, route)
        );
        let targets = rule["Properties"].get("Targets");
        if route.reap {
            let target = &targets.unwrap()[0];
            assert_eq!(target["Arn"]["Fn::GetAtt"][0], ids::function(FunctionRole::Reaper));
            assert!(target["DeadLetterConfig"]["Arn"].is_object());
        } else {
            assert!(targets.is_none(), "{name}");
        }
    }
    assert_eq!(of_type(&template, "AWS::Lambda::Permission").len(), 1);
}

#[test]
fn no_policy_has_a_wildcard_action_or_resource() {
    let template = rendered();
    let mut actions = 0;
    for (id, role) in of_type(&template, "AWS::IAM::Role") {
        for policy in role["Properties"]["Policies"].as_array().unwrap() {
            for statement in policy["PolicyDocument"]["Statement"].as_array().unwrap() {
                for action in statement["Action"].as_array().unwrap() {
                    let action = action.as_str().unwrap();
                    assert!(!action.contains('*'), "{id}: {action}");
                    actions += 1;
                }
                for resource in statement["Resource"].as_array().unwrap() {
                    assert_ne!(resource, "*", "{id}");
                    if let Some(sub) = resource["Fn::Sub"].as_str() {
                        assert!(!sub.ends_with(":*") && !sub.ends_with("table/*"), "{id}: {sub}");
                    }
                }
            }
        }
    }
    assert!(actions > 10);
}

#[test]
fn the_indexer_may_update_only_the_edge_set_attributes() {
    let template = rendered();
    let statements = template["Resources"][ids::role(FunctionRole::Indexer)]["Properties"]["Policies"][0]
        ["PolicyDocument"]["Statement"]
        .as_array()
        .unwrap()
        .clone();
    let updates: Vec<&Json> = statements
        .iter()
        .filter(|s| {
            s["Action"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a == "dynamodb:UpdateItem")
        })
        .collect();
    assert_eq!(updates.len(), 1);
    let condition = &updates[0]["Condition"];
    assert_eq!(
        condition["ForAllValues:StringEquals"]["dynamodb:Attributes"],
        serde_json::json!([
            "source",
            "target",
            "edges",
            "edgesComplete",
            model::version::EDGE_MARK_ATTRIBUTE
        ])
    );
    assert_eq!(
        condition["StringEqualsIfExists"]["dynamodb:ReturnValues"],
        serde_json::json!(["NONE"])
    );
    assert_eq!(updates[0]["Resource"].as_array().unwrap().len(), 1);
    // No other statement grants a write to a source table.
    for s in &statements {
        for action in s["Action"].as_array().unwrap() {
            assert!(
                !["dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:UpdateItem"].contains(&action.as_str().unwrap())
                    || s["Condition"].is_object(),
                "{s}"
            );
        }
    }
    // The router writes no table at all.
    let router = template["Resources"][ids::role(FunctionRole::Router)].to_string();
    assert!(!router.contains("dynamodb:BatchWriteItem") && !router.contains("dynamodb:UpdateItem"));
    assert!(router.contains("events:PutEvents"));
}

#[test]
fn every_consumer_has_iterator_age_alarms_at_the_config_thresholds() {
    let template = rendered();
    let config = example();
    let alarms = of_type(&template, "AWS::CloudWatch::Alarm");
    for role in [FunctionRole::Indexer, FunctionRole::Router] {
        let of_function: Vec<&Json> = alarms
            .iter()
            .filter(|(_, a)| a["Properties"]["MetricName"] == "IteratorAge")
            .filter(|(_, a)| a["Properties"]["Dimensions"][0]["Value"]["Ref"] == ids::function(role))
            .map(|(_, a)| *a)
            .collect();
        let mut thresholds: Vec<u64> = of_function
            .iter()
            .map(|a| a["Properties"]["Threshold"].as_u64().unwrap())
            .collect();
        thresholds.sort_unstable();
        assert_eq!(
            thresholds,
            [
                config.alarms.iterator_age_warn_seconds * 1000,
                config.alarms.iterator_age_page_seconds * 1000
            ],
            "{role:?}"
        );
        assert!(of_function.iter().all(|a| a["Properties"]["Statistic"] == "Maximum"));
    }
    for (id, alarm) in &alarms {
        assert_eq!(
            alarm["Properties"]["AlarmActions"],
            serde_json::json!([{ "Ref": ids::ALARM_TOPIC }]),
            "{id}"
        );
    }
    let metric = |m: &str| {
        alarms
            .iter()
            .filter(|(_, a)| a["Properties"]["MetricName"] == m)
            .count()
    };
    assert_eq!(metric("Errors"), 3, "one per function");
    assert_eq!(
        metric("ApproximateNumberOfMessagesVisible"),
        2,
        "the quarantine and the reaper's dead letters"
    );
    // Batches the mappings gave up on: the quarantine bucket's requests under `aws/lambda/`.
    let failed = &template["Resources"]["FailedBatches"]["Properties"];
    assert_eq!(failed["MetricName"], "PutRequests");
    assert_eq!(failed["Dimensions"][1]["Value"], super::bucket::FAILED_BATCH_METRICS);
    let bucket = &template["Resources"][ids::QUARANTINE_BUCKET]["Properties"];
    assert_eq!(
        bucket["MetricsConfigurations"],
        serde_json::json!([{ "Id": super::bucket::FAILED_BATCH_METRICS, "Prefix": "aws/lambda/" }])
    );
    assert_eq!(metric("FailedInvocations"), 1, "the reaper rule");
    let subscription = &template["Resources"][ids::ALARM_SUBSCRIPTION]["Properties"];
    assert_eq!(subscription["Endpoint"]["Ref"], ids::PARAM_ALARM_ENDPOINT);
    assert!(template["Parameters"][ids::PARAM_ALARM_ENDPOINT].is_object());
}

#[test]
fn a_config_too_large_for_the_environment_is_refused() {
    let mut text = EXAMPLE_CONFIG.to_owned();
    for i in 0..60 {
        text.push_str(&format!(
            "\n[[route]]\ntable = \"layers\"\ndetail_type = \"Layer Expired Number {i}\"\nevents = [\"EXPIRE\"]\n"
        ));
    }
    let config = parse(&text, "big.toml").unwrap();
    match render(&config, &text, "big.toml") {
        Err(TemplateError::ConfigTooLarge { bytes, limit, .. }) => assert!(bytes > limit),
        other => panic!("expected ConfigTooLarge, got {other:?}"),
    }
}

#[test]
fn the_compact_config_round_trips_odd_strings() {
    let text = EXAMPLE_CONFIG.replace("key_prefix = \"lyr#\"", "key_prefix = \"lyr#\\\"\\\\\\t\u{e9}\"");
    let config = parse(&text, "odd.toml").unwrap();
    let compact = environment::compact_toml(&text, "odd.toml", &config).unwrap();
    assert_eq!(parse(&compact, "compact").unwrap(), config);
    assert!(
        !compact.contains('#') || compact.contains("lyr#"),
        "no comments survive"
    );
}

/// `then` of an `Fn::If` on the customer-key condition, or the value itself.
fn with_key(value: &Json) -> &Json {
    match value["Fn::If"].as_array() {
        Some(branches) if branches[0] == ids::HAS_KMS_KEY => &branches[1],
        _ => value,
    }
}

/// `else` of an `Fn::If` on the customer-key condition (None for `AWS::NoValue`).
fn without_key(value: &Json) -> Option<&Json> {
    let chosen = match value["Fn::If"].as_array() {
        Some(branches) if branches[0] == ids::HAS_KMS_KEY => &branches[2],
        _ => value,
    };
    (chosen["Ref"] != "AWS::NoValue").then_some(chosen)
}

#[test]
fn everything_that_holds_data_is_encrypted_with_or_without_a_customer_key() {
    let template = rendered();
    let key = json!({ "Ref": ids::PARAM_KMS_KEY });
    assert_eq!(template["Parameters"][ids::PARAM_KMS_KEY]["Default"], "");
    let tables = of_type(&template, "AWS::DynamoDB::Table");
    assert_eq!(tables.len(), 4);
    for (id, table) in tables {
        let sse = &table["Properties"]["SSESpecification"];
        assert_eq!(with_key(sse)["KMSMasterKeyId"], key, "{id}");
        // DynamoDB encrypts every table; `SSEEnabled: false` is its AWS owned key.
        assert_eq!(without_key(sse).unwrap()["SSEEnabled"], false, "{id}");
    }
    let queues = of_type(&template, "AWS::SQS::Queue");
    assert_eq!(
        queues.len(),
        3,
        "the quarantine, the reaper's and the alarms' dead letters"
    );
    for (id, queue) in queues {
        let p = &queue["Properties"];
        assert_eq!(*with_key(&p["KmsMasterKeyId"]), key, "{id}");
        assert_eq!(without_key(&p["SqsManagedSseEnabled"]), Some(&json!(true)), "{id}");
        assert!(without_key(&p["KmsMasterKeyId"]).is_none(), "{id}");
    }
    let topic = &template["Resources"][ids::ALARM_TOPIC]["Properties"]["KmsMasterKeyId"];
    assert_eq!(*with_key(topic), key);
    assert_eq!(without_key(topic), Some(&json!("alias/aws/sns")));
    for (id, group) in of_type(&template, "AWS::Logs::LogGroup") {
        assert_eq!(*with_key(&group["Properties"]["KmsKeyId"]), key, "{id}");
    }
    for (id, function) in of_type(&template, "AWS::Serverless::Function") {
        assert_eq!(*with_key(&function["Properties"]["KmsKeyArn"]), key, "{id}");
        assert_eq!(function["Properties"]["Tracing"], "Active", "{id}");
    }
    let policy = &template["Resources"][ids::KEY_POLICY];
    assert_eq!(policy["Condition"], ids::HAS_KMS_KEY);
    assert_eq!(policy["Properties"]["Roles"].as_array().unwrap().len(), 3);
    assert_eq!(
        policy["Properties"]["PolicyDocument"]["Statement"][0]["Resource"][0],
        key
    );
}

#[test]
fn the_reaper_s_failed_invocations_and_failed_alarm_deliveries_are_kept() {
    let template = rendered();
    let resources = &template["Resources"];
    let dead_letters = json!({ "Fn::GetAtt": ["ReaperDeadLetterQueue", "Arn"] });
    let invoke = &resources[ids::REAPER_INVOKE_CONFIG]["Properties"];
    assert_eq!(invoke["FunctionName"]["Ref"], ids::function(FunctionRole::Reaper));
    assert_eq!(invoke["DestinationConfig"]["OnFailure"]["Destination"], dead_letters);
    let reaper = iam::statements(&Stack::new(&example()), FunctionRole::Reaper);
    assert!(reaper
        .iter()
        .any(|s| s["Action"] == json!(["sqs:SendMessage"]) && s["Resource"] == json!([dead_letters])));
    let subscription = &resources[ids::ALARM_SUBSCRIPTION]["Properties"];
    let alarm_dead_letters = json!({ "Fn::GetAtt": [ids::ALARM_DEAD_LETTER_QUEUE, "Arn"] });
    assert_eq!(subscription["RedrivePolicy"]["deadLetterTargetArn"], alarm_dead_letters);
    let policy = &resources[ids::ALARM_DEAD_LETTER_POLICY]["Properties"]["PolicyDocument"]["Statement"][0];
    assert_eq!(policy["Resource"], alarm_dead_letters);
    assert_eq!(
        policy["Condition"]["ArnEquals"]["aws:SourceArn"]["Ref"],
        ids::ALARM_TOPIC
    );
}

#[test]
fn every_kept_finding_has_a_reason() {
    let template = rendered();
    let mut kept = 0;
    for (id, resource) in template["Resources"].as_object().unwrap() {
        for skip in resource["Metadata"]["checkov"]["skip"].as_array().into_iter().flatten() {
            assert!(skip["id"].as_str().unwrap().starts_with("CKV"), "{id}");
            assert!(skip["comment"].as_str().unwrap().len() > 40, "{id}: {skip}");
            kept += 1;
        }
        let lint = &resource["Metadata"]["cfn-lint"];
        for check in lint["config"]["ignore_checks"].as_array().into_iter().flatten() {
            let reason = lint["reasons"][check.as_str().unwrap()].as_str().unwrap();
            assert!(reason.len() > 40, "{id}: {check}");
            kept += 1;
        }
    }
    assert!(kept > 10);
}

/// Sharding an index changes row keys, not the deployment: the template of
/// a sharded example differs only in the inline config the functions get.
#[test]
fn a_sharded_index_changes_only_the_inline_config() {
    let text = EXAMPLE_CONFIG.replace(
        "project = [\"name\", \"state\"]\n",
        "project = [\"name\", \"state\"]\nshards = 16\n",
    );
    let config = parse(&text, "streamdex.example.toml").unwrap();
    assert_eq!(config.indexes[0].shards, 16);
    let sharded = render(&config, &text, "streamdex.example.toml").unwrap();
    let plain = rendered();
    // Each function's inline config, taken out (`None`: the function has none).
    let take = |mut template: Json| -> (Json, Vec<Option<Json>>) {
        let mut configs = Vec::new();
        if let Some(resources) = template.get_mut("Resources").and_then(Json::as_object_mut) {
            for resource in resources.values_mut() {
                let vars = resource
                    .get_mut("Properties")
                    .and_then(|p| p.get_mut("Environment"))
                    .and_then(|e| e.get_mut("Variables"))
                    .and_then(Json::as_object_mut);
                configs.push(vars.and_then(|v| v.remove("STREAMDEX_CONFIG")));
            }
        }
        (template, configs)
    };
    let (sharded, sharded_configs) = take(sharded);
    let (plain, plain_configs) = take(plain);
    let inline: Vec<&str> = sharded_configs.iter().flatten().filter_map(Json::as_str).collect();
    assert!(
        !inline.is_empty() && inline.iter().all(|c| c.contains("shards=16")),
        "{inline:?}"
    );
    assert_eq!(
        sharded_configs.iter().flatten().count(),
        plain_configs.iter().flatten().count()
    );
    let differing: Vec<&String> = sharded["Resources"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(name, r)| plain["Resources"].get(name.as_str()) != Some(r))
        .map(|(name, _)| name)
        .collect();
    assert!(differing.is_empty(), "resources that differ: {differing:?}");
    assert!(sharded == plain, "the template differs outside its resources");
}
