use super::*;
use crate::store::{MarkGuard, MemberStamp};
use crate::test_support::block;
use model::config;

fn s(v: &str) -> Value {
    Value::S(v.to_owned())
}

fn store() -> MemoryStore {
    let config = config::parse(config::EXAMPLE_CONFIG, "streamdex.example.toml").expect("valid");
    MemoryStore::new(Arc::new(config))
}

fn node(id: &str) -> Image {
    Image::from([("source".to_owned(), s(id)), ("target".to_owned(), s(id))])
}

fn edge(node: &str, target: &str, role: &str) -> Image {
    Image::from([
        ("source".to_owned(), s(node)),
        ("target".to_owned(), s(target)),
        ("gsi0".to_owned(), s(role)),
    ])
}

#[test]
fn set_updates_need_the_node_and_create_nothing() {
    let store = store();
    store.record_stream(true);
    let out = block(store.update_set(0, "GOAL-1", SetChange::Add(vec!["A#1".into()])));
    assert_eq!(out, Ok(SetOutcome::NodeMissing));
    assert!(store.items("records").is_empty());
    assert!(store.take_stream().is_empty());
}

#[test]
fn add_remove_marker_and_the_empty_set() {
    let store = store();
    store.put_item("records", node("GOAL-1")).expect("put");
    store.record_stream(true);
    // marker only
    assert_eq!(
        block(store.update_set(0, "GOAL-1", SetChange::Add(vec![]))),
        Ok(SetOutcome::Applied)
    );
    let sets = store.node_sets(0);
    assert_eq!(
        sets["GOAL-1"],
        NodeSet {
            members: BTreeSet::new(),
            complete: Some(true)
        }
    );
    assert_eq!(
        block(store.update_set(0, "GOAL-1", SetChange::Add(vec!["a".into(), "b".into()]))),
        Ok(SetOutcome::Applied)
    );
    assert_eq!(
        block(store.update_set(0, "GOAL-1", SetChange::Remove(vec!["a".into(), "b".into()]))),
        Ok(SetOutcome::Applied)
    );
    let item = store.get_item("records", &node("GOAL-1")).expect("key").expect("item");
    assert!(
        !item.contains_key("edges"),
        "an empty set removes the attribute: {item:?}"
    );
    assert_eq!(item.get("edgesComplete"), Some(&Value::Bool(true)));
    // three changes: marker, add, remove; a no-op emits nothing
    assert_eq!(
        block(store.update_set(0, "GOAL-1", SetChange::Remove(vec!["zz".into()]))),
        Ok(SetOutcome::Applied)
    );
    let stream = store.take_stream();
    assert_eq!(stream.len(), 3);
    assert!(stream
        .iter()
        .all(|e| e.origin == Origin::Pipeline && e.record.kind == EventKind::Modify));
    // duplicates are refused, as DynamoDB does
    let dup = block(store.update_set(0, "GOAL-1", SetChange::Add(vec!["a".into(), "a".into()])));
    assert!(dup.is_err_and(|e| e.class() == model::Class::Refused));
}

#[test]
fn past_max_members_the_node_is_flagged() {
    let mut config = config::parse(config::EXAMPLE_CONFIG, "x.toml").expect("valid");
    config.edge_sets[0].max_members = 2;
    let store = MemoryStore::new(Arc::new(config));
    store.put_item("records", node("N")).expect("put");
    let add = |m: &[&str]| block(store.update_set(0, "N", SetChange::Add(m.iter().map(|s| s.to_string()).collect())));
    assert_eq!(add(&["a", "b"]), Ok(SetOutcome::Applied));
    // re-adding present members is not growth
    assert_eq!(add(&["a", "b"]), Ok(SetOutcome::Applied));
    assert_eq!(add(&["c"]), Ok(SetOutcome::Flagged));
    let sets = store.node_sets(0);
    assert_eq!(sets["N"].members.len(), 2);
    assert_eq!(sets["N"].complete, Some(false));
    // the flag stays false
    assert_eq!(
        block(store.update_set(0, "N", SetChange::Remove(vec!["a".into()]))),
        Ok(SetOutcome::Applied)
    );
    assert_eq!(store.node_sets(0)["N"].complete, Some(false));
}

#[test]
fn rows_checks_and_queries() {
    let store = store();
    let key = |p: &str, s: &str| RowKey {
        partition: p.into(),
        sort: s.into(),
    };
    let put = |k: RowKey| RowWrite {
        index: 0,
        key: k,
        put: Some(Image::new().into()),
        version: model::Version::zero(),
    };
    assert_eq!(
        block(store.write_rows(&[put(key("a", "1")), put(key("b", "1"))])),
        Ok(vec![])
    );
    assert!(block(store.write_rows(&[put(key("a", "1")), put(key("a", "1"))]))
        .is_err_and(|e| e.class() == model::Class::Refused));
    assert!(
        block(store.write_rows(&[put(key("a", &"x".repeat(1025)))])).is_err_and(|e| e.class() == model::Class::Refused)
    );
    assert!(
        block(store.write_rows(&(0..26).map(|i| put(key("a", &i.to_string()))).collect::<Vec<_>>()))
            .is_err_and(|e| e.class() == model::Class::Refused)
    );
    assert!(block(store.write_rows(&[RowWrite {
        index: 9,
        key: key("a", "1"),
        put: None,
        version: model::Version::zero(),
    }]))
    .is_err_and(|e| e.class() == model::Class::Deployment));
    assert_eq!(store.rows(0).len(), 2);
    store.put_item("records", node("N")).expect("put");
    store
        .put_item("records", edge("N", "GOALMEMBERSHIP-U", "1"))
        .expect("put");
    store
        .put_item("records", edge("M", "GOALMEMBERSHIP-U", "1"))
        .expect("put");
    assert_eq!(block(store.query_partition("records", "N")).map(|v| v.len()), Ok(2));
    assert!(block(store.query_partition("nope", "N")).is_err_and(|e| e.class() == model::Class::Deployment));
}

#[test]
fn the_stream_reads_back_through_the_lambda_parser() {
    let store = store();
    store.record_stream(true);
    store.set_next_sequence_number(99);
    store.put_item("records", node("N")).expect("put");
    store
        .put_item("records", edge("N", "GOALMEMBERSHIP-U", "1"))
        .expect("put");
    store.delete_item("records", &node("N")).expect("delete");
    let entries = store.take_stream();
    let payload = lambda_event(entries.iter().map(|e| &e.record));
    let parsed = model::record::parse_batch(&payload).expect("a batch");
    let back: Vec<ChangeRecord> = parsed.into_iter().map(|r| r.record.expect("valid")).collect();
    let original: Vec<ChangeRecord> = entries.into_iter().map(|e| e.record).collect();
    assert_eq!(back, original);
    assert_eq!(back[1].sequence_number, "100");
}

/// An item made ready ahead lands as its put would: new, replaced, and
/// keeping the stored attributes the item lacks.
#[test]
fn a_ready_item_lands_as_its_put_would() {
    let (by_put, by_ready) = (store(), store());
    let table = by_ready.config().table("records").expect("declared");
    let set = &by_ready.config().edge_sets[0];
    let keep = [set.attribute.as_str(), set.complete_attribute.as_str()];
    let mut tagged = node("GOAL-1");
    tagged.insert("title".to_owned(), s("first"));
    for store in [&by_put, &by_ready] {
        store.put_item("records", node("GOAL-1")).expect("put");
        block(store.update_set(0, "GOAL-1", SetChange::Add(vec!["A#1".into()]))).expect("update");
    }
    for item in [edge("GOAL-1", "USER-1", "owner"), tagged] {
        by_put.put_item_keeping("records", &item, &keep).expect("put");
        let ready = ReadyItem::new(table, &item).expect("keyed");
        by_ready.put_ready_keeping("records", &item, ready, &keep).expect("put");
        assert_eq!(by_ready.items("records"), by_put.items("records"));
    }
    let kept = by_ready.node_sets(0);
    assert_eq!(kept["GOAL-1"].members, BTreeSet::from(["A#1".to_owned()]));
}

/// A ready item made with another config is made afresh from the item.
#[test]
fn a_ready_item_of_another_config_is_made_afresh() {
    let (target, other) = (store(), store());
    let table = other.config().table("records").expect("declared");
    let ready = ReadyItem::new(table, &node("GOAL-2")).expect("keyed");
    target
        .put_ready_keeping("records", &node("GOAL-1"), ready, &[])
        .expect("put");
    assert_eq!(target.items("records"), vec![node("GOAL-1")]);
}

proptest::proptest! {
    /// Reads by sort key answer as a scan filtered by sort key does, whether
    /// the table's index is made before, between or after the writes.
    #[test]
    fn reads_by_sort_key_answer_as_a_scan_does(
        steps in proptest::collection::vec((0u8..3, 0u8..4, 0u8..4), 0..60),
    ) {
        let m = store();
        let name = |n: u8| format!("N{n}");
        // What a scan of the table finds pointing at `target`.
        let scanned = |target: &str| -> Vec<Image> {
            m.items("records")
                .into_iter()
                .filter(|item| item.get("target") == Some(&s(target)))
                .collect()
        };
        for (what, a, b) in steps {
            match what {
                0 => {
                    m.put_item("records", edge(&name(a), &name(b), "r")).expect("put");
                }
                1 => {
                    m.delete_item("records", &edge(&name(a), &name(b), "r")).expect("delete");
                }
                _ => proptest::prop_assert_eq!(m.items_by_sort_key("records", &name(b)), scanned(&name(b))),
            }
        }
        for b in 0..4 {
            proptest::prop_assert_eq!(m.items_by_sort_key("records", &name(b)), scanned(&name(b)));
        }
    }
}

#[test]
fn remove_item_deletes_and_records_as_delete_item_does() {
    let twins = [store(), store()];
    for m in &twins {
        m.put_item("records", node("A")).expect("put");
        m.put_item("records", edge("A", "B", "r")).expect("put");
    }
    let [by_delete, by_remove] = &twins;
    for recording in [false, true] {
        for m in &twins {
            m.record_stream(recording);
        }
        let key = if recording { node("A") } else { edge("A", "B", "r") };
        let deleted = by_delete.delete_item("records", &key).expect("delete");
        assert!(deleted.is_some());
        assert!(by_remove.remove_item("records", &key).expect("remove"));
        assert!(!by_remove.remove_item("records", &key).expect("remove"), "gone");
        assert_eq!(by_delete.delete_item("records", &key).expect("delete"), None);
        assert_eq!(by_remove.items("records"), by_delete.items("records"));
        assert_eq!(
            by_remove.items_by_sort_key("records", "B"),
            by_delete.items_by_sort_key("records", "B")
        );
    }
    let (removed, deleted) = (by_remove.take_stream(), by_delete.take_stream());
    assert_eq!(removed.len(), 1, "one delete recorded");
    assert_eq!(removed, deleted);
}

#[test]
fn a_tombstone_expires_the_configured_time_after_the_store_s_clock() {
    let clock = Arc::new(aws_kit::clock::ManualClock::at(1_700_000_000_999));
    let store = store().with_clock(clock.clone());
    let ttl = store.config().pipeline.tombstone_ttl_seconds();
    let key = RowKey {
        partition: "a".into(),
        sort: "1".into(),
    };
    let write = |put: Option<Image>, version: &str| RowWrite {
        index: 0,
        key: key.clone(),
        put: put.map(Into::into),
        version: model::Version::of_sequence(version).expect("a version"),
    };
    assert_eq!(block(store.write_rows(&[write(Some(Image::new()), "1")])), Ok(vec![]));
    clock.advance(5_000);
    assert_eq!(block(store.write_rows(&[write(None, "2")])), Ok(vec![]));
    let read = block(store.read_rows(0, vec![key.clone()])).expect("read");
    let (_, tombstone) = read.found.first().expect("the tombstone");
    let expires = (1_700_000_000_999 + 5_000) / 1000 + ttl;
    assert_eq!(
        tombstone.get(model::version::TOMBSTONE_ATTRIBUTE),
        Some(&Value::N(expires.to_string()))
    );
}

#[test]
fn a_store_told_to_keep_no_tombstones_keeps_the_rows_it_holds() {
    let store = store();
    let key = RowKey {
        partition: "a".into(),
        sort: "1".into(),
    };
    let write = RowWrite {
        index: 0,
        key: key.clone(),
        put: Some(Image::from([("n".to_owned(), s("kept"))]).into()),
        version: model::Version::of_sequence("1").expect("a version"),
    };
    assert_eq!(block(store.write_rows(&[write])), Ok(vec![]));
    let store = store.without_tombstones();
    let read = block(store.read_rows(0, vec![key])).expect("read");
    let (_, row) = read.found.first().expect("the row written before");
    assert_eq!(row.get("n"), Some(&s("kept")));
}

/// A stamp that versions `members` one by one at `version`.
fn members_at<'a>(version: &str, members: &'a [String]) -> SetStamp<'a> {
    let version = Version::of_sequence(version).expect("a version");
    SetStamp {
        guard: MarkGuard::None,
        mark: Some(version.clone()),
        members: MemberStamp::Newer { version, members },
    }
}

fn stamped(store: &MemoryStore, node: &str, change: SetChange, version: &str) -> Result<SetOutcome, StoreError> {
    let stamp = members_at(version, change.members());
    block(store.update_set_stamped(0, node, &change, stamp))
}

#[test]
fn member_versions_are_kept_aside_and_read_as_attributes() {
    let store = store();
    let member = |m: &str| model::version::member_version_attribute(m);
    let at = |v: &str| Value::S(Version::of_sequence(v).expect("a version").as_str().to_owned());
    store.put_item("records", node("GOAL-1")).expect("put");
    store.record_stream(true);
    assert_eq!(
        stamped(&store, "GOAL-1", SetChange::Add(vec!["a".into()]), "5"),
        Ok(SetOutcome::Applied)
    );
    let item = store.get_item("records", &node("GOAL-1")).expect("key").expect("item");
    assert_eq!(item.get(&member("a")), Some(&at("5")), "{item:?}");
    // The update's images leave the member's version out.
    let stream = store.take_stream();
    let new = stream[0].record.new.as_ref().expect("a new image");
    assert!(new.contains_key("edges") && !new.contains_key(&member("a")), "{new:?}");
    // An older change of the member loses to the version kept aside.
    assert_eq!(
        stamped(&store, "GOAL-1", SetChange::Remove(vec!["a".into()]), "4"),
        Ok(SetOutcome::Stale)
    );
    // A change that writes a version and nothing else (the node's mark
    // is its version already) shows it.
    assert_eq!(
        stamped(&store, "GOAL-1", SetChange::Remove(vec!["zz".into()]), "5"),
        Ok(SetOutcome::Applied)
    );
    let stream = store.take_stream();
    let (old, new) = (&stream[0].record.old, &stream[0].record.new);
    assert_eq!(old.as_ref().and_then(|o| o.get(&member("zz"))), None);
    assert_eq!(new.as_ref().and_then(|n| n.get(&member("zz"))), Some(&at("5")));
    assert_eq!(new.as_ref().and_then(|n| n.get(&member("a"))), Some(&at("5")));
    // A user's put replaces the versions with the item, as before.
    store.put_item("records", node("GOAL-1")).expect("put");
    let item = store.get_item("records", &node("GOAL-1")).expect("key").expect("item");
    assert!(!item.contains_key(&member("a")), "{item:?}");
}

#[test]
fn member_versions_an_item_shows_are_read_and_written_where_they_are() {
    let store = store();
    let member = model::version::member_version_attribute("b");
    let at = |v: &str| Value::S(Version::of_sequence(v).expect("a version").as_str().to_owned());
    let mut shown = node("GOAL-2");
    shown.insert(member.as_str(), at("3"));
    store.put_item("records", shown).expect("put");
    assert_eq!(
        stamped(&store, "GOAL-2", SetChange::Add(vec!["b".into()]), "2"),
        Ok(SetOutcome::Stale)
    );
    assert_eq!(
        stamped(&store, "GOAL-2", SetChange::Add(vec!["b".into()]), "7"),
        Ok(SetOutcome::Applied)
    );
    let item = store.get_item("records", &node("GOAL-2")).expect("key").expect("item");
    assert_eq!(item.get(&member), Some(&at("7")), "{item:?}");
    assert_eq!(item.keys().filter(|k| *k == member).count(), 1);
}
