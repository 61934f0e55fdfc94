//! For tests: an independent model of typed values, to check queries against
//! a filter over *decoded* values rather than over encoded strings.
//!
//! Pools of values per column type, each with its canonical form written
//! out by hand (what `decode` must give back), chosen around the prefix
//! boundaries that trip naive schemes: strings that are prefixes of each
//! other ("a", "ab", "a\0"), numbers whose digits are (1, 10, 100, 1.5, 15E-1),
//! the extremes of the number range, bytes 00 / 0000 / 0001. The order of
//! values and what a condition selects are computed here from the values
//! alone (numbers by their digits, strings by their bytes), never from CSS1.

use std::cmp::Ordering;

use crate::sortkey::{Column, ColumnType, Direction, Nulls, SortValue};

/// A value as a query or an item gives it, and its canonical decoded form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pooled {
    pub given: SortValue,
    pub canonical: SortValue,
}

fn same(v: SortValue) -> Pooled {
    Pooled {
        given: v.clone(),
        canonical: v,
    }
}

fn num(given: &str, canonical: &str) -> Pooled {
    Pooled {
        given: SortValue::N(given.to_owned()),
        canonical: SortValue::N(canonical.to_owned()),
    }
}

/// 9.9999999999999999999999999999999999999E+125 in plain digits.
fn largest() -> String {
    format!("{}{}", "9".repeat(38), "0".repeat(88))
}

/// 1E-130 in plain digits.
fn smallest() -> String {
    format!("0.{}1", "0".repeat(129))
}

fn numbers() -> Vec<Pooled> {
    let big = largest();
    let tiny = smallest();
    vec![
        num("0", "0"),
        num("-0", "0"),
        num("0.00", "0"),
        num("1", "1"),
        num("1.0", "1"),
        num("2", "2"),
        num("10", "10"),
        num("1E+1", "10"),
        num("11", "11"),
        num("100", "100"),
        num("1.5", "1.5"),
        num("15E-1", "1.5"),
        num("0.1", "0.1"),
        num("0.01", "0.01"),
        num("-1", "-1"),
        num("-10", "-10"),
        num("-1.5", "-1.5"),
        num("-0.01", "-0.01"),
        num("-100", "-100"),
        num("9.9999999999999999999999999999999999999E+125", &big),
        num("-9.9999999999999999999999999999999999999E+125", &format!("-{big}")),
        num("1E-130", &tiny),
        num("-1E-130", &format!("-{tiny}")),
    ]
}

/// Strings around prefix boundaries, the escaped characters and non-BMP ones;
/// their UTF-8 lengths cover every remainder of 8·len / 6.
pub(crate) const STRINGS: &[&str] = &[
    "",
    "a",
    "ab",
    "abc",
    "abd",
    "a\u{0}",
    "a\u{1}",
    "a\u{2}",
    "a\u{3}",
    "a b",
    "a\u{80}",
    "a\u{FFFF}",
    "b",
    "é",
    "éa",
    "éÿ",
    "😀",
    "😀a",
    "😀\u{10FFFF}",
    "\u{10FFFF}",
    "ab\u{80}",
    "ab\u{FFFF}",
    "abc\u{FFFF}",
    "~",
    "!",
];

fn strings() -> Vec<Pooled> {
    STRINGS.iter().map(|s| same(SortValue::S((*s).to_owned()))).collect()
}

fn bytes() -> Vec<Pooled> {
    let list: [&[u8]; 9] = [
        b"",
        b"\x00",
        b"\x00\x00",
        b"\x00\x01",
        b"\x01",
        b"\x7f",
        b"\xff",
        b"\xff\xff\xff",
        b"ab",
    ];
    list.iter().map(|b| same(SortValue::B(b.to_vec()))).collect()
}

const DATES: &[&str] = &["0000-01-01", "2024-02-28", "2024-02-29", "2024-03-01", "9999-12-31"];

/// (spelling, canonical UTC text).
const TIMESTAMPS: &[(&str, &str)] = &[
    ("2024-01-01T00:00:00Z", "2024-01-01T00:00:00.000000000Z"),
    ("2024-01-01T01:00:00+01:00", "2024-01-01T00:00:00.000000000Z"),
    ("2024-01-01T00:00:00.5Z", "2024-01-01T00:00:00.500000000Z"),
    ("2024-01-01T00:00:00.000000001Z", "2024-01-01T00:00:00.000000001Z"),
    ("2023-12-31T23:59:59.999999999Z", "2023-12-31T23:59:59.999999999Z"),
    ("2023-12-31T18:59:59.999999999-05:00", "2023-12-31T23:59:59.999999999Z"),
];

/// Values for a column of type `ty` (nulls not included). `as_item`: only
/// what an item attribute can carry into the column (DATE and TIMESTAMP
/// columns get S values; an ANY column no DATE or TIMESTAMP at all).
pub(crate) fn pool(ty: ColumnType, as_item: bool) -> Vec<Pooled> {
    let dates = |tagged: bool| -> Vec<Pooled> {
        DATES
            .iter()
            .map(|d| Pooled {
                given: if tagged {
                    SortValue::Date((*d).to_owned())
                } else {
                    SortValue::S((*d).to_owned())
                },
                canonical: SortValue::Date((*d).to_owned()),
            })
            .collect()
    };
    let timestamps = |tagged: bool| -> Vec<Pooled> {
        TIMESTAMPS
            .iter()
            .map(|(t, c)| Pooled {
                given: if tagged {
                    SortValue::Timestamp((*t).to_owned())
                } else {
                    SortValue::S((*t).to_owned())
                },
                canonical: SortValue::Timestamp((*c).to_owned()),
            })
            .collect()
    };
    match ty {
        ColumnType::S => strings(),
        ColumnType::N => numbers(),
        ColumnType::B => bytes(),
        ColumnType::Bool => vec![same(SortValue::Bool(false)), same(SortValue::Bool(true))],
        ColumnType::Date => dates(!as_item),
        ColumnType::Timestamp => timestamps(!as_item),
        ColumnType::Any => {
            let mut all = vec![same(SortValue::Bool(false)), same(SortValue::Bool(true))];
            all.extend(numbers());
            if !as_item {
                all.extend(dates(true));
                all.extend(timestamps(true));
            }
            all.extend(strings());
            all.extend(bytes());
            all
        }
    }
}

/// (sign, exponent of the first significant digit, significant digits) of
/// plain decimal text such as `-12.5` or `0.001`.
fn number_parts(text: &str) -> (i8, i64, Vec<u8>) {
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let digits: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
    let Some(first) = digits.iter().position(|&d| d != 0) else {
        return (0, 0, Vec::new());
    };
    let mut significant = digits[first..].to_vec();
    while significant.last() == Some(&0) {
        significant.pop();
    }
    let exponent = int.len() as i64 - 1 - first as i64;
    (if negative { -1 } else { 1 }, exponent, significant)
}

/// Numbers (plain decimal text) by value.
pub(crate) fn cmp_numbers(a: &str, b: &str) -> Ordering {
    let (sa, ea, da) = number_parts(a);
    let (sb, eb, db) = number_parts(b);
    let magnitude = || (ea, &da).cmp(&(eb, &db));
    match sa.cmp(&sb) {
        Ordering::Equal if sa > 0 => magnitude(),
        Ordering::Equal if sa < 0 => magnitude().reverse(),
        other => other,
    }
}

/// Two canonical values of one type by value; `None` when their types differ.
pub(crate) fn cmp_same_type(a: &SortValue, b: &SortValue) -> Option<Ordering> {
    Some(match (a, b) {
        (SortValue::Bool(x), SortValue::Bool(y)) => x.cmp(y),
        (SortValue::N(x), SortValue::N(y)) => cmp_numbers(x, y),
        // Canonical DATE and TIMESTAMP texts are fixed-width UTC.
        (SortValue::Date(x), SortValue::Date(y)) | (SortValue::Timestamp(x), SortValue::Timestamp(y)) => x.cmp(y),
        (SortValue::S(x), SortValue::S(y)) => x.as_bytes().cmp(y.as_bytes()),
        (SortValue::B(x), SortValue::B(y)) => x.cmp(y),
        _ => return None,
    })
}

/// The rank of a value's type in an ANY column.
fn rank(v: &SortValue) -> u8 {
    match v {
        SortValue::Null => 0,
        SortValue::Bool(_) => 1,
        SortValue::N(_) => 2,
        SortValue::Date(_) => 3,
        SortValue::Timestamp(_) => 4,
        SortValue::S(_) => 5,
        SortValue::B(_) => 6,
    }
}

/// Two canonical values of one column in the column's order (direction,
/// null placement, ANY's type order).
pub(crate) fn cmp_in_column(column: &Column, a: &SortValue, b: &SortValue) -> Ordering {
    let null_side = match column.nulls {
        Nulls::First => Ordering::Less,
        Nulls::Last => Ordering::Greater,
    };
    match (a == &SortValue::Null, b == &SortValue::Null) {
        (true, true) => Ordering::Equal,
        (true, false) => null_side,
        (false, true) => null_side.reverse(),
        (false, false) => {
            let o = rank(a)
                .cmp(&rank(b))
                .then_with(|| cmp_same_type(a, b).unwrap_or(Ordering::Equal));
            match column.direction {
                Direction::Asc => o,
                Direction::Desc => o.reverse(),
            }
        }
    }
}

/// Two tuples of canonical values in the columns' order.
pub(crate) fn cmp_tuples(columns: &[Column], a: &[SortValue], b: &[SortValue]) -> Ordering {
    columns
        .iter()
        .zip(a.iter().zip(b))
        .map(|(c, (x, y))| cmp_in_column(c, x, y))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// A condition in canonical values, as the oracle evaluates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expect {
    Lt(SortValue),
    Le(SortValue),
    Gt(SortValue),
    Ge(SortValue),
    Between(SortValue, SortValue),
    Begins(String),
}

/// Whether a decoded value satisfies a condition: ranges take only non-null
/// values of the bound's type, prefixes only strings.
pub(crate) fn satisfies(value: &SortValue, condition: &Expect) -> bool {
    let against = |bound: &SortValue, ok: fn(Ordering) -> bool| cmp_same_type(value, bound).is_some_and(ok);
    match condition {
        Expect::Lt(b) => against(b, Ordering::is_lt),
        Expect::Le(b) => against(b, Ordering::is_le),
        Expect::Gt(b) => against(b, Ordering::is_gt),
        Expect::Ge(b) => against(b, Ordering::is_ge),
        Expect::Between(a, b) => {
            let (low, high) = match cmp_same_type(a, b) {
                Some(Ordering::Greater) => (b, a),
                _ => (a, b),
            };
            against(low, Ordering::is_ge) && against(high, Ordering::is_le)
        }
        Expect::Begins(prefix) => matches!(value, SortValue::S(s) if s.starts_with(prefix.as_str())),
    }
}

#[test]
fn the_oracle_orders_numbers_by_value() {
    let order = [
        "-100", "-10", "-1.5", "-1", "-0.01", "0", "0.01", "0.1", "1", "1.5", "2", "10", "11", "100",
    ];
    for (i, a) in order.iter().enumerate() {
        for (j, b) in order.iter().enumerate() {
            assert_eq!(cmp_numbers(a, b), i.cmp(&j), "{a} vs {b}");
        }
    }
    assert_eq!(cmp_numbers(&largest(), "100"), Ordering::Greater);
    assert_eq!(cmp_numbers(&smallest(), "0"), Ordering::Greater);
    assert_eq!(cmp_numbers(&smallest(), "0.01"), Ordering::Less);
}
