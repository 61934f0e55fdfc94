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
use super::raw::{RawAlarms, RawEdgeSet, RawEvents, RawIndex, RawRoute, RawSortColumn, RawTable, Text};
use super::{
    AlarmConfig, Config, EdgeSetConfig, EventsConfig, IndexConfig, RouteConfig, RouteEvent, RouteItems, SortColumn,
    SourceConfig, TableConfig, Template, ValueRef,
};
use crate::sortkey::{Column, ColumnType, Direction, Nulls};

/// Defaults of optional keys.
pub mod defaults {
    pub const EVENT_SOURCE: &str = "streamdex";
    pub const EVENT_BUS: &str = "streamdex";
    pub const MAX_REQUEST_BYTES: usize = 256 * 1024;
    pub const ITERATOR_AGE_WARN_SECONDS: u64 = 300;
    pub const ITERATOR_AGE_PAGE_SECONDS: u64 = 3600;
    pub const MAX_MEMBERS: usize = 2000;
    pub const COMPLETE_ATTRIBUTE: &str = "edgesComplete";
    pub const TARGET_INDEX: &str = "byTarget";
    pub const INDEX_PARTITION_KEY: &str = "pk";
    pub const INDEX_SORT_KEY: &str = "sk";
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

const TOP_LEVEL_KEYS: &str = "`events`, `alarms`, `table`, `edge_set`, `index`, `route`";

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
        let tables = self.tables(raw.table_key, raw.table_malformed, &raw.tables);
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
        }
    }

    fn events(&mut self, raw: Option<RawEvents>) -> EventsConfig {
        let mut events = EventsConfig {
            source: defaults::EVENT_SOURCE.to_string(),
            bus: defaults::EVENT_BUS.to_string(),
            max_request_bytes: defaults::MAX_REQUEST_BYTES,
        };
        let Some(raw) = raw else { return events };
        if let Some(source) = raw.source {
            let s = source.get_ref();
            let reason = if s.trim().is_empty() {
                Some("the event source is empty".to_string())
            } else if s.chars().count() > limits::EVENT_NAME_CHARS {
                Some(format!("longer than {} characters", limits::EVENT_NAME_CHARS))
            } else if s.to_ascii_lowercase().starts_with("aws.") {
                Some(format!("\"{s}\": sources starting with `aws.` are reserved for AWS"))
            } else {
                None
            };
            match reason {
                Some(reason) => self.problem(source.span().start, "[events] source", reason),
                None => events.source = source.into_inner(),
            }
        }
        if let Some(bus) = raw.bus {
            let b = bus.get_ref();
            let ok_chars = b.chars().all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c));
            if b.is_empty() || b.chars().count() > limits::EVENT_NAME_CHARS || !ok_chars {
                self.problem(
                    bus.span().start,
                    "[events] bus",
                    format!(
                        "\"{b}\" is not an event bus name (1-{} characters of a-z A-Z 0-9 . _ - /)",
                        limits::EVENT_NAME_CHARS
                    ),
                );
            } else {
                events.bus = bus.into_inner();
            }
        }
        if let Some(max) = raw.max_request_bytes {
            if let Some(v) = self.int_in(&max, limits::MAX_REQUEST_BYTES, "[events] max_request_bytes") {
                events.max_request_bytes = v as usize;
            }
        }
        events
    }

    fn alarms(&mut self, raw: Option<RawAlarms>) -> AlarmConfig {
        let mut alarms = AlarmConfig {
            iterator_age_warn_seconds: defaults::ITERATOR_AGE_WARN_SECONDS,
            iterator_age_page_seconds: defaults::ITERATOR_AGE_PAGE_SECONDS,
        };
        let Some(raw) = raw else { return alarms };
        let max = limits::STREAM_RETENTION_SECONDS - 1;
        let mut ok = true;
        if let Some(warn) = &raw.iterator_age_warn_seconds {
            match self.int_in(warn, 1..=max, "[alarms] iterator_age_warn_seconds") {
                Some(v) => alarms.iterator_age_warn_seconds = v as u64,
                None => ok = false,
            }
        }
        if let Some(page) = &raw.iterator_age_page_seconds {
            let key = "[alarms] iterator_age_page_seconds";
            let v = *page.get_ref();
            if v >= limits::STREAM_RETENTION_SECONDS {
                self.problem(
                    page.span().start,
                    key,
                    format!(
                        "{v} must be below {} (the stream's 24 h retention): records would be lost before the page",
                        limits::STREAM_RETENTION_SECONDS
                    ),
                );
                ok = false;
            } else if v < 1 {
                self.problem(page.span().start, key, format!("{v} must be at least 1"));
                ok = false;
            } else {
                alarms.iterator_age_page_seconds = v as u64;
            }
        }
        if ok && alarms.iterator_age_page_seconds <= alarms.iterator_age_warn_seconds {
            let (offset, key) = match (&raw.iterator_age_page_seconds, &raw.iterator_age_warn_seconds) {
                (Some(page), _) => (page.span().start, "[alarms] iterator_age_page_seconds"),
                (None, Some(warn)) => (warn.span().start, "[alarms] iterator_age_warn_seconds"),
                (None, None) => (0, "[alarms]"),
            };
            self.problem(
                offset,
                key,
                format!(
                    "the page threshold ({} s) must be greater than the warn threshold ({} s)",
                    alarms.iterator_age_page_seconds, alarms.iterator_age_warn_seconds
                ),
            );
        }
        alarms
    }

    fn tables(
        &mut self,
        table_key: Option<usize>,
        table_malformed: bool,
        raw: &[(Text, Option<RawTable>)],
    ) -> Vec<TableInfo> {
        if raw.is_empty() && !table_malformed {
            let offset = table_key.unwrap_or(0);
            self.problem(
                offset,
                "table",
                "no table is declared: a config needs at least one [table.NAME] with its partition_key",
            );
        }
        let mut out = Vec::new();
        for (name, body) in raw {
            let context = table_context(name.get_ref());
            self.table_name(name, &context, "table name");
            let config = body.as_ref().map(|body| {
                self.attribute(&body.partition_key, &join_key(&context, "partition_key"));
                if let Some(sk) = &body.sort_key {
                    let key = join_key(&context, "sort_key");
                    if self.attribute(sk, &key) && sk.get_ref() == body.partition_key.get_ref() {
                        self.problem(
                            sk.span().start,
                            key,
                            format!("\"{}\" is also the partition_key", sk.get_ref()),
                        );
                    }
                }
                if let Some(ttl) = &body.ttl_attribute {
                    self.attribute(ttl, &join_key(&context, "ttl_attribute"));
                }
                TableConfig {
                    name: name.get_ref().clone(),
                    partition_key: body.partition_key.get_ref().clone(),
                    sort_key: body.sort_key.as_ref().map(|s| s.get_ref().clone()),
                    ttl_attribute: body.ttl_attribute.as_ref().map(|s| s.get_ref().clone()),
                }
            });
            out.push(TableInfo {
                name: name.get_ref().clone(),
                config,
            });
        }
        out
    }

    /// Looks up a referenced table. `None`: not declared (reported);
    /// `Some(None)`: declared but unreadable; `Some(Some(t))`: declared.
    fn table_ref<'t>(&mut self, tables: &'t [TableInfo], name: &Text, key: &str) -> Option<Option<&'t TableConfig>> {
        match tables.iter().find(|t| &t.name == name.get_ref()) {
            Some(t) => Some(t.config.as_ref()),
            None => {
                let declared: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
                let declared = if declared.is_empty() {
                    "none".to_string()
                } else {
                    declared.join(", ")
                };
                self.problem(
                    name.span().start,
                    key,
                    format!("table \"{}\" is not declared (declared: {declared})", name.get_ref()),
                );
                None
            }
        }
    }

    fn edge_sets(&mut self, raw: Vec<RawEdgeSet>, tables: &[TableInfo]) -> (Vec<EdgeSetConfig>, Vec<EdgeSetInfo>) {
        let mut out = Vec::new();
        let mut infos: Vec<EdgeSetInfo> = Vec::new();
        for e in raw {
            let context = format!("[[edge_set]] \"{}.{}\"", e.table.get_ref(), e.attribute.get_ref());
            let k = |key: &str| join_key(&context, key);
            let table_name = e.table.get_ref().clone();
            let table = self.table_ref(tables, &e.table, &k("table"));
            if let Some(Some(t)) = table {
                if t.sort_key.is_none() {
                    self.problem(
                        e.table.span().start,
                        k("table"),
                        format!(
                            "table \"{}\" has no sort_key; an edge set needs nodes (sort key = partition key) and edges",
                            t.name
                        ),
                    );
                }
            }
            if let Some(other) = infos.iter().find(|i| i.table == table_name) {
                self.problem(
                    e.table.span().start,
                    k("table"),
                    format!(
                        "table \"{table_name}\" already has an edge set (line {}); a table has at most one",
                        other.line
                    ),
                );
            }

            // The set attribute and the completeness flag are owned by the pipeline.
            let key_attrs: Vec<&str> = match table {
                Some(Some(t)) => t.key_attributes(),
                _ => Vec::new(),
            };
            let owned_ok = |checker: &mut Self, attr: &Text, key: String| {
                if checker.attribute(attr, &key) && key_attrs.contains(&attr.get_ref().as_str()) {
                    checker.problem(
                        attr.span().start,
                        key,
                        format!(
                            "\"{}\" is a key or TTL attribute of table \"{table_name}\"; the edge set needs an attribute of its own",
                            attr.get_ref()
                        ),
                    );
                }
            };
            owned_ok(self, &e.attribute, k("attribute"));
            let complete_attribute = match &e.complete_attribute {
                Some(c) => {
                    owned_ok(self, c, k("complete_attribute"));
                    if c.get_ref() == e.attribute.get_ref() {
                        self.problem(
                            c.span().start,
                            k("complete_attribute"),
                            "the same attribute as `attribute`",
                        );
                    }
                    c.get_ref().clone()
                }
                None => defaults::COMPLETE_ATTRIBUTE.to_string(),
            };
            if e.complete_attribute.is_none() && complete_attribute == *e.attribute.get_ref() {
                self.problem(
                    e.attribute.span().start,
                    k("attribute"),
                    format!("\"{complete_attribute}\" is the default complete_attribute; choose another name or set complete_attribute"),
                );
            }

            // include: edge types.
            if e.include.get_ref().is_empty() {
                self.problem(
                    e.include.span().start,
                    k("include"),
                    "no edge type is included; list the edge types to replicate (the sort key up to its first `-`)",
                );
            }
            let mut seen: Vec<&str> = Vec::new();
            for ty in e.include.get_ref() {
                let t = ty.get_ref().as_str();
                if t.is_empty() {
                    self.problem(ty.span().start, k("include"), "empty edge type");
                } else if t.contains('-') {
                    self.problem(
                        ty.span().start,
                        k("include"),
                        format!("\"{t}\" contains `-`, but an edge type is the sort key up to its first `-`, so it could never match"),
                    );
                } else if seen.contains(&t) {
                    self.problem(ty.span().start, k("include"), format!("\"{t}\" is listed twice"));
                }
                seen.push(t);
            }

            // member: attributes of the edge item.
            if e.member.get_ref().is_empty() {
                self.problem(
                    e.member.span().start,
                    k("member"),
                    "no member attribute; list the edge attributes that make up a member (e.g. [\"target\"])",
                );
            }
            let mut seen: Vec<&str> = Vec::new();
            for m in e.member.get_ref() {
                let name = m.get_ref().as_str();
                if !self.attribute(m, &k("member")) {
                    continue;
                }
                if name == e.attribute.get_ref() || name == complete_attribute {
                    self.problem(
                        m.span().start,
                        k("member"),
                        format!("\"{name}\" is an attribute the pipeline writes on nodes, not an edge attribute"),
                    );
                } else if seen.contains(&name) {
                    self.problem(m.span().start, k("member"), format!("\"{name}\" is listed twice"));
                }
                seen.push(name);
            }

            let max_members = match &e.max_members {
                Some(m) => self
                    .int_in(m, limits::MAX_MEMBERS, &k("max_members"))
                    .map_or(defaults::MAX_MEMBERS, |v| v as usize),
                None => defaults::MAX_MEMBERS,
            };
            let target_index = match &e.target_index {
                Some(name) => {
                    self.table_name(name, &context, "target_index");
                    name.get_ref().clone()
                }
                None => defaults::TARGET_INDEX.to_owned(),
            };
            infos.push(EdgeSetInfo {
                table: table_name.clone(),
                attribute: e.attribute.get_ref().clone(),
                complete_attribute: complete_attribute.clone(),
                line: self.line(e.table.span().start),
            });
            out.push(EdgeSetConfig {
                table: table_name,
                attribute: e.attribute.into_inner(),
                include: e.include.into_inner().into_iter().map(Spanned::into_inner).collect(),
                member: e.member.into_inner().into_iter().map(Spanned::into_inner).collect(),
                max_members,
                complete_attribute,
                target_index,
            });
        }
        (out, infos)
    }

    fn indexes(&mut self, raw: Vec<RawIndex>, tables: &[TableInfo], edge_sets: &[EdgeSetInfo]) -> Vec<IndexConfig> {
        let mut out = Vec::new();
        let mut names: HashMap<String, usize> = HashMap::new();
        let mut index_tables: HashMap<String, (usize, String)> = HashMap::new();
        for ix in raw {
            let context = format!("[[index]] \"{}\"", ix.name.get_ref());
            let k = |key: &str| join_key(&context, key);
            let name = ix.name.get_ref().clone();
            let line = self.line(ix.name.span().start);

            // name
            let chars = name.chars().count();
            if !limits::INDEX_NAME_CHARS.contains(&chars) || !name.chars().all(is_name_char) {
                self.problem(
                    ix.name.span().start,
                    k("name"),
                    format!(
                        "\"{name}\" is not an index name ({}-{} characters of a-z A-Z 0-9 _ . -)",
                        limits::INDEX_NAME_CHARS.start(),
                        limits::INDEX_NAME_CHARS.end()
                    ),
                );
            } else if let Some(first) = names.get(&name) {
                self.problem(
                    ix.name.span().start,
                    k("name"),
                    format!("index name \"{name}\" is already used by the index at line {first}"),
                );
            } else {
                names.insert(name.clone(), line);
            }

            // source
            let source = ix.source.into_inner();
            let src = self.table_ref(tables, &source.table, &k("source.table")).flatten();
            if let Some(prefix) = &source.key_prefix {
                if prefix.get_ref().is_empty() {
                    self.problem(
                        prefix.span().start,
                        k("source.key_prefix"),
                        "empty key_prefix; leave it out to take every item",
                    );
                }
            }
            let src_keys: Vec<&str> = src.map(|t| t.primary_key()).unwrap_or_default();

            // the index table
            let table = ix.table.get_ref().clone();
            if self.table_name(&ix.table, &context, "table") {
                if tables.iter().any(|t| t.name == table) {
                    self.problem(
                        ix.table.span().start,
                        k("table"),
                        format!("\"{table}\" is a declared source table; an index owns its table, give it another"),
                    );
                } else if let Some((first_line, first_name)) = index_tables.get(&table) {
                    self.problem(
                        ix.table.span().start,
                        k("table"),
                        format!(
                            "table \"{table}\" is already the table of index \"{first_name}\" (line {first_line}); each index owns its table"
                        ),
                    );
                } else {
                    index_tables.insert(table.clone(), (self.line(ix.table.span().start), name.clone()));
                }
            }

            // the index table's keys
            let partition_key =
                self.key_with_default(&ix.partition_key, defaults::INDEX_PARTITION_KEY, &k("partition_key"));
            let sort_key = self.key_with_default(&ix.sort_key, defaults::INDEX_SORT_KEY, &k("sort_key"));
            if partition_key == sort_key {
                let (offset, key) = match (&ix.sort_key, &ix.partition_key) {
                    (Some(s), _) => (s.span().start, k("sort_key")),
                    (None, Some(p)) => (p.span().start, k("partition_key")),
                    (None, None) => (ix.name.span().start, context.clone()),
                };
                self.problem(
                    offset,
                    key,
                    format!("partition_key and sort_key are both \"{sort_key}\""),
                );
            }
            if let Some(t) = src {
                for (attr, raw_key, key) in [
                    (&partition_key, &ix.partition_key, "partition_key"),
                    (&sort_key, &ix.sort_key, "sort_key"),
                ] {
                    if src_keys.contains(&attr.as_str()) {
                        let offset = raw_key.as_ref().map_or(ix.name.span().start, |s| s.span().start);
                        self.problem(
                            offset,
                            k(key),
                            format!(
                                "\"{attr}\" is a key attribute of source table \"{}\", which is copied onto every row; give the index {key} another name",
                                t.name
                            ),
                        );
                    }
                }
            }

            // for_each
            if let Some(fe) = &ix.for_each {
                if self.attribute(fe, &k("for_each")) && src_keys.contains(&fe.get_ref().as_str()) {
                    self.problem(
                        fe.span().start,
                        k("for_each"),
                        format!(
                            "\"{}\" is a key attribute of the source table, a single scalar: there are no entries to iterate",
                            fe.get_ref()
                        ),
                    );
                }
            }
            let has_for_each = ix.for_each.is_some();
            let mut uses_entry = false;
            // Whether every reference could be read (else `uses_entry` is unsure).
            let mut refs_complete = true;

            // partition
            let partition = match Template::parse(ix.partition.get_ref()) {
                Ok(t) => {
                    uses_entry |= t.uses_entry();
                    self.check_refs(t.refs(), has_for_each, ix.partition.span(), &k("partition"));
                    Some(t)
                }
                Err(reason) => {
                    self.problem(ix.partition.span().start, k("partition"), reason);
                    refs_complete = false;
                    None
                }
            };

            // sort
            let mut sort = Vec::new();
            for (i, col) in ix.sort.iter().enumerate() {
                let key = k(&format!("sort[{}]", i + 1));
                match self.sort_column(col.get_ref(), has_for_each, &key) {
                    Ok(c) => {
                        uses_entry |= c.value.is_entry();
                        sort.push(c);
                    }
                    Err(value) => match value {
                        Some(v) => uses_entry |= v.is_entry(),
                        None => refs_complete = false,
                    },
                }
            }
            if let Some(fe) = &ix.for_each {
                if !uses_entry && refs_complete {
                    self.problem(
                        fe.span().start,
                        k("for_each"),
                        "neither partition nor sort refers to {entry.key} or {entry.value}, so every entry of an item would get the same row",
                    );
                }
            }

            // project
            let owned = edge_sets.iter().find(|e| e.table == source.table.get_ref().as_str());
            let mut seen: Vec<&str> = Vec::new();
            for p in &ix.project {
                let attr = p.get_ref().as_str();
                let key = k("project");
                if !self.attribute(p, &key) {
                    continue;
                }
                let reason = if attr == partition_key || attr == sort_key {
                    Some(format!(
                        "\"{attr}\" is a key attribute of the index table; projecting it would overwrite the row key"
                    ))
                } else if src_keys.contains(&attr) {
                    Some(format!(
                        "\"{attr}\" is a key attribute of the source table, always copied onto the row; remove it"
                    ))
                } else if let Some(es) = owned.filter(|es| es.attribute == attr || es.complete_attribute == attr) {
                    Some(format!(
                        "\"{attr}\" is owned by the pipeline (the edge set \"{}\" of table \"{}\"); it cannot be projected",
                        es.attribute, es.table
                    ))
                } else if seen.contains(&attr) {
                    Some(format!("\"{attr}\" is listed twice"))
                } else {
                    None
                };
                if let Some(reason) = reason {
                    self.problem(p.span().start, key, reason);
                }
                seen.push(attr);
            }

            if let Some(partition) = partition {
                out.push(IndexConfig {
                    name,
                    source: SourceConfig {
                        table: source.table.into_inner(),
                        key_prefix: source.key_prefix.map(Spanned::into_inner),
                    },
                    table,
                    partition_key,
                    sort_key,
                    for_each: ix.for_each.map(Spanned::into_inner),
                    partition,
                    sort,
                    project: ix.project.into_iter().map(Spanned::into_inner).collect(),
                });
            }
        }
        out
    }

    /// A sort column, or (when refused) its value reference if that could be read.
    fn sort_column(
        &mut self,
        col: &RawSortColumn,
        has_for_each: bool,
        key: &str,
    ) -> Result<SortColumn, Option<ValueRef>> {
        let value = match ValueRef::parse_sort_value(col.value.get_ref()) {
            Ok(v) => {
                self.check_refs(
                    std::iter::once(&v),
                    has_for_each,
                    col.value.span(),
                    &format!("{key}.value"),
                );
                Some(v)
            }
            Err(reason) => {
                self.problem(col.value.span().start, format!("{key}.value"), reason);
                None
            }
        };
        let ty = match parse_column_type(col.ty.get_ref()) {
            Some(ty) => Some(ty),
            None => {
                self.problem(
                    col.ty.span().start,
                    format!("{key}.type"),
                    format!(
                        "unknown column type \"{}\" (expected one of s, n, b, bool, date, timestamp, any)",
                        col.ty.get_ref()
                    ),
                );
                None
            }
        };
        let direction = match &col.order {
            None => Some(Direction::Asc),
            Some(o) => match o.get_ref().to_ascii_lowercase().as_str() {
                "asc" => Some(Direction::Asc),
                "desc" => Some(Direction::Desc),
                _ => {
                    self.problem(
                        o.span().start,
                        format!("{key}.order"),
                        format!("unknown order \"{}\" (expected asc or desc)", o.get_ref()),
                    );
                    None
                }
            },
        };
        // Some(None): the default placement; None: refused.
        let nulls = match &col.nulls {
            None => Some(None),
            Some(n) => match n.get_ref().to_ascii_lowercase().as_str() {
                "first" => Some(Some(Nulls::First)),
                "last" => Some(Some(Nulls::Last)),
                _ => {
                    self.problem(
                        n.span().start,
                        format!("{key}.nulls"),
                        format!("unknown nulls placement \"{}\" (expected first or last)", n.get_ref()),
                    );
                    None
                }
            },
        };
        let (Some(value), Some(ty), Some(direction), Some(nulls)) = (value.clone(), ty, direction, nulls) else {
            return Err(value);
        };
        let mut column = Column::new(ty, direction);
        if let Some(n) = nulls {
            column.nulls = n;
        }
        Ok(SortColumn { value, column })
    }

    /// Refuses entry references when the index has no `for_each`.
    fn check_refs<'r>(
        &mut self,
        refs: impl Iterator<Item = &'r ValueRef>,
        has_for_each: bool,
        span: Range<usize>,
        key: &str,
    ) {
        if has_for_each {
            return;
        }
        let entry_refs: Vec<String> = refs.filter(|r| r.is_entry()).map(ToString::to_string).collect();
        if !entry_refs.is_empty() {
            self.problem(
                span.start,
                key,
                format!(
                    "{} refers to the entry, but the index has no for_each",
                    entry_refs.join(" and ")
                ),
            );
        }
    }

    fn routes(
        &mut self,
        raw: Vec<RawRoute>,
        tables: &[TableInfo],
        edge_sets: &[EdgeSetInfo],
        broken_edge_sets: &[String],
    ) -> Vec<RouteConfig> {
        let mut out = Vec::new();
        for r in raw {
            let context = format!("[[route]] \"{}\"", r.detail_type.get_ref());
            let k = |key: &str| join_key(&context, key);
            let table = self.table_ref(tables, &r.table, &k("table"));
            if r.detail_type.get_ref().trim().is_empty() {
                self.problem(r.detail_type.span().start, k("detail_type"), "empty detail_type");
            }
            if r.events.get_ref().is_empty() {
                self.problem(
                    r.events.span().start,
                    k("events"),
                    "no events: list one or more of INSERT, MODIFY, REMOVE, EXPIRE",
                );
            }
            let mut events = Vec::new();
            for ev in r.events.get_ref() {
                let event = match ev.get_ref().to_ascii_uppercase().as_str() {
                    "INSERT" => RouteEvent::Insert,
                    "MODIFY" => RouteEvent::Modify,
                    "REMOVE" => RouteEvent::Remove,
                    "EXPIRE" => RouteEvent::Expire,
                    _ => {
                        self.problem(
                            ev.span().start,
                            k("events"),
                            format!(
                                "unknown event \"{}\" (expected INSERT, MODIFY, REMOVE or EXPIRE)",
                                ev.get_ref()
                            ),
                        );
                        continue;
                    }
                };
                if events.contains(&event) {
                    self.problem(
                        ev.span().start,
                        k("events"),
                        format!("\"{}\" is listed twice", ev.get_ref()),
                    );
                    continue;
                }
                if event == RouteEvent::Expire {
                    if let Some(Some(t)) = table {
                        if t.ttl_attribute.is_none() {
                            self.problem(
                                ev.span().start,
                                k("events"),
                                format!("table \"{}\" has no ttl_attribute, so EXPIRE can never happen", t.name),
                            );
                        }
                    }
                }
                events.push(event);
            }
            if let Some(prefix) = &r.key_prefix {
                if prefix.get_ref().is_empty() {
                    self.problem(
                        prefix.span().start,
                        k("key_prefix"),
                        "empty key_prefix; leave it out to take every item",
                    );
                }
            }
            let items = match &r.items {
                None => RouteItems::All,
                Some(items) => {
                    let parsed = match items.get_ref().to_ascii_lowercase().as_str() {
                        "all" => Some(RouteItems::All),
                        "nodes" => Some(RouteItems::Nodes),
                        "edges" => Some(RouteItems::Edges),
                        _ => None,
                    };
                    let table_name = r.table.get_ref();
                    let has_edge_set =
                        edge_sets.iter().any(|e| &e.table == table_name) || broken_edge_sets.contains(table_name);
                    match parsed {
                        None => {
                            self.problem(
                                items.span().start,
                                k("items"),
                                format!("unknown items \"{}\" (expected all, nodes or edges)", items.get_ref()),
                            );
                            RouteItems::All
                        }
                        Some(p @ (RouteItems::Nodes | RouteItems::Edges)) if !has_edge_set && table.is_some() => {
                            self.problem(
                                items.span().start,
                                k("items"),
                                format!(
                                    "items = \"{}\" needs an edge set on table \"{table_name}\" (nodes and edges are the edge set's)",
                                    items.get_ref()
                                ),
                            );
                            p
                        }
                        Some(p) => p,
                    }
                }
            };
            let detail_type_at = r.detail_type.span().start;
            let reap = r.reap.as_ref().is_some_and(|reap| *reap.get_ref());
            if let (true, Some(flag)) = (reap, &r.reap) {
                let at = flag.span().start;
                if items != RouteItems::Nodes {
                    self.problem(
                        at,
                        k("reap"),
                        "the reaper deletes a removed node's edges: the route needs items = \"nodes\"",
                    );
                }
                if events
                    .iter()
                    .any(|e| matches!(e, RouteEvent::Insert | RouteEvent::Modify))
                {
                    self.problem(
                        at,
                        k("reap"),
                        "the reaper takes removed nodes only: events may be EXPIRE and REMOVE, not INSERT or MODIFY",
                    );
                }
            }
            let route = RouteConfig {
                table: r.table.into_inner(),
                detail_type: r.detail_type.into_inner(),
                events,
                key_prefix: r.key_prefix.map(Spanned::into_inner),
                items,
                reap,
            };
            let rule = crate::event::rule_name(&route);
            if let Some(earlier) = out.iter().find(|o: &&RouteConfig| crate::event::rule_name(o) == rule) {
                self.problem(
                    detail_type_at,
                    k("detail_type"),
                    format!(
                        "its rule name \"{rule}\" is that of the route \"{}\" of table \"{}\" already; rules could not tell them apart: choose another detail_type",
                        earlier.detail_type, earlier.table
                    ),
                );
            }
            out.push(route);
        }
        out
    }

    /// An attribute name: non-empty, at most 255 bytes. Reports and returns
    /// `false` otherwise.
    fn attribute(&mut self, name: &Text, key: &str) -> bool {
        let n = name.get_ref();
        let reason = if n.is_empty() {
            "empty attribute name".to_string()
        } else if n.len() > limits::ATTRIBUTE_NAME_BYTES {
            format!("attribute name longer than {} bytes", limits::ATTRIBUTE_NAME_BYTES)
        } else {
            return true;
        };
        self.problem(name.span().start, key, reason);
        false
    }

    fn key_with_default(&mut self, raw: &Option<Text>, default: &str, key: &str) -> String {
        match raw {
            Some(name) => {
                self.attribute(name, key);
                name.get_ref().clone()
            }
            None => default.to_string(),
        }
    }

    /// A DynamoDB table name. Reports and returns `false` otherwise.
    fn table_name(&mut self, name: &Text, context: &str, key: &str) -> bool {
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

    fn int_in(&mut self, v: &Spanned<i64>, range: std::ops::RangeInclusive<i64>, key: &str) -> Option<i64> {
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

fn parse_column_type(text: &str) -> Option<ColumnType> {
    Some(match text.to_ascii_lowercase().as_str() {
        "s" => ColumnType::S,
        "n" => ColumnType::N,
        "b" => ColumnType::B,
        "bool" => ColumnType::Bool,
        "date" => ColumnType::Date,
        "timestamp" => ColumnType::Timestamp,
        "any" => ColumnType::Any,
        _ => return None,
    })
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

fn join_key(context: &str, key: &str) -> String {
    match (context.is_empty(), key.is_empty()) {
        (true, _) => key.to_string(),
        (_, true) => context.to_string(),
        _ => format!("{context} {key}"),
    }
}

/// `[table.records]`, quoting names TOML would need quoted.
fn table_context(name: &str) -> String {
    let bare = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        format!("[table.{name}]")
    } else {
        format!("[table.{name:?}]")
    }
}

/// `[[index]] "issue-attrib"` when the element has a readable name (or
/// detail type, or table), else `[[index]] #2`.
fn element_context(section: &str, element: &DeValue<'_>, i: usize) -> String {
    let label_key = match section {
        "index" => "name",
        "route" => "detail_type",
        _ => "table",
    };
    match element.get(label_key).and_then(|v| v.get_ref().as_str()) {
        Some(label) if section == "edge_set" => {
            let attribute = element
                .get("attribute")
                .and_then(|v| v.get_ref().as_str())
                .unwrap_or("?");
            format!("[[{section}]] \"{label}.{attribute}\"")
        }
        Some(label) => format!("[[{section}]] \"{label}\""),
        None => format!("[[{section}]] #{}", i + 1),
    }
}

/// The key path (`source.table`, `sort[2].type`) inside `value` that holds
/// byte `offset`, or `""`.
fn key_path_at(value: &Spanned<DeValue<'_>>, offset: usize) -> String {
    let mut path = String::new();
    let mut current = value.get_ref();
    loop {
        let next = match current {
            DeValue::Table(table) => table.iter().find_map(|(k, v)| {
                let in_key = k.span().contains(&offset);
                (in_key || v.span().contains(&offset)).then(|| {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(k.get_ref());
                    (v, in_key)
                })
            }),
            DeValue::Array(array) => array.iter().enumerate().find_map(|(i, v)| {
                v.span().contains(&offset).then(|| {
                    path.push_str(&format!("[{}]", i + 1));
                    (v, false)
                })
            }),
            _ => None,
        };
        match next {
            Some((v, false)) => current = v.get_ref(),
            _ => return path,
        }
    }
}
