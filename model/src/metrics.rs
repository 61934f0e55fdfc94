//! CloudWatch Embedded Metric Format (EMF): one JSON log line that CloudWatch
//! turns into metrics, so the Lambdas publish figures without an API call.
//!
//! ```
//! use model::metrics::{Emf, Unit};
//! let line = Emf::new("streamdex", "stream-indexer", 1_700_000_000_000)
//!     .metric("Records", Unit::Count, 100)
//!     .metric("IteratorAge", Unit::Milliseconds, 1_250)
//!     .to_line();
//! assert!(line.starts_with('{') && line.contains("\"IteratorAge\":1250"));
//! ```

use std::time::Duration;

use serde_json::{json, Map, Value as Json};

use crate::record::CreationTime;

/// The CloudWatch namespace of every streamdex metric.
pub const NAMESPACE: &str = "streamdex";

/// Iterator age: from the oldest record's approximate creation to `now_ms`
/// (epoch milliseconds); zero for a clock behind the record.
pub fn iterator_age_ms(oldest: CreationTime, now_ms: u64) -> u64 {
    let created_ms = u64::try_from(oldest.seconds)
        .unwrap_or(0)
        .saturating_mul(1000)
        .saturating_add(u64::from(oldest.nanos / 1_000_000));
    now_ms.saturating_sub(created_ms)
}

/// Ends a consumer's batch line: its duration and, when the batch had a
/// creation time, the iterator age (the same for both consumers).
pub fn finish(emf: Emf, duration: Duration, oldest: Option<CreationTime>, now_ms: u64) -> String {
    let mut emf = emf.metric(
        "BatchDuration",
        Unit::Milliseconds,
        u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
    );
    if let Some(oldest) = oldest {
        emf = emf.metric("IteratorAge", Unit::Milliseconds, iterator_age_ms(oldest, now_ms));
    }
    emf.to_line()
}

/// The earlier of two batches' oldest creation times.
pub fn oldest(a: Option<CreationTime>, b: Option<CreationTime>) -> Option<CreationTime> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The dimension every streamdex metric carries.
pub const FUNCTION_DIMENSION: &str = "Function";

/// A metric's unit, as CloudWatch names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
    Milliseconds,
    Bytes,
}

impl Unit {
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            Unit::Milliseconds => "Milliseconds",
            Unit::Bytes => "Bytes",
        }
    }
}

/// One EMF line under construction.
#[derive(Debug, Clone)]
pub struct Emf {
    namespace: String,
    function: String,
    timestamp_ms: u64,
    metrics: Vec<(String, Unit, u64)>,
}

impl Emf {
    /// A line for `function`'s metrics in `namespace`, at `timestamp_ms` (epoch milliseconds).
    pub fn new(namespace: &str, function: &str, timestamp_ms: u64) -> Emf {
        Emf {
            namespace: namespace.to_owned(),
            function: function.to_owned(),
            timestamp_ms,
            metrics: Vec::new(),
        }
    }

    /// Adds a metric. A name given twice keeps the last value.
    pub fn metric(mut self, name: &str, unit: Unit, value: u64) -> Emf {
        self.metrics.retain(|(n, _, _)| n != name);
        self.metrics.push((name.to_owned(), unit, value));
        self
    }

    /// The JSON line (no trailing newline).
    pub fn to_line(&self) -> String {
        let definitions: Vec<Json> = self
            .metrics
            .iter()
            .map(|(name, unit, _)| json!({"Name": name, "Unit": unit.as_str()}))
            .collect();
        let mut root = Map::new();
        root.insert(
            "_aws".to_owned(),
            json!({
                "Timestamp": self.timestamp_ms,
                "CloudWatchMetrics": [{
                    "Namespace": self.namespace,
                    "Dimensions": [[FUNCTION_DIMENSION]],
                    "Metrics": definitions,
                }],
            }),
        );
        root.insert(FUNCTION_DIMENSION.to_owned(), Json::String(self.function.clone()));
        for (name, _, value) in &self.metrics {
            root.insert(name.clone(), Json::from(*value));
        }
        Json::Object(root).to_string()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn iterator_age_counts_from_the_oldest_record() {
        let oldest = CreationTime {
            seconds: 1_763_719_200,
            nanos: 500_000_000,
        };
        assert_eq!(iterator_age_ms(oldest, 1_763_719_200_500 + 2_000), 2_000);
        assert_eq!(
            iterator_age_ms(oldest, 0),
            0,
            "a clock behind the record gives zero, not a wrap"
        );
        let later = CreationTime {
            seconds: 1_763_719_300,
            nanos: 0,
        };
        assert_eq!(super::oldest(Some(later), Some(oldest)), Some(oldest));
        assert_eq!(super::oldest(None, Some(later)), Some(later));
    }

    use super::*;

    #[test]
    fn a_line_declares_every_metric_and_carries_its_value() {
        let line = Emf::new("streamdex", "stream-indexer", 42)
            .metric("Records", Unit::Count, 3)
            .metric("Records", Unit::Count, 4)
            .metric("BatchDuration", Unit::Milliseconds, 12)
            .to_line();
        let parsed: Json = serde_json::from_str(&line).expect("valid JSON");
        assert_eq!(parsed["Function"], "stream-indexer");
        assert_eq!(parsed["Records"], 4);
        assert_eq!(parsed["BatchDuration"], 12);
        let cw = &parsed["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(cw["Namespace"], "streamdex");
        assert_eq!(cw["Dimensions"], json!([["Function"]]));
        let names: Vec<&str> = cw["Metrics"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["Name"].as_str())
            .collect();
        assert_eq!(names, ["Records", "BatchDuration"]);
        assert_eq!(parsed["_aws"]["Timestamp"], 42);
    }
}
