//! The [`Publisher`] on EventBridge, with `aws-sdk-eventbridge`: one
//! `PutEvents` per call, on the configured bus.
//!
//! Build the client with `aws_kit::clients::eventbridge_client`: no SDK
//! retries (the router owns them, per entry and per call, through the kit's
//! retry driver, and counts them) and bounded timeouts. Errors are
//! classified by the kit (`aws_kit::error`), as every AWS call's are.

use aws_kit::error::sdk_fault;
use aws_sdk_eventbridge::types::PutEventsRequestEntry;
use aws_sdk_eventbridge::Client;

pub use aws_kit::clients::eventbridge_client;

use super::{Entry, EntryResult, PublishError, Publisher};

/// Puts events on one bus.
#[derive(Debug, Clone)]
pub struct EventBridgePublisher {
    client: Client,
    bus: String,
}

impl EventBridgePublisher {
    pub fn new(client: Client, bus: impl Into<String>) -> EventBridgePublisher {
        EventBridgePublisher {
            client,
            bus: bus.into(),
        }
    }

    pub fn bus(&self) -> &str {
        &self.bus
    }
}

impl Publisher for EventBridgePublisher {
    async fn put_events(&self, entries: &[&Entry]) -> Result<Vec<EntryResult>, PublishError> {
        let count = entries.len();
        let request = entries.iter().map(|e| {
            PutEventsRequestEntry::builder()
                .event_bus_name(&self.bus)
                .source(&e.source)
                .detail_type(&e.detail_type)
                .detail(&e.detail)
                .build()
        });
        let output = self
            .client
            .put_events()
            .set_entries(Some(request.collect()))
            .send()
            .await
            .map_err(|err| sdk_fault(&format!("PutEvents of {count} entries on bus `{}`", self.bus), err))?;
        let results: Vec<EntryResult> = output
            .entries()
            .iter()
            .map(|r| match r.error_code() {
                Some(code) => EntryResult::Failed {
                    code: code.to_owned(),
                    message: r.error_message().unwrap_or("no message").to_owned(),
                },
                None => EntryResult::Published,
            })
            .collect();
        if results.len() != count {
            // EventBridge answers one result per entry; anything else is not
            // an answer to trust: send the call again.
            return Err(PublishError::transient(format!(
                "PutEvents on bus `{}` answered {} results for {count} entries",
                self.bus,
                results.len()
            )));
        }
        Ok(results)
    }
}
