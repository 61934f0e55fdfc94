//! The functions a mapping invokes, in process: the stream indexer and the
//! event router, each answering as its Lambda does (`batchItemFailures`, or
//! a function error for a payload it cannot read), with the EMF line its
//! Lambda prints for the batch.

use std::time::Instant;

use event_router::publish::Publisher;
use event_router::Router;
use futures::future::BoxFuture;
use futures::FutureExt;
use stream_indexer::quarantine::Quarantine;
use stream_indexer::settlement::Failure;
use stream_indexer::store::Store;
use stream_indexer::Indexer;

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

fn response(failed: Option<String>) -> Response {
    match failed {
        None => Response::Success,
        Some(seq) if seq.is_empty() => Response::Error("the whole batch failed".to_owned()),
        Some(seq) => Response::FailedFrom(seq),
    }
}

/// What an invocation answered once its batch was settled.
fn settled(emf: String, failed: Option<String>, failures: &[Failure], quarantined: usize) -> Invocation {
    Invocation {
        emf: Some(emf),
        failures: failures
            .iter()
            .map(|f| format!("record {}: {}", f.sequence_number, f.reason))
            .collect(),
        quarantined,
        response: response(failed),
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

/// The stream indexer as a function.
pub struct IndexerFunction<S: Store, Q: Quarantine> {
    pub name: String,
    pub indexer: Indexer<S, Q>,
}

impl<S: Store, Q: Quarantine> Function for IndexerFunction<S, Q> {
    fn name(&self) -> &str {
        &self.name
    }

    fn invoke<'a>(&'a self, payload: &'a [u8], now_ms: u64) -> BoxFuture<'a, Invocation> {
        async move {
            let started = Instant::now();
            match self.indexer.handle(payload).await {
                Ok(o) => {
                    let emf = stream_indexer::metrics::batch_line(&self.name, &o.stats, started.elapsed(), now_ms);
                    settled(emf, o.failed, &o.failures, o.quarantined.len())
                }
                Err(e) => errored(e),
            }
        }
        .boxed()
    }
}

/// The event router as a function.
pub struct RouterFunction<P: Publisher, Q: Quarantine> {
    pub name: String,
    pub router: Router<P, Q>,
}

impl<P: Publisher, Q: Quarantine> Function for RouterFunction<P, Q> {
    fn name(&self) -> &str {
        &self.name
    }

    fn invoke<'a>(&'a self, payload: &'a [u8], now_ms: u64) -> BoxFuture<'a, Invocation> {
        async move {
            let started = Instant::now();
            match self.router.handle(payload).await {
                Ok(o) => {
                    let emf = event_router::metrics::batch_line(&self.name, &o.stats, started.elapsed(), now_ms);
                    settled(emf, o.failed, &o.failures, o.quarantined.len())
                }
                Err(e) => errored(e),
            }
        }
        .boxed()
    }
}
