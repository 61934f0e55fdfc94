//! One stream record: its raw JSON read into borrowed serde structs (either
//! spelling: the Lambda event's and GetRecords'), then checked and built
//! into a [`ChangeRecord`] (keys, images, event name, view type, identity,
//! creation time), every problem a [`RecordError`] naming the record.

use std::borrow::Cow;

use serde::Deserialize as DeriveDeserialize;
use serde_json::value::RawValue;

use super::attr::{bad_key_type, AttrProblem, BorrowedField, ImageField, ImageProblem, KeysField};
use super::document::{clip, json_message};
use super::raw::RawRecord;
use super::scan;
use super::shared::shared_arn;
use super::time::{parse_creation_time, CreationTimeError};
use super::{
    BorrowedReceived, ChangeRecord, CreationTime, EventKind, ImagePart, KeyProblem, Received, RecordError, RecordId,
    ViewType,
};
use crate::value::{Attrs, Image};

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

/// A record's parts, from whichever source, ready for [`validate`]; its
/// keys and images owned or borrowed (`J`).
pub(super) struct Parts<'a, J = Image> {
    pub event_id: Option<String>,
    pub event_name: Option<Cow<'a, str>>,
    pub source_arn: Option<Cow<'a, str>>,
    pub identity_type: Option<Cow<'a, str>>,
    pub identity_principal: Option<Cow<'a, str>>,
    /// The object has `Records` (a whole batch where a record was expected).
    pub is_batch: bool,
    /// The images were glanced at: each present one agrees with the keys
    /// and is not kept (the record is built without images).
    pub images_glanced: bool,
    pub stream: Option<StreamParts<'a, J>>,
}

/// The `dynamodb` part's parts.
pub(super) struct StreamParts<'a, J = Image> {
    pub created: Option<Result<CreationTime, CreationTimeError>>,
    pub keys: Option<Result<J, ImageProblem>>,
    pub new_image: Option<Result<J, ImageProblem>>,
    pub old_image: Option<Result<J, ImageProblem>>,
    pub sequence_number: Option<String>,
    pub size_bytes: Option<u64>,
    pub view_type: Option<Cow<'a, str>>,
}

impl<'a, J> Parts<'a, J> {
    /// The parts of `raw`, each image made by `image`.
    fn of<I, K>(
        raw: RawRecord<'a, I, K>,
        image: impl Fn(I) -> Result<J, ImageProblem>,
        keys: impl FnOnce(K) -> Result<J, ImageProblem>,
        images_glanced: bool,
    ) -> Parts<'a, J> {
        let (identity_type, identity_principal) = match raw.user_identity {
            Some(identity) => (identity.kind.map(|t| t.0), identity.principal.map(|t| t.0)),
            None => (None, None),
        };
        Parts {
            event_id: raw.event_id,
            event_name: raw.event_name.map(|t| t.0),
            source_arn: raw.event_source_arn.map(|t| t.0),
            identity_type,
            identity_principal,
            is_batch: raw.records.is_some(),
            images_glanced,
            stream: raw.dynamodb.map(|d| StreamParts {
                created: d.created.map(|raw| parse_creation_time(raw.get())),
                keys: d.keys.map(keys),
                new_image: d.new_image.map(&image),
                old_image: d.old_image.map(&image),
                sequence_number: d.sequence_number,
                size_bytes: d.size_bytes,
                view_type: d.view_type.map(|t| t.0),
            }),
        }
    }
}

/// Checks a record's parts and builds the [`ChangeRecord`]. `position` names
/// the record in errors when it has neither sequence number nor `eventID`.
pub(super) fn validate<J: Attrs>(parts: Parts<'_, J>, position: RecordId) -> Result<ChangeRecord<J>, RecordError> {
    let Parts {
        event_id,
        event_name,
        source_arn,
        identity_type,
        identity_principal,
        is_batch,
        images_glanced,
        stream,
    } = parts;
    let Some(stream) = stream else {
        let record = record_id(None, event_id.as_deref(), position);
        return Err(if is_batch {
            RecordError::Malformed {
                record,
                reason: "a whole batch (an object with `Records`) where one record was expected".to_owned(),
            }
        } else {
            RecordError::NoDynamodb { record }
        });
    };
    let sequence_number = match stream.sequence_number {
        Some(seq) if is_sequence_number(&seq) => seq,
        Some(seq) if !seq.is_empty() => {
            return Err(RecordError::BadSequenceNumber {
                record: record_id(None, event_id.as_deref(), position),
            })
        }
        _ => {
            return Err(RecordError::MissingSequenceNumber {
                record: record_id(None, event_id.as_deref(), position),
            })
        }
    };
    // Named by sequence number from here on, built only for an error.
    let record = || RecordId::Sequence(sequence_number.clone());
    let kind = match event_name.as_deref() {
        None => return Err(RecordError::MissingEventName { record: record() }),
        Some("INSERT") => EventKind::Insert,
        Some("MODIFY") => EventKind::Modify,
        Some("REMOVE") => EventKind::Remove,
        Some(other) => {
            return Err(RecordError::UnknownEventName {
                record: record(),
                name: clip(other, 40),
            })
        }
    };
    let view_type = match stream.view_type.as_deref() {
        None => None,
        Some("KEYS_ONLY") => Some(ViewType::KeysOnly),
        Some("NEW_IMAGE") => Some(ViewType::NewImage),
        Some("OLD_IMAGE") => Some(ViewType::OldImage),
        Some("NEW_AND_OLD_IMAGES") => Some(ViewType::NewAndOldImages),
        Some(other) => {
            return Err(RecordError::UnknownViewType {
                record: record(),
                view_type: clip(other, 40),
            })
        }
    };

    let keys = match image(stream.keys, ImagePart::Keys, &record)? {
        Some(keys) if !keys.is_empty() => keys,
        _ => return Err(RecordError::NoKeys { record: record() }),
    };
    if let Some((name, tag)) = keys
        .iter()
        .find_map(|(name, value)| bad_key_type(value).map(|tag| (name, tag)))
    {
        return Err(RecordError::BadAttribute {
            part: ImagePart::Keys,
            attribute: clip(name, 100),
            reason: AttrProblem::KeyType { tag }.to_string(),
            record: record(),
        });
    }
    let new = image(stream.new_image, ImagePart::NewImage, &record)?;
    let old = image(stream.old_image, ImagePart::OldImage, &record)?;

    let (needs_new, needs_old) = match kind {
        EventKind::Insert => (true, false),
        EventKind::Modify => (true, true),
        EventKind::Remove => (false, true),
    };
    for (needed, present, part) in [
        (needs_new, new.is_some(), ImagePart::NewImage),
        (needs_old, old.is_some(), ImagePart::OldImage),
    ] {
        if needed && !present {
            return Err(match view_type {
                Some(view_type @ (ViewType::KeysOnly | ViewType::NewImage | ViewType::OldImage)) => {
                    RecordError::ViewTypeLacksImage {
                        record: record(),
                        kind,
                        part,
                        view_type,
                    }
                }
                Some(ViewType::NewAndOldImages) | None => RecordError::MissingImage {
                    record: record(),
                    kind,
                    part,
                },
            });
        }
    }
    // An image the event kind does not have (an INSERT's OldImage, a REMOVE's
    // NewImage) is dropped: `old` and `new` mean "before" and "after".
    // Glanced at: present and agreeing with the keys, but not kept.
    let new = new.filter(|_| needs_new && !images_glanced);
    let old = old.filter(|_| needs_old && !images_glanced);
    for (part, image) in [(ImagePart::NewImage, &new), (ImagePart::OldImage, &old)] {
        let Some(image) = image else { continue };
        for (name, value) in keys.iter() {
            let problem = match image.get(name) {
                None => KeyProblem::Missing,
                Some(other) if other != value => KeyProblem::Different,
                Some(_) => continue,
            };
            return Err(RecordError::KeyMismatch {
                record: record(),
                part,
                attribute: clip(name, 100),
                problem,
            });
        }
    }

    let created = match stream.created {
        None => None,
        Some(Ok(created)) => Some(created),
        Some(Err(reason)) => {
            return Err(RecordError::BadCreationTime {
                record: record(),
                reason,
            })
        }
    };
    let ttl_expiry = identity_type.as_deref() == Some(crate::ttl::IDENTITY_TYPE)
        && identity_principal.as_deref() == Some(crate::ttl::PRINCIPAL);
    let (source_arn, table) = match source_arn {
        Some(arn) => {
            let (arn, table) = shared_arn(&arn);
            (Some(arn), table)
        }
        None => (None, None),
    };

    Ok(ChangeRecord {
        event_id,
        kind,
        table,
        source_arn,
        keys,
        old,
        new,
        sequence_number,
        created,
        size_bytes: stream.size_bytes,
        view_type,
        ttl_expiry,
    })
}

fn image<J>(
    field: Option<Result<J, ImageProblem>>,
    part: ImagePart,
    record: &dyn Fn() -> RecordId,
) -> Result<Option<J>, RecordError> {
    match field {
        None => Ok(None),
        Some(Ok(image)) => Ok(Some(image)),
        Some(Err(ImageProblem::NotAnObject)) => Err(RecordError::NotAnImage { record: record(), part }),
        Some(Err(ImageProblem::Attribute { name, problem })) => Err(RecordError::BadAttribute {
            record: record(),
            part,
            attribute: clip(&name, 100),
            reason: problem.to_string(),
        }),
    }
}
