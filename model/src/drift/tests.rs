//! Drift: targeted cases, and a property test that loads random tables
//! through the planner (items written one by one, each record planned and
//! its mutations applied with the store's semantics, small `max_members` so
//! nodes get flagged) and checks that verify finds nothing, that every random
//! corruption of the result is found, and that applying the corrections
//! makes it clean again.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;
use crate::config::{self, Config};
use crate::plan::{Mutation, Planner};
use crate::record::{ChangeRecord, EventKind};

fn example(max_members: usize) -> Config {
    let mut config = config::parse(config::EXAMPLE_CONFIG, "streamdex.example.toml").expect("valid");
    config.edge_sets[0].max_members = max_members;
    config
}

fn s(v: &str) -> Value {
    Value::S(v.to_owned())
}

fn img(pairs: &[(&str, Value)]) -> Image {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
}

fn img_map(pairs: &[(&str, Value)]) -> std::collections::HashMap<String, Value> {
    img(pairs).into_map()
}

/// Source tables and derived data, with the store's semantics for set updates.
#[derive(Debug, Clone, Default)]
struct World {
    /// table → key text → item
    tables: BTreeMap<String, BTreeMap<(String, String), Image>>,
    rows: BTreeMap<(usize, RowKey), Image>,
    /// node → set (only for nodes whose item exists)
    sets: BTreeMap<String, SetState>,
}

impl World {
    fn key(config: &Config, table: &str, item: &Image) -> (String, String) {
        let t = config.table(table).expect("declared");
        let text = |name: &String| match item.get(name) {
            Some(Value::S(s)) => s.clone(),
            other => format!("{other:?}"),
        };
        (
            text(&t.partition_key),
            t.sort_key.as_ref().map(text).unwrap_or_default(),
        )
    }

    fn partition_members(&self, config: &Config, node: &str) -> BTreeSet<String> {
        let set = &config.edge_sets[0];
        let table = config.table(&set.table).expect("declared");
        let items: Vec<Image> = self
            .tables
            .get(&set.table)
            .into_iter()
            .flat_map(|t| t.iter())
            .filter(|((pk, _), _)| pk == node)
            .map(|(_, i)| i.clone())
            .collect();
        partition(set, table, node, &items).expected
    }

    fn add(&mut self, config: &Config, node: &str, members: BTreeSet<String>) {
        let max = config.edge_sets[0].max_members;
        let Some(state) = self.sets.get_mut(node) else { return };
        if state.members.union(&members).count() > max {
            state.complete = Some(false);
        } else {
            state.members.extend(members);
            state.complete.get_or_insert(true);
        }
    }

    /// Writes a new item and plans and applies its INSERT record.
    fn insert(&mut self, config: &Config, planner: &Planner<'_>, table: &str, item: Image) {
        let key = World::key(config, table, &item);
        if self.tables.get(table).is_some_and(|t| t.contains_key(&key)) {
            return;
        }
        self.tables
            .entry(table.to_owned())
            .or_default()
            .insert(key.clone(), item.clone());
        if key.0 == key.1 && config.edge_set(table).is_some() {
            self.sets.insert(key.0.clone(), SetState::default());
        }
        let t = config.table(table).expect("declared");
        let record = ChangeRecord {
            event_id: None,
            kind: EventKind::Insert,
            table: Some(table.into()),
            source_arn: None,
            keys: key_image(t, &item),
            old: None,
            new: Some(item),
            sequence_number: "1".to_owned(),
            created: None,
            size_bytes: None,
            view_type: None,
            ttl_expiry: false,
        };
        for m in planner.plan(&record).mutations {
            match m {
                Mutation::PutRow { index, key, attributes } => {
                    self.rows.insert((index, key), Image::clone(&attributes));
                }
                Mutation::DeleteRow { index, key } => {
                    self.rows.remove(&(index, key));
                }
                Mutation::AddMember { node, member, .. } => self.add(config, &node, BTreeSet::from([member])),
                Mutation::RemoveMember { node, member, .. } => {
                    if let Some(state) = self.sets.get_mut(&node) {
                        state.members.remove(&member);
                        state.complete.get_or_insert(true);
                    }
                }
                Mutation::RestoreSet { node, .. } => {
                    let members = self.partition_members(config, &node);
                    self.add(config, &node, members);
                }
                Mutation::SetMarker { .. } => panic!("the planner planned a marker"),
            }
        }
    }

    /// Applies a correction as the executor would (through the same store semantics,
    /// but a marker is set outright).
    fn correct(&mut self, c: &Mutation) {
        match c {
            Mutation::PutRow { index, key, attributes } => {
                self.rows.insert((*index, key.clone()), Image::clone(attributes));
            }
            Mutation::DeleteRow { index, key } => {
                self.rows.remove(&(*index, key.clone()));
            }
            Mutation::AddMember { node, member, .. } => {
                if let Some(state) = self.sets.get_mut(node) {
                    state.members.insert(member.clone());
                }
            }
            Mutation::RemoveMember { node, member, .. } => {
                if let Some(state) = self.sets.get_mut(node) {
                    state.members.remove(member);
                }
            }
            Mutation::SetMarker { node, complete, .. } => {
                if let Some(state) = self.sets.get_mut(node) {
                    state.complete = Some(*complete);
                }
            }
            Mutation::RestoreSet { .. } => panic!("verify never corrects with a restore: {c:?}"),
        }
    }

    /// A whole verification of the world.
    fn verify(&self, config: &Config) -> Report {
        let mut v = Verification::new(config, Scope::all(config));
        let set = &config.edge_sets[0];
        for (table, items) in &self.tables {
            for ((pk, sk), item) in items {
                let mut item = item.clone();
                if pk == sk && *table == set.table {
                    if let Some(state) = self.sets.get(pk) {
                        if !state.members.is_empty() {
                            item.insert(
                                set.attribute.clone(),
                                Value::Ss(state.members.iter().cloned().collect()),
                            );
                        }
                        if let Some(c) = state.complete {
                            item.insert(set.complete_attribute.clone(), Value::Bool(c));
                        }
                    }
                }
                v.source_item(table, &item);
            }
        }
        for ((index, key), row) in &self.rows {
            v.index_row(*index, key.clone(), row.clone());
        }
        v.finish()
    }
}

#[derive(Debug, Clone)]
enum Item {
    Node(usize),
    Edge {
        node: usize,
        ty: usize,
        user: usize,
        role: Option<usize>,
    },
    Issue {
        id: usize,
        fields: Vec<(usize, usize)>,
    },
}

const NODES: [&str; 3] = ["GOAL-1", "GOAL-2", "TEAM-1"];
const TYPES: [&str; 3] = ["GOALMEMBERSHIP", "TEAMMEMBERSHIP", "COMMENT"];
const ROLES: [&str; 2] = ["400-CONTRIBUTOR", "500-LEAD"];
const ISSUES: [&str; 3] = ["issue-1", "issue-2", "bug-1"];
const FIELDS: [&str; 3] = ["f1", "f2", "f3"];

fn field_value(v: usize) -> Value {
    match v {
        0 => Value::N("3".into()),
        1 => Value::N("-4.20".into()),
        2 => s("Approved"),
        3 => Value::Bool(true),
        // A list: the `any` column refuses it, so the entry is unindexable.
        _ => Value::L(vec![]),
    }
}

fn item_strategy() -> impl Strategy<Value = Item> {
    prop_oneof![
        (0..NODES.len()).prop_map(Item::Node),
        (
            0..NODES.len(),
            0..TYPES.len(),
            0..4usize,
            proptest::option::weighted(0.9, 0..ROLES.len())
        )
            .prop_map(|(node, ty, user, role)| Item::Edge { node, ty, user, role }),
        (
            0..ISSUES.len(),
            proptest::collection::vec((0..FIELDS.len(), 0..5usize), 0..4)
        )
            .prop_map(|(id, fields)| Item::Issue { id, fields }),
    ]
}

fn build(item: &Item) -> (&'static str, Image) {
    match item {
        Item::Node(n) => (
            "records",
            img(&[("source", s(NODES[*n])), ("target", s(NODES[*n])), ("name", s("n"))]),
        ),
        Item::Edge { node, ty, user, role } => {
            let mut i = img(&[
                ("source", s(NODES[*node])),
                ("target", s(&format!("{}-USER-{user}", TYPES[*ty]))),
            ]);
            if let Some(r) = role {
                i.insert("gsi0", s(ROLES[*r]));
            }
            ("records", i)
        }
        Item::Issue { id, fields } => {
            let map = fields
                .iter()
                .map(|(f, v)| (FIELDS[*f].to_owned(), field_value(*v)))
                .collect();
            (
                "issues",
                img(&[
                    ("id", s(ISSUES[*id])),
                    ("rel", s(ISSUES[*id])),
                    ("num", Value::N("7".into())),
                    ("name", s("x")),
                    ("custom_fields", Value::M(map)),
                ]),
            )
        }
    }
}

#[derive(Debug, Clone)]
enum Corruption {
    DropRow(usize),
    ExtraRow(usize),
    ChangeProjection(usize),
    DropMember(usize),
    ExtraMember(usize),
    FlipMarker(usize),
    DropMarker(usize),
}

fn corruption() -> impl Strategy<Value = Corruption> {
    prop_oneof![
        any::<usize>().prop_map(Corruption::DropRow),
        any::<usize>().prop_map(Corruption::ExtraRow),
        any::<usize>().prop_map(Corruption::ChangeProjection),
        any::<usize>().prop_map(Corruption::DropMember),
        any::<usize>().prop_map(Corruption::ExtraMember),
        any::<usize>().prop_map(Corruption::FlipMarker),
        any::<usize>().prop_map(Corruption::DropMarker),
    ]
}

/// Applies a corruption; returns the kinds of finding it must cause (any one), or None if it changed nothing.
fn corrupt(world: &mut World, config: &Config, c: &Corruption) -> Option<Vec<DriftKind>> {
    // Rows and members the corruptions themselves added are left alone.
    let rows: Vec<(usize, RowKey)> = world
        .rows
        .keys()
        .filter(|(_, k)| !k.partition.starts_with("stray"))
        .cloned()
        .collect();
    let nodes: Vec<String> = world.sets.keys().cloned().collect();
    let pick = |n: usize, len: usize| (len > 0).then(|| n % len);
    let max = config.edge_sets[0].max_members;
    match c {
        Corruption::DropRow(n) => {
            let at = pick(*n, rows.len())?;
            world.rows.remove(&rows[at]);
            Some(vec![DriftKind::MissingRow])
        }
        Corruption::ExtraRow(n) => {
            let key = RowKey {
                partition: format!("stray{n}"),
                sort: "x".into(),
            };
            world.rows.insert((0, key), Image::new());
            Some(vec![DriftKind::ExtraRow])
        }
        Corruption::ChangeProjection(n) => {
            let at = pick(*n, rows.len())?;
            world.rows.get_mut(&rows[at])?.insert("name", s("tampered"));
            Some(vec![DriftKind::WrongProjection])
        }
        Corruption::DropMember(n) => {
            let node = &nodes[pick(*n, nodes.len())?];
            let expected = world.partition_members(config, node);
            let state = world.sets.get_mut(node)?;
            let member = state.members.intersection(&expected).next()?.clone();
            state.members.remove(&member);
            // A flagged set may lack members: that is no drift.
            (expected.len() <= max).then(|| vec![DriftKind::MissingMember])
        }
        Corruption::ExtraMember(n) => {
            let node = &nodes[pick(*n, nodes.len())?];
            world.sets.get_mut(node)?.members.insert(format!("BOGUS-{n}#x"));
            Some(vec![DriftKind::ExtraMember])
        }
        Corruption::FlipMarker(n) => {
            let node = &nodes[pick(*n, nodes.len())?];
            let state = world.sets.get_mut(node)?;
            state.complete = Some(!state.complete?);
            Some(vec![DriftKind::FlagStale, DriftKind::FlagMissing])
        }
        Corruption::DropMarker(n) => {
            let node = &nodes[pick(*n, nodes.len())?];
            let expected = world.partition_members(config, node);
            world.sets.get_mut(node)?.complete = None;
            Some(if expected.len() > max {
                vec![DriftKind::FlagMissing]
            } else {
                vec![DriftKind::MarkerMissing]
            })
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn verify_agrees_with_the_planner_and_finds_every_corruption(
        items in proptest::collection::vec(item_strategy(), 0..30),
        max in 1usize..4,
        corruptions in proptest::collection::vec(corruption(), 1..6),
    ) {
        let config = example(max);
        let planner = Planner::new(&config);
        let mut world = World::default();
        for item in &items {
            let (table, image) = build(item);
            world.insert(&config, &planner, table, image);
        }
        let report = world.verify(&config);
        prop_assert!(report.is_clean(), "the planner's result has drift: {:?}", report.findings);
        prop_assert_eq!(report.scanned.items as usize, world.tables.values().map(|t| t.len()).sum::<usize>());

        // Each corruption alone is found, as the kind it is.
        for c in &corruptions {
            let mut broken = world.clone();
            let Some(kinds) = corrupt(&mut broken, &config, c) else { continue };
            let report = broken.verify(&config);
            let found: BTreeSet<DriftKind> = report.findings.iter().map(|f| f.kind).collect();
            prop_assert!(kinds.iter().any(|k| found.contains(k)), "{:?} not found after {:?}: {:?}", kinds, c, report.findings);
        }
        // All of them together are corrected.
        for c in &corruptions {
            corrupt(&mut world, &config, c);
        }
        let report = world.verify(&config);
        for f in &report.findings {
            world.correct(&f.correction);
        }
        let after = world.verify(&config);
        prop_assert!(after.is_clean(), "corrections left drift: {:?}", after.findings);
    }

    #[test]
    fn set_corrections_always_settle(
        actual in proptest::collection::btree_set("[a-d]", 0..4),
        expected in proptest::collection::btree_set("[a-d]", 0..4),
        complete in proptest::option::of(any::<bool>()),
        max in 1usize..5,
    ) {
        let config = example(max);
        let set = &config.edge_sets[0];
        let mut state = SetState { members: actual, complete };
        let check = compare_set(0, set, "N", &state, &expected);
        for (_, c) in &check.findings {
            match c {
                Mutation::AddMember { member, .. } => { state.members.insert(member.clone()); }
                Mutation::RemoveMember { member, .. } => { state.members.remove(member); }
                Mutation::SetMarker { complete, .. } => state.complete = Some(*complete),
                other => prop_assert!(false, "a row correction for a set: {:?}", other),
            }
        }
        let again = compare_set(0, set, "N", &state, &expected);
        prop_assert!(again.findings.is_empty(), "{:?}", again.findings);
        prop_assert_eq!(check.over_limit, expected.len() > max);
        if expected.len() > max {
            prop_assert_eq!(state.complete, Some(false));
            prop_assert!(state.members.is_subset(&expected));
        } else {
            prop_assert_eq!(&state.members, &expected);
            prop_assert_eq!(state.complete, Some(true));
        }
    }
}

#[test]
fn values_compare_as_dynamodb_does() {
    assert!(same_value(&Value::N("3.0".into()), &Value::N("3".into())));
    assert!(same_value(&Value::N("1E+2".into()), &Value::N("100".into())));
    assert!(!same_value(&Value::N("3".into()), &Value::N("3.1".into())));
    assert!(!same_value(&Value::N("3".into()), &s("3")));
    assert!(same_value(
        &Value::Ss(vec!["b".into(), "a".into()]),
        &Value::Ss(vec!["a".into(), "b".into()])
    ));
    assert!(same_value(
        &Value::Ns(vec!["1.0".into(), "2".into()]),
        &Value::Ns(vec!["2".into(), "1".into()])
    ));
    assert!(!same_value(
        &Value::L(vec![s("a"), s("b")]),
        &Value::L(vec![s("b"), s("a")])
    ));
    let a = img(&[("m", Value::M(img_map(&[("n", Value::N("0.50".into()))])))]);
    let b = img(&[("m", Value::M(img_map(&[("n", Value::N("0.5".into()))])))]);
    assert!(same_image(&a, &b));
    assert!(!same_image(&a, &Image::new()));
}

#[test]
fn rows_are_compared_both_ways() {
    let key = RowKey {
        partition: "p".into(),
        sort: "s".into(),
    };
    let e = img(&[("name", s("a"))]);
    assert_eq!(compare_row(0, &key, None, None), None);
    assert_eq!(compare_row(0, &key, Some(&e), Some(&e)), None);
    assert!(matches!(
        compare_row(0, &key, Some(&e), None),
        Some((DriftKind::MissingRow, Mutation::PutRow { .. }))
    ));
    assert!(matches!(
        compare_row(0, &key, None, Some(&e)),
        Some((DriftKind::ExtraRow, Mutation::DeleteRow { .. }))
    ));
    assert!(matches!(
        compare_row(0, &key, Some(&e), Some(&Image::new())),
        Some((DriftKind::WrongProjection, Mutation::PutRow { .. }))
    ));
}

#[test]
fn a_node_past_the_limit_must_be_flagged_and_may_lack_members() {
    let config = example(2);
    let set = &config.edge_sets[0];
    let expected: BTreeSet<String> = ["a", "b", "c"].iter().map(|m| (*m).to_owned()).collect();
    // Flagged, holding some real members: fine, but a notice.
    let flagged = SetState {
        members: ["a"].iter().map(|m| (*m).to_owned()).collect(),
        complete: Some(false),
    };
    let check = compare_set(0, set, "N", &flagged, &expected);
    assert!(check.over_limit && check.findings.is_empty(), "{check:?}");
    // Not flagged: the flag comes first, then the member no edge has.
    let unflagged = SetState {
        members: ["a", "zz"].iter().map(|m| (*m).to_owned()).collect(),
        complete: Some(true),
    };
    let kinds: Vec<DriftKind> = compare_set(0, set, "N", &unflagged, &expected)
        .findings
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(kinds, vec![DriftKind::FlagMissing, DriftKind::ExtraMember]);
    // A stale flag: members added first, the marker set true last.
    let few: BTreeSet<String> = ["a", "b"].iter().map(|m| (*m).to_owned()).collect();
    let kinds: Vec<DriftKind> = compare_set(0, set, "N", &flagged, &few)
        .findings
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(kinds, vec![DriftKind::MissingMember, DriftKind::FlagStale]);
}

#[test]
fn unindexable_items_are_notices_not_drift() {
    let config = example(10);
    let mut v = Verification::new(&config, Scope::all(&config));
    let issue = img(&[
        ("id", s("issue-9")),
        ("rel", s("issue-9")),
        (
            "custom_fields",
            Value::M(img_map(&[("f", Value::L(vec![])), ("g", s("ok"))])),
        ),
    ]);
    v.source_item("issues", &issue);
    let report = v.finish();
    assert_eq!(report.notice_counts().get(&NoticeKind::Unindexable), Some(&1));
    // The indexable entry's row is expected and missing.
    assert_eq!(report.counts()[&DriftKind::MissingRow], 1);
    assert_eq!(
        report.findings[0].source.as_ref().and_then(|k| k.get("id")),
        Some(&s("issue-9"))
    );
}

#[test]
fn extra_rows_name_the_item_they_claim_to_come_from() {
    let config = example(10);
    let mut v = Verification::new(&config, Scope::all(&config));
    let key = RowKey {
        partition: "f".into(),
        sort: "x".into(),
    };
    v.index_row(0, key, img(&[("id", s("issue-1")), ("rel", s("issue-1"))]));
    let report = v.finish();
    assert_eq!(report.findings.len(), 1);
    assert_eq!(report.findings[0].kind, DriftKind::ExtraRow);
    assert_eq!(
        report.findings[0].source,
        Some(img(&[("id", s("issue-1")), ("rel", s("issue-1"))]))
    );
}

#[test]
fn scopes_select_tables() {
    let config = example(10);
    let all = Scope::all(&config);
    let names: Vec<&str> = all.source_tables(&config).iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["records", "issues"]);
    let issues = all.of_table(&config, "issues");
    assert_eq!(issues.indexes, BTreeSet::from([0]));
    assert!(issues.edge_sets.is_empty());
    // Rows of an index outside the scope are not looked at.
    let mut v = Verification::new(&config, Scope::default());
    v.index_row(
        0,
        RowKey {
            partition: "a".into(),
            sort: "b".into(),
        },
        Image::new(),
    );
    assert!(v.finish().is_clean());
}
