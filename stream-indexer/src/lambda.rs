//! The indexer's Lambda function: the kit's shell (`aws_kit::lambda`:
//! environment, JSON logs, one EMF line per batch, each record's fate logged
//! once) around an [`Indexer`] over DynamoDB and the SQS quarantine.
//!
//! Environment: see `aws_kit::lambda` (`STREAMDEX_CONFIG` or
//! `STREAMDEX_CONFIG_PATH`, `STREAMDEX_QUARANTINE_URL`, `STREAMDEX_CONCURRENCY`:
//! BatchWriteItem calls and set lanes in flight, default 16), and
//! `STREAMDEX_READ_AHEAD` ([`ENV_READ_AHEAD`]).

use std::time::Duration;

use aws_kit::clients::dynamodb_client;
use aws_kit::lambda::{self, Consumer, EnvironmentError, Stats};
use aws_kit::quarantine::Quarantine;

use crate::batch::CONSUMER;
use crate::store::dynamo::DynamoStore;
use crate::store::Store;
use crate::{metrics, BatchStats, Indexer, Options};
use model::outcome::Outcome;
use model::record::ParseError;

pub use aws_kit::lambda::invoke;

/// From what payload size, in bytes, a payload is read on a second thread
/// while the function plans, and its row writes packed on a second thread
/// while the set lanes start ([`Options::read_ahead_from`]; default
/// [`crate::batch::READ_AHEAD_FROM`]), or `off`: for a function that sees
/// two cores but has less than two cores' time (Lambda below 1,769 MB),
/// where a second thread can only add its own cost.
pub const ENV_READ_AHEAD: &str = "STREAMDEX_READ_AHEAD";

/// The indexer's options: `concurrency` (the kit's `STREAMDEX_CONCURRENCY`)
/// and `STREAMDEX_READ_AHEAD` from the environment, when set.
pub fn indexer_options(
    concurrency: Option<usize>,
    get: impl Fn(&str) -> Option<String>,
) -> Result<Options, EnvironmentError> {
    let mut options = Options::default();
    if let Some(concurrency) = concurrency {
        options.concurrency = concurrency;
    }
    if let Some(text) = get(ENV_READ_AHEAD) {
        options.read_ahead_from = match text.trim() {
            "off" => None,
            bytes => Some(bytes.parse().map_err(|_| EnvironmentError::Variable {
                name: ENV_READ_AHEAD,
                value: text.clone(),
                expected: "`off` or a whole number of bytes",
            })?),
        };
    }
    Ok(options)
}

/// Sets up and runs the function until the runtime stops it.
pub async fn run() -> Result<(), lambda_runtime::Error> {
    let setup = lambda::setup(CONSUMER).await?;
    let options = indexer_options(setup.concurrency, |name| std::env::var(name).ok())?;
    // DynamoDB without SDK retries (the executor owns them), SQS with them
    // (nothing retries the quarantine above the SDK); both with timeouts.
    let store = DynamoStore::new(dynamodb_client(&setup.aws), setup.config.clone());
    let quarantine = setup.quarantine();
    lambda::serve(Indexer::new(setup.config, store, quarantine, options), setup.function).await
}

impl<S: Store, Q: Quarantine> Consumer for Indexer<S, Q> {
    type Stats = BatchStats;

    async fn handle(&self, payload: &[u8]) -> Result<Outcome<BatchStats>, ParseError> {
        Indexer::handle(self, payload).await
    }
}

impl Stats for BatchStats {
    fn metrics_line(&self, function: &str, duration: Duration, now_ms: u64) -> String {
        metrics::batch_line(function, self, duration, now_ms)
    }

    fn log_summary(&self, resumes_from: Option<&str>) {
        tracing::info!(
            records = self.records,
            groups = self.groups,
            requests = self.apply.requests.total(),
            quarantined = self.quarantined,
            failed = resumes_from,
            "batch handled"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemoryQuarantine, MemoryStore};
    use aws_kit::clock::SystemClock;
    use aws_kit::lambda::{config_from_env, ENV_CONFIG, ENV_CONFIG_PATH};
    use model::config::{self, Config};
    use std::collections::HashMap;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Instant;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn read_ahead_comes_from_the_environment() {
        let from = |pairs: &[(&str, &str)]| indexer_options(None, env(pairs)).map(|o| o.read_ahead_from);
        assert_eq!(from(&[]).ok(), Some(Some(crate::batch::READ_AHEAD_FROM)));
        assert_eq!(from(&[(ENV_READ_AHEAD, "off")]).ok(), Some(None));
        assert_eq!(from(&[(ENV_READ_AHEAD, " 4096 ")]).ok(), Some(Some(4096)));
        let err = from(&[(ENV_READ_AHEAD, "sometimes")]).unwrap_err();
        assert!(err.to_string().contains("STREAMDEX_READ_AHEAD=\"sometimes\""), "{err}");
        assert_eq!(indexer_options(Some(3), env(&[])).map(|o| o.concurrency).ok(), Some(3));
    }

    #[test]
    fn the_config_comes_inline_or_from_a_path() {
        assert!(config_from_env(env(&[(ENV_CONFIG, model::config::EXAMPLE_CONFIG)])).is_ok());
        let err = config_from_env(env(&[(ENV_CONFIG_PATH, "/nonexistent/streamdex.toml")])).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/streamdex.toml"), "{err}");
        let err = config_from_env(env(&[(ENV_CONFIG, "[table.x]\npartition_key = 1\n")])).unwrap_err();
        assert!(
            err.to_string().contains(ENV_CONFIG),
            "names where the config came from: {err}"
        );
    }

    #[tokio::test]
    async fn an_invocation_answers_with_batch_item_failures() {
        let config = Arc::new(config::parse(config::EXAMPLE_CONFIG, "example").expect("example"));
        let indexer = Indexer::new(
            config.clone(),
            MemoryStore::new(config),
            MemoryQuarantine::default(),
            Options::default(),
        );
        let ok = invoke(&indexer, "f", br#"{"Records": []}"#, &SystemClock)
            .await
            .expect("empty batch");
        assert!(ok.batch_item_failures.is_empty());
        assert!(
            invoke(&indexer, "f", b"not json", &SystemClock).await.is_err(),
            "an unusable payload fails the invocation"
        );
        let json = serde_json::to_value(&ok).expect("serializes");
        assert_eq!(json, serde_json::json!({"batchItemFailures": []}));
    }

    /// A loopback HTTP server that counts the requests it reads and answers
    /// each with a 500 (or, when `hang`, never answers).
    fn fake_aws(hang: bool) -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let count = Arc::new(AtomicUsize::new(0));
        let counter = count.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let counter = counter.clone();
                std::thread::spawn(move || serve(stream, &counter, hang));
            }
        });
        (url, count)
    }

    fn serve(mut stream: TcpStream, count: &AtomicUsize, hang: bool) {
        let Ok(read) = stream.try_clone() else { return };
        let mut reader = BufReader::new(read);
        loop {
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some((name, value)) = line.split_once(':') {
                    if name.eq_ignore_ascii_case("content-length") {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                return;
            }
            count.fetch_add(1, Ordering::SeqCst);
            if hang {
                std::thread::sleep(Duration::from_secs(30));
                return;
            }
            let body = r#"{"__type":"InternalServerError","message":"boom"}"#;
            let response = format!(
                "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            if stream.write_all(response.as_bytes()).is_err() {
                return;
            }
        }
    }

    async fn shared_config(endpoint: &str) -> aws_config::SdkConfig {
        aws_config::defaults(aws_config::BehaviorVersion::latest())
            .endpoint_url(endpoint)
            .region(aws_config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_dynamodb::config::Credentials::new("a", "b", None, None, "test"))
            // What the shared config holds by default, whatever AWS_MAX_ATTEMPTS says here.
            .retry_config(aws_config::retry::RetryConfig::standard())
            .load()
            .await
    }

    fn example() -> Arc<Config> {
        Arc::new(config::parse(config::EXAMPLE_CONFIG, "example").expect("example"))
    }

    #[tokio::test]
    async fn dynamodb_failures_reach_the_executor_after_one_request() {
        let (url, count) = fake_aws(false);
        let store = DynamoStore::new(dynamodb_client(&shared_config(&url).await), example());
        let e = store
            .update_set(0, "GOAL-1", crate::store::SetChange::Add(vec!["m".into()]))
            .await
            .unwrap_err();
        assert!(e.is_transient() && e.message().contains("InternalServerError"), "{e:?}");
        assert_eq!(
            count.load(Ordering::SeqCst),
            1,
            "the SDK retried underneath the executor"
        );
        assert!(store.query_partition("records", "GOAL-1").await.is_err());
        assert_eq!(count.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_hung_dynamodb_request_times_out_as_transient() {
        let (url, count) = fake_aws(true);
        let store = DynamoStore::new(dynamodb_client(&shared_config(&url).await), example());
        let started = Instant::now();
        let e = store.query_partition("records", "GOAL-1").await.unwrap_err();
        let waited = started.elapsed();
        assert!(e.is_transient() && e.message().contains("timed out"), "{e:?}");
        assert_eq!(count.load(Ordering::SeqCst), 1);
        let limit = crate::store::dynamo::ATTEMPT_TIMEOUT;
        assert!(waited >= limit && waited < limit * 2, "waited {waited:?}");
    }

    #[tokio::test]
    async fn the_quarantine_keeps_the_sdk_retries() {
        let (url, count) = fake_aws(false);
        let quarantine = aws_kit::quarantine::sqs::SqsQuarantine::new(
            aws_kit::clients::sqs_client(&shared_config(&url).await),
            format!("{url}/123456789012/q"),
        );
        let entry = aws_kit::quarantine::QuarantineEntry {
            consumer: "stream-indexer".to_owned(),
            sequence_number: Some("1".to_owned()),
            table: Some("records".to_owned()),
            reason: "test".to_owned(),
            cause: None,
            raw: "{}".to_owned(),
        };
        assert!(quarantine.put(vec![entry]).await.is_err());
        assert_eq!(count.load(Ordering::SeqCst), 3, "standard retries: 3 attempts");
    }
}
