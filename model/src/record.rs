//! One internal change record, normalised from every shape AWS delivers a
//! stream record in: the Lambda DynamoDB event, a DynamoDB Streams
//! `GetRecords` response, and JSON Lines with one record per line.
//!
//! PARSING IS TODO (helper): see the contract at the bottom of this file.

use crate::value::Image;

/// What happened to the item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    Insert,
    Modify,
    Remove,
}

impl EventKind {
    /// The stream's spelling: `INSERT`, `MODIFY`, `REMOVE`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Insert => "INSERT",
            EventKind::Modify => "MODIFY",
            EventKind::Remove => "REMOVE",
        }
    }
}

/// The stream's view type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewType {
    KeysOnly,
    NewImage,
    OldImage,
    NewAndOldImages,
}

/// `ApproximateCreationDateTime`, exact: whole epoch seconds plus the fraction
/// when the source had one (GetRecords does; the Lambda event does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CreationTime {
    pub seconds: i64,
    pub nanos: u32,
}

/// One change to one item, as the planner and the router see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeRecord {
    /// `eventID`, when the source carried one.
    pub event_id: Option<String>,
    pub kind: EventKind,
    /// The source table's name, from `eventSourceARN` when present
    /// (`arn:aws:dynamodb:REGION:ACCOUNT:table/NAME/stream/LABEL`).
    pub table: Option<String>,
    /// `eventSourceARN` as delivered (the Lambda shape only).
    pub source_arn: Option<String>,
    /// The item's primary key (`dynamodb.Keys`); never empty.
    pub keys: Image,
    /// `OldImage`: present for MODIFY and REMOVE under NEW_AND_OLD_IMAGES.
    pub old: Option<Image>,
    /// `NewImage`: present for INSERT and MODIFY under NEW_AND_OLD_IMAGES.
    pub new: Option<Image>,
    /// `SequenceNumber`: a decimal string, increasing within a shard.
    pub sequence_number: String,
    pub created: Option<CreationTime>,
    pub size_bytes: Option<u64>,
    pub view_type: Option<ViewType>,
    /// True when `userIdentity` says the TTL service deleted the item
    /// (type `Service`, principal `dynamodb.amazonaws.com`, either key spelling).
    pub ttl_expiry: bool,
}
