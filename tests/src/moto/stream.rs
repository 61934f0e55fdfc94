//! A table's stream read as Lambda would be handed it: [`StreamReader`]
//! (DescribeStream, GetShardIterator, GetRecords, from where it last
//! stopped), each record as DynamoDB Streams wire JSON ([`StreamRecord`]),
//! and [`lambda_event`] to wrap records as a Lambda DynamoDB event.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{anyhow, Result};
use aws_sdk_dynamodb::error::DisplayErrorContext;
use aws_sdk_dynamodbstreams::types::{Record, ShardIteratorType};

use super::Moto;

/// One stream record as DynamoDB Streams wire JSON.
#[derive(Debug, Clone)]
pub struct StreamRecord {
    pub sequence_number: String,
    /// `INSERT`, `MODIFY` or `REMOVE`.
    pub event_name: String,
    /// The record's JSON text.
    pub json: String,
}

/// The Lambda DynamoDB event payload `{"Records": [...]}` of these records.
pub fn lambda_event(records: &[StreamRecord]) -> Vec<u8> {
    let mut out = String::from("{\"Records\":[");
    for (i, record) in records.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&record.json);
    }
    out.push_str("]}");
    out.into_bytes()
}

/// Reads a table's stream, shard by shard, from where it last stopped.
#[derive(Debug, Clone)]
pub struct StreamReader {
    pub table: String,
    pub stream_arn: String,
    /// Shard id → the last sequence number read from it.
    positions: BTreeMap<String, Option<String>>,
    /// Every record read (sequence number and JSON): moto can give two
    /// records one sequence number, and then hands out the second on every
    /// read after it; it is returned once.
    seen: BTreeSet<(String, String)>,
}

impl StreamReader {
    /// A reader at the start (TRIM_HORIZON) of the table's latest stream.
    pub async fn open(moto: &Moto, table: &str) -> Result<StreamReader> {
        let output = moto
            .dynamodb
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(|e| anyhow!("DescribeTable {table}: {}", DisplayErrorContext(&e)))?;
        let stream_arn = output
            .table
            .and_then(|t| t.latest_stream_arn)
            .ok_or_else(|| anyhow!("table {table} has no stream"))?;
        Ok(StreamReader {
            table: table.to_owned(),
            stream_arn,
            positions: BTreeMap::new(),
            seen: BTreeSet::new(),
        })
    }

    /// Every record not read yet, shard by shard (moto has one shard), each
    /// in stream order.
    pub async fn read_new(&mut self, moto: &Moto) -> Result<Vec<StreamRecord>> {
        let mut shards = Vec::new();
        let mut start = None;
        loop {
            let output = moto
                .streams
                .describe_stream()
                .stream_arn(&self.stream_arn)
                .set_exclusive_start_shard_id(start.take())
                .send()
                .await
                .map_err(|e| anyhow!("DescribeStream {}: {}", self.stream_arn, DisplayErrorContext(&e)))?;
            let description = output
                .stream_description
                .ok_or_else(|| anyhow!("DescribeStream: no description"))?;
            shards.extend(
                description
                    .shards
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|s| s.shard_id),
            );
            match description.last_evaluated_shard_id {
                Some(id) => start = Some(id),
                None => break,
            }
        }
        let mut records = Vec::new();
        for shard in shards {
            let position = self.positions.entry(shard.clone()).or_default();
            let request = moto
                .streams
                .get_shard_iterator()
                .stream_arn(&self.stream_arn)
                .shard_id(&shard);
            let request = match position {
                Some(seq) => request
                    .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                    .sequence_number(seq.clone()),
                None => request.shard_iterator_type(ShardIteratorType::TrimHorizon),
            };
            let mut iterator = request
                .send()
                .await
                .map_err(|e| anyhow!("GetShardIterator {shard}: {}", DisplayErrorContext(&e)))?
                .shard_iterator;
            while let Some(it) = iterator {
                let output = moto
                    .streams
                    .get_records()
                    .shard_iterator(it)
                    .limit(1000)
                    .send()
                    .await
                    .map_err(|e| anyhow!("GetRecords {shard}: {}", DisplayErrorContext(&e)))?;
                let mut new = Vec::new();
                for record in &output.records.unwrap_or_default() {
                    let wire = wire_record(record, &self.stream_arn)?;
                    if self.seen.insert((wire.sequence_number.clone(), wire.json.clone())) {
                        new.push(wire);
                    }
                }
                if new.is_empty() {
                    break;
                }
                for wire in new {
                    *position = Some(wire.sequence_number.clone());
                    records.push(wire);
                }
                iterator = output.next_shard_iterator;
            }
        }
        Ok(records)
    }
}

/// A GetRecords record as its wire JSON, with `eventSourceARN` as Lambda adds
/// it: the local runner's own conversion (`infra::runner::stream::dynamo`).
pub fn wire_record(record: &Record, stream_arn: &str) -> Result<StreamRecord> {
    let event_name = record
        .event_name
        .as_ref()
        .map(|n| n.as_str().to_owned())
        .ok_or_else(|| anyhow!("a record without eventName"))?;
    let wire = infra::runner::stream::dynamo::lambda_record(record, stream_arn).map_err(|e| anyhow!(e))?;
    Ok(StreamRecord {
        sequence_number: wire.sequence_number,
        event_name,
        json: wire.json,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_serialize_to_stream_wire_json() {
        use std::collections::HashMap;

        use aws_sdk_dynamodbstreams::primitives::{Blob, DateTime};
        use aws_sdk_dynamodbstreams::types::AttributeValue as StreamValue;
        use aws_sdk_dynamodbstreams::types::{OperationType, StreamRecord as Sr, StreamViewType as Svt};
        use serde_json::Value as Json;
        let image = HashMap::from([
            ("source".to_owned(), StreamValue::S("GOAL-1".into())),
            (
                "n".to_owned(),
                StreamValue::N("12345678901234567890.123456789012345678".into()),
            ),
            ("b".to_owned(), StreamValue::B(Blob::new(vec![0, 255]))),
            (
                "l".to_owned(),
                StreamValue::L(vec![StreamValue::Null(true), StreamValue::Bool(false)]),
            ),
        ]);
        let record = Record::builder()
            .event_id("e1")
            .event_name(OperationType::Insert)
            .dynamodb(
                Sr::builder()
                    .approximate_creation_date_time(DateTime::from_secs_and_nanos(1763733010, 482_913_000))
                    .set_keys(Some(HashMap::from([(
                        "source".to_owned(),
                        StreamValue::S("GOAL-1".into()),
                    )])))
                    .set_new_image(Some(image))
                    .sequence_number("100")
                    .size_bytes(42)
                    .stream_view_type(Svt::NewAndOldImages)
                    .build(),
            )
            .build();
        let arn = "arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/2026";
        let wire = wire_record(&record, arn).unwrap();
        assert!(
            wire.json.contains("\"ApproximateCreationDateTime\":1763733010.482913,"),
            "{}",
            wire.json
        );
        let json: Json = serde_json::from_str(&wire.json).unwrap();
        assert_eq!(json["eventSourceARN"], arn);
        assert_eq!(
            json["dynamodb"]["NewImage"]["n"]["N"],
            "12345678901234567890.123456789012345678"
        );
        assert_eq!(json["dynamodb"]["NewImage"]["b"]["B"], "AP8=");
        assert_eq!(json["dynamodb"]["NewImage"]["l"]["L"][0]["NULL"], true);
        assert_eq!(json["dynamodb"]["SequenceNumber"], "100");
        let payload = lambda_event(&[wire]);
        let parsed = model::record::parse_batch(&payload).unwrap();
        let change = parsed[0].record.as_ref().unwrap();
        assert_eq!(change.table.as_deref(), Some("t"));
        assert_eq!(
            change.created.map(|c| (c.seconds, c.nanos)),
            Some((1763733010, 482_913_000))
        );
    }
}
