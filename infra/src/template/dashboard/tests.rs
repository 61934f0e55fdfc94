use std::time::Duration;

use super::*;
use model::config::{parse, EXAMPLE_CONFIG};

fn body() -> (Config, Json) {
    body_of(parse(EXAMPLE_CONFIG, "streamdex.example.toml").unwrap())
}

/// The dashboard of the example with every table read from Kinesis.
fn kinesis_body() -> (Config, Json) {
    body_of(parse(&crate::cli::config::kinesis_example(), "kinesis example").unwrap())
}

fn body_of(config: Config) -> (Config, Json) {
    let stack = Stack::new(&config);
    let resource = resource(&config, &stack);
    let text = resource["Properties"]["DashboardBody"]["Fn::Sub"]
        .as_str()
        .unwrap()
        .to_owned();
    // Every `$` is one of the substitutions: any other would be read as one too.
    let substituted = text.matches("${AWS::Region}").count() + text.matches("${QuarantineBucket}").count();
    assert_eq!(text.matches('$').count(), substituted);
    (config, serde_json::from_str(&text).unwrap())
}

/// Every metric line of every widget.
fn lines(body: &Json) -> Vec<Vec<Json>> {
    body["widgets"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| w["properties"]["metrics"].as_array().unwrap().iter())
        .map(|m| m.as_array().unwrap().clone())
        .collect()
}

#[test]
fn every_streamdex_metric_shown_is_one_a_function_logs() {
    for (_, body) in [body(), kinesis_body()] {
        metrics_shown_are_logged(&body);
    }
}

/// Repeats and ledger notes are drawn where a table is read from Kinesis,
/// and only there, each once.
#[test]
fn the_routers_repeats_and_ledger_notes_are_shown_for_a_kinesis_source() {
    let drawn = |body: &Json, metric: &str| {
        lines(body)
            .iter()
            .filter(|l| l[0] == NAMESPACE && l[1] == metric)
            .count()
    };
    for metric in [ROUTER_REPEATS, ROUTER_LEDGER_NOTES] {
        assert_eq!(drawn(&body().1, metric), 0, "{metric}");
        assert_eq!(drawn(&kinesis_body().1, metric), 1, "{metric}");
    }
}

fn metrics_shown_are_logged(body: &Json) {
    let indexer = stream_indexer::metrics::batch_line("f", &stream_indexer::BatchStats::default(), Duration::ZERO, 0);
    let router =
        event_router::metrics::batch_line("f", &event_router::batch::RouterStats::default(), Duration::ZERO, 0);
    let reaper = event_router::metrics::reaped_line("f", &event_router::Reaped::default(), Duration::ZERO, 0);
    let logged = |line: &str, metric: &str| {
        let line: Json = serde_json::from_str(line).unwrap();
        line.get(metric).is_some()
    };
    let mut shown = 0;
    for line in lines(body).iter().filter(|l| l[0] == NAMESPACE) {
        assert_eq!(line[2], FUNCTION_DIMENSION);
        let (metric, function) = (line[1].as_str().unwrap(), line[3].as_str().unwrap());
        let source = match function {
            f if f.ends_with("stream-indexer") => &indexer,
            f if f.ends_with("event-router") => &router,
            f if f.ends_with("reaper") => &reaper,
            other => panic!("a metric of an unknown function {other}"),
        };
        assert!(logged(source, metric), "{function} logs no {metric}");
        shown += 1;
    }
    assert!(shown >= INDEXER_METRICS.len() + REAPER_METRICS.len());
}

#[test]
fn iterator_age_is_drawn_against_both_alarm_thresholds() {
    let (config, body) = body();
    let widget = &body["widgets"][0]["properties"];
    let functions: Vec<&str> = widget["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m[3].as_str().unwrap())
        .collect();
    assert_eq!(functions.len(), 2, "{functions:?}");
    assert!(widget["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m[1] == "IteratorAge"));
    let lines: Vec<u64> = widget["annotations"]["horizontal"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["value"].as_u64().unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            config.alarms.iterator_age_warn_seconds * 1000,
            config.alarms.iterator_age_page_seconds * 1000
        ]
    );
}

#[test]
fn every_function_has_errors_and_duration_and_no_widget_overlaps() {
    let (_, body) = body();
    let config = parse(EXAMPLE_CONFIG, "streamdex.example.toml").unwrap();
    let stack = Stack::new(&config);
    for function in &stack.functions {
        for metric in ["Errors", "Duration"] {
            assert!(
                lines(&body)
                    .iter()
                    .any(|l| l[0] == "AWS/Lambda" && l[1] == metric && l[3] == function.name.as_str()),
                "{} has no {metric}",
                function.name
            );
        }
    }
    let mut cells = std::collections::HashSet::new();
    for w in body["widgets"].as_array().unwrap() {
        assert!(
            cells.insert((w["x"].as_u64().unwrap(), w["y"].as_u64().unwrap())),
            "two widgets at one place"
        );
        assert!(w["x"].as_u64().unwrap() + w["width"].as_u64().unwrap() <= 24);
    }
}
