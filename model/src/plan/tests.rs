//! The planner's properties, checked against a small in-memory model of a
//! DynamoDB table, its stream and the derived data.
//!
//! Random write histories run over the example config. Records are processed
//! with random lag and in random interleavings across partition keys (order
//! is kept within one, as Lambda does); the pipeline's own writes go back into
//! the stream. Once everything is drained, every index row and edge set must
//! equal a from-scratch recomputation over the final table, every node must
//! carry the marker, and no plan may have written an unchanged row.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;
use crate::config::{self, Config};
use crate::record::ChangeRecord;
use crate::value::Value;

fn example() -> Config {
    config::parse(config::EXAMPLE_CONFIG, "streamdex.example.toml").expect("the example config is valid")
}

type Key = (String, String);

#[derive(Clone, Copy, PartialEq, Debug)]
enum Origin {
    User,
    Pipeline,
}

struct Pending {
    record: ChangeRecord,
    origin: Origin,
}

/// A table, its stream, and the derived data the plans maintain.
struct Sim<'c> {
    config: &'c Config,
    planner: Planner<'c>,
    tables: BTreeMap<String, BTreeMap<Key, Image>>,
    stream: Vec<Option<Pending>>,
    rows: BTreeMap<(usize, RowKey), Image>,
    seq: u64,
    problems: usize,
}

fn s(v: &str) -> Value {
    Value::S(v.to_owned())
}

impl<'c> Sim<'c> {
    fn new(config: &'c Config) -> Sim<'c> {
        Sim {
            config,
            planner: Planner::new(config),
            tables: BTreeMap::new(),
            stream: Vec::new(),
            rows: BTreeMap::new(),
            seq: 0,
            problems: 0,
        }
    }

    fn table(&self, name: &str) -> &'c TableConfig {
        self.config.table(name).expect("declared")
    }

    fn key_image(&self, table: &str, key: &Key) -> Image {
        let t = self.table(table);
        let mut keys = Image::new();
        keys.insert(t.partition_key.clone(), s(&key.0));
        if let Some(sk) = &t.sort_key {
            keys.insert(sk.clone(), s(&key.1));
        }
        keys
    }

    fn get(&self, table: &str, key: &Key) -> Option<&Image> {
        self.tables.get(table).and_then(|t| t.get(key))
    }

    /// Writes the item (None deletes it) and appends the stream record, as
    /// moto does even for a write that changes nothing.
    fn write(&mut self, table: &str, key: Key, new: Option<Image>, origin: Origin) {
        let keys = self.key_image(table, &key);
        let new = new.map(|mut n| {
            n.extend(keys.clone());
            n
        });
        let items = self.tables.entry(table.to_owned()).or_default();
        let old = match &new {
            Some(n) => items.insert(key, n.clone()),
            None => items.remove(&key),
        };
        let kind = match (&old, &new) {
            (None, Some(_)) => EventKind::Insert,
            (Some(_), Some(_)) => EventKind::Modify,
            (Some(_), None) => EventKind::Remove,
            (None, None) => return,
        };
        self.seq += 1;
        let record = ChangeRecord {
            event_id: None,
            kind,
            table: Some(table.to_owned()),
            source_arn: None,
            keys,
            old,
            new,
            sequence_number: format!("{:021}", self.seq),
            created: None,
            size_bytes: None,
            view_type: None,
            ttl_expiry: false,
        };
        self.stream.push(Some(Pending { record, origin }));
    }

    /// Merges `set` into the item, creating it if missing (UpdateItem is an upsert).
    fn update(&mut self, table: &str, key: Key, set: Vec<(&str, Option<Value>)>) {
        let mut item = self.get(table, &key).cloned().unwrap_or_default();
        for (name, value) in set {
            match value {
                Some(v) => item.insert(name.to_owned(), v),
                None => item.remove(name),
            };
        }
        self.write(table, key, Some(item), Origin::User);
    }

    /// Partition keys with pending records, oldest record first.
    fn pending_partitions(&self) -> Vec<usize> {
        let mut seen = BTreeSet::new();
        let mut firsts = Vec::new();
        for (i, p) in self.stream.iter().enumerate() {
            if let Some(p) = p {
                let pk = (
                    p.record.table.clone(),
                    format!(
                        "{:?}",
                        p.record
                            .keys
                            .get(&self.table(p.record.table.as_deref().unwrap_or_default()).partition_key)
                    ),
                );
                if seen.insert(pk) {
                    firsts.push(i);
                }
            }
        }
        firsts
    }

    /// Processes the oldest pending record of the `pick`-th partition key.
    fn process_one(&mut self, pick: usize) -> bool {
        let firsts = self.pending_partitions();
        if firsts.is_empty() {
            return false;
        }
        let at = firsts[pick % firsts.len()];
        let Some(pending) = self.stream[at].take() else {
            return false;
        };
        let plan = self.planner.plan(&pending.record);
        if pending.origin == Origin::Pipeline {
            assert!(
                plan.mutations.is_empty() && plan.problems.is_empty(),
                "the pipeline's own write planned {plan:?}"
            );
        }
        self.problems += plan.problems.len();
        for m in plan.mutations {
            self.apply(m);
        }
        true
    }

    fn drain(&mut self) {
        let mut steps = 0;
        while self.process_one(0) {
            steps += 1;
            assert!(steps < 100_000, "the stream never drains: a loop");
        }
    }

    fn apply(&mut self, m: Mutation) {
        match m {
            Mutation::PutRow { index, key, attributes } => {
                let before = self.rows.insert((index, key.clone()), attributes.clone());
                assert_ne!(
                    before.as_ref(),
                    Some(&attributes),
                    "plan wrote an unchanged row {key:?}"
                );
            }
            Mutation::DeleteRow { index, key } => {
                assert!(
                    self.rows.remove(&(index, key.clone())).is_some(),
                    "plan deleted a missing row {key:?}"
                );
            }
            Mutation::AddMember { edge_set, node, member } => self.update_set(edge_set, node, |set| {
                set.insert(member);
            }),
            Mutation::RemoveMember { edge_set, node, member } => self.update_set(edge_set, node, |set| {
                set.remove(&member);
            }),
            Mutation::RestoreSet { edge_set, node } => {
                let members = self.members_in_partition(edge_set, &node);
                self.update_set(edge_set, node, |set| set.extend(members))
            }
            Mutation::SetMarker { .. } => panic!("the planner planned a marker: {m:?}"),
        }
    }

    /// The members of the edges in a node's partition (the restore's Query).
    fn members_in_partition(&self, e: usize, node: &str) -> BTreeSet<String> {
        let set = &self.config.edge_sets[e];
        let table = self.table(&set.table);
        let mut members = BTreeSet::new();
        for (key, item) in self.tables.get(&set.table).into_iter().flatten() {
            if key.0 == node && key.1 != node {
                if let Ok(GraphItem::Edge { .. }) = edge::classify(set, table, item) {
                    if let Ok(Some(m)) = edge::member(set, item) {
                        members.insert(m);
                    }
                }
            }
        }
        members
    }

    /// A conditional UpdateItem on the node: nothing when the node is absent.
    fn update_set(&mut self, e: usize, node: String, change: impl FnOnce(&mut BTreeSet<String>)) {
        let set = &self.config.edge_sets[e];
        let key = (node.clone(), node);
        let Some(item) = self.get(&set.table, &key) else { return };
        let mut item = item.clone();
        let mut members: BTreeSet<String> = match item.get(&set.attribute) {
            Some(Value::Ss(m)) => m.iter().cloned().collect(),
            _ => BTreeSet::new(),
        };
        change(&mut members);
        if members.is_empty() {
            item.remove(&set.attribute);
        } else {
            item.insert(set.attribute.clone(), Value::Ss(members.into_iter().collect()));
        }
        item.entry(set.complete_attribute.clone()).or_insert(Value::Bool(true));
        let changed = self.get(&set.table, &key) != Some(&item);
        if changed {
            let table = set.table.clone();
            self.write(&table, key, Some(item), Origin::Pipeline);
        }
    }

    /// Everything the derived data should hold, recomputed from the table.
    fn check_converged(&self) {
        let mut expected = BTreeMap::new();
        for (i, index) in self.config.indexes.iter().enumerate() {
            let table = self.table(&index.source.table);
            for item in self.tables.get(&table.name).into_iter().flat_map(|t| t.values()) {
                let rows = index::rows(index, table, item).unwrap_or_default();
                for key in rows.keys {
                    expected.insert((i, key), rows.projection.clone());
                }
            }
        }
        assert_eq!(self.rows, expected, "index rows differ from the recomputation");
        for (e, set) in self.config.edge_sets.iter().enumerate() {
            for (key, item) in self.tables.get(&set.table).into_iter().flatten() {
                if key.0 != key.1 {
                    continue;
                }
                let actual: BTreeSet<String> = match item.get(&set.attribute) {
                    Some(Value::Ss(m)) => m.iter().cloned().collect(),
                    _ => BTreeSet::new(),
                };
                assert_eq!(
                    actual,
                    self.members_in_partition(e, &key.0),
                    "edge set of node {}",
                    key.0
                );
                assert_eq!(
                    item.get(&set.complete_attribute),
                    Some(&Value::Bool(true)),
                    "marker on node {}",
                    key.0
                );
            }
        }
    }
}

// ---- random histories over the example config ----

const NODES: [&str; 4] = ["GOAL-1", "GOAL-2", "TEAM-1", "USER-1"];
const EDGE_TYPES: [&str; 3] = ["GOALMEMBERSHIP", "TEAMMEMBERSHIP", "COMMENT"];
const ROLES: [&str; 3] = ["300-MEMBER", "400-CONTRIBUTOR", "500-LEAD"];
const ISSUES: [&str; 4] = ["issue-1", "issue-2", "issue-3", "bug-1"];
const FIELDS: [&str; 4] = ["3fe6", "47e5", "882a", "9c01"];
const NUMBERS: [&str; 12] = [
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
const STRINGS: [&str; 7] = ["", "Approved", "a\u{0}", "a", "é", "2023-06-01", "😀"];

#[derive(Debug, Clone)]
enum Field {
    N(usize),
    S(usize),
    Bool(bool),
    Null,
    /// A list: the example index's `any` column refuses it (poison).
    Poison,
}

impl Field {
    fn value(&self) -> Value {
        match self {
            Field::N(i) => Value::N(NUMBERS[*i].to_owned()),
            Field::S(i) => s(STRINGS[*i]),
            Field::Bool(b) => Value::Bool(*b),
            Field::Null => Value::Null(true),
            Field::Poison => Value::L(vec![s("x")]),
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    PutNode {
        node: usize,
        name: u8,
    },
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
    /// Rewrites an item unchanged: moto emits a MODIFY with equal images.
    Touch {
        pick: usize,
    },
    Process {
        pick: usize,
        count: usize,
    },
}

fn field() -> impl Strategy<Value = Field> {
    prop_oneof![
        8 => (0..NUMBERS.len()).prop_map(Field::N),
        8 => (0..STRINGS.len()).prop_map(Field::S),
        2 => any::<bool>().prop_map(Field::Bool),
        1 => Just(Field::Null),
        1 => Just(Field::Poison),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let node = 0..NODES.len();
    let ty = 0..EDGE_TYPES.len();
    let user = 0u8..3;
    let role = proptest::option::weighted(0.9, 0..ROLES.len());
    prop_oneof![
        2 => (node.clone(), any::<u8>()).prop_map(|(node, name)| Op::PutNode { node, name: name % 3 }),
        2 => (node.clone(), any::<u8>()).prop_map(|(node, name)| Op::UpdateNode { node, name: name % 3 }),
        1 => node.clone().prop_map(|node| Op::DeleteNode { node }),
        4 => (node.clone(), ty.clone(), user.clone(), role.clone()).prop_map(|(node, ty, user, role)| Op::PutEdge { node, ty, user, role }),
        3 => (node.clone(), ty.clone(), user.clone(), role).prop_map(|(node, ty, user, role)| Op::SetRole { node, ty, user, role }),
        2 => (node, ty, user).prop_map(|(node, ty, user)| Op::DeleteEdge { node, ty, user }),
        2 => (0..ISSUES.len(), 0..NUMBERS.len(), any::<bool>(), proptest::collection::vec((0..FIELDS.len(), field()), 0..4))
            .prop_map(|(issue, num, state, fields)| Op::PutIssue { issue, num, state, fields }),
        3 => (0..ISSUES.len(), 0..FIELDS.len(), field()).prop_map(|(issue, field, value)| Op::SetField { issue, field, value }),
        1 => (0..ISSUES.len(), 0..FIELDS.len()).prop_map(|(issue, field)| Op::RemoveField { issue, field }),
        1 => (0..ISSUES.len(), 0..NUMBERS.len()).prop_map(|(issue, num)| Op::SetNum { issue, num }),
        1 => (0..ISSUES.len()).prop_map(|issue| Op::DeleteIssue { issue }),
        1 => any::<usize>().prop_map(|pick| Op::Touch { pick }),
        4 => (any::<usize>(), 1usize..6).prop_map(|(pick, count)| Op::Process { pick, count }),
    ]
}

fn node_key(node: usize) -> Key {
    (NODES[node].to_owned(), NODES[node].to_owned())
}

fn edge_key(node: usize, ty: usize, user: u8) -> Key {
    (NODES[node].to_owned(), format!("{}-USER-{user}", EDGE_TYPES[ty]))
}

fn issue_key(issue: usize) -> Key {
    (ISSUES[issue].to_owned(), "project-1".to_owned())
}

fn run(sim: &mut Sim<'_>, op: &Op) {
    let name = |n: u8| Some(s(&format!("name {n}")));
    let role_value = |r: &Option<usize>| r.map(|r| s(ROLES[r]));
    match op {
        Op::PutNode { node, name: n } => {
            let item = Image::from([("name".to_owned(), s(&format!("name {n}")))]);
            sim.write("records", node_key(*node), Some(item), Origin::User);
        }
        Op::UpdateNode { node, name: n } => sim.update("records", node_key(*node), vec![("name", name(*n))]),
        Op::DeleteNode { node } => sim.write("records", node_key(*node), None, Origin::User),
        Op::PutEdge { node, ty, user, role } => {
            let mut item = Image::from([("memberRole".to_owned(), s("x"))]);
            if let Some(r) = role_value(role) {
                item.insert("gsi0".to_owned(), r);
            }
            sim.write("records", edge_key(*node, *ty, *user), Some(item), Origin::User);
        }
        Op::SetRole { node, ty, user, role } => {
            sim.update("records", edge_key(*node, *ty, *user), vec![("gsi0", role_value(role))])
        }
        Op::DeleteEdge { node, ty, user } => sim.write("records", edge_key(*node, *ty, *user), None, Origin::User),
        Op::PutIssue {
            issue,
            num,
            state,
            fields,
        } => {
            let map = fields.iter().map(|(k, v)| (FIELDS[*k].to_owned(), v.value())).collect();
            let item = Image::from([
                ("name".to_owned(), s("Girder needs replacing")),
                ("num".to_owned(), Value::N(NUMBERS[*num].to_owned())),
                ("state".to_owned(), s(if *state { "open" } else { "closed" })),
                ("custom_fields".to_owned(), Value::M(map)),
            ]);
            sim.write("issues", issue_key(*issue), Some(item), Origin::User);
        }
        Op::SetField { issue, field, value } => {
            let key = issue_key(*issue);
            let mut map = match sim.get("issues", &key).and_then(|i| i.get("custom_fields")) {
                Some(Value::M(m)) => m.clone(),
                _ => Default::default(),
            };
            map.insert(FIELDS[*field].to_owned(), value.value());
            sim.update("issues", key, vec![("custom_fields", Some(Value::M(map)))]);
        }
        Op::RemoveField { issue, field } => {
            let key = issue_key(*issue);
            if let Some(Value::M(m)) = sim.get("issues", &key).and_then(|i| i.get("custom_fields")) {
                let mut map = m.clone();
                map.remove(FIELDS[*field]);
                sim.update("issues", key, vec![("custom_fields", Some(Value::M(map)))]);
            }
        }
        Op::SetNum { issue, num } => sim.update(
            "issues",
            issue_key(*issue),
            vec![("num", Some(Value::N(NUMBERS[*num].to_owned())))],
        ),
        Op::DeleteIssue { issue } => sim.write("issues", issue_key(*issue), None, Origin::User),
        Op::Touch { pick } => {
            let all: Vec<(String, Key)> = sim
                .tables
                .iter()
                .flat_map(|(t, items)| items.keys().map(move |k| (t.clone(), k.clone())))
                .collect();
            if !all.is_empty() {
                let (table, key) = all[pick % all.len()].clone();
                let item = sim.get(&table, &key).cloned();
                sim.write(&table, key, item, Origin::User);
            }
        }
        Op::Process { pick, count } => {
            for i in 0..*count {
                sim.process_one(pick.wrapping_add(i));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn plans_converge_to_the_recomputation(ops in proptest::collection::vec(op(), 1..60)) {
        let config = example();
        let mut sim = Sim::new(&config);
        for op in &ops {
            run(&mut sim, op);
        }
        sim.drain();
        sim.check_converged();
    }

    #[test]
    fn replaying_a_processed_suffix_changes_nothing(ops in proptest::collection::vec(op(), 1..40), from in any::<usize>()) {
        // At-least-once: after everything is applied, re-planning any record
        // against its own images yields the same mutations as before, and
        // re-applying them is idempotent on the final state.
        let config = example();
        let mut sim = Sim::new(&config);
        let mut records = Vec::new();
        for op in &ops {
            run(&mut sim, op);
        }
        for p in sim.stream.iter().flatten() {
            records.push(p.record.clone());
        }
        sim.drain();
        let rows = sim.rows.clone();
        let tables = sim.tables.clone();
        if !records.is_empty() {
            let start = from % records.len();
            let planner = Planner::new(&config);
            for record in &records[start..] {
                for m in planner.plan(record).mutations {
                    // Replays may rewrite rows; they must not change the final state
                    // beyond what the later records set again.
                    match m {
                        Mutation::PutRow { index, key, attributes } => { sim.rows.insert((index, key), attributes); }
                        Mutation::DeleteRow { index, key } => { sim.rows.remove(&(index, key)); }
                        other => sim.apply(other),
                    }
                }
            }
            sim.drain();
            prop_assert_eq!(&sim.rows, &rows);
            // Edge sets: the same items, the same sets.
            prop_assert_eq!(&sim.tables, &tables);
        }
    }
}

// ---- targeted cases ----

fn record(kind: EventKind, table: &str, keys: Image, old: Option<Image>, new: Option<Image>) -> ChangeRecord {
    ChangeRecord {
        event_id: None,
        kind,
        table: Some(table.to_owned()),
        source_arn: None,
        keys,
        old,
        new,
        sequence_number: "100".to_owned(),
        created: None,
        size_bytes: None,
        view_type: None,
        ttl_expiry: false,
    }
}

fn img(pairs: &[(&str, Value)]) -> Image {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
}

fn edge_image(role: &str) -> Image {
    img(&[
        ("source", s("GOAL-1")),
        ("target", s("GOALMEMBERSHIP-USER-7")),
        ("gsi0", s(role)),
    ])
}

#[test]
fn a_role_change_adds_the_new_member_before_removing_the_old() {
    let config = example();
    let planner = Planner::new(&config);
    let keys = img(&[("source", s("GOAL-1")), ("target", s("GOALMEMBERSHIP-USER-7"))]);
    let plan = planner.plan(&record(
        EventKind::Modify,
        "records",
        keys,
        Some(edge_image("400-CONTRIBUTOR")),
        Some(edge_image("500-LEAD")),
    ));
    assert_eq!(
        plan.mutations,
        vec![
            Mutation::AddMember {
                edge_set: 0,
                node: "GOAL-1".into(),
                member: "GOALMEMBERSHIP-USER-7#500-LEAD".into()
            },
            Mutation::RemoveMember {
                edge_set: 0,
                node: "GOAL-1".into(),
                member: "GOALMEMBERSHIP-USER-7#400-CONTRIBUTOR".into()
            },
        ]
    );
}

#[test]
fn the_pipelines_own_set_updates_plan_nothing() {
    let config = example();
    let planner = Planner::new(&config);
    let set = &config.edge_sets[0];
    let keys = img(&[("source", s("GOAL-1")), ("target", s("GOAL-1"))]);
    let base = img(&[("source", s("GOAL-1")), ("target", s("GOAL-1")), ("name", s("n"))]);
    let mut with = base.clone();
    with.insert(set.attribute.clone(), Value::Ss(vec!["A#1".into()]));
    with.insert(set.complete_attribute.clone(), Value::Bool(true));
    let mut emptied = base.clone();
    emptied.insert(set.complete_attribute.clone(), Value::Bool(true));
    let mut first = base.clone();
    first.insert(set.complete_attribute.clone(), Value::Bool(true));
    // last member removed: the set attribute vanishes but the marker stays
    assert_eq!(
        planner.plan(&record(
            EventKind::Modify,
            "records",
            keys.clone(),
            Some(with.clone()),
            Some(emptied)
        )),
        Plan::default()
    );
    // the restore of a node without edges adds only the marker
    assert_eq!(
        planner.plan(&record(
            EventKind::Modify,
            "records",
            keys.clone(),
            Some(base.clone()),
            Some(first)
        )),
        Plan::default()
    );
    // a user's PutItem overwrite wipes both: restore
    let plan = planner.plan(&record(EventKind::Modify, "records", keys, Some(with), Some(base)));
    assert_eq!(
        plan.mutations,
        vec![Mutation::RestoreSet {
            edge_set: 0,
            node: "GOAL-1".into()
        }]
    );
}

#[test]
fn a_no_op_modify_plans_nothing() {
    let config = example();
    let planner = Planner::new(&config);
    let issue = img(&[
        ("id", s("issue-1")),
        ("rel", s("project-1")),
        ("num", Value::N("3".into())),
        (
            "custom_fields",
            Value::M([("3fe6".to_owned(), Value::N("42".into()))].into()),
        ),
    ]);
    let keys = img(&[("id", s("issue-1")), ("rel", s("project-1"))]);
    assert_eq!(
        planner.plan(&record(
            EventKind::Modify,
            "issues",
            keys,
            Some(issue.clone()),
            Some(issue)
        )),
        Plan::default()
    );
}

#[test]
fn index_sort_keys_end_with_the_source_key() {
    let config = example();
    let planner = Planner::new(&config);
    let issue = img(&[
        ("id", s("issue-1")),
        ("rel", s("project-1")),
        ("num", Value::N("3".into())),
        (
            "custom_fields",
            Value::M([("3fe6".to_owned(), Value::N("42".into()))].into()),
        ),
    ]);
    let keys = img(&[("id", s("issue-1")), ("rel", s("project-1"))]);
    let plan = planner.plan(&record(EventKind::Insert, "issues", keys, None, Some(issue)));
    let [Mutation::PutRow { key, .. }] = plan.mutations.as_slice() else {
        panic!("one put expected: {plan:?}")
    };
    assert_eq!(key.partition, "3fe6");
    assert!(key.sort.ends_with("Sissue-1\u{1}Sproject-1\u{1}"), "{:?}", key.sort);
}

#[test]
fn a_poison_image_deletes_its_old_rows_and_is_reported() {
    let config = example();
    let planner = Planner::new(&config);
    let good = img(&[
        ("id", s("issue-1")),
        ("rel", s("project-1")),
        ("num", Value::N("3".into())),
        (
            "custom_fields",
            Value::M([("3fe6".to_owned(), Value::N("42".into()))].into()),
        ),
    ]);
    let mut bad = good.clone();
    bad.insert(
        "custom_fields".into(),
        Value::M([("3fe6".to_owned(), Value::L(vec![]))].into()),
    );
    let keys = img(&[("id", s("issue-1")), ("rel", s("project-1"))]);
    let plan = planner.plan(&record(EventKind::Modify, "issues", keys, Some(good), Some(bad)));
    assert!(
        matches!(plan.mutations.as_slice(), [Mutation::DeleteRow { .. }]),
        "{plan:?}"
    );
    assert_eq!(plan.problems.len(), 1);
    let reason = plan.problems[0].to_string();
    assert!(reason.contains("custom_fields") && reason.contains("3fe6"), "{reason}");
}

#[test]
fn records_without_an_arn_find_their_table_by_key_names() {
    let config = example();
    let planner = Planner::new(&config);
    let mut r = record(
        EventKind::Remove,
        "x",
        img(&[("pk", s("lyr#a")), ("sk", s("v1"))]),
        None,
        None,
    );
    r.table = None;
    assert_eq!(planner.table_of(&r).map(|t| t.name.as_str()), Ok("layers"));
    r.keys = img(&[("nope", s("1"))]);
    assert!(matches!(planner.table_of(&r), Err(PlanError::NoTable { .. })));
}
