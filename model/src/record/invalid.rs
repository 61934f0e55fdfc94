//! Why a record cannot be what DynamoDB streamed (`crate::validate` checks).

/// Why a record cannot be what DynamoDB streamed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    #[error(
        "`{path}`: {number:?} is not a number DynamoDB can hold (at most 38 significant digits, \
         magnitude 1E-130 to 9.99…E+125)"
    )]
    Number { path: String, number: String },
    #[error("`{path}`: an empty set")]
    EmptySet { path: String },
    #[error("`{path}`: the set holds {member:?} twice")]
    DuplicateMember { path: String, member: String },
    #[error("`{path}`: NULL is false; DynamoDB's NULL is always true")]
    NullFalse { path: String },
    #[error("`Keys` lacks `{attribute}`, a key attribute of table `{table}`")]
    MissingKey { table: String, attribute: String },
    #[error("`Keys` holds `{attribute}`, not a key attribute of table `{table}`")]
    ExtraKey { table: String, attribute: String },
    #[error("`{image}` disagrees with `Keys` on key attribute `{attribute}`")]
    KeyMismatch { image: &'static str, attribute: String },
    #[error("a TTL deletion (`userIdentity`) on a record whose eventName is {kind}: only a REMOVE can be one")]
    TtlNotRemove { kind: &'static str },
    #[error(
        "ApproximateCreationDateTime {seconds} is not a time in seconds between 2014 and 2100 \
         (a time in milliseconds?)"
    )]
    CreationTime { seconds: i64 },
    #[error(
        "no ApproximateCreationDateTime, but table `{table}` is read from a Kinesis data stream, \
         where a record's creation time is its version"
    )]
    NoCreationTime { table: String },
    #[error("`{image}` is about {bytes} bytes, over DynamoDB's item limit of 400 KB")]
    TooLarge { image: &'static str, bytes: usize },
}
