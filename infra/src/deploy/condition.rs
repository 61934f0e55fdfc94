//! A template's `Conditions`, evaluated for given parameters: enough of
//! CloudFormation's condition functions (`Fn::Equals`, `Fn::Not`,
//! `Fn::And`, `Fn::Or`, `Condition`, `Ref` to a parameter) to tell which
//! resources a false condition leaves out. Anything else is unknown.

use std::collections::BTreeMap;

use serde_json::Value as Json;

/// The conditions of one template, for one set of parameters.
pub struct Conditions<'t> {
    conditions: &'t Json,
    /// Every parameter: given, else its default.
    parameters: BTreeMap<String, String>,
}

impl<'t> Conditions<'t> {
    pub fn new(template: &'t Json, given: &BTreeMap<String, String>) -> Conditions<'t> {
        let mut parameters: BTreeMap<String, String> = template["Parameters"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(name, p)| Some((name.clone(), scalar(&p["Default"])?)))
            .collect();
        parameters.extend(given.iter().map(|(k, v)| (k.clone(), v.clone())));
        Conditions {
            conditions: &template["Conditions"],
            parameters,
        }
    }

    /// Whether condition `name` holds; `None` when it cannot be told.
    pub fn holds(&self, name: &str) -> Option<bool> {
        self.eval(&self.conditions[name], 0)
    }

    fn eval(&self, expression: &Json, depth: usize) -> Option<bool> {
        // A condition that names itself, through others, is not a template CloudFormation takes.
        if depth > 32 {
            return None;
        }
        let object = expression.as_object()?;
        let (function, arguments) = object.iter().next()?;
        let list = arguments.as_array();
        match function.as_str() {
            "Fn::Equals" => {
                let [a, b] = list?.as_slice() else { return None };
                Some(self.value(a)? == self.value(b)?)
            }
            "Fn::Not" => Some(!self.eval(list?.first()?, depth + 1)?),
            "Fn::And" => list?
                .iter()
                .try_fold(true, |all, c| Some(all & self.eval(c, depth + 1)?)),
            "Fn::Or" => list?
                .iter()
                .try_fold(false, |any, c| Some(any | self.eval(c, depth + 1)?)),
            "Condition" => self.eval(&self.conditions[arguments.as_str()?], depth + 1),
            _ => None,
        }
    }

    fn value(&self, value: &Json) -> Option<String> {
        match value {
            Json::Object(o) => self.parameters.get(o.get("Ref")?.as_str()?).cloned(),
            other => scalar(other),
        }
    }
}

fn scalar(value: &Json) -> Option<String> {
    match value {
        Json::String(s) => Some(s.clone()),
        Json::Number(n) => Some(n.to_string()),
        Json::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template() -> Json {
        json!({
            "Parameters": { "Key": { "Type": "String", "Default": "" }, "Mode": { "Type": "String" } },
            "Conditions": {
                "HasKey": { "Fn::Not": [{ "Fn::Equals": [{ "Ref": "Key" }, ""] }] },
                "Loud": { "Fn::Equals": ["loud", { "Ref": "Mode" }] },
                "Both": { "Fn::And": [{ "Condition": "HasKey" }, { "Condition": "Loud" }] },
                "Either": { "Fn::Or": [{ "Condition": "HasKey" }, { "Condition": "Loud" }] },
                "Odd": { "Fn::If": ["HasKey", true, false] },
                "Loop": { "Condition": "Loop" },
            },
        })
    }

    #[test]
    fn conditions_follow_defaults_and_given_parameters() {
        let t = template();
        let none = BTreeMap::new();
        let c = Conditions::new(&t, &none);
        assert_eq!(c.holds("HasKey"), Some(false), "the default is empty");
        assert_eq!(c.holds("Loud"), None, "Mode has no default and was not given");
        let given = BTreeMap::from([
            ("Key".to_owned(), "arn:k".to_owned()),
            ("Mode".to_owned(), "loud".to_owned()),
        ]);
        let c = Conditions::new(&t, &given);
        assert_eq!(
            (c.holds("HasKey"), c.holds("Loud"), c.holds("Both")),
            (Some(true), Some(true), Some(true))
        );
        let given = BTreeMap::from([("Mode".to_owned(), "quiet".to_owned())]);
        let c = Conditions::new(&t, &given);
        assert_eq!((c.holds("Both"), c.holds("Either")), (Some(false), Some(false)));
    }

    #[test]
    fn what_cannot_be_told_is_unknown() {
        let t = template();
        let c = Conditions::new(&t, &BTreeMap::new());
        assert_eq!(c.holds("Odd"), None);
        assert_eq!(c.holds("Loop"), None);
        assert_eq!(c.holds("Missing"), None);
    }
}
