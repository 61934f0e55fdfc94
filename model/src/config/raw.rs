//! The config as written: serde structs mirroring the TOML, with the spans
//! that validation needs to point at. Every struct refuses unknown keys.
//!
//! Each section (`[events]`, `[alarms]`, one `[table.NAME]`, one `[[edge_set]]`,
//! one `[[index]]`, one `[[route]]`) is deserialized on its own, so a bad
//! key in one does not hide the problems of the others. Integers are read as
//! `i64` (TOML's integer) and range-checked by validation.

use serde::Deserialize;
use toml::Spanned;

pub(crate) type Text = Spanned<String>;

/// `[events]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEvents {
    pub source: Option<Text>,
    pub bus: Option<Text>,
    pub max_request_bytes: Option<Spanned<i64>>,
    pub ledger_table: Option<Text>,
}

/// `[alarms]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAlarms {
    pub iterator_age_warn_seconds: Option<Spanned<i64>>,
    pub iterator_age_page_seconds: Option<Spanned<i64>>,
}

/// `[pipeline]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPipeline {
    pub tombstone_ttl_hours: Option<Spanned<i64>>,
}

/// `[table.NAME]` (the name is the key).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTable {
    pub partition_key: Text,
    pub sort_key: Option<Text>,
    pub ttl_attribute: Option<Text>,
    pub stream: Option<Text>,
    pub precision: Option<Text>,
    pub retention_hours: Option<Spanned<i64>>,
}

/// `[[edge_set]]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEdgeSet {
    pub table: Text,
    pub attribute: Text,
    pub include: Spanned<Vec<Text>>,
    pub member: Spanned<Vec<Text>>,
    pub max_members: Option<Spanned<i64>>,
    pub complete_attribute: Option<Text>,
    pub target_index: Option<Text>,
}

/// `[[index]]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawIndex {
    pub name: Text,
    pub source: Spanned<RawSource>,
    pub table: Text,
    pub partition_key: Option<Text>,
    pub sort_key: Option<Text>,
    pub for_each: Option<Text>,
    pub partition: Text,
    #[serde(default)]
    pub sort: Vec<Spanned<RawSortColumn>>,
    #[serde(default)]
    pub project: Vec<Text>,
    pub shards: Option<Spanned<i64>>,
}

/// `source = { table = ..., key_prefix = ... }` of an index.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSource {
    pub table: Text,
    pub key_prefix: Option<Text>,
}

/// One `{ value = ..., type = ..., order = ..., nulls = ... }` of an index's `sort`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSortColumn {
    pub value: Text,
    #[serde(rename = "type")]
    pub ty: Text,
    pub order: Option<Text>,
    pub nulls: Option<Text>,
}

/// `[[route]]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRoute {
    pub table: Text,
    pub detail_type: Text,
    pub events: Spanned<Vec<Text>>,
    pub key_prefix: Option<Text>,
    pub items: Option<Text>,
    pub reap: Option<Spanned<bool>>,
}
