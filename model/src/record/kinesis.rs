//! Changes from a Kinesis data stream: Lambda's Kinesis event, and the
//! records DynamoDB writes to the stream, unwrapped into the DynamoDB
//! stream's own Lambda shape, so that every reading after this one is the
//! one of a DynamoDB stream.
//!
//! A Kinesis record's `kinesis.data` is base64 of the JSON DynamoDB writes:
//! `awsRegion`, `eventID`, `eventName`, `userIdentity`, `recordFormat`,
//! `tableName`, `eventSource` and `dynamodb`, which has
//! `ApproximateCreationDateTime` in the table's precision (microseconds or
//! milliseconds since 1970), `Keys`, the images and `SizeBytes`, and no
//! `SequenceNumber`. Unwrapped, a change gets:
//!
//! - `dynamodb.SequenceNumber`: the Kinesis record's `sequenceNumber`
//!   (what the failure response names), or for a line of a file its line;
//! - `ApproximateCreationDateTime` in epoch seconds, exactly (digits moved
//!   past the point, never through a float);
//! - `eventSourceARN`: the table's ARN, from `tableName` (the account from
//!   the Kinesis stream's ARN when there is one).
//!
//! Everything else is kept as written. A record that cannot be unwrapped
//! (not base64, not JSON, no `tableName`, a creation time not in the
//! table's precision, a table the config reads from its DynamoDB stream)
//! is unusable ([`RecordError::Kinesis`]), with its Kinesis record's text
//! for the quarantine; the others go on.
//!
//! A line of a file of changes is read straight into the record its
//! rewrite would read as, where the scan can ([`read_change_line`]): the
//! rewrite's text would only be read once and thrown away.

use std::borrow::Cow;

use base64::Engine as _;
use serde::Deserialize;

use super::attr::{BorrowedField, Text};
use super::document::{clip, decode, json_message, strict};
use super::one::record_id;
use super::{BorrowedReceived, Mode, ParseError, Raw, Received, RecordError, RecordId};
use crate::config::{ChangeSource, Config, Precision};
use crate::value::Image;

/// `eventSource` of a Lambda Kinesis event's records.
pub const KINESIS_EVENT_SOURCE: &str = "aws:kinesis";

/// Records unwrapped into DynamoDB's Lambda shape.
#[derive(Debug)]
pub struct Unwrapped<'a> {
    /// `{"Records":[…]}`: the usable records, in order.
    pub batch: String,
    /// The unusable ones, each with its position among all records.
    pub unusable: Vec<(usize, Received<'a>)>,
}

impl<'a> Unwrapped<'a> {
    fn new(capacity: usize) -> Self {
        let mut batch = String::with_capacity(capacity + 16);
        batch.push_str("{\"Records\":[");
        Unwrapped {
            batch,
            unusable: Vec::new(),
        }
    }

    fn finish(mut self) -> Self {
        self.batch.push_str("]}");
        self
    }

    /// Appends one change, or notes it unusable.
    fn push(
        &mut self,
        position: usize,
        raw: &'a str,
        id: Ids<'_>,
        change: Result<Cow<'_, [u8]>, String>,
        config: &Config,
    ) {
        let rollback = self.batch.len();
        let first = self.batch.ends_with('[');
        if !first {
            self.batch.push(',');
        }
        let written = change.and_then(|data| rewrite(&data, &id, config, &mut self.batch));
        if let Err(reason) = written {
            self.batch.truncate(rollback);
            let record = record_id(id.sequence_number, id.event_id, RecordId::Index(position));
            let sequence_number = matches!(record, RecordId::Sequence(_))
                .then(|| id.sequence_number.map(str::to_owned))
                .flatten();
            self.unusable.push((
                position,
                Received::read(
                    Raw::Json(raw),
                    sequence_number,
                    Err(RecordError::Kinesis { record, reason }),
                ),
            ));
        }
    }
}

/// The records of a Lambda Kinesis event, unwrapped. The whole payload
/// must be JSON of `{"Records": [...]}`; a record that cannot be unwrapped
/// is unusable, not an error of the payload.
pub fn unwrap_event<'a>(payload: &'a [u8], config: &Config) -> Result<Unwrapped<'a>, ParseError> {
    let (text, bom) = decode(payload)?;
    let records = strict(text, bom)?;
    let mut out = Unwrapped::new(payload.len());
    let mut data = Vec::new();
    for (position, raw) in records.into_iter().enumerate() {
        let record: Result<LambdaRecord<'_>, _> = serde_json::from_str(raw.get());
        let (id, change) = match &record {
            Ok(record) => {
                let id = Ids {
                    sequence_number: record.kinesis.as_ref().and_then(|k| k.sequence_number.as_deref()),
                    event_id: record.event_id.as_deref(),
                    account: record.event_source_arn.as_deref().and_then(account_of),
                };
                let change = match record.kinesis.as_ref().and_then(|k| k.data.as_deref()) {
                    None => Err("no `kinesis.data`".to_owned()),
                    Some(text) => {
                        data.clear();
                        base64::engine::general_purpose::STANDARD
                            .decode_vec(text.as_bytes(), &mut data)
                            .map(|()| Cow::Borrowed(data.as_slice()))
                            .map_err(|e| format!("`kinesis.data` is not base64: {e}"))
                    }
                };
                (id, change)
            }
            Err(e) => (
                Ids::default(),
                Err(format!("not a Kinesis record: {}", json_message(e))),
            ),
        };
        out.push(position, raw.get(), id, change, config);
    }
    Ok(out.finish())
}

/// `payload` unwrapped when it is a Lambda Kinesis event and `config`
/// reads a table from Kinesis; `None` for any other payload (read as it
/// is). What both consumers ask of a payload first.
pub fn unwrap_if_event<'a>(payload: &'a [u8], config: &Config) -> Result<Option<Unwrapped<'a>>, ParseError> {
    if !config.reads_kinesis() || !is_kinesis_event(payload) {
        return Ok(None);
    }
    unwrap_event(payload, config).map(Some)
}

/// JSON Lines of the changes as DynamoDB writes them to Kinesis (what
/// `record` saves of a Kinesis stream): each line one change, its line
/// number its sequence number. Blank lines are skipped.
pub fn unwrap_lines<'a>(text: &'a str, config: &Config) -> Unwrapped<'a> {
    let mut out = Unwrapped::new(text.len());
    let mut position = 0;
    for (index, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let number = (index + 1).to_string();
        let id = Ids {
            sequence_number: Some(&number),
            ..Ids::default()
        };
        out.push(position, line, id, Ok(Cow::Borrowed(line.as_bytes())), config);
        position += 1;
    }
    out.finish()
}

/// One change as DynamoDB writes it to Kinesis (`change`, JSON), as one
/// record of the DynamoDB stream's Lambda shape, under `sequence_number`
/// (for a line of a file: its line number); why it cannot be, otherwise.
pub fn change_record(change: &str, sequence_number: &str, config: &Config) -> Result<String, String> {
    let mut out = String::with_capacity(change.len() + 128);
    let id = Ids {
        sequence_number: Some(sequence_number),
        ..Ids::default()
    };
    rewrite(change.as_bytes(), &id, config, &mut out)?;
    Ok(out)
}

/// The line `number` of a file of changes as DynamoDB writes them to
/// Kinesis, read into a record, its images borrowed from the line where
/// they can be: the record [`change_record`] and then
/// [`read_line`](super::read_line) make of it, read in one pass where the
/// hand scanner can (`scan::kinesis_record`). A usable record keeps
/// the line as [`Raw::Kinesis`]; an unusable one keeps it as delivered,
/// with its reason.
pub fn read_change_line<'a>(line: &'a str, number: usize, config: &Config) -> BorrowedReceived<'a> {
    match scanned(line, number, config) {
        Some(received) => received,
        None => rewritten(line, number, config),
    }
}

/// [`read_change_line`] by the scan; `None` when it gives up, or when the
/// change cannot be unwrapped (the rewrite says why).
fn scanned<'a>(line: &'a str, number: usize, config: &Config) -> Option<BorrowedReceived<'a>> {
    let change = super::scan::kinesis_record::<BorrowedField<'a>, BorrowedField<'a>>(line)?;
    let region = change.aws_region.unwrap_or_default();
    let (arn, precision) = source_of(change.table_name?, region, "", config).ok()?;
    let mut raw = change.record;
    let stream = raw.dynamodb.as_mut()?;
    if stream.sequence_number.is_some() {
        return None;
    }
    let created = match stream.created.take() {
        Some(units) => Some(creation_time(units.get(), precision).ok()?),
        None => None,
    };
    let sequence_number = number.to_string();
    stream.sequence_number = Some(sequence_number.clone());
    raw.event_source_arn = Some(Text(Cow::Owned(arn)));
    let record = super::one::build_unwrapped(raw, created, RecordId::Line(number));
    Some(Received::read(kept(line, &record), Some(sequence_number), record))
}

/// How a line of changes is kept with the record read from it: as the
/// change when the record is usable (the quarantine then renders the
/// record), as delivered when it is not.
fn kept<'a, T, E>(line: &'a str, record: &Result<T, E>) -> Raw<'a> {
    match record {
        Ok(_) => Raw::Kinesis(line),
        Err(_) => Raw::Json(line),
    }
}

/// [`read_change_line`] the long way: the line rewritten, then read.
fn rewritten<'a>(line: &'a str, number: usize, config: &Config) -> BorrowedReceived<'a> {
    let record = match change_record(line, &number.to_string(), config) {
        Ok(record) => record,
        Err(reason) => return unusable_line(line, number, reason).into_borrowed(),
    };
    match super::read_line::<Image>(&record, number, 0, Mode::Whole) {
        Ok(Some(read)) => Received::read(kept(line, &read.record), read.sequence_number, read.record).into_borrowed(),
        // Never so: the rewrite writes a record object.
        Ok(None) => unusable_line(line, number, "an empty change".to_owned()).into_borrowed(),
        Err(e) => unusable_line(line, number, e.message).into_borrowed(),
    }
}

/// The line `line` of a file of changes, which could not be rewritten
/// ([`change_record`]'s reason): unusable, its text kept for the quarantine.
pub fn unusable_line(text: &str, line: usize, reason: String) -> Received<'_> {
    let record = RecordId::Sequence(line.to_string());
    Received::read(
        Raw::Json(text),
        Some(line.to_string()),
        Err(RecordError::Kinesis { record, reason }),
    )
}

/// Whether a line is a change as DynamoDB writes it to Kinesis: an object
/// with `tableName` and `dynamodb`, and no `dynamodb.SequenceNumber`.
pub fn is_kinesis_change(line: &str) -> bool {
    change::read(line).is_ok_and(|c| {
        c.table_name.is_some()
            && c.dynamodb
                .is_some_and(|d| !d.iter().any(|(k, _)| k == "SequenceNumber"))
    })
}

/// How the record is named, and the account of its stream.
#[derive(Debug, Default, Clone, Copy)]
struct Ids<'a> {
    sequence_number: Option<&'a str>,
    event_id: Option<&'a str>,
    account: Option<&'a str>,
}

/// The account of an ARN (`arn:PARTITION:SERVICE:REGION:ACCOUNT:…`).
fn account_of(arn: &str) -> Option<&str> {
    arn.split(':').nth(4).filter(|a| a.bytes().all(|b| b.is_ascii_digit()))
}

/// Writes the change `data` (JSON as DynamoDB writes it) to `out` in the
/// DynamoDB stream's Lambda shape; the reason it cannot be, otherwise.
fn rewrite(data: &[u8], id: &Ids<'_>, config: &Config, out: &mut String) -> Result<(), String> {
    let text = std::str::from_utf8(data).map_err(|_| "`kinesis.data` is not UTF-8 text".to_owned())?;
    let change =
        change::read(text).map_err(|e| format!("`kinesis.data` is not a DynamoDB change: {}", json_message(&e)))?;
    let table = change.table_name.as_deref().ok_or("no `tableName`")?;
    let region: Cow<'_, str> = match change.aws_region {
        Some(raw) => serde_json::from_str(raw).map_err(|_| "`awsRegion` is not a string".to_owned())?,
        None => Cow::Borrowed(""),
    };
    let (arn, precision) = source_of(table, &region, id.account.unwrap_or_default(), config)?;
    let dynamodb = change.dynamodb.ok_or("no `dynamodb` part")?;
    let sequence_number = id.sequence_number.ok_or("no `kinesis.sequenceNumber`")?;
    if sequence_number.is_empty() || !sequence_number.bytes().all(|b| b.is_ascii_digit()) {
        return Err("`kinesis.sequenceNumber` is not a string of decimal digits".to_owned());
    }
    out.push('{');
    for (name, value) in [
        ("eventID", change.event_id),
        ("eventName", change.event_name),
        ("awsRegion", change.aws_region),
        ("userIdentity", change.user_identity),
    ] {
        if let Some(value) = value {
            for part in ["\"", name, "\":", value, ","] {
                out.push_str(part);
            }
        }
    }
    out.push_str("\"eventSource\":\"aws:dynamodb\",\"eventSourceARN\":");
    push_json_string(out, &arn);
    for part in [",\"dynamodb\":{\"SequenceNumber\":\"", sequence_number, "\""] {
        out.push_str(part);
    }
    for (name, value) in &dynamodb {
        if name == "ApproximateCreationDateTime" {
            let (seconds, fraction) = epoch_digits(value, precision)?;
            for part in [",\"ApproximateCreationDateTime\":", seconds, ".", fraction] {
                out.push_str(part);
            }
        } else {
            out.push(',');
            push_json_string(out, name);
            out.push(':');
            out.push_str(value);
        }
    }
    out.push_str("}}");
    Ok(())
}

/// The ARN of the table a change names (`tableName`), in `region` and
/// `account`, and the precision its creation times come in under `config`;
/// why the change cannot be read, otherwise.
fn source_of(table: &str, region: &str, account: &str, config: &Config) -> Result<(String, Precision), String> {
    // What reads the ARN back to `table` (`table_from_arn`), checked
    // before it is made.
    if region.contains(':') || account.contains(':') || !super::shared::is_table_name(table) {
        return Err(format!(
            "`tableName` {:?} is not a DynamoDB table name",
            clip(table, 64)
        ));
    }
    let mut arn = String::with_capacity(32 + region.len() + account.len() + table.len());
    for part in ["arn:aws:dynamodb:", region, ":", account, ":table/", table] {
        arn.push_str(part);
    }
    let precision = match config.table(table).map(|t| t.stream) {
        Some(ChangeSource::Kinesis(k)) => k.precision,
        Some(ChangeSource::DynamoDb) => {
            return Err(format!(
                "table `{table}` came from a Kinesis data stream, but the config reads it from its DynamoDB stream: \
                 set stream = \"kinesis\" in [table.{table}]"
            ))
        }
        // Not declared: read as sent; the consumers say what they do with it.
        None => Precision::default(),
    };
    Ok((arn, precision))
}

fn push_json_string(out: &mut String, text: &str) {
    if text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(text);
        out.push('"');
    } else {
        out.push_str(&serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned()));
    }
}

/// One record of a Lambda Kinesis event.
#[derive(Deserialize)]
struct LambdaRecord<'a> {
    #[serde(borrow)]
    kinesis: Option<KinesisPart<'a>>,
    #[serde(rename = "eventID", borrow)]
    event_id: Option<Cow<'a, str>>,
    #[serde(rename = "eventSourceARN", borrow)]
    event_source_arn: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct KinesisPart<'a> {
    #[serde(borrow)]
    data: Option<Cow<'a, str>>,
    #[serde(rename = "sequenceNumber", borrow)]
    sequence_number: Option<Cow<'a, str>>,
}

pub(super) mod change;
mod probe;
mod units;

pub use probe::is_kinesis_event;
use units::{creation_time, epoch_digits};
#[cfg(test)]
mod tests;
