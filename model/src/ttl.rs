//! DynamoDB's time to live, as its TTL service applies it: an item expires
//! once its TTL attribute, a Number of epoch seconds, is at or before now;
//! a value more than five years in the past, or not a Number, is ignored
//! (the item never expires). The stream record of a TTL deletion is a
//! REMOVE whose `userIdentity` names the service ([`IDENTITY_TYPE`],
//! [`PRINCIPAL`]).
//!
//! Exact: the seconds are read from the number's text, never through f64.

use crate::sortkey::number;
use crate::value::Value;

/// `userIdentity.type` of a TTL deletion's stream record.
pub const IDENTITY_TYPE: &str = "Service";
/// `userIdentity.principalId` of a TTL deletion's stream record.
pub const PRINCIPAL: &str = "dynamodb.amazonaws.com";
/// How far in the past a TTL may be and still expire its item (five years of 365 days).
pub const MAX_PAST_SECONDS: u64 = 5 * 365 * 24 * 3600;

/// What the TTL service makes of an item's TTL attribute at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// At or before now, and not more than five years before: delete.
    Expired,
    /// Later than now: not yet.
    Later,
    /// Not a Number, or more than five years in the past: never.
    Ignored,
}

/// The verdict on TTL attribute value `ttl` (absent: ignored) at `now_s` epoch seconds.
pub fn verdict(ttl: Option<&Value>, now_s: u64) -> Verdict {
    let Some(Value::N(text)) = ttl else {
        return Verdict::Ignored;
    };
    match whole_seconds(text) {
        Seconds::Negative | Seconds::Invalid => Verdict::Ignored,
        Seconds::Huge => Verdict::Later,
        Seconds::At(s) if s > now_s => Verdict::Later,
        Seconds::At(s) if now_s - s > MAX_PAST_SECONDS => Verdict::Ignored,
        Seconds::At(_) => Verdict::Expired,
    }
}

enum Seconds {
    /// Whole seconds (a fraction is dropped).
    At(u64),
    /// Beyond u64 seconds: far in the future.
    Huge,
    Negative,
    Invalid,
}

fn whole_seconds(text: &str) -> Seconds {
    let decimal = match number::parse(text) {
        Ok(Some(d)) => d,
        Ok(None) => return Seconds::At(0),
        Err(_) => return Seconds::Invalid,
    };
    if decimal.neg {
        return Seconds::Negative;
    }
    let exp = decimal.exp();
    if exp < 0 {
        return Seconds::At(0);
    }
    if exp >= 20 {
        return Seconds::Huge;
    }
    let mut buf = [0u8; number::MAX_DIGITS];
    let k = decimal.digits_into(&mut buf);
    // The integer part has exp + 1 digits: the significant digits, then zeros.
    let mut seconds: u64 = 0;
    let integer_digits = usize::try_from(exp).unwrap_or(0) + 1;
    let digits = buf[..k]
        .iter()
        .copied()
        .chain(std::iter::repeat(0))
        .take(integer_digits);
    for digit in digits {
        let digit = u64::from(digit);
        seconds = match seconds.checked_mul(10).and_then(|s| s.checked_add(digit)) {
            Some(s) => s,
            None => return Seconds::Huge,
        };
    }
    Seconds::At(seconds)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const NOW: u64 = 1_763_719_200;

    fn n(text: &str) -> Value {
        Value::N(text.to_owned())
    }

    #[test]
    fn the_ttl_services_rules() {
        let cases = [
            ("1763719200", Verdict::Expired),
            ("1763719199.999", Verdict::Expired),
            ("1763719200.5", Verdict::Expired),
            ("1763719201", Verdict::Later),
            ("1.763719201E9", Verdict::Later),
            ("1.7637192E+9", Verdict::Expired),
            ("17637192000", Verdict::Later),
            ("9.99E+125", Verdict::Later),
            ("-1", Verdict::Ignored),
            ("0", Verdict::Ignored),
            ("1E-5", Verdict::Ignored),
            ("1606039200", Verdict::Expired),
            ("1606039199", Verdict::Ignored),
            ("not a number", Verdict::Ignored),
        ];
        // 1606039200 is exactly five years of 365 days before NOW.
        assert_eq!(NOW - 1_606_039_200, MAX_PAST_SECONDS);
        for (text, expected) in cases {
            assert_eq!(verdict(Some(&n(text)), NOW), expected, "{text}");
        }
        assert_eq!(verdict(None, NOW), Verdict::Ignored);
        assert_eq!(verdict(Some(&Value::S("1".to_owned())), NOW), Verdict::Ignored);
    }

    proptest! {
        /// Against integer arithmetic on the same instant written in several ways.
        #[test]
        fn any_spelling_of_a_whole_second_agrees_with_integers(
            ttl in 0u64..4_000_000_000,
            now in 1_000_000_000u64..3_000_000_000,
            zeros in 0usize..3,
            fraction in proptest::option::of(1u32..1000),
        ) {
            let expected = if ttl > now {
                Verdict::Later
            } else if now - ttl > MAX_PAST_SECONDS {
                Verdict::Ignored
            } else {
                Verdict::Expired
            };
            let plain = match fraction {
                Some(f) => format!("{ttl}.{f:03}"),
                None => format!("{ttl}"),
            };
            let scientific = format!("{ttl}{}E-{zeros}", "0".repeat(zeros));
            prop_assert_eq!(verdict(Some(&n(&plain)), now), expected, "{}", plain);
            prop_assert_eq!(verdict(Some(&n(&scientific)), now), expected, "{}", scientific);
        }
    }
}
