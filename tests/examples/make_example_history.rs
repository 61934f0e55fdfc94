//! Writes `tests/fixtures/example-history.jsonl`: a scripted history over the
//! example config, as DynamoDB Streams records (JSON Lines), made by doing the
//! writes on the in-memory store with stream recording on. The last record is
//! a TTL expiry (moto never produces one), marked as the TTL service does.
//!
//! `cargo run -p streamdex-tests --example make_example_history > tests/fixtures/example-history.jsonl`

use std::sync::Arc;

use model::{config, Image, Value};
use stream_indexer::store::memory::lambda_record;
use stream_indexer::MemoryStore;

fn s(v: &str) -> Value {
    Value::S(v.to_owned())
}

fn item(pairs: &[(&str, Value)]) -> Image {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
}

fn node(id: &str, name: &str) -> Image {
    item(&[("source", s(id)), ("target", s(id)), ("name", s(name))])
}

fn edge(node: &str, target: &str, role: &str) -> Image {
    item(&[
        ("source", s(node)),
        ("target", s(target)),
        ("memberRole", s(&role[4..])),
        ("gsi0", s(role)),
    ])
}

fn issue(id: &str, num: &str, state: &str, fields: &[(&str, Value)]) -> Image {
    let map = fields.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect();
    item(&[
        ("id", s(id)),
        ("rel", s(id)),
        ("name", s(&format!("{id}: girder needs replacing"))),
        ("num", Value::N(num.to_owned())),
        ("state", s(state)),
        ("custom_fields", Value::M(map)),
    ])
}

fn main() -> anyhow::Result<()> {
    let config = Arc::new(config::parse(config::EXAMPLE_CONFIG, "example")?);
    let store = MemoryStore::new(config);
    store.set_next_sequence_number(4_421_584_500_000_000_017_450_439_091);
    store.record_stream(true);
    let goal = "GOAL-cb421e73";
    let team = "TEAM-0807";
    let alice = "GOALMEMBERSHIP-USER-alice";
    let bob = "GOALMEMBERSHIP-USER-bob";
    store.put_item("records", node(goal, "Ship v2"))?;
    store.put_item("records", node(team, "Launch squad"))?;
    store.put_item("records", edge(goal, alice, "400-CONTRIBUTOR"))?;
    store.put_item("records", edge(goal, bob, "300-MEMBER"))?;
    store.put_item("records", edge(team, "TEAMMEMBERSHIP-USER-alice", "310-MANAGER"))?;
    store.put_item("records", edge(goal, "COMMENT-2024-01-01", "000-NONE"))?; // a type no edge set includes
    store.put_item("records", edge(goal, alice, "500-LEAD"))?; // role change
    store.delete_item("records", &item(&[("source", s(goal)), ("target", s(bob))]))?;
    store.put_item(
        "records",
        edge("GOAL-missing", "GOALMEMBERSHIP-USER-carol", "300-MEMBER"),
    )?; // no node
    store.put_item("records", node(goal, "Ship v2, renamed"))?; // a PutItem overwrite of the node
    store.put_item(
        "issues",
        issue(
            "issue-af34",
            "3",
            "open",
            &[("3fe6", Value::N("42".into())), ("47e5", s("Approved"))],
        ),
    )?;
    store.put_item(
        "issues",
        issue(
            "issue-b001",
            "12",
            "open",
            &[("3fe6", Value::N("-4.2".into())), ("882a", s("2023-06-01"))],
        ),
    )?;
    store.put_item(
        "issues",
        issue(
            "issue-af34",
            "3",
            "in-progress",
            &[("3fe6", Value::N("-4.20".into())), ("882a", s("2023-06-02"))],
        ),
    )?;
    store.put_item(
        "issues",
        issue("bug-17", "4", "open", &[("3fe6", Value::N("1".into()))]),
    )?; // not an issue- item
    store.delete_item("issues", &item(&[("id", s("issue-b001")), ("rel", s("issue-b001"))]))?;
    let layer = item(&[
        ("pk", s("lyr#eu-west-1.requests")),
        ("sk", s("lyrVrsn#v12")),
        ("arn", s("arn:aws:lambda:eu-west-1:123456789012:layer:requests:12")),
        ("ttl", Value::N("1763722740".into())),
    ]);
    store.put_item("layers", layer.clone())?;
    store.delete_item("layers", &layer)?;

    let records: Vec<_> = store.take_stream().into_iter().map(|e| e.record).collect();
    let last = records.len().saturating_sub(1);
    for (i, record) in records.iter().enumerate() {
        let mut json = lambda_record(record);
        json["dynamodb"]["ApproximateCreationDateTime"] = serde_json::json!(1_763_719_200 + 60 * i);
        if i == last {
            json["userIdentity"] = serde_json::json!({"type": "Service", "principalId": "dynamodb.amazonaws.com"});
        }
        println!("{json}");
    }
    Ok(())
}
