//! Every date and timestamp streamdex reads or writes, in one place: the
//! proleptic Gregorian calendar, RFC 3339 parsing (one grammar, in a strict
//! and a lenient reading) and formatting.
//!
//! - CSS1's DATE and TIMESTAMP columns (`sortkey`) read [`Grammar::Strict`]:
//!   `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, `T`/`t` and `Z`/`z`, no leap
//!   second, no non-zero digit below nanoseconds; every error says exactly
//!   what is wrong.
//! - A record's `ApproximateCreationDateTime` (`record`) reads
//!   [`Grammar::Lenient`]: what AWS tools print as well, a space for the
//!   `T`, `±HHMM` offsets, a leap second, digits below nanoseconds truncated.
//! - Event details and the runner's logs format with [`format_utc`].
//!
//! Hand-written rather than a calendar crate: everything is exact integer
//! arithmetic on days and nanoseconds (no floating point, no allocation when
//! parsing), CSS1 needs years 0000–9999 and exact nanoseconds, and the two
//! readings above are narrower and wider than what `time` or `chrono`
//! accept. The calendar conversions are H. Hinnant's algorithms, checked
//! here against a day-by-day count.

/// How much of RFC 3339 a reader accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grammar {
    /// CSS1 values: `T` (or `t`), `±HH:MM`, seconds 00–59, digits below
    /// nanoseconds only if zero.
    Strict,
    /// Creation times: also a space for the `T`, `±HHMM`, a leap second
    /// (`:60`), and digits below nanoseconds (truncated).
    Lenient,
}

/// An RFC 3339 timestamp as written: its local fields and its offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timestamp {
    pub year: u32,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub nanos: u32,
    /// East of UTC, in minutes.
    pub offset_minutes: i64,
}

impl Timestamp {
    /// Seconds since 1970-01-01T00:00:00Z (negative before it).
    pub fn epoch_seconds(&self) -> i64 {
        days_from_civil(i64::from(self.year), self.month, self.day) * 86_400
            + i64::from(self.hour * 3600 + self.minute * 60 + self.second)
            - self.offset_minutes * 60
    }

    /// The same instant at offset zero, as (year, month, day, hour, minute);
    /// seconds and nanoseconds do not change with the offset. The year may
    /// leave 0000–9999.
    pub fn utc_fields(&self) -> (i64, u32, u32, u32, u32) {
        let minutes = days_from_civil(i64::from(self.year), self.month, self.day) * 1440
            + i64::from(self.hour * 60 + self.minute)
            - self.offset_minutes;
        let (year, month, day) = civil_from_days(minutes.div_euclid(1440));
        let minute_of_day = u32::try_from(minutes.rem_euclid(1440)).unwrap_or(0);
        (year, month, day, minute_of_day / 60, minute_of_day % 60)
    }
}

pub fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// Days in `month` (1–12) of `year`; 0 for a month that does not exist.
pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number from [`days_from_civil`].
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let month = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// What is wrong with a date or timestamp (its `Display` is the message
/// that callers quote after the value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// A date is not `YYYY-MM-DD`.
    #[error("expected YYYY-MM-DD")]
    DateShape,
    /// A timestamp does not have RFC 3339's shape (or has an unexpected
    /// character where its offset starts).
    #[error("expected YYYY-MM-DDTHH:MM:SS[.fraction] followed by Z or ±HH:MM")]
    TimestampShape,
    #[error("month {month:02} is not 01..12")]
    Month { month: u32 },
    #[error("day {day:02} does not exist in {year:04}-{month:02}")]
    Day { year: u32, month: u32, day: u32 },
    #[error("hour {hour:02} is not 00..23")]
    Hour { hour: u32 },
    #[error("minute {minute:02} is not 00..59")]
    Minute { minute: u32 },
    /// `:60` in the strict reading.
    #[error("leap second :60 is not supported")]
    LeapSecond,
    #[error("second {second:02} is not 00..59")]
    Second { second: u32 },
    /// A non-zero digit below nanoseconds, in the strict reading.
    #[error("non-zero digits below nanoseconds")]
    BelowNanoseconds,
    /// A `.` with no digits after it.
    #[error("expected digits after '.'")]
    NoFractionDigits,
    /// The offset is not `±HH:MM` (nor, in the lenient reading, `±HHMM`).
    #[error("expected the offset as ±HH:MM")]
    OffsetShape,
    /// The offset's hours or minutes are out of range.
    #[error("offset {sign}{hours:02}:{minutes:02} is not a valid ±HH:MM")]
    Offset { sign: char, hours: u32, minutes: u32 },
    #[error("missing offset (Z or ±HH:MM)")]
    MissingOffset,
    #[error("trailing characters after the offset")]
    Trailing,
    /// The instant, converted to UTC, falls outside years 0000–9999.
    #[error("year {year} (after conversion to UTC) is outside 0000..9999")]
    UtcYear { year: i64 },
}

/// Checks that a year, month and day name a real day.
pub fn check_ymd(year: u32, month: u32, day: u32) -> Result<(), TimeError> {
    if !(1..=12).contains(&month) {
        return Err(TimeError::Month { month });
    }
    if day < 1 || day > days_in_month(i64::from(year), month) {
        return Err(TimeError::Day { year, month, day });
    }
    Ok(())
}

fn num(b: &[u8]) -> Option<u32> {
    if b.is_empty() {
        return None;
    }
    b.iter().try_fold(0u32, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
    })
}

fn field(b: &[u8], range: std::ops::Range<usize>) -> Option<u32> {
    b.get(range).and_then(num)
}

/// Checks that `text` is exactly `YYYY-MM-DD` and names a real day (years
/// 0000–9999).
pub fn check_date(text: &str) -> Result<(), TimeError> {
    let b = text.as_bytes();
    let shape = b.len() == 10 && b.get(4) == Some(&b'-') && b.get(7) == Some(&b'-');
    match (shape, field(b, 0..4), field(b, 5..7), field(b, 8..10)) {
        (true, Some(y), Some(m), Some(d)) => check_ymd(y, m, d),
        _ => Err(TimeError::DateShape),
    }
}

/// Reads an RFC 3339 timestamp with an offset, as `grammar` allows. The
/// error says what is wrong.
pub fn parse_rfc3339(text: &str, grammar: Grammar) -> Result<Timestamp, TimeError> {
    let lenient = grammar == Grammar::Lenient;
    let b = text.as_bytes();
    let at = |i: usize| b.get(i).copied();
    let separator = match at(10) {
        Some(b'T' | b't') => true,
        Some(b' ') => lenient,
        _ => false,
    };
    let shape = b.len() >= 20
        && at(4) == Some(b'-')
        && at(7) == Some(b'-')
        && separator
        && at(13) == Some(b':')
        && at(16) == Some(b':');
    let fields = (
        field(b, 0..4),
        field(b, 5..7),
        field(b, 8..10),
        field(b, 11..13),
        field(b, 14..16),
        field(b, 17..19),
    );
    let (true, (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second))) = (shape, fields) else {
        return Err(TimeError::TimestampShape);
    };
    check_ymd(year, month, day)?;
    if hour > 23 {
        return Err(TimeError::Hour { hour });
    }
    if minute > 59 {
        return Err(TimeError::Minute { minute });
    }
    if second == 60 && !lenient {
        return Err(TimeError::LeapSecond);
    }
    if second > 60 {
        return Err(TimeError::Second { second });
    }
    let mut i = 19;
    let mut nanos = 0u32;
    if at(i) == Some(b'.') {
        i += 1;
        let start = i;
        while let Some(c @ b'0'..=b'9') = at(i) {
            if i - start < 9 {
                nanos = nanos * 10 + u32::from(c - b'0');
            } else if c != b'0' && !lenient {
                return Err(TimeError::BelowNanoseconds);
            }
            i += 1;
        }
        let n = i - start;
        if n == 0 {
            return Err(TimeError::NoFractionDigits);
        }
        if n < 9 {
            nanos *= 10u32.pow(u32::try_from(9 - n).unwrap_or(0));
        }
    }
    let offset_minutes: i64 = match at(i) {
        Some(b'Z' | b'z') => {
            i += 1;
            0
        }
        Some(sign @ (b'+' | b'-')) => {
            let colon = at(i + 3) == Some(b':');
            let (hours, minutes, len) = if colon {
                (field(b, i + 1..i + 3), field(b, i + 4..i + 6), 6)
            } else if lenient {
                (field(b, i + 1..i + 3), field(b, i + 3..i + 5), 5)
            } else {
                (None, None, 0)
            };
            let (Some(oh), Some(om)) = (hours, minutes) else {
                return Err(TimeError::OffsetShape);
            };
            if oh > 23 || om > 59 {
                return Err(TimeError::Offset {
                    sign: char::from(sign),
                    hours: oh,
                    minutes: om,
                });
            }
            i += len;
            let minutes = i64::from(oh * 60 + om);
            if sign == b'-' {
                -minutes
            } else {
                minutes
            }
        }
        None => return Err(TimeError::MissingOffset),
        Some(_) => return Err(TimeError::TimestampShape),
    };
    if i != b.len() {
        return Err(TimeError::Trailing);
    }
    Ok(Timestamp {
        year,
        month,
        day,
        hour,
        minute,
        second,
        nanos,
        offset_minutes,
    })
}

/// How many fraction digits [`format_utc`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fraction {
    /// Exactly three (milliseconds), as Lambda writes timestamps.
    Millis,
    /// As many as the nanoseconds need, none for a whole second.
    Trimmed,
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction]Z` of `seconds` since the epoch and `nanos`.
pub fn format_utc(seconds: i64, nanos: u32, fraction: Fraction) -> String {
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    let secs = seconds.rem_euclid(86_400);
    let mut out = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    match fraction {
        Fraction::Millis => out.push_str(&format!(".{:03}", nanos / 1_000_000)),
        Fraction::Trimmed if nanos != 0 => {
            let digits = format!("{nanos:09}");
            out.push('.');
            out.push_str(digits.trim_end_matches('0'));
        }
        Fraction::Trimmed => {}
    }
    out.push('Z');
    out
}

#[cfg(test)]
mod tests;
