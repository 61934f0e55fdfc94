//! `ChangeRecord` from a record `aws_lambda_events` already deserialized
//! (feature `lambda-events`). The raw parsers are the main path; this one is
//! for code that receives `aws_lambda_events::event::dynamodb::Event`.

use std::borrow::Cow;

use aws_lambda_events::event::dynamodb::EventRecord;

use super::one::{validate, Parts, StreamParts};
use super::{ChangeRecord, CreationTime, RecordError, RecordId};
use std::collections::HashMap;

use crate::value::{Image, Value};

impl TryFrom<EventRecord> for ChangeRecord {
    type Error = RecordError;

    /// Validates like the raw parsers, with these losses, all due to
    /// aws_lambda_events 1.2:
    ///
    /// - `created` keeps whole seconds only: that crate mis-reads a fractional
    ///   `ApproximateCreationDateTime` (it stores the microseconds as
    ///   nanoseconds, after a lossy `f64` step), so the fraction is dropped.
    ///   An absent time (which it reads as the epoch) is `None`.
    /// - An absent or `null` image reads as an empty one, so an empty image
    ///   counts as absent.
    /// - Only the Lambda spelling of `userIdentity` (`type`, `principalId`)
    ///   is seen; the `GetRecords` spelling reads as empty (no TTL expiry).
    /// - Attribute values are whatever serde_dynamo accepted: `N` text is not
    ///   checked to be a number.
    /// - A negative `SizeBytes` becomes `None`.
    fn try_from(record: EventRecord) -> Result<ChangeRecord, RecordError> {
        let change = record.change;
        let image = |item: serde_dynamo::Item| -> Option<Result<Image, _>> {
            let image = Image::from(HashMap::<String, Value>::from(item));
            (!image.is_empty()).then_some(Ok(image))
        };
        let created = change.approximate_creation_date_time;
        let created = (created.timestamp() != 0 || created.timestamp_subsec_nanos() != 0).then(|| {
            Ok(CreationTime {
                seconds: created.timestamp(),
                nanos: 0,
            })
        });
        let (identity_type, identity_principal) = match record.user_identity {
            Some(identity) => (
                Some(Cow::Owned(identity.type_)),
                Some(Cow::Owned(identity.principal_id)),
            ),
            None => (None, None),
        };
        let parts = Parts {
            event_id: Some(record.event_id),
            event_name: Some(Cow::Owned(record.event_name)),
            source_arn: record.event_source_arn.map(Cow::Owned),
            identity_type,
            identity_principal,
            is_batch: false,
            images_glanced: false,
            stream: Some(StreamParts {
                created,
                keys: Some(Ok(Image::from(HashMap::<String, Value>::from(change.keys)))),
                new_image: image(change.new_image),
                old_image: image(change.old_image),
                sequence_number: change.sequence_number,
                size_bytes: u64::try_from(change.size_bytes).ok(),
                view_type: change.stream_view_type.map(|v| Cow::Owned(v.to_string())),
            }),
        };
        validate(parts, RecordId::Unidentified)
    }
}
