//! The stream port on Kinesis Data Streams, with the AWS SDK: the data
//! streams of the tables the config reads from Kinesis, named as `up`
//! creates them. Records come back in the shape Lambda delivers a Kinesis
//! record in (`kinesis.data` base64, `kinesis.sequenceNumber`,
//! `eventSourceARN` the stream's), which both consumers unwrap; a record's
//! time is its arrival in the stream, as Lambda's iterator age counts it.

use std::collections::BTreeMap;

use aws_config::SdkConfig;
use aws_sdk_kinesis::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_kinesis::types::ShardIteratorType;
use base64::Engine as _;
use futures::future::BoxFuture;
use futures::FutureExt;

use super::{Page, Position, ShardInfo, StreamError, StreamRecord, StreamSource};

/// The data streams of the tables read from Kinesis.
#[derive(Debug, Clone)]
pub struct KinesisStreams {
    client: aws_sdk_kinesis::Client,
    /// Table → its data stream's name.
    streams: BTreeMap<String, String>,
}

impl KinesisStreams {
    /// The data streams of `streams` (table → stream name).
    pub fn new(sdk: &SdkConfig, streams: BTreeMap<String, String>) -> KinesisStreams {
        KinesisStreams {
            client: aws_sdk_kinesis::Client::new(sdk),
            streams,
        }
    }

    /// Whether `table` is read from Kinesis.
    pub fn reads(&self, table: &str) -> bool {
        self.streams.contains_key(table)
    }

    pub fn client(&self) -> &aws_sdk_kinesis::Client {
        &self.client
    }
}

/// The decoded `kinesis.data` of a Lambda Kinesis record (the change as
/// DynamoDB writes it), if `json` is one.
pub fn kinesis_data(json: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Record {
        kinesis: Option<Data>,
    }
    #[derive(serde::Deserialize)]
    struct Data {
        data: String,
    }
    let data = serde_json::from_str::<Record>(json).ok()?.kinesis?.data;
    let bytes = base64::engine::general_purpose::STANDARD.decode(data).ok()?;
    String::from_utf8(bytes).ok()
}

/// Whether `arn` names a Kinesis data stream.
pub fn is_kinesis_arn(arn: &str) -> bool {
    arn.split(':').nth(2) == Some("kinesis")
}

fn reason<E, R>(e: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    aws_kit::error::sdk_message(e)
}

impl StreamSource for KinesisStreams {
    fn stream_arn<'a>(&'a self, table: &'a str) -> BoxFuture<'a, Result<String, StreamError>> {
        async move {
            let name = self.streams.get(table).ok_or_else(|| StreamError::NoStream {
                table: table.to_owned(),
            })?;
            let output = self
                .client
                .describe_stream_summary()
                .stream_name(name)
                .send()
                .await
                .map_err(|e| {
                    if e.code() == Some("ResourceNotFoundException") {
                        StreamError::NoStream {
                            table: table.to_owned(),
                        }
                    } else {
                        StreamError::Table {
                            table: table.to_owned(),
                            reason: format!("Kinesis stream `{name}`: {}", reason(&e)),
                        }
                    }
                })?;
            output
                .stream_description_summary()
                .map(|s| s.stream_arn().to_owned())
                .ok_or_else(|| StreamError::Table {
                    table: table.to_owned(),
                    reason: format!("Kinesis stream `{name}`: the answer has no ARN"),
                })
        }
        .boxed()
    }

    fn shards<'a>(&'a self, stream: &'a str) -> BoxFuture<'a, Result<Vec<ShardInfo>, StreamError>> {
        async move {
            let mut shards = Vec::new();
            let mut next: Option<String> = None;
            loop {
                let request = match next.take() {
                    Some(token) => self.client.list_shards().next_token(token),
                    None => self.client.list_shards().stream_arn(stream),
                };
                let output = request.send().await.map_err(|e| StreamError::Describe {
                    stream: stream.to_owned(),
                    reason: reason(&e),
                })?;
                for shard in output.shards() {
                    shards.push(ShardInfo {
                        id: shard.shard_id().to_owned(),
                        parent: shard.parent_shard_id().filter(|p| !p.is_empty()).map(str::to_owned),
                        closed: shard
                            .sequence_number_range()
                            .is_some_and(|r| r.ending_sequence_number().is_some()),
                    });
                }
                match output.next_token() {
                    Some(token) if !token.is_empty() => next = Some(token.to_owned()),
                    _ => return Ok(shards),
                }
            }
        }
        .boxed()
    }

    fn iterator<'a>(
        &'a self,
        stream: &'a str,
        shard: &'a str,
        position: &'a Position,
    ) -> BoxFuture<'a, Result<String, StreamError>> {
        async move {
            let request = self.client.get_shard_iterator().stream_arn(stream).shard_id(shard);
            let request = match position {
                Position::TrimHorizon => request.shard_iterator_type(ShardIteratorType::TrimHorizon),
                Position::Latest => request.shard_iterator_type(ShardIteratorType::Latest),
                Position::After(seq) => request
                    .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                    .starting_sequence_number(seq),
            };
            let failed = |reason: String| StreamError::Iterator {
                shard: shard.to_owned(),
                position: position.to_string(),
                reason,
            };
            let output = request.send().await.map_err(|e| failed(reason(&e)))?;
            output
                .shard_iterator()
                .map(str::to_owned)
                .ok_or_else(|| failed("the answer has no iterator".to_owned()))
        }
        .boxed()
    }

    fn records<'a>(
        &'a self,
        stream: &'a str,
        shard: &'a str,
        iterator: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Page, StreamError>> {
        async move {
            let limit = i32::try_from(limit.clamp(1, 10_000)).unwrap_or(10_000);
            let output = self
                .client
                .get_records()
                .stream_arn(stream)
                .shard_iterator(iterator)
                .limit(limit)
                .send()
                .await
                .map_err(|e| {
                    let (shard, reason) = (shard.to_owned(), reason(&e));
                    match e.code() {
                        Some("ExpiredIteratorException") => StreamError::IteratorExpired { shard, reason },
                        _ => StreamError::Read { shard, reason },
                    }
                })?;
            let records = output
                .records()
                .iter()
                .map(|record| {
                    let sequence_number = record.sequence_number().to_owned();
                    let data = base64::engine::general_purpose::STANDARD.encode(record.data().as_ref());
                    let mut json = model::delivery::kinesis_record("", &sequence_number, stream);
                    json["kinesis"]["data"] = data.into();
                    json["kinesis"]["partitionKey"] = record.partition_key().into();
                    let created_ms = record
                        .approximate_arrival_timestamp()
                        .and_then(|t| u64::try_from(t.to_millis().ok()?).ok());
                    StreamRecord {
                        sequence_number,
                        created_ms,
                        json: json.to_string(),
                    }
                })
                .collect();
            Ok(Page {
                records,
                next: output.next_shard_iterator().map(str::to_owned),
            })
        }
        .boxed()
    }
}

/// The stream source of `stack`'s tables: each DynamoDB stream through
/// `dynamodb`, and for the tables read from Kinesis their data streams.
pub fn source_for<D: StreamSource + 'static>(
    sdk: &SdkConfig,
    stack: &crate::stack::Stack,
    dynamodb: D,
) -> Box<dyn StreamSource> {
    let streams = stack.kinesis_streams();
    if streams.is_empty() {
        return Box::new(dynamodb);
    }
    Box::new(EitherStreams {
        dynamodb,
        kinesis: KinesisStreams::new(sdk, streams),
    })
}

/// The stream port over both kinds of stream: a table read from Kinesis
/// is read from its data stream, every other from its DynamoDB stream.
#[derive(Debug, Clone)]
pub struct EitherStreams<D> {
    pub dynamodb: D,
    pub kinesis: KinesisStreams,
}

impl<D: StreamSource> StreamSource for EitherStreams<D> {
    fn stream_arn<'a>(&'a self, table: &'a str) -> BoxFuture<'a, Result<String, StreamError>> {
        if self.kinesis.reads(table) {
            self.kinesis.stream_arn(table)
        } else {
            self.dynamodb.stream_arn(table)
        }
    }

    fn shards<'a>(&'a self, stream: &'a str) -> BoxFuture<'a, Result<Vec<ShardInfo>, StreamError>> {
        if is_kinesis_arn(stream) {
            self.kinesis.shards(stream)
        } else {
            self.dynamodb.shards(stream)
        }
    }

    fn iterator<'a>(
        &'a self,
        stream: &'a str,
        shard: &'a str,
        position: &'a Position,
    ) -> BoxFuture<'a, Result<String, StreamError>> {
        if is_kinesis_arn(stream) {
            self.kinesis.iterator(stream, shard, position)
        } else {
            self.dynamodb.iterator(stream, shard, position)
        }
    }

    fn records<'a>(
        &'a self,
        stream: &'a str,
        shard: &'a str,
        iterator: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Page, StreamError>> {
        if is_kinesis_arn(stream) {
            self.kinesis.records(stream, shard, iterator, limit)
        } else {
            self.dynamodb.records(stream, shard, iterator, limit)
        }
    }
}
