//! DynamoDB attribute values and item images.
//!
//! We use `serde_dynamo::AttributeValue` as the value type: numbers stay the
//! decimal text DynamoDB sent (never an `f64`), and it (de)serializes the
//! DynamoDB JSON wire form (`{"S": "..."}`, `{"N": "4.2"}`, ...).

pub mod borrowed;
mod image;
mod view;

pub use image::{Image, Name};
pub use view::{Attr, Attrs, Scalar, Shape};

/// One DynamoDB attribute value. Numbers are kept as their exact decimal text.
pub type Value = serde_dynamo::AttributeValue;

/// The non-key attributes of an index row, shared by every row one item
/// produces (an item with ten map entries has ten rows and one projection).
pub type Projection = std::sync::Arc<Image>;

/// The DynamoDB type tag of a value (`S`, `N`, `B`, `BOOL`, `NULL`, `M`, `L`, `SS`, `NS`, `BS`),
/// for error messages.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::S(_) => "S",
        Value::N(_) => "N",
        Value::B(_) => "B",
        Value::Bool(_) => "BOOL",
        Value::Null(_) => "NULL",
        Value::M(_) => "M",
        Value::L(_) => "L",
        Value::Ss(_) => "SS",
        Value::Ns(_) => "NS",
        Value::Bs(_) => "BS",
    }
}
