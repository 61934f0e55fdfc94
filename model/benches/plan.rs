//! Planning throughput on records shaped like the example config's:
//! an edge role change, and an issue MODIFY with ten custom fields (one of
//! which changes value). Run: `cargo bench -p model --bench plan`.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use model::config::{self, EXAMPLE_CONFIG};
use model::record::{ChangeRecord, EventKind};
use model::{Image, Plan, Planner, Value};

fn s(v: &str) -> Value {
    Value::S(v.to_owned())
}

fn record(table: &str, keys: &[&str], old: Image, new: Image) -> ChangeRecord {
    let keys = keys.iter().map(|k| ((*k).to_owned(), new[*k].clone())).collect();
    ChangeRecord {
        event_id: None,
        kind: EventKind::Modify,
        table: Some(table.into()),
        source_arn: None,
        keys,
        old: Some(old),
        new: Some(new),
        sequence_number: "4421584600000000017450439388".to_owned(),
        created: None,
        size_bytes: Some(402),
        view_type: None,
        ttl_expiry: false,
    }
}

fn edge_role_change() -> ChangeRecord {
    let edge = |role: &str, date: &str| -> Image {
        [
            ("source", s("GOAL-cb421e73-43bb-4c68-bea3-be8f1f6140e8")),
            ("target", s("GOALMEMBERSHIP-USER-5f0c2b7e-9a51-4d4f-8d0e-1b2c3d4e5f60")),
            ("memberRole", s(role.split('-').nth(1).unwrap_or(role))),
            ("date", s(date)),
            ("gsi0", s(role)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    };
    record(
        "records",
        &["source", "target"],
        edge("400-CONTRIBUTOR", "2020-07-01"),
        edge("500-LEAD", "2020-07-02"),
    )
}

fn issue_modify() -> ChangeRecord {
    let issue = |changed: &str| -> Image {
        let fields = (0..10)
            .map(|i| {
                let value = match i % 3 {
                    0 => Value::N(format!("{}.25", i * 17)),
                    1 => s(&format!("value {i}")),
                    _ => s("2023-06-01"),
                };
                (
                    format!("f{i:03x}"),
                    if i == 4 { Value::N(changed.to_owned()) } else { value },
                )
            })
            .collect();
        [
            ("id", s("issue-af34")),
            ("rel", s("project-35e9")),
            ("name", s("Girder needs replacing")),
            ("num", Value::N("3".to_owned())),
            ("state", s("open")),
            ("custom_fields", Value::M(fields)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    };
    record("issues", &["id", "rel"], issue("42"), issue("-4.20"))
}

fn bench(c: &mut Criterion) {
    let config = config::parse(EXAMPLE_CONFIG, "streamdex.example.toml").expect("example config");
    let planner = Planner::new(&config);
    let mut group = c.benchmark_group("plan");
    group.throughput(Throughput::Elements(1));
    for (name, record) in [
        ("edge_role_change", edge_role_change()),
        ("issue_modify_10_fields", issue_modify()),
    ] {
        let mut plan = Plan::default();
        planner.plan_into(&record, &mut plan);
        assert!(
            !plan.mutations.is_empty() && plan.problems.is_empty(),
            "{name}: {plan:?}"
        );
        group.bench_function(name, |b| b.iter(|| planner.plan_into(black_box(&record), &mut plan)));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
