//! Test support for runs against the local AWS (a moto server).
//!
//! `scripts/test.sh` starts one moto server per run and exports its address
//! as `STREAMDEX_TEST_ENDPOINT` (with `AWS_ENDPOINT_URL`, a region and dummy
//! credentials). The tests that need it are `#[ignore = "needs
//! STREAMDEX_TEST_ENDPOINT ..."]`, so a plain `cargo test` lists them as
//! ignored instead of passing them unrun; the test script runs them with
//! `--include-ignored`. Without the variable, [`Moto::connect`] panics with
//! a message saying what is missing.
//!
//! One server is shared by every test of the run, and tests run concurrently:
//! each test works on its own tables, named with a [`unique_prefix`] (the
//! config's table names are rewritten with [`prefixed`]). [`Moto::reset`]
//! wipes the whole server, so it is only for a test binary whose tests do not
//! run alongside others.
//!
//! - [`Moto::create_tables`]: the config's source tables (keys S, a
//!   `NEW_AND_OLD_IMAGES` stream, and a `byTarget` GSI on tables with an edge
//!   set) and index tables (`pk`/`sk` S), idempotently.
//! - [`StreamReader`]: reads a table's stream with DescribeStream,
//!   GetShardIterator and GetRecords, remembering where it stopped, and
//!   returns each record as DynamoDB Streams wire JSON (numbers as strings),
//!   with `eventSourceARN` added; [`lambda_event`] wraps records as a Lambda
//!   DynamoDB event payload.
//! - [`Moto::scan`], [`Moto::put`], [`Moto::delete`]: items as model images.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use aws_kit::clock::{Clock, SystemClock};

use anyhow::{anyhow, bail, Context, Result};
use aws_config::{BehaviorVersion, Region};
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection, ProjectionType,
    ScalarAttributeType, StreamSpecification, StreamViewType,
};
use aws_sdk_dynamodbstreams::types::{Record, ShardIteratorType};
use model::{Config, Image};
use stream_indexer::store::dynamo::{to_image, to_item};

/// The variable `scripts/test.sh` sets to the moto server's address.
pub const ENDPOINT_VAR: &str = "STREAMDEX_TEST_ENDPOINT";

/// The name of the GSI created on tables with an edge set, keyed by the sort key.
pub const BY_TARGET_INDEX: &str = "byTarget";

/// SDK clients connected to the run's moto server.
#[derive(Debug, Clone)]
pub struct Moto {
    pub endpoint: String,
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub streams: aws_sdk_dynamodbstreams::Client,
    pub sqs: aws_sdk_sqs::Client,
}

impl Moto {
    /// Clients for the server at `STREAMDEX_TEST_ENDPOINT`.
    ///
    /// # Panics
    ///
    /// When the variable is not set: `test` needs a moto server (run it with
    /// `scripts/test.sh`, which starts one).
    pub async fn connect(test: &str) -> Moto {
        match std::env::var(ENDPOINT_VAR) {
            Ok(endpoint) if !endpoint.trim().is_empty() => Moto::at(endpoint.trim()).await,
            _ => panic!(
                "{test} needs a moto server: {ENDPOINT_VAR} is not set; run it with scripts/test.sh, \
                 which starts one"
            ),
        }
    }

    /// Clients for the server at `endpoint` (region from `AWS_REGION`, else
    /// us-east-1; dummy credentials; bounded timeouts).
    pub async fn at(endpoint: &str) -> Moto {
        let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".to_owned());
        let timeouts = aws_config::timeout::TimeoutConfig::builder()
            .connect_timeout(Duration::from_secs(5))
            .operation_timeout(Duration::from_secs(120))
            .build();
        let config = aws_config::defaults(BehaviorVersion::latest())
            .endpoint_url(endpoint)
            .region(Region::new(region))
            .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
                "test",
                "test",
                None,
                None,
                "streamdex-tests",
            ))
            .timeout_config(timeouts)
            .load()
            .await;
        Moto {
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            dynamodb: aws_sdk_dynamodb::Client::new(&config),
            streams: aws_sdk_dynamodbstreams::Client::new(&config),
            sqs: aws_sdk_sqs::Client::new(&config),
        }
    }

    /// Wipes every table, stream and queue of the server (`POST /moto-api/reset`).
    /// Only for tests that do not share the server with concurrent tests.
    pub async fn reset(&self) -> Result<()> {
        let endpoint = self.endpoint.clone();
        tokio::task::spawn_blocking(move || post(&endpoint, "/moto-api/reset"))
            .await
            .context("reset task")?
    }

    /// Creates the config's source tables and index tables, leaving tables
    /// that already exist as they are.
    pub async fn create_tables(&self, config: &Config) -> Result<()> {
        for table in &config.tables {
            let mut keys = vec![(table.partition_key.as_str(), KeyType::Hash)];
            keys.extend(table.sort_key.as_deref().map(|sk| (sk, KeyType::Range)));
            let mut request = self
                .dynamodb
                .create_table()
                .table_name(&table.name)
                .billing_mode(BillingMode::PayPerRequest)
                .stream_specification(
                    StreamSpecification::builder()
                        .stream_enabled(true)
                        .stream_view_type(StreamViewType::NewAndOldImages)
                        .build()?,
                );
            for (name, ty) in &keys {
                request = request
                    .key_schema(
                        KeySchemaElement::builder()
                            .attribute_name(*name)
                            .key_type(ty.clone())
                            .build()?,
                    )
                    .attribute_definitions(
                        AttributeDefinition::builder()
                            .attribute_name(*name)
                            .attribute_type(ScalarAttributeType::S)
                            .build()?,
                    );
            }
            if let (Some(sk), Some(_)) = (&table.sort_key, config.edge_set(&table.name)) {
                request = request.global_secondary_indexes(
                    GlobalSecondaryIndex::builder()
                        .index_name(BY_TARGET_INDEX)
                        .key_schema(
                            KeySchemaElement::builder()
                                .attribute_name(sk)
                                .key_type(KeyType::Hash)
                                .build()?,
                        )
                        .key_schema(
                            KeySchemaElement::builder()
                                .attribute_name(&table.partition_key)
                                .key_type(KeyType::Range)
                                .build()?,
                        )
                        .projection(Projection::builder().projection_type(ProjectionType::All).build())
                        .build()?,
                );
            }
            created(request.send().await, &table.name)?;
        }
        for index in &config.indexes {
            let mut request = self
                .dynamodb
                .create_table()
                .table_name(&index.table)
                .billing_mode(BillingMode::PayPerRequest);
            for (name, ty) in [(&index.partition_key, KeyType::Hash), (&index.sort_key, KeyType::Range)] {
                request = request
                    .key_schema(KeySchemaElement::builder().attribute_name(name).key_type(ty).build()?)
                    .attribute_definitions(
                        AttributeDefinition::builder()
                            .attribute_name(name)
                            .attribute_type(ScalarAttributeType::S)
                            .build()?,
                    );
            }
            created(request.send().await, &index.table)?;
        }
        Ok(())
    }

    /// Every item of a table (a Scan, all pages, consistent).
    pub async fn scan(&self, table: &str) -> Result<Vec<Image>> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let output = self
                .dynamodb
                .scan()
                .table_name(table)
                .consistent_read(true)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| anyhow!("Scan of {table}: {}", DisplayErrorContext(&e)))?;
            for item in output.items.unwrap_or_default() {
                items.push(to_image(item).map_err(|e| anyhow!("Scan of {table}: {e}"))?);
            }
            match output.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(items),
            }
        }
    }

    /// PutItem.
    pub async fn put(&self, table: &str, item: &Image) -> Result<()> {
        self.dynamodb
            .put_item()
            .table_name(table)
            .set_item(Some(to_item(item)))
            .send()
            .await
            .map_err(|e| anyhow!("PutItem into {table}: {}", DisplayErrorContext(&e)))?;
        Ok(())
    }

    /// DeleteItem.
    pub async fn delete(&self, table: &str, key: &Image) -> Result<()> {
        self.dynamodb
            .delete_item()
            .table_name(table)
            .set_key(Some(to_item(key)))
            .send()
            .await
            .map_err(|e| anyhow!("DeleteItem from {table}: {}", DisplayErrorContext(&e)))?;
        Ok(())
    }

    /// GetItem (consistent).
    pub async fn get(&self, table: &str, key: &Image) -> Result<Option<Image>> {
        let output = self
            .dynamodb
            .get_item()
            .table_name(table)
            .set_key(Some(to_item(key)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| anyhow!("GetItem from {table}: {}", DisplayErrorContext(&e)))?;
        output
            .item
            .map(to_image)
            .transpose()
            .map_err(|e| anyhow!("GetItem from {table}: {e}"))
    }
}

/// Accepts a CreateTable result, or the error saying the table already exists.
fn created<T, E>(
    result: Result<T, aws_sdk_dynamodb::error::SdkError<E, aws_sdk_dynamodb::config::http::HttpResponse>>,
    table: &str,
) -> Result<()>
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match result {
        Ok(_) => Ok(()),
        Err(e) if e.code() == Some("ResourceInUseException") => Ok(()),
        Err(e) => Err(anyhow!("CreateTable {table}: {}", DisplayErrorContext(&e))),
    }
}

/// A POST without a body to `endpoint` (`http://HOST:PORT`), expecting a 2xx.
fn post(endpoint: &str, path: &str) -> Result<()> {
    let authority = endpoint
        .strip_prefix("http://")
        .ok_or_else(|| anyhow!("{ENDPOINT_VAR} must be an http:// address, got {endpoint}"))?
        .trim_end_matches('/');
    let mut stream = TcpStream::connect(authority).with_context(|| format!("connecting to {authority}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status = response.split_whitespace().nth(1).unwrap_or_default();
    if !status.starts_with('2') {
        bail!(
            "POST {endpoint}{path}: {}",
            response.lines().next().unwrap_or("no response")
        );
    }
    Ok(())
}

/// A table-name prefix no other test of this or an earlier run uses:
/// `NAME-PID-N-TIME-` with NAME cut to 40 characters of `[A-Za-z0-9_.-]`.
pub fn unique_prefix(name: &str) -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    let time = SystemClock.now_ms() % 100_000_000;
    format!(
        "{clean}-{}-{}-{time}-",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The example config's text with every table and the bus prefixed: the
/// file a command-line test passes, equal to [`prefixed`] of the example.
pub fn prefixed_toml(prefix: &str) -> String {
    let mut text = model::config::EXAMPLE_CONFIG.to_owned();
    for name in ["records", "issues", "layers"] {
        text = text.replace(&format!("[table.{name}]"), &format!("[table.{prefix}{name}]"));
        text = text.replace(&format!("table = \"{name}\""), &format!("table = \"{prefix}{name}\""));
    }
    text = text.replace(
        "table = \"IssueAttribIndex\"",
        &format!("table = \"{prefix}IssueAttribIndex\""),
    );
    text.replace("bus = \"streamdex\"", &format!("bus = \"{prefix}streamdex\""))
}

/// `config` with every table name (source and index tables) and the event
/// bus name prefixed (queue names of `streamdex up` derive from the bus).
pub fn prefixed(config: &Config, prefix: &str) -> Config {
    let mut config = config.clone();
    let p = |name: &mut String| *name = format!("{prefix}{name}");
    config.tables.iter_mut().for_each(|t| p(&mut t.name));
    config.edge_sets.iter_mut().for_each(|e| p(&mut e.table));
    for index in &mut config.indexes {
        p(&mut index.table);
        p(&mut index.source.table);
    }
    config.routes.iter_mut().for_each(|r| p(&mut r.table));
    p(&mut config.events.bus);
    config
}

// ---------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------

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

    #[tokio::test]
    #[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
    async fn plain_http_posts_reach_moto() {
        let endpoint = std::env::var(ENDPOINT_VAR)
            .unwrap_or_else(|_| panic!("{ENDPOINT_VAR} is not set: run this test with scripts/test.sh"));
        // Seeding moto's random ids is harmless to the tests running alongside (a reset is not).
        post(&endpoint, "/moto-api/seed?a=42").unwrap();
        assert!(post(&endpoint, "/moto-api/no-such-thing").is_err());
        assert!(post("https://example.invalid", "/").is_err());
    }

    #[test]
    fn prefixes_are_unique_valid_table_names() {
        let a = unique_prefix("a test/with spaces");
        let b = unique_prefix("a test/with spaces");
        assert_ne!(a, b);
        assert!(a.starts_with("a-test-with-spaces-"), "{a}");
        assert!(
            a.bytes().all(|c| c.is_ascii_alphanumeric() || b"_.-".contains(&c)),
            "{a}"
        );
        let config = model::config::parse(model::config::EXAMPLE_CONFIG, "streamdex.example.toml").unwrap();
        let renamed = prefixed(&config, "p-");
        assert!(renamed.tables.iter().all(|t| t.name.starts_with("p-")));
        assert_eq!(renamed.edge_sets[0].table, "p-records");
        assert_eq!(renamed.indexes[0].source.table, "p-issues");
        assert_eq!(renamed.indexes[0].table, "p-IssueAttribIndex");
    }

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
