//! One internal change record, normalised from every shape AWS delivers a
//! stream record in: the Lambda DynamoDB event, a DynamoDB Streams
//! `GetRecords` response, and JSON Lines with one record per line.
//!
//! # Reading
//!
//! One way in per use:
//!
//! - [`read_batch`]: a Lambda event or a `GetRecords` response, both
//!   `{"Records": [...], ...}`, a record at a time in one pass over the
//!   payload ([`parse_batch`] collects it);
//! - [`read_line`]: one line of JSON Lines, for readers that stream a file;
//! - [`parse_any`]: a file of any accepted shape (a batch, JSON Lines, or
//!   one record object), detected;
//! - [`parse_record`]: one record's JSON (as the quarantine keeps it).
//!
//! The first two take the [`Mode`] (`Whole`: every record's images built;
//! `Glance`: checked as they go by, built only where needed: the router's
//! reading) and build keys and images as the [`ImageForm`] asked for:
//! owned ([`Image`]), or borrowed from the payload ([`borrowed::Image`]).
//! Every reading falls back alike: the hand scanner to serde_json, a glance
//! to a whole reading, the one-pass walk to the strict reading that says
//! what is wrong with a payload.
//!
//! Input that is not JSON at all (or not one of these shapes) is a
//! [`ParseError`] with a line and column. Otherwise every record comes back
//! as a [`Received`], with its raw JSON text (for the quarantine), its
//! sequence number when it has a usable one (for `batchItemFailures`) and
//! either the [`ChangeRecord`] or the [`RecordError`] that says why it is
//! unusable. One bad record never stops the others from parsing.
//!
//! Parsing is two-step: the document into borrowed raw records, then each raw
//! record into private borrowed serde structs, then validation. Nothing goes
//! through `serde_json::Value` or `f64`: numbers stay their exact decimal text
//! and `ApproximateCreationDateTime` is read from its digits.
//!
//! Error messages never carry item contents: they name the record (by
//! sequence number, else `eventID`, else position), the image and the
//! attribute name, and say what is wrong, never what the value was.
//!
//! Normalisation: `table` comes from `eventSourceARN` (so `GetRecords` and
//! most JSON Lines records have none); an image the event kind does not have
//! (an INSERT's `OldImage`, a REMOVE's `NewImage`) is dropped; every image
//! must agree with `Keys` on the key attributes; `N`/`NS` text must be a
//! decimal number (it is kept as sent). `ApproximateCreationDateTime` may be
//! epoch seconds as a number (integer, fraction or exponent form) or a string,
//! or an RFC 3339 string with an offset (what the AWS CLI v2 prints); digits
//! past nanoseconds are truncated.
//!
//! With the `lambda-events` feature, a record already deserialized by
//! `aws_lambda_events` converts with `ChangeRecord::try_from`. That path is
//! secondary and lossy: aws_lambda_events 1.2.1 mis-reads a fractional
//! `ApproximateCreationDateTime` (microseconds stored as nanoseconds, after an
//! `f64` step), so the conversion keeps whole seconds only; it also cannot
//! tell an absent image from an empty one. The raw parsers are the main path.

mod ahead;
mod attr;
mod document;
mod error;
mod failed;
mod glance;
mod invalid;
pub mod kinesis;
#[cfg(feature = "lambda-events")]
mod lambda;
mod one;
mod parse;
mod raw;
mod scan;
mod shared;
#[cfg(test)]
mod tests;
mod time;
mod walk;

use std::fmt;

use crate::value::{borrowed, Attrs, Image};

pub use error::{ImagePart, KeyProblem, ParseError, RecordError, RecordId};
pub use failed::{
    failed_batch_key, is_failed_batch, read_failed_batch, FailedBatch, FailedBatchError, FAILED_BATCH_PREFIX,
};
pub use invalid::Invalid;
#[cfg(test)]
use parse::parse_json_lines;
pub use parse::{parse_any, parse_batch, parse_record, read_line};
pub use shared::{table_from_arn, SharedText};
pub use time::{parse_creation_time, CreationTimeError};
pub use walk::{read_batch, BatchReader, Form, ImageForm, Mode};

/// What happened to the item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    Insert,
    Modify,
    Remove,
}

impl EventKind {
    /// The stream's spelling: `INSERT`, `MODIFY`, `REMOVE`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Insert => "INSERT",
            EventKind::Modify => "MODIFY",
            EventKind::Remove => "REMOVE",
        }
    }
}

/// The stream's view type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewType {
    KeysOnly,
    NewImage,
    OldImage,
    NewAndOldImages,
}

/// `ApproximateCreationDateTime`, exact: whole epoch seconds plus the fraction
/// when the source had one (GetRecords does; the Lambda event does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CreationTime {
    pub seconds: i64,
    pub nanos: u32,
}

/// One change to one item, as the planner and the router see it. Its
/// images are owned ([`Image`]), or borrowed from the payload it was read
/// from ([`borrowed::Image`], see
/// [`read_batch`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeRecord<I = Image> {
    /// `eventID`, when the source carried one.
    pub event_id: Option<String>,
    pub kind: EventKind,
    /// The source table's name, from `eventSourceARN` when present
    /// (`arn:aws:dynamodb:REGION:ACCOUNT:table/NAME/stream/LABEL`).
    /// Shared: a batch's records come from one stream.
    pub table: Option<SharedText>,
    /// `eventSourceARN` as delivered (the Lambda shape only). Shared, as
    /// `table` is.
    pub source_arn: Option<SharedText>,
    /// The item's primary key (`dynamodb.Keys`); never empty.
    pub keys: I,
    /// `OldImage`: present for MODIFY and REMOVE under NEW_AND_OLD_IMAGES
    /// (but in a record glanced at: see [`Received::has_whole_images`]).
    pub old: Option<I>,
    /// `NewImage`: present for INSERT and MODIFY under NEW_AND_OLD_IMAGES
    /// (but in a record glanced at).
    pub new: Option<I>,
    /// `SequenceNumber`: a decimal string, increasing within a shard.
    pub sequence_number: String,
    pub created: Option<CreationTime>,
    pub size_bytes: Option<u64>,
    pub view_type: Option<ViewType>,
    /// True when `userIdentity` says the TTL service deleted the item
    /// (type `Service`, principal `dynamodb.amazonaws.com`, either key spelling).
    pub ttl_expiry: bool,
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ViewType {
    /// The stream's spelling: `KEYS_ONLY`, `NEW_IMAGE`, `OLD_IMAGE`,
    /// `NEW_AND_OLD_IMAGES`.
    pub fn as_str(self) -> &'static str {
        match self {
            ViewType::KeysOnly => "KEYS_ONLY",
            ViewType::NewImage => "NEW_IMAGE",
            ViewType::OldImage => "OLD_IMAGE",
            ViewType::NewAndOldImages => "NEW_AND_OLD_IMAGES",
        }
    }
}

impl fmt::Display for ViewType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One stream record as received: where its JSON is, and what it parsed to.
///
/// A received record borrows its JSON text from the payload it was parsed
/// from (`'a`): nothing of the text is copied unless the record is
/// quarantined.
#[derive(Debug, Clone)]
pub struct Received<'a, I = Image> {
    /// The record's JSON, for the quarantine.
    pub raw: Raw<'a>,
    /// `dynamodb.SequenceNumber` when the record has a usable one (a non-empty
    /// string of decimal digits), even when the record itself is unusable: it
    /// is what `batchItemFailures` reports.
    pub sequence_number: Option<String>,
    pub record: Result<ChangeRecord<I>, RecordError>,
    /// [`crate::validate::poison`]'s answer, with the address of the
    /// table config it was asked for, kept once asked: both consumers ask
    /// it of the same record, and replay's reader asks it ahead of them, on
    /// its own thread.
    pub(crate) verdict: std::sync::OnceLock<(usize, Option<Invalid>)>,
    /// The record's plan and events, when worked out ahead of the
    /// consumers (see [`crate::Planner::plan_ahead`]).
    pub(crate) ahead: ahead::Ahead,
    /// False when the record was glanced at ([`Mode::Glance`]): its images
    /// then are not kept (`old` and `new` are `None`).
    whole_images: bool,
}

/// A record read with its images borrowed from the payload
/// ([`read_batch`] into [`borrowed::Image`]).
pub type BorrowedReceived<'a> = Received<'a, borrowed::Image<'a>>;

impl<I> ChangeRecord<I> {
    /// The record, its keys and images made into another form by `form`.
    pub fn map_images<J>(self, form: impl Fn(I) -> J) -> ChangeRecord<J> {
        ChangeRecord {
            event_id: self.event_id,
            kind: self.kind,
            table: self.table,
            source_arn: self.source_arn,
            keys: form(self.keys),
            old: self.old.map(&form),
            new: self.new.map(&form),
            sequence_number: self.sequence_number,
            created: self.created,
            size_bytes: self.size_bytes,
            view_type: self.view_type,
            ttl_expiry: self.ttl_expiry,
        }
    }
}

/// Where a received record's JSON text is.
#[derive(Debug, Clone, Copy)]
pub enum Raw<'a> {
    /// Exactly as delivered, borrowed from the payload (a JSON object,
    /// or, for an element of `Records` that is not one, that JSON value).
    Json(&'a str),
    /// The record was made in process, never as JSON (the pipeline's own
    /// writes that replay feeds back, as DynamoDB's stream would): its JSON
    /// is rendered from the record, in the Lambda shape, only if needed.
    Typed,
    /// A change as DynamoDB writes it to Kinesis, read straight into the
    /// record (see [`kinesis::read_change_line`]): its text as delivered,
    /// which no consumer reads as a record. The record's JSON is rendered
    /// in the Lambda shape, as [`Raw::Typed`]'s is, when it is asked for.
    Kinesis(&'a str),
}

impl<'a, I> Received<'a, I> {
    /// A record as read, with nothing asked of it yet.
    fn read(raw: Raw<'a>, sequence_number: Option<String>, record: Result<ChangeRecord<I>, RecordError>) -> Self {
        Received {
            raw,
            sequence_number,
            record,
            verdict: std::sync::OnceLock::new(),
            ahead: ahead::Ahead::default(),
            whole_images: true,
        }
    }
}

impl<'a, I> Received<'a, I> {
    /// A record glanced at, read again from its text, whole; `None` for
    /// any other (read whole already, made in process, or unusable: see
    /// [`Received::whole`]).
    pub fn read_whole(&self) -> Option<Received<'a>> {
        match (self.raw, &self.record) {
            // A usable record is named by its sequence number.
            (Raw::Json(text), Ok(record)) if !self.whole_images => {
                Some(one::whole(text, RecordId::Sequence(record.sequence_number.clone())))
            }
            _ => None,
        }
    }
}

impl<'a> Received<'a> {
    /// The record just read, its images moved into the borrowed form (no
    /// string is copied).
    pub fn into_borrowed(self) -> BorrowedReceived<'a> {
        Received {
            raw: self.raw,
            sequence_number: self.sequence_number,
            record: self.record.map(|record| record.map_images(borrowed::Image::from)),
            verdict: std::sync::OnceLock::new(),
            ahead: ahead::Ahead::default(),
            whole_images: self.whole_images,
        }
    }

    /// A record glanced at, read again from its text, whole; any other is
    /// itself (read whole already, made in process, or unusable: the
    /// glance finds what is wrong with a record as the whole reading does).
    pub fn whole(&self) -> std::borrow::Cow<'_, Received<'a>> {
        match self.read_whole() {
            Some(whole) => std::borrow::Cow::Owned(whole),
            None => std::borrow::Cow::Borrowed(self),
        }
    }
}

impl Received<'_> {
    /// A record made in process (see [`Raw::Typed`]).
    pub fn typed(record: ChangeRecord) -> Received<'static> {
        Received::read(Raw::Typed, Some(record.sequence_number.clone()), Ok(record))
    }
}

impl<I: Attrs> Received<'_, I> {
    /// Whether the record's images are whole: false for a record glanced
    /// at ([`Mode::Glance`]), which comes without its images.
    pub fn has_whole_images(&self) -> bool {
        self.whole_images
    }

    /// A handle on the record's JSON text that lives as long as `self`.
    pub fn raw_json(&self) -> RawJson<'_> {
        match (self.raw, &self.record) {
            (Raw::Json(raw), _) => RawJson::Text(raw),
            (Raw::Typed | Raw::Kinesis(_), Ok(record)) => RawJson::Record(record),
            (Raw::Kinesis(raw), Err(_)) => RawJson::Text(raw),
            (Raw::Typed, Err(_)) => RawJson::Missing,
        }
    }
}

/// A record's JSON text, made only when it is asked for (see
/// [`Received::raw_json`]).
#[derive(Debug, Clone, Copy)]
pub enum RawJson<'a> {
    /// The text as delivered (JSON).
    Text(&'a str),
    /// A record made in process: rendered in the Lambda shape
    /// ([`crate::delivery::lambda_record`]).
    Record(&'a dyn Typed),
    /// Neither (a typed record that failed to be one; never made by this crate).
    Missing,
}

impl<'a> RawJson<'a> {
    /// The JSON text.
    pub fn text(&self) -> std::borrow::Cow<'a, str> {
        match *self {
            RawJson::Text(raw) => std::borrow::Cow::Borrowed(raw),
            RawJson::Record(record) => std::borrow::Cow::Owned(record.lambda_json()),
            RawJson::Missing => std::borrow::Cow::Borrowed("{}"),
        }
    }
}

/// A record made in process, as [`RawJson::Record`] holds it: its JSON is
/// rendered only when asked for (`crate::delivery` renders a [`ChangeRecord`]).
pub trait Typed: fmt::Debug + Sync {
    /// The record in the Lambda shape ([`crate::delivery::lambda_record`]).
    fn lambda_json(&self) -> String;
}
