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
use model::{Config, Image};
use stream_indexer::store::dynamo::{to_image, to_item};

mod stream;
pub use stream::{lambda_event, wire_record, StreamReader, StreamRecord};

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
}
