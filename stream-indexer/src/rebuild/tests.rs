//! Verify, repair and rebuild on the in-memory store: random histories run
//! through the real indexer (its own writes fed back until the stream is
//! dry) verify clean; a lost stretch of stream records and random
//! corruptions of the derived data are found, and rebuild or repair brings
//! them back to clean.

use std::sync::Arc;

use model::config::Config;
use model::drift::{DriftKind, Scope};
use model::index::RowKey;
use model::{Image, Value};
use proptest::prelude::*;

use super::repair::expected_updates;
use super::*;
use crate::store::memory::{lambda_event, MemoryStore};
use crate::store::RowWrite;
use crate::store::SetChange;
use crate::test_support::{block, example};
use crate::{workload, Indexer};
use aws_kit::quarantine::memory::MemoryQuarantine;

type TestIndexer = Indexer<MemoryStore, MemoryQuarantine>;

fn quick() -> Options {
    Options {
        segments: 3,
        page_size: 7,
        concurrency: 4,
        budget: None,
        backoff: Backoff::immediate(3),
        rounds: 3,
    }
}

fn indexer(config: Arc<Config>) -> TestIndexer {
    let store = MemoryStore::new(config.clone());
    store.record_stream(true);
    Indexer::new(config, store, MemoryQuarantine::new(), crate::Options::default())
}

/// Feeds the recorded stream to the indexer until it is dry, dropping the
/// records at positions `lost` (of the first delivery): a lost stretch.
fn drain(ix: &TestIndexer, lost: std::ops::Range<usize>) {
    let mut first = true;
    for _ in 0..10 {
        let mut entries = ix.store().take_stream();
        if entries.is_empty() {
            return;
        }
        if first {
            let end = lost.end.min(entries.len());
            let start = lost.start.min(end);
            entries.drain(start..end);
            first = false;
        }
        for batch in entries.chunks(50) {
            let payload = lambda_event(batch.iter().map(|e| &e.record));
            let outcome = block(ix.handle(&payload)).expect("a batch");
            assert_eq!(outcome.failed, None);
        }
    }
    panic!("the stream never ran dry");
}

fn check(store: &MemoryStore, config: &Config) -> Report {
    block(verify(store, config, &Scope::all(config), &quick(), &Quiet)).expect("verify")
}

fn s(v: &str) -> Value {
    Value::S(v.to_owned())
}

#[derive(Debug, Clone)]
enum Corruption {
    DropRow(usize),
    ExtraRow(usize),
    ChangeProjection(usize),
    DropMember(usize),
    ExtraMember(usize),
    Flag(usize),
    /// Sets the marker `false` on a node, then writes the node again
    /// without set and marker, as a PutItem would (no restore follows: the
    /// record is not delivered).
    Wipe(usize),
}

fn corruption() -> impl Strategy<Value = Corruption> {
    prop_oneof![
        any::<usize>().prop_map(Corruption::DropRow),
        any::<usize>().prop_map(Corruption::ExtraRow),
        any::<usize>().prop_map(Corruption::ChangeProjection),
        any::<usize>().prop_map(Corruption::DropMember),
        any::<usize>().prop_map(Corruption::ExtraMember),
        any::<usize>().prop_map(Corruption::Flag),
        any::<usize>().prop_map(Corruption::Wipe),
    ]
}

/// Breaks the derived data; returns the kinds the break must show up as (any
/// one of them), on which target.
fn corrupt(store: &MemoryStore, c: &Corruption) -> Option<(Vec<DriftKind>, Target)> {
    // What earlier corruptions added is left alone: breaking it would mend it.
    let rows: Vec<(RowKey, Image)> = store
        .rows(0)
        .into_iter()
        .filter(|(k, _)| !k.partition.starts_with("stray-"))
        .collect();
    let nodes: Vec<(String, crate::store::memory::NodeSet)> = store.node_sets(0).into_iter().collect();
    let pick = |n: usize, len: usize| (len > 0).then(|| n % len);
    let write = |w: RowWrite| block(store.write_rows(&[w])).expect("write");
    let row = |key: &RowKey| Target::Row {
        index: 0,
        key: key.clone(),
    };
    let node = |node: &str| Target::Node {
        edge_set: 0,
        node: node.to_owned(),
    };
    let found = match c {
        Corruption::DropRow(n) => {
            let (key, _) = rows.get(pick(*n, rows.len())?)?.clone();
            write(RowWrite {
                index: 0,
                key: key.clone(),
                put: None,
                version: model::Version::zero(),
            });
            (vec![DriftKind::MissingRow], row(&key))
        }
        Corruption::ExtraRow(n) => {
            let key = RowKey {
                partition: format!("stray-{n}"),
                sort: "x".into(),
            };
            write(RowWrite {
                index: 0,
                key: key.clone(),
                put: Some(Image::from([("name".to_owned(), s("ghost"))]).into()),
                version: model::Version::zero(),
            });
            (vec![DriftKind::ExtraRow], row(&key))
        }
        Corruption::ChangeProjection(n) => {
            let (key, _) = rows.get(pick(*n, rows.len())?)?.clone();
            let mut attributes = attributes_of(&rows, &key);
            attributes.insert("state", s("tampered"));
            write(RowWrite {
                index: 0,
                key: key.clone(),
                put: Some(attributes.into()),
                version: model::Version::zero(),
            });
            (vec![DriftKind::WrongProjection], row(&key))
        }
        Corruption::DropMember(n) => {
            let (id, set) = nodes.get(pick(*n, nodes.len())?)?;
            let member = set.members.iter().find(|m| !m.starts_with("BOGUS-"))?.clone();
            block(store.update_set(0, id, SetChange::Remove(vec![member]))).expect("update");
            (vec![DriftKind::MissingMember], node(id))
        }
        Corruption::ExtraMember(n) => {
            let (id, _) = nodes.get(pick(*n, nodes.len())?)?;
            block(store.update_set(0, id, SetChange::Add(vec![format!("BOGUS-{n}#x")]))).expect("update");
            (vec![DriftKind::ExtraMember], node(id))
        }
        Corruption::Flag(n) => {
            let (id, _) = nodes.get(pick(*n, nodes.len())?)?;
            block(store.set_marker(0, id, false)).expect("marker");
            (vec![DriftKind::FlagStale], node(id))
        }
        Corruption::Wipe(n) => {
            let (id, _) = nodes.get(pick(*n, nodes.len())?)?;
            let key = Image::from([("source".to_owned(), s(id)), ("target".to_owned(), s(id))]);
            let mut item = store.get_item("records", &key).ok()??;
            item.remove("edges");
            item.remove("edgesComplete");
            store.put_item("records", item).ok()?;
            (vec![DriftKind::MarkerMissing], node(id))
        }
    };
    // The corruption's own stream records are never delivered.
    store.take_stream();
    Some(found)
}

fn attributes_of(rows: &[(RowKey, Image)], key: &RowKey) -> Image {
    rows.iter()
        .find(|(k, _)| k == key)
        .map(|(_, a)| a.clone())
        .unwrap_or_default()
}

fn rebuild_all(store: &MemoryStore, config: &Config, options: &Options) -> RebuildOutcome {
    let scope = Scope::all(config);
    let mut checkpoint = Checkpoint::new(config, &scope);
    block(rebuild(
        store,
        config,
        &scope,
        options,
        &mut checkpoint,
        &mut |_| Ok(()),
        &Quiet,
    ))
    .expect("rebuild")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn replayed_histories_verify_clean_and_breakage_is_repaired(
        records in 20usize..160,
        seed in any::<u64>(),
        lost in (0usize..200, 0usize..40),
        corruptions in proptest::collection::vec(corruption(), 0..6),
        exact in any::<bool>(),
    ) {
        let config = example();
        let ix = indexer(config.clone());
        workload::write_history(ix.store(), records, seed);
        drain(&ix, 0..0);
        let store = ix.store();
        let report = check(store, &config);
        prop_assert!(report.is_clean(), "the indexer's result has drift: {:?}", report.findings);
        prop_assert!(report.scanned.items > 0);

        for c in &corruptions {
            let Some((kinds, target)) = corrupt(store, c) else { continue };
            // The break shows up on its target, as (one of) its kind(s).
            let report = check(store, &config);
            prop_assert!(
                report.findings.iter().any(|f| f.correction.target() == target && kinds.contains(&f.kind)),
                "{:?} not found on {:?}: {:?}", c, target, report.findings
            );
        }
        // A lost stretch of stream records, as a consumer down for a day leaves.
        workload::write_history(store, records / 2, seed ^ 1);
        drain(&ix, lost.0..lost.0 + lost.1);
        if exact {
            // verify --repair: exactly the reported corrections.
            let report = check(store, &config);
            let budget = WriteBudget::new(None);
            let stats = block(repair(store, &config, &report.findings, Mode::Exact, &quick(), &budget, &Quiet))
                .expect("repair");
            prop_assert_eq!(stats.written.total() + stats.skipped, report.findings.len());
            prop_assert_eq!(stats.skipped, 0, "nothing changed between verify and repair");
        } else {
            let outcome = rebuild_all(store, &config, &quick());
            prop_assert!(outcome.is_clean(), "{:?}", outcome);
        }
        let report = check(store, &config);
        prop_assert!(report.is_clean(), "drift left: {:?}", report.findings);
        // The derived data is what a from-scratch recomputation gives.
        prop_assert_eq!(store.snapshot(), store.recompute());
    }
}

#[test]
fn a_fresh_index_is_built_from_scratch_and_a_second_rebuild_writes_nothing() {
    let config = example();
    let store = MemoryStore::new(config.clone());
    workload::write_history(&store, 300, 7);
    let before = check(&store, &config);
    assert!(before.counts()[&DriftKind::MissingRow] > 0);
    assert!(before.counts()[&DriftKind::MarkerMissing] > 0);
    let outcome = rebuild_all(&store, &config, &quick());
    assert!(outcome.is_clean(), "{outcome:?}");
    assert_eq!(outcome.repairs().written.total(), before.findings.len());
    assert_eq!(store.snapshot(), store.recompute());
    let again = rebuild_all(&store, &config, &quick());
    assert_eq!(again.repairs().items_written, 0);
    assert!(again.tables.iter().all(|t| t.passes == 1));
}

#[test]
fn exact_repair_skips_what_changed_since_the_report() {
    let config = example();
    let store = MemoryStore::new(config.clone());
    workload::write_history(&store, 100, 3);
    let report = check(&store, &config);
    let missing: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| f.kind == DriftKind::MissingRow)
        .collect();
    let Some(source) = missing.first().and_then(|f| f.source.clone()) else {
        panic!("no missing row in {:?}", report.counts());
    };
    // The item is deleted after the report: its rows must not be written.
    store.delete_item("issues", &source).expect("delete");
    let of_item = missing.iter().filter(|f| f.source.as_ref() == Some(&source)).count();
    let budget = WriteBudget::new(None);
    let stats = block(repair(
        &store,
        &config,
        &report.findings,
        Mode::Exact,
        &quick(),
        &budget,
        &Quiet,
    ))
    .expect("repair");
    assert_eq!(stats.skipped, of_item);
    assert_eq!(stats.written.total(), report.findings.len() - of_item);
    assert!(check(&store, &config).is_clean());
}

#[test]
fn a_checkpoint_skips_tables_done_and_only_fits_its_config() {
    let config = example();
    let store = MemoryStore::new(config.clone());
    workload::write_history(&store, 100, 5);
    let scope = Scope::all(&config);
    let mut checkpoint = Checkpoint::new(&config, &scope);
    checkpoint.done.push("issues".to_owned());
    let mut saved = Vec::new();
    let outcome = block(rebuild(
        &store,
        &config,
        &scope,
        &quick(),
        &mut checkpoint,
        &mut |c| {
            saved.push(c.clone());
            Ok(())
        },
        &Quiet,
    ))
    .expect("rebuild");
    let resumed: Vec<&str> = outcome
        .tables
        .iter()
        .filter(|t| t.resumed)
        .map(|t| t.table.as_str())
        .collect();
    assert_eq!(resumed, vec!["issues"]);
    assert!(store.rows(0).is_empty(), "the issues table was skipped");
    assert_eq!(
        saved.last().map(|c| c.done.clone()),
        Some(vec!["issues".into(), "records".into()])
    );
    let json = serde_json::to_string(&checkpoint).expect("json");
    let back: Checkpoint = serde_json::from_str(&json).expect("json");
    assert!(back.fits(&config, &scope));
    assert!(!back.fits(&config, &scope.of_table(&config, "issues")));
    let mut other = (*config).clone();
    other.edge_sets[0].max_members = 5;
    assert!(!back.fits(&other, &scope));
}

#[test]
fn a_checkpoint_that_cannot_be_saved_stops_the_rebuild() {
    let config = example();
    let store = MemoryStore::new(config.clone());
    workload::write_history(&store, 50, 5);
    let scope = Scope::all(&config);
    let mut checkpoint = Checkpoint::new(&config, &scope);
    let result = block(rebuild(
        &store,
        &config,
        &scope,
        &quick(),
        &mut checkpoint,
        &mut |_| {
            Err(CheckpointWriteError::Write {
                path: "c.json".into(),
                source: std::io::Error::other("disk full"),
            })
        },
        &Quiet,
    ));
    assert!(
        matches!(
            result,
            Err(RebuildError::Checkpoint(CheckpointWriteError::Write { ref source, .. })) if source.to_string() == "disk full"
        ),
        "{result:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_write_budget_paces_items() {
    let budget = WriteBudget::new(Some(10));
    let start = tokio::time::Instant::now();
    for _ in 0..5 {
        budget.take(5).await;
    }
    // 20 items before the last request at 10 per second.
    assert_eq!(start.elapsed(), Duration::from_secs(2));
    let free = WriteBudget::new(None);
    let start = tokio::time::Instant::now();
    free.take(1_000_000).await;
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[test]
fn the_budget_counts_update_sized_chunks_of_members() {
    let add = |m: String| {
        (
            DriftKind::MissingMember,
            Correction::AddMember {
                edge_set: 0,
                node: "N".into(),
                member: m,
            },
        )
    };
    let members: Vec<_> = (0..2500).map(|i| add(format!("m{i}"))).collect();
    assert_eq!(
        expected_updates(&members),
        3,
        "{MAX_MEMBERS_PER_UPDATE} members an update"
    );
    let big: Vec<_> = (0..3).map(|i| add(format!("{i}{}", "x".repeat(200 * 1024)))).collect();
    assert_eq!(
        expected_updates(&big),
        3,
        "{MAX_MEMBER_BYTES_PER_UPDATE} bytes an update"
    );
    assert_eq!(expected_updates(&[]), 0);
    let marker = (
        DriftKind::MarkerMissing,
        Correction::SetMarker {
            edge_set: 0,
            node: "N".into(),
            complete: true,
        },
    );
    let remove = (
        DriftKind::ExtraMember,
        Correction::RemoveMember {
            edge_set: 0,
            node: "N".into(),
            member: "x".into(),
        },
    );
    let mixed = [add("a".into()), add("b".into()), remove.clone(), remove, marker];
    assert_eq!(expected_updates(&mixed), 3, "one ADD, one DELETE, one marker");
}

/// Changing an index's `shards` moves every row to another partition key,
/// and that is a rebuild: under the new count, verify reports each old row
/// as extra and each new one as missing, rebuild deletes the old
/// partitions' rows and writes the new ones in their shard partitions
/// (`{rendered}#{shard}`), and verify is then clean; and back again.
#[test]
fn changing_shards_is_a_rebuild() {
    let plain = example();
    let sharded = {
        let mut config = (*plain).clone();
        config.indexes[0].shards = 4;
        Arc::new(config)
    };
    let ix = indexer(plain.clone());
    workload::write_history(ix.store(), 200, 11);
    drain(&ix, 0..0);
    assert!(check(ix.store(), &plain).is_clean());
    let old_rows = ix.store().rows(0);
    assert!(old_rows.len() > 20, "{} rows", old_rows.len());

    // The same tables, read under the new config.
    let store = MemoryStore::new(sharded.clone());
    for table in &plain.tables {
        for item in ix.store().items(&table.name) {
            store.put_item(&table.name, item).expect("put");
        }
    }
    for (key, attributes) in &old_rows {
        let write = RowWrite {
            index: 0,
            key: key.clone(),
            put: Some(attributes.clone().into()),
            version: model::Version::zero(),
        };
        block(store.write_rows(&[write])).expect("write");
    }
    store.take_stream();

    let before = check(&store, &sharded);
    let counts = before.counts();
    assert_eq!(counts.get(&DriftKind::ExtraRow), Some(&old_rows.len()), "{counts:?}");
    assert_eq!(counts.get(&DriftKind::MissingRow), Some(&old_rows.len()), "{counts:?}");

    let outcome = rebuild_all(&store, &sharded, &quick());
    assert!(outcome.is_clean(), "{outcome:?}");
    assert!(check(&store, &sharded).is_clean());
    assert_eq!(store.snapshot(), store.recompute());
    let new_rows = store.rows(0);
    assert_eq!(new_rows.len(), old_rows.len());
    // Each row sits in its old partition followed by `#` and a shard.
    let mut shards_used = std::collections::BTreeSet::new();
    let mut unsharded = Vec::new();
    for (key, _) in &new_rows {
        let (base, shard) = key
            .partition
            .rsplit_once('#')
            .and_then(|(base, shard)| Some((base, shard.parse::<u32>().ok()?)))
            .unwrap_or_else(|| panic!("{:?} has no shard", key.partition));
        assert!(shard < 4, "{key:?}");
        shards_used.insert(shard);
        unsharded.push(RowKey {
            partition: base.to_owned(),
            sort: key.sort.clone(),
        });
    }
    unsharded.sort();
    let old_keys: Vec<RowKey> = old_rows.iter().map(|(k, _)| k.clone()).collect();
    assert_eq!(unsharded, old_keys);
    assert_eq!(shards_used.len(), 4, "rows spread over every shard");

    // And back to one shard: the unsharded keys again.
    let store_back = MemoryStore::new(plain.clone());
    for table in &plain.tables {
        for item in store.items(&table.name) {
            store_back.put_item(&table.name, item).expect("put");
        }
    }
    for (key, attributes) in &new_rows {
        let write = RowWrite {
            index: 0,
            key: key.clone(),
            put: Some(attributes.clone().into()),
            version: model::Version::zero(),
        };
        block(store_back.write_rows(&[write])).expect("write");
    }
    store_back.take_stream();
    assert!(!check(&store_back, &plain).is_clean());
    assert!(rebuild_all(&store_back, &plain, &quick()).is_clean());
    assert_eq!(store_back.rows(0), old_rows);
}
