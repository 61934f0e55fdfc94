//! `streamdex up` and `streamdex down` against the run's moto server.
//!
//! Every test works on its own stack: the example config with its table
//! names and its bus prefixed uniquely (queue names derive from the bus), so
//! the tests share the server safely. What `up` created is read back with
//! the SDK and compared with the config and the model's own functions
//! (`model::event::pattern`, `rule_name`), never with the stack description
//! the code under test used.
//!
//! They need a moto server at `STREAMDEX_TEST_ENDPOINT`, so they are
//! `#[ignore]`d: `scripts/test.sh` starts one and runs them with
//! `--include-ignored`; run so without the variable, they fail at once
//! saying what is missing.

use std::collections::BTreeMap;

use anyhow::{anyhow, ensure, Context, Result};
use aws_config::SdkConfig;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{KeyType, ProjectionType, StreamViewType, TimeToLiveStatus};
use aws_sdk_sqs::types::QueueAttributeName;
use infra::cli::stack::{down_with, up_with, DownArgs, Endpoint, UpArgs};
use infra::stack::{self, Action, StackError};
use model::config::{self, EXAMPLE_CONFIG};
use model::Config;
use streamdex_tests::moto::{prefixed, unique_prefix, Moto};

fn example_config() -> Config {
    config::parse(EXAMPLE_CONFIG, "streamdex.example.toml").unwrap_or_else(|e| panic!("example config: {e}"))
}

/// The example config with unique table and bus names for one test.
fn test_config(test: &str) -> Config {
    prefixed(&example_config(), &unique_prefix(test))
}

async fn sdk(moto: &Moto) -> SdkConfig {
    stack::sdk_config(Some(&moto.endpoint), Some("us-east-1")).await
}

fn events(sdk: &SdkConfig) -> aws_sdk_eventbridge::Client {
    aws_sdk_eventbridge::Client::new(sdk)
}

/// (partition key, sort key) of a key schema.
fn keys(schema: &[aws_sdk_dynamodb::types::KeySchemaElement]) -> (Option<String>, Option<String>) {
    let find = |ty: KeyType| {
        schema
            .iter()
            .find(|k| k.key_type == ty)
            .map(|k| k.attribute_name.clone())
    };
    (find(KeyType::Hash), find(KeyType::Range))
}

async fn queue_url(moto: &Moto, name: &str) -> Result<Option<String>> {
    match moto.sqs.get_queue_url().queue_name(name).send().await {
        Ok(output) => Ok(output.queue_url),
        Err(e)
            if e.code()
                .is_some_and(|c| c.contains("NonExistentQueue") || c.contains("QueueDoesNotExist")) =>
        {
            Ok(None)
        }
        Err(e) => Err(anyhow!("GetQueueUrl {name}: {e:?}")),
    }
}

async fn queue_arn(moto: &Moto, url: &str) -> Result<String> {
    moto.sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await?
        .attributes
        .and_then(|mut a| a.remove(&QueueAttributeName::QueueArn))
        .ok_or_else(|| anyhow!("no QueueArn for {url}"))
}

/// Every queue `up` must create, by what the README and the router/indexer expect.
fn expected_queues(config: &Config) -> Vec<String> {
    let mut names = vec![
        stack::quarantine_queue_name(config),
        stack::reaper_dead_letter_queue_name(config),
    ];
    names.extend(config.routes.iter().map(|r| stack::rule_queue_name(config, r)));
    names
}

/// Checks, with the SDK, that everything `up` promises exists in the right shape.
async fn assert_stack_exists(moto: &Moto, sdk: &SdkConfig, config: &Config) -> Result<()> {
    for table in &config.tables {
        let described = moto
            .dynamodb
            .describe_table()
            .table_name(&table.name)
            .send()
            .await?
            .table
            .ok_or_else(|| anyhow!("no table {}", table.name))?;
        ensure!(
            keys(described.key_schema()) == (Some(table.partition_key.clone()), table.sort_key.clone()),
            "keys of {}",
            table.name
        );
        let stream = described.stream_specification.clone();
        ensure!(
            stream
                .as_ref()
                .is_some_and(|s| s.stream_enabled && s.stream_view_type == Some(StreamViewType::NewAndOldImages)),
            "stream of {}: {stream:?}",
            table.name
        );
        let gsis = described.global_secondary_indexes();
        match config.edge_set(&table.name) {
            Some(set) => {
                let gsi = gsis
                    .iter()
                    .find(|g| g.index_name.as_deref() == Some(set.target_index.as_str()))
                    .ok_or_else(|| anyhow!("no GSI {} on {}", set.target_index, table.name))?;
                ensure!(
                    keys(gsi.key_schema()) == (table.sort_key.clone(), Some(table.partition_key.clone())),
                    "GSI keys of {}: {:?}",
                    table.name,
                    gsi.key_schema()
                );
                let projection = gsi.projection.clone().unwrap_or_else(|| unreachable!());
                ensure!(projection.projection_type == Some(ProjectionType::Include));
                ensure!(projection.non_key_attributes() == ["gsi0"], "{projection:?}");
            }
            None => ensure!(gsis.is_empty(), "unexpected GSIs on {}", table.name),
        }
        let ttl = moto
            .dynamodb
            .describe_time_to_live()
            .table_name(&table.name)
            .send()
            .await?
            .time_to_live_description;
        let status = ttl.as_ref().and_then(|t| t.time_to_live_status.clone());
        match &table.ttl_attribute {
            Some(attribute) => {
                ensure!(status == Some(TimeToLiveStatus::Enabled), "TTL of {}", table.name);
                ensure!(
                    ttl.as_ref().and_then(|t| t.attribute_name.as_ref()) == Some(attribute),
                    "TTL attribute of {}",
                    table.name
                );
            }
            None => ensure!(status != Some(TimeToLiveStatus::Enabled)),
        }
        let pitr = moto
            .dynamodb
            .describe_continuous_backups()
            .table_name(&table.name)
            .send()
            .await?
            .continuous_backups_description
            .and_then(|d| d.point_in_time_recovery_description)
            .and_then(|p| p.point_in_time_recovery_status)
            .map(|s| s.as_str().to_owned());
        ensure!(pitr.as_deref() == Some("ENABLED"), "PITR of {}: {pitr:?}", table.name);
    }
    for index in &config.indexes {
        let described = moto
            .dynamodb
            .describe_table()
            .table_name(&index.table)
            .send()
            .await?
            .table
            .ok_or_else(|| anyhow!("no index table {}", index.table))?;
        ensure!(keys(described.key_schema()) == (Some(index.partition_key.clone()), Some(index.sort_key.clone())));
    }
    let events = events(sdk);
    events
        .describe_event_bus()
        .name(&config.events.bus)
        .send()
        .await
        .with_context(|| format!("bus {}", config.events.bus))?;
    for route in &config.routes {
        let name = model::event::rule_name(route);
        let rule = events
            .describe_rule()
            .name(&name)
            .event_bus_name(&config.events.bus)
            .send()
            .await
            .with_context(|| format!("rule {name}"))?;
        let pattern: serde_json::Value = serde_json::from_str(rule.event_pattern().unwrap_or("null"))?;
        ensure!(
            pattern == model::event::pattern(config, route),
            "pattern of {name}: {pattern}"
        );
        let url = queue_url(moto, &stack::rule_queue_name(config, route))
            .await?
            .ok_or_else(|| anyhow!("no queue for rule {name}"))?;
        let arn = queue_arn(moto, &url).await?;
        let targets = events
            .list_targets_by_rule()
            .rule(&name)
            .event_bus_name(&config.events.bus)
            .send()
            .await?
            .targets
            .unwrap_or_default();
        ensure!(
            targets.len() == 1 && targets[0].arn == arn,
            "targets of {name}: {targets:?}"
        );
    }
    for name in expected_queues(config) {
        ensure!(queue_url(moto, &name).await?.is_some(), "no queue {name}");
    }
    Ok(())
}

#[tokio::test]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn up_creates_the_stack_and_a_second_up_changes_nothing() -> Result<()> {
    let moto = Moto::connect("up_creates_the_stack_and_a_second_up_changes_nothing").await;
    let config = test_config("up-twice");
    let sdk = sdk(&moto).await;
    let first = stack::up(&sdk, &config).await?;
    ensure!(first.changed(), "{first}");
    ensure!(
        first.changes.iter().all(|c| c.action != Action::Unchanged),
        "a fresh stack has nothing unchanged:\n{first}"
    );
    assert_stack_exists(&moto, &sdk, &config).await?;
    for name in expected_queues(&config) {
        ensure!(first.queue_url(&name).is_some(), "no URL reported for {name}");
    }

    let second = stack::up(&sdk, &config).await?;
    ensure!(!second.changed(), "the second up changed something:\n{second}");
    ensure!(second.to_string().contains("nothing to change"), "{second}");
    ensure!(second.queue_urls == first.queue_urls);
    ensure!(second.rule_arns == first.rule_arns);
    assert_stack_exists(&moto, &sdk, &config).await?;
    stack::down(&sdk, &config).await?;
    Ok(())
}

#[tokio::test]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn up_repairs_what_is_missing_and_leaves_the_rest() -> Result<()> {
    let moto = Moto::connect("up_repairs_what_is_missing_and_leaves_the_rest").await;
    let config = test_config("up-repairs");
    let sdk = sdk(&moto).await;
    stack::up(&sdk, &config).await?;
    // Lose a queue, a rule's target and a whole index table.
    let quarantine = stack::quarantine_queue_name(&config);
    let url = queue_url(&moto, &quarantine)
        .await?
        .ok_or_else(|| anyhow!("no quarantine"))?;
    moto.sqs.delete_queue().queue_url(url).send().await?;
    let route = &config.routes[1];
    let rule = model::event::rule_name(route);
    events(&sdk)
        .remove_targets()
        .rule(&rule)
        .event_bus_name(&config.events.bus)
        .ids(stack::RULE_TARGET_ID)
        .send()
        .await?;
    moto.dynamodb
        .delete_table()
        .table_name(&config.indexes[0].table)
        .send()
        .await?;

    let report = stack::up(&sdk, &config).await?;
    let mut changed: Vec<(&str, String)> = report
        .changes
        .iter()
        .filter(|c| c.action != Action::Unchanged)
        .map(|c| (c.kind, c.name.clone()))
        .collect();
    changed.sort();
    let mut expected = vec![
        ("queue", quarantine.clone()),
        ("table", config.indexes[0].table.clone()),
        // The new index table's tombstones expire by TTL.
        (
            "ttl",
            format!("{}/{}", config.indexes[0].table, model::version::TOMBSTONE_ATTRIBUTE),
        ),
        (
            "target",
            format!("{rule} -> {}", stack::rule_queue_name(&config, route)),
        ),
    ];
    expected.sort();
    ensure!(
        changed == expected,
        "changed {changed:?}, expected {expected:?}\n{report}"
    );
    assert_stack_exists(&moto, &sdk, &config).await?;
    stack::down(&sdk, &config).await?;
    Ok(())
}

#[tokio::test]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn up_refuses_a_table_whose_keys_differ() -> Result<()> {
    let moto = Moto::connect("up_refuses_a_table_whose_keys_differ").await;
    let config = test_config("up-conflict");
    let mut other = config.clone();
    // The same table name, with the keys swapped.
    let table = &mut other.tables[0];
    let sort_key = table.sort_key.clone().unwrap_or_else(|| unreachable!());
    table.sort_key = Some(table.partition_key.clone());
    table.partition_key = sort_key;
    other.edge_sets.clear();
    other.routes.clear();
    moto.create_tables(&other).await?;

    let sdk = sdk(&moto).await;
    match stack::up(&sdk, &config).await {
        Err(e @ StackError::Conflict { .. }) => {
            let message = e.to_string();
            ensure!(message.contains(&config.tables[0].name), "{message}");
            ensure!(message.contains("partition key `target`"), "{message}");
        }
        other => return Err(anyhow!("expected a conflict, got {other:?}")),
    }
    stack::down(&sdk, &config).await?;
    Ok(())
}

#[tokio::test]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn rules_deliver_classified_events_to_their_queues() -> Result<()> {
    let moto = Moto::connect("rules_deliver_classified_events_to_their_queues").await;
    let config = test_config("rules-deliver");
    let sdk = sdk(&moto).await;
    let report = stack::up(&sdk, &config).await?;
    let records = &config.tables[0].name;
    let layers = &config.tables[2].name;
    // A TTL expiry of a node, and of a layer, classified by the model.
    let expiry = |table: &str, keys: serde_json::Value, seq: &str| {
        serde_json::json!({
            "eventID": seq, "eventName": "REMOVE", "eventSource": "aws:dynamodb", "awsRegion": "us-east-1",
            "eventSourceARN": format!("arn:aws:dynamodb:us-east-1:123456789012:table/{table}/stream/2026"),
            "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
            "dynamodb": {"Keys": keys.clone(), "OldImage": keys, "SequenceNumber": seq, "SizeBytes": 10,
                         "StreamViewType": "NEW_AND_OLD_IMAGES"}
        })
    };
    let node = expiry(
        records,
        serde_json::json!({"source": {"S": "GOAL-7"}, "target": {"S": "GOAL-7"}}),
        "100",
    );
    let layer = expiry(
        layers,
        serde_json::json!({"pk": {"S": "lyr#eu"}, "sk": {"S": "v1"}}),
        "200",
    );
    let mut sent = BTreeMap::new();
    for record in [node, layer] {
        let raw = serde_json::value::to_raw_value(&record)?;
        let received = model::record::parse_record(&raw);
        let change = received.record.map_err(|e| anyhow!("{e}"))?;
        let table = model::event::table_of(&config, &change)?;
        let events = model::event::classify(&config, table, &change)?;
        ensure!(events.len() == 1, "{events:?}");
        let event = &events[0];
        let output = self::events(&sdk)
            .put_events()
            .entries(
                aws_sdk_eventbridge::types::PutEventsRequestEntry::builder()
                    .event_bus_name(&config.events.bus)
                    .source(&event.source)
                    .detail_type(&event.detail_type)
                    .detail(event.detail_json())
                    .build(),
            )
            .send()
            .await?;
        ensure!(output.failed_entry_count == 0, "{output:?}");
        sent.insert(event.detail_type.clone(), change.sequence_number.clone());
    }
    // Each rule's queue holds exactly the event of its route.
    for route in &config.routes {
        let name = stack::rule_queue_name(&config, route);
        let url = report.queue_url(&name).ok_or_else(|| anyhow!("no URL for {name}"))?;
        let mut bodies = Vec::new();
        loop {
            let output = moto
                .sqs
                .receive_message()
                .queue_url(url)
                .max_number_of_messages(10)
                .wait_time_seconds(1)
                .send()
                .await?;
            let messages = output.messages.unwrap_or_default();
            if messages.is_empty() {
                break;
            }
            for m in messages {
                let body: serde_json::Value = serde_json::from_str(m.body().unwrap_or("null"))?;
                bodies.push(body);
                if let Some(handle) = m.receipt_handle() {
                    moto.sqs
                        .delete_message()
                        .queue_url(url)
                        .receipt_handle(handle)
                        .send()
                        .await?;
                }
            }
        }
        match sent.get(&route.detail_type) {
            Some(seq) => {
                ensure!(bodies.len() == 1, "{name}: {bodies:?}");
                ensure!(bodies[0]["detail-type"] == route.detail_type.as_str(), "{bodies:?}");
                ensure!(bodies[0]["detail"]["sequenceNumber"] == seq.as_str(), "{bodies:?}");
                ensure!(bodies[0]["detail"]["table"] == route.table.as_str(), "{bodies:?}");
            }
            None => ensure!(bodies.is_empty(), "{name} got events of other routes: {bodies:?}"),
        }
    }
    stack::down(&sdk, &config).await?;
    Ok(())
}

#[tokio::test]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn down_removes_everything_and_a_second_down_finds_nothing() -> Result<()> {
    let moto = Moto::connect("down_removes_everything_and_a_second_down_finds_nothing").await;
    let config = test_config("down-twice");
    let sdk = sdk(&moto).await;
    stack::up(&sdk, &config).await?;
    let first = stack::down(&sdk, &config).await?;
    ensure!(first.changes.iter().all(|c| c.action == Action::Deleted), "{first}");
    for table in config
        .tables
        .iter()
        .map(|t| &t.name)
        .chain(config.indexes.iter().map(|i| &i.table))
    {
        let result = moto.dynamodb.describe_table().table_name(table).send().await;
        ensure!(
            result.as_ref().err().and_then(|e| e.code()) == Some("ResourceNotFoundException"),
            "table {table} still exists: {result:?}"
        );
    }
    for name in expected_queues(&config) {
        ensure!(queue_url(&moto, &name).await?.is_none(), "queue {name} still exists");
    }
    let bus = events(&sdk).describe_event_bus().name(&config.events.bus).send().await;
    ensure!(bus.is_err(), "bus still exists: {bus:?}");
    let second = stack::down(&sdk, &config).await?;
    ensure!(!second.changed(), "{second}");
    ensure!(second.changes.iter().all(|c| c.action == Action::Absent), "{second}");
    Ok(())
}

/// A plain test: the CLI starts its own runtime, which cannot nest in the test's.
#[test]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
fn the_cli_says_when_nothing_changes_and_down_needs_yes() -> Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    let moto = runtime.block_on(Moto::connect("the_cli_says_when_nothing_changes_and_down_needs_yes"));
    let config = test_config("cli");
    // The CLI reads a file: write the prefixed names into a copy of the example.
    let mut text = EXAMPLE_CONFIG.to_owned();
    let prefix = config.tables[0].name.trim_end_matches("records").to_owned();
    for (from, to) in [
        ("[table.records]", format!("[table.{prefix}records]")),
        ("[table.issues]", format!("[table.{prefix}issues]")),
        ("[table.layers]", format!("[table.{prefix}layers]")),
        ("table = \"records\"", format!("table = \"{prefix}records\"")),
        ("table = \"issues\"", format!("table = \"{prefix}issues\"")),
        ("table = \"layers\"", format!("table = \"{prefix}layers\"")),
        (
            "table = \"IssueAttribIndex\"",
            format!("table = \"{prefix}IssueAttribIndex\""),
        ),
        ("bus = \"streamdex\"", format!("bus = \"{prefix}streamdex\"")),
    ] {
        text = text.replace(from, &to);
    }
    let dir = std::env::temp_dir().join(format!("{prefix}cli"));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("streamdex.toml");
    std::fs::write(&path, &text)?;
    ensure!(config::load(&path)? == config, "the rewritten file is the test config");

    let endpoint = || Endpoint {
        endpoint_url: Some(moto.endpoint.clone()),
        region: Some("us-east-1".to_owned()),
    };
    let up = UpArgs {
        config: path.clone(),
        endpoint: endpoint(),
    };
    let run_up = || {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = up_with(&up, &mut out, &mut err);
        (
            code,
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        )
    };
    let (code, out, err) = run_up();
    ensure!(code == 0, "up: {code}\n{out}\n{err}");
    ensure!(out.contains("created   table"), "{out}");
    let (code, out, err) = run_up();
    ensure!(code == 0, "up: {code}\n{out}\n{err}");
    ensure!(out.contains("nothing to change"), "{out}");
    ensure!(!out.contains("created"), "{out}");

    let down = |yes| DownArgs {
        config: path.clone(),
        endpoint: endpoint(),
        yes,
    };
    let run_down = |args: DownArgs| {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = down_with(&args, &mut out, &mut err);
        (
            code,
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        )
    };
    let (code, out, _) = run_down(down(false));
    ensure!(code == 2, "down without --yes: {code}\n{out}");
    ensure!(out.contains(&config.tables[0].name), "{out}");
    let still = runtime.block_on(moto.dynamodb.describe_table().table_name(&config.tables[0].name).send());
    ensure!(still.is_ok(), "down without --yes deleted a table");
    let (code, out, err) = run_down(down(true));
    ensure!(code == 0, "down --yes: {code}\n{out}\n{err}");
    ensure!(out.contains("deleted   table"), "{out}");

    // A bad config is exit 2, an unreadable one exit 1.
    std::fs::write(&path, "[table.x]\n")?;
    let (code, _, err) = run_up();
    ensure!(code == 2, "bad config: {code}\n{err}");
    std::fs::remove_dir_all(&dir)?;
    let (code, _, err) = run_up();
    ensure!(code == 1, "missing config: {code}\n{err}");
    Ok(())
}
