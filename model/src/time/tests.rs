use super::*;
use proptest::prelude::*;

/// Days since 1970-01-01 counted one day at a time (the reference).
fn naive_days(year: i64, month: u32, day: u32) -> i64 {
    let mut days = 0i64;
    if year >= 1970 {
        for y in 1970..year {
            days += if is_leap(y) { 366 } else { 365 };
        }
    } else {
        for y in year..1970 {
            days -= if is_leap(y) { 366 } else { 365 };
        }
    }
    for m in 1..month {
        days += i64::from(days_in_month(year, m));
    }
    days + i64::from(day) - 1
}

#[test]
fn the_calendar_agrees_with_a_day_by_day_count() {
    for (y, m, d) in [
        (1970, 1, 1),
        (2000, 2, 29),
        (2000, 3, 1),
        (1900, 3, 1),
        (0, 1, 1),
        (9999, 12, 31),
        (1969, 12, 31),
    ] {
        assert_eq!(days_from_civil(y, m, d), naive_days(y, m, d), "{y}-{m}-{d}");
        assert_eq!(civil_from_days(days_from_civil(y, m, d)), (y, m, d));
    }
    assert_eq!(days_from_civil(2000, 3, 1), 11_017);
}

#[test]
fn both_readings_of_one_timestamp() {
    let strict = |t: &str| parse_rfc3339(t, Grammar::Strict);
    let lenient = |t: &str| parse_rfc3339(t, Grammar::Lenient);
    let t = strict("2025-11-21T10:00:00.123+01:00").expect("valid");
    assert_eq!((t.epoch_seconds(), t.nanos), (1_763_715_600, 123_000_000));
    assert_eq!(t.utc_fields(), (2025, 11, 21, 9, 0));
    // What only the lenient reading takes.
    for text in [
        "2025-11-21 10:00:00Z",
        "2025-11-21T10:00:00-0100",
        "2016-12-31T23:59:60Z",
        "2025-11-21T10:00:00.1234567891Z",
    ] {
        assert!(strict(text).is_err(), "strict takes {text}");
        assert!(lenient(text).is_ok(), "lenient refuses {text}");
    }
    assert_eq!(
        lenient("2025-11-21T10:00:00.1234567891Z").map(|t| t.nanos),
        Ok(123_456_789),
        "digits below nanoseconds are truncated"
    );
    // What neither takes.
    for text in [
        "2025-11-21T10:00:00",
        "2025-02-30T00:00:00Z",
        "2025-11-21T24:00:00Z",
        "2025-11-21T10:00:00+25:00",
        "2025-11-21T10:00:00.Z",
        "2025-11-21T10:00:00Zjunk",
        "2025-11-21T10:00:61Z",
        "",
    ] {
        assert!(strict(text).is_err() && lenient(text).is_err(), "{text}");
    }
}

#[test]
fn formats() {
    assert_eq!(format_utc(0, 0, Fraction::Millis), "1970-01-01T00:00:00.000Z");
    assert_eq!(
        format_utc(1_763_719_200, 123_456_789, Fraction::Millis),
        "2025-11-21T10:00:00.123Z"
    );
    assert_eq!(format_utc(951_782_400, 0, Fraction::Trimmed), "2000-02-29T00:00:00Z");
    assert_eq!(format_utc(-1, 500_000_000, Fraction::Trimmed), "1969-12-31T23:59:59.5Z");
}

proptest! {
    #[test]
    fn days_round_trip(days in -800_000i64..3_000_000) {
        let (y, m, d) = civil_from_days(days);
        prop_assert!((1..=12).contains(&m) && d >= 1 && d <= days_in_month(y, m));
        prop_assert_eq!(days_from_civil(y, m, d), days);
    }

    #[test]
    fn a_formatted_instant_reads_back(seconds in 0i64..253_402_300_799, nanos in 0u32..1_000_000_000) {
        let text = format_utc(seconds, nanos, Fraction::Trimmed);
        let back = parse_rfc3339(&text, Grammar::Strict).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!((back.epoch_seconds(), back.nanos), (seconds, nanos));
    }

    #[test]
    fn nothing_panics(text in "[0-9T:.+zZ -]{0,40}") {
        let _ = parse_rfc3339(&text, Grammar::Strict);
        let _ = parse_rfc3339(&text, Grammar::Lenient);
    }
}
