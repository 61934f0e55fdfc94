//! The Lambda function: environment → config and clients → [`Indexer`] per
//! invocation → `batchItemFailures`, with JSON logs and one EMF line per batch.
//!
//! Environment:
//!
//! | variable | meaning |
//! |---|---|
//! | `STREAMDEX_CONFIG` | the pipeline config, inline TOML (takes precedence) |
//! | `STREAMDEX_CONFIG_PATH` | or a path to it (default `streamdex.toml` beside the binary's working directory) |
//! | `STREAMDEX_QUARANTINE_URL` | the quarantine SQS queue URL (required) |
//! | `STREAMDEX_CONCURRENCY` | partition-key groups in flight (default 16) |
//! | `RUST_LOG` / `AWS_LAMBDA_LOG_LEVEL` | log filter (default `info`) |
//!
//! At info level the logs carry counts and sequence numbers, never item
//! contents; quarantine reasons (which name attributes) are logged at warn.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use lambda_runtime::{service_fn, LambdaEvent};
use model::config::{self, Config};
use serde_json::value::RawValue;

use crate::quarantine::{sqs::SqsQuarantine, Quarantine};
use crate::store::{dynamo::DynamoStore, Store};
use crate::{metrics, BatchOutcome, Indexer, Options};

pub const ENV_CONFIG: &str = "STREAMDEX_CONFIG";
pub const ENV_CONFIG_PATH: &str = "STREAMDEX_CONFIG_PATH";
pub const ENV_QUARANTINE_URL: &str = "STREAMDEX_QUARANTINE_URL";
pub const ENV_CONCURRENCY: &str = "STREAMDEX_CONCURRENCY";
const DEFAULT_CONFIG_PATH: &str = "streamdex.toml";

/// Why the function cannot start.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{0}")]
    Config(#[from] config::ConfigError),
    #[error("{ENV_QUARANTINE_URL} is not set: the indexer needs a quarantine queue")]
    NoQuarantine,
    #[error("{ENV_CONCURRENCY}={0:?} is not a whole number from 1 to 1000")]
    Concurrency(String),
}

/// Reads the config from `STREAMDEX_CONFIG` (inline) or `STREAMDEX_CONFIG_PATH`.
pub fn config_from_env(get: impl Fn(&str) -> Option<String>) -> Result<Config, config::ConfigError> {
    match get(ENV_CONFIG) {
        Some(text) => config::parse(&text, ENV_CONFIG),
        None => config::load(std::path::Path::new(&get(ENV_CONFIG_PATH).unwrap_or_else(|| DEFAULT_CONFIG_PATH.to_owned()))),
    }
}

/// Reads the indexer's options from the environment.
pub fn options_from_env(get: impl Fn(&str) -> Option<String>) -> Result<Options, SetupError> {
    let mut options = Options::default();
    if let Some(text) = get(ENV_CONCURRENCY) {
        options.concurrency = text
            .trim()
            .parse()
            .ok()
            .filter(|n| (1..=1000).contains(n))
            .ok_or(SetupError::Concurrency(text))?;
    }
    Ok(options)
}

/// JSON logs to stdout, filtered by `RUST_LOG` or `AWS_LAMBDA_LOG_LEVEL`.
pub fn init_tracing() {
    let filter = std::env::var("RUST_LOG")
        .or_else(|_| std::env::var("AWS_LAMBDA_LOG_LEVEL").map(|l| l.to_lowercase()))
        .unwrap_or_else(|_| "info".to_owned());
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_current_span(false)
        .with_ansi(false)
        .without_time()
        .with_target(false)
        .init();
}

/// Sets up and runs the function until the runtime stops it.
pub async fn run() -> Result<(), lambda_runtime::Error> {
    init_tracing();
    let env = |name: &str| std::env::var(name).ok();
    let config = Arc::new(config_from_env(env).map_err(SetupError::from)?);
    let options = options_from_env(env)?;
    let queue_url = env(ENV_QUARANTINE_URL).ok_or(SetupError::NoQuarantine)?;
    let aws = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let store = DynamoStore::new(aws_sdk_dynamodb::Client::new(&aws), config.clone());
    let quarantine = SqsQuarantine::new(aws_sdk_sqs::Client::new(&aws), queue_url);
    let indexer = Indexer::new(config, store, quarantine, options);
    let function = std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|_| crate::batch::CONSUMER.to_owned());
    lambda_runtime::run(service_fn(|event: LambdaEvent<Box<RawValue>>| {
        let (indexer, function) = (&indexer, function.as_str());
        async move { invoke(indexer, function, event.payload.get().as_bytes()).await }
    }))
    .await
}

/// One invocation: handle the batch, log, emit metrics, answer.
/// An unusable payload is a function error: Lambda retries the whole batch.
pub async fn invoke<S: Store, Q: Quarantine>(
    indexer: &Indexer<S, Q>,
    function: &str,
    payload: &[u8],
) -> Result<DynamoDbEventResponse, lambda_runtime::Error> {
    let started = Instant::now();
    let outcome = indexer.handle(payload).await?;
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0));
    println!("{}", metrics::batch_line(function, &outcome.stats, started.elapsed(), now_ms));
    log(&outcome);
    Ok(response(&outcome))
}

fn log(outcome: &BatchOutcome) {
    for q in &outcome.quarantined {
        tracing::warn!(sequence_number = q.sequence_number.as_deref(), table = q.table.as_deref(), reason = %q.reason, "quarantined");
    }
    for f in &outcome.failures {
        tracing::error!(sequence_number = %f.sequence_number, kind = ?f.kind, reason = %f.reason, "failed");
    }
    let s = &outcome.stats;
    tracing::info!(
        records = s.records,
        groups = s.groups,
        requests = s.requests.total(),
        quarantined = s.quarantined,
        failed = outcome.failed.as_deref(),
        "batch handled"
    );
}

/// The `batchItemFailures` answer, as `aws_lambda_events` types it.
pub fn response(outcome: &BatchOutcome) -> DynamoDbEventResponse {
    let mut response = DynamoDbEventResponse::default();
    for failure in outcome.response().batch_item_failures {
        let mut item = DynamoDbBatchItemFailure::default();
        item.item_identifier = Some(failure.item_identifier);
        response.batch_item_failures.push(item);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemoryQuarantine, MemoryStore};
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn the_config_comes_inline_or_from_a_path() {
        assert!(config_from_env(env(&[(ENV_CONFIG, model::config::EXAMPLE_CONFIG)])).is_ok());
        let err = config_from_env(env(&[(ENV_CONFIG_PATH, "/nonexistent/streamdex.toml")])).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/streamdex.toml"), "{err}");
        let err = config_from_env(env(&[(ENV_CONFIG, "[table.x]\npartition_key = 1\n")])).unwrap_err();
        assert!(err.to_string().contains(ENV_CONFIG), "names where the config came from: {err}");
    }

    #[test]
    fn concurrency_is_checked() {
        assert_eq!(options_from_env(env(&[(ENV_CONCURRENCY, "4")])).map(|o| o.concurrency).ok(), Some(4));
        assert!(matches!(options_from_env(env(&[(ENV_CONCURRENCY, "0")])), Err(SetupError::Concurrency(_))));
        assert!(matches!(options_from_env(env(&[(ENV_CONCURRENCY, "many")])), Err(SetupError::Concurrency(_))));
    }

    #[tokio::test]
    async fn an_invocation_answers_with_batch_item_failures() {
        let config = Arc::new(config::parse(config::EXAMPLE_CONFIG, "example").expect("example"));
        let indexer = Indexer::new(config.clone(), MemoryStore::new(config), MemoryQuarantine::default(), Options::default());
        let ok = invoke(&indexer, "f", br#"{"Records": []}"#).await.expect("empty batch");
        assert!(ok.batch_item_failures.is_empty());
        assert!(invoke(&indexer, "f", b"not json").await.is_err(), "an unusable payload fails the invocation");
        let json = serde_json::to_value(&ok).expect("serializes");
        assert_eq!(json, serde_json::json!({"batchItemFailures": []}));
    }
}
