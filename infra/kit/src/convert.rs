//! DynamoDB values and items between the model (`model::Value`, exact
//! decimal text for numbers) and the SDK's `AttributeValue`, by hand so
//! that numbers never pass through anything but their text; and the reads
//! both the indexer (set restores, repairs) and the reaper make: a
//! consistent GetItem and the partition Query.

use std::collections::HashMap;

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use model::fault::Fault;
use model::{Image, Value};

use crate::error::table_fault;

/// A model value as the SDK's `AttributeValue` (numbers stay their text).
pub fn to_attribute(value: &Value) -> AttributeValue {
    match value {
        Value::S(s) => AttributeValue::S(s.clone()),
        Value::N(n) => AttributeValue::N(n.clone()),
        Value::B(b) => AttributeValue::B(Blob::new(b.clone())),
        Value::Bool(b) => AttributeValue::Bool(*b),
        Value::Null(b) => AttributeValue::Null(*b),
        Value::M(m) => AttributeValue::M(m.iter().map(|(k, v)| (k.clone(), to_attribute(v))).collect()),
        Value::L(l) => AttributeValue::L(l.iter().map(to_attribute).collect()),
        Value::Ss(s) => AttributeValue::Ss(s.clone()),
        Value::Ns(n) => AttributeValue::Ns(n.clone()),
        Value::Bs(b) => AttributeValue::Bs(b.iter().map(|b| Blob::new(b.clone())).collect()),
    }
}

/// An SDK value the model cannot hold: of a type this SDK version does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// A value (at any depth) of an unknown type.
    #[error("an attribute value of a type unknown to this SDK version")]
    UnknownType,
    /// An item's attribute `name` whose value is, or holds, one of an unknown type.
    #[error("attribute `{name}`: {}", ConvertError::UnknownType)]
    Attribute { name: String },
}

/// The SDK's `AttributeValue` as a model value; an error for a type this SDK
/// version does not know.
pub fn from_attribute(value: AttributeValue) -> Result<Value, ConvertError> {
    Ok(match value {
        AttributeValue::S(s) => Value::S(s),
        AttributeValue::N(n) => Value::N(n),
        AttributeValue::B(b) => Value::B(b.into_inner()),
        AttributeValue::Bool(b) => Value::Bool(b),
        AttributeValue::Null(b) => Value::Null(b),
        AttributeValue::M(m) => Value::M(
            m.into_iter()
                .map(|(k, v)| Ok((k, from_attribute(v)?)))
                .collect::<Result<_, ConvertError>>()?,
        ),
        AttributeValue::L(l) => Value::L(l.into_iter().map(from_attribute).collect::<Result<_, _>>()?),
        AttributeValue::Ss(s) => Value::Ss(s),
        AttributeValue::Ns(n) => Value::Ns(n),
        AttributeValue::Bs(b) => Value::Bs(b.into_iter().map(Blob::into_inner).collect()),
        _ => return Err(ConvertError::UnknownType),
    })
}

/// An SDK item as a model image.
pub fn to_image(item: HashMap<String, AttributeValue>) -> Result<Image, ConvertError> {
    item.into_iter()
        .map(|(name, value)| match from_attribute(value) {
            Ok(v) => Ok((name, v)),
            Err(_) => Err(ConvertError::Attribute { name }),
        })
        .collect()
}

/// A model image as an SDK item.
pub fn to_item(image: &Image) -> HashMap<String, AttributeValue> {
    image
        .iter()
        .map(|(name, value)| (name.to_owned(), to_attribute(value)))
        .collect()
}

/// The item with this primary key, read strongly consistent (GetItem).
pub async fn get_item(client: &Client, table: &str, key: &Image) -> Result<Option<Image>, Fault> {
    let output = client
        .get_item()
        .table_name(table)
        .set_key(Some(to_item(key)))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| table_fault("GetItem", table, e))?;
    output
        .item
        .map(to_image)
        .transpose()
        .map_err(|e| Fault::refused(format!("GetItem on table `{table}`: {e}")))
}

/// Every item of one partition (`partition_key = partition`), strongly
/// consistent, every page; `index` queries a GSI instead (eventually
/// consistent, so `consistent` must then be false).
pub async fn query_partition(
    client: &Client,
    table: &str,
    index: Option<&str>,
    partition_key: &str,
    partition: &str,
) -> Result<Vec<Image>, Fault> {
    let operation = match index {
        Some(index) => format!("Query of index `{index}`"),
        None => "Query".to_owned(),
    };
    let mut items = Vec::new();
    let mut start: Option<HashMap<String, AttributeValue>> = None;
    loop {
        let output = client
            .query()
            .table_name(table)
            .set_index_name(index.map(str::to_owned))
            .key_condition_expression("#pk = :pk")
            .expression_attribute_names("#pk", partition_key)
            .expression_attribute_values(":pk", AttributeValue::S(partition.to_owned()))
            .consistent_read(index.is_none())
            .set_exclusive_start_key(start.take())
            .send()
            .await
            .map_err(|e| table_fault(&operation, table, e))?;
        for item in output.items.unwrap_or_default() {
            items.push(to_image(item).map_err(|reason| Fault::refused(format!("Query on table `{table}`: {reason}")))?);
        }
        match output.last_evaluated_key {
            Some(key) if !key.is_empty() => start = Some(key),
            _ => return Ok(items),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_exactly() {
        let n = "12345678901234567890123456789012345678";
        let value = Value::M(HashMap::from([
            ("n".to_owned(), Value::N(n.to_owned())),
            ("tiny".to_owned(), Value::N("1E-130".to_owned())),
            ("s".to_owned(), Value::S("x".to_owned())),
            ("b".to_owned(), Value::B(vec![0, 255])),
            ("bool".to_owned(), Value::Bool(true)),
            ("null".to_owned(), Value::Null(true)),
            (
                "l".to_owned(),
                Value::L(vec![Value::N("-0.000000000000000000001".to_owned())]),
            ),
            ("ss".to_owned(), Value::Ss(vec!["a".to_owned(), "b".to_owned()])),
            ("ns".to_owned(), Value::Ns(vec![n.to_owned()])),
            ("bs".to_owned(), Value::Bs(vec![vec![1], vec![2, 3]])),
        ]));
        let sdk = to_attribute(&value);
        match &sdk {
            AttributeValue::M(m) => assert_eq!(m.get("n"), Some(&AttributeValue::N(n.to_owned()))),
            other => panic!("not a map: {other:?}"),
        }
        assert_eq!(from_attribute(sdk), Ok(value));
    }
}
