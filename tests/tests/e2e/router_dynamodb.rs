//! The event router and the TTL reaper against the moto server, over real
//! HTTP: `streamdex up` creates the bus, one rule per route (with the
//! pattern the config generates) and an SQS queue as each rule's target;
//! the router publishes a recorded history with PutEvents; each queue must
//! hold exactly the events its rule matches. moto never expires items and
//! never sets `userIdentity`, so the expiries come from the recorded
//! fixture (`tests/fixtures/router-history.jsonl`), or are marked on a
//! real REMOVE record before it is routed.
//!
//! They need a moto server at `STREAMDEX_TEST_ENDPOINT`, so they are
//! `#[ignore]`d: `scripts/test.sh` starts one and runs them with
//! `--include-ignored`; run so without the variable, they fail at once
//! saying what is missing.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{anyhow, ensure, Context, Result};
use aws_config::SdkConfig;
use aws_kit::clients::sqs_client;
use aws_kit::quarantine::sqs::SqsQuarantine;
use event_router::publish::eventbridge::{eventbridge_client, EventBridgePublisher};
use event_router::reaper::dynamo::DynamoGraph;
use event_router::{Options as RouterOptions, Reaper, Router};
use infra::stack::{self, UpReport};
use model::config::{self, EXAMPLE_CONFIG};
use model::{Config, Image, Value};
use stream_indexer::store::dynamo::{dynamodb_client, DynamoStore};
use stream_indexer::{Backoff, Indexer, MemoryQuarantine, Options};
use streamdex_tests::derived::{drain, verify};
use streamdex_tests::images::s;
use streamdex_tests::moto::{lambda_event, prefixed, unique_prefix, Moto, StreamReader};

const FIXTURE: &str = include_str!("../../fixtures/router-history.jsonl");

fn example() -> Config {
    config::parse(EXAMPLE_CONFIG, "streamdex.example.toml").unwrap_or_else(|e| panic!("example config: {e}"))
}

async fn sdk(moto: &Moto) -> SdkConfig {
    let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".to_owned());
    stack::sdk_config(Some(&moto.endpoint), Some(&region)).await
}

/// A fresh stack (tables, bus, rules, queues) for one test.
async fn setup(moto: &Moto, test: &str) -> Result<(Arc<Config>, SdkConfig, UpReport)> {
    let config = prefixed(&example(), &unique_prefix(test));
    let sdk = sdk(moto).await;
    let report = stack::up(&sdk, &config).await.context("streamdex up")?;
    Ok((Arc::new(config), sdk, report))
}

fn queue_url<'r>(report: &'r UpReport, name: &str) -> Result<&'r str> {
    report
        .queue_url(name)
        .ok_or_else(|| anyhow!("up created no queue {name}"))
}

/// Every message a queue holds now (EventBridge's delivery to an SQS target
/// is done when PutEvents returns, on moto), deleted as read.
async fn take_messages(moto: &Moto, url: &str) -> Result<Vec<serde_json::Value>> {
    let mut out = Vec::new();
    loop {
        let output = moto
            .sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .send()
            .await
            .with_context(|| format!("ReceiveMessage {url}"))?;
        let messages = output.messages.unwrap_or_default();
        if messages.is_empty() {
            return Ok(out);
        }
        for message in messages {
            let body = message.body.unwrap_or_default();
            out.push(serde_json::from_str(&body).with_context(|| format!("message body is not JSON: {body}"))?);
            if let Some(handle) = message.receipt_handle {
                moto.sqs
                    .delete_message()
                    .queue_url(url)
                    .receipt_handle(handle)
                    .send()
                    .await
                    .context("DeleteMessage")?;
            }
        }
    }
}

/// The fixture's records with the table names of `config` (prefixed).
fn fixture_records(config: &Config) -> Vec<String> {
    FIXTURE
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let mut line = line.to_owned();
            for table in &config.tables {
                let plain = table.name.rsplit('-').next().unwrap_or(&table.name);
                line = line.replace(&format!(":table/{plain}/"), &format!(":table/{}/", table.name));
            }
            line
        })
        .collect()
}

/// (detail type, sequence number suffix, partition key) of an event body.
fn summary(event: &serde_json::Value, partition_key: &str) -> (String, String, String) {
    let detail = &event["detail"];
    let seq = detail["sequenceNumber"].as_str().unwrap_or("?");
    (
        event["detail-type"].as_str().unwrap_or("?").to_owned(),
        seq[seq.len().saturating_sub(3)..].to_owned(),
        detail["keys"][partition_key]["S"].as_str().unwrap_or("?").to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn each_rule_receives_exactly_the_events_of_its_route() -> Result<()> {
    let moto = Moto::connect("each_rule_receives_exactly_the_events_of_its_route").await;
    let (config, sdk, report) = setup(&moto, "router-rules").await?;
    let quarantine = SqsQuarantine::new(
        sqs_client(&sdk),
        queue_url(&report, &stack::quarantine_queue_name(&config))?,
    );
    let router = Router::new(
        config.clone(),
        EventBridgePublisher::new(eventbridge_client(&sdk), config.events.bus.clone()),
        quarantine,
        RouterOptions::default(),
    );

    // The recorded history, plus a goal too large to travel with its images.
    let mut lines = fixture_records(&config);
    let mut big: serde_json::Value = serde_json::from_str(&lines[0])?;
    big["dynamodb"]["SequenceNumber"] = "55500000000000000000000000099".into();
    for part in ["Keys", "NewImage"] {
        big["dynamodb"][part]["source"]["S"] = "GOAL-big".into();
        big["dynamodb"][part]["target"]["S"] = "GOAL-big".into();
    }
    big["dynamodb"]["NewImage"]["notes"]["S"] = "n".repeat(300 * 1024).into();
    lines.push(big.to_string());

    // Lambda-sized batches of 4.
    let mut published = BTreeMap::new();
    for batch in lines.chunks(4) {
        let payload = format!("{{\"Records\":[{}]}}", batch.join(","));
        let outcome = router.handle(payload.as_bytes()).await?;
        ensure!(outcome.failed.is_none(), "batch failed: {:?}", outcome.failures);
        ensure!(outcome.quarantined.is_empty(), "quarantined: {:?}", outcome.quarantined);
        for (detail_type, n) in outcome.stats.published_by_type {
            *published.entry(detail_type).or_insert(0) += n;
        }
    }
    let counts: Vec<(&str, usize)> = published.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    ensure!(
        counts == [("Goal Inserted", 2), ("Layer Expired", 1), ("Node Expired", 2)],
        "published {counts:?}"
    );

    let mut received: BTreeMap<String, Vec<(String, String, String)>> = BTreeMap::new();
    let mut bodies = Vec::new();
    for route in &config.routes {
        let url = queue_url(&report, &stack::rule_queue_name(&config, route))?;
        let pk = &config.table(&route.table).context("route table")?.partition_key;
        let mut events: Vec<(String, String, String)> = Vec::new();
        for event in take_messages(&moto, url).await? {
            ensure!(event["source"] == "streamdex", "source: {}", event["source"]);
            events.push(summary(&event, pk));
            bodies.push(event);
        }
        events.sort();
        received.insert(route.detail_type.clone(), events);
    }
    let own = |items: &[(&str, &str, &str)]| -> Vec<(String, String, String)> {
        items
            .iter()
            .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
            .collect()
    };
    let want: BTreeMap<String, Vec<(String, String, String)>> = [
        (
            "Goal Inserted",
            own(&[
                ("Goal Inserted", "001", "GOAL-77"),
                ("Goal Inserted", "099", "GOAL-big"),
            ]),
        ),
        (
            "Node Expired",
            own(&[("Node Expired", "004", "USER-5"), ("Node Expired", "011", "GOAL-78")]),
        ),
        (
            "Layer Expired",
            own(&[("Layer Expired", "007", "lyr#eu-west-1.requests")]),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    ensure!(received == want, "rules received {received:#?}\nwanted {want:#?}");

    // Numbers and binary arrive exactly as the stream had them.
    let layer = bodies
        .iter()
        .find(|b| b["detail-type"] == "Layer Expired")
        .context("the layer event")?;
    let old = &layer["detail"]["oldImage"];
    ensure!(old["total"]["N"] == "12345678901234567890123456789012345678", "{old}");
    ensure!(
        old["ratio"]["N"] == "-0.000000000000000000000000000000000000001",
        "{old}"
    );
    ensure!(old["digest"]["B"] == "AAH/gA==", "{old}");
    ensure!(layer["detail"]["expired"] == true);
    // The large goal went without its images, flagged.
    let big = bodies
        .iter()
        .find(|b| b["detail"]["keys"]["source"]["S"] == "GOAL-big")
        .context("the big goal")?;
    ensure!(big["detail"]["imagesOmitted"] == true, "{}", big["detail"]);
    ensure!(big["detail"].get("newImage").is_none());
    Ok(())
}

fn graph_item(source: &str, target: &str, role: Option<&str>) -> Image {
    let mut image: Image = [("source".to_owned(), s(source)), ("target".to_owned(), s(target))].into();
    if let Some(role) = role {
        image.insert("gsi0".to_owned(), s(role));
    }
    image.insert("name".to_owned(), s("x"));
    image
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn the_reaper_removes_every_edge_of_an_expired_node() -> Result<()> {
    let moto = Moto::connect("the_reaper_removes_every_edge_of_an_expired_node").await;
    let (config, sdk, report) = setup(&moto, "reaper").await?;
    let records = config.tables[0].name.clone();
    ensure!(records.ends_with("records"), "the first table is records: {records}");
    let client = dynamodb_client(&sdk);
    let indexer = Indexer::new(
        config.clone(),
        DynamoStore::new(client.clone(), config.clone()),
        MemoryQuarantine::new(),
        Options::default(),
    );
    let router = Router::new(
        config.clone(),
        EventBridgePublisher::new(eventbridge_client(&sdk), config.events.bus.clone()),
        MemoryQuarantine::new(),
        RouterOptions::default(),
    );
    let reaper = Reaper::new(
        config.clone(),
        DynamoGraph::new(client, config.clone()),
        Backoff::default(),
    );

    // A small graph around USER-42.
    for node in ["USER-42", "USER-43", "GOAL-7", "GOAL-8", "TEAM-1"] {
        moto.put(&records, &graph_item(node, node, None)).await?;
    }
    let edges = [
        ("GOAL-7", "GOALMEMBERSHIP-USER-42", "400-CONTRIBUTOR"),
        ("GOAL-7", "GOALMEMBERSHIP-USER-43", "400-CONTRIBUTOR"),
        ("GOAL-8", "GOALMEMBERSHIP-USER-42", "500-LEAD"),
        ("TEAM-1", "TEAMMEMBERSHIP-USER-42", "100-MEMBER"),
        ("USER-42", "TEAMMEMBERSHIP-TEAM-1", "100-MEMBER"),
        ("USER-42", "GOALMEMBERSHIP-GOAL-7", "400-CONTRIBUTOR"),
    ];
    for (source, target, role) in edges {
        moto.put(&records, &graph_item(source, target, Some(role))).await?;
    }
    let mut reader = StreamReader::open(&moto, &records).await?;
    let mut sizes = std::iter::repeat(5);
    drain(&moto, &indexer, std::slice::from_mut(&mut reader), &mut sizes).await?;
    verify(&moto, &config).await?;

    // USER-42 expires: moto deletes it as a user would; the record is
    // marked as the TTL service's before the consumers see it.
    let key: Image = [("source".to_owned(), s("USER-42")), ("target".to_owned(), s("USER-42"))].into();
    moto.delete(&records, &key).await?;
    let mut expiry = reader.read_new(&moto).await?;
    ensure!(expiry.len() == 1, "one REMOVE record, got {}", expiry.len());
    let mut json: serde_json::Value = serde_json::from_str(&expiry[0].json)?;
    json["userIdentity"] = serde_json::json!({"type": "Service", "principalId": "dynamodb.amazonaws.com"});
    expiry[0].json = json.to_string();
    let payload = lambda_event(&expiry);
    ensure!(indexer.handle(&payload).await?.failed.is_none());
    let routed = router.handle(&payload).await?;
    ensure!(routed.stats.published == 1, "{:?}", routed.stats);

    // The expiry rule's queue stands in for the reaper's trigger.
    let expired_route = config.routes.iter().find(|r| r.reap).context("a reap route")?;
    let url = queue_url(&report, &stack::rule_queue_name(&config, expired_route))?;
    let events = take_messages(&moto, url).await?;
    ensure!(events.len() == 1, "the reaper's queue holds {} events", events.len());
    let body = events[0].to_string();
    let reaped = reaper.reap(body.as_bytes()).await?;
    ensure!(
        (reaped.out_edges, reaped.in_edges) == (2, 3),
        "out {} in {}",
        reaped.out_edges,
        reaped.in_edges
    );

    // The deletes flow through the stream; the indexer follows.
    drain(&moto, &indexer, std::slice::from_mut(&mut reader), &mut sizes).await?;
    let left = moto.scan(&records).await?;
    let touching: Vec<&Image> = left
        .iter()
        .filter(|i| {
            i.get("source") == Some(&s("USER-42"))
                || matches!(i.get("target"), Some(Value::S(t)) if t.ends_with("-USER-42"))
        })
        .collect();
    ensure!(touching.is_empty(), "edges still touch USER-42: {touching:?}");
    verify(&moto, &config).await?;

    // Redelivered: nothing more to delete.
    let again = reaper.reap(body.as_bytes()).await?;
    ensure!(again.deleted == 0 && !again.node_exists, "{again:?}");
    Ok(())
}
