//! Why a record can never succeed, typed as it was found: the cause goes
//! with the record from where a consumer finds it, through settlement, to
//! the log line and the quarantine entry (whose `reason` is its text).

use std::fmt;

use crate::event::{EventError, Oversized};
use crate::fault::Fault;
use crate::plan::PlanError;
use crate::record::{Invalid, RecordError};

/// One reason a record is poison.
#[derive(Debug, Clone, PartialEq)]
pub enum Cause {
    /// The record cannot be read (its text names the record).
    Unreadable(RecordError),
    /// The router cannot tell its table or its events (its text names the record).
    Unroutable(EventError),
    /// It is not what DynamoDB would stream.
    Invalid(Invalid),
    /// The planner cannot plan it (the config and the item disagree).
    Unplannable(PlanError),
    /// One of its events is over the PutEvents budget, even without its images.
    Oversized(Oversized),
    /// A request for it was refused for good (by DynamoDB or EventBridge):
    /// the fault says which request, why, and keeps the SDK's error.
    Refused(Fault),
}

impl Cause {
    /// A word for the kind of cause, for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Cause::Unreadable(_) => "unreadable",
            Cause::Unroutable(_) => "unroutable",
            Cause::Invalid(_) => "invalid",
            Cause::Unplannable(_) => "unplannable",
            Cause::Oversized(_) => "oversized",
            Cause::Refused(_) => "refused",
        }
    }

    /// Whether the cause's own text names the record.
    fn names_the_record(&self) -> bool {
        matches!(self, Cause::Unreadable(_) | Cause::Unroutable(_))
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::Unreadable(e) => e.fmt(f),
            Cause::Unroutable(e) => e.fmt(f),
            Cause::Invalid(e) => e.fmt(f),
            Cause::Unplannable(e) => e.fmt(f),
            Cause::Oversized(e) => e.fmt(f),
            Cause::Refused(fault) => f.write_str(fault.message()),
        }
    }
}

/// Why a record is poison: every cause found, in order, for the record
/// with `sequence_number`. Its text is `record SEQ: CAUSE; CAUSE…`, or the
/// cause alone where the cause names the record itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Poison {
    sequence_number: Option<String>,
    causes: Vec<Cause>,
}

impl Poison {
    /// A record poison for `cause`, named by `sequence_number` when it has one.
    pub fn new(sequence_number: Option<&str>, cause: Cause) -> Poison {
        Poison {
            sequence_number: sequence_number.map(str::to_owned),
            causes: vec![cause],
        }
    }

    /// Adds another cause found for the same record.
    pub fn push(&mut self, cause: Cause) {
        self.causes.push(cause);
    }

    /// Adds `cause` to the record's poison in `slot`, or makes it poison
    /// for `cause` (named by `sequence_number`) when it was not yet.
    pub fn add(slot: &mut Option<Poison>, sequence_number: Option<&str>, cause: Cause) {
        match slot {
            Some(poison) => poison.push(cause),
            None => *slot = Some(Poison::new(sequence_number, cause)),
        }
    }

    /// The causes, in the order they were found.
    pub fn causes(&self) -> &[Cause] {
        &self.causes
    }

    /// The first cause's kind ([`Cause::kind`]).
    pub fn kind(&self) -> &'static str {
        self.causes.first().map_or("unknown", Cause::kind)
    }
}

impl fmt::Display for Poison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut causes = self.causes.iter();
        match (&self.sequence_number, self.causes.first()) {
            (Some(seq), Some(first)) if !first.names_the_record() => write!(f, "record {seq}: ")?,
            _ => {}
        }
        if let Some(first) = causes.next() {
            first.fmt(f)?;
        }
        for cause in causes {
            write!(f, "; {cause}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Poison {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RecordId;

    #[test]
    fn the_text_names_the_record_once_then_every_cause() {
        let mut poison = Poison::new(
            Some("7"),
            Cause::Invalid(Invalid::EmptySet {
                path: "tags".to_owned(),
            }),
        );
        assert_eq!(poison.to_string(), "record 7: `tags`: an empty set");
        poison.push(Cause::Refused(Fault::refused("index `i`: row put refused: too large")));
        assert_eq!(
            poison.to_string(),
            "record 7: `tags`: an empty set; index `i`: row put refused: too large"
        );
        assert_eq!(poison.kind(), "invalid");
        assert_eq!(poison.causes().len(), 2);
    }

    #[test]
    fn a_cause_that_names_its_record_is_not_prefixed() {
        let error = RecordError::NoKeys {
            record: RecordId::Sequence("9".to_owned()),
        };
        let poison = Poison::new(Some("9"), Cause::Unreadable(error.clone()));
        assert_eq!(poison.to_string(), error.to_string());
        assert_eq!(poison.kind(), "unreadable");
    }
}
