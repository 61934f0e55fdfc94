//! The reaper's trigger, locally: on AWS the reap rules invoke the reaper
//! Lambda; locally `streamdex up` gives each rule an SQS queue as its
//! target ([`crate::stack::rule_queue_name`]), and the runner polls those
//! queues and calls [`event_router::Reaper::reap`] with each event.
//!
//! A reaped event is deleted from its queue. One that failed transiently
//! stays and comes back after the queue's visibility timeout (as
//! EventBridge retries the Lambda). One that can never be reaped (a
//! malformed event) goes to the reaper's dead-letter queue, as EventBridge
//! would send it there after its retries.

use std::sync::Arc;

use event_router::reaper::{Graph, ReaperError};
use event_router::{Reaped, Reaper};
use futures::future::BoxFuture;
use futures::FutureExt;

use super::RunEvent;

/// How long a received event is hidden from the next receive (seconds):
/// a failed reap is retried after it.
pub const VISIBILITY_TIMEOUT_SECONDS: i32 = 30;

/// What reaps an event: the reaper in process, or its built function
/// (`super::host`).
pub trait ReapTarget: Send + Sync {
    fn reap<'a>(&'a self, event: &'a [u8]) -> BoxFuture<'a, Result<Reaped, ReapFailed>>;
}

/// Why an event was not reaped, and whether reaping it again may help.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ReapFailed {
    pub message: String,
    pub retryable: bool,
}

impl From<ReaperError> for ReapFailed {
    fn from(e: ReaperError) -> ReapFailed {
        ReapFailed {
            message: e.to_string(),
            retryable: e.is_retryable(),
        }
    }
}

impl<G: Graph + 'static> ReapTarget for Reaper<G> {
    fn reap<'a>(&'a self, event: &'a [u8]) -> BoxFuture<'a, Result<Reaped, ReapFailed>> {
        async move { Reaper::reap(self, event).await.map_err(ReapFailed::from) }.boxed()
    }
}

/// An SQS queue, by name and URL.
#[derive(Debug, Clone)]
pub struct Queue {
    pub name: String,
    pub url: String,
}

/// The reaper fed from its rules' queues.
pub struct ReaperFeed {
    pub sqs: aws_sdk_sqs::Client,
    pub queues: Vec<Queue>,
    pub dead_letters: Option<Queue>,
    pub reaper: Arc<dyn ReapTarget>,
}

/// What one poll did.
#[derive(Debug, Default)]
pub struct Fed {
    pub busy: bool,
    pub events: Vec<RunEvent>,
}

impl ReaperFeed {
    /// Receives what each queue holds now (up to 10 events a queue) and reaps it.
    pub async fn poll(&self) -> Fed {
        let mut fed = Fed::default();
        for queue in &self.queues {
            let problem = |error: String| RunEvent::Problem {
                context: format!("reaper queue {}", queue.name),
                error,
            };
            let received = self
                .sqs
                .receive_message()
                .queue_url(&queue.url)
                .max_number_of_messages(10)
                .visibility_timeout(VISIBILITY_TIMEOUT_SECONDS)
                .wait_time_seconds(0)
                .send()
                .await;
            let messages = match received {
                Ok(output) => output.messages.unwrap_or_default(),
                Err(e) => {
                    fed.events
                        .push(problem(format!("ReceiveMessage: {}", aws_kit::error::sdk_message(&e))));
                    continue;
                }
            };
            for message in messages {
                fed.busy = true;
                let body = message.body.unwrap_or_default();
                let settled = match self.reaper.reap(body.as_bytes()).await {
                    Ok(reaped) => {
                        fed.events.push(RunEvent::Reaped(format!(
                            "reaper: node {} of {}: {}",
                            reaped.node,
                            reaped.table,
                            if reaped.node_exists {
                                "exists again, nothing deleted".to_owned()
                            } else {
                                format!(
                                    "deleted {} out-edges and {} in-edges",
                                    reaped.out_edges, reaped.in_edges
                                )
                            }
                        )));
                        true
                    }
                    Err(e) if e.retryable => {
                        fed.events.push(problem(format!(
                            "{e}; the event comes back in {VISIBILITY_TIMEOUT_SECONDS} s and is reaped again"
                        )));
                        false
                    }
                    Err(e) => self.dead_letter(&body, &e, &mut fed).await,
                };
                if let (true, Some(handle)) = (settled, message.receipt_handle) {
                    if let Err(e) = self
                        .sqs
                        .delete_message()
                        .queue_url(&queue.url)
                        .receipt_handle(handle)
                        .send()
                        .await
                    {
                        fed.events
                            .push(problem(format!("DeleteMessage: {}", aws_kit::error::sdk_message(&e))));
                    }
                }
            }
        }
        fed
    }

    /// Sends an event that can never be reaped to the dead-letter queue; whether it went.
    async fn dead_letter(&self, body: &str, error: &ReapFailed, fed: &mut Fed) -> bool {
        let Some(dlq) = &self.dead_letters else {
            fed.events.push(RunEvent::Problem {
                context: "reaper".to_owned(),
                error: format!("{error}; the event is dropped (no dead-letter queue)"),
            });
            return true;
        };
        match self
            .sqs
            .send_message()
            .queue_url(&dlq.url)
            .message_body(body)
            .send()
            .await
        {
            Ok(_) => {
                fed.events.push(RunEvent::Problem {
                    context: "reaper".to_owned(),
                    error: format!("{error}; the event went to the dead-letter queue {}", dlq.name),
                });
                true
            }
            Err(e) => {
                fed.events.push(RunEvent::Problem {
                    context: "reaper".to_owned(),
                    error: format!(
                        "{error}; sending it to {} failed: {}",
                        dlq.name,
                        aws_kit::error::sdk_message(&e)
                    ),
                });
                false
            }
        }
    }
}
