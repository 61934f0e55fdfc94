//! The functions a mapping invokes, in process: the stream indexer and the
//! event router, each answering as its Lambda does (`batchItemFailures`, or
//! a function error for a payload it cannot read), with the EMF line its
//! Lambda prints for the batch.

use std::time::Instant;

use aws_kit::lambda::{Consumer, Stats};
use futures::future::BoxFuture;
use futures::FutureExt;
use model::settlement::BatchResponse;

/// The function's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// An empty `batchItemFailures`.
    Success,
    /// `batchItemFailures` naming this sequence number (the lowest failed record).
    FailedFrom(String),
    /// A function error, or an empty `itemIdentifier`: the whole batch failed.
    Error(String),
}

/// One invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub response: Response,
    /// The batch's CloudWatch EMF line, as the Lambda prints it.
    pub emf: Option<String>,
    /// Why records failed, for the log (sequence number and reason).
    pub failures: Vec<String>,
    /// Records quarantined.
    pub quarantined: usize,
}

/// A function a mapping invokes.
pub trait Function: Send + Sync {
    /// Its name (the EMF `Function` dimension).
    fn name(&self) -> &str;

    /// Handles a Lambda DynamoDB event payload; `now_ms` stamps the EMF line.
    fn invoke<'a>(&'a self, payload: &'a [u8], now_ms: u64) -> BoxFuture<'a, Invocation>;
}

fn response(response: &BatchResponse) -> Response {
    match response.batch_item_failures.first() {
        None => Response::Success,
        Some(f) if f.item_identifier.is_empty() => Response::Error("the whole batch failed".to_owned()),
        Some(f) => Response::FailedFrom(f.item_identifier.clone()),
    }
}

/// An invocation whose payload was unusable: a function error.
fn errored(e: impl std::fmt::Display) -> Invocation {
    Invocation {
        response: Response::Error(e.to_string()),
        emf: None,
        failures: vec![e.to_string()],
        quarantined: 0,
    }
}

/// A stream consumer (the indexer or the router) as a function: what its
/// Lambda shell (`aws_kit::lambda`) does per invocation, answered as values.
pub struct ConsumerFunction<C: Consumer> {
    pub name: String,
    pub consumer: C,
}

impl<C: Consumer> Function for ConsumerFunction<C> {
    fn name(&self) -> &str {
        &self.name
    }

    fn invoke<'a>(&'a self, payload: &'a [u8], now_ms: u64) -> BoxFuture<'a, Invocation> {
        async move {
            let started = Instant::now();
            match self.consumer.handle(payload).await {
                Ok(outcome) => Invocation {
                    emf: Some(outcome.stats.metrics_line(&self.name, started.elapsed(), now_ms)),
                    failures: outcome
                        .failures
                        .iter()
                        .map(|f| {
                            let record = f.failed.sequence_number().unwrap_or("(the whole batch)");
                            format!("record {record}: {}", f.fault)
                        })
                        .collect(),
                    quarantined: outcome.quarantined.len(),
                    response: response(&outcome.response()),
                },
                Err(e) => errored(e),
            }
        }
        .boxed()
    }
}
