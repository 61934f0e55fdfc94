//! What can be wrong with stream input: a whole payload that is not one
//! of the accepted shapes ([`ParseError`]), or one record that is unusable
//! ([`RecordError`], naming the record by [`RecordId`]).

use std::fmt;

use super::{CreationTimeError, EventKind, ViewType};

/// Which part of `dynamodb` an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImagePart {
    Keys,
    NewImage,
    OldImage,
}

impl ImagePart {
    /// The stream's spelling: `Keys`, `NewImage`, `OldImage`.
    pub fn as_str(self) -> &'static str {
        match self {
            ImagePart::Keys => "Keys",
            ImagePart::NewImage => "NewImage",
            ImagePart::OldImage => "OldImage",
        }
    }
}

impl fmt::Display for ImagePart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How an image disagrees with `Keys`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyProblem {
    /// The image lacks the key attribute.
    Missing,
    /// The image has the key attribute with another value (or type).
    Different,
}

impl fmt::Display for KeyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyProblem::Missing => "missing",
            KeyProblem::Different => "different",
        })
    }
}

/// How an error names its record: by sequence number when it has one, else by
/// `eventID`, else by position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordId {
    /// `dynamodb.SequenceNumber`.
    Sequence(String),
    /// `eventID`, for a record without a usable sequence number.
    EventId(String),
    /// Position in the batch's `Records` array, from 0.
    Index(usize),
    /// Line of a JSON Lines file (or of the line a lone record starts on), from 1.
    Line(usize),
    /// A record given on its own ([`super::parse_record`]), without either.
    Unidentified,
}

impl fmt::Display for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordId::Sequence(seq) => write!(f, "record {seq}"),
            RecordId::EventId(id) => write!(f, "record with eventID {id:?} (no usable SequenceNumber)"),
            RecordId::Index(index) => write!(f, "record Records[{index}] (no SequenceNumber or eventID)"),
            RecordId::Line(line) => write!(f, "record on line {line} (no SequenceNumber or eventID)"),
            RecordId::Unidentified => f.write_str("record without SequenceNumber or eventID"),
        }
    }
}

/// Why one stream record is unusable. Every message names the record (see
/// [`RecordId`]) and never carries item contents: at most an attribute name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The record is valid JSON but not an object.
    #[error("{record}: not a JSON object")]
    NotAnObject { record: RecordId },
    /// A field has the wrong JSON type (or is duplicated, or nests too deep).
    #[error("{record}: malformed record: {reason}")]
    Malformed { record: RecordId, reason: String },
    #[error("{record}: no `dynamodb` part")]
    NoDynamodb { record: RecordId },
    #[error("{record}: no `dynamodb.SequenceNumber`")]
    MissingSequenceNumber { record: RecordId },
    #[error("{record}: `dynamodb.SequenceNumber` is not a string of decimal digits")]
    BadSequenceNumber { record: RecordId },
    #[error("{record}: no `eventName`")]
    MissingEventName { record: RecordId },
    /// `name` is clipped to a few dozen characters.
    #[error("{record}: unknown eventName {name:?} (expected INSERT, MODIFY or REMOVE)")]
    UnknownEventName { record: RecordId, name: String },
    /// `view_type` is clipped to a few dozen characters.
    #[error(
        "{record}: unknown StreamViewType {view_type:?} \
         (expected KEYS_ONLY, NEW_IMAGE, OLD_IMAGE or NEW_AND_OLD_IMAGES)"
    )]
    UnknownViewType { record: RecordId, view_type: String },
    /// `Keys` is absent, null or `{}`.
    #[error("{record}: no `Keys` (or an empty one)")]
    NoKeys { record: RecordId },
    /// `Keys`, `NewImage` or `OldImage` is not a JSON object.
    #[error("{record}: `{part}` is not a JSON object")]
    NotAnImage { record: RecordId, part: ImagePart },
    /// One attribute value is not valid DynamoDB JSON.
    #[error("{record}: attribute `{attribute}` of `{part}` {reason}")]
    BadAttribute {
        record: RecordId,
        part: ImagePart,
        attribute: String,
        reason: String,
    },
    /// The event needs an image the record does not carry, and the record does
    /// not say its stream's view type rules that image out.
    #[error("{record}: {kind} record has no `{part}`")]
    MissingImage {
        record: RecordId,
        kind: EventKind,
        part: ImagePart,
    },
    /// The event needs an image that the stream's view type never provides.
    #[error(
        "{record}: {kind} record has no `{part}` because the stream view type is {view_type}; \
         the stream view type must be NEW_AND_OLD_IMAGES"
    )]
    ViewTypeLacksImage {
        record: RecordId,
        kind: EventKind,
        part: ImagePart,
        view_type: ViewType,
    },
    /// A key attribute of `Keys` is missing from an image or differs there.
    #[error("{record}: key attribute `{attribute}` is {problem} in `{part}`")]
    KeyMismatch {
        record: RecordId,
        part: ImagePart,
        attribute: String,
        problem: KeyProblem,
    },
    /// A Kinesis record that cannot be unwrapped into a change (see
    /// [`super::kinesis`]): `reason` says why.
    #[error("{record}: {reason}")]
    Kinesis { record: RecordId, reason: String },
    /// `ApproximateCreationDateTime` is not epoch seconds (or an RFC 3339 time).
    #[error("{record}: bad ApproximateCreationDateTime: {reason}")]
    BadCreationTime {
        record: RecordId,
        reason: CreationTimeError,
    },
}

impl RecordError {
    /// The record the error is about.
    pub fn record(&self) -> &RecordId {
        match self {
            RecordError::NotAnObject { record }
            | RecordError::Malformed { record, .. }
            | RecordError::NoDynamodb { record }
            | RecordError::MissingSequenceNumber { record }
            | RecordError::BadSequenceNumber { record }
            | RecordError::MissingEventName { record }
            | RecordError::UnknownEventName { record, .. }
            | RecordError::UnknownViewType { record, .. }
            | RecordError::NoKeys { record }
            | RecordError::NotAnImage { record, .. }
            | RecordError::BadAttribute { record, .. }
            | RecordError::MissingImage { record, .. }
            | RecordError::ViewTypeLacksImage { record, .. }
            | RecordError::KeyMismatch { record, .. }
            | RecordError::Kinesis { record, .. }
            | RecordError::BadCreationTime { record, .. } => record,
        }
    }
}

/// The input as a whole is unusable: not UTF-8, not JSON, or not one of the
/// accepted shapes. `line` and `column` count from 1 (column in bytes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}
