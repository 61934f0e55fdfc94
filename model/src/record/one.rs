//! One stream record: its raw JSON read into borrowed serde structs (either
//! spelling: the Lambda event's and GetRecords'), then checked and built
//! into a [`ChangeRecord`] (keys, images, event name, view type, identity,
//! creation time), every problem a [`RecordError`] naming the record.

use serde::Deserialize as DeriveDeserialize;
use serde_json::value::RawValue;

use super::attr::{BorrowedField, ImageField, ImageProblem, KeysField};
use super::document::{clip, json_message};
use super::raw::RawRecord;
use super::scan;
use super::{BorrowedReceived, ChangeRecord, CreationTime, Received, RecordError, RecordId};
use crate::value::Attrs;

mod parts;

#[cfg(feature = "lambda-events")]
pub(super) use parts::StreamParts;
pub(super) use parts::{validate, Parts};

pub(super) fn received(raw: &RawValue, position: RecordId) -> Received<'_> {
    whole(raw.get(), position)
}

/// The record whose whole text is `text`, read with its images.
pub(super) fn whole(text: &str, position: RecordId) -> Received<'_> {
    let (sequence_number, record) = parse_raw(text, position);
    Received::read(super::Raw::Json(text), sequence_number, record)
}

/// A usable sequence number: non-empty decimal digits.
fn is_sequence_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// How errors name a record: sequence number, else `eventID`, else position.
pub(super) fn record_id(sequence_number: Option<&str>, event_id: Option<&str>, position: RecordId) -> RecordId {
    match (sequence_number, event_id) {
        (Some(seq), _) if is_sequence_number(seq) => RecordId::Sequence(seq.to_owned()),
        (_, Some(id)) if !id.is_empty() => RecordId::EventId(clip(id, 64)),
        _ => position,
    }
}

fn parse_raw(text: &str, position: RecordId) -> (Option<String>, Result<ChangeRecord, RecordError>) {
    if !text.starts_with('{') {
        return (None, Err(RecordError::NotAnObject { record: position }));
    }
    if let Some((_, raw)) = scan::record(text).filter(|(own, _)| own.len() == text.len()) {
        return from_raw(raw, position);
    }
    match serde_json::from_str::<RawRecord<'_>>(text) {
        Ok(raw) => from_raw(raw, position),
        Err(e) => {
            let (sequence_number, event_id) = identify(text);
            let record = record_id(sequence_number.as_deref(), event_id.as_deref(), position);
            let reason = match (e.line(), e.column()) {
                (0, _) => json_message(&e),
                (line, column) => format!("{} (line {line}, column {column} of the record)", json_message(&e)),
            };
            let sequence_number = sequence_number.filter(|s| is_sequence_number(s));
            (sequence_number, Err(RecordError::Malformed { record, reason }))
        }
    }
}

/// A record read into its serde struct, checked and built.
pub(super) fn from_raw(raw: RawRecord<'_>, position: RecordId) -> (Option<String>, Result<ChangeRecord, RecordError>) {
    build(raw, position, |field| field.0, false)
}

/// A record glanced at, checked and built as [`from_raw`] does, but
/// without its images: the glance found that each image `raw` has agrees
/// with the keys (see [`glance`](super::glance)).
pub(super) fn from_glanced<'a, I, K: KeysField<J>, J: Attrs + Default>(
    raw: RawRecord<'a, I, K>,
    position: RecordId,
) -> (Option<String>, Result<ChangeRecord<J>, RecordError>) {
    build(raw, position, |_| Ok(J::default()), true)
}

/// A record's parts, each image made by `image`, checked and built.
fn build<'a, I, K: KeysField<J>, J: Attrs>(
    raw: RawRecord<'a, I, K>,
    position: RecordId,
    image: impl Fn(I) -> Result<J, ImageProblem>,
    images_glanced: bool,
) -> (Option<String>, Result<ChangeRecord<J>, RecordError>) {
    let sequence_number = raw
        .dynamodb
        .as_ref()
        .and_then(|d| d.sequence_number.as_deref())
        .filter(|s| is_sequence_number(s))
        .map(str::to_owned);
    (
        sequence_number,
        validate(Parts::of(raw, image, K::into_keys, images_glanced), position),
    )
}

/// A change read from Kinesis ([`scan::kinesis_record`]), given its
/// sequence number and ARN, its creation time read in its table's
/// precision: checked and built as [`build`] does.
pub(super) fn build_unwrapped<'a>(
    raw: RawRecord<'a, BorrowedField<'a>, BorrowedField<'a>>,
    created: Option<CreationTime>,
    position: RecordId,
) -> Result<ChangeRecord<crate::value::borrowed::Image<'a>>, RecordError> {
    let mut parts = Parts::of(raw, |field| field.0, KeysField::into_keys, false);
    if let Some(stream) = &mut parts.stream {
        stream.created = created.map(Ok);
    }
    validate(parts, position)
}

/// Reads the record object that `text` starts with (a batch's record and
/// whatever follows it): the record's text and the record, as
/// [`received`] would make them from that text; `None` when it does not
/// read as a record object (the caller reads it the strict way).
pub(super) fn read_leading(text: &str, position: RecordId) -> Option<(&str, Received<'_>)> {
    let (own, raw) = leading::<ImageField, ImageField>(text)?;
    let (sequence_number, record) = from_raw(raw, position);
    Some((own, Received::read(super::Raw::Json(own), sequence_number, record)))
}

/// [`read_leading`], the record's images borrowed from `text` where they
/// can be (see [`super::read_batch`]).
pub(super) fn read_leading_borrowed(text: &str, position: RecordId) -> Option<(&str, BorrowedReceived<'_>)> {
    let (own, raw) = leading::<BorrowedField<'_>, BorrowedField<'_>>(text)?;
    let (sequence_number, record) = build(raw, position, |field| field.0, false);
    Some((own, Received::read(super::Raw::Json(own), sequence_number, record)))
}

/// The record whose whole text is `raw`, read the strict way (see
/// [`received`]), its images then moved into the borrowed form.
pub(super) fn received_borrowed(raw: &RawValue, position: RecordId) -> BorrowedReceived<'_> {
    received(raw, position).into_borrowed()
}

/// The record object that `text` starts with, its images read as `I`
/// reads them, and its text; `None` when it does not read as a record
/// object. Read by hand where the record has the common shape
/// ([`scan`]), else by serde_json ([`leading_serde`]). Inlined: called out
/// of line, the router's reading is measurably slower (see `docs/PERFORMANCE.md`).
#[inline(always)]
pub(super) fn leading<'a, I, K>(text: &'a str) -> Option<(&'a str, RawRecord<'a, I, K>)>
where
    I: serde::Deserialize<'a> + scan::Scanned<'a>,
    K: serde::Deserialize<'a> + scan::ScannedKeys<'a>,
{
    scan::record(text).or_else(|| leading_serde(text))
}

/// [`leading`], by serde_json alone.
pub(super) fn leading_serde<'a, I, K>(text: &'a str) -> Option<(&'a str, RawRecord<'a, I, K>)>
where
    I: serde::Deserialize<'a>,
    K: serde::Deserialize<'a>,
{
    if !text.starts_with('{') {
        return None;
    }
    let mut records = serde_json::Deserializer::from_str(text).into_iter::<RawRecord<'a, I, K>>();
    let raw = records.next()?.ok()?;
    Some((text.get(..records.byte_offset())?, raw))
}

/// Best effort `(SequenceNumber, eventID)` of a record that did not deserialize.
fn identify(text: &str) -> (Option<String>, Option<String>) {
    #[derive(DeriveDeserialize)]
    struct Ident<'a> {
        #[serde(rename = "eventID", borrow)]
        event_id: Option<&'a RawValue>,
        #[serde(borrow)]
        dynamodb: Option<&'a RawValue>,
    }
    #[derive(DeriveDeserialize)]
    struct IdentStream<'a> {
        #[serde(rename = "SequenceNumber", borrow)]
        sequence_number: Option<&'a RawValue>,
    }
    let as_string = |raw: &RawValue| serde_json::from_str::<String>(raw.get()).ok();
    let Ok(ident) = serde_json::from_str::<Ident<'_>>(text) else {
        return (None, None);
    };
    let sequence_number = ident
        .dynamodb
        .and_then(|d| serde_json::from_str::<IdentStream<'_>>(d.get()).ok())
        .and_then(|d| d.sequence_number)
        .and_then(as_string);
    (sequence_number, ident.event_id.and_then(as_string))
}
