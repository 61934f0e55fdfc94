//! The event-router Lambda: the kit's shell (`aws_kit::lambda`: environment,
//! JSON logs, one EMF line per batch, each record's fate logged once) around
//! a [`Router`] over EventBridge and the SQS quarantine.
//!
//! Environment: see `aws_kit::lambda` (`STREAMDEX_CONFIG` or
//! `STREAMDEX_CONFIG_PATH`, `STREAMDEX_QUARANTINE_URL`, `STREAMDEX_CONCURRENCY`:
//! PutEvents calls in flight, default 8). The bus is the config's `[events] bus`.

use std::time::Duration;

use aws_kit::clients::eventbridge_client;
use aws_kit::lambda::{self, Consumer, Stats};
use aws_kit::quarantine::Quarantine;

use crate::batch::{Options, Router, RouterStats, CONSUMER};
use crate::ledger::dynamo::DynamoLedger;
use crate::metrics;
use crate::publish::eventbridge::EventBridgePublisher;
use crate::publish::Publisher;
use model::outcome::Outcome;
use model::record::ParseError;

pub use aws_kit::lambda::invoke;

/// The router's options from the environment (`STREAMDEX_CONCURRENCY`).
pub fn router_options(get: impl Fn(&str) -> Option<String>) -> Result<Options, lambda::EnvironmentError> {
    let mut options = Options::default();
    if let Some(concurrency) = lambda::concurrency_from_env(get)? {
        options.concurrency = concurrency;
    }
    Ok(options)
}

/// Sets up and runs the function until the runtime stops it.
pub async fn run() -> Result<(), lambda_runtime::Error> {
    let setup = lambda::setup(CONSUMER).await?;
    let mut options = Options::default();
    if let Some(concurrency) = setup.concurrency {
        options.concurrency = concurrency;
    }
    let publisher = EventBridgePublisher::new(eventbridge_client(&setup.aws), setup.config.events.bus.clone());
    let quarantine = setup.quarantine();
    let ledger = DynamoLedger::for_config(&aws_kit::clients::dynamodb_client(&setup.aws), &setup.config);
    lambda::serve(
        Router::new(setup.config, publisher, quarantine, options).with_ledger(ledger),
        setup.function,
    )
    .await
}

impl<P: Publisher, Q: Quarantine> Consumer for Router<P, Q> {
    type Stats = RouterStats;

    async fn handle(&self, payload: &[u8]) -> Result<Outcome<RouterStats>, ParseError> {
        Router::handle(self, payload).await
    }
}

impl Stats for RouterStats {
    fn metrics_line(&self, function: &str, duration: Duration, now_ms: u64) -> String {
        metrics::batch_line(function, self, duration, now_ms)
    }

    fn log_summary(&self, resumes_from: Option<&str>) {
        tracing::info!(
            records = self.records,
            events = self.events,
            published = self.published,
            calls = self.calls,
            retried = self.retried,
            quarantined = self.quarantined,
            failed = resumes_from,
            "batch routed"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::publish::memory::MemoryPublisher;
    use aws_kit::clock::SystemClock;
    use aws_kit::quarantine::memory::MemoryQuarantine;

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
        let ok = invoke(&router, "f", br#"{"Records": []}"#, &SystemClock)
            .await
            .expect("empty batch");
        assert!(ok.batch_item_failures.is_empty());
        assert!(
            invoke(&router, "f", b"[1, 2]", &SystemClock).await.is_err(),
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
