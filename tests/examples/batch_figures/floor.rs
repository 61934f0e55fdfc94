//! The parse floor: the payload read by serde_json into a borrowed typed
//! struct (names, strings and numbers borrowed from the payload, each
//! attribute value an enum by its type tag, images as vectors), checking
//! nothing and building nothing else. The performance brief's targets are
//! set against this figure ("within 1.5x of the borrowed typed parse").

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;

/// Reads the payload; answers how many records it holds.
pub fn parse(payload: &[u8]) -> usize {
    let text = std::str::from_utf8(payload).expect("a UTF-8 payload");
    let batch: Batch<'_> = serde_json::from_str(text).expect("the payload reads as a batch");
    batch.records.len()
}

#[derive(Deserialize)]
struct Batch<'a> {
    #[serde(borrow, rename = "Records")]
    records: Vec<Record<'a>>,
}

#[derive(Deserialize)]
#[allow(dead_code)] // Read, never used: the point is the reading.
struct Record<'a> {
    #[serde(borrow, rename = "eventID")]
    event_id: Cow<'a, str>,
    #[serde(borrow, rename = "eventName")]
    event_name: Cow<'a, str>,
    #[serde(borrow, rename = "eventSourceARN")]
    arn: Cow<'a, str>,
    #[serde(borrow)]
    dynamodb: Stream<'a>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
#[serde(rename_all = "PascalCase")]
struct Stream<'a> {
    #[serde(borrow)]
    keys: Item<'a>,
    #[serde(borrow)]
    new_image: Option<Item<'a>>,
    #[serde(borrow)]
    old_image: Option<Item<'a>>,
    #[serde(borrow)]
    sequence_number: Cow<'a, str>,
    size_bytes: Option<u64>,
    #[serde(borrow)]
    stream_view_type: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[allow(dead_code, clippy::upper_case_acronyms)]
enum Attribute<'a> {
    #[serde(borrow)]
    S(Cow<'a, str>),
    #[serde(borrow)]
    N(Cow<'a, str>),
    #[serde(borrow)]
    B(Cow<'a, str>),
    BOOL(bool),
    NULL(bool),
    #[serde(borrow)]
    M(Item<'a>),
    #[serde(borrow)]
    L(Vec<Attribute<'a>>),
    #[serde(borrow)]
    SS(Vec<Cow<'a, str>>),
    #[serde(borrow)]
    NS(Vec<Cow<'a, str>>),
    #[serde(borrow)]
    BS(Vec<Cow<'a, str>>),
}

/// An image or an M: names borrowed, in the order given.
#[allow(dead_code)]
struct Item<'a>(Vec<(&'a str, Attribute<'a>)>);

impl<'de: 'a, 'a> Deserialize<'de> for Item<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Item<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an image")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item<'de>, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<&'de str, Attribute<'de>>()? {
                    entries.push(entry);
                }
                Ok(Item(entries))
            }
        }
        deserializer.deserialize_map(V)
    }
}
