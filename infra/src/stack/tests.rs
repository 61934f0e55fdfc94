use super::*;
use model::config::{parse, EXAMPLE_CONFIG};
use proptest::prelude::*;

fn example() -> Config {
    parse(EXAMPLE_CONFIG, "streamdex.example.toml").unwrap()
}

#[test]
fn the_example_stack() {
    let config = example();
    let stack = Stack::new(&config);
    assert_eq!(stack.namespace, "streamdex");
    let names: Vec<&str> = stack.queues.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "streamdex-quarantine",
            "streamdex-reaper-dead-letters",
            "streamdex-rule-records-goal-inserted",
            "streamdex-rule-records-node-expired",
            "streamdex-rule-layers-layer-expired",
        ]
    );
    assert_eq!(
        rule_queue_name(&config, &config.routes[1]),
        "streamdex-rule-records-node-expired"
    );
    let records = &stack.source_tables[0];
    let gsi = records.target_index.as_ref().unwrap();
    assert_eq!(
        (gsi.name.as_str(), gsi.partition_key.as_str(), gsi.sort_key.as_str()),
        ("byTarget", "target", "source")
    );
    assert_eq!(gsi.projected, ["gsi0"], "member parts that are not keys");
    assert_eq!(records.consumers, [Consumer::Indexer, Consumer::Router]);
    assert!(stack.source_tables[1].target_index.is_none());
    let roles: Vec<FunctionRole> = stack.functions.iter().map(|f| f.role).collect();
    assert_eq!(
        roles,
        [FunctionRole::Indexer, FunctionRole::Router, FunctionRole::Reaper]
    );
    assert_eq!(stack.mappings.len(), 4);
    assert!(stack.rules.iter().filter(|r| r.reaper).count() == 1 && stack.rules[1].reaper);
    assert!(stack.queues.iter().filter(|q| !q.on_aws()).count() == 3);
}

#[test]
fn no_reap_route_no_reaper() {
    let mut config = example();
    config.routes.retain(|r| !r.reap);
    let stack = Stack::new(&config);
    assert!(stack.function(FunctionRole::Reaper).is_none());
    assert!(stack.queue(&QueuePurpose::ReaperDeadLetter).is_none());
}

#[test]
fn the_default_bus_is_never_created() {
    let mut config = example();
    config.events.bus = DEFAULT_BUS.to_owned();
    assert!(Stack::new(&config).bus.is_default());
    config.events.bus = "team/bus.one".to_owned();
    let stack = Stack::new(&config);
    assert!(!stack.bus.is_default());
    assert_eq!(stack.namespace, "team-bus-one");
}

proptest! {
    #[test]
    fn names_are_valid_bounded_and_distinct(bus in "[a-zA-Z0-9._/-]{1,256}", table in "[a-zA-Z0-9._-]{3,200}", detail in "[ -~]{1,80}") {
        let mut config = example();
        config.events.bus = bus;
        config.routes[0].table = table.clone();
        config.routes[0].detail_type = detail;
        let valid = |n: &str, limit: usize| n.len() <= limit && !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        let mut queues: Vec<String> = config.routes.iter().map(|r| rule_queue_name(&config, r)).collect();
        queues.push(quarantine_queue_name(&config));
        queues.push(reaper_dead_letter_queue_name(&config));
        for q in &queues {
            prop_assert!(valid(q, QUEUE_NAME_CHARS), "{q}");
        }
        let mut distinct = queues.clone();
        distinct.sort();
        distinct.dedup();
        prop_assert_eq!(distinct.len(), queues.len());
        for role in [FunctionRole::Indexer, FunctionRole::Router, FunctionRole::Reaper] {
            let name = function_name(&config, role);
            prop_assert!(valid(&name, FUNCTION_NAME_CHARS), "{name}");
        }
    }
}
