//! The one error vocabulary of every request streamdex makes: a [`Fault`]
//! names what failed and why, keeps its source chain, and carries its
//! [`Class`], which is all a caller needs to decide what to do next.
//!
//! | class | meaning | what the consumers do |
//! |---|---|---|
//! | [`Class::Transient`] | throttling, a 5xx, a timeout, a dropped connection | retry with backoff; past the attempts, fail the record (Lambda retries it) |
//! | [`Class::Refused`] | the request's content can never succeed (a validation error, an item over 400 KB) | split to find the culprit, then quarantine its record |
//! | [`Class::Deployment`] | the deployment is wrong (a missing table or bus, access denied) | fail the batch at once, so alarms fire and it is retried after the fix |
//!
//! Every port (`Store`, `Publisher`, the reaper's `Graph`, the quarantine)
//! answers with a `Fault`; the AWS kit builds them from SDK errors.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

/// What kind of failure a [`Fault`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// Worth sending again after a backoff.
    Transient,
    /// The request's content is refused: sending it again can never succeed.
    Refused,
    /// The deployment is wrong: no record is at fault.
    Deployment,
}

impl Class {
    pub fn is_transient(self) -> bool {
        self == Class::Transient
    }

    pub fn is_refused(self) -> bool {
        self == Class::Refused
    }

    pub fn is_deployment(self) -> bool {
        self == Class::Deployment
    }

    /// A lower-case name for logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Class::Transient => "transient",
            Class::Refused => "refused",
            Class::Deployment => "deployment",
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed request: its class, a message naming what failed and why (the
/// operation and what it was on), and the error it came from, if any.
#[derive(Clone)]
#[must_use]
pub struct Fault {
    class: Class,
    message: String,
    source: Option<Arc<dyn StdError + Send + Sync + 'static>>,
}

impl Fault {
    pub fn new(class: Class, message: impl Into<String>) -> Fault {
        Fault {
            class,
            message: message.into(),
            source: None,
        }
    }

    pub fn transient(message: impl Into<String>) -> Fault {
        Fault::new(Class::Transient, message)
    }

    pub fn refused(message: impl Into<String>) -> Fault {
        Fault::new(Class::Refused, message)
    }

    pub fn deployment(message: impl Into<String>) -> Fault {
        Fault::new(Class::Deployment, message)
    }

    /// Keeps `source` as the cause (shown by `Error::source`, not repeated
    /// in the message).
    pub fn with_source(mut self, source: impl StdError + Send + Sync + 'static) -> Fault {
        self.source = Some(Arc::new(source));
        self
    }

    pub fn class(&self) -> Class {
        self.class
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn is_transient(&self) -> bool {
        self.class.is_transient()
    }

    pub fn is_refused(&self) -> bool {
        self.class.is_refused()
    }

    pub fn is_deployment(&self) -> bool {
        self.class.is_deployment()
    }

    /// Whether the same request may succeed if sent again.
    pub fn is_retryable(&self) -> bool {
        self.class.is_transient()
    }

    /// The same fault with its message rewritten (class and source kept).
    pub fn map_message(mut self, f: impl FnOnce(&str) -> String) -> Fault {
        self.message = f(&self.message);
        self
    }

    /// The same fault with `context: ` before its message.
    pub fn context(self, context: impl fmt::Display) -> Fault {
        self.map_message(|m| format!("{context}: {m}"))
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.class, self.message)
    }
}

impl fmt::Debug for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Fault");
        d.field("class", &self.class).field("message", &self.message);
        if let Some(source) = &self.source {
            d.field("source", &source.to_string());
        }
        d.finish()
    }
}

impl PartialEq for Fault {
    /// Faults are equal when their class and message are (sources are not compared).
    fn eq(&self, other: &Fault) -> bool {
        self.class == other.class && self.message == other.message
    }
}

impl Eq for Fault {}

impl StdError for Fault {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_deref().map(|s| s as &(dyn StdError + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_class_decides_the_predicates() {
        let t = Fault::transient("throttled");
        assert!(t.is_transient() && t.is_retryable() && !t.is_refused() && !t.is_deployment());
        let r = Fault::refused("too large");
        assert!(r.is_refused() && !r.is_retryable());
        let d = Fault::deployment("no table");
        assert!(d.is_deployment() && !d.is_retryable());
    }

    #[test]
    fn display_names_the_class_and_the_source_chain_is_kept() {
        let io = std::io::Error::other("connection reset");
        let fault = Fault::transient("BatchWriteItem on table `t`").with_source(io);
        assert_eq!(fault.to_string(), "transient: BatchWriteItem on table `t`");
        let source = StdError::source(&fault).map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("connection reset"));
        let wrapped = fault.context("row call");
        assert_eq!(wrapped.message(), "row call: BatchWriteItem on table `t`");
        assert!(StdError::source(&wrapped).is_some(), "context keeps the source");
    }
}
