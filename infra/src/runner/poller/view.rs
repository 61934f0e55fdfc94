//! What a mapping's filters look at in a record, as Lambda's do.

use serde::Deserialize;
use serde_json::Value as Json;

use model::filter;

#[derive(Deserialize)]
struct View {
    dynamodb: Option<ViewImages>,
}

#[derive(Deserialize)]
struct ViewImages {
    #[serde(rename = "Keys")]
    keys: Option<Json>,
    #[serde(rename = "NewImage")]
    new_image: Option<Json>,
    #[serde(rename = "OldImage")]
    old_image: Option<Json>,
}

/// The part of a record filters look at (`dynamodb`'s keys and images),
/// read without the other fields (the creation time never becomes an f64).
/// A Kinesis record is looked at in its decoded `data`, as Lambda filters
/// it (the mapping's patterns are then under `data`: see `model::filter`).
pub(super) fn filter_view(json: &str) -> Json {
    match crate::runner::stream::kinesis::kinesis_data(json) {
        Some(decoded) => serde_json::json!({ filter::KINESIS_DATA: change_view(&decoded) }),
        None => change_view(json),
    }
}

/// [`filter_view`] of a change as DynamoDB writes it.
fn change_view(json: &str) -> Json {
    let Ok(View { dynamodb: Some(images) }) = serde_json::from_str::<View>(json) else {
        return Json::Null;
    };
    let mut dynamodb = serde_json::Map::new();
    for (name, image) in [
        ("Keys", images.keys),
        ("NewImage", images.new_image),
        ("OldImage", images.old_image),
    ] {
        if let Some(image) = image {
            dynamodb.insert(name.to_owned(), image);
        }
    }
    serde_json::json!({ "dynamodb": dynamodb })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_see_keys_and_images_only() {
        let view = filter_view(
            r#"{"eventName":"INSERT","dynamodb":{"ApproximateCreationDateTime":1.5,"Keys":{"pk":{"S":"a"}},"NewImage":{"n":{"N":"1"}},"SequenceNumber":"1"}}"#,
        );
        assert_eq!(
            view,
            serde_json::json!({"dynamodb": {"Keys": {"pk": {"S": "a"}}, "NewImage": {"n": {"N": "1"}}}})
        );
        assert_eq!(filter_view("not json"), Json::Null);
        // A Kinesis record: its decoded `data`, under `data`.
        use base64::Engine as _;
        let change = r#"{"eventName":"REMOVE","dynamodb":{"ApproximateCreationDateTime":1,"Keys":{"pk":{"S":"a"}},"OldImage":{"pk":{"S":"a"}}}}"#;
        let data = base64::engine::general_purpose::STANDARD.encode(change);
        let kinesis = format!(r#"{{"kinesis":{{"sequenceNumber":"7","data":"{data}"}},"eventSource":"aws:kinesis"}}"#);
        assert_eq!(
            filter_view(&kinesis),
            serde_json::json!({"data": {"dynamodb": {"Keys": {"pk": {"S": "a"}}, "OldImage": {"pk": {"S": "a"}}}}})
        );
    }
}
