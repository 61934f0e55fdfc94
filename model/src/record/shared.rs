//! Text that many records share: a stream's ARN and its table's name.
//!
//! Every record of a batch names the same stream, so a record holds its
//! ARN and table name as a [`SharedText`], not a copy. The first texts a
//! process meets are kept for its lifetime ([`SharedText::kept`]), and a
//! record's copy of one is a plain pointer: no count to touch. That
//! matters where one thread reads records and another drops them (the
//! indexer's read-ahead): a shared count (`Arc<str>`) costs two atomic
//! updates per record on a cache line the two cores hand back and forth,
//! a noticeable share of the reading thread's time on a large batch.
//! What is kept is bounded ([`KEPT_TEXTS`] texts of at most
//! [`KEPT_LEN`] bytes); past that a text is counted as before.

use std::cell::RefCell;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::{Arc, Mutex};

/// How many distinct texts a process keeps: a Lambda reads one stream,
/// a replay or a poller a few.
pub const KEPT_TEXTS: usize = 64;

/// The longest text kept (an ARN is about 100 bytes).
pub const KEPT_LEN: usize = 1024;

/// The texts kept so far (each leaked once, so it lives as long as the
/// process): at most [`KEPT_TEXTS`] × [`KEPT_LEN`] bytes.
static KEPT: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

/// A text shared by many records, compared, hashed, ordered and printed
/// as the `str` it holds.
#[derive(Clone)]
pub struct SharedText(Repr);

#[derive(Clone)]
enum Repr {
    /// Kept for the process's lifetime: a copy is a pointer.
    Kept(&'static str),
    /// Counted, as an `Arc<str>`.
    Counted(Arc<str>),
}

#[cfg(test)]
impl Repr {
    fn is_kept(&self) -> bool {
        matches!(self, Repr::Kept(_))
    }
}

impl SharedText {
    /// `text`, kept for the process's lifetime when there is room (see
    /// the module's doc), else counted. Takes a lock: callers that meet
    /// the same text often keep the result and clone it.
    pub fn kept(text: &str) -> SharedText {
        SharedText::kept_in(&KEPT, text)
    }

    /// [`SharedText::kept`], in the list `kept` (tests give their own).
    fn kept_in(kept: &Mutex<Vec<&'static str>>, text: &str) -> SharedText {
        if text.len() <= KEPT_LEN {
            // A poisoned lock only means a panic elsewhere while it was
            // held; the list itself is always whole.
            let mut kept = kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some(known) = kept.iter().find(|known| ***known == *text) {
                return SharedText(Repr::Kept(known));
            }
            if kept.len() < KEPT_TEXTS {
                let leaked: &'static str = Box::leak(text.into());
                kept.push(leaked);
                return SharedText(Repr::Kept(leaked));
            }
        }
        SharedText(Repr::Counted(Arc::from(text)))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Kept(text) => text,
            Repr::Counted(text) => text,
        }
    }
}

impl Deref for SharedText {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for SharedText {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

/// Counted (not kept): what tests make (the parsers and the in-memory
/// store use [`SharedText::kept`]).
impl From<&str> for SharedText {
    fn from(text: &str) -> SharedText {
        SharedText(Repr::Counted(Arc::from(text)))
    }
}

impl From<String> for SharedText {
    fn from(text: String) -> SharedText {
        SharedText(Repr::Counted(Arc::from(text)))
    }
}

impl PartialEq for SharedText {
    fn eq(&self, other: &SharedText) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for SharedText {}

impl PartialOrd for SharedText {
    fn partial_cmp(&self, other: &SharedText) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SharedText {
    fn cmp(&self, other: &SharedText) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for SharedText {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Debug for SharedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for SharedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The table name in a DynamoDB table or stream ARN
/// (`arn:PARTITION:dynamodb:REGION:ACCOUNT:table/NAME[/stream/LABEL]`), if it
/// is one and the name is a valid table name.
pub fn table_from_arn(arn: &str) -> Option<&str> {
    let mut parts = arn.splitn(6, ':');
    if parts.next()? != "arn" || parts.next()?.is_empty() || parts.next()? != "dynamodb" {
        return None;
    }
    let (_region, _account) = (parts.next()?, parts.next()?);
    let name = parts.next()?.strip_prefix("table/")?.split('/').next()?;
    is_table_name(name).then_some(name)
}

/// Whether `name` is a valid DynamoDB table name (1 to 255 of `a-z A-Z
/// 0-9 _ - .`).
pub fn is_table_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// A stream ARN and the name of its table, if it names one.
pub(super) type SharedArn = (SharedText, Option<SharedText>);

/// How many ARNs [`shared_arn`] keeps: a Lambda batch comes from one
/// stream, a replayed file from a few.
const SHARED_ARNS: usize = 8;

/// `arn` and the name of its table ([`table_from_arn`]), shared. The last
/// few ARNs met on the thread are kept, so that the records of one stream
/// share one of each instead of each making its own.
pub(super) fn shared_arn(arn: &str) -> SharedArn {
    std::thread_local! {
        static KEPT: RefCell<Vec<SharedArn>> = const { RefCell::new(Vec::new()) };
    }
    KEPT.with_borrow_mut(|kept| {
        if let Some((known, table)) = kept.iter().find(|(known, _)| **known == *arn) {
            return (known.clone(), table.clone());
        }
        if kept.len() == SHARED_ARNS {
            kept.remove(0);
        }
        let shared = (SharedText::kept(arn), table_from_arn(arn).map(SharedText::kept));
        kept.push(shared.clone());
        shared
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_text_is_the_one_kept_before() {
        static LIST: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
        let arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/t/stream/1";
        // The same text met again, read from elsewhere.
        let again = String::from(arn);
        let (first, second) = (SharedText::kept_in(&LIST, arn), SharedText::kept_in(&LIST, &again));
        let (Repr::Kept(a), Repr::Kept(b)) = (&first.0, &second.0) else {
            panic!("a short text is kept while there is room: {first:?}, {second:?}");
        };
        assert!(std::ptr::eq(*a, *b), "the second is the first's text, not another copy");
        assert_eq!(first, SharedText::from(arn), "kept or counted, the same text is equal");
    }

    #[test]
    fn a_long_text_is_counted_not_kept() {
        static LIST: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
        let long = "x".repeat(KEPT_LEN + 1);
        let shared = SharedText::kept_in(&LIST, &long);
        assert!(matches!(shared.0, Repr::Counted(_)), "over {KEPT_LEN} bytes: counted");
        assert_eq!(&*shared, long.as_str());
        assert!(
            SharedText::kept_in(&LIST, &long[1..]).0.is_kept(),
            "{KEPT_LEN} bytes: kept"
        );
    }

    #[test]
    fn past_the_limit_texts_are_counted() {
        static LIST: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
        let texts: Vec<SharedText> = (0..=KEPT_TEXTS)
            .map(|n| SharedText::kept_in(&LIST, &format!("text {n}")))
            .collect();
        let kept = texts.iter().filter(|text| text.0.is_kept()).count();
        assert_eq!(kept, KEPT_TEXTS, "the list holds {KEPT_TEXTS} at most");
        assert_eq!(
            texts.last().map(SharedText::as_str),
            Some(format!("text {KEPT_TEXTS}").as_str())
        );
        assert!(
            SharedText::kept_in(&LIST, "text 0").0.is_kept(),
            "a text kept before is still found"
        );
    }

    #[test]
    fn reads_compares_and_prints_as_its_text() {
        let (a, b) = (SharedText::from("alpha"), SharedText::kept("beta"));
        assert!(a < b);
        assert_eq!(format!("{a:?} {b}"), "\"alpha\" beta");
        assert_eq!(Some(a).as_deref(), Some("alpha"));
    }
}
