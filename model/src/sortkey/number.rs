//! Exact decimal numbers: DynamoDB's N text ↔ sign, exponent and significant
//! digits. Integer arithmetic on the text only; no floating point anywhere.

use super::SortKeyError;

/// Most significant digits a DynamoDB number has.
pub(crate) const MAX_DIGITS: usize = 38;
/// Smallest scientific exponent (1E-130).
pub(crate) const MIN_EXP: i64 = -130;
/// Largest scientific exponent (9.99…E+125).
pub(crate) const MAX_EXP: i64 = 125;
/// EEE = e + BIAS.
pub(crate) const BIAS: i64 = 130;
/// Exponent text is accumulated up to this magnitude (anything larger is out of range anyway).
const EXP_CLAMP: i64 = 1_000_000_000_000_000;

/// A non-zero number ±d₁.d₂…dₖ × 10^e, borrowing its digits from the text:
/// the significant digits are `head` followed by `tail` (the text's integer
/// and fraction digits, without the `.` and without leading/trailing zeros).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decimal<'a> {
    pub neg: bool,
    /// e + 130, in 0..=255.
    pub eee: u8,
    pub head: &'a str,
    pub tail: &'a str,
}

impl Decimal<'_> {
    /// The scientific exponent e.
    pub fn exp(&self) -> i32 {
        i32::from(self.eee) - BIAS as i32
    }

    /// Copies the digit values (0..=9) into `buf`; returns how many.
    pub fn digits_into(&self, buf: &mut [u8; MAX_DIGITS]) -> usize {
        let mut k = 0;
        for (slot, b) in buf.iter_mut().zip(self.head.bytes().chain(self.tail.bytes())) {
            *slot = b - b'0';
            k += 1;
        }
        k
    }
}

fn not_a_number(text: &str) -> SortKeyError {
    SortKeyError::NotANumber { text: text.into() }
}

/// Parses DynamoDB number text: `[+-]digits[.digits][(e|E)[+-]digits]`, with
/// digits on at least one side of the `.`. `Ok(None)` is zero (of any
/// spelling: `-0`, `0.00`, `0E+5`).
pub(crate) fn parse(text: &str) -> Result<Option<Decimal<'_>>, SortKeyError> {
    let b = text.as_bytes();
    let n = b.len();
    let mut i = 0;
    let neg = match b.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    let int_start = i;
    while i < n && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_end = i;
    let (frac_start, frac_end) = if i < n && b[i] == b'.' {
        i += 1;
        let start = i;
        while i < n && b[i].is_ascii_digit() {
            i += 1;
        }
        (start, i)
    } else {
        (i, i)
    };
    if int_end == int_start && frac_end == frac_start {
        return Err(not_a_number(text));
    }
    let mut exp10: i64 = 0;
    if i < n && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        let exp_neg = match b.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let start = i;
        while i < n && b[i].is_ascii_digit() {
            exp10 = (exp10 * 10 + i64::from(b[i] - b'0')).min(EXP_CLAMP);
            i += 1;
        }
        if i == start {
            return Err(not_a_number(text));
        }
        if exp_neg {
            exp10 = -exp10;
        }
    }
    if i != n {
        return Err(not_a_number(text));
    }

    let int = &b[int_start..int_end];
    let frac = &b[frac_start..frac_end];
    let int_len = int.len();
    // z, t: positions of the first and last non-zero digit in int ++ frac.
    let z = match int.iter().position(|&d| d != b'0') {
        Some(p) => p,
        None => match frac.iter().position(|&d| d != b'0') {
            Some(p) => int_len + p,
            None => return Ok(None),
        },
    };
    let t = match frac.iter().rposition(|&d| d != b'0') {
        Some(p) => int_len + p,
        None => int.iter().rposition(|&d| d != b'0').unwrap_or(z),
    };
    let k = t + 1 - z;
    if k > MAX_DIGITS {
        return Err(SortKeyError::TooManyDigits {
            digits: k,
            text: text.into(),
        });
    }
    // The digit at int ++ frac position z has place value 10^(int_len - 1 - z).
    let exp = (int_len as i64 - 1 - z as i64).saturating_add(exp10);
    if !(MIN_EXP..=MAX_EXP).contains(&exp) {
        return Err(SortKeyError::NumberOutOfRange {
            exponent: exp,
            text: text.into(),
        });
    }
    let (head, tail) = if z < int_len {
        let head = (int_start + z)..(int_start + int_len.min(t + 1));
        let tail = if t >= int_len {
            frac_start..(frac_start + t + 1 - int_len)
        } else {
            frac_start..frac_start
        };
        (head, tail)
    } else {
        (
            (frac_start + z - int_len)..(frac_start + t + 1 - int_len),
            frac_end..frac_end,
        )
    };
    Ok(Some(Decimal {
        neg,
        eee: (exp + BIAS) as u8,
        head: text.get(head).unwrap_or_default(),
        tail: text.get(tail).unwrap_or_default(),
    }))
}

/// Canonical text of ±d₁.d₂…dₖ × 10^exp (`digits` are values 0..=9, non-empty,
/// no leading or trailing zero): plain positional notation, no exponent.
pub(crate) fn render(neg: bool, exp: i32, digits: &[u8]) -> String {
    let k = digits.len() as i64;
    let exp = i64::from(exp);
    let mut s = String::with_capacity(if exp >= 0 { (exp + 3).max(k + 2) } else { k - exp + 3 } as usize);
    if neg {
        s.push('-');
    }
    let digit = |d: &u8| char::from(b'0' + d);
    if exp >= 0 {
        let int_digits = exp + 1;
        if k <= int_digits {
            s.extend(digits.iter().map(digit));
            s.extend(std::iter::repeat_n('0', (int_digits - k) as usize));
        } else {
            let (int, frac) = digits.split_at(int_digits as usize);
            s.extend(int.iter().map(digit));
            s.push('.');
            s.extend(frac.iter().map(digit));
        }
    } else {
        s.push_str("0.");
        s.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
        s.extend(digits.iter().map(digit));
    }
    s
}

#[cfg(test)]
mod unit {
    use super::*;

    fn parts(text: &str) -> Option<(bool, i32, String)> {
        parse(text)
            .unwrap()
            .map(|d| (d.neg, d.exp(), format!("{}{}", d.head, d.tail)))
    }

    #[test]
    fn parses_spellings() {
        assert_eq!(parts("0"), None);
        assert_eq!(parts("-0"), None);
        assert_eq!(parts("0.00"), None);
        assert_eq!(parts("0E+5"), None);
        assert_eq!(parts("000.000e-99999999999999999999999"), None);
        assert_eq!(parts("1.50"), Some((false, 0, "15".into())));
        assert_eq!(parts("15E-1"), Some((false, 0, "15".into())));
        assert_eq!(parts("+0015.0e-1"), Some((false, 0, "15".into())));
        assert_eq!(parts("-100"), Some((true, 2, "1".into())));
        assert_eq!(parts(".09"), Some((false, -2, "9".into())));
        assert_eq!(parts("5."), Some((false, 0, "5".into())));
        assert_eq!(parts("10.01"), Some((false, 1, "1001".into())));
        assert_eq!(parts("0.0102"), Some((false, -2, "102".into())));
        assert_eq!(parts("1E-130"), Some((false, -130, "1".into())));
        assert_eq!(
            parts("1000000000000000000000000000000000000000000000"),
            Some((false, 45, "1".into()))
        );
    }

    #[test]
    fn rejects() {
        for bad in [
            "", "-", "+", ".", "e5", "1e", "1e+", "1.2.3", "NaN", "Infinity", "-inf", " 1", "1 ", "1_0", "0x10", "١",
        ] {
            assert!(matches!(parse(bad), Err(SortKeyError::NotANumber { .. })), "{bad:?}");
        }
        assert!(matches!(
            parse("123456789012345678901234567890123456789"),
            Err(SortKeyError::TooManyDigits { digits: 39, .. })
        ));
        assert!(matches!(
            parse("1E+126"),
            Err(SortKeyError::NumberOutOfRange { exponent: 126, .. })
        ));
        assert!(matches!(
            parse("0.1E-130"),
            Err(SortKeyError::NumberOutOfRange { exponent: -131, .. })
        ));
        assert!(matches!(
            parse("1E99999999999999999999999"),
            Err(SortKeyError::NumberOutOfRange { .. })
        ));
        assert!(parse("9.9999999999999999999999999999999999999E+125").is_ok());
    }

    #[test]
    fn renders() {
        assert_eq!(render(false, 0, &[1, 5]), "1.5");
        assert_eq!(render(true, 2, &[1]), "-100");
        assert_eq!(render(false, -3, &[1, 2]), "0.0012");
        assert_eq!(render(false, 1, &[4, 2]), "42");
        assert_eq!(render(false, 1, &[4, 2, 5]), "42.5");
    }
}
