//! Rebuild and repair racing the stream, forced: a store wrapper lets a
//! user write land, and the in-order indexer apply its record, between
//! repair's read of the source (or the partition) and its write. The
//! stream's write is newer and must stand; the end state must equal a
//! recomputation and verify must be clean. Without the guard, repair would
//! write what it computed from the stale read (checked too).

use std::sync::{Arc, Mutex};

use model::drift::Scope;
use model::{Image, Value};

use super::*;
use crate::store::hooked::{AfterRead, Hooked, Read};
use crate::store::memory::{lambda_event, MemoryStore, Origin};
use crate::test_support::{block, example};
use crate::{Indexer, MemoryQuarantine};

fn s(v: &str) -> Value {
    Value::S(v.to_owned())
}

fn quick() -> Options {
    Options {
        segments: 2,
        page_size: 5,
        concurrency: 2,
        budget: None,
        backoff: Backoff::immediate(3),
        rounds: 3,
    }
}

/// When the race fires: right after the read it names returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    /// A `read_item` of this table (repair's read of a source item).
    ReadItem(&'static str),
    /// A `query_partition` (repair's read of a node's partition).
    Query,
}

type UserWrite = Box<dyn FnOnce(&MemoryStore) + Send>;

/// The in-memory store, with a stream that races repair once.
type Racing = Hooked<Arc<MemoryStore>, Race>;

/// The race: a user's write, and the stream indexer applying it.
struct Race {
    stream: Indexer<Arc<MemoryStore>, MemoryQuarantine>,
    race: Mutex<Option<(After, UserWrite)>>,
    fired: Mutex<usize>,
}

fn racing(store: Arc<MemoryStore>) -> Racing {
    let stream = Indexer::new(
        store.config().clone(),
        store.clone(),
        MemoryQuarantine::new(),
        crate::Options::default(),
    );
    let hook = Race {
        stream,
        race: Mutex::new(None),
        fired: Mutex::new(0),
    };
    Hooked { store, hook }
}

impl Race {
    fn arm(&self, after: After, write: UserWrite) {
        *lock(&self.race) = Some((after, write));
    }

    fn armed(&self) -> After {
        lock(&self.race).as_ref().map_or(After::Query, |(a, _)| *a)
    }

    /// The user's write, then the live indexer applying its record (and the
    /// pipeline's own writes, fed back), all before the read returns.
    async fn fire(&self, now: After) {
        let write = {
            let mut race = lock(&self.race);
            match race.take() {
                Some((after, write)) if after == now => write,
                other => {
                    *race = other;
                    return;
                }
            }
        };
        *lock(&self.fired) += 1;
        let store = self.stream.store();
        store.record_stream(true);
        write(store);
        stream_dry(&self.stream).await;
    }
}

impl AfterRead for Race {
    async fn after_read(&self, read: Read<'_>) {
        match read {
            Read::Query { .. } => self.fire(After::Query).await,
            Read::Item { table, .. } => {
                if let After::ReadItem(t) = self.armed() {
                    if t == table {
                        self.fire(After::ReadItem(t)).await;
                    }
                }
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Feeds the recorded stream to the in-order indexer until it is dry
/// (bounded: the pipeline's own writes plan nothing).
async fn stream_dry(ix: &Indexer<Arc<MemoryStore>, MemoryQuarantine>) {
    for _ in 0..10 {
        let entries = ix.store().take_stream();
        if entries.is_empty() {
            return;
        }
        let outcome = ix
            .handle(&lambda_event(entries.iter().map(|e| &e.record)))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(outcome.failed, None);
    }
    panic!("the stream never ran dry");
}

fn issue(field: &str) -> Image {
    Image::from([
        ("id".to_owned(), s("issue-1")),
        ("rel".to_owned(), s("project-1")),
        ("name".to_owned(), s("n")),
        ("num".to_owned(), Value::N("1".to_owned())),
        (
            "custom_fields".to_owned(),
            Value::M([(field.to_owned(), s("x"))].into_iter().collect()),
        ),
    ])
}

/// An issue written while its record was lost: its row is missing. Repair
/// reads the (absent) row, then the item; right after, the user moves the
/// issue's field and the stream indexes it. Repair's put of the stale row
/// must lose.
fn lost_issue_then_moved() -> Racing {
    let store = Arc::new(MemoryStore::new(example()));
    let _ = store.put_item("issues", issue("a"));
    let racing = racing(store);
    racing.hook.arm(
        After::ReadItem("issues"),
        Box::new(|store| {
            let _ = store.put_item("issues", issue("b"));
        }),
    );
    racing
}

fn node(id: &str) -> Image {
    Image::from([("source".to_owned(), s(id)), ("target".to_owned(), s(id))])
}

fn edge(user: u8) -> Image {
    Image::from([
        ("source".to_owned(), s("GOAL-1")),
        ("target".to_owned(), s(&format!("GOALMEMBERSHIP-USER-{user}"))),
        ("gsi0".to_owned(), s("500-LEAD")),
    ])
}

/// A node with one edge indexed, and a second edge whose record was lost:
/// its member is missing. Repair reads the node's mark, then its partition;
/// right after, the user deletes the second edge and the stream indexes it.
/// Repair's ADD of the stale member must lose.
fn lost_edge_then_deleted() -> Racing {
    let store = Arc::new(MemoryStore::new(example()));
    let racing = racing(store.clone());
    store.record_stream(true);
    let _ = store.put_item("records", node("GOAL-1"));
    let _ = store.put_item("records", edge(1));
    block(stream_dry(&racing.hook.stream));
    store.record_stream(false);
    let _ = store.put_item("records", edge(2));
    racing.hook.arm(
        After::Query,
        Box::new(|store| {
            let _ = store.delete_item("records", &edge(2));
        }),
    );
    racing
}

fn clean(racing: &Racing) -> bool {
    let config = racing.store.config().clone();
    let report = block(verify(&*racing.store, &config, &Scope::all(&config), &quick(), &Quiet))
        .unwrap_or_else(|e| panic!("{e}"));
    report.is_clean()
}

/// A whole rebuild of `store` from a fresh checkpoint, saved nowhere.
fn rebuild_all<S: Store + Scan + Marker>(store: &S, config: &Config) -> RebuildOutcome {
    block(rebuild(
        store,
        config,
        &Scope::all(config),
        &quick(),
        &mut Checkpoint::default(),
        &mut |_| Ok(()),
        &Quiet,
    ))
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn rebuild_loses_to_a_stream_write_that_lands_between_its_read_and_its_write() {
    for racing in [lost_issue_then_moved(), lost_edge_then_deleted()] {
        assert!(!clean(&racing), "the lost record left drift");
        let outcome = rebuild_all(&racing, racing.store.config());
        assert_eq!(*lock(&racing.hook.fired), 1, "the race was run");
        assert!(outcome.repairs().stale >= 1, "{:?}", outcome.repairs());
        assert!(outcome.is_clean(), "{outcome:?}");
        assert_eq!(racing.store.snapshot(), racing.store.recompute());
        assert!(clean(&racing));
        assert!(racing.store.requests().update_set > 0 || racing.store.requests().put_row_if > 0);
    }
}

#[test]
fn verify_repair_loses_to_a_stream_write_that_lands_between_its_read_and_its_write() {
    for racing in [lost_issue_then_moved(), lost_edge_then_deleted()] {
        let config = racing.store.config().clone();
        let report =
            block(verify(&racing, &config, &Scope::all(&config), &quick(), &Quiet)).unwrap_or_else(|e| panic!("{e}"));
        assert!(!report.is_clean());
        let stats = block(repair(
            &racing,
            &config,
            &report.findings,
            Mode::Exact,
            &quick(),
            &WriteBudget::new(None),
            &Quiet,
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(*lock(&racing.hook.fired), 1, "the race was run");
        assert_eq!(stats.stale, 1, "{stats:?}");
        assert_eq!(racing.store.snapshot(), racing.store.recompute());
        assert!(clean(&racing));
    }
}

/// The same races with repair's writes unguarded: what the guard prevents.
#[test]
fn unguarded_the_stale_repair_write_would_win() {
    for (racing, what) in [(lost_issue_then_moved(), "row"), (lost_edge_then_deleted(), "member")] {
        let config = racing.store.config().clone();
        let report =
            block(verify(&racing, &config, &Scope::all(&config), &quick(), &Quiet)).unwrap_or_else(|e| panic!("{e}"));
        let corrections: Vec<(model::drift::DriftKind, Correction)> =
            report.findings.iter().map(|f| (f.kind, f.correction.clone())).collect();
        // The race, then the corrections as computed before it, written in order.
        block(racing.hook.fire(racing.hook.armed()));
        let mut stats = RepairStats::default();
        block(repair::write_through_executor(
            &racing.store,
            &config,
            &quick(),
            &apply::Stamping::default(),
            &corrections,
            || what.to_owned(),
            &mut stats,
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(
            racing.store.snapshot(),
            racing.store.recompute(),
            "an unguarded stale {what} write overwrites the stream's"
        );
    }
}

#[test]
fn a_rebuilt_row_keeps_a_version_that_a_later_record_beats() {
    let racing = lost_issue_then_moved();
    *lock(&racing.hook.race) = None; // no race this time
    let outcome = rebuild_all(&*racing.store, racing.store.config());
    assert!(outcome.is_clean());
    let rows = racing.store.rows(0);
    assert_eq!(rows.len(), 1);
    assert_eq!(
        racing.store.row_version(0, &rows[0].0),
        Some(model::Version::zero()),
        "nothing was there: the rebuilt row has the lowest version"
    );
    // A later stream record beats it, in order and guarded alike.
    racing.store.record_stream(true);
    let _ = racing.store.put_item("issues", issue("c"));
    let entries: Vec<_> = racing
        .store
        .take_stream()
        .into_iter()
        .filter(|e| e.origin == Origin::User)
        .collect();
    racing.store.record_stream(false);
    let guarded = Indexer::new(
        racing.store.config().clone(),
        racing.store.clone(),
        MemoryQuarantine::new(),
        crate::Options {
            guard: apply::Guard::Newer,
            ..crate::Options::default()
        },
    );
    let outcome =
        block(guarded.handle(&lambda_event(entries.iter().map(|e| &e.record)))).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome.stats.apply.stale, 0);
    assert_eq!(racing.store.snapshot(), racing.store.recompute());
}
