//! Local TTL (`streamdex run --local-ttl`): the runner acts as DynamoDB's
//! TTL service for the tables of the config that have a `ttl_attribute`,
//! which a local endpoint never expires by itself.
//!
//! Each sweep Scans those tables for items whose TTL attribute is a Number
//! of epoch seconds at or before now and not more than five years before
//! ([`model::ttl::verdict`]; a Scan filter narrows, the verdict decides)
//! and notes each in [`Expiries`]; the next sweep, once the note is saved
//! with the checkpoints, deletes it with a condition that its TTL is still
//! the value read (an item whose TTL was moved meanwhile stays). Its REMOVE
//! record then reaches the consumers as a TTL deletion (see
//! [`super::expiry`]). AWS's TTL service deletes within days of expiry;
//! this one within two sweep intervals.

use std::sync::Arc;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::AttributeValue;
use model::ttl::{self, Verdict};
use model::{Config, Fault, Value};

use super::expiry::{Expiries, Expiry};
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
    /// Whether it noted a deletion (made at the next sweep).
    pub noted: bool,
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

    /// Deletes what the last sweep noted, then notes what has expired at `now_ms`.
    pub async fn sweep(&self, now_ms: u64) -> Swept {
        let mut swept = Swept::default();
        for expiry in self.expiries.pending() {
            self.delete(&expiry, &mut swept).await;
        }
        let now_s = now_ms / 1000;
        for table in &self.tables {
            match self.expired(table, now_s).await {
                Ok(items) => {
                    for (key, ttl) in items {
                        if let Some(key) = key_parts(&key) {
                            let noted = self.expiries.add(Expiry {
                                table: table.name.clone(),
                                key,
                                attribute: table.attribute.clone(),
                                ttl,
                                noted_ms: now_ms,
                                deleted: false,
                                sequence_number: None,
                            });
                            // Delete at the next sweep, once the note is saved.
                            swept.noted |= noted;
                        }
                    }
                }
                Err(fault) => swept.events.push(RunEvent::Problem {
                    context: format!("local TTL of table {}", table.name),
                    error: fault.message().to_owned(),
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
    ) -> Result<Vec<(std::collections::HashMap<String, AttributeValue>, String)>, Fault> {
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
                .map_err(|e| aws_kit::error::sdk_fault("Scan", e))?;
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

    async fn delete(&self, expiry: &Expiry, swept: &mut Swept) {
        let key = expiry
            .key
            .iter()
            .map(|(name, kind, value)| Ok((name.clone(), attribute(kind, value)?)))
            .collect::<Result<std::collections::HashMap<_, _>, NotedKeyError>>();
        let shown = expiry.key_text().replace('\n', ", ");
        let key = match key {
            Ok(key) => key,
            Err(e) => {
                // A note from a hand-edited checkpoints file: nothing to delete.
                self.expiries.made(expiry);
                swept.events.push(RunEvent::Problem {
                    context: format!("local TTL of table {}", expiry.table),
                    error: format!("the noted key {shown} is not usable ({e}); skipped"),
                });
                return;
            }
        };
        let deleted = self
            .dynamodb
            .delete_item()
            .table_name(&expiry.table)
            .set_key(Some(key))
            .condition_expression("#ttl = :ttl")
            .expression_attribute_names("#ttl", &expiry.attribute)
            .expression_attribute_values(":ttl", AttributeValue::N(expiry.ttl.clone()))
            .send()
            .await;
        match deleted {
            Ok(_) => {
                self.expiries.made(expiry);
                swept.deleted += 1;
                swept.events.push(RunEvent::Expired(format!(
                    "local TTL: deleted {shown} of {} ({} {} has passed)",
                    expiry.table, expiry.attribute, expiry.ttl
                )));
            }
            // Its TTL moved, or it is gone (deleted before a restart, say): nothing to do.
            Err(SdkError::ServiceError(e)) if e.err().is_conditional_check_failed_exception() => {
                self.expiries.made(expiry);
            }
            Err(e) => swept.events.push(RunEvent::Problem {
                context: format!("local TTL of table {}", expiry.table),
                error: format!(
                    "DeleteItem {shown}: {}; tried again at the next sweep",
                    aws_kit::error::sdk_message(&e)
                ),
            }),
        }
    }
}

/// An item's key attributes as (name, type, value as DynamoDB JSON spells
/// it); `None` for a key attribute that is not S, N or B.
fn key_parts(key: &std::collections::HashMap<String, AttributeValue>) -> Option<Vec<(String, String, String)>> {
    use base64::Engine as _;
    key.iter()
        .map(|(name, value)| {
            let (kind, text) = match value {
                AttributeValue::S(s) => ("S", s.clone()),
                AttributeValue::N(n) => ("N", n.clone()),
                AttributeValue::B(b) => ("B", base64::engine::general_purpose::STANDARD.encode(b.as_ref())),
                _ => return None,
            };
            Some((name.clone(), kind.to_owned(), text))
        })
        .collect()
}

/// Why a noted key attribute (from the checkpoints file) cannot be sent back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotedKeyError {
    #[error("binary value: {0}")]
    Binary(#[source] base64::DecodeError),
    #[error("type `{kind}` is not a key type")]
    Type { kind: String },
}

/// A key attribute back from its (type, text).
fn attribute(kind: &str, value: &str) -> Result<AttributeValue, NotedKeyError> {
    use base64::Engine as _;
    match kind {
        "S" => Ok(AttributeValue::S(value.to_owned())),
        "N" => Ok(AttributeValue::N(value.to_owned())),
        "B" => base64::engine::general_purpose::STANDARD
            .decode(value)
            .map(|b| AttributeValue::B(b.into()))
            .map_err(NotedKeyError::Binary),
        other => Err(NotedKeyError::Type { kind: other.to_owned() }),
    }
}
