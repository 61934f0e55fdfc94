//! A change as DynamoDB writes it to Kinesis, split into the members the
//! rewrite needs, each value's text as written ([`Parts`], in `raw`): by the scan
//! (`record::scan::kinesis_change`) when it can, else by serde_json, which
//! reads anything the scan gives up on and says what is wrong.

use std::borrow::Cow;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::clip;
use crate::record::raw::Parts;

/// The parts of `text`, a change; serde_json's error when it is not one.
pub(super) fn read(text: &str) -> Result<Parts<'_>, serde_json::Error> {
    if let Some(parts) = crate::record::scan::kinesis_change(text) {
        return Ok(parts);
    }
    strict(text)
}

/// [`read`] with serde_json alone.
fn strict(text: &str) -> Result<Parts<'_>, serde_json::Error> {
    let change: Change<'_> = serde_json::from_str(text)?;
    Ok(Parts {
        event_id: change.event_id.map(RawValue::get),
        event_name: change.event_name.map(RawValue::get),
        aws_region: change.aws_region.map(RawValue::get),
        user_identity: change.user_identity.map(RawValue::get),
        table_name: change.table_name,
        dynamodb: change
            .dynamodb
            .map(|fields| fields.0.into_iter().map(|(name, value)| (name, value.get())).collect()),
    })
}

/// A change as DynamoDB writes it to Kinesis.
#[derive(Deserialize)]
struct Change<'a> {
    #[serde(rename = "eventID", borrow)]
    event_id: Option<&'a RawValue>,
    #[serde(rename = "eventName", borrow)]
    event_name: Option<&'a RawValue>,
    #[serde(rename = "awsRegion", borrow)]
    aws_region: Option<&'a RawValue>,
    #[serde(rename = "userIdentity", borrow)]
    user_identity: Option<&'a RawValue>,
    #[serde(rename = "tableName", borrow)]
    table_name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    dynamodb: Option<Fields<'a>>,
}

/// An object's fields, in order, their values as written.
struct Fields<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Fields<'a> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;
        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = Fields<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut fields: Vec<(Cow<'de, str>, &'de RawValue)> = Vec::new();
                while let Some(name) = map.next_key::<Cow<'de, str>>()? {
                    if fields.iter().any(|(n, _)| *n == name) {
                        return Err(de::Error::custom(format!("`{}` is given twice", clip(&name, 64))));
                    }
                    let value = map.next_value()?;
                    fields.push((name, value));
                }
                Ok(Fields(fields))
            }
        }
        de.deserialize_map(FieldsVisitor)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Texts near a change: its members in any order, some repeated, some
    /// null, escapes, whitespace, nesting, and broken JSON.
    fn near_change() -> impl Strategy<Value = String> {
        let value = prop_oneof![
            Just("null".to_owned()),
            Just("\"eu-west-1\"".to_owned()),
            Just("\"a\\\"b\"".to_owned()),
            Just("{\"S\":\"x\"}".to_owned()),
            Just("[1, 2.5e3, true]".to_owned()),
            Just("12".to_owned()),
            Just("{\"a\":{\"b\":[{}]}}".to_owned()),
            Just("{\"a\":".to_owned()),
        ];
        let name = prop_oneof![
            Just("eventID"),
            Just("eventName"),
            Just("awsRegion"),
            Just("userIdentity"),
            Just("tableName"),
            Just("recordFormat"),
            Just("other"),
        ];
        let dynamodb_member = (
            prop_oneof![
                Just("Keys"),
                Just("NewImage"),
                Just("ApproximateCreationDateTime"),
                Just("Keys")
            ],
            value.clone(),
        )
            .prop_map(|(n, v)| format!("\"{n}\":{v}"));
        let dynamodb = prop_oneof![
            Just("null".to_owned()),
            proptest::collection::vec(dynamodb_member, 0..4).prop_map(|m| format!("{{{}}}", m.join(","))),
        ];
        let member = prop_oneof![
            (name, value).prop_map(|(n, v)| format!("\"{n}\":{v}")),
            dynamodb.prop_map(|d| format!("\"dynamodb\":{d}")),
        ];
        (
            proptest::collection::vec(member, 0..7),
            prop_oneof![Just(""), Just(" "), Just(" x")],
        )
            .prop_map(|(members, tail)| format!("{{{}}}{tail}", members.join(", ")))
    }

    proptest! {
        /// Whatever the scan reads, serde_json reads alike; what it gives
        /// up on, serde_json reads (or refuses) as before.
        #[test]
        fn the_scan_splits_a_change_as_serde_json_does(text in near_change()) {
            if let Some(scanned) = crate::record::scan::kinesis_change(&text) {
                prop_assert_eq!(Some(scanned), strict(&text).ok());
            }
            prop_assert_eq!(read(&text).ok(), strict(&text).ok());
        }
    }

    #[test]
    fn a_change_as_dynamodb_writes_it_is_scanned() {
        let text = r#"{"awsRegion":"local","dynamodb":{"ApproximateCreationDateTime":1763719200000000,"Keys":{"pk":{"S":"a"}}},"eventID":"e1","eventName":"INSERT","tableName":"layers","userIdentity":null}"#;
        let scanned = crate::record::scan::kinesis_change(text);
        assert!(scanned.is_some());
        assert_eq!(scanned, strict(text).ok());
    }
}
