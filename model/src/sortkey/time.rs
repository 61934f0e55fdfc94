//! DATE (`YYYY-MM-DD`) and TIMESTAMP (RFC 3339 with an offset) values:
//! validation and conversion to UTC, in exact integer arithmetic.

use super::encode::Sink;

const TIMESTAMP_SHAPE: &str = "expected YYYY-MM-DDTHH:MM:SS[.fraction] followed by Z or ±HH:MM";

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

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

fn check_ymd(year: u32, month: u32, day: u32) -> Result<(), String> {
    if !(1..=12).contains(&month) {
        return Err(format!("month {month:02} is not 01..12"));
    }
    if day < 1 || day > days_in_month(i64::from(year), month) {
        return Err(format!("day {day:02} does not exist in {year:04}-{month:02}"));
    }
    Ok(())
}

/// Checks that `text` is exactly `YYYY-MM-DD` and names a real day (proleptic
/// Gregorian calendar, years 0000–9999). A valid DATE is its own canonical form.
pub(crate) fn check_date(text: &str) -> Result<(), String> {
    let b = text.as_bytes();
    let shape = b.len() == 10 && b.get(4) == Some(&b'-') && b.get(7) == Some(&b'-');
    match (shape, field(b, 0..4), field(b, 5..7), field(b, 8..10)) {
        (true, Some(y), Some(m), Some(d)) => check_ymd(y, m, d),
        _ => Err("expected YYYY-MM-DD".to_owned()),
    }
}

/// A UTC instant with nanosecond precision, years 0000–9999.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Utc {
    year: u32,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    nanos: u32,
}

impl Utc {
    /// Writes `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`.
    pub fn write(&self, sink: &mut Sink<'_>) {
        sink.digits(self.year, 4);
        sink.byte(b'-');
        sink.digits(self.month, 2);
        sink.byte(b'-');
        sink.digits(self.day, 2);
        sink.byte(b'T');
        sink.digits(self.hour, 2);
        sink.byte(b':');
        sink.digits(self.minute, 2);
        sink.byte(b':');
        sink.digits(self.second, 2);
        sink.byte(b'.');
        sink.digits(self.nanos, 9);
        sink.byte(b'Z');
    }

    pub fn to_text(self) -> String {
        let mut s = String::with_capacity(30);
        self.write(&mut Sink::new(&mut s, false));
        s
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number from [`days_from_civil`].
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Parses an RFC 3339 timestamp with an offset (`T`/`t`, `Z`/`z`, any number
/// of fraction digits as long as those below nanoseconds are zero) and
/// converts it to UTC. Leap seconds and results outside 0000–9999 are errors.
pub(crate) fn parse_timestamp(text: &str) -> Result<Utc, String> {
    let b = text.as_bytes();
    let at = |i: usize| b.get(i).copied();
    let shape = b.len() >= 20
        && at(4) == Some(b'-')
        && at(7) == Some(b'-')
        && matches!(at(10), Some(b'T' | b't'))
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
        return Err(TIMESTAMP_SHAPE.to_owned());
    };
    check_ymd(year, month, day)?;
    if hour > 23 {
        return Err(format!("hour {hour:02} is not 00..23"));
    }
    if minute > 59 {
        return Err(format!("minute {minute:02} is not 00..59"));
    }
    if second == 60 {
        return Err("leap second :60 is not supported".to_owned());
    }
    if second > 59 {
        return Err(format!("second {second:02} is not 00..59"));
    }
    let mut i = 19;
    let mut nanos = 0u32;
    if at(i) == Some(b'.') {
        i += 1;
        let start = i;
        while let Some(c @ b'0'..=b'9') = at(i) {
            if i - start < 9 {
                nanos = nanos * 10 + u32::from(c - b'0');
            } else if c != b'0' {
                return Err("non-zero digits below nanoseconds".to_owned());
            }
            i += 1;
        }
        let n = i - start;
        if n == 0 {
            return Err("expected digits after '.'".to_owned());
        }
        if n < 9 {
            nanos *= 10u32.pow((9 - n) as u32);
        }
    }
    let offset_minutes: i64 = match at(i) {
        Some(b'Z' | b'z') => {
            i += 1;
            0
        }
        Some(sign @ (b'+' | b'-')) => {
            let (Some(oh), Some(b':'), Some(om)) = (field(b, i + 1..i + 3), at(i + 3), field(b, i + 4..i + 6)) else {
                return Err("expected the offset as ±HH:MM".to_owned());
            };
            if oh > 23 || om > 59 {
                return Err(format!(
                    "offset {}{oh:02}:{om:02} is not a valid ±HH:MM",
                    char::from(sign)
                ));
            }
            i += 6;
            let minutes = i64::from(oh * 60 + om);
            if sign == b'-' {
                -minutes
            } else {
                minutes
            }
        }
        None => return Err("missing offset (Z or ±HH:MM)".to_owned()),
        Some(_) => return Err(TIMESTAMP_SHAPE.to_owned()),
    };
    if i != b.len() {
        return Err("trailing characters after the offset".to_owned());
    }
    let local = Utc {
        year,
        month,
        day,
        hour,
        minute,
        second,
        nanos,
    };
    if offset_minutes == 0 {
        return Ok(local);
    }
    let minutes = days_from_civil(i64::from(year), month, day) * 1440 + i64::from(hour * 60 + minute) - offset_minutes;
    let (year, month, day) = civil_from_days(minutes.div_euclid(1440));
    let minute_of_day = minutes.rem_euclid(1440) as u32;
    if !(0..=9999).contains(&year) {
        return Err(format!("year {year} (after conversion to UTC) is outside 0000..9999"));
    }
    Ok(Utc {
        year: year as u32,
        month,
        day,
        hour: minute_of_day / 60,
        minute: minute_of_day % 60,
        second,
        nanos,
    })
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn dates() {
        assert!(check_date("2024-02-29").is_ok());
        assert!(check_date("0000-02-29").is_ok());
        assert!(check_date("9999-12-31").is_ok());
        assert_eq!(
            check_date("2023-02-29").unwrap_err(),
            "day 29 does not exist in 2023-02"
        );
        assert_eq!(
            check_date("1900-02-29").unwrap_err(),
            "day 29 does not exist in 1900-02"
        );
        assert_eq!(check_date("2023-13-01").unwrap_err(), "month 13 is not 01..12");
        for bad in [
            "2023-1-01",
            "20230101",
            "2023-01-01T",
            "+2023-01-01",
            "2023/01/01",
            "2023-01-0a",
            "",
        ] {
            assert_eq!(check_date(bad).unwrap_err(), "expected YYYY-MM-DD", "{bad}");
        }
    }

    #[test]
    fn civil_round_trip() {
        for days in (days_from_civil(0, 1, 1) - 2..days_from_civil(10000, 1, 1) + 2).step_by(7) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    #[test]
    fn timestamps() {
        let ok = |t: &str| parse_timestamp(t).map(Utc::to_text);
        assert_eq!(
            ok("2024-01-01T01:00:00+01:00").unwrap(),
            "2024-01-01T00:00:00.000000000Z"
        );
        assert_eq!(ok("2024-01-01T00:00:00.5Z").unwrap(), "2024-01-01T00:00:00.500000000Z");
        assert_eq!(
            ok("2024-02-28t23:30:00.123456789000-01:00").unwrap(),
            "2024-02-29T00:30:00.123456789Z"
        );
        assert_eq!(
            ok("2024-03-01T00:10:00+00:30").unwrap(),
            "2024-02-29T23:40:00.000000000Z"
        );
        assert_eq!(
            ok("2023-12-31T23:59:59.999999999-23:59").unwrap(),
            "2024-01-01T23:58:59.999999999Z"
        );
        assert_eq!(ok("0000-01-01T00:00:00z").unwrap(), "0000-01-01T00:00:00.000000000Z");
        assert_eq!(
            ok("2024-01-01T00:00:60Z").unwrap_err(),
            "leap second :60 is not supported"
        );
        assert_eq!(
            ok("2024-01-01T00:00:00.0000000001Z").unwrap_err(),
            "non-zero digits below nanoseconds"
        );
        assert!(ok("0000-01-01T00:30:00+01:00").unwrap_err().contains("year -1"));
        assert!(ok("9999-12-31T23:30:00-01:00").unwrap_err().contains("year 10000"));
        for bad in [
            "2024-01-01T00:00:00",
            "2024-01-01 00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:00:00.Z",
            "2024-01-01T00:00:00+0100",
            "2024-01-01T00:00:00+24:00",
            "2024-01-01T00:00:00Zx",
            "2024-02-30T00:00:00Z",
            "2024-01-01T00:00Z",
        ] {
            assert!(parse_timestamp(bad).is_err(), "{bad}");
        }
    }
}
