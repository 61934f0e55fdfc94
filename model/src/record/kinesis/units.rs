//! `ApproximateCreationDateTime` as DynamoDB writes it to Kinesis: whole
//! microseconds or milliseconds since 1970 (the table's precision), read
//! as the digits of epoch seconds and their fraction, exactly, never
//! through a float.

use crate::config::Precision;
use crate::record::document::clip;
use crate::record::CreationTime;
use crate::validate::{MAX_CREATION_SECONDS, MIN_CREATION_SECONDS};

/// `units` (whole microseconds or milliseconds since 1970, a JSON integer)
/// as the digits of epoch seconds and of the fraction (as many as the
/// precision has places), exactly.
pub(super) fn epoch_digits(units: &str, precision: Precision) -> Result<(&str, &str), String> {
    let (places, unit) = match precision {
        Precision::Microsecond => (6, "microseconds"),
        Precision::Millisecond => (3, "milliseconds"),
    };
    let shown = || clip(units, 40);
    if units.is_empty() || !units.bytes().all(|b| b.is_ascii_digit()) {
        let shown = shown();
        return Err(format!(
            "ApproximateCreationDateTime {shown} is not a whole number of {unit} since 1970 (the table's precision)"
        ));
    }
    let digits = units.trim_start_matches('0');
    let (seconds, fraction) = digits.split_at(digits.len().saturating_sub(places));
    let in_range = seconds
        .parse::<i64>()
        .is_ok_and(|s| (MIN_CREATION_SECONDS..=MAX_CREATION_SECONDS).contains(&s));
    if !in_range {
        let other = match precision {
            Precision::Microsecond => "millisecond",
            Precision::Millisecond => "microsecond",
        };
        let shown = shown();
        return Err(format!(
            "ApproximateCreationDateTime {shown} is not a time in {unit} between 2014 and 2100: \
             does the table send precision = \"{other}\"? (the config says \"{}\")",
            precision.as_str()
        ));
    }
    // In range: the seconds have ten digits, so the fraction has all its places.
    Ok((seconds, fraction))
}

/// `units` (as for [`epoch_digits`]) as a creation time: read in one pass
/// when it is at most 19 digits and in range (any time DynamoDB sends),
/// else by its digits, which say what is wrong.
pub(super) fn creation_time(units: &str, precision: Precision) -> Result<CreationTime, String> {
    let per_second: u64 = match precision {
        Precision::Microsecond => 1_000_000,
        Precision::Millisecond => 1_000,
    };
    // 19 digits are under 10^19, within a u64.
    let whole = (1..=19).contains(&units.len()).then(|| {
        units.bytes().try_fold(0u64, |value, b| {
            b.is_ascii_digit().then(|| value * 10 + u64::from(b - b'0'))
        })
    });
    if let Some(Some(units)) = whole {
        let seconds = i64::try_from(units / per_second).unwrap_or(i64::MAX);
        if (MIN_CREATION_SECONDS..=MAX_CREATION_SECONDS).contains(&seconds) {
            // Under 10^6 units, times at least 10^3: within a u32.
            let nanos = u32::try_from((units % per_second) * (1_000_000_000 / per_second)).unwrap_or(0);
            return Ok(CreationTime { seconds, nanos });
        }
    }
    creation_time_by_digits(units, precision)
}

/// [`epoch_digits`] as a creation time.
fn creation_time_by_digits(units: &str, precision: Precision) -> Result<CreationTime, String> {
    let (seconds, fraction) = epoch_digits(units, precision)?;
    let unreadable = || format!("ApproximateCreationDateTime {} is not readable", clip(units, 40));
    let seconds = seconds.parse::<i64>().map_err(|_| unreadable())?;
    let scale = 10u32.pow(9u32.saturating_sub(fraction.len() as u32));
    let nanos = fraction.parse::<u32>().map_err(|_| unreadable())? * scale;
    Ok(CreationTime { seconds, nanos })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Digits around the range DynamoDB sends in (and leading zeros, and
    /// more digits than a u64 holds).
    fn units() -> impl Strategy<Value = String> {
        prop_oneof![
            (0u64..u64::MAX).prop_map(|n| n.to_string()),
            (1_388_534_400_000u64..4_102_444_800_999_999).prop_map(|n| n.to_string()),
            "[0-9]{1,25}",
            "0{1,5}[1-9][0-9]{12,16}",
            "[0-9]{0,16}[^0-9]?[0-9]{0,4}",
        ]
    }

    proptest! {
        /// The one pass answers as reading the digits does: the same time,
        /// or the same reason.
        #[test]
        fn one_pass_reads_as_the_digits_do(units in units()) {
            for precision in [Precision::Microsecond, Precision::Millisecond] {
                prop_assert_eq!(creation_time(&units, precision), creation_time_by_digits(&units, precision));
            }
        }
    }
}
