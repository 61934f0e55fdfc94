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

use model::Class;

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

/// What a failed entry's `ErrorCode` means (see `docs/ESM.md`):
/// `ThrottlingException` and `InternalFailure` are transient (sent again);
/// access and resource codes are the deployment's (the record fails, and
/// Lambda retries it, rather than every record of the stream being
/// quarantined for a permission); anything else (`InvalidArgument`,
/// `MalformedDetail`, codes unknown today) refuses the entry (its record is
/// quarantined with the code and message).
pub fn entry_class(code: &str) -> Class {
    match code {
        "ThrottlingException" | "InternalFailure" | "InternalException" | "ServiceUnavailable" => Class::Transient,
        "AccessDeniedException" | "ResourceNotFoundException" | "KMSAccessDeniedException" => Class::Deployment,
        code if code.starts_with("NotAuthorized") => Class::Deployment,
        _ => Class::Refused,
    }
}

/// A call that failed as a whole (throttled, unreachable, the bus missing,
/// access denied, refused for its content): the one error type of every port.
pub type PublishError = model::Fault;

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
        assert_eq!(entry_class("ThrottlingException"), Class::Transient);
        assert_eq!(entry_class("InternalFailure"), Class::Transient);
        assert_eq!(entry_class("InvalidArgument"), Class::Refused);
        assert_eq!(entry_class("MalformedDetail"), Class::Refused);
        assert_eq!(entry_class("SomethingNew"), Class::Refused);
        assert_eq!(entry_class("AccessDeniedException"), Class::Deployment);
        assert_eq!(entry_class("NotAuthorizedForSourceException"), Class::Deployment);
    }
}
