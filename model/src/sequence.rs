//! Stream sequence numbers: decimal strings of up to 40 digits (longer in
//! practice is allowed), compared as numbers, exactly.

use std::cmp::Ordering;

/// Compares two sequence numbers (decimal strings of any length) as numbers.
/// The empty string is lowest (it stands for "the whole batch").
pub fn cmp(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// The lower of `current` and `new`, as numbers.
pub fn lowest(current: Option<String>, new: String) -> Option<String> {
    match current {
        Some(c) if cmp(&c, &new) != Ordering::Greater => Some(c),
        _ => Some(new),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sequence_numbers_compare_as_numbers() {
        assert_eq!(cmp("99", "100"), Ordering::Less);
        assert_eq!(cmp("0100", "100"), Ordering::Equal);
        assert_eq!(cmp("", "0"), Ordering::Equal);
        assert_eq!(cmp("", "1"), Ordering::Less);
        assert_eq!(cmp("123456789012345678901", "99999999999999999999"), Ordering::Greater);
        assert_eq!(lowest(Some("100".into()), "99".into()), Some("99".into()));
        assert_eq!(lowest(Some("99".into()), "100".into()), Some("99".into()));
    }

    proptest! {
        #[test]
        fn the_order_is_the_order_of_the_numbers(a in any::<u128>(), b in any::<u128>(), pad in 0usize..3) {
            let text = |n: u128| format!("{}{n}", "0".repeat(pad));
            prop_assert_eq!(cmp(&text(a), &b.to_string()), a.cmp(&b));
        }
    }
}
