//! The event-router Lambda: environment → config and clients → [`Router`]
//! per invocation → `batchItemFailures`, with JSON logs and one EMF line per
//! batch.
//!
//! Environment (the same names as the indexer's):
//!
//! | variable | meaning |
//! |---|---|
//! | `STREAMDEX_CONFIG` | the pipeline config, inline TOML (takes precedence) |
//! | `STREAMDEX_CONFIG_PATH` | or a path to it (default `streamdex.toml`) |
//! | `STREAMDEX_QUARANTINE_URL` | the quarantine SQS queue URL (required) |
//! | `STREAMDEX_CONCURRENCY` | PutEvents calls in flight (default 8) |
//! | `RUST_LOG` / `AWS_LAMBDA_LOG_LEVEL` | log filter (default `info`) |
//!
//! The bus is the config's `[events] bus`.

use std::time::Instant;

use aws_lambda_events::event::streams::DynamoDbEventResponse;
use stream_indexer::lambda::{failure_response, now_ms, options_from_env, serve, setup, SetupError};
use stream_indexer::quarantine::sqs::{sqs_client, SqsQuarantine};
use stream_indexer::quarantine::Quarantine;

use crate::batch::{Options, Router, RouterOutcome, CONSUMER};
use crate::metrics;
use crate::publish::eventbridge::{eventbridge_client, EventBridgePublisher};
use crate::publish::Publisher;

/// The router's options from the environment (`STREAMDEX_CONCURRENCY`).
pub fn router_options(get: impl Fn(&str) -> Option<String>) -> Result<Options, SetupError> {
    let mut options = Options::default();
    if get(stream_indexer::lambda::ENV_CONCURRENCY).is_some() {
        options.concurrency = options_from_env(get)?.concurrency;
    }
    Ok(options)
}

/// Sets up and runs the function until the runtime stops it.
pub async fn run() -> Result<(), lambda_runtime::Error> {
    let setup = setup(CONSUMER).await?;
    let options = router_options(|name| std::env::var(name).ok())?;
    let publisher = EventBridgePublisher::new(eventbridge_client(&setup.aws), setup.config.events.bus.clone());
    let quarantine = SqsQuarantine::new(sqs_client(&setup.aws), setup.queue_url);
    let router = Router::new(setup.config, publisher, quarantine, options);
    let function = setup.function.as_str();
    serve(|payload| {
        let router = &router;
        async move { invoke(router, function, &payload).await }
    })
    .await
}

/// One invocation: handle the batch, log, emit metrics, answer.
/// An unusable payload is a function error: Lambda retries the whole batch.
pub async fn invoke<P: Publisher, Q: Quarantine>(
    router: &Router<P, Q>,
    function: &str,
    payload: &[u8],
) -> Result<DynamoDbEventResponse, lambda_runtime::Error> {
    let started = Instant::now();
    let outcome = router.handle(payload).await?;
    println!(
        "{}",
        metrics::batch_line(function, &outcome.stats, started.elapsed(), now_ms())
    );
    log(&outcome);
    Ok(failure_response(outcome.failed_at()))
}

fn log(outcome: &RouterOutcome) {
    for f in &outcome.failures {
        tracing::error!(sequence_number = %f.sequence_number, kind = ?f.kind, reason = %f.reason, "failed");
    }
    let s = &outcome.stats;
    tracing::info!(
        records = s.records,
        events = s.events,
        published = s.published,
        calls = s.calls,
        retried = s.retried,
        quarantined = s.quarantined,
        failed = outcome.failed_at(),
        "batch routed"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::publish::memory::MemoryPublisher;
    use stream_indexer::MemoryQuarantine;

    #[tokio::test]
    async fn an_invocation_answers_with_batch_item_failures() {
        let config =
            std::sync::Arc::new(model::config::parse(model::config::EXAMPLE_CONFIG, "example").expect("example"));
        let router = Router::new(
            config,
            MemoryPublisher::new(),
            MemoryQuarantine::new(),
            Options::default(),
        );
        let ok = invoke(&router, "f", br#"{"Records": []}"#).await.expect("empty batch");
        assert!(ok.batch_item_failures.is_empty());
        assert!(
            invoke(&router, "f", b"[1, 2]").await.is_err(),
            "an unusable payload fails the invocation"
        );
    }

    #[test]
    fn concurrency_comes_from_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
        };
        assert_eq!(router_options(env(&[])).map(|o| o.concurrency).ok(), Some(8));
        assert_eq!(
            router_options(env(&[("STREAMDEX_CONCURRENCY", "3")]))
                .map(|o| o.concurrency)
                .ok(),
            Some(3)
        );
        assert!(router_options(env(&[("STREAMDEX_CONCURRENCY", "zero")])).is_err());
    }
}
