//! The reaper Lambda: the target of the expiry rules. Each invocation is one
//! EventBridge event; the answer is what was reaped. A failure is a
//! function error, so EventBridge retries it and then hands it to the
//! target's dead-letter queue.
//!
//! Environment: `STREAMDEX_CONFIG` (inline TOML) or `STREAMDEX_CONFIG_PATH`,
//! and `RUST_LOG` / `AWS_LAMBDA_LOG_LEVEL`.

use std::sync::Arc;

use std::time::Instant;

use aws_kit::clients::dynamodb_client;
use aws_kit::clock::{Clock, SystemClock};
use aws_kit::lambda::{config_from_env, init_tracing, EnvironmentError};
use lambda_runtime::{service_fn, LambdaEvent};
use model::Backoff;
use serde_json::value::RawValue;

use super::dynamo::DynamoGraph;
use super::{Reaped, Reaper};
use crate::ledger::dynamo::DynamoLedger;

/// Sets up and runs the function until the runtime stops it.
pub async fn run() -> Result<(), lambda_runtime::Error> {
    init_tracing();
    let env = |name: &str| std::env::var(name).ok();
    let config = Arc::new(config_from_env(env).map_err(EnvironmentError::from)?);
    let function = env("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|| "reaper".to_owned());
    let aws = aws_kit::lambda::sdk_config().await;
    let ledger = DynamoLedger::for_config(&dynamodb_client(&aws), &config);
    let reaper = Reaper::new(
        config.clone(),
        DynamoGraph::new(dynamodb_client(&aws), config),
        Backoff::default(),
    )
    .with_ledger(ledger);
    lambda_runtime::run(service_fn(|event: LambdaEvent<Box<RawValue>>| {
        let (reaper, function) = (&reaper, &function);
        async move {
            let started = Instant::now();
            let reaped: Reaped = reaper.reap(event.payload.get().as_bytes()).await.inspect_err(|e| {
                tracing::error!(error = %e, retryable = e.is_retryable(), "reap failed");
            })?;
            // The EMF line CloudWatch turns into the dashboard's reaper figures.
            println!(
                "{}",
                crate::metrics::reaped_line(function, &reaped, started.elapsed(), SystemClock.now_ms())
            );
            Ok::<Reaped, lambda_runtime::Error>(reaped)
        }
    }))
    .await
}
