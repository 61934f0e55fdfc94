//! Event source mapping filters: which stream records each consumer of a
//! table needs, as Lambda filter patterns, and a matcher that evaluates such a
//! pattern against a record's JSON the way Lambda does.
//!
//! # Consumers
//!
//! A table's stream has at most two readers ([`consumers`]):
//!
//! - [`Consumer::Indexer`], when the table has an edge set or feeds an index;
//! - [`Consumer::Router`], when a route takes the table's records.
//!
//! # What passes
//!
//! [`patterns`] gives, per consumer and table, up to [`MAX_PATTERNS`]
//! patterns (ORed) such that **every record the consumer acts on passes**:
//! each record for which [`crate::Planner::plan`] gives a mutation or a
//! problem (indexer), or [`crate::event::classify`] gives an event or an
//! error (router). Records nothing needs are dropped where a pattern can say
//! so. No patterns at all means "no filter": every record passes.
//!
//! Patterns test the record's `dynamodb` part only (for a table read from
//! a Kinesis data stream, under [`KINESIS_DATA`]: Lambda filters a Kinesis
//! record on its decoded payload, the change as DynamoDB writes it, with
//! the same `dynamodb` part). DynamoDB event source
//! mappings filter on nothing else (AWS documents it so; `eventName` and
//! `userIdentity` are not usable). The event kind is read from the images
//! the stream's `NEW_AND_OLD_IMAGES` view carries, through the partition
//! key, which every image has: an INSERT has no `OldImage`, a REMOVE no
//! `NewImage`, a MODIFY both. A TTL expiry cannot be told from another
//! REMOVE, and "sort key equals partition key" (a node) cannot be said at
//! all; both are let through. Keys are assumed to be Strings (`S`), as the
//! template and `streamdex up` create them.
//!
//! The patterns per record kind:
//!
//! - **indexer**: every record of an index's `key_prefix` (all kinds: rows
//!   are deleted on REMOVE); every record of an included edge type (its sort
//!   key is `TYPE` or starts with `TYPE-`); every INSERT (a node INSERT
//!   restores its set); every MODIFY whose new image has neither the set nor
//!   the completeness marker (a PutItem that wiped a node's set). So the
//!   pipeline's own writes to nodes, which keep the marker, never invoke it.
//! - **router**: per route, its events as image presence, its `key_prefix`
//!   on the partition key (and on the sort key too for `nodes`, which equals
//!   the partition key), its included edge types on the sort key for `edges`.
//!
//! When there are more than [`MAX_PATTERNS`], the two most alike are merged
//! (per common field, the union of the allowed values; other fields
//! dropped): a superset, so nothing needed is lost. A pattern over
//! [`MAX_PATTERN_CHARS`] loses its longest field the same way.
//!
//! # Matching
//!
//! [`Pattern::matches`] follows Lambda's (EventBridge's) rules: each field is
//! a path to a leaf and a list of allowed values (ORed), and all fields must
//! hold. A string leaf matches an exact value or a `prefix`; an array leaf
//! (a set) matches when any element does; `{"exists": true}` matches a
//! present leaf, `{"exists": false}` a missing one (a missing parent
//! included).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value as Json};

use crate::config::{ChangeSource, Config, RouteEvent, RouteItems, TableConfig};

/// Filters per event source mapping (Lambda's default quota).
pub const MAX_PATTERNS: usize = 5;

/// Characters per filter pattern (Lambda's limit).
pub const MAX_PATTERN_CHARS: usize = 4096;
/// The field of a Kinesis record that Lambda's filters see its decoded
/// payload in.
pub const KINESIS_DATA: &str = "data";

/// A reader of a table's stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Consumer {
    /// The stream indexer: index rows and edge sets.
    Indexer,
    /// The event router: EventBridge events.
    Router,
}

impl Consumer {
    /// Both consumers, in a fixed order.
    pub const ALL: [Consumer; 2] = [Consumer::Indexer, Consumer::Router];

    /// `indexer` or `router`.
    pub fn as_str(self) -> &'static str {
        match self {
            Consumer::Indexer => "indexer",
            Consumer::Router => "router",
        }
    }
}

impl std::fmt::Display for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether `consumer` reads the stream of `table` at all.
pub fn reads(config: &Config, table: &str, consumer: Consumer) -> bool {
    match consumer {
        Consumer::Indexer => config.edge_set(table).is_some() || config.indexes.iter().any(|i| i.source.table == table),
        Consumer::Router => config.routes.iter().any(|r| r.table == table),
    }
}

/// The consumers of `table`'s stream, in [`Consumer::ALL`] order: never more than two.
pub fn consumers(config: &Config, table: &str) -> Vec<Consumer> {
    Consumer::ALL.into_iter().filter(|c| reads(config, table, *c)).collect()
}

/// One allowed value of a leaf.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Allowed {
    /// The string leaf equals this.
    Exactly(String),
    /// The string leaf starts with this.
    Prefix(String),
    /// The leaf is present (`true`) or missing (`false`).
    Exists(bool),
}

impl Allowed {
    fn to_json(&self) -> Json {
        match self {
            Allowed::Exactly(s) => Json::String(s.clone()),
            Allowed::Prefix(p) => json!({ "prefix": p }),
            Allowed::Exists(e) => json!({ "exists": e }),
        }
    }

    fn matches(&self, leaf: Option<&Json>) -> bool {
        match (self, leaf) {
            (Allowed::Exists(e), leaf) => *e == leaf.is_some(),
            (_, None) => false,
            (_, Some(Json::Array(items))) => items.iter().any(|item| self.matches_scalar(item)),
            (_, Some(scalar)) => self.matches_scalar(scalar),
        }
    }

    fn matches_scalar(&self, value: &Json) -> bool {
        match (self, value) {
            (Allowed::Exactly(s), Json::String(v)) => s == v,
            (Allowed::Prefix(p), Json::String(v)) => v.starts_with(p.as_str()),
            _ => false,
        }
    }
}

/// A filter pattern: every field (a path to a leaf) must hold one of its
/// allowed values. No fields matches every record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pattern {
    pub fields: BTreeMap<Vec<String>, Vec<Allowed>>,
}

impl Pattern {
    /// The pattern as Lambda takes it (the JSON object).
    pub fn to_json(&self) -> Json {
        let mut root = Map::new();
        for (path, allowed) in &self.fields {
            insert(
                &mut root,
                path,
                Json::Array(allowed.iter().map(Allowed::to_json).collect()),
            );
        }
        Json::Object(root)
    }

    /// The pattern's JSON text (what an event source mapping's `Pattern` holds).
    pub fn to_text(&self) -> String {
        self.to_json().to_string()
    }

    /// Whether `record` (a stream record's JSON, as Lambda delivers it)
    /// passes this pattern.
    pub fn matches(&self, record: &Json) -> bool {
        self.fields.iter().all(|(path, allowed)| {
            let leaf = path.iter().try_fold(record, |node, step| node.get(step));
            allowed.iter().any(|a| a.matches(leaf))
        })
    }

    /// The pattern with every field moved under `key`.
    fn under(self, key: &str) -> Pattern {
        let fields = self.fields.into_iter().map(|(path, allowed)| {
            let path = std::iter::once(key.to_owned()).chain(path).collect();
            (path, allowed)
        });
        Pattern {
            fields: fields.collect(),
        }
    }

    fn with(mut self, path: &[&str], allowed: Vec<Allowed>) -> Pattern {
        self.fields
            .insert(path.iter().map(|s| (*s).to_owned()).collect(), allowed);
        self
    }
}

/// Puts `leaf` at `path` under `node`, making the objects on the way (a
/// non-object in the way is replaced: fields are leaves, never parents).
fn insert(node: &mut Map<String, Json>, path: &[String], leaf: Json) {
    match path {
        [] => {}
        [last] => {
            node.insert(last.clone(), leaf);
        }
        [first, rest @ ..] => {
            let entry = node.entry(first.clone()).or_insert_with(|| Json::Object(Map::new()));
            if !entry.is_object() {
                *entry = Json::Object(Map::new());
            }
            if let Json::Object(child) = entry {
                insert(child, rest, leaf);
            }
        }
    }
}

/// Whether `record` passes a consumer's filter: no patterns, or any one.
pub fn passes(patterns: &[Pattern], record: &Json) -> bool {
    patterns.is_empty() || patterns.iter().any(|p| p.matches(record))
}

/// The filter patterns of `consumer` on `table` (see the [module docs](self)):
/// at most [`MAX_PATTERNS`], each at most [`MAX_PATTERN_CHARS`]; empty means
/// every record passes.
pub fn patterns(config: &Config, table: &TableConfig, consumer: Consumer) -> Vec<Pattern> {
    let raw = match consumer {
        Consumer::Indexer => indexer_patterns(config, table),
        Consumer::Router => router_patterns(config, table),
    };
    let raw = match table.stream {
        ChangeSource::DynamoDb => raw,
        ChangeSource::Kinesis(_) => raw.into_iter().map(|p| p.under(KINESIS_DATA)).collect(),
    };
    bound(raw)
}

/// Which images a record of these kinds has, as patterns (ORed).
fn kinds(table: &TableConfig, events: &[RouteEvent]) -> Vec<Pattern> {
    let insert = events.contains(&RouteEvent::Insert);
    let modify = events.contains(&RouteEvent::Modify);
    let remove = events.contains(&RouteEvent::Remove) || events.contains(&RouteEvent::Expire);
    let old = ["dynamodb", "OldImage", table.partition_key.as_str(), "S"];
    let new = ["dynamodb", "NewImage", table.partition_key.as_str(), "S"];
    let present = || vec![Allowed::Exists(true)];
    let absent = || vec![Allowed::Exists(false)];
    let p = Pattern::default;
    match (insert, modify, remove) {
        (true, true, true) | (false, false, false) => vec![p()],
        (true, false, false) => vec![p().with(&old, absent())],
        (false, false, true) => vec![p().with(&new, absent())],
        (false, true, false) => vec![p().with(&old, present()).with(&new, present())],
        (true, true, false) => vec![p().with(&new, present())],
        (false, true, true) => vec![p().with(&old, present())],
        (true, false, true) => vec![p().with(&old, absent()), p().with(&new, absent())],
    }
}

/// The sort key values of the included edge types: `TYPE` or `TYPE-...`.
fn edge_types(include: &[String]) -> Vec<Allowed> {
    include
        .iter()
        .flat_map(|t| [Allowed::Exactly(t.clone()), Allowed::Prefix(format!("{t}-"))])
        .collect()
}

fn key_path(attribute: &str) -> [&str; 4] {
    ["dynamodb", "Keys", attribute, "S"]
}

fn indexer_patterns(config: &Config, table: &TableConfig) -> Vec<Pattern> {
    let mut out = Vec::new();
    for index in config.indexes.iter().filter(|i| i.source.table == table.name) {
        out.push(match index.source.key_prefix.as_deref() {
            Some(prefix) if !prefix.is_empty() => Pattern::default().with(
                &key_path(&table.partition_key),
                vec![Allowed::Prefix(prefix.to_owned())],
            ),
            _ => Pattern::default(),
        });
    }
    if let (Some(set), Some(sort_key)) = (config.edge_set(&table.name), table.sort_key.as_deref()) {
        out.push(Pattern::default().with(&key_path(sort_key), edge_types(&set.include)));
        // A node INSERT restores its set.
        out.extend(kinds(table, &[RouteEvent::Insert]));
        // A MODIFY whose new image lost both the set and the marker (a wiped node).
        let new = |attribute: &str, ty: &str| ["dynamodb", "NewImage", attribute, ty].map(str::to_owned).to_vec();
        let mut wiped = kinds(table, &[RouteEvent::Modify]).remove(0);
        wiped
            .fields
            .insert(new(&set.attribute, "SS"), vec![Allowed::Exists(false)]);
        wiped
            .fields
            .insert(new(&set.complete_attribute, "BOOL"), vec![Allowed::Exists(false)]);
        out.push(wiped);
    }
    out
}

fn router_patterns(config: &Config, table: &TableConfig) -> Vec<Pattern> {
    let mut out = Vec::new();
    for route in config.routes.iter().filter(|r| r.table == table.name) {
        let mut extra = Pattern::default();
        if let Some(prefix) = route.key_prefix.as_deref().filter(|p| !p.is_empty()) {
            extra = extra.with(
                &key_path(&table.partition_key),
                vec![Allowed::Prefix(prefix.to_owned())],
            );
            if let (RouteItems::Nodes, Some(sort_key)) = (route.items, table.sort_key.as_deref()) {
                // A node's sort key equals its partition key.
                extra = extra.with(&key_path(sort_key), vec![Allowed::Prefix(prefix.to_owned())]);
            }
        }
        if let (RouteItems::Edges, Some(set), Some(sort_key)) =
            (route.items, config.edge_set(&table.name), table.sort_key.as_deref())
        {
            extra = extra.with(&key_path(sort_key), edge_types(&set.include));
        }
        for mut pattern in kinds(table, &route.events) {
            pattern.fields.extend(extra.fields.clone());
            out.push(pattern);
        }
    }
    out
}

/// Brings patterns within [`MAX_PATTERNS`] and [`MAX_PATTERN_CHARS`] by
/// widening them; a pattern without fields means no filter at all.
fn bound(mut patterns: Vec<Pattern>) -> Vec<Pattern> {
    if patterns.iter().any(|p| p.fields.is_empty()) {
        return Vec::new();
    }
    patterns.dedup();
    let mut unique: Vec<Pattern> = Vec::new();
    for p in patterns {
        if !unique.contains(&p) {
            unique.push(p);
        }
    }
    let mut patterns = unique;
    while patterns.len() > MAX_PATTERNS {
        // Merge the pair sharing the most fields (ties: the first pair).
        let mut best = (0, 1, usize::MAX);
        for i in 0..patterns.len() {
            for j in i + 1..patterns.len() {
                let (a, b) = (&patterns[i], &patterns[j]);
                let shared = a.fields.keys().filter(|k| b.fields.contains_key(*k)).count();
                let lost = a.fields.len() + b.fields.len() - 2 * shared;
                if lost < best.2 {
                    best = (i, j, lost);
                }
            }
        }
        let b = patterns.remove(best.1);
        let merged = merge(&patterns[best.0], &b);
        if merged.fields.is_empty() {
            return Vec::new();
        }
        patterns[best.0] = merged;
    }
    for p in &mut patterns {
        while p.to_text().len() > MAX_PATTERN_CHARS {
            let longest = p
                .fields
                .iter()
                .max_by_key(|(path, allowed)| {
                    path.iter().map(String::len).sum::<usize>()
                        + allowed.iter().map(|a| a.to_json().to_string().len()).sum::<usize>()
                })
                .map(|(path, _)| path.clone());
            match longest {
                Some(path) => {
                    p.fields.remove(&path);
                }
                None => break,
            }
        }
    }
    if patterns.iter().any(|p| p.fields.is_empty()) {
        return Vec::new();
    }
    patterns
}

/// A pattern that matches whatever `a` or `b` matches: per shared field the
/// union of the allowed values, other fields dropped.
fn merge(a: &Pattern, b: &Pattern) -> Pattern {
    let mut fields = BTreeMap::new();
    for (path, x) in &a.fields {
        let Some(y) = b.fields.get(path) else { continue };
        let mut union: Vec<Allowed> = x.iter().chain(y).cloned().collect();
        union.sort();
        union.dedup();
        let exists: Vec<bool> = union
            .iter()
            .filter_map(|v| match v {
                Allowed::Exists(e) => Some(*e),
                _ => None,
            })
            .collect();
        let merged = match exists.as_slice() {
            [] => union,
            // Present, or a value (which is present): present.
            [true] => vec![Allowed::Exists(true)],
            // Missing alone stays; missing or a value cannot be said in one field.
            [false] if union.len() == 1 => union,
            _ => continue,
        };
        fields.insert(path.clone(), merged);
    }
    Pattern { fields }
}

mod parse;
pub use parse::PatternError;

#[cfg(test)]
mod tests;
