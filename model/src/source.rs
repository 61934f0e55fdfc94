//! Where a table's changes come from: its DynamoDB stream, or a Kinesis
//! data stream (`[table.NAME] stream`, see `crate::config`), and what that
//! means for a record's version (`crate::version`).

/// Where a table's changes come from (`[table.NAME] stream`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChangeSource {
    /// The table's DynamoDB stream (`stream = "dynamodb"`, the default): the
    /// records of one item come in order, and a record's version is its
    /// sequence number.
    #[default]
    DynamoDb,
    /// A Kinesis data stream the table sends its changes to (`stream =
    /// "kinesis"`): records may come reordered and more than once, and a
    /// record's version is its creation time.
    Kinesis(KinesisSource),
}

impl ChangeSource {
    /// Whether records of one item may come out of order and repeated.
    pub fn is_unordered(&self) -> bool {
        matches!(self, ChangeSource::Kinesis(_))
    }

    /// The config's spelling: `dynamodb` or `kinesis`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ChangeSource::DynamoDb => "dynamodb",
            ChangeSource::Kinesis(_) => "kinesis",
        }
    }
}

/// A Kinesis data stream as a table's change source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KinesisSource {
    /// The precision of `ApproximateCreationDateTime` the table sends
    /// (`precision`, default microsecond).
    pub precision: Precision,
    /// How long the stream keeps records (`retention_hours`, 24 to 8,760;
    /// default 24).
    pub retention_hours: u32,
}

/// The precision of the creation times a table sends to Kinesis
/// (DynamoDB's `ApproximateCreationDateTimePrecision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    #[default]
    Microsecond,
    Millisecond,
}

impl Precision {
    /// The config's spelling: `microsecond` or `millisecond`.
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Microsecond => "microsecond",
            Precision::Millisecond => "millisecond",
        }
    }

    /// DynamoDB's spelling: `MICROSECOND` or `MILLISECOND`.
    pub fn aws_name(self) -> &'static str {
        match self {
            Precision::Microsecond => "MICROSECOND",
            Precision::Millisecond => "MILLISECOND",
        }
    }
}
