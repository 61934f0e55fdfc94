//! The deployed functions, read back from Lambda
//! (`GetFunctionConfiguration`), and their event source mappings, as
//! `streamdex deploy --defer-mappings` wrote them down: what the stack made
//! of the template, so the hosted functions run with its environment and
//! are fed as its mappings say.

use std::collections::BTreeMap;
use std::time::Duration;

use std::path::{Path, PathBuf};

use model::filter::{Pattern, PatternError};
use serde_json::Value as Json;

use super::Deployed;
use crate::deploy::mappings::DeferredMapping;
use crate::runner::mapping::Settings;

/// A deployed event source mapping of a table's stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeployedMapping {
    /// Its name (the template's logical id): Lambda names a mapping's
    /// failed batches by its UUID, the rehearsal by this.
    pub id: String,
    /// The table whose stream it reads, or its data stream (see
    /// [`DeferredMapping::table`]).
    pub table: String,
    pub function: String,
    pub settings: Settings,
    pub filters: Vec<Pattern>,
    /// The on-failure destination's bucket.
    pub on_failure_bucket: Option<String>,
}

/// Why the deployment could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DeploymentError {
    #[error("{operation} of function {function} failed: {message} (is the stack deployed? `streamdex deploy`)")]
    Aws {
        operation: &'static str,
        function: String,
        message: String,
    },
    #[error("cannot read the mappings {path}: {reason} (write it with `streamdex deploy --defer-mappings`)")]
    Mappings { path: PathBuf, reason: String },
    #[error("mapping {id}: {source}")]
    Filter {
        id: String,
        #[source]
        source: PatternError,
    },
}

/// A mapping's settings as the runner takes them, from its properties
/// (the template's names; Lambda's defaults where one is missing).
pub fn settings(p: &serde_json::Map<String, Json>) -> Settings {
    let int = |name: &str| p.get(name).and_then(Json::as_i64);
    let non_negative = |n: Option<i64>| u64::try_from(n.unwrap_or(0)).unwrap_or(0);
    Settings {
        batch_size: usize::try_from(int("BatchSize").unwrap_or(100)).unwrap_or(1).max(1),
        window_ms: non_negative(int("MaximumBatchingWindowInSeconds")).saturating_mul(1000),
        // -1 (or none): retry until the record expires.
        max_retry_attempts: int("MaximumRetryAttempts").and_then(|n| u32::try_from(n).ok()),
        max_record_age_ms: int("MaximumRecordAgeInSeconds")
            .and_then(|n| u64::try_from(n).ok())
            .map(|s| s.saturating_mul(1000)),
        bisect_on_error: p
            .get("BisectBatchOnFunctionError")
            .and_then(Json::as_bool)
            .unwrap_or(false),
    }
}

/// The mappings `streamdex deploy --defer-mappings FILE` wrote down.
pub fn read_mappings(path: &Path) -> Result<Vec<DeployedMapping>, DeploymentError> {
    let unreadable = |reason: String| DeploymentError::Mappings {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| unreadable(e.to_string()))?;
    let deferred: Vec<DeferredMapping> = serde_json::from_str(&text).map_err(|e| unreadable(e.to_string()))?;
    deferred
        .into_iter()
        .map(|m| {
            let filters = m.properties["FilterCriteria"]["Filters"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f["Pattern"].as_str())
                .map(Pattern::from_text)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|source| DeploymentError::Filter {
                    id: m.id.clone(),
                    source,
                })?;
            Ok(DeployedMapping {
                settings: settings(&m.properties),
                table: m.table,
                function: m.function_name,
                filters,
                on_failure_bucket: m.on_failure_bucket,
                id: m.id,
            })
        })
        .collect()
}

/// The deployed function `name`.
pub async fn function(lambda: &aws_sdk_lambda::Client, name: &str) -> Result<Deployed, DeploymentError> {
    let c = lambda
        .get_function_configuration()
        .function_name(name)
        .send()
        .await
        .map_err(|e| DeploymentError::Aws {
            operation: "GetFunctionConfiguration",
            function: name.to_owned(),
            message: aws_kit::error::sdk_message(&e),
        })?;
    let environment: BTreeMap<String, String> = c
        .environment
        .and_then(|e| e.variables)
        .unwrap_or_default()
        .into_iter()
        .collect();
    Ok(Deployed {
        name: c.function_name.unwrap_or_else(|| name.to_owned()),
        arn: c.function_arn.unwrap_or_default(),
        environment,
        memory_mb: c.memory_size.unwrap_or(128),
        timeout: Duration::from_secs(u64::try_from(c.timeout.unwrap_or(3)).unwrap_or(3)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_follow_the_mapping_and_minus_one_retries_forever() {
        let p = serde_json::json!({
            "BatchSize": 1000,
            "MaximumBatchingWindowInSeconds": 2,
            "MaximumRetryAttempts": -1,
            "MaximumRecordAgeInSeconds": 82_800,
            "BisectBatchOnFunctionError": true,
        });
        assert_eq!(
            settings(p.as_object().unwrap()),
            Settings {
                batch_size: 1000,
                window_ms: 2000,
                max_retry_attempts: None,
                max_record_age_ms: Some(82_800_000),
                bisect_on_error: true,
            }
        );
        let defaults = settings(&serde_json::Map::new());
        assert_eq!((defaults.batch_size, defaults.bisect_on_error), (100, false));
    }

    #[test]
    fn written_mappings_read_back_with_their_filters() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.json");
        let text = r#"[{"Id": "M", "FunctionName": "f", "Table": "records", "OnFailureBucket": "q",
            "Properties": {"BatchSize": 7, "FilterCriteria": {"Filters": [{"Pattern": "{\"eventName\": [\"INSERT\"]}"}]}}}]"#;
        std::fs::write(&path, text).unwrap();
        let m = read_mappings(&path).unwrap();
        assert_eq!(
            (m[0].table.as_str(), m[0].function.as_str(), m[0].settings.batch_size),
            ("records", "f", 7)
        );
        assert_eq!(m[0].filters.len(), 1);
        assert_eq!(m[0].on_failure_bucket.as_deref(), Some("q"));
        std::fs::write(&path, "[{").unwrap();
        assert!(read_mappings(&path)
            .unwrap_err()
            .to_string()
            .contains("--defer-mappings"));
    }
}
