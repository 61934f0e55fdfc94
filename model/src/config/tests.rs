//! Config loading tests: the example, defaults, and a table of bad configs,
//! each checked for the line and the reason of its problem.

use super::*;
use crate::sortkey::{ColumnType, Direction, Nulls};

/// A valid base the bad cases are appended to.
const BASE: &str = r#"
[table.records]
partition_key = "source"
sort_key = "target"
ttl_attribute = "expiresAt"

[table.issues]
partition_key = "id"
sort_key = "rel"

[table.plain]
partition_key = "k"

[[edge_set]]
table = "records"
attribute = "edges"
include = ["GOALMEMBERSHIP"]
member = ["target"]
"#;

fn refused(text: &str) -> Vec<Problem> {
    match parse(text, "t.toml") {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => {
            let problems = e.problems().to_vec();
            assert!(!problems.is_empty());
            problems
        }
    }
}

fn accepted(text: &str) -> Config {
    parse(text, "t.toml").unwrap_or_else(|e| panic!("refused:\n{e}\n---\n{text}"))
}

fn show(problems: &[Problem]) -> String {
    problems.iter().map(|p| format!("  {p}\n")).collect()
}

#[test]
fn base_is_valid() {
    accepted(BASE);
}

#[test]
fn example_parses_and_validates() {
    let config = parse(EXAMPLE_CONFIG, "streamdex.example.toml").unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = config.tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["records", "issues", "layers"], "document order");

    let records = config.table("records").expect("records");
    assert_eq!(records.partition_key, "source");
    assert_eq!(records.sort_key.as_deref(), Some("target"));
    assert_eq!(records.ttl_attribute.as_deref(), Some("expiresAt"));
    assert_eq!(
        config.table("layers").and_then(|t| t.ttl_attribute.as_deref()),
        Some("ttl")
    );
    assert_eq!(config.table("issues").map(|t| t.primary_key()), Some(vec!["id", "rel"]));

    let edges = config.edge_set("records").expect("edge set");
    assert_eq!(
        edges,
        &EdgeSetConfig {
            table: "records".into(),
            attribute: "edges".into(),
            include: vec!["GOALMEMBERSHIP".into(), "TEAMMEMBERSHIP".into()],
            member: vec!["target".into(), "gsi0".into()],
            max_members: 2000,
            complete_attribute: "edgesComplete".into(),
            target_index: "byTarget".into(),
        }
    );
    assert!(config.edge_set("issues").is_none());

    let index = config.index("issue-attrib").expect("index");
    assert_eq!(
        index,
        &IndexConfig {
            name: "issue-attrib".into(),
            source: SourceConfig {
                table: "issues".into(),
                key_prefix: Some("issue-".into()),
            },
            table: "IssueAttribIndex".into(),
            partition_key: "pk".into(),
            sort_key: "sk".into(),
            for_each: Some("custom_fields".into()),
            partition: Template {
                parts: vec![TemplatePart::Ref(ValueRef::EntryKey)],
            },
            sort: vec![
                SortColumn {
                    value: ValueRef::EntryValue,
                    column: Column::new(ColumnType::Any, Direction::Asc),
                },
                SortColumn {
                    value: ValueRef::Attribute("num".into()),
                    column: Column {
                        ty: ColumnType::N,
                        direction: Direction::Asc,
                        nulls: Nulls::Last,
                    },
                },
            ],
            project: vec!["name".into(), "state".into()],
            shards: 1,
        }
    );

    type RouteRow<'a> = (&'a str, &'a str, &'a [RouteEvent], Option<&'a str>, RouteItems);
    let routes: Vec<RouteRow> = config
        .routes
        .iter()
        .map(|r| {
            (
                r.table.as_str(),
                r.detail_type.as_str(),
                r.events.as_slice(),
                r.key_prefix.as_deref(),
                r.items,
            )
        })
        .collect();
    assert_eq!(
        routes,
        [
            (
                "records",
                "Goal Inserted",
                &[RouteEvent::Insert][..],
                Some("GOAL-"),
                RouteItems::Nodes
            ),
            (
                "records",
                "Node Expired",
                &[RouteEvent::Expire][..],
                None,
                RouteItems::Nodes
            ),
            (
                "layers",
                "Layer Expired",
                &[RouteEvent::Expire][..],
                Some("lyr#"),
                RouteItems::All
            ),
        ]
    );
    assert_eq!(
        config.events,
        EventsConfig {
            source: "streamdex".into(),
            bus: "streamdex".into(),
            max_request_bytes: 262_144,
            ledger_table: "streamdex-ledger".into(),
        }
    );
    assert_eq!(
        config.alarms,
        AlarmConfig {
            iterator_age_warn_seconds: 300,
            iterator_age_page_seconds: 3600,
        }
    );
}

#[test]
fn defaults() {
    let config = accepted(
        r#"
[table.things]
partition_key = "pk"
sort_key = "sk"

[[edge_set]]
table = "things"
attribute = "edges"
include = ["E"]
member = ["sk"]

[[index]]
name = "by-owner"
source = { table = "things" }
table = "ByOwner"
partition_key = "ipk"
sort_key = "isk"
partition = "{owner}"

[[route]]
table = "things"
detail_type = "T1 Changed"
events = ["INSERT", "MODIFY", "REMOVE"]
"#,
    );
    assert_eq!(config.events.source, defaults::EVENT_SOURCE);
    assert_eq!(config.events.bus, defaults::EVENT_BUS);
    assert_eq!(config.events.max_request_bytes, 256 * 1024);
    assert_eq!(config.alarms.iterator_age_warn_seconds, 300);
    assert_eq!(config.alarms.iterator_age_page_seconds, 3600);
    assert_eq!(config.tables[0].ttl_attribute, None);
    assert_eq!(config.edge_sets[0].max_members, 2000);
    assert_eq!(config.edge_sets[0].complete_attribute, "edgesComplete");
    let index = &config.indexes[0];
    assert_eq!(index.source.key_prefix, None);
    assert_eq!(index.for_each, None);
    assert!(index.sort.is_empty());
    assert!(index.project.is_empty());
    assert_eq!(index.shards, 1, "unsharded by default");
    assert_eq!(
        index.partition.parts,
        [TemplatePart::Ref(ValueRef::Attribute("owner".into()))]
    );
    let route = &config.routes[0];
    assert_eq!(route.items, RouteItems::All);
    assert_eq!(route.key_prefix, None);
    assert_eq!(
        route.events,
        [RouteEvent::Insert, RouteEvent::Modify, RouteEvent::Remove]
    );

    // The index table's keys default to pk/sk.
    let config = accepted(
        r#"
[table.things]
partition_key = "id"

[[index]]
name = "i"
source = { table = "things" }
table = "IndexTable"
partition = "all"
sort = [ { value = "n", type = "n", order = "desc" } ]
shards = 256
"#,
    );
    assert_eq!(config.indexes[0].shards, 256);
    assert_eq!(config.indexes[0].partition_key, "pk");
    assert_eq!(config.indexes[0].sort_key, "sk");
    assert_eq!(
        config.indexes[0].sort[0].column,
        Column::new(ColumnType::N, Direction::Desc)
    );
    assert_eq!(config.indexes[0].sort[0].column.nulls, Nulls::Last);
}

#[test]
fn keywords_are_case_insensitive() {
    let config = accepted(&format!(
        r#"{BASE}
[[index]]
name = "i"
source = {{ table = "issues" }}
table = "IssueIndex"
partition = "x"
sort = [
  {{ value = "a", type = "TIMESTAMP", order = "DESC", nulls = "First" }},
  {{ value = "{{b}}", type = "Bool" }},
  {{ value = "c", type = "date" }},
  {{ value = "d", type = "B" }},
  {{ value = "e", type = "s" }},
]

[[route]]
table = "records"
detail_type = "X"
events = ["insert", "Expire"]
items = "Edges"
"#
    ));
    let sort = &config.indexes[0].sort;
    assert_eq!(
        sort[0].column,
        Column {
            ty: ColumnType::Timestamp,
            direction: Direction::Desc,
            nulls: Nulls::First
        }
    );
    assert_eq!(sort[1].value, ValueRef::Attribute("b".into()));
    let types: Vec<ColumnType> = sort.iter().map(|c| c.column.ty).collect();
    assert_eq!(
        types,
        [
            ColumnType::Timestamp,
            ColumnType::Bool,
            ColumnType::Date,
            ColumnType::B,
            ColumnType::S
        ]
    );
    assert_eq!(config.routes[0].events, [RouteEvent::Insert, RouteEvent::Expire]);
    assert_eq!(config.routes[0].items, RouteItems::Edges);
}

/// One bad config: `text` is appended to [`BASE`] when `base`; the line
/// holding `# <-` (or line 1) is where the one problem must be, and its
/// display must contain `reason`.
struct Case {
    name: &'static str,
    base: bool,
    text: &'static str,
    reason: &'static str,
}

const fn case(name: &'static str, text: &'static str, reason: &'static str) -> Case {
    Case {
        name,
        base: true,
        text,
        reason,
    }
}

const fn alone(name: &'static str, text: &'static str, reason: &'static str) -> Case {
    Case {
        name,
        base: false,
        text,
        reason,
    }
}

const CASES: &[Case] = &[
    // --- syntax and structure
    alone("syntax error", "[table.records\npartition_key = \"a\"", "unclosed table, expected `]`"),
    alone(
        "duplicate key",
        "[table.records]\npartition_key = \"a\"\npartition_key = \"b\" # <-",
        "duplicate key",
    ),
    alone("no table", "[events]\nsource = \"x\"", "no table is declared"),
    alone("empty file", "", "no table is declared"),
    alone(
        "table array",
        "[[table]] # <-\npartition_key = \"a\"",
        "`table` must hold one table per source table",
    ),
    alone(
        "table keys without a name",
        "[table]\npartition_key = \"a\" # <-",
        "table.partition_key: not a table",
    ),
    alone("table as a string", "table = \"records\" # <-", "write [table.NAME]"),
    case("index not an array", "[index] # <-\nname = \"x\"", "`index` must be an array of tables: write [[index]]"),
    alone(
        "route not an array",
        "route = 3 # <-\n[table.records]\npartition_key = \"a\"",
        "write [[route]]",
    ),
    // --- unknown keys at every level
    alone(
        "unknown top-level key",
        "colour = \"blue\" # <-\n[table.records]\npartition_key = \"a\"",
        "unknown top-level key `colour`",
    ),
    case("unknown key in [events]", "[events]\nsorce = \"x\" # <-", "[events] sorce: unknown field `sorce`"),
    case(
        "unknown key in [alarms]",
        "[alarms]\niterator_age_warn = 5 # <-",
        "[alarms] iterator_age_warn: unknown field `iterator_age_warn`",
    ),
    case(
        "unknown key in a table",
        "[table.more]\npartition_key = \"a\"\nsortkey = \"b\" # <-",
        "[table.more] sortkey: unknown field `sortkey`, expected one of",
    ),
    case(
        "unknown key in an edge set",
        "[[edge_set]]\ntable = \"issues\"\nattribute = \"e\"\ninclude = [\"A\"]\nmember = [\"rel\"]\nmax = 3 # <-",
        "[[edge_set]] \"issues.e\" max: unknown field `max`",
    ),
    case(
        "unknown key in an index",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"{a}\"\nprojection = [\"a\"] # <-",
        "[[index]] \"i\" projection: unknown field `projection`",
    ),
    case(
        "unknown key in an index source",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\", prefix = \"x\" } # <-\ntable = \"Ix1\"\npartition = \"{a}\"",
        "[[index]] \"i\" source.prefix: unknown field `prefix`",
    ),
    case(
        "unknown key in a sort column",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"{a}\"\nsort = [\n { value = \"a\", type = \"s\" },\n { value = \"b\", type = \"s\", direction = \"desc\" }, # <-\n]",
        "[[index]] \"i\" sort[2].direction: unknown field `direction`",
    ),
    case(
        "unknown key in a route",
        "[[route]]\ntable = \"records\"\ndetail_type = \"X\"\nevents = [\"INSERT\"]\nwhen = 1 # <-",
        "[[route]] \"X\" when: unknown field `when`",
    ),
    // --- types and required keys
    case(
        "wrong type",
        "[[edge_set]]\ntable = \"issues\"\nattribute = \"e\"\ninclude = [\"A\"]\nmember = [\"rel\"]\nmax_members = \"many\" # <-",
        "max_members: invalid type: string \"many\", expected i64",
    ),
    case(
        "missing required key",
        "[[index]] # <-\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"",
        "[[index]] \"i\": missing field `partition`",
    ),
    case(
        "missing partition_key",
        "[table.more] # <-\nsort_key = \"a\"",
        "[table.more]: missing field `partition_key`",
    ),
    case(
        "string instead of list",
        "[[route]]\ntable = \"records\"\ndetail_type = \"X\"\nevents = \"INSERT\" # <-",
        "[[route]] \"X\" events: invalid type",
    ),
    // --- tables
    case("table name too short", "[table.ab] # <-\npartition_key = \"a\"", "\"ab\" is not a DynamoDB table name"),
    case(
        "table name with a space",
        "[table.\"my table\"] # <-\npartition_key = \"a\"",
        "[table.\"my table\"] table name: \"my table\" is not a DynamoDB table name",
    ),
    case("empty partition_key", "[table.more]\npartition_key = \"\" # <-", "partition_key: empty attribute name"),
    case(
        "sort_key equals partition_key",
        "[table.more]\npartition_key = \"a\"\nsort_key = \"a\" # <-",
        "sort_key: \"a\" is also the partition_key",
    ),
    case("empty ttl_attribute", "[table.more]\npartition_key = \"a\"\nttl_attribute = \"\" # <-", "empty attribute name"),
    // --- edge sets
    case(
        "edge set on an undeclared table",
        "[[edge_set]]\ntable = \"recordz\" # <-\nattribute = \"e\"\ninclude = [\"A\"]\nmember = [\"x\"]",
        "table \"recordz\" is not declared (declared: records, issues, plain)",
    ),
    case(
        "edge set on a table without sort key",
        "[[edge_set]]\ntable = \"plain\" # <-\nattribute = \"e\"\ninclude = [\"A\"]\nmember = [\"x\"]",
        "table \"plain\" has no sort_key",
    ),
    case(
        "two edge sets on one table",
        "[[edge_set]]\ntable = \"records\" # <-\nattribute = \"more\"\ninclude = [\"A\"]\nmember = [\"x\"]",
        "table \"records\" already has an edge set (line 15)",
    ),
    case(
        "empty member list",
        "[[edge_set]]\ntable = \"issues\"\nattribute = \"e\"\ninclude = [\"A\"]\nmember = [] # <-",
        "member: no member attribute",
    ),
    case(
        "empty include list",
        "[[edge_set]]\ntable = \"issues\"\nattribute = \"e\"\ninclude = [] # <-\nmember = [\"x\"]",
        "include: no edge type is included",
    ),
    case(
        "edge type with a dash",
        "[[edge_set]]\ntable = \"issues\"\nattribute = \"e\"\ninclude = [\"A\", \"B-C\"] # <-\nmember = [\"x\"]",
        "\"B-C\" contains `-`",
    ),
    case(
        "edge type twice",
        "[[edge_set]]\ntable = \"issues\"\nattribute = \"e\"\ninclude = [\"A\", \"A\"] # <-\nmember = [\"x\"]",
        "\"A\" is listed twice",
    ),
    case(
        "member twice",
        "[[edge_set]]\ntable = \"issues\"\nattribute = \"e\"\ninclude = [\"A\"]\nmember = [\"x\", \"x\"] # <-",
        "member: \"x\" is listed twice",
    ),
    case(
        "member is the set attribute",
        "[[edge_set]]\ntable = \"issues\"\nattribute = \"e\"\ninclude = [\"A\"]\nmember = [\"e\"] # <-",
        "\"e\" is an attribute the pipeline writes on nodes",
    ),
    case(
        "set attribute is a key attribute",
        "[[edge_set]]\ntable = \"issues\"\nattribute = \"rel\" # <-\ninclude = [\"A\"]\nmember = [\"x\"]",
        "attribute: \"rel\" is a key or TTL attribute of table \"issues\"",
    ),
    case(
        "complete attribute is the set attribute",
        "[[edge_set]]\ntable = \"issues\"\nattribute = \"e\"\ninclude = [\"A\"]\nmember = [\"x\"]\ncomplete_attribute = \"e\" # <-",
        "complete_attribute: the same attribute as `attribute`",
    ),
    case(
        "set attribute is the default complete attribute",
        "[[edge_set]]\ntable = \"issues\"\nattribute = \"edgesComplete\" # <-\ninclude = [\"A\"]\nmember = [\"x\"]",
        "is the default complete_attribute",
    ),
    case(
        "max_members zero",
        "[[edge_set]]\ntable = \"issues\"\nattribute = \"e\"\ninclude = [\"A\"]\nmember = [\"x\"]\nmax_members = 0 # <-",
        "max_members: 0 is out of range (1..=100000)",
    ),
    case(
        "max_members too large",
        "[[edge_set]]\ntable = \"issues\"\nattribute = \"e\"\ninclude = [\"A\"]\nmember = [\"x\"]\nmax_members = 100001 # <-",
        "100001 is out of range",
    ),
    // --- indexes
    case(
        "index on an undeclared table",
        "[[index]]\nname = \"issue-attrib\"\nsource = { table = \"issuez\" } # <-\ntable = \"Ix1\"\npartition = \"{a}\"",
        "[[index]] \"issue-attrib\" source.table: table \"issuez\" is not declared (declared: records, issues, plain)",
    ),
    case(
        "duplicate index name",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"{a}\"\n\n[[index]]\nname = \"i\" # <-\nsource = { table = \"issues\" }\ntable = \"Ix2\"\npartition = \"{a}\"",
        "index name \"i\" is already used by the index at line 20",
    ),
    case(
        "duplicate index table",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"{a}\"\n\n[[index]]\nname = \"j\"\nsource = { table = \"issues\" }\ntable = \"Ix1\" # <-\npartition = \"{a}\"",
        "table \"Ix1\" is already the table of index \"i\" (line 22); each index owns its table",
    ),
    case(
        "index table is a source table",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"records\" # <-\npartition = \"{a}\"",
        "\"records\" is a declared source table",
    ),
    case(
        "bad index table name",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Issue Index\" # <-\npartition = \"{a}\"",
        "[[index]] \"i\" table: \"Issue Index\" is not a DynamoDB table name",
    ),
    case(
        "bad index name",
        "[[index]]\nname = \"issue attrib\" # <-\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"{a}\"",
        "\"issue attrib\" is not an index name",
    ),
    case(
        "empty key_prefix",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\", key_prefix = \"\" } # <-\ntable = \"Ix1\"\npartition = \"{a}\"",
        "source.key_prefix: empty key_prefix",
    ),
    case(
        "unknown sort type",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"{a}\"\nsort = [\n { value = \"a\", type = \"int\" }, # <-\n]",
        "sort[1].type: unknown column type \"int\"",
    ),
    case(
        "unknown order",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"{a}\"\nsort = [ { value = \"a\", type = \"s\", order = \"up\" } ] # <-",
        "sort[1].order: unknown order \"up\"",
    ),
    case(
        "unknown nulls",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"{a}\"\nsort = [ { value = \"a\", type = \"s\", nulls = \"never\" } ] # <-",
        "sort[1].nulls: unknown nulls placement \"never\"",
    ),
    case(
        "sort value is not one reference",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"{a}\"\nsort = [ { value = \"x{num}\", type = \"s\" } ] # <-",
        "sort[1].value: `x{num}` is not a single value reference",
    ),
    case(
        "bare entry reference in sort",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\nfor_each = \"m\"\npartition = \"{entry.key}\"\nsort = [ { value = \"entry.value\", type = \"s\" } ] # <-",
        "bare `entry.value` is ambiguous",
    ),
    case(
        "entry reference in partition without for_each",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"f#{entry.key}\" # <-",
        "partition: {entry.key} refers to the entry, but the index has no for_each",
    ),
    case(
        "entry reference in sort without for_each",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"{a}\"\nsort = [ { value = \"{entry.value}\", type = \"any\" } ] # <-",
        "sort[1].value: {entry.value} refers to the entry, but the index has no for_each",
    ),
    case(
        "for_each without an entry reference",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\nfor_each = \"m\" # <-\npartition = \"{a}\"",
        "for_each: neither partition nor sort refers to {entry.key} or {entry.value}",
    ),
    case(
        "for_each on a key attribute",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\nfor_each = \"rel\" # <-\npartition = \"{entry.key}\"",
        "for_each: \"rel\" is a key attribute of the source table",
    ),
    case(
        "unclosed brace",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"f#{a\" # <-",
        "partition: unclosed `{` at character 3",
    ),
    case(
        "unknown entry reference",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\nfor_each = \"m\"\npartition = \"{entry.name}\" # <-",
        "unknown entry reference `{entry.name}`",
    ),
    case(
        "no shards",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"{a}\"\nshards = 0 # <-",
        "[[index]] \"i\" shards: 0 is out of range (1..=256)",
    ),
    case(
        "too many shards",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"{a}\"\nshards = 257 # <-",
        "shards: 257 is out of range (1..=256)",
    ),
    case(
        "shards not an integer",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"{a}\"\nshards = \"4\" # <-",
        "shards: invalid type: string \"4\", expected i64",
    ),
    case(
        "empty template",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"\" # <-",
        "partition: empty template",
    ),
    case(
        "index keys equal",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition_key = \"k\"\nsort_key = \"k\" # <-\npartition = \"{a}\"",
        "sort_key: partition_key and sort_key are both \"k\"",
    ),
    case(
        "index key equals a source key attribute",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition_key = \"id\" # <-\npartition = \"{a}\"",
        "partition_key: \"id\" is a key attribute of source table \"issues\"",
    ),
    case(
        "projecting the index partition key",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"{a}\"\nproject = [\"name\", \"pk\"] # <-",
        "project: \"pk\" is a key attribute of the index table",
    ),
    case(
        "projecting the index sort key",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\nsort_key = \"s2\"\npartition = \"{a}\"\nproject = [\"s2\"] # <-",
        "\"s2\" is a key attribute of the index table",
    ),
    case(
        "projecting a source key attribute",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"{a}\"\nproject = [\"id\"] # <-",
        "\"id\" is a key attribute of the source table, always copied",
    ),
    case(
        "projecting the edge set",
        "[[index]]\nname = \"i\"\nsource = { table = \"records\" }\ntable = \"Ix1\"\npartition = \"{a}\"\nproject = [\"edges\"] # <-",
        "\"edges\" is owned by the pipeline (the edge set \"edges\" of table \"records\")",
    ),
    case(
        "projecting the complete attribute",
        "[[index]]\nname = \"i\"\nsource = { table = \"records\" }\ntable = \"Ix1\"\npartition = \"{a}\"\nproject = [\"edgesComplete\"] # <-",
        "\"edgesComplete\" is owned by the pipeline",
    ),
    case(
        "projecting twice",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"{a}\"\nproject = [\"a\", \"a\"] # <-",
        "project: \"a\" is listed twice",
    ),
    case(
        "empty projected attribute",
        "[[index]]\nname = \"i\"\nsource = { table = \"issues\" }\ntable = \"Ix1\"\npartition = \"{a}\"\nproject = [\"\"] # <-",
        "project: empty attribute name",
    ),
    // --- routes
    case(
        "route on an undeclared table",
        "[[route]]\ntable = \"layers\" # <-\ndetail_type = \"Layer Expired\"\nevents = [\"EXPIRE\"]",
        "[[route]] \"Layer Expired\" table: table \"layers\" is not declared",
    ),
    case(
        "route without events",
        "[[route]]\ntable = \"records\"\ndetail_type = \"X\"\nevents = [] # <-",
        "events: no events",
    ),
    case(
        "unknown event",
        "[[route]]\ntable = \"records\"\ndetail_type = \"X\"\nevents = [\"INSERT\", \"DELETE\"] # <-",
        "unknown event \"DELETE\"",
    ),
    case(
        "event twice",
        "[[route]]\ntable = \"records\"\ndetail_type = \"X\"\nevents = [\"INSERT\", \"insert\"] # <-",
        "\"insert\" is listed twice",
    ),
    case(
        "EXPIRE without TTL",
        "[[route]]\ntable = \"issues\"\ndetail_type = \"Issue Expired\"\nevents = [\"EXPIRE\"] # <-",
        "table \"issues\" has no ttl_attribute, so EXPIRE can never happen",
    ),
    case(
        "nodes without an edge set",
        "[[route]]\ntable = \"issues\"\ndetail_type = \"X\"\nevents = [\"INSERT\"]\nitems = \"nodes\" # <-",
        "items = \"nodes\" needs an edge set on table \"issues\"",
    ),
    case(
        "edges without an edge set",
        "[[route]]\ntable = \"plain\"\ndetail_type = \"X\"\nevents = [\"INSERT\"]\nitems = \"edges\" # <-",
        "needs an edge set",
    ),
    case(
        "unknown items",
        "[[route]]\ntable = \"records\"\ndetail_type = \"X\"\nevents = [\"INSERT\"]\nitems = \"leaves\" # <-",
        "unknown items \"leaves\"",
    ),
    case(
        "empty detail type",
        "[[route]]\ntable = \"records\"\ndetail_type = \" \" # <-\nevents = [\"INSERT\"]",
        "empty detail_type",
    ),
    case(
        "empty route key_prefix",
        "[[route]]\ntable = \"records\"\ndetail_type = \"X\"\nevents = [\"INSERT\"]\nkey_prefix = \"\" # <-",
        "key_prefix: empty key_prefix",
    ),
    case(
        "reap on edges",
        "[[route]]\ntable = \"records\"\ndetail_type = \"X\"\nevents = [\"EXPIRE\"]\nitems = \"edges\"\nreap = true # <-",
        "reap: the reaper deletes a removed node's edges: the route needs items = \"nodes\"",
    ),
    case(
        "reap on inserts",
        "[[route]]\ntable = \"records\"\ndetail_type = \"X\"\nevents = [\"EXPIRE\", \"INSERT\"]\nitems = \"nodes\"\nreap = true # <-",
        "events may be EXPIRE and REMOVE, not INSERT or MODIFY",
    ),
    case(
        "two routes with one rule name",
        "[[route]]\ntable = \"records\"\ndetail_type = \"Node Expired\"\nevents = [\"EXPIRE\"]\n[[route]]\ntable = \"records\"\ndetail_type = \"node  expired\" # <-\nevents = [\"REMOVE\"]",
        "its rule name \"records-node-expired\" is that of the route \"Node Expired\" of table \"records\"",
    ),
    case(
        "bad target index name",
        "[[edge_set]]\ntable = \"issues\"\nattribute = \"e\"\ninclude = [\"X\"]\nmember = [\"rel\"]\ntarget_index = \"by target\" # <-",
        "target_index: \"by target\" is not a DynamoDB table name",
    ),
    // --- events and alarms
    case("empty event source", "[events]\nsource = \"\" # <-", "[events] source: the event source is empty"),
    case("aws event source", "[events]\nsource = \"aws.dynamodb\" # <-", "reserved for AWS"),
    case("bad bus name", "[events]\nbus = \"my bus\" # <-", "[events] bus: \"my bus\" is not an event bus name"),
    case(
        "request budget too small",
        "[events]\nmax_request_bytes = 10 # <-",
        "max_request_bytes: 10 is out of range (1024..=1048576)",
    ),
    case(
        "alarms out of order",
        "[alarms]\niterator_age_warn_seconds = 600\niterator_age_page_seconds = 300 # <-",
        "the page threshold (300 s) must be greater than the warn threshold (600 s)",
    ),
    case(
        "warn above the default page",
        "[alarms]\niterator_age_warn_seconds = 7200 # <-",
        "iterator_age_warn_seconds: the page threshold (3600 s) must be greater than the warn threshold (7200 s)",
    ),
    case(
        "page past retention",
        "[alarms]\niterator_age_page_seconds = 86400 # <-",
        "86400 must be below 86400",
    ),
    case("warn zero", "[alarms]\niterator_age_warn_seconds = 0 # <-", "0 is out of range"),
    case("page negative", "[alarms]\niterator_age_page_seconds = -5 # <-", "-5 must be at least 1"),
];

#[test]
fn bad_configs_are_refused_with_line_and_reason() {
    let mut failures = Vec::new();
    for case in CASES {
        let text = if case.base {
            format!("{BASE}{}", case.text)
        } else {
            case.text.to_string()
        };
        let line = text.lines().position(|l| l.contains("# <-")).map_or(1, |i| i + 1);
        let problems = match parse(&text, "t.toml") {
            Ok(_) => {
                failures.push(format!("{}: accepted", case.name));
                continue;
            }
            Err(e) => e.problems().to_vec(),
        };
        let found = problems
            .iter()
            .any(|p| p.line == line && p.file == "t.toml" && p.to_string().contains(case.reason));
        if !found || problems.len() != 1 {
            failures.push(format!(
                "{}: expected one problem at line {line} containing {:?}, got:\n{}",
                case.name,
                case.reason,
                show(&problems)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}

#[test]
fn problem_display_has_file_line_column_key_and_reason() {
    let text = format!(
        "{BASE}\n[[index]]\nname = \"issue-attrib\"\nsource = {{ table = \"issuez\" }}\ntable = \"Ix1\"\npartition = \"{{a}}\"\n"
    );
    let problems = refused(&text);
    assert_eq!(
        problems[0].to_string(),
        "t.toml:22:20: [[index]] \"issue-attrib\" source.table: table \"issuez\" is not declared (declared: records, issues, plain)"
    );
}

#[test]
fn every_problem_is_reported_in_file_order() {
    let text = r#"
[events]
source = ""

[alarms]
iterator_age_warn_seconds = 600
iterator_age_page_seconds = 60

[table.records]
partition_key = "source"

[[edge_set]]
table = "records"
attribute = "edges"
include = []
member = []

[[index]]
name = "a"
source = { table = "nope" }
table = "records"
for_each = "m"
partition = "{entry.key"
sort = [ { value = "n", type = "int" } ]

[[index]]
name = "b"
source = { table = "records" }
table = "IndexB"
bogus = 1

[[route]]
table = "records"
detail_type = "Record Expired"
events = []
items = "nodes"

[[route]]
table = "records"
detail_type = "Record Expired"
events = ["EXPIRE"]
"#;
    let problems = refused(text);
    let lines: Vec<usize> = problems.iter().map(|p| p.line).collect();
    assert_eq!(
        lines,
        [3, 7, 13, 15, 16, 20, 21, 23, 24, 30, 35, 40, 41],
        "\n{}",
        show(&problems)
    );
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted);
    // One line per problem.
    let err = parse(text, "t.toml").expect_err("refused");
    assert_eq!(err.to_string().lines().count(), problems.len());
}

#[test]
fn broken_sections_do_not_cause_follow_up_problems() {
    // The table and the edge set fail to deserialize; references to them
    // must not be reported as undeclared or missing.
    let problems = refused(
        r#"
[table.records]
partition_key = "source"
sort_key = "target"
colour = "red"

[[edge_set]]
table = "records"
attribute = "edges"
include = ["A"]
member = ["target"]
shape = 1

[[route]]
table = "records"
detail_type = "Node Expired"
events = ["EXPIRE", "INSERT"]
items = "nodes"

[[index]]
name = "i"
source = { table = "records" }
table = "Ix1"
partition = "{a}"
"#,
    );
    assert_eq!(problems.len(), 2, "{}", show(&problems));
    assert!(problems[0].reason.contains("unknown field `colour`"));
    assert!(problems[1].reason.contains("unknown field `shape`"));
}

#[test]
fn columns_point_at_the_value() {
    let problems = refused("[table.records]\npartition_key = \"a\"\n\n[events]\nbus =   \"bad bus\"\n");
    assert_eq!((problems[0].line, problems[0].column), (5, 9));
    assert_eq!(problems[0].key, "[events] bus");
}

#[test]
fn load_reads_files() {
    let dir = std::env::temp_dir().join(format!("streamdex-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");

    let good = dir.join("good.toml");
    std::fs::write(&good, EXAMPLE_CONFIG).expect("write");
    let config = load(&good).expect("loads");
    assert_eq!(config.tables.len(), 3);

    let missing = dir.join("missing.toml");
    let err = load(&missing).expect_err("missing");
    assert!(matches!(err, ConfigError::Read { .. }));
    assert!(
        err.to_string()
            .starts_with(&format!("cannot read {}: ", missing.display())),
        "{err}"
    );
    assert!(err.problems().is_empty());

    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        "[table.records]\npartition_key = \"a\"\nsort_key = \"b\"\nttl_attribute = 3\n",
    )
    .expect("write");
    let err = load(&bad).expect_err("bad");
    let problems = err.problems();
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].file, bad.display().to_string());
    assert_eq!(problems[0].line, 4);

    let binary = dir.join("binary.toml");
    std::fs::write(&binary, b"[table.records]\npartition_key = \"a\xff\"\n").expect("write");
    let err = load(&binary).expect_err("binary");
    assert_eq!(err.problems().len(), 1);
    assert_eq!((err.problems()[0].line, err.problems()[0].column), (2, 19));
    assert!(err.to_string().contains("not valid UTF-8"), "{err}");

    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_tombstone_lifetime_is_read_defaulted_and_bounded() {
    assert_eq!(
        accepted(BASE).pipeline.tombstone_ttl_hours,
        defaults::TOMBSTONE_TTL_HOURS
    );
    let config = accepted(&format!("{BASE}\n[pipeline]\ntombstone_ttl_hours = 72\n"));
    assert_eq!(config.pipeline.tombstone_ttl_hours, 72);
    assert_eq!(config.pipeline.tombstone_ttl_seconds(), 72 * 3600);
    let text = format!("{BASE}\n[pipeline]\ntombstone_ttl_hours = 12\n");
    let problems = refused(&text);
    let line = text.lines().count();
    assert!(
        problems
            .iter()
            .any(|p| p.line == line && p.key == "[pipeline] tombstone_ttl_hours" && p.reason.contains("24 h")),
        "{}",
        show(&problems)
    );
    let problems = refused(&format!("{BASE}\n[pipeline]\ntombstone_ttl_hours = 9000\n"));
    assert!(
        problems.iter().any(|p| p.reason.contains("out of range")),
        "{}",
        show(&problems)
    );
    let problems = refused(&format!("{BASE}\n[pipeline]\ntombstone_ttl = 48\n"));
    assert!(
        problems.iter().any(|p| p.key.contains("pipeline")),
        "{}",
        show(&problems)
    );
}

#[test]
fn the_version_attributes_are_reserved() {
    let member = crate::version::member_version_attribute("GOAL-1");
    for name in crate::version::RESERVED_ATTRIBUTES.into_iter().chain([member.as_str()]) {
        let text = format!(
            "{BASE}\n[[index]]\nname = \"by-state\"\nsource = {{ table = \"issues\" }}\ntable = \"ByState\"\n\
             partition = \"{{state}}\"\nsort = [ {{ value = \"{{state}}\", type = \"S\" }} ]\nproject = [\"{name}\"]\n"
        );
        let problems = refused(&text);
        assert!(
            problems
                .iter()
                .any(|p| p.reason.contains("reserved") && p.key.contains("project")),
            "{name}: {}",
            show(&problems)
        );
        let text = BASE.replace("attribute = \"edges\"", &format!("attribute = \"{name}\""));
        let problems = refused(&text);
        assert!(
            problems.iter().any(|p| p.reason.contains("reserved")),
            "{name}: {}",
            show(&problems)
        );
    }
}

#[test]
fn a_table_reads_its_dynamodb_stream_unless_it_says_kinesis() {
    let config = accepted(BASE);
    assert!(config.tables.iter().all(|t| t.stream == ChangeSource::DynamoDb));
    let kinesis = |settings: &str| BASE.replace("sort_key = \"rel\"\n", &format!("sort_key = \"rel\"\n{settings}\n"));
    let config = accepted(&kinesis("stream = \"kinesis\""));
    assert_eq!(
        config.table("issues").map(|t| t.stream),
        Some(ChangeSource::Kinesis(KinesisSource {
            precision: Precision::Microsecond,
            retention_hours: defaults::KINESIS_RETENTION_HOURS,
        }))
    );
    assert_eq!(config.table("records").map(|t| t.stream), Some(ChangeSource::DynamoDb));
    let config = accepted(&format!(
        "{}\n[pipeline]\ntombstone_ttl_hours = 200\n",
        kinesis("stream = \"Kinesis\"\nprecision = \"MILLISECOND\"\nretention_hours = 168")
    ));
    assert_eq!(
        config.table("issues").map(|t| t.stream),
        Some(ChangeSource::Kinesis(KinesisSource {
            precision: Precision::Millisecond,
            retention_hours: 168,
        }))
    );
    assert!(accepted(&kinesis("stream = \"dynamodb\""))
        .tables
        .iter()
        .all(|t| !t.stream.is_unordered()));
}

#[test]
fn a_wrong_change_source_is_explained_where_it_is_written() {
    let kinesis = |settings: &str| BASE.replace("sort_key = \"rel\"\n", &format!("sort_key = \"rel\"\n{settings}\n"));
    // (settings, key, what the reason must say, line of the problem in the settings)
    let cases = [
        ("stream = \"kafka\"", "stream", "expected \"dynamodb\"", 0),
        (
            "precision = \"millisecond\"",
            "precision",
            "set stream = \"kinesis\"",
            0,
        ),
        (
            "stream = \"dynamodb\"\nretention_hours = 48",
            "retention_hours",
            "setting of a Kinesis",
            1,
        ),
        (
            "stream = \"kinesis\"\nprecision = \"second\"",
            "precision",
            "\"microsecond\" or \"millisecond\"",
            1,
        ),
        (
            "stream = \"kinesis\"\nretention_hours = 12",
            "retention_hours",
            "out of range (24..=8760)",
            1,
        ),
        (
            "stream = \"kinesis\"\nretention_hours = 9000",
            "retention_hours",
            "out of range",
            1,
        ),
        (
            "stream = \"kinesis\"\nretention_hours = 72",
            "retention_hours",
            "raise tombstone_ttl_hours to at least 72",
            1,
        ),
    ];
    let base_line = BASE
        .lines()
        .position(|l| l == "sort_key = \"rel\"")
        .map_or(0, |i| i + 2);
    for (settings, key, reason, line) in cases {
        let problems = refused(&kinesis(settings));
        assert!(
            problems.iter().any(|p| p.key == format!("[table.issues] {key}")
                && p.reason.contains(reason)
                && p.line == base_line + line),
            "{settings}: {}",
            show(&problems)
        );
    }
}
