//! The parsers: documents into raw records, raw records into borrowed serde
//! structs, and those, validated, into [`ChangeRecord`]s.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize as DeriveDeserialize;
use serde_json::value::RawValue;

use super::attr::{bad_key_type, AttrProblem, ImageField, ImageProblem, Text};
use super::time::parse_creation_time;
use super::{
    ChangeRecord, CreationTime, EventKind, ImagePart, KeyProblem, ParseError, Received, RecordError, RecordId, ViewType,
};
use crate::value::Image;

// ---------------------------------------------------------------------------
// Public entry points
// ---------------------------------------------------------------------------

/// Parses a Lambda DynamoDB event or a DynamoDB Streams `GetRecords`
/// response: an object with a `Records` array (other members, such as
/// `NextShardIterator`, are ignored).
///
/// Input that is not UTF-8 JSON, not an object, or has no `Records` array is
/// a [`ParseError`]; otherwise every element of `Records` gives one
/// [`Received`], in order, whether or not it is a usable record.
pub fn parse_batch(bytes: &[u8]) -> Result<Vec<Received>, ParseError> {
    let (text, bom) = decode(bytes)?;
    let mut de = serde_json::Deserializer::from_str(text);
    let probe = Probe::deserialize(&mut de).map_err(|e| ParseError::from_json(&e, bom))?;
    de.end().map_err(|e| ParseError::from_json(&e, bom))?;
    match probe {
        Probe::Batch(records) => Ok(received_all(records)),
        Probe::Object => Err(ParseError::at_start(
            text,
            bom,
            "an object without a `Records` array: expected a Lambda event or a GetRecords response",
        )),
        Probe::Other => Err(ParseError::at_start(
            text,
            bom,
            "not a JSON object: expected a Lambda event or a GetRecords response",
        )),
    }
}

/// Parses JSON Lines: one record object per line, in the Lambda or the
/// `GetRecords` spelling; blank lines are skipped. Each record comes with its
/// line number (from 1). A line that is not JSON is a [`ParseError`] with its
/// line number; a line that is JSON but not a usable record is a [`Received`]
/// whose `record` is the error.
pub fn parse_json_lines(text: &str) -> Result<Vec<(usize, Received)>, ParseError> {
    let (text, bom) = match text.strip_prefix('\u{feff}') {
        Some(rest) => (rest, 3),
        None => (text, 0),
    };
    json_lines(text, bom)
}

/// Parses any accepted shape: an object with `Records` (Lambda event or
/// `GetRecords` response), JSON Lines, or a single record object (which may
/// span lines). Empty input (or only whitespace) is no records.
///
/// Errors carry the line and column of the input as a whole.
pub fn parse_any(bytes: &[u8]) -> Result<Vec<Received>, ParseError> {
    let (text, bom) = decode(bytes)?;
    let start = text.len() - text.trim_start_matches(is_json_whitespace).len();
    if start == text.len() {
        return Ok(Vec::new());
    }
    let lines_only = |text| json_lines(text, bom).map(|lines| lines.into_iter().map(|(_, r)| r).collect());
    if !text[start..].starts_with('{') {
        return lines_only(text);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    match Probe::deserialize(&mut de) {
        Ok(Probe::Batch(records)) => {
            de.end().map_err(|e| ParseError::from_json(&e, bom))?;
            Ok(received_all(records))
        }
        Ok(Probe::Object | Probe::Other) => {
            if de.end().is_err() {
                return lines_only(text);
            }
            // A single value: one record, perhaps pretty-printed.
            let raw: &RawValue = serde_json::from_str(text).map_err(|e| ParseError::from_json(&e, bom))?;
            let line = line_col(text.as_bytes(), start).0;
            Ok(vec![received(raw, RecordId::Line(line))])
        }
        Err(e) => {
            let start_line = line_col(text.as_bytes(), start).0;
            if e.line() > start_line {
                // The first value spans lines: a pretty-printed document with
                // an error in it, not JSON Lines.
                Err(ParseError::from_json(&e, bom))
            } else {
                lines_only(text)
            }
        }
    }
}

/// Parses one record's JSON (either spelling). The returned `raw` is a copy.
pub fn parse_record(raw: &RawValue) -> Received {
    received(raw, RecordId::Unidentified)
}

/// The table name in a DynamoDB table or stream ARN
/// (`arn:PARTITION:dynamodb:REGION:ACCOUNT:table/NAME[/stream/LABEL]`), if it
/// is one and the name is a valid table name.
pub fn table_from_arn(arn: &str) -> Option<&str> {
    let mut parts = arn.splitn(6, ':');
    if parts.next()? != "arn" || parts.next()?.is_empty() || parts.next()? != "dynamodb" {
        return None;
    }
    let (_region, _account) = (parts.next()?, parts.next()?);
    let name = parts.next()?.strip_prefix("table/")?.split('/').next()?;
    let valid = !name.is_empty()
        && name.len() <= 255
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    valid.then_some(name)
}

// ---------------------------------------------------------------------------
// Documents
// ---------------------------------------------------------------------------

fn is_json_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// The input as UTF-8 without a leading byte-order mark, and the mark's length.
fn decode(bytes: &[u8]) -> Result<(&str, usize), ParseError> {
    let bom = if bytes.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 };
    let body = bytes.get(bom..).unwrap_or_default();
    match std::str::from_utf8(body) {
        Ok(text) => Ok((text, bom)),
        Err(e) => {
            let (line, column) = line_col(bytes, bom + e.valid_up_to());
            Err(ParseError {
                line,
                column,
                message: "not valid UTF-8".to_owned(),
            })
        }
    }
}

/// 1-based line and column (in bytes) of a byte offset.
fn line_col(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = bytes.get(..offset).unwrap_or(bytes);
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    (line, before.len() - line_start + 1)
}

fn json_lines(text: &str, bom: usize) -> Result<Vec<(usize, Received)>, ParseError> {
    let mut out = Vec::new();
    for (index, line) in text.split('\n').enumerate() {
        let number = index + 1;
        if line.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            continue;
        }
        let raw: &RawValue = serde_json::from_str(line).map_err(|e| {
            let column = if number == 1 { e.column() + bom } else { e.column() };
            ParseError {
                line: number,
                column,
                message: json_message(&e),
            }
        })?;
        out.push((number, received(raw, RecordId::Line(number))));
    }
    Ok(out)
}

fn received_all(records: Vec<&RawValue>) -> Vec<Received> {
    records
        .into_iter()
        .enumerate()
        .map(|(i, raw)| received(raw, RecordId::Index(i)))
        .collect()
}

impl ParseError {
    fn from_json(e: &serde_json::Error, bom: usize) -> ParseError {
        let column = if e.line() == 1 { e.column() + bom } else { e.column() };
        ParseError {
            line: e.line(),
            column,
            message: json_message(e),
        }
    }

    fn at_start(text: &str, bom: usize, message: &str) -> ParseError {
        let start = text.len() - text.trim_start_matches(is_json_whitespace).len();
        let (line, column) = line_col(text.as_bytes(), start);
        let column = if line == 1 { column + bom } else { column };
        ParseError {
            line,
            column,
            message: message.to_owned(),
        }
    }
}

/// A serde_json error's message without its " at line L column C" suffix,
/// clipped (type errors quote the value they met).
fn json_message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    clip(full.strip_suffix(suffix.as_str()).unwrap_or(&full), 160)
}

/// The top level of a document: a batch (`Records`), another object, or not an object.
enum Probe<'a> {
    Batch(Vec<&'a RawValue>),
    Object,
    Other,
}

impl<'de> Deserialize<'de> for Probe<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Probe<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Probe<'de>, A::Error> {
                let mut records = None;
                while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
                    if key == "Records" {
                        if records.is_some() {
                            return Err(de::Error::custom("duplicate `Records`"));
                        }
                        records = Some(map.next_value::<RecordsArray<'de>>()?.0);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(records.map_or(Probe::Object, Probe::Batch))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Probe<'de>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Probe::Other)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Probe<'de>, E> {
                Ok(Probe::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Probe<'de>, E> {
                Ok(Probe::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Probe<'de>, E> {
                Ok(Probe::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Probe<'de>, E> {
                Ok(Probe::Other)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Probe<'de>, E> {
                Ok(Probe::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Probe<'de>, E> {
                Ok(Probe::Other)
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// `Records`: an array of raw records.
struct RecordsArray<'a>(Vec<&'a RawValue>);

impl<'de> Deserialize<'de> for RecordsArray<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RecordsArray<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of records")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RecordsArray<'de>, A::Error> {
                let mut records = Vec::with_capacity(seq.size_hint().unwrap_or(128).min(16_384));
                while let Some(raw) = seq.next_element::<&'de RawValue>()? {
                    records.push(raw);
                }
                Ok(RecordsArray(records))
            }
        }
        // Not `deserialize_seq`: serde_json's type error would quote the value.
        deserializer.deserialize_any(NotQuoting(V))
    }
}

/// Wraps a visitor so that a value of the wrong JSON type gives an error that
/// names the type but never quotes the value.
struct NotQuoting<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for NotQuoting<V> {
    type Value = V::Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<V::Value, A::Error> {
        Err(de::Error::custom(format!(
            "expected {}, found an object",
            Expecting(&self.0)
        )))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<V::Value, E> {
        Err(E::custom(format!("expected {}, found a boolean", Expecting(&self.0))))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<V::Value, E> {
        Err(E::custom(format!("expected {}, found a number", Expecting(&self.0))))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<V::Value, E> {
        Err(E::custom(format!("expected {}, found a number", Expecting(&self.0))))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<V::Value, E> {
        Err(E::custom(format!("expected {}, found a number", Expecting(&self.0))))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<V::Value, E> {
        Err(E::custom(format!("expected {}, found a string", Expecting(&self.0))))
    }
    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        Err(E::custom(format!("expected {}, found null", Expecting(&self.0))))
    }
}

struct Expecting<'v, V>(&'v V);

impl<'de, V: Visitor<'de>> fmt::Display for Expecting<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }
}

// ---------------------------------------------------------------------------
// Records
// ---------------------------------------------------------------------------

/// One stream record, either spelling. Unknown members are ignored.
#[derive(DeriveDeserialize)]
#[serde(expecting = "a stream record object")]
struct RawRecord<'a> {
    #[serde(rename = "eventID")]
    event_id: Option<String>,
    #[serde(rename = "eventName", borrow)]
    event_name: Option<Text<'a>>,
    #[serde(rename = "eventSourceARN")]
    event_source_arn: Option<String>,
    #[serde(rename = "userIdentity", borrow)]
    user_identity: Option<RawIdentity<'a>>,
    #[serde(borrow)]
    dynamodb: Option<RawStreamRecord<'a>>,
    /// Only to explain a whole batch given where one record was expected.
    #[serde(rename = "Records")]
    records: Option<IgnoredAny>,
}

/// `userIdentity`: `type`/`principalId` (Lambda) or `Type`/`PrincipalId` (GetRecords).
#[derive(DeriveDeserialize)]
#[serde(expecting = "a userIdentity object")]
struct RawIdentity<'a> {
    #[serde(rename = "type", alias = "Type", borrow)]
    kind: Option<Text<'a>>,
    #[serde(rename = "principalId", alias = "PrincipalId", borrow)]
    principal: Option<Text<'a>>,
}

/// The `dynamodb` part.
#[derive(DeriveDeserialize)]
#[serde(expecting = "a `dynamodb` object")]
struct RawStreamRecord<'a> {
    #[serde(rename = "ApproximateCreationDateTime", borrow)]
    created: Option<&'a RawValue>,
    #[serde(rename = "Keys")]
    keys: Option<ImageField>,
    #[serde(rename = "NewImage")]
    new_image: Option<ImageField>,
    #[serde(rename = "OldImage")]
    old_image: Option<ImageField>,
    #[serde(rename = "SequenceNumber")]
    sequence_number: Option<String>,
    #[serde(rename = "SizeBytes")]
    size_bytes: Option<u64>,
    #[serde(rename = "StreamViewType", borrow)]
    view_type: Option<Text<'a>>,
}

fn received(raw: &RawValue, position: RecordId) -> Received {
    let (sequence_number, record) = parse_raw(raw.get(), position);
    Received {
        raw: raw.to_owned(),
        sequence_number,
        record,
    }
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
    match serde_json::from_str::<RawRecord<'_>>(text) {
        Ok(raw) => {
            let sequence_number = raw
                .dynamodb
                .as_ref()
                .and_then(|d| d.sequence_number.as_deref())
                .filter(|s| is_sequence_number(s))
                .map(str::to_owned);
            (sequence_number, validate(Parts::from(raw), position))
        }
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

/// A record's parts, from whichever source, ready for [`validate`].
pub(super) struct Parts<'a> {
    pub event_id: Option<String>,
    pub event_name: Option<Cow<'a, str>>,
    pub source_arn: Option<String>,
    pub identity_type: Option<Cow<'a, str>>,
    pub identity_principal: Option<Cow<'a, str>>,
    /// The object has `Records` (a whole batch where a record was expected).
    pub is_batch: bool,
    pub stream: Option<StreamParts<'a>>,
}

/// The `dynamodb` part's parts.
pub(super) struct StreamParts<'a> {
    pub created: Option<Result<CreationTime, String>>,
    pub keys: Option<Result<Image, ImageProblem>>,
    pub new_image: Option<Result<Image, ImageProblem>>,
    pub old_image: Option<Result<Image, ImageProblem>>,
    pub sequence_number: Option<String>,
    pub size_bytes: Option<u64>,
    pub view_type: Option<Cow<'a, str>>,
}

impl<'a> From<RawRecord<'a>> for Parts<'a> {
    fn from(raw: RawRecord<'a>) -> Parts<'a> {
        let (identity_type, identity_principal) = match raw.user_identity {
            Some(identity) => (identity.kind.map(|t| t.0), identity.principal.map(|t| t.0)),
            None => (None, None),
        };
        Parts {
            event_id: raw.event_id,
            event_name: raw.event_name.map(|t| t.0),
            source_arn: raw.event_source_arn,
            identity_type,
            identity_principal,
            is_batch: raw.records.is_some(),
            stream: raw.dynamodb.map(|d| StreamParts {
                created: d.created.map(|raw| parse_creation_time(raw.get())),
                keys: d.keys.map(|f| f.0),
                new_image: d.new_image.map(|f| f.0),
                old_image: d.old_image.map(|f| f.0),
                sequence_number: d.sequence_number,
                size_bytes: d.size_bytes,
                view_type: d.view_type.map(|t| t.0),
            }),
        }
    }
}

/// Checks a record's parts and builds the [`ChangeRecord`]. `position` names
/// the record in errors when it has neither sequence number nor `eventID`.
pub(super) fn validate(parts: Parts<'_>, position: RecordId) -> Result<ChangeRecord, RecordError> {
    let Parts {
        event_id,
        event_name,
        source_arn,
        identity_type,
        identity_principal,
        is_batch,
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
    let new = new.filter(|_| needs_new);
    let old = old.filter(|_| needs_old);
    for (part, image) in [(ImagePart::NewImage, &new), (ImagePart::OldImage, &old)] {
        let Some(image) = image else { continue };
        for (name, value) in &keys {
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
    let ttl_expiry =
        identity_type.as_deref() == Some("Service") && identity_principal.as_deref() == Some("dynamodb.amazonaws.com");
    let table = source_arn.as_deref().and_then(table_from_arn).map(str::to_owned);

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

fn image(
    field: Option<Result<Image, ImageProblem>>,
    part: ImagePart,
    record: &dyn Fn() -> RecordId,
) -> Result<Option<Image>, RecordError> {
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

/// `text`, cut to at most `max` characters (marked with `…`).
pub(super) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}
