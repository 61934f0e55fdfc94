//! DynamoDB attribute values and item images.
//!
//! We use `serde_dynamo::AttributeValue` as the value type: numbers stay the
//! decimal text DynamoDB sent (never an `f64`), and it (de)serializes the
//! DynamoDB JSON wire form (`{"S": "..."}`, `{"N": "4.2"}`, ...).

pub mod borrowed;
mod image;
mod view;

pub use image::{DuplicateAttribute, Image, Name};
pub use view::{Attr, Attrs, Scalar, Shape};

/// DynamoDB's item size limit.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;

/// One DynamoDB attribute value. Numbers are kept as their exact decimal text.
pub type Value = serde_dynamo::AttributeValue;

/// The non-key attributes of an index row, shared by every row one item
/// produces (an item with ten map entries has ten rows and one projection).
pub type Projection = std::sync::Arc<Image>;
