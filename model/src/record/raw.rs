//! A stream record's serde structs (either spelling: the Lambda event's and
//! GetRecords'), read borrowing from the record's text: what
//! [`one`](super::one) checks and builds into a record.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize as DeriveDeserialize;
use serde_json::value::RawValue;

use super::attr::{ImageField, Text};

/// One stream record, either spelling. Unknown members are ignored. Its
/// images are read whole (`I` = [`ImageField`]), glanced at
/// ([`ImageGlance`](super::glance::ImageGlance)) or read borrowed
/// ([`BorrowedField`](super::attr::BorrowedField)); its keys (`K`) whole
/// or borrowed.
#[derive(DeriveDeserialize)]
#[cfg_attr(test, derive(Debug))]
#[serde(expecting = "a stream record object")]
pub(super) struct RawRecord<'a, I = ImageField, K = ImageField> {
    #[serde(rename = "eventID")]
    pub(super) event_id: Option<String>,
    #[serde(rename = "eventName", borrow)]
    pub(super) event_name: Option<Text<'a>>,
    #[serde(rename = "eventSourceARN", borrow)]
    pub(super) event_source_arn: Option<Text<'a>>,
    #[serde(rename = "userIdentity", borrow)]
    pub(super) user_identity: Option<RawIdentity<'a>>,
    #[serde(borrow)]
    pub(super) dynamodb: Option<RawStreamRecord<'a, I, K>>,
    /// Only to explain a whole batch given where one record was expected.
    #[serde(rename = "Records")]
    pub(super) records: Option<IgnoredAny>,
}

impl<I, K> RawRecord<'_, I, K> {
    /// A record with no member (what a reading fills in).
    pub(super) fn empty() -> Self {
        RawRecord {
            event_id: None,
            event_name: None,
            event_source_arn: None,
            user_identity: None,
            dynamodb: None,
            records: None,
        }
    }
}

/// `userIdentity`: `type`/`principalId` (Lambda) or `Type`/`PrincipalId` (GetRecords).
#[derive(DeriveDeserialize)]
#[cfg_attr(test, derive(Debug))]
#[serde(expecting = "a userIdentity object")]
pub(super) struct RawIdentity<'a> {
    #[serde(rename = "type", alias = "Type", borrow)]
    pub(super) kind: Option<Text<'a>>,
    #[serde(rename = "principalId", alias = "PrincipalId", borrow)]
    pub(super) principal: Option<Text<'a>>,
}

/// The `dynamodb` part.
#[derive(DeriveDeserialize)]
#[cfg_attr(test, derive(Debug))]
#[serde(expecting = "a `dynamodb` object")]
pub(super) struct RawStreamRecord<'a, I, K = ImageField> {
    #[serde(rename = "ApproximateCreationDateTime", borrow)]
    pub(super) created: Option<JsonText<'a>>,
    #[serde(rename = "Keys")]
    pub(super) keys: Option<K>,
    #[serde(rename = "NewImage")]
    pub(super) new_image: Option<I>,
    #[serde(rename = "OldImage")]
    pub(super) old_image: Option<I>,
    #[serde(rename = "SequenceNumber")]
    pub(super) sequence_number: Option<String>,
    #[serde(rename = "SizeBytes")]
    pub(super) size_bytes: Option<u64>,
    #[serde(rename = "StreamViewType", borrow)]
    pub(super) view_type: Option<Text<'a>>,
}

/// A change as DynamoDB writes it to Kinesis: the members the rewrite
/// (`record::kinesis`) needs (a JSON `null` is one not given), each as written.
#[derive(Debug, Default, PartialEq)]
pub(in crate::record) struct Parts<'a> {
    pub(in crate::record) event_id: Option<&'a str>,
    pub(in crate::record) event_name: Option<&'a str>,
    pub(in crate::record) aws_region: Option<&'a str>,
    pub(in crate::record) user_identity: Option<&'a str>,
    pub(in crate::record) table_name: Option<Cow<'a, str>>,
    /// `dynamodb`'s members in order, each value as written.
    pub(in crate::record) dynamodb: Option<Vec<(Cow<'a, str>, &'a str)>>,
}

/// A value's JSON text, kept as sent (`ApproximateCreationDateTime`: a
/// number or a string, read later): read by serde as a [`RawValue`], or
/// taken from the hand scanner, which checks it as JSON as it goes by.
#[derive(Clone, Copy)]
#[cfg_attr(test, derive(Debug))]
pub(super) struct JsonText<'a>(pub(super) &'a str);

impl<'a> JsonText<'a> {
    pub(super) fn get(self) -> &'a str {
        self.0
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for JsonText<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(deserializer).map(|raw| JsonText(raw.get()))
    }
}
