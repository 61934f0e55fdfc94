//! A record in the shape AWS sends it, read by hand: the fast path of both
//! readings (the glance's and the whole one).
//!
//! serde_json reads a record's text token by token through visitors, and
//! most of the consumers' reading time went there. [`record`] reads the
//! same record in one loop over its bytes and makes exactly what
//! serde_json makes of it ([`leading_serde`](super::one::leading_serde)), its images
//! glanced at or read whole, or nothing: it knows only the common case,
//! and anything else makes it give up, so that serde_json reads the record
//! as before and says what is wrong, if anything. It gives up on:
//!
//! - a string with an escape (`\`) or a control character in it;
//! - a B or BS value, a value the glance would be unsure of (when
//!   glancing), a key attribute that is not an S or an N, a name repeated
//!   in an image or an M;
//! - a known member of another JSON type than AWS sends, `null` included,
//!   or repeated;
//! - a `Records` member, JSON nested deeper than [`DEPTH`], and anything
//!   that is not JSON.
//!
//! So a record it reads is one that serde_json reads without error, to the
//! same fields (the tests read every record both ways and compare).

mod image;
mod token;

use std::borrow::Cow;

use super::attr::Text;
use super::raw::{JsonText, Parts, RawIdentity, RawRecord, RawStreamRecord};
pub(super) use image::{Scanned, ScannedKeys};
use token::Scan;

/// How deep JSON may nest below a record's members before the scan gives
/// up: far below serde_json's own limit (128), so that a record the scan
/// reads is never one serde_json refuses as too deep.
const DEPTH: u8 = 32;

/// Reads the record object that `text` starts with, as
/// `leading_serde::<I>` does; `None` when the scan gives up.
pub(super) fn record<'a, I: Scanned<'a>, K: ScannedKeys<'a>>(text: &'a str) -> Option<(&'a str, RawRecord<'a, I, K>)> {
    if !text.starts_with('{') {
        return None;
    }
    let mut scan = Scan::new(text);
    let mut record = RawRecord::empty();
    scan.object(|scan, name| match name {
        "eventID" => once(&mut record.event_id, scan.string()?.to_owned()),
        "eventName" => once(&mut record.event_name, text_of(scan)?),
        "eventSourceARN" => once(&mut record.event_source_arn, text_of(scan)?),
        "userIdentity" => {
            let identity = identity(scan)?;
            once(&mut record.user_identity, identity)
        }
        "dynamodb" => {
            let stream = stream(scan, |scan, _| scan.skip(DEPTH))?;
            once(&mut record.dynamodb, stream)
        }
        "Records" => None,
        _ => scan.skip(DEPTH),
    })?;
    Some((scan.read()?, record))
}

/// A change as DynamoDB writes it to Kinesis, read as [`record`] reads a
/// stream record: the members the change has for the record, and what it
/// has in their place (`awsRegion` and `tableName` for the ARN); a member
/// that is `null` is one not given. `None` when the scan gives up: on what
/// [`record`] gives up on, on a member repeated (also an unknown one in
/// `dynamodb`), on a known member of `dynamodb` that is `null`, and on
/// anything after the object but whitespace.
pub(super) fn kinesis_record<'a, I: Scanned<'a>, K: ScannedKeys<'a>>(text: &'a str) -> Option<KinesisRecord<'a, I, K>> {
    let mut scan = Scan::new(text);
    let mut change = KinesisRecord {
        record: RawRecord::empty(),
        aws_region: None,
        table_name: None,
    };
    let mut unknown: Vec<&'a str> = Vec::new();
    change_object(&mut scan, |scan, member| {
        let record = &mut change.record;
        match member {
            Member::EventId => record.event_id = Some(scan.string()?.to_owned()),
            Member::EventName => record.event_name = Some(text_of(scan)?),
            Member::AwsRegion => change.aws_region = Some(scan.string()?),
            Member::UserIdentity => record.user_identity = Some(identity(scan)?),
            Member::TableName => change.table_name = Some(scan.string()?),
            Member::Dynamodb => {
                let stream = stream(scan, |scan, name| {
                    if unknown.contains(&name) {
                        return None;
                    }
                    unknown.push(name);
                    scan.skip(DEPTH)
                })?;
                record.dynamodb = Some(stream);
            }
        }
        Some(())
    })?;
    Some(change)
}

/// A change as DynamoDB writes it to Kinesis, scanned ([`kinesis_record`]).
pub(super) struct KinesisRecord<'a, I, K> {
    /// The record's members; no `eventSourceARN` (the change has none).
    pub(super) record: RawRecord<'a, I, K>,
    pub(super) aws_region: Option<&'a str>,
    pub(super) table_name: Option<&'a str>,
}

/// Reads a change as DynamoDB writes it to Kinesis into its parts, as
/// `record::kinesis::change` reads it with serde_json; `None` when the
/// scan gives up (a repeated member, an escape, anything but JSON, or
/// anything after it but whitespace).
pub(super) fn kinesis_change(text: &str) -> Option<Parts<'_>> {
    let mut scan = Scan::new(text);
    let mut parts = Parts::default();
    change_object(&mut scan, |scan, member| {
        let mut value = || scan.raw(|scan| scan.skip(DEPTH));
        match member {
            Member::EventId => parts.event_id = Some(value()?),
            Member::EventName => parts.event_name = Some(value()?),
            Member::AwsRegion => parts.aws_region = Some(value()?),
            Member::UserIdentity => parts.user_identity = Some(value()?),
            Member::TableName => parts.table_name = Some(Cow::Borrowed(scan.string()?)),
            Member::Dynamodb => parts.dynamodb = Some(members(scan)?),
        }
        Some(())
    })?;
    Some(parts)
}

/// The members of a change as DynamoDB writes it to Kinesis that its
/// readings take (serde_json's among them).
#[derive(Clone, Copy)]
enum Member {
    EventId,
    EventName,
    AwsRegion,
    UserIdentity,
    TableName,
    Dynamodb,
}

impl Member {
    const ALL: [(&'static str, Member); 6] = [
        ("eventID", Member::EventId),
        ("eventName", Member::EventName),
        ("awsRegion", Member::AwsRegion),
        ("userIdentity", Member::UserIdentity),
        ("tableName", Member::TableName),
        ("dynamodb", Member::Dynamodb),
    ];
}

/// A change's object at the scan: `member` reads each member it has of
/// [`Member`] that is not `null` (one not given), each at most once (a
/// repeat gives up, as serde_json refuses it); the others are skipped;
/// nothing but whitespace may follow.
fn change_object<'a>(scan: &mut Scan<'a>, mut member: impl FnMut(&mut Scan<'a>, Member) -> Option<()>) -> Option<()> {
    let mut read = [false; Member::ALL.len()];
    scan.object(|scan, name| {
        let Some(at) = Member::ALL.iter().position(|(known, _)| *known == name) else {
            return scan.skip(DEPTH);
        };
        if std::mem::replace(read.get_mut(at)?, true) {
            return None;
        }
        if scan.peek()? == b'n' {
            return scan.literal("null");
        }
        member(scan, Member::ALL.get(at)?.1)
    })?;
    scan.peek().is_none().then_some(())
}

/// The object at the scan: its members in order, each value as written;
/// `None` when a name repeats (serde_json refuses that of `dynamodb`).
fn members<'a>(scan: &mut Scan<'a>) -> Option<Vec<(Cow<'a, str>, &'a str)>> {
    let mut members: Vec<(Cow<'a, str>, &'a str)> = Vec::with_capacity(8);
    scan.object(|scan, name| {
        if members.iter().any(|(n, _)| n == name) {
            return None;
        }
        members.push((Cow::Borrowed(name), scan.raw(|scan| scan.skip(DEPTH))?));
        Some(())
    })?;
    Some(members)
}

/// Sets a member read once; `None` (give up) when it was already read:
/// serde refuses a repeated member.
fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    match slot {
        Some(_) => None,
        None => {
            *slot = Some(value);
            Some(())
        }
    }
}

/// A string, borrowed.
fn text_of<'a>(scan: &mut Scan<'a>) -> Option<Text<'a>> {
    Some(Text(Cow::Borrowed(scan.string()?)))
}

/// `userIdentity`, either spelling.
fn identity<'a>(scan: &mut Scan<'a>) -> Option<RawIdentity<'a>> {
    let mut identity = RawIdentity {
        kind: None,
        principal: None,
    };
    scan.object(|scan, name| match name {
        "type" | "Type" => once(&mut identity.kind, text_of(scan)?),
        "principalId" | "PrincipalId" => once(&mut identity.principal, text_of(scan)?),
        _ => scan.skip(DEPTH),
    })?;
    Some(identity)
}

/// The `dynamodb` member; `other` reads a member it does not know.
fn stream<'a, I: Scanned<'a>, K: ScannedKeys<'a>>(
    scan: &mut Scan<'a>,
    mut other: impl FnMut(&mut Scan<'a>, &'a str) -> Option<()>,
) -> Option<RawStreamRecord<'a, I, K>> {
    let mut stream = RawStreamRecord {
        created: None,
        keys: None,
        new_image: None,
        old_image: None,
        sequence_number: None,
        size_bytes: None,
        view_type: None,
    };
    scan.object(|scan, name| match name {
        "ApproximateCreationDateTime" => {
            let created = created(scan)?;
            once(&mut stream.created, created)
        }
        "Keys" => {
            let keys = K::scan_keys(scan)?;
            once(&mut stream.keys, keys)
        }
        "NewImage" => {
            let image = I::scan(scan, DEPTH)?;
            once(&mut stream.new_image, image)
        }
        "OldImage" => {
            let image = I::scan(scan, DEPTH)?;
            once(&mut stream.old_image, image)
        }
        "SequenceNumber" => once(&mut stream.sequence_number, scan.string()?.to_owned()),
        "SizeBytes" => {
            let size = scan.number()?.parse::<u64>().ok()?;
            once(&mut stream.size_bytes, size)
        }
        "StreamViewType" => once(&mut stream.view_type, text_of(scan)?),
        _ => other(scan, name),
    })?;
    Some(stream)
}

/// `ApproximateCreationDateTime`: a number or a string, as its JSON text
/// (checked by the scan).
fn created<'a>(scan: &mut Scan<'a>) -> Option<JsonText<'a>> {
    let text = scan.raw(|scan| match scan.peek()? {
        b'"' => scan.string().map(drop),
        _ => scan.number().map(drop),
    })?;
    Some(JsonText(text))
}

#[cfg(test)]
mod tests;
