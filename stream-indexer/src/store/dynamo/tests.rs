use super::*;
use model::Value;

/// A client for a closed loopback port, so nothing leaves the machine.
fn offline_client(credentials: bool) -> Client {
    let mut config = aws_sdk_dynamodb::Config::builder()
        .behavior_version_latest()
        .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
        .endpoint_url("http://127.0.0.1:1")
        .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled());
    if credentials {
        config = config.credentials_provider(aws_sdk_dynamodb::config::Credentials::new("a", "b", None, None, "test"));
    }
    Client::from_conf(config.build())
}

fn example_store(credentials: bool) -> DynamoStore {
    let config = model::config::parse(model::config::EXAMPLE_CONFIG, "streamdex.example.toml").unwrap();
    DynamoStore::new(offline_client(credentials), Arc::new(config))
}

#[tokio::test]
async fn real_sdk_failures_are_classified() {
    // No credentials at all: the SDK fails before sending anything.
    let e = example_store(false)
        .query_partition("records", "GOAL-1")
        .await
        .unwrap_err();
    assert!(
        e.class() == model::Class::Deployment && e.message().contains("Query on table `records`"),
        "{e:?}"
    );
    // Nobody listening: the request is not delivered, which is worth retrying.
    let e = example_store(true)
        .update_set(0, "GOAL-1", SetChange::Add(vec!["m".into()]))
        .await
        .unwrap_err();
    assert!(
        e.class() == model::Class::Transient && e.message().contains("UpdateItem on table `records`"),
        "{e:?}"
    );
    // Requests that never need the network.
    let store = example_store(true);
    assert_eq!(store.write_rows(&[]).await, Ok(Vec::new()));
    let unknown = RowWrite {
        index: 7,
        key: RowKey {
            partition: "p".into(),
            sort: "s".into(),
        },
        put: None,
        version: model::Version::zero(),
    };
    assert!(store
        .write_rows(&[unknown])
        .await
        .is_err_and(|e| e.class() == model::Class::Refused));
    assert!(store
        .query_partition("nope", "x")
        .await
        .is_err_and(|e| e.class() == model::Class::Deployment));
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|m| (*m).to_owned()).collect()
}

#[test]
fn an_add_counts_the_union_against_max_members() {
    let full = strings(&["a", "b", "c"]);
    // A replay onto a full set: nothing to add, never flagged.
    assert_eq!(plan_add(&full, &strings(&["a", "b", "c"]), 3), AddPlan::Present);
    assert_eq!(plan_add(&full, &strings(&["c"]), 3), AddPlan::Present);
    // One new member past a full set.
    assert_eq!(plan_add(&full, &strings(&["a", "d"]), 3), AddPlan::Overflow);
    // max - 1 members: 1 new + k existing fits, 2 new do not.
    let almost = strings(&["a", "b"]);
    assert_eq!(
        plan_add(&almost, &strings(&["b", "z", "a"]), 3),
        AddPlan::Missing(strings(&["z"]))
    );
    assert_eq!(plan_add(&almost, &strings(&["d", "e"]), 3), AddPlan::Overflow);
    assert_eq!(plan_add(&almost, &strings(&["d", "e", "a"]), 3), AddPlan::Overflow);
    // An empty (absent) set; duplicates in the request count once.
    assert_eq!(
        plan_add(&[], &strings(&["y", "x", "y"]), 2),
        AddPlan::Missing(strings(&["x", "y"]))
    );
    assert_eq!(plan_add(&[], &strings(&["x", "y", "z"]), 2), AddPlan::Overflow);
    // A set already past a lowered limit stays flagged, as in `MemoryStore`.
    assert_eq!(plan_add(&full, &strings(&["a"]), 2), AddPlan::Overflow);
}

#[tokio::test]
async fn the_union_rule_agrees_with_the_memory_store() {
    use crate::store::memory::MemoryStore;
    // Every subset of a small universe as the set, and as the ADD.
    let universe = ["a", "b", "c", "d"];
    let subset = |bits: u32| -> Vec<String> {
        universe
            .iter()
            .enumerate()
            .filter(|(i, _)| bits & (1 << i) != 0)
            .map(|(_, m)| (*m).to_owned())
            .collect()
    };
    let example = model::config::parse(model::config::EXAMPLE_CONFIG, "streamdex.example.toml").unwrap();
    for max in 1..=4 {
        let mut config = example.clone();
        config.edge_sets[0].max_members = max;
        let config = Arc::new(config);
        let set = &config.edge_sets[0];
        let table = config.table(&set.table).unwrap();
        for current in 0..16u32 {
            for added in 1..16u32 {
                let (current, added) = (subset(current), subset(added));
                let store = MemoryStore::new(config.clone());
                let mut node = Image::new();
                node.insert(table.partition_key.clone(), Value::S("N".to_owned()));
                node.insert(table.sort_key.clone().unwrap(), Value::S("N".to_owned()));
                if !current.is_empty() {
                    node.insert(set.attribute.clone(), Value::Ss(current.clone()));
                }
                store.put_item(&set.table, node).unwrap();
                let outcome = store.update_set(0, "N", SetChange::Add(added.clone())).await.unwrap();
                let after: BTreeSet<String> = match store.node_sets(0).get("N") {
                    Some(node) => node.members.iter().cloned().collect(),
                    None => BTreeSet::new(),
                };
                let case = format!("{current:?} + {added:?}, max {max}");
                match plan_add(&current, &added, max) {
                    AddPlan::Overflow => assert_eq!(outcome, SetOutcome::Flagged, "{case}"),
                    AddPlan::Present => {
                        assert_eq!(outcome, SetOutcome::Applied, "{case}");
                        assert_eq!(after, current.iter().cloned().collect(), "{case}");
                    }
                    AddPlan::Missing(missing) => {
                        assert_eq!(outcome, SetOutcome::Applied, "{case}");
                        assert!(missing.iter().all(|m| !current.contains(m)), "{case}");
                        assert_eq!(after, current.iter().chain(&missing).cloned().collect(), "{case}");
                    }
                }
            }
        }
    }
}

#[test]
fn set_members_are_read_from_the_old_item() {
    let config = model::config::parse(model::config::EXAMPLE_CONFIG, "streamdex.example.toml").unwrap();
    let set = &config.edge_sets[0];
    let mut item = HashMap::from([("x".to_owned(), AttributeValue::S("y".to_owned()))]);
    assert_eq!(set_members(&item, set), Ok(&[][..]));
    item.insert(set.attribute.clone(), AttributeValue::Ss(strings(&["a"])));
    assert_eq!(set_members(&item, set), Ok(&strings(&["a"])[..]));
    item.insert(set.attribute.clone(), AttributeValue::S("a".to_owned()));
    assert!(set_members(&item, set).is_err_and(|e| e.class() == model::Class::Refused));
}
