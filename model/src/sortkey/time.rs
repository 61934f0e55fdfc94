//! DATE (`YYYY-MM-DD`) and TIMESTAMP (RFC 3339 with an offset) values:
//! validation and conversion to UTC, in exact integer arithmetic (the
//! calendar and the RFC 3339 grammar are `model::time`'s).

use super::sink::Sink;

pub(crate) use crate::time::check_date;
use crate::time::{parse_rfc3339, Grammar, TimeError};

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

/// Parses an RFC 3339 timestamp with an offset (`model::time`'s strict
/// reading: `T`/`t`, `Z`/`z`, any number of fraction digits as long as those
/// below nanoseconds are zero) and converts it to UTC. Leap seconds and
/// results outside 0000–9999 are errors.
pub(crate) fn parse_timestamp(text: &str) -> Result<Utc, TimeError> {
    let t = parse_rfc3339(text, Grammar::Strict)?;
    if t.offset_minutes == 0 {
        return Ok(Utc {
            year: t.year,
            month: t.month,
            day: t.day,
            hour: t.hour,
            minute: t.minute,
            second: t.second,
            nanos: t.nanos,
        });
    }
    let (year, month, day, hour, minute) = t.utc_fields();
    let year = u32::try_from(year)
        .ok()
        .filter(|y| *y <= 9999)
        .ok_or(TimeError::UtcYear { year })?;
    Ok(Utc {
        year,
        month,
        day,
        hour,
        minute,
        second: t.second,
        nanos: t.nanos,
    })
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::time::{civil_from_days, days_from_civil};

    #[test]
    fn dates() {
        assert!(check_date("2024-02-29").is_ok());
        assert!(check_date("0000-02-29").is_ok());
        assert!(check_date("9999-12-31").is_ok());
        let err = |text: &str| check_date(text).unwrap_err().to_string();
        assert_eq!(err("2023-02-29"), "day 29 does not exist in 2023-02");
        assert_eq!(err("1900-02-29"), "day 29 does not exist in 1900-02");
        assert_eq!(err("2023-13-01"), "month 13 is not 01..12");
        for bad in [
            "2023-1-01",
            "20230101",
            "2023-01-01T",
            "+2023-01-01",
            "2023/01/01",
            "2023-01-0a",
            "",
        ] {
            assert_eq!(err(bad), "expected YYYY-MM-DD", "{bad}");
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
        let err = |t: &str| parse_timestamp(t).unwrap_err().to_string();
        assert_eq!(err("2024-01-01T00:00:60Z"), "leap second :60 is not supported");
        assert_eq!(
            err("2024-01-01T00:00:00.0000000001Z"),
            "non-zero digits below nanoseconds"
        );
        assert_eq!(
            err("0000-01-01T00:30:00+01:00"),
            "year -1 (after conversion to UTC) is outside 0000..9999"
        );
        assert_eq!(
            err("9999-12-31T23:30:00-01:00"),
            "year 10000 (after conversion to UTC) is outside 0000..9999"
        );
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
