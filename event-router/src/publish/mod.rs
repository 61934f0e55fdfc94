//! The `Publisher` port: where events go. [`eventbridge`] puts them on an
//! EventBridge bus; [`memory`] keeps them (tests, replays) and can be told
//! to fail.
//!
//! One call is one `PutEvents` request of at most [`MAX_ENTRIES`] entries.
//! The answer has one [`EntryResult`] per entry, in order: EventBridge
//! accepts or fails each entry on its own. A [`PublishError`] is the call
//! failing as a whole (throttled, unreachable, the bus missing, access
//! denied).

pub mod eventbridge;
pub mod memory;

use std::future::Future;

/// PutEvents takes at most this many entries.
pub const MAX_ENTRIES: usize = 10;

/// One entry to put (the bus is the publisher's; `Time` unset, no `Resources`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub source: String,
    pub detail_type: String,
    /// The `Detail` JSON text.
    pub detail: String,
}

impl Entry {
    /// The event as a rule's target receives it (`version`, `source`,
    /// `detail-type`, `detail`; EventBridge also adds `id`, `account`,
    /// `time`, `region` and `resources`): what the reaper reads, and what
    /// local runs hand it.
    pub fn delivered(&self) -> String {
        let text = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned());
        format!(
            r#"{{"version":"0","source":{},"detail-type":{},"detail":{}}}"#,
            text(&self.source),
            text(&self.detail_type),
            self.detail
        )
    }
}

/// What became of one entry of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryResult {
    /// On the bus.
    Published,
    /// Failed, with EventBridge's `ErrorCode` and `ErrorMessage`.
    Failed { code: String, message: String },
}

/// What a failed entry's code means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryFailure {
    /// Worth sending again after a backoff.
    Retryable,
    /// The deployment is wrong (access, a missing bus): no entry can go
    /// until it is fixed. The record fails (Lambda retries it), rather than
    /// every record of the stream being quarantined for a permission.
    Deployment,
    /// The entry itself is refused: it never will go. Its record is
    /// quarantined with the code and message.
    Refused,
}

/// The meaning of a per-entry `ErrorCode` (see `docs/ESM.md`):
/// `ThrottlingException` and `InternalFailure` are retried; access and
/// resource codes are the deployment's; anything else (`InvalidArgument`,
/// `MalformedDetail`, codes unknown today) refuses the entry.
pub fn entry_failure(code: &str) -> EntryFailure {
    match code {
        "ThrottlingException" | "InternalFailure" | "InternalException" | "ServiceUnavailable" => {
            EntryFailure::Retryable
        }
        "AccessDeniedException" | "ResourceNotFoundException" | "KMSAccessDeniedException" => EntryFailure::Deployment,
        code if code.starts_with("NotAuthorized") => EntryFailure::Deployment,
        _ => EntryFailure::Refused,
    }
}

/// A call failed as a whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublishError {
    /// Throttled, timed out, unreachable, a 5xx: worth retrying.
    #[error("{0}")]
    Transient(String),
    /// The bus is missing, access is denied, credentials are unusable.
    #[error("{0}")]
    Deployment(String),
    /// The request was refused for its content (a validation error).
    #[error("{0}")]
    Refused(String),
}

impl PublishError {
    pub fn is_retryable(&self) -> bool {
        self.class() == model::Class::Transient
    }
}

/// Where events go.
pub trait Publisher: Send + Sync {
    /// One PutEvents call of at most [`MAX_ENTRIES`] entries; on success,
    /// one result per entry, in order.
    fn put_events(&self, entries: &[&Entry]) -> impl Future<Output = Result<Vec<EntryResult>, PublishError>> + Send;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_codes_are_retried_refused_or_the_deployments() {
        assert_eq!(entry_failure("ThrottlingException"), EntryFailure::Retryable);
        assert_eq!(entry_failure("InternalFailure"), EntryFailure::Retryable);
        assert_eq!(entry_failure("InvalidArgument"), EntryFailure::Refused);
        assert_eq!(entry_failure("MalformedDetail"), EntryFailure::Refused);
        assert_eq!(entry_failure("SomethingNew"), EntryFailure::Refused);
        assert_eq!(entry_failure("AccessDeniedException"), EntryFailure::Deployment);
        assert_eq!(
            entry_failure("NotAuthorizedForSourceException"),
            EntryFailure::Deployment
        );
    }
}
