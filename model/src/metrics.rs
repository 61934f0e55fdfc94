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

use serde_json::{json, Map, Value as Json};

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
