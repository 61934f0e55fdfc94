//! Items as the tests write them: string values, images from pairs, and a
//! node of the example config's `records` table.

use model::{Image, Value};

/// A string value.
pub fn s(v: &str) -> Value {
    Value::S(v.to_owned())
}

/// An image of `pairs`.
pub fn item(pairs: &[(&str, Value)]) -> Image {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
}

/// The node `id` of the example config (its sort key is its partition key),
/// named after itself.
pub fn node(id: &str) -> Image {
    item(&[("source", s(id)), ("target", s(id)), ("name", s(id))])
}
