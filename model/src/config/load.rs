//! Loading a config: TOML text → raw sections → a validated [`Config`], or
//! every problem found.
//!
//! Three stages, each reporting all it finds:
//! 1. TOML syntax (`toml`'s own errors, with their position);
//! 2. each section deserialized on its own into its raw struct (unknown keys,
//!    missing keys, wrong types: the first such problem of each section);
//! 3. semantic validation of everything that deserialized: references between
//!    sections, names, ranges, templates, reserved attributes.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;

use serde::de::DeserializeOwned;
use toml::de::{DeTable, DeValue, ValueDeserializer};
use toml::Spanned;

use super::error::{line_column, ConfigError, Problem};
use super::raw::{RawAlarms, RawEdgeSet, RawEvents, RawIndex, RawPipeline, RawRoute, RawSortColumn, RawTable, Text};
use super::{
    AlarmConfig, ChangeSource, Config, EdgeSetConfig, EventsConfig, IndexConfig, KinesisSource, PipelineConfig,
    Precision, RouteConfig, RouteEvent, RouteItems, SortColumn, SourceConfig, TableConfig, Template, ValueRef,
};
use crate::sortkey::{Column, ColumnType, Direction, Nulls};

mod indexes;
mod names;
mod routes;
mod settings;
mod tables;

use names::{element_context, is_name_char, join_key, key_path_at, table_context};

/// Defaults of optional keys.
pub mod defaults {
    pub const EVENT_SOURCE: &str = "streamdex";
    pub const EVENT_BUS: &str = "streamdex";
    /// `[events] ledger_table`.
    pub const LEDGER_TABLE: &str = "streamdex-ledger";
    pub const MAX_REQUEST_BYTES: usize = 256 * 1024;
    pub const ITERATOR_AGE_WARN_SECONDS: u64 = 300;
    pub const ITERATOR_AGE_PAGE_SECONDS: u64 = 3600;
    /// `[pipeline] tombstone_ttl_hours`: the stream's 24 h and a day to redrive.
    pub const TOMBSTONE_TTL_HOURS: u32 = 48;
    /// `[table.NAME] retention_hours` of a Kinesis data stream: Kinesis's own default.
    pub const KINESIS_RETENTION_HOURS: u32 = 24;
    pub const MAX_MEMBERS: usize = 2000;
    pub const COMPLETE_ATTRIBUTE: &str = "edgesComplete";
    pub const TARGET_INDEX: &str = "byTarget";
    pub const INDEX_PARTITION_KEY: &str = "pk";
    pub const INDEX_SORT_KEY: &str = "sk";
    /// `[[index]] shards`: one partition per rendered value, as without sharding.
    pub const INDEX_SHARDS: u32 = 1;
}

/// Limits checked by validation.
pub mod limits {
    /// `[[edge_set]] max_members`.
    pub const MAX_MEMBERS: std::ops::RangeInclusive<i64> = 1..=100_000;
    /// `[events] max_request_bytes`: at least one small entry, at most 1 MiB.
    pub const MAX_REQUEST_BYTES: std::ops::RangeInclusive<i64> = 1024..=1024 * 1024;
    /// Alarm thresholds stay under the stream's 24 h retention.
    pub const STREAM_RETENTION_SECONDS: i64 = 24 * 60 * 60;
    /// DynamoDB attribute names of key attributes (bytes).
    pub const ATTRIBUTE_NAME_BYTES: usize = 255;
    /// DynamoDB table names (characters of `[a-zA-Z0-9_.-]`).
    pub const TABLE_NAME_CHARS: std::ops::RangeInclusive<usize> = 3..=255;
    /// Index names (characters of `[a-zA-Z0-9_.-]`).
    pub const INDEX_NAME_CHARS: std::ops::RangeInclusive<usize> = 1..=64;
    /// `[[index]] shards`: partitions each rendered partition value is spread over.
    pub const INDEX_SHARDS: std::ops::RangeInclusive<i64> = 1..=256;
    /// `[pipeline] tombstone_ttl_hours`: at least the stream's 24 h (a record
    /// still in the stream must find the tombstone), at most a year.
    pub const TOMBSTONE_TTL_HOURS: std::ops::RangeInclusive<i64> = 24..=8760;
    /// `[table.NAME] retention_hours`: what Kinesis allows.
    pub const KINESIS_RETENTION_HOURS: std::ops::RangeInclusive<i64> = 24..=8760;
    /// EventBridge `Source` and bus names.
    pub const EVENT_NAME_CHARS: usize = 256;
}

/// Reads and validates the config file at `path`. The one file read of this
/// crate; everything else is [`parse`].
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let bytes = std::fs::read(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let file = path.display().to_string();
    match std::str::from_utf8(&bytes) {
        Ok(text) => parse(text, &file),
        Err(e) => {
            let valid = String::from_utf8_lossy(&bytes[..e.valid_up_to()]);
            let (line, column) = line_column(&valid, valid.len());
            Err(ConfigError::Invalid {
                problems: vec![Problem {
                    file,
                    line,
                    column,
                    key: String::new(),
                    reason: "the file is not valid UTF-8".to_string(),
                }],
            })
        }
    }
}

/// Parses and validates config text; `file_name` only labels the problems.
pub fn parse(text: &str, file_name: &str) -> Result<Config, ConfigError> {
    let mut checker = Checker {
        text,
        file: file_name,
        problems: Vec::new(),
    };
    let (root, syntax_errors) = DeTable::parse_recoverable(text);
    if !syntax_errors.is_empty() {
        for e in &syntax_errors {
            checker.toml_error(e, 0, "");
        }
        return Err(checker.into_error());
    }
    let raw = checker.split(root.get_ref());
    let config = checker.validate(raw);
    if checker.problems.is_empty() {
        Ok(config)
    } else {
        Err(checker.into_error())
    }
}

/// The sections as deserialized. Sections that failed to deserialize are
/// absent, except that what validation of the others needs is kept.
#[derive(Default)]
struct RawConfig {
    events: Option<RawEvents>,
    alarms: Option<RawAlarms>,
    pipeline: Option<RawPipeline>,
    /// Offset of the `table` key, if present.
    table_key: Option<usize>,
    /// `table` is present but not a table (reported already).
    table_malformed: bool,
    /// `[table.NAME]`, with `None` when the body failed to deserialize.
    tables: Vec<(Text, Option<RawTable>)>,
    edge_sets: Vec<RawEdgeSet>,
    /// Tables named by edge sets that failed to deserialize.
    broken_edge_set_tables: Vec<String>,
    indexes: Vec<RawIndex>,
    routes: Vec<RawRoute>,
}

const TOP_LEVEL_KEYS: &str = "`events`, `alarms`, `pipeline`, `table`, `edge_set`, `index`, `route`";

struct Checker<'a> {
    text: &'a str,
    file: &'a str,
    /// (byte offset, problem), sorted by offset at the end.
    problems: Vec<(usize, Problem)>,
}

/// A declared table, as far as it could be read.
struct TableInfo {
    name: String,
    /// `None` when its body failed to deserialize.
    config: Option<TableConfig>,
}

/// The pipeline-owned attributes of a table with an edge set.
struct EdgeSetInfo {
    table: String,
    attribute: String,
    complete_attribute: String,
    line: usize,
}

impl Checker<'_> {
    fn problem(&mut self, offset: usize, key: impl Into<String>, reason: impl Into<String>) {
        let (line, column) = line_column(self.text, offset);
        self.problems.push((
            offset,
            Problem {
                file: self.file.to_string(),
                line,
                column,
                key: key.into(),
                reason: reason.into(),
            },
        ));
    }

    fn line(&self, offset: usize) -> usize {
        line_column(self.text, offset).0
    }

    fn toml_error(&mut self, e: &toml::de::Error, fallback: usize, key: &str) {
        let offset = e.span().map_or(fallback, |s| s.start);
        self.problem(offset, key, e.message().trim_end());
    }

    fn into_error(mut self) -> ConfigError {
        self.problems.sort_by_key(|(offset, _)| *offset);
        ConfigError::Invalid {
            problems: self.problems.into_iter().map(|(_, p)| p).collect(),
        }
    }

    /// Deserializes one section; on failure records the problem (with the key
    /// path under `context`) and returns `None`.
    fn section<T: DeserializeOwned>(&mut self, value: &Spanned<DeValue<'_>>, context: &str) -> Option<T> {
        match T::deserialize(ValueDeserializer::from(value.clone())) {
            Ok(v) => Some(v),
            Err(e) => {
                let offset = e.span().map_or(value.span().start, |s| s.start);
                let path = key_path_at(value, offset);
                self.toml_error(&e, value.span().start, &join_key(context, &path));
                None
            }
        }
    }

    /// Splits the document into its sections and deserializes each.
    fn split(&mut self, root: &DeTable<'_>) -> RawConfig {
        let mut raw = RawConfig::default();
        for (key, value) in root.iter() {
            let name: &str = key.get_ref();
            match name {
                "events" => raw.events = self.section(value, "[events]"),
                "alarms" => raw.alarms = self.section(value, "[alarms]"),
                "pipeline" => raw.pipeline = self.section(value, "[pipeline]"),
                "table" => {
                    raw.table_key = Some(key.span().start);
                    let Some(tables) = value.get_ref().as_table() else {
                        raw.table_malformed = true;
                        self.problem(
                            value.span().start,
                            "table",
                            "`table` must hold one table per source table: write [table.NAME]",
                        );
                        continue;
                    };
                    for (table_name, body) in tables.iter() {
                        let table_name = Spanned::new(table_name.span(), table_name.get_ref().to_string());
                        let context = table_context(table_name.get_ref());
                        let parsed = if body.get_ref().as_table().is_some() {
                            self.section(body, &context)
                        } else {
                            self.problem(
                                table_name.span().start,
                                format!("table.{}", table_name.get_ref()),
                                "not a table: declare each source table as [table.NAME] with its keys",
                            );
                            None
                        };
                        raw.tables.push((table_name, parsed));
                    }
                }
                "edge_set" | "index" | "route" => {
                    let Some(elements) = value.get_ref().as_array() else {
                        self.problem(
                            key.span().start,
                            name,
                            format!("`{name}` must be an array of tables: write [[{name}]]"),
                        );
                        continue;
                    };
                    for (i, element) in elements.iter().enumerate() {
                        let context = element_context(name, element.get_ref(), i);
                        match name {
                            "edge_set" => match self.section(element, &context) {
                                Some(e) => raw.edge_sets.push(e),
                                None => {
                                    let table = element.get_ref().get("table").and_then(|t| t.get_ref().as_str());
                                    if let Some(table) = table {
                                        raw.broken_edge_set_tables.push(table.to_string());
                                    }
                                }
                            },
                            "index" => raw.indexes.extend(self.section(element, &context)),
                            _ => raw.routes.extend(self.section(element, &context)),
                        }
                    }
                }
                other => self.problem(
                    key.span().start,
                    other,
                    format!("unknown top-level key `{other}`, expected one of {TOP_LEVEL_KEYS}"),
                ),
            }
        }
        // Document order (the map is sorted by name).
        raw.tables.sort_by_key(|(name, _)| name.span().start);
        raw
    }

    fn validate(&mut self, raw: RawConfig) -> Config {
        let events = self.events(raw.events);
        let alarms = self.alarms(raw.alarms);
        let pipeline = self.pipeline(raw.pipeline);
        let tables = self.tables(raw.table_key, raw.table_malformed, &raw.tables, &pipeline);
        let (edge_sets, edge_set_infos) = self.edge_sets(raw.edge_sets, &tables);
        let indexes = self.indexes(raw.indexes, &tables, &edge_set_infos);
        let routes = self.routes(raw.routes, &tables, &edge_set_infos, &raw.broken_edge_set_tables);
        Config {
            tables: tables.into_iter().filter_map(|t| t.config).collect(),
            edge_sets,
            indexes,
            events,
            routes,
            alarms,
            pipeline,
        }
    }

    /// An attribute name: non-empty, at most 255 bytes. Reports and returns
    /// `false` otherwise.
    pub(super) fn attribute(&mut self, name: &Text, key: &str) -> bool {
        let n = name.get_ref();
        let reason = if n.is_empty() {
            "empty attribute name".to_string()
        } else if n.len() > limits::ATTRIBUTE_NAME_BYTES {
            format!("attribute name longer than {} bytes", limits::ATTRIBUTE_NAME_BYTES)
        } else if crate::version::RESERVED_ATTRIBUTES.contains(&n.as_str()) {
            format!("\"{n}\" is reserved: the pipeline keeps its versions of derived data under that name")
        } else if n.starts_with(crate::version::MEMBER_VERSION_PREFIX) {
            format!(
                "\"{n}\" is reserved: the pipeline keeps its edge-set members' versions under names starting with \"{}\"",
                crate::version::MEMBER_VERSION_PREFIX
            )
        } else {
            return true;
        };
        self.problem(name.span().start, key, reason);
        false
    }

    pub(super) fn key_with_default(&mut self, raw: &Option<Text>, default: &str, key: &str) -> String {
        match raw {
            Some(name) => {
                self.attribute(name, key);
                name.get_ref().clone()
            }
            None => default.to_string(),
        }
    }

    /// A DynamoDB table name. Reports and returns `false` otherwise.
    pub(super) fn table_name(&mut self, name: &Text, context: &str, key: &str) -> bool {
        let n = name.get_ref();
        let chars = n.chars().count();
        if limits::TABLE_NAME_CHARS.contains(&chars) && n.chars().all(is_name_char) {
            return true;
        }
        self.problem(
            name.span().start,
            join_key(context, key),
            format!(
                "\"{n}\" is not a DynamoDB table name ({}-{} characters of a-z A-Z 0-9 _ . -)",
                limits::TABLE_NAME_CHARS.start(),
                limits::TABLE_NAME_CHARS.end()
            ),
        );
        false
    }

    pub(super) fn int_in(&mut self, v: &Spanned<i64>, range: std::ops::RangeInclusive<i64>, key: &str) -> Option<i64> {
        let n = *v.get_ref();
        if range.contains(&n) {
            Some(n)
        } else {
            self.problem(
                v.span().start,
                key,
                format!("{n} is out of range ({}..={})", range.start(), range.end()),
            );
            None
        }
    }
}

impl TableConfig {
    /// The primary key attribute names and the TTL attribute.
    fn key_attributes(&self) -> Vec<&str> {
        let mut keys = self.primary_key();
        keys.extend(self.ttl_attribute.as_deref());
        keys
    }
}
