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

/// Parses the raw JSON text of `ApproximateCreationDateTime`. The error says
/// what is wrong (it repeats the value, clipped: a time is not item contents).
pub(super) fn parse_creation_time(raw_json: &str) -> Result<CreationTime, String> {
    let shown = || super::parse::clip(raw_json, 40);
    match raw_json.as_bytes().first() {
        Some(b'"') => {
            let text: String =
                serde_json::from_str(raw_json).map_err(|_| format!("{} is not a valid JSON string", shown()))?;
            let text = text.trim();
            if text.contains(['T', 't', ':']) {
                rfc3339(text).map_err(|reason| format!("{} is not an RFC 3339 time: {reason}", shown()))
            } else {
                decimal(text).map_err(|reason| format!("{} is not epoch seconds: {reason}", shown()))
            }
        }
        Some(b'-' | b'0'..=b'9') => {
            decimal(raw_json).map_err(|reason| format!("{} is not epoch seconds: {reason}", shown()))
        }
        _ => Err(format!(
            "{} is neither a number of epoch seconds nor a time string",
            shown()
        )),
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

/// `YYYY-MM-DD(T|t| )HH:MM:SS[.fraction](Z|z|±HH:MM|±HHMM)`.
fn rfc3339(text: &str) -> Result<CreationTime, &'static str> {
    let b = text.as_bytes();
    let num = |from: usize, len: usize| -> Result<u32, &'static str> {
        let digits = b.get(from..from + len).ok_or("too short")?;
        digits.iter().try_fold(0u32, |acc, &d| {
            if d.is_ascii_digit() {
                Ok(acc * 10 + u32::from(d - b'0'))
            } else {
                Err("a digit expected")
            }
        })
    };
    let expect = |at: usize, allowed: &[u8]| -> Result<(), &'static str> {
        match b.get(at) {
            Some(c) if allowed.contains(c) => Ok(()),
            _ => Err("not of the form YYYY-MM-DDTHH:MM:SS(.fraction)(Z|±HH:MM)"),
        }
    };
    let year = num(0, 4)?;
    expect(4, b"-")?;
    let month = num(5, 2)?;
    expect(7, b"-")?;
    let day = num(8, 2)?;
    expect(10, b"Tt ")?;
    let hour = num(11, 2)?;
    expect(13, b":")?;
    let minute = num(14, 2)?;
    expect(16, b":")?;
    let second = num(17, 2)?;
    let mut i = 19;
    let mut nanos = 0u32;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 9 {
                nanos = nanos * 10 + u32::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return Err("a fraction without digits");
        }
        for _ in (i - start)..9 {
            nanos *= 10;
        }
    }
    let offset_seconds: i64 = match b.get(i) {
        Some(b'Z' | b'z') => {
            i += 1;
            0
        }
        Some(&sign @ (b'+' | b'-')) => {
            let hours = num(i + 1, 2)?;
            let (minutes, end) = if b.get(i + 3) == Some(&b':') {
                (num(i + 4, 2)?, i + 6)
            } else {
                (num(i + 3, 2)?, i + 5)
            };
            if hours > 23 || minutes > 59 {
                return Err("offset out of range");
            }
            i = end;
            let offset = i64::from(hours * 3600 + minutes * 60);
            if sign == b'-' {
                -offset
            } else {
                offset
            }
        }
        _ => return Err("no time zone offset"),
    };
    if i != b.len() {
        return Err("unexpected characters");
    }
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return Err("date out of range");
    }
    if hour > 23 || minute > 59 || second > 60 {
        return Err("time of day out of range");
    }
    let seconds = days_from_civil(i64::from(year), month, day) * 86_400 + i64::from(hour * 3600 + minute * 60 + second)
        - offset_seconds;
    if seconds < 0 {
        return Err("before 1970");
    }
    Ok(CreationTime { seconds, nanos })
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let year_of_era = y - era * 400;
    let month_from_march = i64::from((month + 9) % 12);
    let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}
