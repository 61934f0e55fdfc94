//! Source versions of derived data: what lets an old record lose to newer
//! derived data (`docs/DESIGN.md`, invariant 9, "Old never beats new").
//!
//! A record's version is its place in its source: in a DynamoDB stream its
//! sequence number ([`Version::of_sequence`]); in a Kinesis data stream,
//! which may reorder and repeat records, its creation time in the table's
//! precision ([`Version::of_created`], microseconds or milliseconds since
//! 1970). [`of_record`] picks by the table's `stream`.
//!
//! A version is a decimal number (up to 40 digits) stored
//! as a fixed-width, zero-padded decimal String of [`WIDTH`] digits. A
//! DynamoDB N holds only 38 significant digits, and strings of one width
//! compare as their numbers do, so a ConditionExpression such as
//! `attribute_not_exists(v) OR v < :v` orders versions exactly as
//! [`crate::sequence::cmp`] orders sequence numbers.
//!
//! The attributes the pipeline keeps for versions are named here, once:
//! [`VERSION_ATTRIBUTE`] on every index row, [`TOMBSTONE_ATTRIBUTE`] on a
//! deleted row's tombstone (its TTL expiry, epoch seconds), and
//! [`EDGE_MARK_ATTRIBUTE`] on every node item whose edge set the pipeline
//! keeps (the high-water mark of the records applied to the set). The config
//! refuses to use these names for anything else.

use std::fmt;

use crate::record::{ChangeRecord, CreationTime};
use crate::source::{ChangeSource, Precision};

/// Digits of a stored version: the longest sequence number DynamoDB gives.
pub const WIDTH: usize = 40;
const _: () = assert!(WIDTH.is_multiple_of(8), "a version compares as whole 64-bit words");

/// The version of an index row (S, [`WIDTH`] digits).
pub const VERSION_ATTRIBUTE: &str = "_sdx_version";
/// On a tombstone (a deleted index row kept for its version): when it
/// expires (N, epoch seconds). The index tables' TTL attribute. A row
/// with this attribute is absent to every reader.
pub const TOMBSTONE_ATTRIBUTE: &str = "_sdx_tombstone_expires";
/// On a node item: the version of the last record applied to its edge set
/// (S, [`WIDTH`] digits).
pub const EDGE_MARK_ATTRIBUTE: &str = "_sdx_edges_version";

/// On a node item whose edge set is read from a Kinesis data stream: the
/// start of the attribute holding one member's version (S, [`WIDTH`]
/// digits), the member's text following it. See
/// [`member_version_attribute`].
pub const MEMBER_VERSION_PREFIX: &str = "_sdx_member:";

/// The attribute holding the version of edge-set member `member`.
pub fn member_version_attribute(member: &str) -> String {
    let mut name = String::with_capacity(MEMBER_VERSION_PREFIX.len() + member.len());
    name.push_str(MEMBER_VERSION_PREFIX);
    name.push_str(member);
    name
}

/// Whether `name` is an attribute the pipeline writes on node items for
/// its versions (the edge mark, a member's version).
pub fn is_version_attribute(name: &str) -> bool {
    name == EDGE_MARK_ATTRIBUTE || name.starts_with(MEMBER_VERSION_PREFIX)
}

/// Every attribute name reserved by the pipeline's versioning.
pub const RESERVED_ATTRIBUTES: [&str; 3] = [VERSION_ATTRIBUTE, TOMBSTONE_ATTRIBUTE, EDGE_MARK_ATTRIBUTE];

/// A sequence number that cannot be a version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("sequence number {0:?} is not a decimal number")]
    NotDecimal(String),
    #[error("sequence number {0:?} has more than {WIDTH} significant digits")]
    TooLong(String),
    #[error("no ApproximateCreationDateTime: a record of a table read from a Kinesis data stream is versioned by its creation time")]
    NoCreationTime,
    #[error("ApproximateCreationDateTime is before 1970")]
    BeforeEpoch,
}

/// A source version: a sequence number, padded to [`WIDTH`] digits. Its
/// `Ord` (the digits', byte by byte) is the numbers' order. Held inline:
/// every write of a record carries a copy, made without an allocation or
/// a shared count to touch (an `Arc<str>` would cost one allocation per
/// record, and two atomic operations per write).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Version([u8; WIDTH]);

/// The digits' order, byte by byte: compared eight at a time as big-endian
/// words, which keeps the order and needs no call to `memcmp`.
impl Ord for Version {
    fn cmp(&self, other: &Version) -> std::cmp::Ordering {
        let words = |v: &Version| {
            let mut words = [0u64; WIDTH / 8];
            for (word, bytes) in words.iter_mut().zip(v.0.chunks_exact(8)) {
                let mut chunk = [0u8; 8];
                chunk.copy_from_slice(bytes);
                *word = u64::from_be_bytes(chunk);
            }
            words
        };
        words(self).cmp(&words(other))
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Version) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Version").field(&self.as_str()).finish()
    }
}

impl Version {
    /// The version of a sequence number (decimal digits, at most [`WIDTH`]
    /// significant ones; leading zeros are allowed).
    pub fn of_sequence(sequence: &str) -> Result<Version, VersionError> {
        if sequence.is_empty() || !sequence.bytes().all(|b| b.is_ascii_digit()) {
            return Err(VersionError::NotDecimal(sequence.to_owned()));
        }
        let digits = sequence.trim_start_matches('0');
        if digits.len() > WIDTH {
            return Err(VersionError::TooLong(sequence.to_owned()));
        }
        let mut text = [b'0'; WIDTH];
        text[WIDTH - digits.len()..].copy_from_slice(digits.as_bytes());
        Ok(Version(text))
    }

    /// The version of a creation time, in `precision`: the whole
    /// microseconds (or milliseconds) since 1970, finer digits dropped.
    pub fn of_created(created: CreationTime, precision: Precision) -> Result<Version, VersionError> {
        let seconds = u64::try_from(created.seconds).map_err(|_| VersionError::BeforeEpoch)?;
        let (scale, per_unit) = match precision {
            Precision::Microsecond => (1_000_000, 1_000),
            Precision::Millisecond => (1_000, 1_000_000),
        };
        let units = u128::from(seconds) * scale + u128::from(created.nanos / per_unit);
        Ok(Version::of_number(units))
    }

    /// The version of a whole number: its digits, zero-padded (a `u128`
    /// has at most 39 digits, so it always fits).
    fn of_number(number: u128) -> Version {
        let mut text = [b'0'; WIDTH];
        let mut buffer = itoa::Buffer::new();
        // A creation time fits in 64 bits, whose digits are quicker to
        // find than a `u128`'s.
        let digits = match u64::try_from(number) {
            Ok(small) => buffer.format(small).as_bytes(),
            Err(_) => buffer.format(number).as_bytes(),
        };
        if let Some(start) = WIDTH.checked_sub(digits.len()) {
            text[start..].copy_from_slice(digits);
        }
        Version(text)
    }

    /// The lowest version: what any record beats (a row rebuilt where there
    /// was none, with nothing to say how new its source is).
    pub fn zero() -> Version {
        Version([b'0'; WIDTH])
    }

    /// A version as stored: exactly [`WIDTH`] digits.
    pub fn parse_stored(text: &str) -> Option<Version> {
        let digits: [u8; WIDTH] = text.as_bytes().try_into().ok()?;
        digits.iter().all(u8::is_ascii_digit).then_some(Version(digits))
    }

    /// The stored text ([`WIDTH`] digits).
    pub fn as_str(&self) -> &str {
        // Always ASCII digits (every constructor checks), so always UTF-8.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = self.as_str().trim_start_matches('0');
        f.write_str(if digits.is_empty() { "0" } else { digits })
    }
}

/// A [`Version`] in half the room, for maps that hold one per item: two
/// digits a byte, the first in the high half. The bytes' order is the
/// digits' order, so packed versions compare as their versions do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PackedVersion([u8; WIDTH / 2]);

impl Version {
    /// This version, packed.
    pub fn packed(&self) -> PackedVersion {
        let mut packed = [0u8; WIDTH / 2];
        for (byte, pair) in packed.iter_mut().zip(self.0.chunks_exact(2)) {
            // Every constructor checks the digits: each is 0 to 9.
            let digit = |d: u8| d.wrapping_sub(b'0') & 0x0f;
            *byte = (digit(pair[0]) << 4) | digit(pair[1]);
        }
        PackedVersion(packed)
    }
}

impl PackedVersion {
    /// The version packed.
    pub fn unpack(&self) -> Version {
        let mut digits = [b'0'; WIDTH];
        for (pair, byte) in digits.chunks_exact_mut(2).zip(self.0) {
            pair[0] = b'0' + (byte >> 4).min(9);
            pair[1] = b'0' + (byte & 0x0f).min(9);
        }
        Version(digits)
    }
}

/// The version of `record`, a record of a table whose changes come from
/// `source`: its sequence number, or for a Kinesis data stream its
/// creation time in the table's precision.
pub fn of_record<I>(record: &ChangeRecord<I>, source: ChangeSource) -> Result<Version, VersionError> {
    match source {
        ChangeSource::DynamoDb => Version::of_sequence(&record.sequence_number),
        ChangeSource::Kinesis(kinesis) => {
            Version::of_created(record.created.ok_or(VersionError::NoCreationTime)?, kinesis.precision)
        }
    }
}

/// What a guarded write found: whether a write of version `new` may replace
/// what holds `stored` (none: nothing there, or no version). Strictly newer
/// wins; an equal version is the same record again, which changes nothing.
pub fn newer(new: &Version, stored: Option<&Version>) -> bool {
    stored.is_none_or(|s| new > s)
}

/// An index row as read (its non-key attributes, as stored) as readers see
/// it: `None` for a tombstone, else the row without its version.
pub fn live_row(mut attributes: crate::Image) -> Option<crate::Image> {
    if attributes.contains_key(TOMBSTONE_ATTRIBUTE) {
        return None;
    }
    attributes.remove(VERSION_ATTRIBUTE);
    Some(attributes)
}

/// The version an index row (or tombstone) holds, as read.
pub fn row_version(attributes: &crate::Image) -> Option<Version> {
    match attributes.get(VERSION_ATTRIBUTE) {
        Some(crate::Value::S(text)) => Version::parse_stored(text),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sequence;
    use proptest::prelude::*;
    use std::cmp::Ordering;

    #[test]
    fn versions_are_padded_and_checked() {
        assert_eq!(Version::of_sequence("42").map(|v| v.as_str().len()), Ok(WIDTH));
        assert_eq!(Version::of_sequence("0042"), Version::of_sequence("42"));
        assert_eq!(Version::of_sequence("0").ok(), Some(Version::zero()));
        assert!(matches!(Version::of_sequence(""), Err(VersionError::NotDecimal(_))));
        assert!(matches!(Version::of_sequence("12a"), Err(VersionError::NotDecimal(_))));
        assert!(matches!(Version::of_sequence("-1"), Err(VersionError::NotDecimal(_))));
        let forty = "9".repeat(40);
        assert!(Version::of_sequence(&forty).is_ok());
        assert!(matches!(
            Version::of_sequence(&format!("1{forty}")),
            Err(VersionError::TooLong(_))
        ));
        assert!(
            Version::of_sequence(&format!("000{forty}")).is_ok(),
            "leading zeros do not count"
        );
        assert_eq!(
            Version::of_sequence("00120").map(|v| v.to_string()),
            Ok("120".to_owned())
        );
        assert_eq!(Version::zero().to_string(), "0");
        assert_eq!(Version::parse_stored(Version::zero().as_str()), Some(Version::zero()));
        assert_eq!(Version::parse_stored("12"), None);
    }

    #[test]
    fn only_strictly_newer_wins() {
        let v = |s: &str| Version::of_sequence(s).unwrap_or_else(|e| panic!("{e}"));
        assert!(newer(&v("100"), None));
        assert!(newer(&v("100"), Some(&v("99"))));
        assert!(!newer(&v("100"), Some(&v("100"))));
        assert!(!newer(&v("99"), Some(&v("100"))));
    }

    #[test]
    fn readers_see_live_rows_without_their_version() {
        use crate::{Image, Value};
        let v = Version::of_sequence("7").unwrap_or_else(|e| panic!("{e}"));
        let live = Image::from([
            ("name".to_owned(), Value::S("x".to_owned())),
            (VERSION_ATTRIBUTE.to_owned(), Value::S(v.as_str().to_owned())),
        ]);
        assert_eq!(row_version(&live), Some(v.clone()));
        assert_eq!(
            live_row(live),
            Some(Image::from([("name".to_owned(), Value::S("x".to_owned()))]))
        );
        let tombstone = Image::from([
            (VERSION_ATTRIBUTE.to_owned(), Value::S(v.as_str().to_owned())),
            (TOMBSTONE_ATTRIBUTE.to_owned(), Value::N("1700000000".to_owned())),
        ]);
        assert_eq!(row_version(&tombstone), Some(v));
        assert_eq!(live_row(tombstone), None);
        assert_eq!(row_version(&Image::new()), None);
    }

    #[test]
    fn a_creation_time_is_a_version_in_its_precision() {
        let at = |seconds, nanos| CreationTime { seconds, nanos };
        let micro = |c| Version::of_created(c, Precision::Microsecond).map(|v| v.to_string());
        let milli = |c| Version::of_created(c, Precision::Millisecond).map(|v| v.to_string());
        assert_eq!(micro(at(1_700_000_000, 123_456_789)), Ok("1700000000123456".to_owned()));
        assert_eq!(milli(at(1_700_000_000, 123_456_789)), Ok("1700000000123".to_owned()));
        assert_eq!(micro(at(1_700_000_000, 0)), Ok("1700000000000000".to_owned()));
        assert_eq!(micro(at(0, 999)), Ok("0".to_owned()));
        assert_eq!(micro(at(-1, 0)), Err(VersionError::BeforeEpoch));
        assert!(Version::of_created(at(i64::MAX, 999_999_999), Precision::Microsecond).is_ok());
    }

    proptest! {
        /// Creation times order as their versions do, but where the
        /// precision cannot tell them apart.
        #[test]
        fn creation_times_order_as_versions(a in 0i64..5_000_000_000, an in 0u32..1_000_000_000, b in 0i64..5_000_000_000, bn in 0u32..1_000_000_000) {
            let (ca, cb) = (CreationTime { seconds: a, nanos: an }, CreationTime { seconds: b, nanos: bn });
            for (precision, unit) in [(Precision::Microsecond, 1_000), (Precision::Millisecond, 1_000_000)] {
                let (va, vb) = (Version::of_created(ca, precision), Version::of_created(cb, precision));
                let (Ok(va), Ok(vb)) = (va, vb) else {
                    return Err(TestCaseError::fail("a time after 1970 is a version"));
                };
                prop_assert_eq!(va.cmp(&vb), (a, an / unit).cmp(&(b, bn / unit)));
            }
        }
    }

    fn digits(max: usize) -> impl Strategy<Value = String> {
        (0usize..4, proptest::collection::vec(0u8..10, 1..=max))
            .prop_map(|(zeros, d)| "0".repeat(zeros) + &d.iter().map(|x| char::from(b'0' + x)).collect::<String>())
    }

    proptest! {
        /// Padded, then compared as strings (as DynamoDB compares S values
        /// in a condition) is the numbers' order, up to 40 digits.
        #[test]
        fn padded_strings_compare_as_the_numbers(a in digits(40), b in digits(40)) {
            let (va, vb) = (Version::of_sequence(&a), Version::of_sequence(&b));
            let (Ok(va), Ok(vb)) = (va, vb) else {
                return Err(TestCaseError::fail("up to 40 digits is a version"));
            };
            prop_assert_eq!(va.as_str().cmp(vb.as_str()), sequence::cmp(&a, &b));
            prop_assert_eq!(va.cmp(&vb), sequence::cmp(&a, &b));
        }

        #[test]
        fn padding_agrees_with_u128(a in any::<u128>(), b in any::<u128>()) {
            let (va, vb) = (Version::of_sequence(&a.to_string()), Version::of_sequence(&b.to_string()));
            let (Ok(va), Ok(vb)) = (va, vb) else {
                return Err(TestCaseError::fail("a u128 is a version"));
            };
            prop_assert_eq!(va.cmp(&vb), a.cmp(&b));
            prop_assert_eq!(va.to_string(), a.to_string());
            prop_assert_eq!(newer(&va, Some(&vb)), a.cmp(&b) == Ordering::Greater);
        }

        /// A version packed comes back whole, and packed versions order as
        /// their versions do.
        #[test]
        fn packed_versions_unpack_and_order_as_versions(a in digits(40), b in digits(40)) {
            let (Ok(va), Ok(vb)) = (Version::of_sequence(&a), Version::of_sequence(&b)) else {
                return Err(TestCaseError::fail("up to 40 digits is a version"));
            };
            prop_assert_eq!(va.packed().unpack(), va.clone());
            prop_assert_eq!(va.packed().cmp(&vb.packed()), va.cmp(&vb));
            prop_assert_eq!(va.packed() == vb.packed(), va == vb);
        }

        /// A number's digits written in place are its decimal text padded,
        /// on both sides of 64 bits.
        #[test]
        fn a_number_is_its_padded_decimal_text(a in prop_oneof![
            any::<u128>(),
            any::<u64>().prop_map(u128::from),
            Just(0),
            Just(u128::from(u64::MAX)),
            Just(u128::from(u64::MAX) + 1),
            Just(u128::MAX),
        ]) {
            prop_assert_eq!(Ok(Version::of_number(a)), Version::of_sequence(&a.to_string()));
        }
    }
}
