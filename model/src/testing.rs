//! Random write histories over the example config, for property tests: one
//! generator that the planner's (`model::plan`) and the indexer's batch
//! (`stream-indexer`) property tests both draw from, so both are tested on
//! the same kinds of history.
//!
//! A history is a sequence of [`Write`]s (nodes, membership edges with
//! roles, issues with typed custom fields, rewrites of unchanged items);
//! each test interleaves them with its own steps (processing records,
//! Lambda invocations) and applies them to its own tables through the
//! [`Tables`] trait.
//!
//! Behind the `testing` feature (and in this crate's own tests).

use proptest::prelude::*;

use crate::{Image, Value};

pub const NODES: [&str; 4] = ["GOAL-1", "GOAL-2", "TEAM-1", "USER-1"];
pub const EDGE_TYPES: [&str; 3] = ["GOALMEMBERSHIP", "TEAMMEMBERSHIP", "COMMENT"];
pub const ROLES: [&str; 3] = ["300-MEMBER", "400-CONTRIBUTOR", "500-LEAD"];
pub const ISSUES: [&str; 4] = ["issue-1", "issue-2", "issue-3", "bug-1"];
pub const FIELDS: [&str; 4] = ["3fe6", "47e5", "882a", "9c01"];
/// Numbers that sort and compare tricky: equal ones in other spellings,
/// signs, exponents, the extremes of DynamoDB's range and precision.
pub const NUMBERS: [&str; 12] = [
    "3",
    "3.0",
    "30E-1",
    "-4.20",
    "-4.2",
    "0",
    "-0",
    "1E+2",
    "100",
    "0.001",
    "-1E-130",
    "12345678901234567890123456789012345678",
];
pub const STRINGS: [&str; 7] = ["", "Approved", "a\u{0}", "a", "é", "2023-06-01", "😀"];

fn s(v: &str) -> Value {
    Value::S(v.to_owned())
}

/// A custom field's value.
#[derive(Debug, Clone)]
pub enum Field {
    N(usize),
    S(usize),
    Bool(bool),
    Null,
    /// A list: the example index's `any` column refuses it (poison).
    Poison,
}

impl Field {
    pub fn value(&self) -> Value {
        match self {
            Field::N(i) => Value::N(NUMBERS[*i % NUMBERS.len()].to_owned()),
            Field::S(i) => s(STRINGS[*i % STRINGS.len()]),
            Field::Bool(b) => Value::Bool(*b),
            Field::Null => Value::Null(true),
            Field::Poison => Value::L(vec![s("x")]),
        }
    }
}

pub fn field() -> impl Strategy<Value = Field> {
    prop_oneof![
        8 => (0..NUMBERS.len()).prop_map(Field::N),
        8 => (0..STRINGS.len()).prop_map(Field::S),
        2 => any::<bool>().prop_map(Field::Bool),
        1 => Just(Field::Null),
        1 => Just(Field::Poison),
    ]
}

/// One user write (PutItem, UpdateItem or DeleteItem).
#[derive(Debug, Clone)]
pub enum Write {
    PutNode {
        node: usize,
        name: u8,
    },
    /// UpdateItem: merges (keeps the pipeline's attributes), creates if missing.
    UpdateNode {
        node: usize,
        name: u8,
    },
    DeleteNode {
        node: usize,
    },
    PutEdge {
        node: usize,
        ty: usize,
        user: u8,
        role: Option<usize>,
    },
    SetRole {
        node: usize,
        ty: usize,
        user: u8,
        role: Option<usize>,
    },
    DeleteEdge {
        node: usize,
        ty: usize,
        user: u8,
    },
    PutIssue {
        issue: usize,
        num: usize,
        state: bool,
        fields: Vec<(usize, Field)>,
    },
    SetField {
        issue: usize,
        field: usize,
        value: Field,
    },
    RemoveField {
        issue: usize,
        field: usize,
    },
    SetNum {
        issue: usize,
        num: usize,
    },
    DeleteIssue {
        issue: usize,
    },
    /// Rewrites an item unchanged (moto emits a MODIFY with equal images).
    Touch {
        pick: usize,
    },
}

pub fn write() -> impl Strategy<Value = Write> {
    let node = 0..NODES.len();
    let ty = 0..EDGE_TYPES.len();
    let user = 0u8..3;
    let role = proptest::option::weighted(0.9, 0..ROLES.len());
    prop_oneof![
        2 => (node.clone(), 0u8..3).prop_map(|(node, name)| Write::PutNode { node, name }),
        2 => (node.clone(), 0u8..3).prop_map(|(node, name)| Write::UpdateNode { node, name }),
        1 => node.clone().prop_map(|node| Write::DeleteNode { node }),
        4 => (node.clone(), ty.clone(), user.clone(), role.clone())
            .prop_map(|(node, ty, user, role)| Write::PutEdge { node, ty, user, role }),
        3 => (node.clone(), ty.clone(), user.clone(), role)
            .prop_map(|(node, ty, user, role)| Write::SetRole { node, ty, user, role }),
        2 => (node, ty, user).prop_map(|(node, ty, user)| Write::DeleteEdge { node, ty, user }),
        2 => (0..ISSUES.len(), 0..NUMBERS.len(), any::<bool>(), proptest::collection::vec((0..FIELDS.len(), field()), 0..4))
            .prop_map(|(issue, num, state, fields)| Write::PutIssue { issue, num, state, fields }),
        3 => (0..ISSUES.len(), 0..FIELDS.len(), field()).prop_map(|(issue, field, value)| Write::SetField { issue, field, value }),
        1 => (0..ISSUES.len(), 0..FIELDS.len()).prop_map(|(issue, field)| Write::RemoveField { issue, field }),
        1 => (0..ISSUES.len(), 0..NUMBERS.len()).prop_map(|(issue, num)| Write::SetNum { issue, num }),
        1 => (0..ISSUES.len()).prop_map(|issue| Write::DeleteIssue { issue }),
        1 => any::<usize>().prop_map(|pick| Write::Touch { pick }),
    ]
}

/// The key image of a node (partition = sort = the node).
pub fn node_key(node: usize) -> Image {
    let id = NODES[node % NODES.len()];
    Image::from([("source".to_owned(), s(id)), ("target".to_owned(), s(id))])
}

/// The key image of an edge of `node` to user `user`.
pub fn edge_key(node: usize, ty: usize, user: u8) -> Image {
    Image::from([
        ("source".to_owned(), s(NODES[node % NODES.len()])),
        (
            "target".to_owned(),
            s(&format!("{}-USER-{user}", EDGE_TYPES[ty % EDGE_TYPES.len()])),
        ),
    ])
}

/// The ledger entry of item `item` (of a table `t`) at version `version`.
pub fn ledger_entry(item: u8, version: u16) -> crate::ledger::Entry {
    crate::ledger::Entry {
        item: format!("t\nS1:{item}"),
        version: crate::Version::of_sequence(&version.to_string()).unwrap_or_else(|_| crate::Version::zero()),
        expires: 0,
    }
}

/// The key image of an issue.
pub fn issue_key(issue: usize) -> Image {
    Image::from([
        ("id".to_owned(), s(ISSUES[issue % ISSUES.len()])),
        ("rel".to_owned(), s("project-1")),
    ])
}

/// The tables a history writes to, with DynamoDB's item semantics.
pub trait Tables {
    fn get(&self, table: &str, key: &Image) -> Option<Image>;
    /// PutItem: replaces the whole item (`item` holds its keys).
    fn put(&mut self, table: &str, item: Image);
    /// DeleteItem.
    fn delete(&mut self, table: &str, key: &Image);
    /// Every item: its table and its key image (for [`Write::Touch`]).
    fn keys(&self) -> Vec<(String, Image)>;
}

impl Write {
    /// Carries the write out on `tables`.
    pub fn apply(&self, tables: &mut impl Tables) {
        let name = |n: u8| s(&format!("name {n}"));
        let role = |r: &Option<usize>| r.map(|r| s(ROLES[r % ROLES.len()]));
        match self {
            Write::PutNode { node, name: n } => {
                let mut item = node_key(*node);
                item.insert("name", name(*n));
                tables.put("records", item);
            }
            Write::UpdateNode { node, name: n } => {
                let mut item = {
                    let key = node_key(*node);
                    tables.get("records", &key).unwrap_or(key)
                };
                item.insert("name", name(*n));
                tables.put("records", item);
            }
            Write::DeleteNode { node } => tables.delete("records", &node_key(*node)),
            Write::PutEdge {
                node,
                ty,
                user,
                role: r,
            } => {
                let mut item = edge_key(*node, *ty, *user);
                item.insert("memberRole", s("x"));
                if let Some(r) = role(r) {
                    item.insert("gsi0", r);
                }
                tables.put("records", item);
            }
            Write::SetRole {
                node,
                ty,
                user,
                role: r,
            } => {
                let mut item = {
                    let key = edge_key(*node, *ty, *user);
                    tables.get("records", &key).unwrap_or(key)
                };
                match role(r) {
                    Some(r) => item.insert("gsi0", r),
                    None => item.remove("gsi0"),
                };
                tables.put("records", item);
            }
            Write::DeleteEdge { node, ty, user } => tables.delete("records", &edge_key(*node, *ty, *user)),
            Write::PutIssue {
                issue,
                num,
                state,
                fields,
            } => {
                let mut item = issue_key(*issue);
                let map = fields
                    .iter()
                    .map(|(k, v)| (FIELDS[*k % FIELDS.len()].to_owned(), v.value()))
                    .collect();
                item.insert("name", s("Girder needs replacing"));
                item.insert("num", Value::N(NUMBERS[*num % NUMBERS.len()].to_owned()));
                item.insert("state", s(if *state { "open" } else { "closed" }));
                item.insert("custom_fields", Value::M(map));
                tables.put("issues", item);
            }
            Write::SetField { issue, field, value } => {
                let mut item = {
                    let key = issue_key(*issue);
                    tables.get("issues", &key).unwrap_or(key)
                };
                let mut map = match item.get("custom_fields") {
                    Some(Value::M(m)) => m.clone(),
                    _ => Default::default(),
                };
                map.insert(FIELDS[*field % FIELDS.len()].to_owned(), value.value());
                item.insert("custom_fields", Value::M(map));
                tables.put("issues", item);
            }
            Write::RemoveField { issue, field } => {
                if let Some(mut item) = tables.get("issues", &issue_key(*issue)) {
                    if let Some(Value::M(m)) = item.get("custom_fields") {
                        let mut map = m.clone();
                        map.remove(FIELDS[*field % FIELDS.len()]);
                        item.insert("custom_fields", Value::M(map));
                        tables.put("issues", item);
                    }
                }
            }
            Write::SetNum { issue, num } => {
                let mut item = {
                    let key = issue_key(*issue);
                    tables.get("issues", &key).unwrap_or(key)
                };
                item.insert("num", Value::N(NUMBERS[*num % NUMBERS.len()].to_owned()));
                tables.put("issues", item);
            }
            Write::DeleteIssue { issue } => tables.delete("issues", &issue_key(*issue)),
            Write::Touch { pick } => {
                let all = tables.keys();
                if !all.is_empty() {
                    let (table, key) = all[pick % all.len()].clone();
                    if let Some(item) = tables.get(&table, &key) {
                        tables.put(&table, item);
                    }
                }
            }
        }
    }
}

/// Any attribute value, nested up to three deep: every type, numbers in
/// every form DynamoDB sends, strings past one byte of length prefix.
pub fn attribute_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        ".{0,8}".prop_map(Value::S),
        "-?[0-9]{1,40}(\\.[0-9]{1,5})?(E-?[0-9]{1,3})?".prop_map(Value::N),
        proptest::collection::vec(any::<u8>(), 0..8).prop_map(Value::B),
        any::<bool>().prop_map(Value::Bool),
        any::<bool>().prop_map(Value::Null),
        proptest::collection::vec(".{0,4}", 0..3).prop_map(Value::Ss),
        proptest::collection::vec("[0-9]{1,3}", 0..3).prop_map(Value::Ns),
        proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..4), 0..3).prop_map(Value::Bs),
        ".{120,300}".prop_map(Value::S),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::L),
            proptest::collection::hash_map(".{0,4}", inner, 0..6).prop_map(Value::M),
        ]
    })
}
