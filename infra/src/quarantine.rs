//! The quarantine as an operator works it: what is in it, one entry whole
//! (its record fetched from the claim-check bucket when it did not fit in a
//! message), and redrive: each record back through the consumer that
//! quarantined it, after a fix (a config that now declares its table, an
//! index whose column type was corrected...).
//!
//! Reading the queue does not consume it: messages are received with a
//! visibility timeout ([`HIDE_SECONDS`]) so that one pass sees each once,
//! then made visible again, except those a redrive applied, which are
//! deleted with their claim-check object. A command that dies half way
//! loses nothing: its messages reappear when the timeout passes.

pub mod failed;
use std::sync::Arc;

use aws_config::SdkConfig;
use aws_kit::clients::{s3_client, sqs_client};
use aws_kit::clock::Clock;
use aws_kit::quarantine::body::{self, Stored, UnreadableBody};
use aws_kit::quarantine::claim;
use aws_kit::quarantine::memory::MemoryQuarantine;
use aws_sdk_sqs::error::ProvideErrorMetadata;
use aws_sdk_sqs::types::ChangeMessageVisibilityBatchRequestEntry;
use model::filter::Consumer;
use model::{Config, Fault};

use crate::runner::function::{ConsumerFunction, Function, Response};
use crate::runner::local::{consumer_function, queue_url, WiringError};
use crate::stack::{self, FunctionRole};

/// Seconds a listed message stays hidden from other readers while a command works.
pub const HIDE_SECONDS: i32 = 120;
/// Receives in a row that bring nothing new after which the queue is taken
/// as read (SQS's short polling samples a subset of its servers).
const EMPTY_RECEIVES: usize = 3;

/// Why a quarantine command failed.
#[derive(Debug, thiserror::Error)]
pub enum QuarantineError {
    #[error(transparent)]
    Wiring(#[from] WiringError),
    #[error("{operation} on queue `{queue}`: {reason}")]
    Queue {
        operation: &'static str,
        queue: String,
        reason: String,
    },
    /// The claim-check object could not be read, written or removed.
    #[error("{0}")]
    Claim(Fault),
    #[error("the entry with its new reason is over the message limit")]
    EntryTooLarge,
}

/// One message of the quarantine.
#[derive(Debug)]
pub struct Held {
    pub message_id: String,
    receipt: String,
    /// The entry, or why the body is not one.
    pub stored: Result<Stored, UnreadableBody>,
}

impl Held {
    /// Whether `id` names this message: a prefix of its message id (6
    /// characters at least) or its record's sequence number.
    pub fn is(&self, id: &str) -> bool {
        (id.len() >= 6 && self.message_id.starts_with(id))
            || self
                .stored
                .as_ref()
                .is_ok_and(|s| s.entry.sequence_number.as_deref() == Some(id))
    }
}

/// The quarantine queue of a deployment, and its claim-check bucket.
pub struct Inbox {
    sqs: aws_sdk_sqs::Client,
    s3: aws_sdk_s3::Client,
    name: String,
    url: String,
}

impl Inbox {
    /// The quarantine of `config` on the endpoint of `sdk`.
    pub async fn open(sdk: &SdkConfig, config: &Config) -> Result<Inbox, QuarantineError> {
        let sqs = sqs_client(sdk);
        let name = stack::quarantine_queue_name(config);
        let url = queue_url(&sqs, &name).await?;
        Ok(Inbox {
            sqs,
            s3: s3_client(sdk),
            name,
            url,
        })
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Receives up to `limit` messages, each once, hidden for [`HIDE_SECONDS`];
    /// give them back with [`Inbox::release`].
    pub async fn take(&self, limit: usize) -> Result<Vec<Held>, QuarantineError> {
        let mut held: Vec<Held> = Vec::new();
        let mut empty = 0;
        while held.len() < limit && empty < EMPTY_RECEIVES {
            let want = (limit - held.len()).min(10) as i32;
            let output = self
                .sqs
                .receive_message()
                .queue_url(&self.url)
                .max_number_of_messages(want)
                .visibility_timeout(HIDE_SECONDS)
                .wait_time_seconds(0)
                .send()
                .await
                .map_err(|e| queue_error("ReceiveMessage", &self.name, &e))?;
            let before = held.len();
            for message in output.messages.unwrap_or_default() {
                let (Some(message_id), Some(receipt)) = (message.message_id, message.receipt_handle) else {
                    continue;
                };
                if held.iter().any(|h| h.message_id == message_id) {
                    continue;
                }
                let stored = Stored::parse(message.body.as_deref().unwrap_or_default());
                held.push(Held {
                    message_id,
                    receipt,
                    stored,
                });
            }
            // A receive that brings nothing new counts as empty, so the loop
            // ends even on a server that hands the same messages out again.
            empty = if held.len() == before { empty + 1 } else { 0 };
        }
        Ok(held)
    }

    /// Makes messages visible again (what a command did not delete).
    pub async fn release(&self, held: &[&Held]) -> Result<(), QuarantineError> {
        for chunk in held.chunks(10) {
            let mut request = self.sqs.change_message_visibility_batch().queue_url(&self.url);
            for (i, h) in chunk.iter().enumerate() {
                let entry = ChangeMessageVisibilityBatchRequestEntry::builder()
                    .id(i.to_string())
                    .receipt_handle(&h.receipt)
                    .visibility_timeout(0)
                    .build()
                    .map_err(|e| QuarantineError::Queue {
                        operation: "ChangeMessageVisibilityBatch",
                        queue: self.name.clone(),
                        reason: e.to_string(),
                    })?;
                request = request.entries(entry);
            }
            request
                .send()
                .await
                .map_err(|e| queue_error("ChangeMessageVisibilityBatch", &self.name, &e))?;
        }
        Ok(())
    }

    /// The entry's whole record: from the message, or from the bucket.
    pub async fn record(&self, stored: &Stored) -> Result<String, QuarantineError> {
        match &stored.raw_claim {
            Some(c) => claim::fetch(&self.s3, c).await.map_err(QuarantineError::Claim),
            None => Ok(stored.entry.raw.clone()),
        }
    }

    /// Puts the entry back with a new reason (a redrive refused it again):
    /// a new message naming the same record (and claim-check object), then
    /// the old message deleted. When the new message cannot be written, the
    /// old one stays as it was and the error says why.
    pub async fn replace_reason(&self, stored: &Stored, held: &Held, reason: &str) -> Result<(), QuarantineError> {
        let mut entry = stored.entry.clone();
        entry.reason = reason.to_owned();
        let written = match &stored.raw_claim {
            Some(claim) => body::claimed_body(&entry, claim).map(Some),
            None => body::whole_body(&entry, aws_kit::quarantine::sqs::MAX_MESSAGE_BYTES),
        };
        let text = match written {
            Ok(Some(text)) => text,
            Ok(None) => return Err(QuarantineError::EntryTooLarge),
            Err(fault) => return Err(QuarantineError::Claim(fault)),
        };
        self.sqs
            .send_message()
            .queue_url(&self.url)
            .message_body(text)
            .send()
            .await
            .map_err(|e| queue_error("SendMessage", &self.name, &e))?;
        self.delete_message(held).await
    }

    /// Deletes the message only.
    async fn delete_message(&self, held: &Held) -> Result<(), QuarantineError> {
        self.sqs
            .delete_message()
            .queue_url(&self.url)
            .receipt_handle(&held.receipt)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| queue_error("DeleteMessage", &self.name, &e))
    }

    /// Deletes a message and its claim-check object (after a redrive applied it).
    pub async fn delete(&self, held: &Held) -> Result<(), QuarantineError> {
        if let Ok(Stored { raw_claim: Some(c), .. }) = &held.stored {
            claim::remove(&self.s3, c).await.map_err(QuarantineError::Claim)?;
        }
        self.delete_message(held).await
    }
}

fn queue_error<E>(operation: &'static str, queue: &str, e: &aws_sdk_sqs::error::SdkError<E>) -> QuarantineError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    QuarantineError::Queue {
        operation,
        queue: queue.to_owned(),
        reason: aws_kit::error::sdk_message(e),
    }
}

/// What a redrive did with one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redrive {
    /// Applied by its consumer; the message is deleted.
    Applied,
    /// Refused again; the entry stays, now with this reason.
    StillPoison(String),
    /// Could not be tried (or failed in a way a retry may fix); the message stays.
    Failed(String),
}

/// The consumer that wrote an entry (`stream-indexer`, `event-router`).
fn consumer_of(name: &str) -> Option<Consumer> {
    Consumer::ALL
        .into_iter()
        .find(|c| FunctionRole::of(*c).binary() == name)
}

/// The consumers a redrive sends records through (each as its Lambda runs
/// it, against the deployment of a config), built once per command, with an
/// in-memory quarantine that says whether a record was refused again.
/// The indexer as redrive runs it: its writes guarded (`Guard::Newer`), so
/// a record older than what the tables hold is skipped, not applied.
fn guarded_indexer(
    config: &Arc<Config>,
    dynamodb: &aws_sdk_dynamodb::Client,
    quarantine: Arc<MemoryQuarantine>,
) -> Arc<dyn Function> {
    let options = stream_indexer::Options {
        guard: stream_indexer::apply::Guard::Newer,
        ..stream_indexer::Options::default()
    };
    Arc::new(ConsumerFunction {
        name: stack::function_name(config, FunctionRole::Indexer),
        consumer: stream_indexer::Indexer::new(
            config.clone(),
            stream_indexer::store::dynamo::DynamoStore::new(dynamodb.clone(), config.clone()),
            quarantine,
            options,
        ),
    })
}

pub struct Redriver {
    quarantine: Arc<MemoryQuarantine>,
    functions: Vec<(Consumer, Arc<dyn Function>)>,
    /// The time each redriven record's invocation is made at.
    clock: Arc<dyn Clock>,
}

impl Redriver {
    /// A redriver whose invocations are made at `clock`'s time.
    pub fn new(sdk: &SdkConfig, config: &Arc<Config>, clock: Arc<dyn Clock>) -> Redriver {
        let quarantine = Arc::new(MemoryQuarantine::new());
        let dynamodb = aws_kit::clients::dynamodb_client(sdk);
        let functions = Consumer::ALL
            .into_iter()
            .map(|c| match c {
                // A redriven record is out of order: newer derived data may be
                // there already, and it must win (guarded writes).
                Consumer::Indexer => (c, guarded_indexer(config, &dynamodb, quarantine.clone())),
                Consumer::Router => (c, consumer_function(sdk, &dynamodb, config, c, quarantine.clone())),
            })
            .collect();
        Redriver {
            quarantine,
            functions,
            clock,
        }
    }

    /// Sends one entry's record back through its consumer, as a batch of
    /// one; deletes the message when the consumer applied it, and puts the
    /// entry back with its new reason when the consumer refused it again.
    pub async fn redrive(&self, inbox: &Inbox, held: &Held) -> Redrive {
        let stored = match &held.stored {
            Ok(stored) => stored,
            Err(e) => return Redrive::Failed(e.to_string()),
        };
        let function = consumer_of(&stored.entry.consumer)
            .and_then(|c| self.functions.iter().find(|(f, _)| *f == c))
            .map(|(_, function)| function);
        let Some(function) = function else {
            return Redrive::Failed(format!("unknown consumer `{}`", stored.entry.consumer));
        };
        if stored.raw_truncated {
            return Redrive::Failed(
                "the record was cut short when it was quarantined (no claim-check bucket)".to_owned(),
            );
        }
        let record = match inbox.record(stored).await {
            Ok(record) => record,
            Err(e) => return Redrive::Failed(e.to_string()),
        };
        let payload = format!("{{\"Records\":[{record}]}}");
        self.quarantine.take();
        let invocation = function.invoke(payload.as_bytes(), self.clock.now_ms()).await;
        if let Some(again) = self.quarantine.take().into_iter().next() {
            return match inbox.replace_reason(stored, held, &again.reason).await {
                Ok(()) => Redrive::StillPoison(again.reason),
                Err(e) => Redrive::Failed(format!(
                    "refused again ({}), and the entry keeps its old reason: {e}",
                    again.reason
                )),
            };
        }
        match invocation.response {
            Response::Success => match inbox.delete(held).await {
                Ok(()) => Redrive::Applied,
                Err(e) => Redrive::Failed(format!("applied, but the message was not deleted: {e}")),
            },
            Response::FailedFrom(_) | Response::Error(_) => Redrive::Failed(invocation.failures.join("; ")),
        }
    }
}
