//! The executor's request shapes (batching, coalescing, restores) and its
//! failure accounting, over the in-memory store wrapped in a `FaultyStore`.

use std::sync::Arc;
use std::time::Duration;

use model::config::Config;
use model::index::RowKey;
use model::{Image, Value};

use super::sets::chunks;
use super::*;
use crate::store::faulty::{Call, CallLog, Fault, FaultyStore};
use crate::store::memory::MemoryStore;
use crate::store::{RowWrite, SetChange};
use crate::test_support::example;

fn s(v: &str) -> Value {
    Value::S(v.to_owned())
}

fn key(p: &str) -> RowKey {
    RowKey {
        partition: p.to_owned(),
        sort: format!("{p}-sort"),
    }
}

fn put(record: usize, p: &str) -> Op {
    Op {
        record,
        mutation: Mutation::PutRow {
            index: 0,
            key: key(p),
            attributes: Image::new().into(),
        },
    }
}

fn delete(record: usize, p: &str) -> Op {
    Op {
        record,
        mutation: Mutation::DeleteRow { index: 0, key: key(p) },
    }
}

fn add(record: usize, member: &str) -> Op {
    Op {
        record,
        mutation: Mutation::AddMember {
            edge_set: 0,
            node: "N".into(),
            member: member.into(),
        },
    }
}

fn remove(record: usize, member: &str) -> Op {
    Op {
        record,
        mutation: Mutation::RemoveMember {
            edge_set: 0,
            node: "N".into(),
            member: member.into(),
        },
    }
}

fn restore(record: usize, node: &str) -> Op {
    Op {
        record,
        mutation: Mutation::RestoreSet {
            edge_set: 0,
            node: node.into(),
        },
    }
}

fn marker(record: usize, node: &str, complete: bool) -> Op {
    Op {
        record,
        mutation: Mutation::SetMarker {
            edge_set: 0,
            node: node.into(),
            complete,
        },
    }
}

fn node(id: &str) -> Image {
    Image::from([("source".to_owned(), s(id)), ("target".to_owned(), s(id))])
}

fn edge(node: &str, target: &str, role: Option<&str>) -> Image {
    let mut item = Image::from([("source".to_owned(), s(node)), ("target".to_owned(), s(target))]);
    if let Some(role) = role {
        item.insert("gsi0".to_owned(), s(role));
    }
    item
}

fn store_with(script: impl crate::store::faulty::Script + 'static) -> (Arc<Config>, FaultyStore<MemoryStore>) {
    let config = example();
    (config.clone(), FaultyStore::new(MemoryStore::new(config), script))
}

fn no_faults() -> impl FnMut(&Call<'_>) -> Fault + Send {
    |_: &Call<'_>| Fault::None
}

async fn run(config: &Config, store: &FaultyStore<MemoryStore>, backoff: Backoff, ops: Vec<Op>) -> GroupResult {
    apply_group(store, config, &backoff, ops).await
}

fn set_changes(store: &FaultyStore<MemoryStore>) -> Vec<SetChange> {
    store
        .log()
        .calls
        .into_iter()
        .filter_map(|(call, _)| match call {
            CallLog::UpdateSet { change, .. } => Some(change),
            _ => None,
        })
        .collect()
}

fn members(v: &[&str]) -> Vec<String> {
    v.iter().map(|m| (*m).to_owned()).collect()
}

#[tokio::test]
async fn row_writes_go_in_calls_of_at_most_25() {
    let (config, store) = store_with(no_faults());
    let ops: Vec<Op> = (0..60).map(|i| put(i / 3, &format!("k{i:02}"))).collect();
    let result = run(&config, &store, Backoff::immediate(3), ops).await;
    assert_eq!(result.stopped, None);
    let sizes: Vec<usize> = store
        .log()
        .calls
        .iter()
        .map(|(call, _)| match call {
            CallLog::WriteRows(w) => w.len(),
            other => panic!("unexpected call {other:?}"),
        })
        .collect();
    assert_eq!(sizes, vec![25, 25, 10]);
    assert_eq!(result.stats.requests.write_rows, 3);
    assert_eq!(result.stats.applied.put_row, 60);
    assert_eq!(store.inner().rows(0).len(), 60);
}

#[tokio::test]
async fn a_second_write_to_a_key_goes_in_a_later_call() {
    let (config, store) = store_with(no_faults());
    let ops = vec![put(0, "a"), put(0, "b"), delete(1, "a"), put(1, "c"), put(2, "a")];
    let result = run(&config, &store, Backoff::immediate(3), ops).await;
    assert_eq!(result.stopped, None);
    let calls: Vec<Vec<(String, bool)>> = store
        .log()
        .calls
        .into_iter()
        .filter_map(|(call, _)| match call {
            CallLog::WriteRows(w) => Some(w.into_iter().map(|(_, k, put)| (k.partition, put)).collect()),
            _ => None,
        })
        .collect();
    let w = |p: &str, put: bool| (p.to_owned(), put);
    // "c" has no earlier write: it joins the first call, which has room.
    assert_eq!(
        calls,
        vec![
            vec![w("a", true), w("b", true), w("c", true)],
            vec![w("a", false)],
            vec![w("a", true)]
        ]
    );
    let rows: Vec<String> = store.inner().rows(0).into_iter().map(|(k, _)| k.partition).collect();
    assert_eq!(rows, vec!["a", "b", "c"]);
}

#[tokio::test]
async fn role_changes_coalesce_into_one_add_and_one_delete() {
    let (config, store) = store_with(no_faults());
    store.inner().put_item("records", node("N")).expect("put");
    let mut ops = Vec::new();
    for i in 0..10 {
        ops.push(add(i, &format!("E{i}#new")));
        ops.push(remove(i, &format!("E{i}#old")));
    }
    let result = run(&config, &store, Backoff::immediate(3), ops).await;
    assert_eq!(result.stopped, None);
    let changes = set_changes(&store);
    assert_eq!(changes.len(), 2, "{changes:?}");
    assert!(matches!(&changes[0], SetChange::Add(m) if m.len() == 10));
    assert!(matches!(&changes[1], SetChange::Remove(m) if m.len() == 10));
    assert_eq!(result.stats.applied.add_member, 10);
    assert_eq!(result.stats.applied.remove_member, 10);
    let set = &store.inner().node_sets(0)["N"];
    assert_eq!(set.members.len(), 10);
    assert!(set.members.iter().all(|m| m.ends_with("#new")));
}

#[tokio::test]
async fn a_records_add_stays_before_its_delete_and_members_keep_their_order() {
    let (config, store) = store_with(no_faults());
    store.inner().put_item("records", node("N")).expect("put");
    // An edge deleted (r0), then an edge whose role changed (r1): the new
    // member must be added before the old one is deleted, so r1's DELETE
    // cannot join r0's.
    let ops = vec![remove(0, "X"), add(1, "E#new"), remove(1, "E#old")];
    let _ = run(&config, &store, Backoff::immediate(3), ops).await;
    assert_eq!(
        set_changes(&store),
        vec![
            SetChange::Remove(members(&["X"])),
            SetChange::Add(members(&["E#new"])),
            SetChange::Remove(members(&["E#old"]))
        ]
    );
    // One member added, removed, added again: three requests, in order; the
    // other members join the earliest request of their kind.
    let (config, store) = store_with(no_faults());
    store.inner().put_item("records", node("N")).expect("put");
    let ops = vec![add(0, "M"), remove(1, "M"), add(2, "M"), add(3, "A"), remove(4, "B")];
    let _ = run(&config, &store, Backoff::immediate(3), ops).await;
    assert_eq!(
        set_changes(&store),
        vec![
            SetChange::Add(members(&["M", "A"])),
            SetChange::Remove(members(&["M", "B"])),
            SetChange::Add(members(&["M"]))
        ]
    );
    assert_eq!(
        store.inner().node_sets(0)["N"].members.iter().collect::<Vec<_>>(),
        vec!["A", "M"]
    );
}

#[tokio::test]
async fn a_restore_is_a_barrier_and_adds_every_member_found() {
    let (config, store) = store_with(no_faults());
    let inner = store.inner();
    inner.put_item("records", node("N")).expect("put");
    inner
        .put_item("records", edge("N", "GOALMEMBERSHIP-U1", Some("400-C")))
        .expect("put");
    inner
        .put_item("records", edge("N", "TEAMMEMBERSHIP-U2", Some("300-M")))
        .expect("put");
    inner
        .put_item("records", edge("N", "COMMENT-U3", Some("1")))
        .expect("put"); // a skipped type
    inner
        .put_item("records", edge("N", "GOALMEMBERSHIP-U4", None))
        .expect("put"); // no member
    inner.put_item("records", node("EMPTY")).expect("put");
    let ops = vec![
        add(0, "Z"),
        restore(1, "N"),
        remove(2, "Z"),
        restore(3, "EMPTY"),
        restore(4, "GONE"),
    ];
    let result = run(&config, &store, Backoff::immediate(3), ops).await;
    assert_eq!(result.stopped, None);
    let calls: Vec<CallLog> = store.log().calls.into_iter().map(|(c, _)| c).collect();
    let update = |node: &str, change: SetChange| CallLog::UpdateSet {
        edge_set: 0,
        node: node.into(),
        change,
    };
    let query = |node: &str| CallLog::Query {
        table: "records".into(),
        partition: node.into(),
    };
    assert_eq!(
        calls,
        vec![
            update("N", SetChange::Add(members(&["Z"]))),
            query("N"),
            update(
                "N",
                SetChange::Add(members(&["GOALMEMBERSHIP-U1#400-C", "TEAMMEMBERSHIP-U2#300-M"]))
            ),
            update("N", SetChange::Remove(members(&["Z"]))),
            query("EMPTY"),
            update("EMPTY", SetChange::Add(vec![])),
            query("GONE"),
            update("GONE", SetChange::Add(vec![])),
        ]
    );
    assert_eq!(result.stats.applied.restore_set, 3);
    assert_eq!(result.stats.node_missing, 1);
    let sets = inner.node_sets(0);
    assert_eq!(sets["N"].members.len(), 2);
    assert_eq!(
        sets["EMPTY"].complete,
        Some(true),
        "a restore of a node without edges still sets the marker"
    );
    assert!(sets["EMPTY"].members.is_empty());
}

#[tokio::test(start_paused = true)]
async fn unprocessed_items_are_resent_after_a_backoff() {
    let mut n = 0;
    let (config, store) = store_with(move |call: &Call<'_>| {
        n += 1;
        match (n, call) {
            (1, Call::WriteRows(w)) => Fault::Unprocessed((1..w.len()).collect()),
            (2 | 3, Call::WriteRows(w)) => Fault::Unprocessed((0..w.len()).collect()),
            (4, Call::WriteRows(w)) => Fault::Unprocessed((1..w.len()).collect()),
            _ => Fault::None,
        }
    });
    let backoff = Backoff {
        base: Duration::from_millis(100),
        cap: Duration::from_millis(300),
        max_attempts: 3,
    };
    let start = tokio::time::Instant::now();
    let ops: Vec<Op> = (0..5).map(|i| put(i, &format!("k{i}"))).collect();
    let result = run(&config, &store, backoff, ops).await;
    assert_eq!(result.stopped, None);
    assert_eq!(store.inner().rows(0).len(), 5);
    assert_eq!(result.stats.requests.write_rows, 5);
    assert_eq!(result.stats.requests.retries, 4);
    assert_eq!(result.stats.unprocessed, 4 + 4 + 4 + 3);
    // Waits: after progress ≤ 100 ms, after no progress ≤ 200 ms and ≤ 300 ms, after progress ≤ 100 ms.
    assert!(start.elapsed() <= Duration::from_millis(700), "{:?}", start.elapsed());
}

#[tokio::test(start_paused = true)]
async fn unprocessed_items_without_progress_stop_the_group() {
    let (config, store) = store_with(|call: &Call<'_>| match call {
        Call::WriteRows(w) => Fault::Unprocessed((0..w.len()).collect()),
        _ => Fault::None,
    });
    let backoff = Backoff {
        base: Duration::from_millis(10),
        cap: Duration::from_secs(1),
        max_attempts: 4,
    };
    let result = run(&config, &store, backoff, vec![put(0, "a"), put(1, "b")]).await;
    assert!(
        matches!(
            result.stopped,
            Some(Stopped {
                record: 0,
                error: ref e
            }) if e.is_transient()
        ),
        "{result:?}"
    );
    assert_eq!(result.stats.requests.write_rows, 4);
}

#[tokio::test]
async fn a_transient_failure_stops_at_the_lowest_unfinished_record() {
    let (config, store) = store_with(|call: &Call<'_>| match call {
        Call::UpdateSet { .. } => Fault::Throttle,
        _ => Fault::None,
    });
    store.inner().put_item("records", node("N")).expect("put");
    let ops = vec![put(0, "a"), add(1, "M"), put(2, "b"), add(3, "P")];
    let result = run(&config, &store, Backoff::immediate(3), ops).await;
    let stopped = result.stopped.expect("stopped");
    assert_eq!(stopped.record, 1);
    assert!(
        stopped.error.is_transient() && stopped.error.message().contains("3 attempts"),
        "{stopped:?}"
    );
    assert_eq!(result.stats.requests.update_set, 3);
    assert_eq!(result.stats.requests.retries, 2);
    // Rows of records 0 and 2 went out; nothing was added.
    assert_eq!(store.inner().rows(0).len(), 2);
    assert!(store.inner().node_sets(0)["N"].members.is_empty());

    // When the rows fail, the lowest record with a row write is where the
    // group stops: the set change of record 0 went out all the same (rows
    // and sets are sent side by side).
    let (config, store) = store_with(|call: &Call<'_>| match call {
        Call::WriteRows(_) => Fault::Throttle,
        _ => Fault::None,
    });
    store.inner().put_item("records", node("N")).expect("put");
    let result = run(
        &config,
        &store,
        Backoff::immediate(2),
        vec![add(0, "M"), put(1, "a"), put(2, "b")],
    )
    .await;
    assert_eq!(result.stopped.map(|s| s.record), Some(1));
    assert_eq!(store.inner().node_sets(0)["N"].members.len(), 1);
    assert!(store.inner().rows(0).is_empty());
}

#[tokio::test]
async fn timeouts_after_the_request_landed_are_harmless() {
    let mut first = true;
    let (config, store) = store_with(move |_: &Call<'_>| {
        if std::mem::take(&mut first) {
            Fault::TimeoutAfter
        } else {
            Fault::None
        }
    });
    store.inner().put_item("records", node("N")).expect("put");
    let result = run(&config, &store, Backoff::immediate(3), vec![add(0, "M"), put(0, "a")]).await;
    assert_eq!(result.stopped, None);
    assert_eq!(result.stats.requests.retries, 1);
    assert_eq!(store.inner().rows(0).len(), 1);
    assert_eq!(store.inner().node_sets(0)["N"].members.len(), 1);
}

#[tokio::test]
async fn a_refused_write_is_singled_out_and_the_group_goes_on() {
    let (config, store) = store_with(|call: &Call<'_>| match call {
        Call::WriteRows(w) if w.iter().any(|w| w.key.partition == "bad") => Fault::Refused("too big".into()),
        Call::UpdateSet {
            change: SetChange::Add(m),
            ..
        } if m.iter().any(|m| m == "BAD") => Fault::Refused("nope".into()),
        _ => Fault::None,
    });
    store.inner().put_item("records", node("N")).expect("put");
    let ops = vec![
        put(0, "good1"),
        put(1, "bad"),
        add(1, "BAD"),
        add(2, "OK"),
        put(2, "good2"),
    ];
    let result = run(&config, &store, Backoff::immediate(3), ops).await;
    assert_eq!(result.stopped, None);
    let records: Vec<usize> = result.refused.iter().map(|r| r.record).collect();
    assert_eq!(records, vec![1, 1], "{:?}", result.refused);
    assert!(
        result.refused[0].fault.message().contains("index `issue-attrib`")
            && result.refused[0].fault.message().contains("too big")
    );
    assert!(result.refused[1].fault.message().contains("edge set `edges`"));
    assert_eq!(store.inner().rows(0).len(), 2);
    assert_eq!(
        store.inner().node_sets(0)["N"].members.iter().collect::<Vec<_>>(),
        vec!["OK"]
    );
    assert_eq!(result.stats.refused, 2);
}

#[tokio::test]
async fn deployment_errors_stop_at_once() {
    let (config, store) = store_with(|call: &Call<'_>| match call {
        Call::Query { .. } => Fault::Deployment("AccessDeniedException".into()),
        _ => Fault::None,
    });
    let result = run(
        &config,
        &store,
        Backoff::immediate(5),
        vec![put(0, "a"), restore(1, "N"), put(2, "b")],
    )
    .await;
    let stopped = result.stopped.expect("stopped");
    // The rows of records 0 and 2 went out (beside the sets): record 1, the
    // restore, is the lowest whose mutations are not all applied.
    assert_eq!(stopped.record, 1);
    assert!(stopped.error.class() == model::Class::Deployment);
    assert_eq!(result.stats.requests.query_partition, 1, "no retries");
    assert_eq!(store.inner().rows(0).len(), 2);
}

#[tokio::test]
async fn refusals_after_the_stop_are_not_reported() {
    let (config, store) = store_with(|call: &Call<'_>| match call {
        Call::WriteRows(w) if w.iter().any(|w| w.key.partition == "bad") => Fault::Refused("no".into()),
        Call::UpdateSet { .. } => Fault::Throttle,
        _ => Fault::None,
    });
    store.inner().put_item("records", node("N")).expect("put");
    let result = run(&config, &store, Backoff::immediate(2), vec![add(0, "M"), put(1, "bad")]).await;
    assert_eq!(result.stopped.map(|s| s.record), Some(0));
    assert!(
        result.refused.is_empty(),
        "record 1 will be redelivered: {:?}",
        result.refused
    );
}

// ---------------------------------------------------------------------------
// A whole batch: rows of several groups share calls.
// ---------------------------------------------------------------------------

/// Groups' ops as `apply_batch` takes them: `(group, op)` in record order.
fn in_batch_order(groups: Vec<Vec<Op>>) -> Vec<(usize, Op)> {
    let mut ops: Vec<(usize, Op)> = groups
        .into_iter()
        .enumerate()
        .flat_map(|(g, ops)| ops.into_iter().map(move |op| (g, op)))
        .collect();
    ops.sort_by_key(|(_, op)| op.record);
    ops
}

fn row_calls(store: &FaultyStore<MemoryStore>) -> Vec<Vec<(String, bool)>> {
    store
        .log()
        .calls
        .into_iter()
        .filter_map(|(call, _)| match call {
            CallLog::WriteRows(w) => Some(w.into_iter().map(|(_, k, put)| (k.partition, put)).collect()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn rows_of_several_groups_share_calls_and_a_failed_call_fails_all_its_records() {
    let (config, store) = store_with(|call: &Call<'_>| match call {
        Call::WriteRows(w) if w.iter().any(|w| w.key.partition == "k27") => Fault::Throttle,
        _ => Fault::None,
    });
    // 30 groups of one record each, one row write per record, interleaved
    // with the lane of a 31st group.
    store.inner().put_item("records", node("N")).expect("put");
    let mut groups: Vec<Vec<Op>> = (0..30).map(|r| vec![put(r, &format!("k{r:02}"))]).collect();
    groups.push(vec![add(30, "M")]);
    let applied = apply_batch(
        &store,
        &config,
        &Backoff::immediate(3),
        4,
        &Stamping::default(),
        in_batch_order(groups),
    )
    .await;
    let sizes: Vec<usize> = row_calls(&store).iter().map(Vec::len).collect();
    assert_eq!(
        sizes,
        vec![25, 5, 5, 5],
        "two calls for 30 groups; the second tried 3 times"
    );
    // The first call's records are finished; every record of the failed call is not.
    assert!((0..25).all(|r| applied.is_finished(r)));
    assert!((25..30).all(|r| !applied.is_finished(r)));
    assert!(applied.is_finished(30), "the set lane is not held up by the rows");
    let stopped = applied.first_unfinished([25]).expect("stopped");
    assert!(stopped.error.is_transient() && stopped.error.message().contains("3 attempts"));
    assert_eq!(applied.first_unfinished(0..25), None);
    assert_eq!(applied.first_unfinished(0..30).map(|s| s.record), Some(25));
    assert_eq!(store.inner().rows(0).len(), 25);
}

/// Guarded (as for a Kinesis data stream): records 0..n, each with its own
/// version, each putting one row `k00`, `k01`, ...
async fn apply_guarded(store: &FaultyStore<MemoryStore>, config: &Config, n: usize) -> Applied {
    let versions = (1..=n)
        .map(|v| model::Version::of_sequence(&v.to_string()).expect("a version"))
        .collect();
    let groups: Vec<Vec<Op>> = (0..n).map(|r| vec![put(r, &format!("k{r:02}"))]).collect();
    let stamping = Stamping::new(versions, guard::Guard::Newer);
    apply_batch(
        store,
        config,
        &Backoff::immediate(3),
        4,
        &stamping,
        in_batch_order(groups),
    )
    .await
}

/// How many times each row key was sent.
fn sends(store: &FaultyStore<MemoryStore>) -> std::collections::BTreeMap<String, usize> {
    let mut sends = std::collections::BTreeMap::new();
    for key in row_calls(store).into_iter().flatten().map(|(k, _)| k) {
        *sends.entry(key).or_default() += 1;
    }
    sends
}

#[tokio::test]
async fn a_guarded_call_sends_again_only_the_writes_that_failed() {
    let mut throttled = 0;
    let (config, store) = store_with(move |call: &Call<'_>| match call {
        Call::WriteRows(w) if w.iter().any(|w| w.key.partition == "k03") && throttled < 2 => {
            throttled += 1;
            Fault::Throttle
        }
        _ => Fault::None,
    });
    let applied = apply_guarded(&store, &config, 10).await;
    assert!((0..10).all(|r| applied.is_finished(r)), "{:?}", applied.errors);
    let sends = sends(&store);
    assert_eq!(sends.get("k03"), Some(&3), "{sends:?}");
    assert!(sends.iter().all(|(k, &n)| k == "k03" || n == 1), "{sends:?}");
    assert_eq!(applied.stats.requests.put_row_if, 12);
    assert_eq!(applied.stats.requests.retries, 2);
    assert_eq!(store.inner().rows(0).len(), 10);
}

#[tokio::test]
async fn each_guarded_write_sent_again_counts_as_a_resend() {
    let mut throttled = false;
    let (config, store) = store_with(move |call: &Call<'_>| match call {
        Call::WriteRows(w) if !throttled && w.iter().any(|w| w.key.partition == "k04") => {
            throttled = true;
            Fault::Throttle
        }
        Call::WriteRows(w) if w.iter().any(|w| ["k01", "k02"].contains(&w.key.partition.as_str())) => {
            Fault::TimeoutAfter
        }
        _ => Fault::None,
    });
    let applied = apply_guarded(&store, &config, 6).await;
    let unfinished: Vec<usize> = (0..6).filter(|&r| !applied.is_finished(r)).collect();
    assert_eq!(unfinished, vec![1, 2], "{:?}", applied.errors);
    let sends = sends(&store);
    let requests = sends.values().sum::<usize>();
    assert_eq!(applied.stats.requests.put_row_if, requests, "{sends:?}");
    assert_eq!(applied.stats.requests.retries, requests - 6, "{sends:?}");
}

#[tokio::test]
async fn a_guarded_write_that_keeps_failing_leaves_its_record_alone_unfinished() {
    let (config, store) = store_with(|call: &Call<'_>| match call {
        Call::WriteRows(w) if w.iter().any(|w| w.key.partition == "k01") => Fault::Throttle,
        _ => Fault::None,
    });
    let applied = apply_guarded(&store, &config, 5).await;
    let unfinished: Vec<usize> = (0..5).filter(|&r| !applied.is_finished(r)).collect();
    assert_eq!(unfinished, vec![1]);
    let error = &applied.errors[&1];
    assert!(
        error.is_transient() && error.message().contains("3 attempts"),
        "{error:?}"
    );
    // The first send made progress (the other writes); three after it made none.
    assert_eq!(sends(&store).get("k01"), Some(&4));
    assert_eq!(store.inner().rows(0).len(), 4);
}

#[tokio::test]
async fn a_deployment_fault_of_a_guarded_write_is_not_sent_again() {
    let (config, store) = store_with(|call: &Call<'_>| match call {
        Call::WriteRows(w) if w.iter().any(|w| w.key.partition == "k02") => Fault::Deployment("no table".into()),
        Call::WriteRows(w) if w.iter().any(|w| w.key.partition == "k04") => Fault::Throttle,
        _ => Fault::None,
    });
    let applied = apply_guarded(&store, &config, 6).await;
    let unfinished: Vec<usize> = (0..6).filter(|&r| !applied.is_finished(r)).collect();
    assert_eq!(unfinished, vec![2, 4], "{:?}", applied.errors);
    assert!(applied.errors[&2].is_deployment(), "{:?}", applied.errors[&2]);
    assert!(
        applied.errors[&4].is_deployment(),
        "the call failed whole: {:?}",
        applied.errors[&4]
    );
    let sends = sends(&store);
    assert!(sends.values().all(|&n| n == 1), "nothing was sent again: {sends:?}");
    assert_eq!(store.inner().rows(0).len(), 4);
}

#[tokio::test]
async fn a_call_after_a_failed_call_on_a_shared_key_is_never_sent() {
    let (config, store) = store_with(|call: &Call<'_>| match call {
        Call::WriteRows(w) if w.iter().any(|w| w.key.partition == "x") => Fault::Deployment("no table".into()),
        _ => Fault::None,
    });
    // Group A writes "a" twice (records 0 and 2); group B writes "x" and "y".
    let groups = vec![vec![put(0, "a"), delete(2, "a")], vec![put(1, "x"), put(3, "y")]];
    let applied = apply_batch(
        &store,
        &config,
        &Backoff::immediate(3),
        4,
        &Stamping::default(),
        in_batch_order(groups),
    )
    .await;
    let w = |p: &str, put: bool| (p.to_owned(), put);
    // Call 0 holds a, x, y and fails at once; call 1 (delete a) waits on it
    // and is never sent.
    assert_eq!(row_calls(&store), vec![vec![w("a", true), w("x", true), w("y", true)]]);
    assert!((0..4).all(|r| !applied.is_finished(r)));
    let stopped = applied.first_unfinished([0, 2]).expect("stopped");
    assert_eq!(stopped.record, 0);
    let blocked = applied.errors.get(&2).expect("record 2 has an error");
    assert!(
        blocked.is_deployment() && blocked.message().contains("not sent"),
        "{blocked:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_later_write_to_a_key_waits_until_the_earlier_one_landed() {
    // The first call's put of "a" comes back unprocessed twice; meanwhile
    // other calls go out (concurrency 4), but the delete of "a" waits.
    let mut left = 2;
    let (config, store) = store_with(move |call: &Call<'_>| match call {
        Call::WriteRows(w) if left > 0 && w.iter().any(|w| w.key.partition == "a" && w.put.is_some()) => {
            left -= 1;
            let at = w.iter().position(|w| w.key.partition == "a").unwrap_or(0);
            Fault::Unprocessed(vec![at])
        }
        _ => Fault::None,
    });
    let mut first: Vec<Op> = vec![put(0, "a")];
    first.extend((1..60).map(|r| put(r, &format!("k{r:02}"))));
    let groups = vec![first, vec![delete(60, "a")]];
    let backoff = Backoff {
        base: Duration::from_millis(10),
        cap: Duration::from_millis(40),
        max_attempts: 4,
    };
    let applied = apply_batch(
        &store,
        &config,
        &backoff,
        4,
        &Stamping::default(),
        in_batch_order(groups),
    )
    .await;
    assert!((0..=60).all(|r| applied.is_finished(r)));
    let calls = row_calls(&store);
    let last_put = calls
        .iter()
        .rposition(|c| c.contains(&("a".to_owned(), true)))
        .expect("a put of a");
    let delete = calls
        .iter()
        .position(|c| c.contains(&("a".to_owned(), false)))
        .expect("the delete of a");
    assert!(delete > last_put, "{calls:?}");
    assert!(
        calls[1..last_put].iter().any(|c| c.len() == 25),
        "other calls went out while the put of a was resent: {calls:?}"
    );
    assert!(store.inner().rows(0).iter().all(|(k, _)| k.partition != "a"));
    assert_eq!(store.inner().rows(0).len(), 59);
}

/// A store whose row calls take a while, counting how many are in flight.
#[derive(Default)]
struct Slow {
    in_flight: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
    calls: std::sync::atomic::AtomicUsize,
}

impl Slow {
    /// One request, in flight for 10 ms.
    async fn request(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        let now = self.in_flight.fetch_add(1, SeqCst) + 1;
        self.most.fetch_max(now, SeqCst);
        self.calls.fetch_add(1, SeqCst);
        tokio::time::sleep(Duration::from_millis(10)).await;
        self.in_flight.fetch_sub(1, SeqCst);
    }
}

impl crate::store::Store for Slow {
    async fn write_rows(&self, _writes: &[RowWrite]) -> Result<Vec<RowWrite>, StoreError> {
        self.request().await;
        Ok(Vec::new())
    }
    async fn put_row_if(
        &self,
        _write: &RowWrite,
        _guard: &crate::store::RowGuard,
    ) -> Result<crate::store::RowOutcome, StoreError> {
        self.request().await;
        Ok(crate::store::RowOutcome::Written)
    }
    async fn update_set_stamped(
        &self,
        _e: usize,
        _node: &str,
        _change: &SetChange,
        _stamp: crate::store::SetStamp<'_>,
    ) -> Result<crate::store::SetOutcome, StoreError> {
        Ok(crate::store::SetOutcome::Applied)
    }
    async fn query_partition(&self, _table: &str, _partition: &str) -> Result<Vec<Image>, StoreError> {
        Ok(Vec::new())
    }
    async fn set_marker_stamped(
        &self,
        _e: usize,
        _node: &str,
        _complete: bool,
        _stamp: crate::store::SetStamp<'_>,
    ) -> Result<crate::store::SetOutcome, StoreError> {
        Ok(crate::store::SetOutcome::Applied)
    }
}

#[tokio::test(start_paused = true)]
async fn row_calls_are_in_flight_at_most_concurrency_at_a_time() {
    let config = example();
    let store = Slow::default();
    let groups: Vec<Vec<Op>> = (0..200).map(|r| vec![put(r, &format!("k{r:03}"))]).collect();
    let applied = apply_batch(
        &store,
        &config,
        &Backoff::immediate(3),
        3,
        &Stamping::default(),
        in_batch_order(groups),
    )
    .await;
    assert!((0..200).all(|r| applied.is_finished(r)));
    use std::sync::atomic::Ordering::SeqCst;
    assert_eq!(store.calls.load(SeqCst), 8);
    assert_eq!(store.most.load(SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn the_guarded_writes_of_a_call_are_in_flight_together() {
    let config = example();
    let store = Slow::default();
    let versions = (1..=200)
        .map(|v| model::Version::of_sequence(&v.to_string()).expect("a version"))
        .collect();
    let groups: Vec<Vec<Op>> = (0..200).map(|r| vec![put(r, &format!("k{r:03}"))]).collect();
    let stamping = Stamping::new(versions, guard::Guard::Newer);
    let applied = apply_batch(
        &store,
        &config,
        &Backoff::immediate(3),
        3,
        &stamping,
        in_batch_order(groups),
    )
    .await;
    assert!((0..200).all(|r| applied.is_finished(r)));
    use std::sync::atomic::Ordering::SeqCst;
    assert_eq!(store.calls.load(SeqCst), 200, "a PutItem per write");
    let most = 3 * crate::store::MAX_ROW_PUTS_IN_FLIGHT;
    assert_eq!(
        store.most.load(SeqCst),
        most,
        "three calls at a time, each with its most in flight"
    );
}

#[tokio::test]
async fn a_restores_add_takes_in_the_adds_after_it() {
    let (config, store) = store_with(|call: &Call<'_>| match call {
        Call::UpdateSet {
            change: SetChange::Add(m),
            ..
        } if m.iter().any(|m| m == "BAD") => Fault::Refused("nope".into()),
        _ => Fault::None,
    });
    let inner = store.inner();
    inner.put_item("records", node("N")).expect("put");
    inner
        .put_item("records", edge("N", "GOALMEMBERSHIP-U1", Some("400-C")))
        .expect("put");
    let ops = vec![
        restore(0, "N"),
        add(1, "X#1"),
        remove(2, "GOALMEMBERSHIP-U1#400-C"),
        add(3, "Z#1"),
        add(4, "BAD"),
    ];
    let result = run(&config, &store, Backoff::immediate(3), ops).await;
    assert_eq!(result.stopped, None);
    let calls: Vec<CallLog> = store.log().calls.into_iter().map(|(c, _)| c).collect();
    let update = |change: SetChange| CallLog::UpdateSet {
        edge_set: 0,
        node: "N".into(),
        change,
    };
    assert_eq!(
        calls,
        vec![
            CallLog::Query {
                table: "records".into(),
                partition: "N".into()
            },
            update(SetChange::Add(members(&[
                "GOALMEMBERSHIP-U1#400-C",
                "X#1",
                "Z#1",
                "BAD"
            ]))),
            update(SetChange::Add(members(&["GOALMEMBERSHIP-U1#400-C"]))),
            update(SetChange::Add(members(&["X#1"]))),
            update(SetChange::Add(members(&["Z#1"]))),
            update(SetChange::Add(members(&["BAD"]))),
            update(SetChange::Remove(members(&["GOALMEMBERSHIP-U1#400-C"]))),
        ]
    );
    // Only record 4 is refused: the restore and the others are done.
    let records: Vec<usize> = result.refused.iter().map(|r| r.record).collect();
    assert_eq!(records, vec![4]);
    assert_eq!(result.stats.applied.restore_set, 1);
    assert_eq!(result.stats.applied.add_member, 2);
    assert_eq!(result.stats.applied.remove_member, 1);
    let set = &inner.node_sets(0)["N"];
    assert_eq!(set.members.iter().collect::<Vec<_>>(), vec!["X#1", "Z#1"]);

    // A refused member that only the restore found refuses the restore as a
    // whole (its members are not singled out); the other records go on.
    let (config, store) = store_with(|call: &Call<'_>| match call {
        Call::UpdateSet {
            change: SetChange::Add(m),
            ..
        } if m.iter().any(|m| m.starts_with("TEAMMEMBERSHIP")) => Fault::Refused("too big".into()),
        _ => Fault::None,
    });
    let inner = store.inner();
    inner.put_item("records", node("N")).expect("put");
    inner
        .put_item("records", edge("N", "GOALMEMBERSHIP-U1", Some("400-C")))
        .expect("put");
    inner
        .put_item("records", edge("N", "TEAMMEMBERSHIP-U2", Some("300-M")))
        .expect("put");
    let result = run(
        &config,
        &store,
        Backoff::immediate(3),
        vec![restore(0, "N"), add(1, "X#1")],
    )
    .await;
    assert_eq!(result.stopped, None);
    assert_eq!(
        set_changes(&store),
        vec![
            SetChange::Add(members(&["GOALMEMBERSHIP-U1#400-C", "TEAMMEMBERSHIP-U2#300-M", "X#1"])),
            SetChange::Add(members(&["GOALMEMBERSHIP-U1#400-C", "TEAMMEMBERSHIP-U2#300-M"])),
            SetChange::Add(members(&["X#1"])),
        ]
    );
    let records: Vec<usize> = result.refused.iter().map(|r| r.record).collect();
    assert_eq!(records, vec![0]);
    assert!(
        result.refused[0].fault.message().contains("restore of node"),
        "{:?}",
        result.refused
    );
    assert_eq!(result.stats.applied.add_member, 1);
}

#[test]
fn backoff_ceilings_double_up_to_the_cap() {
    let b = Backoff {
        base: Duration::from_millis(10),
        cap: Duration::from_millis(70),
        max_attempts: 5,
    };
    let ceilings: Vec<u128> = (0..5).map(|r| b.ceiling(r).as_millis()).collect();
    assert_eq!(ceilings, vec![10, 20, 40, 70, 70]);
    assert_eq!(b.ceiling(200), Duration::from_millis(70));
    for r in 0..40 {
        assert!(b.delay(r) <= b.ceiling(r));
    }
    assert_eq!(Backoff::immediate(3).delay(7), Duration::ZERO);
}

#[test]
fn big_member_lists_are_chunked() {
    let members: Vec<String> = (0..2500).map(|i| format!("m{i}")).collect();
    let sizes: Vec<usize> = chunks(members, |m| m.as_str(), MAX_MEMBERS_PER_UPDATE)
        .iter()
        .map(Vec::len)
        .collect();
    assert_eq!(sizes, vec![1000, 1000, 500]);
    let big: Vec<String> = (0..3).map(|_| "x".repeat(MAX_MEMBER_BYTES_PER_UPDATE / 2)).collect();
    assert_eq!(chunks(big, |m| m.as_str(), MAX_MEMBERS_PER_UPDATE).len(), 2);
}

proptest::proptest! {
    /// Chunks keep the members and their order, each within the update's
    /// limits and none empty, and there is one chunk whenever all fit in it.
    #[test]
    fn chunks_keep_the_members_within_the_limits(
        sizes in proptest::collection::vec(
            proptest::prop_oneof![0usize..8, 0usize..MAX_MEMBER_BYTES_PER_UPDATE / 2],
            0..12,
        ),
        many in 0usize..3,
    ) {
        // Sometimes past the count limit, with short members.
        let count = sizes.len() + many * MAX_MEMBERS_PER_UPDATE / 2;
        let members: Vec<String> =
            (0..count).map(|i| format!("{i:x}{}", "x".repeat(sizes.get(i).copied().unwrap_or(0)))).collect();
        let bytes: usize = members.iter().map(String::len).sum();
        let out = chunks(members.clone(), |m| m.as_str(), MAX_MEMBERS_PER_UPDATE);
        let fits = count <= MAX_MEMBERS_PER_UPDATE && bytes <= MAX_MEMBER_BYTES_PER_UPDATE;
        proptest::prop_assert_eq!(out.len() == 1, fits && count > 0);
        for chunk in &out {
            let chunk_bytes: usize = chunk.iter().map(String::len).sum();
            proptest::prop_assert!(!chunk.is_empty());
            proptest::prop_assert!(chunk.len() <= MAX_MEMBERS_PER_UPDATE);
            proptest::prop_assert!(chunk.len() == 1 || chunk_bytes <= MAX_MEMBER_BYTES_PER_UPDATE);
        }
        proptest::prop_assert_eq!(out.into_iter().flatten().collect::<Vec<_>>(), members);
    }
}

/// Moved from the rebuild tests (repair's own chunking is this one now).
#[test]
fn member_chunks_respect_the_update_limits() {
    let members: Vec<String> = (0..2500).map(|i| format!("m{i}")).collect();
    let sizes: Vec<usize> = chunks(members, |m| m.as_str(), MAX_MEMBERS_PER_UPDATE)
        .iter()
        .map(Vec::len)
        .collect();
    assert_eq!(sizes, vec![MAX_MEMBERS_PER_UPDATE, MAX_MEMBERS_PER_UPDATE, 500]);
    let big: Vec<String> = (0..3).map(|i| format!("{i}{}", "x".repeat(200 * 1024))).collect();
    assert_eq!(chunks(big, |m| m.as_str(), MAX_MEMBERS_PER_UPDATE).len(), 3);
    assert!(chunks(Vec::<String>::new(), |m| m.as_str(), MAX_MEMBERS_PER_UPDATE).is_empty());
}

#[tokio::test]
async fn a_marker_is_a_barrier_after_the_members_before_it() {
    let (config, store) = store_with(no_faults());
    let inner = store.inner();
    inner.put_item("records", node("N")).expect("put");
    inner.put_item("records", node("F")).expect("put");
    let ops = vec![
        add(0, "A"),
        add(1, "B"),
        remove(2, "C"),
        marker(3, "N", true),
        add(4, "D"),
        marker(5, "F", false),
        marker(6, "GONE", true),
    ];
    let result = run(&config, &store, Backoff::immediate(3), ops).await;
    assert_eq!(result.stopped, None);
    let calls: Vec<CallLog> = store.log().calls.into_iter().map(|(c, _)| c).collect();
    let update = |change: SetChange| CallLog::UpdateSet {
        edge_set: 0,
        node: "N".into(),
        change,
    };
    let set = |node: &str, complete: bool| CallLog::SetMarker {
        edge_set: 0,
        node: node.into(),
        complete,
    };
    assert_eq!(
        calls,
        vec![
            update(SetChange::Add(members(&["A", "B"]))),
            update(SetChange::Remove(members(&["C"]))),
            set("N", true),
            update(SetChange::Add(members(&["D"]))),
            set("F", false),
            set("GONE", true),
        ]
    );
    assert_eq!(result.stats.applied.set_marker, 3);
    assert_eq!(result.stats.applied.total(), 7);
    assert_eq!(result.stats.requests.update_set, 6);
    assert_eq!(result.stats.flagged, 1);
    assert_eq!(result.stats.node_missing, 1);
    let sets = inner.node_sets(0);
    assert_eq!(sets["N"].complete, Some(true));
    assert_eq!(sets["F"].complete, Some(false));
    assert!(!sets.contains_key("GONE"), "a marker creates no node");
}

#[tokio::test]
async fn a_refused_marker_is_a_refusal_and_a_throttled_one_is_retried() {
    let (config, store) = store_with(|call: &Call<'_>| match call {
        Call::SetMarker { node: "BAD", .. } => Fault::Refused("no".into()),
        _ => Fault::None,
    });
    store.inner().put_item("records", node("BAD")).expect("put");
    let result = run(&config, &store, Backoff::immediate(3), vec![marker(0, "BAD", true)]).await;
    assert_eq!(result.stopped, None);
    assert_eq!(result.refused.len(), 1);
    assert!(
        result.refused[0].fault.message().contains("marker"),
        "{:?}",
        result.refused
    );

    let mut throttled = 0;
    let (config, store) = store_with(move |call: &Call<'_>| match call {
        Call::SetMarker { .. } if throttled < 2 => {
            throttled += 1;
            Fault::Throttle
        }
        _ => Fault::None,
    });
    store.inner().put_item("records", node("N")).expect("put");
    let result = run(&config, &store, Backoff::immediate(3), vec![marker(0, "N", true)]).await;
    assert_eq!(result.stopped, None);
    assert_eq!(result.stats.requests.update_set, 3);
    assert_eq!(result.stats.requests.retries, 2);
    assert_eq!(store.inner().node_sets(0)["N"].complete, Some(true));
}
