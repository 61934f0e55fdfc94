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

/// [`epoch_digits`] as a creation time.
pub(super) fn creation_time(units: &str, precision: Precision) -> Result<CreationTime, String> {
    let (seconds, fraction) = epoch_digits(units, precision)?;
    let unreadable = || format!("ApproximateCreationDateTime {} is not readable", clip(units, 40));
    let seconds = seconds.parse::<i64>().map_err(|_| unreadable())?;
    let scale = 10u32.pow(9u32.saturating_sub(fraction.len() as u32));
    let nanos = fraction.parse::<u32>().map_err(|_| unreadable())? * scale;
    Ok(CreationTime { seconds, nanos })
}
