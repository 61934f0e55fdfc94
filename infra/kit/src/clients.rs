//! The SDK clients, built alike for every function and command.
//!
//! - **DynamoDB and EventBridge: no SDK retries.** The one retry driver
//!   ([`crate::retry`]) owns retries, with exponential backoff, full jitter
//!   and a bounded number of attempts, and counts them. The SDK's standard
//!   strategy underneath would make up to 3 attempts of each driver attempt
//!   (8 × 3 requests for one throttled update, both backoffs compounding
//!   past the Lambda's time budget), and throttling it absorbed would never
//!   reach the accounting. With retries disabled every failed request comes
//!   back once, as a `Fault`, and the driver decides.
//! - **SQS (the quarantine): the SDK's retries.** Nothing retries a failed
//!   quarantine above it: a failed `put` fails the batch, and Lambda then
//!   replays all of it.
//! - **Timeouts everywhere.** A connection that hangs would otherwise hold
//!   the batch until the Lambda times out. An attempt past
//!   [`ATTEMPT_TIMEOUT`] (or a connection past [`CONNECT_TIMEOUT`]) fails as
//!   the SDK's timeout error, which is a transient `Fault`.
//!
//! Everything else (region, credentials, endpoint, a read timeout) comes
//! from the shared `SdkConfig`; the timeouts above win over the ones it sets.

use std::time::Duration;

use aws_config::SdkConfig;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;

/// How long establishing a connection may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// How long one DynamoDB or EventBridge request may take, from sending to
/// the whole answer. They answer in milliseconds; an attempt past this is a
/// hung connection, not a slow table.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one SQS attempt may take. SQS answers a SendMessageBatch in milliseconds.
pub const SQS_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one SQS call may take, its retries and their backoff included.
pub const SQS_OPERATION_TIMEOUT: Duration = Duration::from_secs(20);

/// The DynamoDB client of the indexer, the reaper and every `streamdex`
/// command that writes through the indexer's store (so they behave alike).
pub fn dynamodb_client(sdk: &SdkConfig) -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::config::Builder::from(sdk)
        .retry_config(RetryConfig::disabled())
        .timeout_config(attempt_timeouts(sdk))
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

/// The EventBridge client of the router.
pub fn eventbridge_client(sdk: &SdkConfig) -> aws_sdk_eventbridge::Client {
    let config = aws_sdk_eventbridge::config::Builder::from(sdk)
        .retry_config(RetryConfig::disabled())
        .timeout_config(attempt_timeouts(sdk))
        .build();
    aws_sdk_eventbridge::Client::from_conf(config)
}

/// The SQS client of the quarantine (the SDK's retries, the standard
/// strategy unless `sdk` says otherwise).
pub fn sqs_client(sdk: &SdkConfig) -> aws_sdk_sqs::Client {
    let (timeouts, retries) = sdk_retried(sdk, SQS_ATTEMPT_TIMEOUT, SQS_OPERATION_TIMEOUT);
    let config = aws_sdk_sqs::config::Builder::from(sdk)
        .retry_config(retries)
        .timeout_config(timeouts)
        .build();
    aws_sdk_sqs::Client::from_conf(config)
}

/// How long one S3 call (the quarantine's claim checks: objects up to
/// DynamoDB's 400 KB item, a little more as a record) may take, retries included.
pub const S3_OPERATION_TIMEOUT: Duration = Duration::from_secs(30);

/// The S3 client of the quarantine's claim checks: the SDK's retries, as
/// for SQS; path-style addresses when the endpoint is overridden (a local
/// server has no per-bucket host names).
pub fn s3_client(sdk: &SdkConfig) -> aws_sdk_s3::Client {
    let (timeouts, retries) = sdk_retried(sdk, S3_OPERATION_TIMEOUT / 3, S3_OPERATION_TIMEOUT);
    let config = aws_sdk_s3::config::Builder::from(sdk)
        .retry_config(retries)
        .timeout_config(timeouts)
        .force_path_style(sdk.endpoint_url().is_some())
        .build();
    aws_sdk_s3::Client::from_conf(config)
}

/// The timeouts and retries of a client that keeps the SDK's retries (the
/// standard strategy unless `sdk` says otherwise): a connection within
/// [`CONNECT_TIMEOUT`], an attempt within `attempt`, the call with its
/// retries within `operation`; the rest from `sdk`.
fn sdk_retried(sdk: &SdkConfig, attempt: Duration, operation: Duration) -> (TimeoutConfig, RetryConfig) {
    let timeouts = TimeoutConfig::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .operation_attempt_timeout(attempt)
        .operation_timeout(operation)
        .take_unset_from(sdk.timeout_config().map(TimeoutConfig::to_builder).unwrap_or_default())
        .build();
    let retries = sdk.retry_config().cloned().unwrap_or_else(RetryConfig::standard);
    (timeouts, retries)
}

/// The timeouts of a client whose caller owns the retries: a connection
/// within [`CONNECT_TIMEOUT`], one attempt (and so the operation) within
/// [`ATTEMPT_TIMEOUT`]; the rest from `sdk`.
pub fn attempt_timeouts(sdk: &SdkConfig) -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .operation_attempt_timeout(ATTEMPT_TIMEOUT)
        // One attempt per operation: the same bound, as a backstop.
        .operation_timeout(ATTEMPT_TIMEOUT)
        .take_unset_from(sdk.timeout_config().map(TimeoutConfig::to_builder).unwrap_or_default())
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_dynamodb_client_has_no_sdk_retries_and_bounded_timeouts() {
        let shared = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
            .retry_config(RetryConfig::standard().with_max_attempts(5))
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(60))
                    .read_timeout(Duration::from_secs(7))
                    .build(),
            )
            .build();
        let client = dynamodb_client(&shared);
        let config = client.config();
        assert_eq!(config.retry_config().map(RetryConfig::max_attempts), Some(1));
        let timeouts = config.timeout_config().expect("timeouts");
        assert_eq!(timeouts.connect_timeout(), Some(CONNECT_TIMEOUT));
        assert_eq!(timeouts.operation_attempt_timeout(), Some(ATTEMPT_TIMEOUT));
        assert_eq!(timeouts.operation_timeout(), Some(ATTEMPT_TIMEOUT));
        assert_eq!(
            timeouts.read_timeout(),
            Some(Duration::from_secs(7)),
            "kept from the shared config"
        );
        assert_eq!(config.region().map(|r| r.as_ref()), Some("us-east-1"));
        let events = eventbridge_client(&shared);
        assert_eq!(events.config().retry_config().map(RetryConfig::max_attempts), Some(1));
    }
}
