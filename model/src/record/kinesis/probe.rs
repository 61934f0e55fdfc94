//! Telling a Lambda Kinesis event from a DynamoDB one by its first record
//! alone ([`is_kinesis_event`]), without reading the rest of the payload.

use std::borrow::Cow;
use std::cell::Cell;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::KINESIS_EVENT_SOURCE;

/// Whether `payload` is a Lambda Kinesis event: its first record has a
/// `kinesis` part or says `eventSource: aws:kinesis`. Reads no further
/// than that record.
pub fn is_kinesis_event(payload: &[u8]) -> bool {
    let found = Cell::new(false);
    let mut de = serde_json::Deserializer::from_slice(payload);
    // Stops at the first record with an error of its own making.
    let _ = de.deserialize_map(TopVisitor(&found));
    found.get()
}

/// Finds `Records`, and in it the first record (see [`is_kinesis_event`]).
struct TopVisitor<'c>(&'c Cell<bool>);

impl<'de> Visitor<'de> for TopVisitor<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an event")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "Records" {
                return map.next_value_seed(FirstRecord(self.0));
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

struct FirstRecord<'c>(&'c Cell<bool>);

impl<'de> DeserializeSeed<'de> for FirstRecord<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for FirstRecord<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("records")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        #[derive(Deserialize)]
        struct Probe<'a> {
            kinesis: Option<IgnoredAny>,
            #[serde(rename = "eventSource", borrow)]
            event_source: Option<Cow<'a, str>>,
        }
        if let Some(probe) = seq.next_element::<Probe<'de>>()? {
            self.0
                .set(probe.kinesis.is_some() || probe.event_source.as_deref() == Some(KINESIS_EVENT_SOURCE));
        }
        // The rest of the payload is not read.
        Err(de::Error::custom("first record read"))
    }
}
