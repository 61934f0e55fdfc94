//! The stream indexer against DynamoDB (the run's moto server), over real HTTP.
//!
//! A realistic history is written with the SDK, the tables' real streams are
//! read with GetRecords and fed to the indexer as Lambda payloads of varying
//! sizes, including the indexer's own edge-set writes, which come back as
//! MODIFY records, until the streams are drained. Then every index table and
//! edge set must equal a from-scratch recomputation over the final tables
//! (invariant 1, convergence), every node must carry the completeness marker,
//! and no ghost node may exist.
//!
//! They need a moto server at `STREAMDEX_TEST_ENDPOINT`, so they are
//! `#[ignore]`d: `scripts/test.sh` starts one and runs them with
//! `--include-ignored`; run so without the variable, they fail at once
//! saying what is missing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use anyhow::{anyhow, ensure, Context, Result};
use aws_kit::quarantine::memory::MemoryQuarantine;
use aws_kit::quarantine::sqs::{SqsQuarantine, MAX_MESSAGE_BYTES};
use aws_kit::quarantine::{Quarantine, QuarantineEntry};
use model::config::{self, EXAMPLE_CONFIG};
use model::index::RowKey;
use model::{Config, Image, Value};
use stream_indexer::store::dynamo::DynamoStore;
use stream_indexer::store::{
    MarkGuard, MemberStamp, RowGuard, RowOutcome, RowWrite, SetChange, SetOutcome, SetStamp, Store,
};
use stream_indexer::{Indexer, Options};
use streamdex_tests::derived::{drain, verify};
use streamdex_tests::images::{item, s};
use streamdex_tests::moto::{prefixed, unique_prefix, Moto, StreamReader};

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

fn n(v: &str) -> Value {
    Value::N(v.to_owned())
}

fn map(pairs: &[(&str, Value)]) -> Value {
    Value::M(item(pairs).into_map())
}

/// A quarantine the test can still read once the indexer owns it.
#[derive(Clone, Default)]
struct SharedQuarantine(Arc<MemoryQuarantine>);

impl Quarantine for SharedQuarantine {
    async fn put(&self, entries: Vec<QuarantineEntry>) -> Result<(), model::Fault> {
        self.0.put(entries).await
    }
}

fn example_config() -> Config {
    config::parse(EXAMPLE_CONFIG, "streamdex.example.toml").unwrap_or_else(|e| panic!("example config: {e}"))
}

/// A fresh set of tables for one test: the example config with prefixed names.
async fn setup(moto: &Moto, test: &str) -> Result<Arc<Config>> {
    setup_with(moto, test, |_| {}).await
}

/// [`setup`] with the config adjusted before the tables are created.
async fn setup_with(moto: &Moto, test: &str, adjust: impl FnOnce(&mut Config)) -> Result<Arc<Config>> {
    let mut config = prefixed(&example_config(), &unique_prefix(test));
    adjust(&mut config);
    moto.create_tables(&config).await?;
    Ok(Arc::new(config))
}

fn table_name<'c>(config: &'c Config, suffix: &str) -> &'c str {
    config
        .tables
        .iter()
        .find(|t| t.name.ends_with(suffix))
        .map(|t| t.name.as_str())
        .unwrap_or_else(|| panic!("no table {suffix}"))
}

struct Tables {
    records: String,
    issues: String,
    layers: String,
}

impl Tables {
    fn of(config: &Config) -> Tables {
        Tables {
            records: table_name(config, "records").to_owned(),
            issues: table_name(config, "issues").to_owned(),
            layers: table_name(config, "layers").to_owned(),
        }
    }
}

fn node(id: &str, extra: &[(&str, Value)]) -> Image {
    let mut image = item(&[("source", s(id)), ("target", s(id))]);
    image.extend(item(extra));
    image
}

fn edge(source: &str, target: &str, extra: &[(&str, Value)]) -> Image {
    let mut image = item(&[("source", s(source)), ("target", s(target))]);
    image.extend(item(extra));
    image
}

fn record_key(source: &str, target: &str) -> Image {
    item(&[("source", s(source)), ("target", s(target))])
}

fn issue(id: &str, extra: &[(&str, Value)]) -> Image {
    let mut image = item(&[("id", s(id)), ("rel", s(id))]);
    image.extend(item(extra));
    image
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn indexer_converges_on_a_real_stream() -> Result<()> {
    let moto = Moto::connect("indexer_converges_on_a_real_stream").await;
    let config = setup(&moto, "converge").await?;
    let t = Tables::of(&config);
    let quarantine = SharedQuarantine::default();
    let store = DynamoStore::new(moto.dynamodb.clone(), config.clone());
    let indexer = Indexer::new(config.clone(), store, quarantine.clone(), Options::default());
    let mut readers = Vec::new();
    for table in [&t.records, &t.issues, &t.layers] {
        readers.push(StreamReader::open(&moto, table).await?);
    }
    let mut sizes = [1, 3, 7, 2, 25, 5, 100, 4, 13].into_iter().cycle();
    let r = &t.records;
    let i = &t.issues;

    // Phase 1: nodes, edges (one whose node does not exist), issues, other items.
    for id in ["GOAL-1", "GOAL-2", "TEAM-1", "USER-1", "USER-2", "USER-3", "PROJECT-1"] {
        let kind = id.split('-').next().unwrap_or_default().to_lowercase();
        moto.put(r, &node(id, &[("type", s(&kind)), ("name", s(&format!("{id} name")))]))
            .await?;
    }
    moto.put(
        r,
        &edge(
            "GOAL-1",
            "GOALMEMBERSHIP-USER-1",
            &[("gsi0", s("400-CONTRIBUTOR")), ("since", s("2025-11-01"))],
        ),
    )
    .await?;
    moto.put(
        r,
        &edge("GOAL-1", "GOALMEMBERSHIP-USER-2", &[("gsi0", s("300-MEMBER"))]),
    )
    .await?;
    moto.put(
        r,
        &edge("GOAL-1", "COMMENT-77", &[("text", s("not an included edge type"))]),
    )
    .await?;
    moto.put(
        r,
        &edge("GOAL-2", "GOALMEMBERSHIP-USER-3", &[("gsi0", s("400-CONTRIBUTOR"))]),
    )
    .await?;
    moto.put(
        r,
        &edge("GOAL-2", "GOALMEMBERSHIP-USER-1", &[("gsi0", s("500-LEAD#acting"))]),
    )
    .await?;
    moto.put(r, &edge("GOAL-2", "GOALMEMBERSHIP-USER-2", &[("gsi0", n("42.50"))]))
        .await?;
    moto.put(
        r,
        &edge("TEAM-1", "TEAMMEMBERSHIP-USER-1", &[("gsi0", s("310-MANAGER"))]),
    )
    .await?;
    moto.put(
        r,
        &edge("TEAM-1", "TEAMMEMBERSHIP-USER-3", &[("gsi0", s("300-MEMBER"))]),
    )
    .await?;
    moto.put(
        r,
        &edge(
            "TEAM-1",
            "TEAMMEMBERSHIP-USER-2",
            &[("note", s("no role yet: no member"))],
        ),
    )
    .await?;
    moto.put(
        r,
        &edge("GOAL-404", "GOALMEMBERSHIP-USER-1", &[("gsi0", s("300-MEMBER"))]),
    )
    .await?;
    moto.put(r, &edge("USER-1", "FOLLOWS-USER-2", &[])).await?;
    moto.put(
        i,
        &issue(
            "issue-1",
            &[
                ("num", n("1")),
                ("name", s("Crash")),
                ("state", s("open")),
                (
                    "custom_fields",
                    map(&[("cf_priority", s("high")), ("cf_points", n("5"))]),
                ),
            ],
        ),
    )
    .await?;
    moto.put(
        i,
        &issue(
            "issue-2",
            &[
                ("num", n("2")),
                ("name", s("Slow")),
                ("state", s("open")),
                (
                    "custom_fields",
                    map(&[
                        ("cf_priority", s("low")),
                        ("cf_due", s("2025-01-01")),
                        ("cf_flag", Value::Bool(true)),
                    ]),
                ),
            ],
        ),
    )
    .await?;
    moto.put(i, &issue("issue-3", &[("num", n("3")), ("name", s("No fields"))]))
        .await?;
    moto.put(
        i,
        &issue(
            "issue-4",
            &[
                ("num", n("4")),
                ("name", s("Huge")),
                (
                    "custom_fields",
                    map(&[("cf_points", n("12345678901234567890.123456789012345678"))]),
                ),
            ],
        ),
    )
    .await?;
    moto.put(
        i,
        &issue("comment-1", &[("custom_fields", map(&[("cf_priority", s("high"))]))]),
    )
    .await?;
    moto.put(
        i,
        &item(&[
            ("id", s("issue-1")),
            ("rel", s("comment-9")),
            ("num", n("1")),
            ("custom_fields", map(&[("cf_priority", s("medium"))])),
        ]),
    )
    .await?;
    // Poison: `custom_fields` must be a map, list or set.
    moto.put(i, &issue("issue-5", &[("num", n("5")), ("custom_fields", s("oops"))]))
        .await?;
    moto.put(
        &t.layers,
        &item(&[("pk", s("lyr#1")), ("sk", s("a")), ("ttl", n("1763733600"))]),
    )
    .await?;
    let fed = drain(&moto, &indexer, &mut readers, &mut sizes).await?;
    ensure!(fed > 25, "only {fed} records fed");
    let rows = verify(&moto, &config).await.context("after phase 1")?;
    ensure!(rows > 0, "the history produced no index rows at all");

    // Phase 2: role changes, edge deletes, a node overwritten with PutItem
    // after its set was built, a node deleted while its edges stay, custom
    // fields added, changed and removed, an issue deleted.
    moto.put(
        r,
        &edge(
            "GOAL-1",
            "GOALMEMBERSHIP-USER-1",
            &[("gsi0", s("500-LEAD")), ("since", s("2025-11-01"))],
        ),
    )
    .await?;
    moto.put(
        r,
        &edge(
            "GOAL-1",
            "GOALMEMBERSHIP-USER-1",
            &[("gsi0", s("500-LEAD")), ("since", s("2025-11-20"))],
        ),
    )
    .await?;
    moto.delete(r, &record_key("GOAL-1", "GOALMEMBERSHIP-USER-2")).await?;
    moto.put(r, &node("TEAM-1", &[("type", s("team")), ("name", s("Renamed team"))]))
        .await?;
    moto.put(
        r,
        &edge("TEAM-1", "TEAMMEMBERSHIP-USER-2", &[("gsi0", s("300-MEMBER"))]),
    )
    .await?;
    moto.delete(r, &record_key("GOAL-2", "GOAL-2")).await?;
    moto.put(r, &edge("GOAL-2", "GOALMEMBERSHIP-USER-3", &[("gsi0", s("500-LEAD"))]))
        .await?;
    moto.delete(r, &record_key("GOAL-2", "GOALMEMBERSHIP-USER-2")).await?;
    moto.put(
        r,
        &edge("GOAL-404", "GOALMEMBERSHIP-USER-1", &[("gsi0", s("500-LEAD"))]),
    )
    .await?;
    moto.put(
        r,
        &node("USER-3", &[("type", s("user")), ("name", s("USER-3 renamed"))]),
    )
    .await?;
    moto.put(
        i,
        &issue(
            "issue-1",
            &[
                ("num", n("1")),
                ("name", s("Crash")),
                ("state", s("open")),
                (
                    "custom_fields",
                    map(&[
                        ("cf_priority", s("high")),
                        ("cf_points", n("8")),
                        ("cf_team", s("TEAM-1")),
                    ]),
                ),
            ],
        ),
    )
    .await?;
    moto.put(
        i,
        &issue(
            "issue-2",
            &[
                ("num", n("2")),
                ("name", s("Slow")),
                ("state", s("closed")),
                (
                    "custom_fields",
                    map(&[("cf_priority", s("low")), ("cf_flag", Value::Bool(true))]),
                ),
            ],
        ),
    )
    .await?;
    moto.put(
        i,
        &issue(
            "issue-3",
            &[
                ("num", n("3")),
                ("name", s("No fields")),
                ("custom_fields", map(&[("cf_due", s("2026-02-01"))])),
            ],
        ),
    )
    .await?;
    moto.delete(i, &item(&[("id", s("issue-4")), ("rel", s("issue-4"))]))
        .await?;
    moto.put(
        i,
        &issue(
            "issue-5",
            &[("num", n("5")), ("custom_fields", map(&[("cf_points", n("-0.5"))]))],
        ),
    )
    .await?;
    moto.put(&t.layers, &item(&[("pk", s("lyr#2")), ("sk", s("b"))]))
        .await?;
    drain(&moto, &indexer, &mut readers, &mut sizes).await?;
    verify(&moto, &config).await.context("after phase 2")?;

    // Phase 3: the deleted node comes back (its set is restored from the
    // partition), an edge is removed from a node that is gone, and the
    // overwritten node gains and loses edges.
    moto.put(r, &node("GOAL-2", &[("type", s("goal")), ("name", s("GOAL-2 again"))]))
        .await?;
    moto.delete(r, &record_key("GOAL-404", "GOALMEMBERSHIP-USER-1")).await?;
    moto.put(
        r,
        &edge("TEAM-1", "TEAMMEMBERSHIP-USER-4", &[("gsi0", s("300-MEMBER"))]),
    )
    .await?;
    moto.delete(r, &record_key("TEAM-1", "TEAMMEMBERSHIP-USER-1")).await?;
    moto.delete(r, &record_key("USER-2", "USER-2")).await?;
    drain(&moto, &indexer, &mut readers, &mut sizes).await?;
    verify(&moto, &config).await.context("after phase 3")?;

    ensure!(
        moto.get(r, &record_key("GOAL-404", "GOAL-404")).await?.is_none(),
        "a ghost node GOAL-404 was created"
    );
    ensure!(
        moto.get(r, &record_key("USER-2", "USER-2")).await?.is_none(),
        "deleted node USER-2 came back"
    );
    let goal2 = moto
        .get(r, &record_key("GOAL-2", "GOAL-2"))
        .await?
        .ok_or_else(|| anyhow!("GOAL-2 missing"))?;
    let restored: BTreeSet<String> = match goal2.get("edges") {
        Some(Value::Ss(members)) => members.iter().cloned().collect(),
        other => return Err(anyhow!("GOAL-2 has no restored set: {other:?}")),
    };
    let want: BTreeSet<String> = [
        "GOALMEMBERSHIP-USER-1#500-LEAD\\#acting",
        "GOALMEMBERSHIP-USER-3#500-LEAD",
    ]
    .map(String::from)
    .into();
    ensure!(restored == want, "GOAL-2's restored set: {restored:?}");
    let entries = quarantine.0.entries();
    ensure!(
        entries.len() == 1,
        "expected exactly the one poison record in quarantine, got {entries:?}"
    );
    ensure!(
        entries[0].reason.contains("custom_fields"),
        "quarantine reason: {}",
        entries[0].reason
    );
    ensure!(
        entries[0].raw.contains("oops"),
        "the raw record is kept: {}",
        entries[0].raw
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn update_set_on_a_missing_node_creates_nothing() -> Result<()> {
    let moto = Moto::connect("update_set_on_a_missing_node_creates_nothing").await;
    let config = setup(&moto, "missing").await?;
    let t = Tables::of(&config);
    let store = DynamoStore::new(moto.dynamodb.clone(), config.clone());
    let mut reader = StreamReader::open(&moto, &t.records).await?;
    let member = "GOALMEMBERSHIP-USER-1#300-MEMBER".to_owned();
    for change in [
        SetChange::Add(vec![member.clone()]),
        SetChange::Remove(vec![member.clone()]),
        SetChange::Add(vec![]),
    ] {
        let outcome = store.update_set(0, "GOAL-404", change.clone()).await?;
        ensure!(outcome == SetOutcome::NodeMissing, "{change:?}: {outcome:?}");
    }
    ensure!(moto.scan(&t.records).await?.is_empty(), "an item was created");
    ensure!(reader.read_new(&moto).await?.is_empty(), "the stream saw a write");
    Ok(())
}

/// A node of a table read from Kinesis is restored under a stamp (its
/// members' versions kept, see `stream_indexer::store::MemberStamp`): with
/// no edges to restore, and with some, DynamoDB takes the request (it
/// refuses a value that no expression uses) and the node ends complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn a_stamped_restore_marks_the_node_with_or_without_members() -> Result<()> {
    let moto = Moto::connect("a_stamped_restore_marks_the_node_with_or_without_members").await;
    let config = setup(&moto, "restore").await?;
    let t = Tables::of(&config);
    let set = &config.edge_sets[0];
    let store = DynamoStore::new(moto.dynamodb.clone(), config.clone());
    let version = model::Version::of_sequence("7").map_err(|e| anyhow!("{e}"))?;
    let members = ["GOALMEMBERSHIP-USER-1#300-MEMBER".to_owned()];
    for (id, restored) in [("GOAL-1", &members[..0]), ("GOAL-2", &members[..])] {
        moto.put(&t.records, &node(id, &[])).await?;
        let stamp = SetStamp {
            guard: MarkGuard::NotNewer(version.clone()),
            mark: Some(version.clone()),
            members: MemberStamp::Restore {
                version: version.clone(),
                members: restored,
            },
        };
        let outcome = store
            .update_set_stamped(0, id, &SetChange::Add(restored.to_vec()), stamp)
            .await?;
        ensure!(outcome == SetOutcome::Applied, "{id}: {outcome:?}");
        let held = moto.get(&t.records, &record_key(id, id)).await?.context("the node")?;
        ensure!(
            held.get(&set.complete_attribute) == Some(&Value::Bool(true)),
            "{id}: {held:?}"
        );
        let set_held = held.get(&set.attribute);
        match restored {
            [] => ensure!(set_held.is_none(), "{id}: {held:?}"),
            _ => ensure!(set_held == Some(&Value::Ss(restored.to_vec())), "{id}: {held:?}"),
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn update_set_flags_a_node_past_max_members() -> Result<()> {
    let moto = Moto::connect("update_set_flags_a_node_past_max_members").await;
    let config = setup_with(&moto, "flag", |c| c.edge_sets[0].max_members = 3).await?;
    let t = Tables::of(&config);
    let store = DynamoStore::new(moto.dynamodb.clone(), config.clone());
    let key = record_key("GOAL-1", "GOAL-1");
    moto.put(&t.records, &node("GOAL-1", &[("name", s("x"))])).await?;
    let strings = |v: &[&str]| v.iter().map(|m| (*m).to_owned()).collect::<Vec<_>>();
    let state = || async {
        let item = moto.get(&t.records, &key).await?.ok_or_else(|| anyhow!("node gone"))?;
        let members: BTreeSet<String> = match item.get("edges") {
            Some(Value::Ss(m)) => m.iter().cloned().collect(),
            _ => BTreeSet::new(),
        };
        Ok::<_, anyhow::Error>((members, item.get("edgesComplete").cloned()))
    };
    let set = |v: &[&str]| v.iter().map(|m| (*m).to_owned()).collect::<BTreeSet<_>>();

    ensure!(
        store
            .update_set(0, "GOAL-1", SetChange::Add(strings(&["a", "b", "a"])))
            .await?
            == SetOutcome::Applied
    );
    ensure!(state().await? == (set(&["a", "b"]), Some(Value::Bool(true))));
    // 2 + 2 > 3: flagged, the set untouched.
    ensure!(
        store
            .update_set(0, "GOAL-1", SetChange::Add(strings(&["c", "d"])))
            .await?
            == SetOutcome::Flagged
    );
    ensure!(state().await? == (set(&["a", "b"]), Some(Value::Bool(false))));
    // 2 + 1 fits; the flag stays.
    ensure!(store.update_set(0, "GOAL-1", SetChange::Add(strings(&["c"]))).await? == SetOutcome::Applied);
    ensure!(state().await? == (set(&["a", "b", "c"]), Some(Value::Bool(false))));
    // More members than max_members could ever fit.
    ensure!(
        store
            .update_set(0, "GOAL-1", SetChange::Add(strings(&["1", "2", "3", "4"])))
            .await?
            == SetOutcome::Flagged
    );
    ensure!(
        store
            .update_set(0, "GOAL-1", SetChange::Remove(strings(&["a", "zz"])))
            .await?
            == SetOutcome::Applied
    );
    ensure!(state().await? == (set(&["b", "c"]), Some(Value::Bool(false))));
    // Flagging a missing node creates nothing either.
    ensure!(
        store
            .update_set(0, "GOAL-9", SetChange::Add(strings(&["1", "2", "3", "4"])))
            .await?
            == SetOutcome::NodeMissing
    );
    ensure!(store.update_set(0, "GOAL-9", SetChange::Add(strings(&["1"]))).await? == SetOutcome::NodeMissing);
    ensure!(moto.scan(&t.records).await?.len() == 1, "a ghost node was created");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn update_set_counts_the_union_against_max_members() -> Result<()> {
    let moto = Moto::connect("update_set_counts_the_union_against_max_members").await;
    let config = setup_with(&moto, "union", |c| c.edge_sets[0].max_members = 3).await?;
    let t = Tables::of(&config);
    let store = DynamoStore::new(moto.dynamodb.clone(), config.clone());
    let strings = |v: &[&str]| v.iter().map(|m| (*m).to_owned()).collect::<Vec<_>>();
    let set = |v: &[&str]| v.iter().map(|m| (*m).to_owned()).collect::<BTreeSet<_>>();
    let put = |id: &'static str, members: &[&str], marker: Option<bool>| {
        let mut extra = vec![("name", s("x")), ("edges", Value::Ss(strings(members)))];
        if let Some(marker) = marker {
            extra.push(("edgesComplete", Value::Bool(marker)));
        }
        let item = node(id, &extra);
        let (moto, table) = (&moto, &t.records);
        async move { moto.put(table, &item).await }
    };
    let state = |id: &'static str| {
        let (moto, table) = (&moto, &t.records);
        async move {
            let item = moto
                .get(table, &record_key(id, id))
                .await?
                .ok_or_else(|| anyhow!("node {id} gone"))?;
            let members: BTreeSet<String> = match item.get("edges") {
                Some(Value::Ss(m)) => m.iter().cloned().collect(),
                _ => BTreeSet::new(),
            };
            Ok::<_, anyhow::Error>((members, item.get("edgesComplete").cloned()))
        }
    };
    let add = |id: &'static str, members: &[&str]| store.update_set(0, id, SetChange::Add(strings(members)));
    put("FULL-1", &["a", "b", "c"], Some(true)).await?;
    put("FULL-2", &["a", "b", "c"], None).await?;
    put("ALMOST-1", &["a", "b"], Some(true)).await?;
    put("ALMOST-2", &["a", "b"], Some(true)).await?;
    let mut reader = StreamReader::open(&moto, &t.records).await?;
    ensure!(reader.read_new(&moto).await?.len() == 4);

    // A node at exactly max_members, a replayed ADD of members it holds:
    // applied, not flagged, and nothing written (moto would emit a MODIFY
    // even for a no-op update).
    for replay in [&["a", "b", "c"][..], &["c", "a"], &["b"]] {
        let outcome = add("FULL-1", replay).await?;
        ensure!(outcome == SetOutcome::Applied, "replay {replay:?}: {outcome:?}");
    }
    ensure!(state("FULL-1").await? == (set(&["a", "b", "c"]), Some(Value::Bool(true))));
    let written = reader.read_new(&moto).await?;
    ensure!(written.is_empty(), "a replay wrote {} time(s)", written.len());

    // The same without the marker: the marker alone is written.
    ensure!(add("FULL-2", &["a", "b", "c"]).await? == SetOutcome::Applied);
    ensure!(state("FULL-2").await? == (set(&["a", "b", "c"]), Some(Value::Bool(true))));
    ensure!(reader.read_new(&moto).await?.len() == 1, "one write: the marker");

    // max - 1 members: 1 new + k existing fits, with one write (the fast path's
    // condition fails, the ADD of the missing member succeeds).
    ensure!(add("ALMOST-1", &["a", "z", "b"]).await? == SetOutcome::Applied);
    ensure!(state("ALMOST-1").await? == (set(&["a", "b", "z"]), Some(Value::Bool(true))));
    ensure!(
        reader.read_new(&moto).await?.len() == 1,
        "one write: the missing member"
    );

    // 2 new: flagged, the set untouched; a replay then writes nothing and the flag stays.
    ensure!(add("ALMOST-2", &["d", "e"]).await? == SetOutcome::Flagged);
    ensure!(add("ALMOST-2", &["a", "d", "e"]).await? == SetOutcome::Flagged);
    ensure!(state("ALMOST-2").await? == (set(&["a", "b"]), Some(Value::Bool(false))));
    ensure!(reader.read_new(&moto).await?.len() == 2, "two writes: the flags");
    ensure!(add("ALMOST-2", &["b", "a"]).await? == SetOutcome::Applied);
    ensure!(state("ALMOST-2").await? == (set(&["a", "b"]), Some(Value::Bool(false))));
    ensure!(reader.read_new(&moto).await?.is_empty());

    // One new past a full set is flagged.
    ensure!(add("FULL-1", &["a", "d"]).await? == SetOutcome::Flagged);
    ensure!(state("FULL-1").await? == (set(&["a", "b", "c"]), Some(Value::Bool(false))));

    // A missing node, whatever the ADD, is never created.
    ensure!(add("GONE", &["a"]).await? == SetOutcome::NodeMissing);
    ensure!(add("GONE", &["a", "b", "c"]).await? == SetOutcome::NodeMissing);
    ensure!(moto.scan(&t.records).await?.len() == 4, "a ghost node was created");
    Ok(())
}

/// Needs DynamoDB's isolation of conditional writes to one item, which moto
/// lacks: its threaded server can evaluate two conditions before either write
/// lands (seen: two ADDs both passed `size(set) <= 2`, leaving 5 members past
/// a max of 4). Run it against real DynamoDB:
/// `STREAMDEX_TEST_ENDPOINT=https://dynamodb.REGION.amazonaws.com cargo test -p streamdex-tests --test e2e -- --ignored concurrent_adds`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs real DynamoDB: moto does not isolate concurrent conditional writes to one item (scripts/test.sh skips it)"]
async fn concurrent_adds_never_pass_max_members() -> Result<()> {
    let moto = Moto::connect("concurrent_adds_never_pass_max_members").await;
    let config = setup_with(&moto, "race", |c| c.edge_sets[0].max_members = 4).await?;
    let t = Tables::of(&config);
    let store = DynamoStore::new(moto.dynamodb.clone(), config.clone());
    let pairs = [
        ["a", "c"],
        ["b", "d"],
        ["a", "e"],
        ["c", "d"],
        ["f", "a"],
        ["b", "c"],
        ["g", "h"],
        ["d", "e"],
    ];
    for round in 0..3 {
        let id = format!("RACE-{round}");
        let edges = Value::Ss(vec!["a".to_owned(), "b".to_owned()]);
        moto.put(&t.records, &node(&id, &[("name", s("x")), ("edges", edges)]))
            .await?;
        let tasks: Vec<_> = pairs
            .iter()
            .map(|pair| {
                let (store, id) = (store.clone(), id.clone());
                let members: Vec<String> = pair.iter().map(|m| (*m).to_owned()).collect();
                tokio::spawn(async move {
                    let outcome = store.update_set(0, &id, SetChange::Add(members.clone())).await;
                    (members, outcome)
                })
            })
            .collect();
        let mut outcomes = Vec::new();
        for task in tasks {
            let (members, outcome) = task.await?;
            outcomes.push((members, outcome?));
        }
        let item = moto
            .get(&t.records, &record_key(&id, &id))
            .await?
            .ok_or_else(|| anyhow!("{id} gone"))?;
        let members: BTreeSet<String> = match item.get("edges") {
            Some(Value::Ss(m)) => m.iter().cloned().collect(),
            _ => BTreeSet::new(),
        };
        ensure!(
            members.len() <= 4,
            "{id}: {members:?} passed max_members ({outcomes:?})"
        );
        for (added, outcome) in &outcomes {
            ensure!(
                *outcome == SetOutcome::Flagged || added.iter().all(|m| members.contains(m)),
                "{id}: {added:?} was {outcome:?} but is not in {members:?}"
            );
        }
        let flagged = outcomes.iter().any(|(_, o)| *o == SetOutcome::Flagged);
        ensure!(
            flagged,
            "{id}: 8 members into 4 places, yet nothing was flagged: {outcomes:?}"
        );
        ensure!(item.get("edgesComplete") == Some(&Value::Bool(false)), "{id}: {item:?}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn store_writes_rows_exactly_and_classifies_errors() -> Result<()> {
    let moto = Moto::connect("store_writes_rows_exactly_and_classifies_errors").await;
    let config = setup(&moto, "rows").await?;
    let t = Tables::of(&config);
    let index_table = config.indexes[0].table.clone();
    let store = DynamoStore::new(moto.dynamodb.clone(), config.clone());
    let exact = "-12345678901234567890.123456789012345678";
    let attributes = item(&[
        ("id", s("issue-1")),
        ("rel", s("issue-1")),
        ("num", n(exact)),
        ("name", s("é ☃")),
        (
            "state",
            map(&[
                ("b", Value::B(vec![0, 1, 255])),
                ("l", Value::L(vec![n("1E+125"), Value::Null(true)])),
            ]),
        ),
    ]);
    let writes: Vec<RowWrite> = (0..25)
        .map(|k| RowWrite {
            index: 0,
            key: RowKey {
                partition: format!("p{}", k % 3),
                sort: format!("s{k:02}"),
            },
            put: Some(attributes.clone().into()),
            version: model::Version::zero(),
        })
        .collect();
    ensure!(
        store.write_rows(&writes).await?.is_empty(),
        "moto never returns UnprocessedItems"
    );
    let rows = moto.scan(&index_table).await?;
    ensure!(rows.len() == 25, "{} rows", rows.len());
    for row in &rows {
        ensure!(
            row.get("num") == Some(&n(exact)),
            "number not exact: {:?}",
            row.get("num")
        );
        ensure!(row.get("state") == attributes.get("state"), "{:?}", row.get("state"));
        ensure!(matches!(row.get("pk"), Some(Value::S(p)) if p.starts_with('p')));
    }
    let deletes: Vec<RowWrite> = writes
        .iter()
        .take(20)
        .map(|w| RowWrite { put: None, ..w.clone() })
        .collect();
    ensure!(store.write_rows(&deletes).await?.is_empty());
    // A delete leaves a tombstone: the key, the version and the expiry.
    let rows = moto.scan(&index_table).await?;
    let live: Vec<&Image> = rows
        .iter()
        .filter(|r| !r.contains_key(model::version::TOMBSTONE_ATTRIBUTE))
        .collect();
    ensure!(
        live.len() == 5 && rows.len() == 25,
        "{} live of {}",
        live.len(),
        rows.len()
    );
    for row in &rows {
        ensure!(
            row.get(model::version::VERSION_ATTRIBUTE) == Some(&s(model::Version::zero().as_str())),
            "every row and tombstone carries its version: {row:?}"
        );
    }
    // A guarded put: an older version never replaces a newer one.
    let newer = |v: &str| model::Version::of_sequence(v).map_err(|e| anyhow!("{e}"));
    let key = writes[0].key.clone();
    let put = |version: model::Version| RowWrite {
        index: 0,
        key: key.clone(),
        put: Some(attributes.clone().into()),
        version,
    };
    ensure!(store.put_row_if(&put(newer("100")?), &RowGuard::Newer).await? == RowOutcome::Written);
    ensure!(store.put_row_if(&put(newer("99")?), &RowGuard::Newer).await? == RowOutcome::Stale);
    ensure!(store.put_row_if(&put(newer("100")?), &RowGuard::Newer).await? == RowOutcome::Stale);
    ensure!(
        store
            .put_row_if(&put(newer("7")?), &RowGuard::AsRead(Some(newer("100")?)))
            .await?
            == RowOutcome::Written,
        "as read: the version read is there"
    );
    ensure!(
        store.put_row_if(&put(newer("8")?), &RowGuard::AsRead(None)).await? == RowOutcome::Stale,
        "as read: nothing was read, but a row is there"
    );

    // query_partition: every item of one partition, and only those.
    moto.put(&t.records, &node("GOAL-1", &[("n", n(exact))])).await?;
    moto.put(
        &t.records,
        &edge("GOAL-1", "GOALMEMBERSHIP-USER-1", &[("gsi0", s("x"))]),
    )
    .await?;
    moto.put(&t.records, &node("GOAL-10", &[])).await?;
    let mut items = store.query_partition(&t.records, "GOAL-1").await?;
    items.sort_by_key(|i| format!("{:?}", i.get("target")));
    ensure!(items.len() == 2 && items[0].get("n") == Some(&n(exact)), "{items:?}");
    ensure!(store.query_partition(&t.records, "NOPE").await?.is_empty());

    // A sort key over 1024 bytes: refused (a record's fault, quarantined).
    let long = RowWrite {
        index: 0,
        key: RowKey {
            partition: "p".into(),
            sort: "x".repeat(1100),
        },
        put: Some(attributes.clone().into()),
        version: model::Version::zero(),
    };
    match store.write_rows(&[long]).await {
        Err(e) if e.class() == model::Class::Refused => {
            let m = e.message();
            ensure!(m.contains("BatchWriteItem") && m.contains(&index_table), "{m}");
        }
        other => return Err(anyhow!("expected Refused, got {other:?}")),
    }
    // Missing tables: a deployment problem, named.
    let mut missing = (*config).clone();
    missing.indexes[0].table = format!("{index_table}-absent");
    missing
        .tables
        .iter_mut()
        .for_each(|t| t.name = format!("{}-absent", t.name));
    missing.edge_sets[0].table = format!("{}-absent", missing.edge_sets[0].table);
    let broken = DynamoStore::new(moto.dynamodb.clone(), Arc::new(missing.clone()));
    match broken.write_rows(&writes[..1]).await {
        Err(e) if e.class() == model::Class::Deployment => {
            let m = e.message();
            ensure!(m.contains("BatchWriteItem") && m.contains("-absent"), "{m}");
        }
        other => return Err(anyhow!("expected Deployment, got {other:?}")),
    }
    let absent_records = format!("{}-absent", t.records);
    match broken.query_partition(&absent_records, "GOAL-1").await {
        Err(e) if e.class() == model::Class::Deployment => {
            let m = e.message();
            ensure!(m.contains("Query") && m.contains(&absent_records), "{m}");
        }
        other => return Err(anyhow!("expected Deployment, got {other:?}")),
    }
    match broken.update_set(0, "GOAL-1", SetChange::Add(vec!["m".into()])).await {
        Err(e) if e.is_deployment() => ensure!(!e.is_retryable() && e.to_string().contains("UpdateItem")),
        other => return Err(anyhow!("expected Deployment, got {other:?}")),
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs STREAMDEX_TEST_ENDPOINT (scripts/test.sh runs it)"]
async fn sqs_quarantine_sends_every_entry() -> Result<()> {
    let moto = Moto::connect("sqs_quarantine_sends_every_entry").await;
    let name = format!("{}quarantine", unique_prefix("sqs"));
    let url = moto
        .sqs
        .create_queue()
        .queue_name(&name)
        .send()
        .await?
        .queue_url
        .ok_or_else(|| anyhow!("no queue url"))?;
    let entry = |i: usize, raw: String| QuarantineEntry {
        consumer: "stream-indexer".into(),
        sequence_number: Some(format!("{}", 1000 + i)),
        table: Some("issues".into()),
        reason: format!("reason {i}"),
        cause: None,
        raw,
    };
    let mut entries: Vec<QuarantineEntry> = (0..12).map(|i| entry(i, format!("{{\"record\":{i}}}"))).collect();
    entries.push(entry(12, format!("{{\"big\":\"{}\"}}", "é".repeat(200_000))));
    let quarantine = SqsQuarantine::new(moto.sqs.clone(), url.clone());
    quarantine.put(entries.clone()).await.map_err(|e| anyhow!("{e}"))?;

    let mut bodies = Vec::new();
    for _ in 0..20 {
        let output = moto
            .sqs
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .send()
            .await?;
        let messages = output.messages.unwrap_or_default();
        if messages.is_empty() {
            break;
        }
        for m in messages {
            bodies.push(m.body.unwrap_or_default());
            if let Some(handle) = m.receipt_handle {
                moto.sqs
                    .delete_message()
                    .queue_url(&url)
                    .receipt_handle(handle)
                    .send()
                    .await?;
            }
        }
    }
    ensure!(bodies.len() == 13, "{} messages", bodies.len());
    let mut seen = BTreeMap::new();
    for body in &bodies {
        ensure!(body.len() <= MAX_MESSAGE_BYTES, "message of {} bytes", body.len());
        let json: serde_json::Value = serde_json::from_str(body)?;
        let back: QuarantineEntry = serde_json::from_str(body)?;
        seen.insert(back.sequence_number.clone().unwrap_or_default(), (back, json));
    }
    for (i, want) in entries.iter().enumerate() {
        let (got, json) = seen
            .get(&format!("{}", 1000 + i))
            .ok_or_else(|| anyhow!("entry {i} missing"))?;
        if i < 12 {
            ensure!(got == want, "entry {i}: {got:?}");
        } else {
            ensure!(
                json["raw_truncated"] == true && json["raw_bytes"] == want.raw.len(),
                "{}",
                json["raw_bytes"]
            );
            ensure!(
                want.raw.starts_with(&got.raw) && got.raw.len() > 100_000,
                "truncated raw of {} bytes",
                got.raw.len()
            );
        }
    }

    let missing = SqsQuarantine::new(moto.sqs.clone(), format!("{url}-absent"));
    ensure!(
        missing.put(entries[..1].to_vec()).await.is_err(),
        "sending to a missing queue succeeded"
    );
    Ok(())
}
