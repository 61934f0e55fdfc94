//! A record's parts, from whichever source (the raw serde structs of
//! `super`, a Lambda event's `aws_lambda_events` record), checked and built
//! into a [`ChangeRecord`] by [`validate`]: every problem a [`RecordError`]
//! that names the record.

use std::borrow::Cow;

use crate::record::attr::{bad_key_type, AttrProblem, ImageProblem};
use crate::record::document::clip;
use crate::record::raw::RawRecord;
use crate::record::shared::shared_arn;
use crate::record::time::{parse_creation_time, CreationTimeError};
use crate::record::{ChangeRecord, CreationTime, EventKind, ImagePart, KeyProblem, RecordError, RecordId, ViewType};
use crate::value::{Attrs, Image};

use super::{is_sequence_number, record_id};

/// A record's parts, from whichever source, ready for [`validate`]; its
/// keys and images owned or borrowed (`J`).
pub(in crate::record) struct Parts<'a, J = Image> {
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
pub(in crate::record) struct StreamParts<'a, J = Image> {
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
    pub(super) fn of<I, K>(
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
pub(in crate::record) fn validate<J: Attrs>(
    parts: Parts<'_, J>,
    position: RecordId,
) -> Result<ChangeRecord<J>, RecordError> {
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
    let sequence_number = sequence_number(stream.sequence_number, || {
        record_id(None, event_id.as_deref(), position)
    })?;
    // Named by sequence number from here on, built only for an error.
    let record = || RecordId::Sequence(sequence_number.clone());
    let kind = kind(event_name.as_deref(), &record)?;
    let view_type = view_type(stream.view_type.as_deref(), &record)?;
    let keys = keys(stream.keys, &record)?;
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
            return Err(missing_image(kind, part, view_type, record()));
        }
    }
    // An image the event kind does not have (an INSERT's OldImage, a REMOVE's
    // NewImage) is dropped: `old` and `new` mean "before" and "after".
    // Glanced at: present and agreeing with the keys, but not kept.
    let new = new.filter(|_| needs_new && !images_glanced);
    let old = old.filter(|_| needs_old && !images_glanced);
    for (part, image) in [(ImagePart::NewImage, &new), (ImagePart::OldImage, &old)] {
        if let Some(image) = image {
            agree_with_keys(&keys, image, part, &record)?;
        }
    }
    let created = stream
        .created
        .transpose()
        .map_err(|reason| RecordError::BadCreationTime {
            record: record(),
            reason,
        })?;
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

/// The record's sequence number: present, and decimal digits. `record`
/// names the record otherwise.
fn sequence_number(field: Option<String>, record: impl FnOnce() -> RecordId) -> Result<String, RecordError> {
    match field {
        Some(seq) if is_sequence_number(&seq) => Ok(seq),
        Some(seq) if !seq.is_empty() => Err(RecordError::BadSequenceNumber { record: record() }),
        _ => Err(RecordError::MissingSequenceNumber { record: record() }),
    }
}

/// `eventName`: INSERT, MODIFY or REMOVE.
fn kind(event_name: Option<&str>, record: &dyn Fn() -> RecordId) -> Result<EventKind, RecordError> {
    match event_name {
        None => Err(RecordError::MissingEventName { record: record() }),
        Some("INSERT") => Ok(EventKind::Insert),
        Some("MODIFY") => Ok(EventKind::Modify),
        Some("REMOVE") => Ok(EventKind::Remove),
        Some(other) => Err(RecordError::UnknownEventName {
            record: record(),
            name: clip(other, 40),
        }),
    }
}

/// `StreamViewType`, when the record has one.
fn view_type(field: Option<&str>, record: &dyn Fn() -> RecordId) -> Result<Option<ViewType>, RecordError> {
    match field {
        None => Ok(None),
        Some("KEYS_ONLY") => Ok(Some(ViewType::KeysOnly)),
        Some("NEW_IMAGE") => Ok(Some(ViewType::NewImage)),
        Some("OLD_IMAGE") => Ok(Some(ViewType::OldImage)),
        Some("NEW_AND_OLD_IMAGES") => Ok(Some(ViewType::NewAndOldImages)),
        Some(other) => Err(RecordError::UnknownViewType {
            record: record(),
            view_type: clip(other, 40),
        }),
    }
}

/// `Keys`: present, not empty, each of a key type (S, N or B).
fn keys<J: Attrs>(field: Option<Result<J, ImageProblem>>, record: &dyn Fn() -> RecordId) -> Result<J, RecordError> {
    let keys = match image(field, ImagePart::Keys, record)? {
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
    Ok(keys)
}

/// A `kind` record lacks its `part` image: its view type leaves the image
/// out, or the image is missing where the view type (or none) has it.
fn missing_image(kind: EventKind, part: ImagePart, view_type: Option<ViewType>, record: RecordId) -> RecordError {
    match view_type {
        Some(view_type @ (ViewType::KeysOnly | ViewType::NewImage | ViewType::OldImage)) => {
            RecordError::ViewTypeLacksImage {
                record,
                kind,
                part,
                view_type,
            }
        }
        Some(ViewType::NewAndOldImages) | None => RecordError::MissingImage { record, kind, part },
    }
}

/// Every key attribute is in `image` (the record's `part`), with the same value.
fn agree_with_keys<J: Attrs>(
    keys: &J,
    image: &J,
    part: ImagePart,
    record: &dyn Fn() -> RecordId,
) -> Result<(), RecordError> {
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
    Ok(())
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
