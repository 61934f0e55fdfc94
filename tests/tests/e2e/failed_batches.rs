//! A batch the event source mapping gives up on is kept whole, as Lambda
//! keeps it with an S3 on-failure destination, and can be replayed: the
//! runner (a mapping whose function always fails, one retry) writes the
//! batch to the quarantine bucket of a stack `up` created on moto;
//! `streamdex quarantine failures` lists it and `--save` writes it as a
//! file; `streamdex replay` of that file indexes its records.
//!
//! It needs a moto server at `STREAMDEX_TEST_ENDPOINT`, so it is
//! `#[ignore]`d: `scripts/test.sh` runs it.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, ensure, Context, Result};
use aws_kit::clock::SystemClock;
use futures::future::BoxFuture;
use futures::FutureExt;
use infra::runner::age::Thresholds;
use infra::runner::checkpoint::Checkpoints;
use infra::runner::failure::S3OnFailure;
use infra::runner::function::{Function, Invocation, Response};
use infra::runner::mapping::Settings;
use infra::runner::stream::memory::{stream_arn, MemoryStreams};
use infra::runner::{MappingSpec, RunEvent, Runner, RunnerOptions};
use infra::stack;
use model::filter::Consumer;
use streamdex_tests::moto::{prefixed_toml, unique_prefix, Moto};

use crate::cli::streamdex;

/// A function whose store is unreachable: every batch fails.
struct Failing;

impl Function for Failing {
    fn name(&self) -> &str {
        "failing"
    }

    fn invoke<'a>(&'a self, _payload: &'a [u8], _now_ms: u64) -> BoxFuture<'a, Invocation> {
        async {
            Invocation {
                response: Response::Error("the store is unreachable".to_owned()),
                emf: None,
                failures: Vec::new(),
                quarantined: 0,
            }
        }
        .boxed()
    }
}

#[test]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
fn a_batch_given_up_on_is_kept_whole_and_replays() -> Result<()> {
    let setup = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let moto = setup.block_on(Moto::connect("a_batch_given_up_on_is_kept_whole_and_replays"));
    let prefix = unique_prefix("failed");
    let dir = std::env::temp_dir().join(format!("streamdex-failed-{}", prefix.trim_end_matches('-')));
    std::fs::create_dir_all(&dir)?;
    let config_path = dir.join("streamdex.toml");
    std::fs::write(&config_path, prefixed_toml(&prefix))?;
    let config = model::config::load(&config_path).map_err(|e| anyhow!("{e}"))?;
    let issues = format!("{prefix}issues");
    let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".to_owned());
    let bucket = stack::Stack::new(&config).quarantine_bucket;

    let discarded = setup.block_on(async {
        let sdk = stack::sdk_config(Some(&moto.endpoint), Some(&region)).await;
        stack::up(&sdk, &config).await?;
        let streams = Arc::new(MemoryStreams::new());
        streams.add_shard(&issues, "shard-1", None);
        for (n, id) in ["issue-1", "issue-2"].iter().enumerate() {
            let record = serde_json::json!({
                "eventID": format!("e{n}"),
                "eventName": "INSERT",
                "eventSource": "aws:dynamodb",
                "eventSourceARN": stream_arn(&issues),
                "dynamodb": {
                    "Keys": { "id": { "S": id }, "rel": { "S": id } },
                    "NewImage": {
                        "id": { "S": id }, "rel": { "S": id }, "num": { "N": "7" }, "name": { "S": "kept whole" },
                        "custom_fields": { "M": { "priority": { "S": "high" } } },
                    },
                    "SequenceNumber": format!("{}", 100 + n),
                    "StreamViewType": "NEW_AND_OLD_IMAGES",
                },
            });
            streams.push("shard-1", &format!("{}", 100 + n), None, record.to_string());
        }
        streams.close("shard-1");
        let mut runner = Runner::new(
            streams,
            Arc::new(SystemClock),
            RunnerOptions {
                discover_every_ms: 10_000,
                poll_interval_ms: 10,
                thresholds: Thresholds {
                    warn_ms: 300_000,
                    page_ms: 3_600_000,
                },
            },
            Checkpoints::default(),
        );
        runner.add_mapping(MappingSpec {
            table: issues.clone(),
            consumer: Consumer::Indexer,
            settings: Settings {
                batch_size: 10,
                window_ms: 0,
                max_retry_attempts: Some(1),
                max_record_age_ms: None,
                bisect_on_error: false,
            },
            filters: Vec::new(),
            function: Arc::new(Failing),
            on_failure: Arc::new(S3OnFailure {
                client: aws_kit::clients::s3_client(&sdk),
                bucket: bucket.clone(),
                mapping: "indexer-issues".to_owned(),
            }),
            retention_ms: infra::runner::age::STREAM_RETENTION_MS,
        });
        // Bounded: a few rounds fail, retry once and give the batch up.
        for _ in 0..200 {
            let round = runner.round().await;
            if let Some(notice) = round.events.iter().find_map(|e| match e {
                RunEvent::Discarded { notice, .. } => Some(notice.clone()),
                _ => None,
            }) {
                return anyhow::Ok(notice);
            }
            tokio::time::sleep(Duration::from_millis(round.wait_ms.min(50))).await;
        }
        Err(anyhow!("the runner gave nothing up within 200 rounds"))
    })?;
    ensure!(discarded.batch_size == 2, "{discarded:?}");
    drop(setup);

    let cfg = config_path.display().to_string();
    let saved = dir.join("saved");
    let endpoint = ["--endpoint-url", moto.endpoint.as_str(), "--region", region.as_str()];
    let args: Vec<&str> = ["quarantine", "failures", cfg.as_str(), "--output", "json"]
        .into_iter()
        .chain(endpoint)
        .collect();
    let (code, out, err) = streamdex(&args)?;
    ensure!(code == 0, "quarantine failures: {code}\n{err}");
    let listed: serde_json::Value = serde_json::from_str(out.trim()).context("one failed batch")?;
    ensure!(listed["condition"] == "RetryAttemptsExhausted", "{listed}");
    ensure!(
        listed["start_sequence_number"] == "100" && listed["end_sequence_number"] == "101",
        "{listed}"
    );
    ensure!(listed["records_kept"] == true, "{listed}");
    let key = listed["key"].as_str().context("a key")?;
    ensure!(
        key.starts_with("aws/lambda/indexer-issues/shard-1/"),
        "Lambda's layout: {key}"
    );

    let save = saved.display().to_string();
    let args: Vec<&str> = ["quarantine", "failures", cfg.as_str(), "--save", save.as_str()]
        .into_iter()
        .chain(endpoint)
        .collect();
    let (code, _, err) = streamdex(&args)?;
    ensure!(code == 0, "quarantine failures --save: {code}\n{err}");
    let file = std::fs::read_dir(&saved)?
        .next()
        .context("a saved batch")??
        .path()
        .display()
        .to_string();
    let (code, out, err) = streamdex(&["replay", &file, "--config", &cfg, "--no-progress", "--dump", "json"])?;
    ensure!(code == 0, "replay of the saved batch: {code}\n{err}");
    let dump: serde_json::Value = serde_json::from_str(&out).context("replay's dump")?;
    let text = dump.to_string();
    ensure!(
        text.matches("kept whole").count() == 2,
        "both records of the batch indexed: {text:.1000}"
    );
    Ok(())
}
