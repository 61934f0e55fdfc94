//! Local TTL (`streamdex run --local-ttl`): the runner acts as DynamoDB's
//! TTL service for the tables of the config that have a `ttl_attribute`,
//! which a local endpoint never expires by itself.
//!
//! Each sweep Scans those tables for items whose TTL attribute is a Number
//! of epoch seconds at or before now and not more than five years before
//! ([`model::ttl::verdict`]; a Scan filter narrows, the verdict decides),
//! notes each in [`Expiries`] and deletes it with a condition that its TTL
//! is still the value read (an item whose TTL was moved meanwhile stays).
//! Its REMOVE record then reaches the consumers as a TTL deletion (see
//! [`super::expiry`]). AWS's TTL service deletes within days of expiry;
//! this one within a sweep interval.

use std::sync::Arc;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::AttributeValue;
use model::ttl::{self, Verdict};
use model::{Config, Value};

use super::expiry::{key_text, Expiries, Expiry};
use super::RunEvent;

/// At most this many Scan pages per table and sweep (the rest waits for the next sweep).
const MAX_PAGES: usize = 100;

/// A table whose items expire.
#[derive(Debug, Clone)]
struct TtlTable {
    name: String,
    attribute: String,
    key: Vec<String>,
}

/// The local TTL service. See the module doc.
pub struct Sweeper {
    dynamodb: aws_sdk_dynamodb::Client,
    tables: Vec<TtlTable>,
    expiries: Arc<Expiries>,
}

/// What one sweep did.
#[derive(Debug, Default)]
pub struct Swept {
    pub deleted: usize,
    pub events: Vec<RunEvent>,
}

impl Sweeper {
    /// The sweeper of `config`'s tables with a TTL attribute (`None`: there are none).
    pub fn new(dynamodb: aws_sdk_dynamodb::Client, config: &Config, expiries: Arc<Expiries>) -> Option<Sweeper> {
        let tables: Vec<TtlTable> = config
            .tables
            .iter()
            .filter_map(|t| {
                t.ttl_attribute.as_ref().map(|attribute| TtlTable {
                    name: t.name.clone(),
                    attribute: attribute.clone(),
                    key: t.primary_key().into_iter().map(str::to_owned).collect(),
                })
            })
            .collect();
        (!tables.is_empty()).then_some(Sweeper {
            dynamodb,
            tables,
            expiries,
        })
    }

    /// Deletes what has expired at `now_ms`.
    pub async fn sweep(&self, now_ms: u64) -> Swept {
        let mut swept = Swept::default();
        let now_s = now_ms / 1000;
        for table in &self.tables {
            match self.expired(table, now_s).await {
                Ok(items) => {
                    for (key, ttl) in items {
                        self.delete(table, key, ttl, now_ms, &mut swept).await;
                    }
                }
                Err(error) => swept.events.push(RunEvent::Problem {
                    context: format!("local TTL of table {}", table.name),
                    error,
                }),
            }
        }
        swept
    }

    /// The keys and TTL values (N text) of the items of `table` expired at `now_s`.
    async fn expired(
        &self,
        table: &TtlTable,
        now_s: u64,
    ) -> Result<Vec<(std::collections::HashMap<String, AttributeValue>, String)>, String> {
        let mut found = Vec::new();
        let mut start = None;
        for _ in 0..MAX_PAGES {
            let mut scan = self
                .dynamodb
                .scan()
                .table_name(&table.name)
                // The type test first: moto answers HTTP 500 to comparing a String TTL with a
                // Number (DynamoDB: false), and evaluates AND from the left.
                .filter_expression("attribute_type(#ttl, :number) AND #ttl BETWEEN :floor AND :now")
                .expression_attribute_names("#ttl", &table.attribute)
                .expression_attribute_values(":number", AttributeValue::S("N".to_owned()))
                .expression_attribute_values(
                    ":floor",
                    AttributeValue::N(now_s.saturating_sub(ttl::MAX_PAST_SECONDS).to_string()),
                )
                .expression_attribute_values(":now", AttributeValue::N(now_s.to_string()))
                .set_exclusive_start_key(start.take());
            let mut projection = vec!["#ttl".to_owned()];
            for (i, name) in table.key.iter().enumerate() {
                scan = scan.expression_attribute_names(format!("#k{i}"), name);
                projection.push(format!("#k{i}"));
            }
            let output = scan
                .projection_expression(projection.join(", "))
                .send()
                .await
                .map_err(|e| format!("Scan: {}", aws_kit::error::sdk_message(&e)))?;
            for mut item in output.items.unwrap_or_default() {
                let Some(AttributeValue::N(value)) = item.remove(&table.attribute) else {
                    continue;
                };
                if ttl::verdict(Some(&Value::N(value.clone())), now_s) == Verdict::Expired {
                    found.push((item, value));
                }
            }
            match output.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => break,
            }
        }
        Ok(found)
    }

    async fn delete(
        &self,
        table: &TtlTable,
        key: std::collections::HashMap<String, AttributeValue>,
        ttl: String,
        now_ms: u64,
        swept: &mut Swept,
    ) {
        let Some(text) = key_of(&key) else {
            return;
        };
        self.expiries.add(Expiry {
            table: table.name.clone(),
            key: text.clone(),
            attribute: table.attribute.clone(),
            ttl: ttl.clone(),
            deleted_ms: now_ms,
            sequence_number: None,
        });
        let deleted = self
            .dynamodb
            .delete_item()
            .table_name(&table.name)
            .set_key(Some(key))
            .condition_expression("#ttl = :ttl")
            .expression_attribute_names("#ttl", &table.attribute)
            .expression_attribute_values(":ttl", AttributeValue::N(ttl.clone()))
            .send()
            .await;
        let shown = text.replace('\n', ", ");
        match deleted {
            Ok(_) => {
                swept.deleted += 1;
                swept.events.push(RunEvent::Expired(format!(
                    "local TTL: deleted {shown} of {} ({} {ttl} has passed)",
                    table.name, table.attribute
                )));
            }
            Err(e) => {
                self.expiries.remove(&table.name, &text, &ttl);
                if !matches!(&e, SdkError::ServiceError(s) if s.err().is_conditional_check_failed_exception()) {
                    swept.events.push(RunEvent::Problem {
                        context: format!("local TTL of table {}", table.name),
                        error: format!("DeleteItem {shown}: {}", aws_kit::error::sdk_message(&e)),
                    });
                }
            }
        }
    }
}

/// The key of an item as [`key_text`]; `None` for a key attribute that is not S, N or B.
fn key_of(key: &std::collections::HashMap<String, AttributeValue>) -> Option<String> {
    use base64::Engine as _;
    let mut parts: Vec<(String, &str, String)> = Vec::new();
    for (name, value) in key {
        let (kind, text) = match value {
            AttributeValue::S(s) => ("S", s.clone()),
            AttributeValue::N(n) => ("N", n.clone()),
            AttributeValue::B(b) => ("B", base64::engine::general_purpose::STANDARD.encode(b.as_ref())),
            _ => return None,
        };
        parts.push((name.clone(), kind, text));
    }
    Some(key_text(parts.iter().map(|(n, k, v)| (n.as_str(), *k, v.as_str()))))
}
