//! The quarantine end to end against moto: the indexer quarantines records
//! (one of them too large for an SQS message, so it goes to the claim-check
//! bucket `up` created), `streamdex quarantine` lists them and shows each
//! whole, and after the fix (the config now declares the table) a redrive
//! applies them through the indexer and removes them, while a record that
//! is still invalid stays with its reason; `streamdex quarantine list` and
//! `show` then print it.
//!
//! Needs the moto server of `scripts/test.sh` (`#[ignore]`d otherwise).

use std::sync::Arc;

use anyhow::{ensure, Context, Result};
use aws_kit::quarantine::claim::ClaimBucket;
use aws_kit::quarantine::sqs::{SqsQuarantine, MAX_MESSAGE_BYTES};
use clap::Parser;
use infra::cli::{Cli, Command};
use infra::quarantine::{Inbox, Redrive, Redriver};
use infra::stack::{self, Stack};
use model::config::{self, EXAMPLE_CONFIG};
use model::Config;
use stream_indexer::store::dynamo::DynamoStore;
use stream_indexer::{Indexer, Options};
use streamdex_tests::derived::verify;
use streamdex_tests::moto::{prefixed, prefixed_toml, unique_prefix, Moto};

/// An issue item of the example config as DynamoDB JSON, with `pad` bytes of padding.
fn issue(id: &str, num: &str, pad: usize) -> String {
    format!(
        r#"{{"id":{{"S":"{id}"}},"rel":{{"S":"{id}"}},"num":{{"N":"{num}"}},"name":{{"S":"n-{id}"}},"state":{{"S":"open"}},"custom_fields":{{"M":{{"f1":{{"S":"v1"}},"f2":{{"N":"2.50"}}}}}},"pad":{{"S":"{}"}}}}"#,
        "p".repeat(pad)
    )
}

/// An INSERT stream record of `image` in `table`, in the Lambda spelling.
fn insert(table: &str, id: &str, image: &str, sequence: u64) -> String {
    format!(
        r#"{{"eventID":"e{sequence}","eventName":"INSERT","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"us-east-1","dynamodb":{{"ApproximateCreationDateTime":1763000000,"Keys":{{"id":{{"S":"{id}"}},"rel":{{"S":"{id}"}}}},"NewImage":{image},"SequenceNumber":"{sequence}","SizeBytes":{},"StreamViewType":"NEW_AND_OLD_IMAGES"}},"eventSourceARN":"arn:aws:dynamodb:us-east-1:123456789012:table/{table}/stream/2026-01-01T00:00:00.000"}}"#,
        image.len()
    )
}

/// Runs `streamdex ARGS --endpoint-url ENDPOINT` in process; returns its exit code, stdout and stderr.
fn command(args: &[&str], endpoint: &str) -> Result<(u8, String, String)> {
    let line = std::iter::once("streamdex").chain(args.iter().copied()).chain([
        "--endpoint-url",
        endpoint,
        "--region",
        "us-east-1",
    ]);
    let cli = Cli::try_parse_from(line)?;
    let Command::Quarantine(args) = &cli.command else {
        anyhow::bail!("not a quarantine command");
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    // The command runs its own runtime: off this test's.
    let code = std::thread::scope(|s| {
        s.spawn(|| infra::cli::quarantine::run_with(args, &mut out, &mut err))
            .join()
    })
    .map_err(|_| anyhow::anyhow!("the command panicked"))?;
    Ok((code, String::from_utf8(out)?, String::from_utf8(err)?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn quarantined_records_are_kept_whole_listed_shown_and_redriven_after_a_fix() -> Result<()> {
    let moto = Moto::connect("quarantine_list_show_redrive").await;
    let example = config::parse(EXAMPLE_CONFIG, "streamdex.example.toml")?;
    let prefix = unique_prefix("quarantine");
    let config = Arc::new(prefixed(&example, &prefix));
    let dir = tempfile::tempdir()?;
    let config_file = dir.path().join("streamdex.toml");
    std::fs::write(&config_file, prefixed_toml(&prefix))?;
    let sdk = stack::sdk_config(Some(&moto.endpoint), Some("us-east-1")).await;
    stack::up(&sdk, &config).await.context("up")?;
    let issues = config
        .tables
        .iter()
        .find(|t| t.name.ends_with("issues"))
        .map(|t| t.name.clone())
        .context("no issues table")?;

    // The items are in the table; their records reach an indexer whose
    // config does not yet declare the table: quarantined.
    let small = issue("issue-1", "7", 10);
    let large = issue("issue-2", "8", MAX_MESSAGE_BYTES + 10_000);
    let poison = issue("issue-3", "1E+126", 10);
    let records = [
        insert(&issues, "issue-1", &small, 100),
        insert(&issues, "issue-2", &large, 200),
        insert(&issues, "issue-3", &poison, 300),
    ];
    for record in &records[..2] {
        let parsed = model::record::parse_any(record.as_bytes())?;
        let change = parsed[0].record.as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
        moto.put(&issues, change.new.as_ref().context("no new image")?).await?;
    }
    let mut before: Config = (*config).clone();
    before.tables.retain(|t| t.name != issues);
    before.indexes.retain(|i| i.source.table != issues);
    before.routes.retain(|r| r.table != issues);
    before.edge_sets.retain(|e| e.table != issues);
    let before = Arc::new(before);
    let stack_ = Stack::new(&config);
    let inbox = Inbox::open(&sdk, &config).await?;
    let queue_url = moto
        .sqs
        .get_queue_url()
        .queue_name(inbox.name())
        .send()
        .await?
        .queue_url
        .context("no quarantine url")?;
    let quarantine = SqsQuarantine::new(moto.sqs.clone(), queue_url).with_claims(ClaimBucket::new(
        aws_kit::clients::s3_client(&sdk),
        stack_.quarantine_bucket.clone(),
    ));
    let indexer = Indexer::new(
        before.clone(),
        DynamoStore::new(moto.dynamodb.clone(), before.clone()),
        quarantine,
        Options::default(),
    );
    let payload = format!("{{\"Records\":[{}]}}", records.join(","));
    let outcome = indexer.handle(payload.as_bytes()).await?;
    ensure!(outcome.quarantined.len() == 3, "quarantined: {:?}", outcome.quarantined);

    // Listed, each once, the large one as a claim check; shown whole.
    let held = inbox.take(100).await?;
    ensure!(held.len() == 3, "listed {} entries", held.len());
    let mut claims = 0;
    for h in &held {
        let stored = h.stored.as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
        let sequence = stored.entry.sequence_number.as_deref().context("no sequence number")?;
        let original = records
            .iter()
            .find(|r| r.contains(&format!("\"SequenceNumber\":\"{sequence}\"")))
            .context("an entry of no record")?;
        ensure!(!stored.raw_truncated, "{sequence} cut short");
        claims += usize::from(stored.raw_claim.is_some());
        ensure!(
            inbox.record(stored).await? == *original,
            "record {sequence} is not kept exactly"
        );
    }
    ensure!(claims == 1, "{claims} claim checks, expected the large record's only");
    let all: Vec<_> = held.iter().collect();
    inbox.release(&all).await?;

    // After the fix, a redrive applies the two valid records and keeps the poison one.
    let held = inbox.take(100).await?;
    ensure!(held.len() == 3, "released entries not listed again: {}", held.len());
    let redriver = Redriver::new(&sdk, &config, Arc::new(aws_kit::clock::SystemClock));
    let mut outcomes = Vec::new();
    for h in &held {
        let sequence = h.stored.as_ref().ok().and_then(|s| s.entry.sequence_number.clone());
        outcomes.push((sequence, redriver.redrive(&inbox, h).await));
    }
    outcomes.sort_by(|a, b| a.0.cmp(&b.0));
    ensure!(outcomes[0] == (Some("100".into()), Redrive::Applied), "{outcomes:?}");
    ensure!(outcomes[1] == (Some("200".into()), Redrive::Applied), "{outcomes:?}");
    match &outcomes[2] {
        (Some(s), Redrive::StillPoison(reason)) if s == "300" => {
            ensure!(reason.contains("1E+126"), "reason: {reason}")
        }
        other => anyhow::bail!("the poison record: {other:?}"),
    }
    // The refused entry was put back with its new reason (no release needed).
    let left = inbox.take(100).await?;
    ensure!(
        left.len() == 1 && left[0].is("300"),
        "left in the quarantine: {}",
        left.len()
    );
    inbox.release(&left.iter().collect::<Vec<_>>()).await?;

    // The same through the command line: `list --output json` and `show`.
    let file = config_file.display().to_string();
    let (code, out, err) = command(&["quarantine", "list", &file, "--output", "json"], &moto.endpoint)?;
    ensure!(code == 0, "list: exit {code}: {err}");
    let listed: Vec<serde_json::Value> = out.lines().map(serde_json::from_str).collect::<Result<_, _>>()?;
    ensure!(listed.len() == 1, "list printed {out}");
    ensure!(
        listed[0]["sequence_number"] == "300" && listed[0]["consumer"] == "stream-indexer",
        "{out}"
    );
    ensure!(
        listed[0]["reason"].as_str().is_some_and(|r| r.contains("1E+126")),
        "{out}"
    );
    let (code, out, err) = command(&["quarantine", "show", &file, "300"], &moto.endpoint)?;
    ensure!(code == 0, "show: exit {code}: {err}");
    let shown: serde_json::Value = serde_json::from_str(&out)?;
    let delivered: serde_json::Value = serde_json::from_str(&records[2])?;
    ensure!(shown["record"] == delivered, "show printed another record: {out}");
    let (code, _, err) = command(&["quarantine", "show", &file, "999"], &moto.endpoint)?;
    ensure!(
        code == 1 && err.contains("no entry `999`"),
        "show of a missing entry: {code} {err}"
    );
    let objects = aws_kit::clients::s3_client(&sdk)
        .list_objects_v2()
        .bucket(&stack_.quarantine_bucket)
        .send()
        .await?;
    ensure!(
        objects.contents().is_empty(),
        "the claim-check object outlived its redrive"
    );

    // The index rows of the two applied records equal a recomputation from the table.
    let rows = verify(&moto, &config).await?;
    ensure!(rows == 4, "{rows} index rows, expected 2 fields x 2 issues");
    stack::down(&sdk, &config).await.context("down")?;
    Ok(())
}
