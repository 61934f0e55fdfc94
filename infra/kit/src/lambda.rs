//! The Lambda shell both stream consumers run in: environment → config and
//! clients → the consumer per invocation → `batchItemFailures`, with JSON
//! logs and one EMF line per batch. The consumer is anything that
//! implements [`Consumer`]; this module logs each record's fate once
//! (quarantined at warn, failed at error) and the batch's summary at info.
//!
//! Environment:
//!
//! | variable | meaning |
//! |---|---|
//! | `STREAMDEX_CONFIG` | the pipeline config, inline TOML (takes precedence) |
//! | `STREAMDEX_CONFIG_PATH` | or a path to it (default `streamdex.toml`) |
//! | `STREAMDEX_QUARANTINE_URL` | the quarantine SQS queue URL (required by the stream consumers) |
//! | `STREAMDEX_QUARANTINE_BUCKET` | the S3 bucket of the quarantine's claim checks (records over a message); without it such records are cut short |
//! | `STREAMDEX_CONCURRENCY` | requests in flight, 1-1000 (each consumer has its default) |
//! | `RUST_LOG` / `AWS_LAMBDA_LOG_LEVEL` | log filter (default `info`) |
//!
//! At info level the logs carry counts and sequence numbers, never item
//! contents; quarantine reasons (which name attributes) are logged at warn.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use lambda_runtime::{service_fn, LambdaEvent, Runtime};
use model::config::{self, Config};
use model::outcome::Outcome;
use model::record::ParseError;
use model::settlement::BatchResponse;
use serde::de::IgnoredAny;

use crate::clock::{Clock, SystemClock};

pub mod payload;

pub const ENV_CONFIG: &str = "STREAMDEX_CONFIG";
pub const ENV_CONFIG_PATH: &str = "STREAMDEX_CONFIG_PATH";
pub const ENV_QUARANTINE_URL: &str = "STREAMDEX_QUARANTINE_URL";
pub const ENV_QUARANTINE_BUCKET: &str = "STREAMDEX_QUARANTINE_BUCKET";
pub const ENV_CONCURRENCY: &str = "STREAMDEX_CONCURRENCY";
const DEFAULT_CONFIG_PATH: &str = "streamdex.toml";

/// Why a function cannot start from its environment.
#[derive(Debug, thiserror::Error)]
pub enum EnvironmentError {
    #[error("{0}")]
    Config(#[from] config::ConfigError),
    #[error("{ENV_QUARANTINE_URL} is not set: a stream consumer needs a quarantine queue")]
    NoQuarantine,
    /// A variable is set to something it cannot be.
    #[error("{name}={value:?} is not {expected}")]
    Variable {
        name: &'static str,
        value: String,
        /// What it can be (`a whole number from 1 to 1000`).
        expected: &'static str,
    },
}

/// Reads the config from `STREAMDEX_CONFIG` (inline) or `STREAMDEX_CONFIG_PATH`.
pub fn config_from_env(get: impl Fn(&str) -> Option<String>) -> Result<Config, config::ConfigError> {
    match get(ENV_CONFIG) {
        Some(text) => config::parse(&text, ENV_CONFIG),
        None => config::load(std::path::Path::new(
            &get(ENV_CONFIG_PATH).unwrap_or_else(|| DEFAULT_CONFIG_PATH.to_owned()),
        )),
    }
}

/// `STREAMDEX_CONCURRENCY`, when set: a whole number from 1 to 1000.
pub fn concurrency_from_env(get: impl Fn(&str) -> Option<String>) -> Result<Option<usize>, EnvironmentError> {
    let Some(text) = get(ENV_CONCURRENCY) else {
        return Ok(None);
    };
    text.trim()
        .parse()
        .ok()
        .filter(|n| (1..=1000).contains(n))
        .map(Some)
        .ok_or(EnvironmentError::Variable {
            name: ENV_CONCURRENCY,
            value: text,
            expected: "a whole number from 1 to 1000",
        })
}

/// mimalloc's `mi_option_purge_delay` (option 15 in `mimalloc.h`, v2 and v3;
/// the Rust bindings name no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// mimalloc's `mi_option_allow_thp` (option 43 in v3's `mimalloc.h`, the
/// version built here; no constant in the bindings either).
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

/// Tunes mimalloc (the functions' global allocator) and the process's
/// memory:
///
/// - Purge freed memory after a second instead of mimalloc's 10 ms. A batch
///   frees what the next record, or the next batch, allocates again; purged
///   in between, it comes back as fresh pages the kernel faults in and zeroes
///   again, which costs time and makes page faults swing from run to run.
/// - No transparent huge pages. mimalloc asks for them on its arenas
///   (`madvise`), and where the kernel grants them (`madvise` or `always`
///   in `/sys/kernel/mm/transparent_hugepage/enabled`) every first touch of
///   a 2 MB stretch faults in and zeroes all of it, however little of it
///   is used, which raises the peak RSS and the time spent zeroing pages.
///   The process-wide switch (`PR_SET_THP_DISABLE`) also covers the arena
///   mimalloc reserved before `main`.
///
/// The figures behind both choices are in `docs/PERFORMANCE.md`.
pub fn tune_allocator() {
    // SAFETY: each call sets a process-wide allocator option; it takes no
    // pointers and is safe at any time, from any thread.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 1_000);
        libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 0);
    }
    no_huge_pages();
}

/// Turns transparent huge pages off for the process (see
/// [`tune_allocator`]): where the kernel grants them (`always`, or
/// `madvise` to an allocator that asks), a first touch of a 2 MB stretch
/// faults in and zeroes all of it. The `streamdex` command, whose allocator
/// is not mimalloc, calls this alone.
pub fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)` takes integers
        // only and changes nothing but the process's huge-page policy. A
        // kernel that refuses it (before 3.15) leaves the policy as it was,
        // which costs memory, not correctness: the answer is not needed.
        let _ = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    }
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

/// What a stream consumer's function starts from, read from the
/// environment once (logs and the allocator are set up first).
pub struct Setup {
    pub config: Arc<Config>,
    /// The quarantine queue URL (`STREAMDEX_QUARANTINE_URL`).
    pub queue_url: String,
    /// The claim-check bucket (`STREAMDEX_QUARANTINE_BUCKET`), when set.
    pub bucket: Option<String>,
    pub aws: aws_config::SdkConfig,
    /// `AWS_LAMBDA_FUNCTION_NAME`, or `default_function`: the EMF dimension.
    pub function: String,
    /// `STREAMDEX_CONCURRENCY`, when set.
    pub concurrency: Option<usize>,
}

/// Reads a stream consumer's [`Setup`].
pub async fn setup(default_function: &str) -> Result<Setup, EnvironmentError> {
    tune_allocator();
    init_tracing();
    let env = |name: &str| std::env::var(name).ok();
    let config = Arc::new(config_from_env(env)?);
    let queue_url = env(ENV_QUARANTINE_URL).ok_or(EnvironmentError::NoQuarantine)?;
    let concurrency = concurrency_from_env(env)?;
    let aws = sdk_config().await;
    let function = env("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|| default_function.to_owned());
    Ok(Setup {
        config,
        queue_url,
        bucket: env(ENV_QUARANTINE_BUCKET).filter(|b| !b.is_empty()),
        aws,
        function,
        concurrency,
    })
}

impl Setup {
    /// The quarantine: the queue, with claim checks when a bucket is set.
    pub fn quarantine(&self) -> crate::quarantine::sqs::SqsQuarantine {
        let quarantine =
            crate::quarantine::sqs::SqsQuarantine::new(crate::clients::sqs_client(&self.aws), self.queue_url.clone());
        match &self.bucket {
            Some(bucket) => quarantine.with_claims(crate::quarantine::claim::ClaimBucket::new(
                crate::clients::s3_client(&self.aws),
                bucket.clone(),
            )),
            None => quarantine,
        }
    }
}

/// The shared AWS SDK config from the environment (region, credentials,
/// endpoint), as every function loads it.
pub async fn sdk_config() -> aws_config::SdkConfig {
    aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await
}

/// A stream consumer: what handles one batch payload.
pub trait Consumer: Send + Sync {
    /// The consumer's counts of a batch.
    type Stats: Stats;

    /// Handles one batch (the raw JSON of a Lambda DynamoDB event). An error
    /// means the payload as a whole is unusable: Lambda retries the whole batch.
    fn handle(&self, payload: &[u8]) -> impl Future<Output = Result<Outcome<Self::Stats>, ParseError>> + Send;
}

/// A consumer's counts of one batch, as the shell reports them.
pub trait Stats {
    /// The batch's EMF line.
    fn metrics_line(&self, function: &str, duration: Duration, now_ms: u64) -> String;
    /// Logs the batch's summary (counts, and where Lambda resumes) at info.
    fn log_summary(&self, resumes_from: Option<&str>);
}

/// Runs `consumer` under the Lambda runtime until the runtime stops it.
/// Each payload is read once, by the consumer (see [`payload`]).
pub async fn serve<C: Consumer>(consumer: C, function: String) -> Result<(), lambda_runtime::Error> {
    let (consumer, function) = (&consumer, function.as_str());
    let payloads = payload::Payloads::default();
    let kept = &payloads;
    let handler = service_fn(|event: LambdaEvent<IgnoredAny>| async move {
        let payload = kept
            .take(&event.context.request_id)
            .ok_or("the invocation's payload was not kept (streamdex's payload layer did not run)")?;
        invoke(consumer, function, &payload, &SystemClock).await
    });
    Runtime::new(handler)
        .layer(lambda_runtime::layers::TracingLayer::new())
        .layer(payload::KeepPayloads(payloads.clone()))
        .run()
        .await
}

/// One invocation: handle the batch, log each record's fate once, emit
/// metrics, answer. An unusable payload is a function error: Lambda retries
/// the whole batch.
pub async fn invoke<C: Consumer>(
    consumer: &C,
    function: &str,
    payload: &[u8],
    clock: &dyn Clock,
) -> Result<DynamoDbEventResponse, lambda_runtime::Error> {
    let started = Instant::now();
    let outcome = consumer.handle(payload).await.inspect_err(|error| {
        tracing::error!(%error, "the payload is not a Lambda DynamoDB event: the whole batch fails");
    })?;
    println!(
        "{}",
        outcome.stats.metrics_line(function, started.elapsed(), clock.now_ms())
    );
    log(&outcome);
    Ok(lambda_response(&outcome.response()))
}

/// Logs each quarantined record and each failure once, then the summary.
pub fn log<S: Stats>(outcome: &Outcome<S>) {
    for q in &outcome.quarantined {
        tracing::warn!(sequence_number = q.sequence_number.as_deref(), table = q.table.as_deref(), cause = q.reason.kind(), reason = %q.reason, "quarantined");
    }
    for f in &outcome.failures {
        tracing::error!(sequence_number = f.failed.sequence_number(), stage = ?f.stage, class = %f.fault.class(), reason = %f.fault.message(), "failed");
    }
    outcome.stats.log_summary(outcome.resumes_from());
}

/// The batch response as `aws_lambda_events` types it.
pub fn lambda_response(response: &BatchResponse) -> DynamoDbEventResponse {
    let mut out = DynamoDbEventResponse::default();
    for failure in &response.batch_item_failures {
        let mut item = DynamoDbBatchItemFailure::default();
        item.item_identifier = Some(failure.item_identifier.clone());
        out.batch_item_failures.push(item);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::settlement::Failed;

    #[test]
    fn concurrency_is_checked() {
        let env = |v: &'static str| move |name: &str| (name == ENV_CONCURRENCY).then(|| v.to_owned());
        assert_eq!(concurrency_from_env(env("32")).ok(), Some(Some(32)));
        assert!(concurrency_from_env(env("0")).is_err());
        assert!(concurrency_from_env(env("many")).is_err());
        assert_eq!(concurrency_from_env(|_: &str| None).ok(), Some(None));
    }

    #[test]
    fn the_allocator_is_tuned() {
        tune_allocator();
        // SAFETY: reads of process-wide options and policy; no pointers.
        let (purge, thp) = unsafe {
            (
                libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY),
                libmimalloc_sys::mi_option_get(MI_OPTION_ALLOW_THP),
            )
        };
        assert_eq!((purge, thp), (1_000, 0));
        #[cfg(target_os = "linux")]
        {
            // SAFETY: as in `tune_allocator`: integers only.
            let disabled = unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
            assert_eq!(disabled, 1, "transparent huge pages are still allowed for the process");
        }
    }

    #[test]
    fn the_lambda_response_lists_the_failure() {
        let r = lambda_response(&BatchResponse::new(Some(&Failed::From("7".into()))));
        assert_eq!(r.batch_item_failures.len(), 1);
        assert_eq!(r.batch_item_failures[0].item_identifier.as_deref(), Some("7"));
        assert!(lambda_response(&BatchResponse::new(None))
            .batch_item_failures
            .is_empty());
    }
}
