//! A filter pattern read back from its text (what a deployed event source
//! mapping's `FilterCriteria` holds): the subset [`Pattern::to_text`]
//! writes, nested objects whose leaves are lists of strings, `{"prefix": s}`
//! and `{"exists": b}`. Anything else is refused by name, so a mapping with
//! a pattern streamdex did not write is never read as a different one.

use serde_json::Value as Json;

use super::{Allowed, Pattern};

/// Why a pattern's text was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("the filter pattern is not JSON: {0}")]
    Json(String),
    #[error("the filter pattern is not a JSON object")]
    NotObject,
    #[error("field `{path}` of the filter pattern holds {found}; expected a list of strings, {{\"prefix\": ...}} or {{\"exists\": ...}}")]
    Unsupported { path: String, found: String },
}

impl Pattern {
    /// Reads a pattern's JSON text.
    pub fn from_text(text: &str) -> Result<Pattern, PatternError> {
        let json: Json = serde_json::from_str(text).map_err(|e| PatternError::Json(e.to_string()))?;
        let Json::Object(root) = json else {
            return Err(PatternError::NotObject);
        };
        let mut pattern = Pattern::default();
        let mut stack: Vec<(Vec<String>, &serde_json::Map<String, Json>)> = vec![(Vec::new(), &root)];
        while let Some((path, node)) = stack.pop() {
            for (key, value) in node {
                let mut here = path.clone();
                here.push(key.clone());
                match value {
                    Json::Object(child) => stack.push((here, child)),
                    Json::Array(items) => {
                        let allowed = items
                            .iter()
                            .map(|item| allowed(item).ok_or_else(|| unsupported(&here, item)))
                            .collect::<Result<Vec<_>, _>>()?;
                        pattern.fields.insert(here, allowed);
                    }
                    other => return Err(unsupported(&here, other)),
                }
            }
        }
        Ok(pattern)
    }
}

fn allowed(item: &Json) -> Option<Allowed> {
    match item {
        Json::String(s) => Some(Allowed::Exactly(s.clone())),
        Json::Object(o) if o.len() == 1 => match o.iter().next()? {
            (k, Json::String(p)) if k == "prefix" => Some(Allowed::Prefix(p.clone())),
            (k, Json::Bool(e)) if k == "exists" => Some(Allowed::Exists(*e)),
            _ => None,
        },
        _ => None,
    }
}

fn unsupported(path: &[String], found: &Json) -> PatternError {
    PatternError::Unsupported {
        path: path.join("."),
        found: found.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{parse, EXAMPLE_CONFIG};
    use crate::filter::{patterns, Consumer};

    #[test]
    fn every_pattern_of_the_example_reads_back_as_itself() {
        let config = parse(EXAMPLE_CONFIG, "example").unwrap();
        let mut read = 0;
        for table in &config.tables {
            for consumer in Consumer::ALL {
                for pattern in patterns(&config, table, consumer) {
                    assert_eq!(Pattern::from_text(&pattern.to_text()), Ok(pattern));
                    read += 1;
                }
            }
        }
        assert!(read > 3, "only {read} patterns");
    }

    #[test]
    fn what_streamdex_does_not_write_is_refused_by_name() {
        assert!(matches!(Pattern::from_text("[1]"), Err(PatternError::NotObject)));
        assert!(matches!(Pattern::from_text("{"), Err(PatternError::Json(_))));
        let e = Pattern::from_text(r#"{"dynamodb": {"Keys": {"pk": {"S": [{"numeric": [">", 1]}]}}}}"#).unwrap_err();
        assert_eq!(
            e.to_string().split(" holds").next(),
            Some("field `dynamodb.Keys.pk.S` of the filter pattern")
        );
        assert!(matches!(
            Pattern::from_text(r#"{"eventName": "INSERT"}"#),
            Err(PatternError::Unsupported { .. })
        ));
        assert_eq!(Pattern::from_text("{}"), Ok(Pattern::default()));
    }
}
