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
use crate::edge::{self, GraphItem};
use crate::index::RowKey;
use crate::record::ChangeRecord;
use crate::value::{Image, Value};

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
            table: Some(table.into()),
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
                let attributes = Image::clone(&attributes);
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
        item.get_or_insert_with(&set.complete_attribute, || Value::Bool(true));
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

// ---- random histories over the example config (`crate::testing`) ----

use crate::testing::{self, Tables, Write};

/// A step of a planner history: a user write, or processing some records.
#[derive(Debug, Clone)]
enum Op {
    Write(Write),
    Process { pick: usize, count: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        23 => testing::write().prop_map(Op::Write),
        4 => (any::<usize>(), 1usize..6).prop_map(|(pick, count)| Op::Process { pick, count }),
    ]
}

impl Tables for Sim<'_> {
    fn get(&self, table: &str, key: &Image) -> Option<Image> {
        let key = self.key_of(table, key)?;
        Sim::get(self, table, &key).cloned()
    }

    fn put(&mut self, table: &str, item: Image) {
        if let Some(key) = self.key_of(table, &item) {
            self.write(table, key, Some(item), Origin::User);
        }
    }

    fn delete(&mut self, table: &str, key: &Image) {
        if let Some(key) = self.key_of(table, key) {
            self.write(table, key, None, Origin::User);
        }
    }

    fn keys(&self) -> Vec<(String, Image)> {
        self.tables
            .iter()
            .flat_map(|(t, items)| items.keys().map(move |k| (t.clone(), self.key_image(t, k))))
            .collect()
    }
}

impl Sim<'_> {
    /// The simulator's key of an item of `table` (string keys).
    fn key_of(&self, table: &str, item: &Image) -> Option<Key> {
        let t = self.table(table);
        let text = |name: &String| match item.get(name) {
            Some(Value::S(v)) => Some(v.clone()),
            _ => None,
        };
        let sort = match &t.sort_key {
            Some(sk) => text(sk)?,
            None => String::new(),
        };
        Some((text(&t.partition_key)?, sort))
    }
}

fn run(sim: &mut Sim<'_>, op: &Op) {
    match op {
        Op::Write(write) => write.apply(sim),
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
                        Mutation::PutRow { index, key, attributes } => { sim.rows.insert((index, key), Image::clone(&attributes)); }
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// The indexer reads a batch's images borrowed from the payload: each
    /// record read so plans as the same record read owned.
    #[test]
    fn a_record_read_borrowed_plans_as_read_owned(ops in proptest::collection::vec(op(), 1..60)) {
        let config = example();
        let mut sim = Sim::new(&config);
        let mut records = Vec::new();
        for op in &ops {
            run(&mut sim, op);
            records.extend(sim.stream.iter().flatten().map(|p| p.record.clone()));
            sim.drain();
        }
        let payload = crate::delivery::lambda_event(&records);
        let planner = Planner::new(&config);
        let owned: Vec<_> = crate::record::read_batch::<crate::value::Image>(&payload, crate::record::Mode::Whole).expect("a batch").collect();
        let borrowed: Vec<_> = crate::record::read_batch::<crate::value::borrowed::Image>(&payload, crate::record::Mode::Whole).expect("a batch").collect();
        prop_assert_eq!(owned.len(), records.len());
        prop_assert_eq!(borrowed.len(), records.len());
        for (owned, borrowed) in owned.iter().zip(&borrowed) {
            let (Ok((_, owned)), Ok((_, borrowed))) = (owned, borrowed) else {
                return Err(TestCaseError::fail("every record reads"));
            };
            let (Ok(owned), Ok(borrowed)) = (&owned.record, &borrowed.record) else {
                return Err(TestCaseError::fail("every record is usable"));
            };
            prop_assert_eq!(planner.plan(borrowed), planner.plan(owned));
            let table = planner.table_of(owned).ok();
            prop_assert_eq!(
                table.map(|t| crate::validate::check(borrowed, t)),
                table.map(|t| crate::validate::check(owned, t))
            );
        }
        // Planned onto one vector (as the indexer plans a batch), the
        // records' mutations are their plans' one after another.
        let (mut onto, mut expected) = (Vec::new(), Vec::new());
        for (_, received) in borrowed.iter().flatten() {
            let Ok(record) = &received.record else { continue };
            let problems = planner.plan_received_onto(received, record, &mut onto);
            let plan = planner.plan(record);
            prop_assert_eq!(problems, plan.problems);
            expected.extend(plan.mutations);
        }
        prop_assert_eq!(onto, expected);
    }
}

// ---- targeted cases ----

fn record(kind: EventKind, table: &str, keys: Image, old: Option<Image>, new: Option<Image>) -> ChangeRecord {
    ChangeRecord {
        event_id: None,
        kind,
        table: Some(table.into()),
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
        "custom_fields",
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
