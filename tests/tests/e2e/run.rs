//! `streamdex run`'s engine against the moto server over real HTTP: writes
//! to the tables reach the index and the edge sets through the runner's
//! own stream polling, a restart resumes from the saved checkpoints without
//! redelivering, the reaper is fed from its rule's queue, and local TTL
//! expires a node the way DynamoDB's TTL service would.
//!
//! They need a moto server at `STREAMDEX_TEST_ENDPOINT`, so they are
//! `#[ignore]`d: `scripts/test.sh` starts one and runs them with
//! `--include-ignored`; run so without the variable, they fail at once
//! saying what is missing.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, ensure, Context, Result};
use aws_kit::clock::SystemClock;
use event_router::publish::eventbridge::{eventbridge_client, EventBridgePublisher};
use event_router::{Options as RouterOptions, Router};
use infra::runner::checkpoint::Checkpoints;
use infra::runner::local::{self, Wiring};
use infra::runner::{RunEvent, Runner};
use infra::stack;
use model::config::{self, EXAMPLE_CONFIG};
use model::filter::Consumer;
use model::{Config, Image, Value};
use stream_indexer::MemoryQuarantine;
use streamdex_tests::derived::verify;
use streamdex_tests::images::s;
use streamdex_tests::moto::{lambda_event, prefixed, unique_prefix, Moto, StreamReader};
use streamdex_tests::runner::run_until_idle;

fn item(pairs: &[(&str, &str)]) -> Image {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), s(v))).collect()
}

async fn setup(moto: &Moto, test: &str) -> Result<(Arc<Config>, aws_config::SdkConfig)> {
    let config = prefixed(
        &config::parse(EXAMPLE_CONFIG, "streamdex.example.toml").map_err(|e| anyhow!("{e}"))?,
        &unique_prefix(test),
    );
    let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".to_owned());
    let sdk = stack::sdk_config(Some(&moto.endpoint), Some(&region)).await;
    stack::up(&sdk, &config).await.context("streamdex up")?;
    Ok((Arc::new(config), sdk))
}

async fn runner(sdk: &aws_config::SdkConfig, config: &Arc<Config>, checkpoints: Checkpoints) -> Result<Runner> {
    wired_runner(sdk, config, checkpoints, None).await
}

async fn wired_runner(
    sdk: &aws_config::SdkConfig,
    config: &Arc<Config>,
    checkpoints: Checkpoints,
    local_ttl_every_ms: Option<u64>,
) -> Result<Runner> {
    // No batching window: each round invokes with what it read.
    let window_ms = Some(0);
    let wiring = Wiring {
        reaper: true,
        discover_every_ms: 10_000,
        poll_interval_ms: 250,
        local_ttl_every_ms,
        window_ms,
        delivery: Default::default(),
    };
    Ok(local::connect(sdk, config.clone(), Arc::new(SystemClock), checkpoints, wiring, None).await?)
}

/// Runs rounds until `done` holds (checked after each round), within `limit`;
/// returns the events of those rounds.
async fn run_until<F, Fut>(runner: &mut Runner, limit: Duration, mut done: F) -> Result<Vec<RunEvent>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool>>,
{
    let deadline = Instant::now() + limit;
    let mut events = Vec::new();
    loop {
        let round = runner.round().await;
        events.extend(round.events);
        if done().await? {
            return Ok(events);
        }
        if Instant::now() > deadline {
            let log: Vec<String> = events.iter().map(ToString::to_string).collect();
            bail!("not done within {limit:?}; the runner said:\n{}", log.join("\n"));
        }
        if !round.busy {
            tokio::time::sleep(Duration::from_millis(round.wait_ms)).await;
        }
    }
}

fn members(node: Option<Image>) -> Vec<String> {
    match node.and_then(|mut n| n.remove("edges")) {
        Some(Value::Ss(mut m)) => {
            m.sort();
            m
        }
        _ => Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn writes_reach_the_index_and_a_restart_resumes_from_the_checkpoints() -> Result<()> {
    let moto = Moto::connect("writes_reach_the_index_and_a_restart_resumes_from_the_checkpoints").await;
    let (config, sdk) = setup(&moto, "run-resume").await?;
    let records = config.tables[0].name.clone();
    let issues = config.tables[1].name.clone();
    let index_table = config.indexes[0].table.clone();
    let state = std::env::temp_dir().join(format!("{}checkpoints.json", unique_prefix("run-resume")));

    let mut first = runner(&sdk, &config, Checkpoints::default()).await?;
    moto.put(
        &records,
        &item(&[("source", "GOAL-1"), ("target", "GOAL-1"), ("name", "a goal")]),
    )
    .await?;
    moto.put(
        &records,
        &item(&[
            ("source", "GOAL-1"),
            ("target", "GOALMEMBERSHIP-USER-1"),
            ("gsi0", "400-CONTRIBUTOR"),
        ]),
    )
    .await?;
    let node = item(&[("source", "GOAL-1"), ("target", "GOAL-1")]);
    let events = run_until(&mut first, Duration::from_secs(20), || async {
        Ok(!members(moto.get(&records, &node).await?).is_empty())
    })
    .await?;
    ensure!(
        events.iter().any(|e| matches!(e, RunEvent::ShardStarted { .. })),
        "no shard was started"
    );
    // Drain what is left (the indexer's own edge-set write comes back as a MODIFY),
    // until every shard has looked at its tip since the last round that did something.
    run_until_idle(&mut first, Duration::from_secs(20)).await?;
    first.checkpoints().save(&state)?;
    let saved = Checkpoints::load(&state)?;
    drop(first);

    // While nothing runs: an issue with two custom fields.
    let mut issue = item(&[("id", "issue-9"), ("rel", "issue-9"), ("name", "n"), ("state", "open")]);
    issue.insert("num".to_owned(), Value::N("9".to_owned()));
    issue.insert(
        "custom_fields".to_owned(),
        Value::M(
            [
                ("f1".to_owned(), s("x")),
                ("f2".to_owned(), Value::N("-4.5".to_owned())),
            ]
            .into(),
        ),
    );
    moto.put(&issues, &issue).await?;

    let mut second = runner(&sdk, &config, saved.clone()).await?;
    let events = run_until(&mut second, Duration::from_secs(20), || async {
        Ok(moto.scan(&index_table).await?.len() == 2)
    })
    .await?;
    // The records table's consumers start after their checkpoints and see nothing new.
    let arn = saved
        .streams
        .iter()
        .find(|(_, s)| s.table == records)
        .map(|(arn, _)| arn.clone())
        .context("a checkpoint of the records stream")?;
    let records_checkpoint = saved
        .streams
        .get(&arn)
        .and_then(|s| s.shards.values().next())
        .and_then(|c| c.get(Consumer::Indexer.as_str()))
        .and_then(|p| p.sequence_number.clone())
        .context("the records indexer's checkpoint")?;
    for e in &events {
        if let RunEvent::Invoked { table, first, .. } = e {
            ensure!(
                table != &records || model::sequence::cmp(first, &records_checkpoint).is_gt(),
                "record {first} of {table} delivered again after the restart (checkpoint {records_checkpoint})"
            );
        }
        if let RunEvent::ShardStarted { table, from, .. } = e {
            if table == &records {
                ensure!(
                    matches!(from, infra::runner::stream::Position::After(_)),
                    "{table} restarted from {from}"
                );
            }
        }
    }
    verify(&moto, &config).await?;
    let _ = std::fs::remove_file(state);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn the_reaper_is_fed_from_its_rule_queue() -> Result<()> {
    let moto = Moto::connect("the_reaper_is_fed_from_its_rule_queue").await;
    let (config, sdk) = setup(&moto, "run-reaper").await?;
    let records = config.tables[0].name.clone();
    for node in ["USER-42", "GOAL-7", "TEAM-1"] {
        moto.put(&records, &item(&[("source", node), ("target", node), ("name", "x")]))
            .await?;
    }
    for (source, target, role) in [
        ("GOAL-7", "GOALMEMBERSHIP-USER-42", "400-CONTRIBUTOR"),
        ("TEAM-1", "TEAMMEMBERSHIP-USER-42", "100-MEMBER"),
        ("USER-42", "TEAMMEMBERSHIP-TEAM-1", "100-MEMBER"),
    ] {
        moto.put(
            &records,
            &item(&[("source", source), ("target", target), ("gsi0", role)]),
        )
        .await?;
    }
    let mut reader = StreamReader::open(&moto, &records).await?;
    reader.read_new(&moto).await?;

    // USER-42 expires. moto sets no userIdentity, so the REMOVE record is
    // marked as the TTL service's and routed here; EventBridge delivers the
    // expiry event to the reap rule's queue, which the runner polls.
    let key = item(&[("source", "USER-42"), ("target", "USER-42")]);
    moto.delete(&records, &key).await?;
    let mut expiry = reader.read_new(&moto).await?;
    ensure!(expiry.len() == 1, "one REMOVE record, got {}", expiry.len());
    let mut json: serde_json::Value = serde_json::from_str(&expiry[0].json)?;
    json["userIdentity"] = serde_json::json!({"type": "Service", "principalId": "dynamodb.amazonaws.com"});
    expiry[0].json = json.to_string();
    let router = Router::new(
        config.clone(),
        EventBridgePublisher::new(eventbridge_client(&sdk), config.events.bus.clone()),
        MemoryQuarantine::new(),
        RouterOptions::default(),
    );
    ensure!(router.handle(&lambda_event(&expiry)).await?.stats.published == 1);

    let mut runner = runner(&sdk, &config, Checkpoints::default()).await?;
    let events = run_until(&mut runner, Duration::from_secs(30), || async {
        let left = moto.scan(&records).await?;
        Ok(!left.iter().any(|i| {
            i.get("source") == Some(&s("USER-42"))
                || matches!(i.get("target"), Some(Value::S(t)) if t.ends_with("-USER-42"))
        }))
    })
    .await?;
    ensure!(
        events
            .iter()
            .any(|e| matches!(e, RunEvent::Reaped(text) if text.contains("USER-42"))),
        "no reap was reported"
    );
    // The runner's indexer follows the reaper's deletes: the edge sets agree with the table.
    run_until(&mut runner, Duration::from_secs(20), || async {
        Ok(verify(&moto, &config).await.is_ok())
    })
    .await?;
    Ok(())
}

/// Local TTL end to end: a node with in- and out-edges gets a TTL in the
/// past; the runner deletes it as the TTL service would, its REMOVE
/// reaches the router as an expiry, EventBridge routes `Node Expired` to
/// the reap rule's queue, the runner feeds the reaper from it, the reaper
/// deletes the edges, and every edge set equals a recomputation. Items
/// whose TTL is in the future, more than five years old or not a number
/// stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn local_ttl_expires_a_node_and_the_reaper_deletes_its_edges() -> Result<()> {
    let moto = Moto::connect("local_ttl_expires_a_node_and_the_reaper_deletes_its_edges").await;
    let (config, sdk) = setup(&moto, "run-ttl").await?;
    let records = config.tables[0].name.clone();
    let ttl = config.tables[0]
        .ttl_attribute
        .clone()
        .context("the example's records table has a TTL attribute")?;
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    let with_ttl = |node: &str, value: Value| {
        let mut image = item(&[("source", node), ("target", node), ("name", "x")]);
        image.insert(ttl.clone(), value);
        image
    };
    let staying = [
        ("GOAL-7", Value::N((now_s + 3600).to_string())),
        (
            "TEAM-1",
            Value::N((now_s - model::ttl::MAX_PAST_SECONDS - 60).to_string()),
        ),
        ("TEAM-2", Value::S((now_s - 60).to_string())),
    ];
    for (node, value) in &staying {
        moto.put(&records, &with_ttl(node, value.clone())).await?;
    }
    moto.put(
        &records,
        &item(&[("source", "USER-42"), ("target", "USER-42"), ("name", "x")]),
    )
    .await?;
    for (source, target, role) in [
        ("GOAL-7", "GOALMEMBERSHIP-USER-42", "400-CONTRIBUTOR"),
        ("TEAM-1", "TEAMMEMBERSHIP-USER-42", "100-MEMBER"),
        ("USER-42", "TEAMMEMBERSHIP-TEAM-1", "100-MEMBER"),
        ("USER-42", "TEAMMEMBERSHIP-TEAM-2", "100-MEMBER"),
    ] {
        moto.put(
            &records,
            &item(&[("source", source), ("target", target), ("gsi0", role)]),
        )
        .await?;
    }
    let mut runner = wired_runner(&sdk, &config, Checkpoints::default(), Some(200)).await?;
    run_until_idle(&mut runner, Duration::from_secs(20)).await?;
    ensure!(verify(&moto, &config).await.is_ok(), "the edge sets before the expiry");

    // USER-42's TTL passes (a second ago).
    moto.put(&records, &with_ttl("USER-42", Value::N((now_s - 1).to_string())))
        .await?;
    let touches_user = |i: &Image| {
        i.get("source") == Some(&s("USER-42"))
            || matches!(i.get("target"), Some(Value::S(t)) if t.ends_with("-USER-42"))
    };
    let events = run_until(&mut runner, Duration::from_secs(30), || async {
        Ok(!moto.scan(&records).await?.iter().any(touches_user))
    })
    .await?;
    ensure!(
        events
            .iter()
            .any(|e| matches!(e, RunEvent::Expired(text) if text.contains("USER-42"))),
        "local TTL did not report the deletion"
    );
    ensure!(
        events
            .iter()
            .any(|e| matches!(e, RunEvent::Reaped(text) if text.contains("USER-42") && text.contains("deleted 2 out-edges and 2 in-edges"))),
        "the reaper was not fed the Node Expired event from its rule's queue, or deleted other than its 2 out- and 2 in-edges: {:?}",
        events.iter().filter(|e| matches!(e, RunEvent::Reaped(_))).map(ToString::to_string).collect::<Vec<_>>()
    );
    run_until_idle(&mut runner, Duration::from_secs(20)).await?;
    verify(&moto, &config)
        .await
        .context("every edge set equals a recomputation")?;
    for (node, _) in &staying {
        ensure!(
            moto.get(&records, &item(&[("source", node), ("target", node)]))
                .await?
                .is_some(),
            "{node} was deleted though its TTL is not one the TTL service acts on"
        );
    }
    ensure!(
        runner.checkpoints().expiries.len() == 1,
        "the deletion is kept in the checkpoints until the stream drops its record"
    );
    Ok(())
}

/// Local TTL notes a deletion in the checkpoints before it makes it: a
/// runner stopped right after the sweep that deleted an expired node,
/// before its REMOVE record was read, leaves the record to the next runner,
/// which still delivers it as a TTL deletion: the reaper deletes the node's
/// in-edge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn a_local_ttl_deletion_noted_before_a_restart_is_still_an_expiry() -> Result<()> {
    let moto = Moto::connect("a_local_ttl_deletion_noted_before_a_restart_is_still_an_expiry").await;
    let (config, sdk) = setup(&moto, "run-ttl-restart").await?;
    let records = config.tables[0].name.clone();
    let ttl = config.tables[0].ttl_attribute.clone().context("a TTL attribute")?;
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    for node in ["USER-42", "GOAL-7"] {
        moto.put(&records, &item(&[("source", node), ("target", node), ("name", "x")]))
            .await?;
    }
    let edge = item(&[
        ("source", "GOAL-7"),
        ("target", "GOALMEMBERSHIP-USER-42"),
        ("gsi0", "400-CONTRIBUTOR"),
    ]);
    moto.put(&records, &edge).await?;
    let mut expired = item(&[("source", "USER-42"), ("target", "USER-42"), ("name", "x")]);
    expired.insert(ttl, Value::N((now_s - 1).to_string()));
    moto.put(&records, &expired).await?;

    let mut first = wired_runner(&sdk, &config, Checkpoints::default(), Some(60_000)).await?;
    first.round().await;
    ensure!(
        first.checkpoints().expiries.len() == 1 && !first.checkpoints().expiries[0].deleted,
        "the first sweep notes the deletion without making it: {:?}",
        first.checkpoints().expiries
    );
    let node = item(&[("source", "USER-42"), ("target", "USER-42")]);
    ensure!(moto.get(&records, &node).await?.is_some(), "not deleted yet");
    // The next round reads the streams, then sweeps: it deletes, and its REMOVE is not read yet.
    first.round().await;
    ensure!(
        moto.get(&records, &node).await?.is_none(),
        "deleted by the second sweep"
    );
    let noted = &first.checkpoints().expiries;
    ensure!(
        noted.len() == 1 && noted[0].deleted && noted[0].sequence_number.is_none(),
        "deleted, its record not read yet: {noted:?}"
    );
    let saved = first.checkpoints().clone();
    drop(first);

    let mut second = wired_runner(&sdk, &config, saved, Some(60_000)).await?;
    let events = run_until(&mut second, Duration::from_secs(30), || async {
        Ok(moto
            .get(
                &records,
                &item(&[("source", "GOAL-7"), ("target", "GOALMEMBERSHIP-USER-42")]),
            )
            .await?
            .is_none())
    })
    .await?;
    ensure!(
        events
            .iter()
            .any(|e| matches!(e, RunEvent::Reaped(text) if text.contains("USER-42") && text.contains("1 in-edges"))),
        "the restarted runner's deletion did not reach the reaper as an expiry"
    );
    run_until_idle(&mut second, Duration::from_secs(20)).await?;
    verify(&moto, &config)
        .await
        .context("every edge set equals a recomputation")?;
    Ok(())
}
