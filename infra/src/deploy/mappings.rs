//! Event source mappings kept out of a stack on a local endpoint and
//! written down instead (`streamdex deploy --defer-mappings FILE`): moto's
//! mappings consume a table's stream themselves (they invoke the function,
//! which moto cannot run, and drop the records once it answers anything),
//! so `streamdex run --functions` does what the mappings would, as the file
//! says. Each mapping is written as the template has it, its references
//! resolved to the stack's resources: the function's name, the table, the
//! on-failure bucket.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

/// The resource type left out.
pub const MAPPING_TYPE: &str = "AWS::Lambda::EventSourceMapping";

/// A mapping as `streamdex run --functions` takes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeferredMapping {
    /// Its logical id in the template.
    pub id: String,
    pub function_name: String,
    /// The table whose stream it reads, or (a table read from Kinesis) the
    /// table's data stream.
    pub table: String,
    /// The on-failure destination's bucket.
    pub on_failure_bucket: Option<String>,
    /// The rest of its properties, as the template has them
    /// (`BatchSize`, `FilterCriteria`, `BisectBatchOnFunctionError`, ...).
    pub properties: Map<String, Json>,
}

/// Why a mapping could not be written down.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeferError {
    #[error("mapping {id}: its {property} is {found}; expected a reference to a resource of the stack")]
    Reference {
        id: String,
        property: &'static str,
        found: String,
    },
    #[error("mapping {id}: the stack has no resource {resource} (its {property})")]
    Missing {
        id: String,
        property: &'static str,
        resource: String,
    },
}

/// Takes the mappings out of `template`, by logical id.
pub fn take(template: &mut Json) -> Vec<(String, Json)> {
    let Some(resources) = template["Resources"].as_object_mut() else {
        return Vec::new();
    };
    let ids: Vec<String> = resources
        .iter()
        .filter(|(_, r)| r["Type"] == MAPPING_TYPE)
        .map(|(id, _)| id.clone())
        .collect();
    ids.into_iter()
        .filter_map(|id| resources.remove(&id).map(|r| (id, r)))
        .collect()
}

/// The logical id a `{"Ref": X}` or `{"Fn::GetAtt": [X, ...]}` names.
fn referenced(value: &Json) -> Option<&str> {
    value["Ref"].as_str().or_else(|| value["Fn::GetAtt"][0].as_str())
}

/// `mapping` (logical id `id`) with its references resolved against the
/// stack's resources (`physical`: logical id to physical id).
pub fn resolve(id: &str, mapping: &Json, physical: &BTreeMap<String, String>) -> Result<DeferredMapping, DeferError> {
    let properties = &mapping["Properties"];
    let lookup = |property: &'static str, value: &Json| -> Result<String, DeferError> {
        let resource = referenced(value).ok_or_else(|| DeferError::Reference {
            id: id.to_owned(),
            property,
            found: value.to_string(),
        })?;
        physical.get(resource).cloned().ok_or_else(|| DeferError::Missing {
            id: id.to_owned(),
            property,
            resource: resource.to_owned(),
        })
    };
    let function_name = lookup("FunctionName", &properties["FunctionName"])?;
    let table = lookup("EventSourceArn", &properties["EventSourceArn"])?;
    let destination = &properties["DestinationConfig"]["OnFailure"]["Destination"];
    let on_failure_bucket = if destination.is_null() {
        None
    } else {
        // A bucket's physical id is its name.
        Some(lookup("DestinationConfig", destination)?)
    };
    let mut rest = properties.as_object().cloned().unwrap_or_default();
    for resolved in ["FunctionName", "EventSourceArn", "DestinationConfig"] {
        rest.remove(resolved);
    }
    Ok(DeferredMapping {
        id: id.to_owned(),
        function_name,
        table,
        on_failure_bucket,
        properties: rest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template() -> Json {
        json!({ "Resources": {
            "Table": { "Type": "AWS::DynamoDB::Table" },
            "Mapping": { "Type": MAPPING_TYPE, "Properties": {
                "FunctionName": { "Ref": "Function" },
                "EventSourceArn": { "Fn::GetAtt": ["Table", "StreamArn"] },
                "DestinationConfig": { "OnFailure": { "Destination": { "Fn::GetAtt": ["Bucket", "Arn"] } } },
                "BatchSize": 1000,
                "FilterCriteria": { "Filters": [{ "Pattern": "{}" }] },
            } },
        } })
    }

    #[test]
    fn mappings_are_taken_out_and_resolved_against_the_stack() {
        let mut t = template();
        let taken = take(&mut t);
        assert_eq!(taken.len(), 1);
        assert!(t["Resources"].get("Mapping").is_none() && t["Resources"].get("Table").is_some());
        let physical = BTreeMap::from([
            ("Function".to_owned(), "streamdex-stream-indexer".to_owned()),
            ("Table".to_owned(), "records".to_owned()),
            ("Bucket".to_owned(), "streamdex-quarantinebucket-1x2y".to_owned()),
        ]);
        let m = resolve(&taken[0].0, &taken[0].1, &physical).unwrap();
        assert_eq!(
            (m.function_name.as_str(), m.table.as_str()),
            ("streamdex-stream-indexer", "records")
        );
        assert_eq!(m.on_failure_bucket.as_deref(), Some("streamdex-quarantinebucket-1x2y"));
        assert_eq!(m.properties["BatchSize"], 1000);
        assert!(m.properties.get("FunctionName").is_none());
        let text = serde_json::to_string(&m).unwrap();
        assert_eq!(serde_json::from_str::<DeferredMapping>(&text).unwrap(), m);
    }

    #[test]
    fn an_unresolvable_reference_is_named() {
        let mut t = template();
        let taken = take(&mut t);
        let e = resolve(&taken[0].0, &taken[0].1, &BTreeMap::new()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "mapping Mapping: the stack has no resource Function (its FunctionName)"
        );
        let literal = json!({ "Properties": { "FunctionName": "f" } });
        let e = resolve("M", &literal, &BTreeMap::new()).unwrap_err();
        assert!(
            matches!(
                e,
                DeferError::Reference {
                    property: "FunctionName",
                    ..
                }
            ),
            "{e}"
        );
    }
}
