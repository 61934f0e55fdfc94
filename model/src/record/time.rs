//! `ApproximateCreationDateTime`, read exactly from its JSON text.
//!
//! Accepted: a JSON number of epoch seconds in integer, fraction or exponent
//! form (`1763722800`, `1763722800.123456`, `1.7637228001E9`); the same as a
//! JSON string; and an RFC 3339 string with an offset
//! (`"2025-11-21T10:00:00.123+00:00"`, what the AWS CLI v2 prints by default).
//! Digits past nanoseconds are truncated. Negative times and times past
//! `i64::MAX` seconds are rejected.

use super::CreationTime;
use crate::sortkey::number;
use crate::sortkey::SortKeyError;
use crate::time::{self, Grammar, TimeError};

/// Why an `ApproximateCreationDateTime` could not be read. Each message
/// repeats the value (`shown`, clipped: a time is not item contents).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CreationTimeError {
    /// A string that is not valid JSON.
    #[error("{shown} is not a valid JSON string")]
    NotAJsonString { shown: String },
    /// A string that looks like an RFC 3339 time but is not one.
    #[error("{shown} is not an RFC 3339 time: {reason}")]
    NotRfc3339 { shown: String, reason: TimeError },
    /// An RFC 3339 time before the epoch.
    #[error("{shown} is not an RFC 3339 time: before 1970")]
    Before1970 { shown: String },
    /// A number (or a string of one) that is not usable epoch seconds.
    #[error("{shown} is not epoch seconds: {reason}")]
    NotEpochSeconds { shown: String, reason: &'static str },
    /// Neither a number nor a string.
    #[error("{shown} is neither a number of epoch seconds nor a time string")]
    NotNumberOrString { shown: String },
}

/// Parses the raw JSON text of `ApproximateCreationDateTime`. The error says
/// what is wrong (it repeats the value, clipped: a time is not item contents).
pub fn parse_creation_time(raw_json: &str) -> Result<CreationTime, CreationTimeError> {
    let shown = || super::document::clip(raw_json, 40);
    let epoch = |reason| CreationTimeError::NotEpochSeconds { shown: shown(), reason };
    match raw_json.as_bytes().first() {
        Some(b'"') => {
            let text: String =
                serde_json::from_str(raw_json).map_err(|_| CreationTimeError::NotAJsonString { shown: shown() })?;
            let text = text.trim();
            if text.contains(['T', 't', ':']) {
                rfc3339(text, shown)
            } else {
                decimal(text).map_err(epoch)
            }
        }
        Some(b'-' | b'0'..=b'9') => decimal(raw_json).map_err(epoch),
        _ => Err(CreationTimeError::NotNumberOrString { shown: shown() }),
    }
}

/// Epoch seconds from decimal text: `[+-]digits[.digits][(e|E)[+-]digits]`,
/// read with the codec's exact number parser (at most 38 significant digits).
fn decimal(text: &str) -> Result<CreationTime, &'static str> {
    let zero = CreationTime { seconds: 0, nanos: 0 };
    let parsed = match number::parse(text) {
        Ok(parsed) => parsed,
        // Below 1E-130: far under a nanosecond, and truncated to zero.
        Err(SortKeyError::NumberOutOfRange { exponent, .. }) if exponent < 0 && !text.starts_with('-') => None,
        Err(SortKeyError::NumberOutOfRange { exponent, .. }) if exponent < 0 => return Err("negative"),
        Err(SortKeyError::NumberOutOfRange { .. }) => return Err("too large"),
        Err(SortKeyError::TooManyDigits { .. }) => return Err("more than 38 significant digits"),
        Err(_) => return Err("not a decimal number"),
    };
    let Some(d) = parsed else {
        return Ok(zero);
    };
    if d.neg {
        return Err("negative");
    }
    let mut digits = [0u8; number::MAX_DIGITS];
    let count = d.digits_into(&mut digits);
    // The value is 0.d₁d₂… × 10^(e+1): `point` digits stand before the point.
    let point = d.exp() + 1;
    if point > 19 {
        return Err("too large");
    }
    let at = |k: i32| usize::try_from(k).ok().filter(|&k| k < count).map_or(0, |k| digits[k]);
    let mut seconds: i64 = 0;
    for k in 0..point.max(0) {
        seconds = seconds
            .checked_mul(10)
            .and_then(|s| s.checked_add(i64::from(at(k))))
            .ok_or("too large")?;
    }
    let mut nanos: u32 = 0;
    for k in point..point + 9 {
        nanos = nanos * 10 + u32::from(at(k));
    }
    Ok(CreationTime { seconds, nanos })
}

/// `YYYY-MM-DD(T|t| )HH:MM:SS[.fraction](Z|z|±HH:MM|±HHMM)`: `model::time`'s
/// lenient reading, on or after 1970. `shown` is the value as errors
/// repeat it.
fn rfc3339(text: &str, shown: impl Fn() -> String) -> Result<CreationTime, CreationTimeError> {
    let t = time::parse_rfc3339(text, Grammar::Lenient)
        .map_err(|reason| CreationTimeError::NotRfc3339 { shown: shown(), reason })?;
    let seconds = t.epoch_seconds();
    if seconds < 0 {
        return Err(CreationTimeError::Before1970 { shown: shown() });
    }
    Ok(CreationTime {
        seconds,
        nanos: t.nanos,
    })
}
