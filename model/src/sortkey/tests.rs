//! The spec's vectors, strictness and error messages, and property tests
//! against an independent model of the value order.

use std::cmp::Ordering;

use proptest::prelude::*;
use proptest::sample::Index;

use super::*;

fn col(ty: ColumnType, direction: Direction) -> Column {
    Column::new(ty, direction)
}

fn n(text: &str) -> SortValue {
    SortValue::N(text.to_owned())
}

fn s(text: &str) -> SortValue {
    SortValue::S(text.to_owned())
}

/// The canonical form of a value as `decode` should give it back.
fn canonical(value: &SortValue) -> SortValue {
    match value {
        SortValue::N(text) => SortValue::N(canonical_number(text).unwrap()),
        SortValue::Timestamp(text) => SortValue::Timestamp(time::parse_timestamp(text).unwrap().to_text()),
        other => other.clone(),
    }
}

/// Checks a group of (tuple, key) vectors: every tuple encodes to its key
/// (through `Value`s too where it can), the keys are strictly ascending,
/// and each key decodes to the canonical tuple.
fn check_group(columns: &[Column], group: &[(Vec<SortValue>, &str)]) {
    let mut previous: Option<&str> = None;
    for (tuple, key) in group {
        assert_eq!(encode_sort_values(columns, tuple).as_deref(), Ok(*key), "{tuple:?}");
        let representable = tuple
            .iter()
            .all(|v| !matches!(v, SortValue::Date(_) | SortValue::Timestamp(_)));
        if representable {
            let values: Vec<Value> = tuple.iter().map(SortValue::to_value).collect();
            let refs: Vec<Option<&Value>> = values.iter().map(Some).collect();
            assert_eq!(encode(columns, &refs).as_deref(), Ok(*key), "{tuple:?}");
        }
        let expected: Vec<SortValue> = tuple.iter().map(canonical).collect();
        assert_eq!(decode(columns, key), Ok(expected), "{key:?}");
        if let Some(previous) = previous {
            assert!(previous < *key, "{previous:?} < {key:?}");
        }
        previous = Some(key);
    }
}

#[test]
fn vectors_single_any_column() {
    use SortValue::*;
    let max_negative = format!("<000{}~", "0".repeat(38));
    let big = "12345678901234567890123456789012345678";
    let big_key = format!(">167{big}!");
    let group: Vec<(Vec<SortValue>, &str)> = vec![
        (vec![Null], "!"),
        (vec![Bool(false)], "0"),
        (vec![Bool(true)], "1"),
        (vec![n("-9.9999999999999999999999999999999999999E+125")], &max_negative),
        (vec![n("-100")], "<1238~"),
        (vec![n("-42")], "<12457~"),
        (vec![n("-4.2")], "<12557~"),
        (vec![n("-4")], "<1255~"),
        (vec![n("-1E-130")], "<2558~"),
        (vec![n("0")], "="),
        (vec![n("1E-130")], ">0001!"),
        (vec![n("0.09")], ">1289!"),
        (vec![n("0.1")], ">1291!"),
        (vec![n("4")], ">1304!"),
        (vec![n("4.2")], ">13042!"),
        (vec![n("10")], ">1311!"),
        (vec![n("1E+2")], ">1321!"),
        (vec![n(big)], &big_key),
        (vec![Date("2024-02-29".into())], "D2024-02-29"),
        (
            vec![Timestamp("2024-01-01T01:00:00+01:00".into())],
            "I2024-01-01T00:00:00.000000000Z",
        ),
        (
            vec![Timestamp("2024-01-01T00:00:00.5Z".into())],
            "I2024-01-01T00:00:00.500000000Z",
        ),
        (vec![s("")], "S\u{1}"),
        (vec![s("\u{0}")], "S\u{2}\u{1}\u{1}"),
        (vec![s("A")], "SA\u{1}"),
        (vec![s("a")], "Sa\u{1}"),
        (vec![s("a b")], "Sa b\u{1}"),
        (vec![s("ab")], "Sab\u{1}"),
        (vec![s("é")], "Sé\u{1}"),
        (vec![s("\u{FF61}")], "S\u{FF61}\u{1}"),
        (vec![s("😀")], "S😀\u{1}"),
        (vec![B(vec![])], "X!"),
        (vec![B(vec![0x00])], "X--!"),
        (vec![B(vec![0x00, 0x01])], "X--3!"),
        (vec![B(vec![0xFF])], "Xzk!"),
    ];
    check_group(&[col(ColumnType::Any, Direction::Asc)], &group);
    // 100 in another spelling, and the other zero spellings.
    let any = col(ColumnType::Any, Direction::Asc);
    for (text, key) in [
        ("100", ">1321!"),
        ("-0", "="),
        ("0.00", "="),
        ("0E+5", "="),
        ("1.50", ">13015!"),
        ("15E-1", ">13015!"),
    ] {
        let mut out = String::new();
        encode_value(&any, Some(&Value::N(text.into())), &mut out).unwrap();
        assert_eq!(out, key, "{text}");
    }
}

#[test]
fn vectors_two_columns() {
    let columns = [col(ColumnType::S, Direction::Asc), col(ColumnType::N, Direction::Asc)];
    let group: Vec<(Vec<SortValue>, &str)> = vec![
        (vec![s("a"), n("-1")], "Sa\u{1}<1258~"),
        (vec![s("a"), n("9")], "Sa\u{1}>1309!"),
        (vec![s("a"), n("10")], "Sa\u{1}>1311!"),
        (vec![s("a\u{0}"), n("-5")], "Sa\u{2}\u{1}\u{1}<1254~"),
        (vec![s("a b"), n("0")], "Sa b\u{1}="),
        (vec![s("ab"), SortValue::Null], "Sab\u{1}!"),
        (vec![s("ab"), n("-1")], "Sab\u{1}<1258~"),
        (vec![s("ab"), n("2")], "Sab\u{1}>1302!"),
        (vec![s("abc"), n("1")], "Sabc\u{1}>1301!"),
    ];
    check_group(&columns, &group);
}

#[test]
fn vectors_n_desc_nulls_last() {
    let columns = [col(ColumnType::N, Direction::Desc).with_nulls(Nulls::Last)];
    let group: Vec<(Vec<SortValue>, &str)> = vec![
        (vec![n("100")], "anlmn~"),
        (vec![n("42")], "anlnkm~"),
        (vec![n("4.2")], "anlokm~"),
        (vec![n("0")], "b"),
        (vec![n("-1E-130")], "cmjjg!"),
        (vec![n("-4")], "cnmjj!"),
        (vec![SortValue::Null], "~"),
    ];
    check_group(&columns, &group);
}

#[test]
fn vectors_s_desc() {
    let columns = [col(ColumnType::S, Direction::Desc)];
    let group: Vec<(Vec<SortValue>, &str)> = vec![
        (vec![s("b")], "LQI~"),
        (vec![s("ab")], "LQSh~"),
        (vec![s("a\u{0}")], "LQYr~"),
        (vec![s("a")], "LQY~"),
        (vec![s("")], "L~"),
    ];
    check_group(&columns, &group);
}

#[test]
fn typed_columns_and_nulls() {
    let f = |ty, dir, nulls, v: Option<&Value>| {
        let mut out = String::new();
        encode_value(&col(ty, dir).with_nulls(nulls), v, &mut out).map(|()| out)
    };
    use ColumnType::*;
    use Direction::*;
    use Nulls::*;
    assert_eq!(f(N, Asc, First, None).unwrap(), "!");
    assert_eq!(f(N, Asc, Last, Some(&Value::Null(true))).unwrap(), "~");
    assert_eq!(f(S, Desc, First, None).unwrap(), "!");
    assert_eq!(f(Bool, Desc, Last, Some(&Value::Bool(true))).unwrap(), "n");
    assert_eq!(
        f(Date, Asc, First, Some(&Value::S("2024-02-29".into()))).unwrap(),
        "D2024-02-29"
    );
    assert_eq!(
        f(Date, Desc, First, Some(&Value::S("2024-02-29".into()))).unwrap(),
        "[momkromrmf"
    );
    assert_eq!(
        f(
            Timestamp,
            Asc,
            First,
            Some(&Value::S("2024-01-01T01:00:00+01:00".into()))
        )
        .unwrap(),
        "I2024-01-01T00:00:00.000000000Z"
    );
    assert_eq!(f(B, Desc, Last, Some(&Value::B(vec![0xFF]))).unwrap(), "G%4~");
}

#[test]
fn type_errors_name_both_types() {
    let err = |ty, v: &Value| {
        let mut out = String::from("kept");
        let e = encode_value(&col(ty, Direction::Asc), Some(v), &mut out).unwrap_err();
        assert_eq!(out, "kept");
        e.to_string()
    };
    assert_eq!(err(ColumnType::N, &Value::S("x".into())), "expects N or NULL, got S");
    assert_eq!(err(ColumnType::S, &Value::N("1".into())), "expects S or NULL, got N");
    assert_eq!(err(ColumnType::Bool, &Value::B(vec![])), "expects BOOL or NULL, got B");
    assert_eq!(
        err(ColumnType::Date, &Value::N("1".into())),
        "expects S (a DATE, YYYY-MM-DD) or NULL, got N"
    );
    assert_eq!(
        err(ColumnType::Any, &Value::L(vec![])),
        "expects a scalar (S, N, B, BOOL or NULL), got L"
    );
    assert_eq!(
        err(ColumnType::Any, &Value::M(Default::default())),
        "expects a scalar (S, N, B, BOOL or NULL), got M"
    );
    assert_eq!(
        err(ColumnType::Any, &Value::Ss(vec![])),
        "expects a scalar (S, N, B, BOOL or NULL), got SS"
    );
    assert_eq!(
        err(ColumnType::Date, &Value::S("2023-02-29".into())),
        "not a DATE (YYYY-MM-DD): `2023-02-29`: day 29 does not exist in 2023-02"
    );
    assert_eq!(
        err(ColumnType::Timestamp, &Value::S("2024-01-01T00:00:60Z".into())),
        "not a TIMESTAMP (RFC 3339 with an offset): `2024-01-01T00:00:60Z`: leap second :60 is not supported"
    );
    let columns = [col(ColumnType::S, Direction::Asc), col(ColumnType::N, Direction::Asc)];
    let (a, b) = (Value::S("a".into()), Value::S("b".into()));
    let e = encode(&columns, &[Some(&a), Some(&b)]).unwrap_err();
    assert_eq!(e.to_string(), "column 2: expects N or NULL, got S");
    assert!(e.is_type_mismatch());
    assert_eq!(
        encode(&columns, &[Some(&a)]).unwrap_err().to_string(),
        "schema has 2 column(s) but 1 value(s) were given"
    );
}

#[test]
fn number_errors() {
    let digits39 = "123456789012345678901234567890123456789";
    assert_eq!(
        canonical_number(digits39).unwrap_err().to_string(),
        format!("number has 39 significant digits (max 38): `{digits39}`")
    );
    assert_eq!(
        canonical_number("1E+126").unwrap_err().to_string(),
        "number is out of range (exponent 126 is outside -130..125; magnitudes run from 1E-130 to 9.99…E+125): `1E+126`"
    );
    assert_eq!(canonical_number("NaN").unwrap_err().to_string(), "not a number: `NaN`");
    assert_eq!(canonical_number("1.50").unwrap(), "1.5");
    assert_eq!(canonical_number("15E-1").unwrap(), "1.5");
    assert_eq!(canonical_number("-0").unwrap(), "0");
    assert_eq!(canonical_number("1E+2").unwrap(), "100");
    assert_eq!(canonical_number("-.0012e1").unwrap(), "-0.012");
    assert_eq!(canonical_number("1E-130").unwrap(), format!("0.{}1", "0".repeat(129)));
    assert!(is_number("9.9999999999999999999999999999999999999E+125"));
    assert!(!is_number("1e"));
}

#[test]
fn length_limits() {
    let columns = [col(ColumnType::S, Direction::Asc)];
    let long = Value::S("x".repeat(1098));
    let e = encode(&columns, &[Some(&long)]).unwrap_err();
    assert_eq!(e.to_string(), "key is 1100 bytes, over the 1024-byte limit");
    assert!(e.is_length());
    let fits = Value::S("x".repeat(1022));
    assert_eq!(encode(&columns, &[Some(&fits)]).unwrap().len(), 1024);
    assert_eq!(check_length(""), Err(SortKeyError::EmptyKey));
    assert_eq!(encode(&[], &[]), Err(SortKeyError::EmptyKey));
    assert_eq!(
        decode(&columns, &format!("S{}\u{1}", "x".repeat(1023))),
        Err(SortKeyError::KeyTooLong { bytes: 1025 })
    );
}

#[test]
fn decode_is_strict() {
    use ColumnType::*;
    use Direction::*;
    let err = |column: Column, key: &str| decode(&[column], key).unwrap_err().to_string();
    let any = col(Any, Asc);
    let too_many = format!(">130{}!", "1".repeat(39));
    let cases: Vec<(Column, &str, &str)> = vec![
        (any, "", "key is empty"),
        (
            any,
            ">13004!",
            "byte 4 (column 1): the number's digits start with a zero",
        ),
        (any, ">13040!", "byte 5 (column 1): the number's digits end with a zero"),
        (any, ">2561!", "byte 1 (column 1): exponent field 256 is over 255"),
        (
            any,
            "<12599~",
            "byte 4 (column 1): the number's digits start with a zero",
        ),
        (any, "<12589~", "byte 5 (column 1): the number's digits end with a zero"),
        (any, ">130!", "byte 4 (column 1): found '!' where a digit was expected"),
        (
            any,
            ">1304",
            "byte 5 (column 1): the key ends where a digit or the number's terminator was expected",
        ),
        (
            any,
            ">13",
            "byte 3 (column 1): the key ends where an exponent digit was expected",
        ),
        (any, &too_many, "byte 42 (column 1): the number has more than 38 digits"),
        (
            any,
            "X-!",
            "byte 1 (column 1): 1 base64 characters is an impossible length",
        ),
        (
            any,
            "X-0!",
            "byte 2 (column 1): non-zero padding bits in the last base64 character",
        ),
        (
            any,
            "X--=!",
            "byte 3 (column 1): found '=' where a base64 character or the terminator was expected",
        ),
        (
            any,
            "Sa\u{0}b\u{1}",
            "byte 2 (column 1): raw U+0000 inside a string (it is written U+0002 U+0001)",
        ),
        (
            any,
            "Sab\u{2}x\u{1}",
            "byte 3 (column 1): unknown escape: U+0002 followed by 'x'",
        ),
        (
            any,
            "Sab\u{2}",
            "byte 3 (column 1): unknown escape: U+0002 followed by the end of the key",
        ),
        (
            any,
            "Sab",
            "byte 3 (column 1): the key ends where the string terminator U+0001 was expected",
        ),
        (any, "1x", "byte 1: trailing characters after the last column"),
        (
            any,
            "~",
            "byte 0 (column 1): '~' is a null placed last, but this column puts nulls first",
        ),
        (
            col(N, Desc),
            "!",
            "byte 0 (column 1): '!' is a null placed first, but this column puts nulls last",
        ),
        (
            any,
            "?",
            "byte 0 (column 1): found '?' where a type tag or the column's null was expected",
        ),
        (
            col(N, Asc),
            "Sa\u{1}",
            "byte 0 (column 1): found 'S' where an N value or the column's null was expected",
        ),
        (
            any,
            "D2023-02-29",
            "byte 1 (column 1): invalid DATE: day 29 does not exist in 2023-02",
        ),
        (
            any,
            "D2023-02",
            "byte 8 (column 1): the key ends where a DATE character was expected",
        ),
        (
            any,
            "I2024-01-01t00:00:00.000000000Z",
            "byte 1 (column 1): invalid TIMESTAMP: not in the form YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ",
        ),
        (
            any,
            "I2024-01-01T00:00:60.000000000Z",
            "byte 1 (column 1): invalid TIMESTAMP: leap second :60 is not supported",
        ),
        (
            col(S, Desc),
            "L\u{1}~",
            "byte 1 (column 1): found '\\u{1}' where a base64 character or the terminator was expected",
        ),
        (
            col(S, Desc),
            "L%4~",
            "byte 1 (column 1): the string's bytes are not valid UTF-8",
        ),
        (
            col(S, Desc),
            "LQY",
            "byte 3 (column 1): the key ends where a base64 character or the terminator was expected",
        ),
    ];
    for (column, key, message) in cases {
        assert_eq!(err(column, key), message, "{key:?}");
    }
    // Column numbers in multi-column keys.
    let columns = [col(S, Asc), col(N, Asc)];
    assert_eq!(
        decode(&columns, "Sa\u{1}>13").unwrap_err().to_string(),
        "byte 6 (column 2): the key ends where an exponent digit was expected"
    );
}

#[test]
fn decoded_values_print_as_dynamodb_values() {
    assert_eq!(SortValue::Timestamp("x".into()).to_value(), Value::S("x".into()));
    assert_eq!(SortValue::Date("x".into()).to_value(), Value::S("x".into()));
    assert_eq!(SortValue::Null.to_value(), Value::Null(true));
    assert_eq!(n("4.2").to_value(), Value::N("4.2".into()));
}

#[test]
fn sort_values_fit_their_columns() {
    let mut out = String::new();
    let date = col(ColumnType::Date, Direction::Asc);
    assert!(encode_sort_value(&date, &s("2024-01-01"), &mut out).is_ok());
    assert_eq!(
        encode_sort_value(&date, &n("1"), &mut out).unwrap_err().to_string(),
        "expects DATE, S or NULL, got N"
    );
    assert_eq!(
        encode_sort_value(
            &col(ColumnType::S, Direction::Asc),
            &SortValue::Date("2024-01-01".into()),
            &mut out
        )
        .unwrap_err()
        .to_string(),
        "expects S or NULL, got DATE"
    );
}

// ---------------------------------------------------------------------------
// An independent model of values and their order.

/// ±0.d₁d₂…dₖ × 10^(exp+1); `sign` 0 is zero (no digits).
#[derive(Debug, Clone, PartialEq, Eq)]
struct NumKey {
    sign: i8,
    exp: i32,
    digits: Vec<u8>,
}

impl NumKey {
    fn cmp(&self, other: &NumKey) -> Ordering {
        let magnitude = || (self.exp, &self.digits).cmp(&(other.exp, &other.digits));
        match self.sign.cmp(&other.sign) {
            Ordering::Equal if self.sign > 0 => magnitude(),
            Ordering::Equal if self.sign < 0 => magnitude().reverse(),
            o => o,
        }
    }

    /// Plain positional text, built with string operations.
    fn canonical(&self) -> String {
        if self.sign == 0 {
            return "0".into();
        }
        let d: String = self.digits.iter().map(|d| char::from(b'0' + d)).collect();
        let k = d.len() as i32;
        let body = if self.exp >= 0 {
            if k <= self.exp + 1 {
                format!("{d}{}", "0".repeat((self.exp + 1 - k) as usize))
            } else {
                format!("{}.{}", &d[..(self.exp + 1) as usize], &d[(self.exp + 1) as usize..])
            }
        } else {
            format!("0.{}{d}", "0".repeat((-self.exp - 1) as usize))
        };
        if self.sign < 0 {
            format!("-{body}")
        } else {
            body
        }
    }
}

fn num_key() -> impl Strategy<Value = NumKey> {
    let digits = prop_oneof![
        prop::collection::vec(0u8..=9, 1..=38),
        prop::collection::vec(prop::sample::select(vec![0u8, 1, 9]), 1..=4),
    ]
    .prop_map(|mut d| {
        if d[0] == 0 {
            d[0] = 1;
        }
        let last = d.len() - 1;
        if d[last] == 0 {
            d[last] = 9;
        }
        d
    });
    let exp = prop_oneof![-130i32..=125, -2i32..=2, Just(-130), Just(125)];
    prop_oneof![
        1 => Just(NumKey { sign: 0, exp: 0, digits: vec![] }),
        8 => (prop_oneof![Just(-1i8), Just(1i8)], exp, digits).prop_map(|(sign, exp, digits)| NumKey { sign, exp, digits }),
    ]
}

/// A random spelling of `key`: leading and trailing zeros, a moved decimal
/// point, `e`/`E`, explicit signs, exponent zeros.
fn spell(key: NumKey) -> impl Strategy<Value = String> {
    (
        (0usize..3, 0usize..3, any::<Index>(), any::<bool>()),
        (prop::sample::select(vec!['e', 'E']), any::<bool>(), 0usize..3),
        (any::<bool>(), any::<bool>(), -200i64..200),
    )
        .prop_map(
            move |((a, b, point, force_exp), (marker, plus_exp, exp_zeros), (plus, trailing_point, zero_exp))| {
                let (w, x, sign) = if key.sign == 0 {
                    ("0".repeat(1 + a), zero_exp, if plus { "-" } else { "" })
                } else {
                    let d: String = key.digits.iter().map(|d| char::from(b'0' + d)).collect();
                    let w = format!("{}{d}{}", "0".repeat(a), "0".repeat(b));
                    let sign = if key.sign < 0 {
                        "-"
                    } else if plus {
                        "+"
                    } else {
                        ""
                    };
                    (w, 0, sign)
                };
                let p = point.index(w.len() + 1);
                let x = if key.sign == 0 {
                    x
                } else {
                    i64::from(key.exp) + 1 - p as i64 + a as i64
                };
                let mut text = format!("{sign}{}", &w[..p]);
                if p < w.len() || trailing_point {
                    text.push('.');
                }
                text.push_str(&w[p..]);
                if x != 0 || force_exp {
                    text.push(marker);
                    if x < 0 {
                        text.push('-');
                    } else if plus_exp {
                        text.push('+');
                    }
                    text.push_str(&"0".repeat(exp_zeros));
                    text.push_str(&x.abs().to_string());
                }
                text
            },
        )
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn month_lengths(y: i64) -> [i64; 12] {
    [
        31,
        if is_leap(y) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ]
}

/// Days since 0000-01-01, by counting.
fn naive_days(y: i64, m: u32, d: u32) -> i64 {
    let years: i64 = (0..y).map(|y| if is_leap(y) { 366 } else { 365 }).sum();
    let months: i64 = month_lengths(y)[..(m - 1) as usize].iter().sum();
    years + months + i64::from(d) - 1
}

/// The date `days` after 0000-01-01, by counting.
fn naive_civil(mut days: i64) -> (i64, u32, u32) {
    let mut y = 0;
    loop {
        let len = if is_leap(y) { 366 } else { 365 };
        if days < len {
            break;
        }
        days -= len;
        y += 1;
    }
    let mut m = 0;
    for len in month_lengths(y) {
        if days < len {
            break;
        }
        days -= len;
        m += 1;
    }
    (y, m + 1, days as u32 + 1)
}

/// Seconds since 0000-01-01T00:00:00Z of a canonical timestamp text.
fn naive_instant(text: &str) -> (i64, u32) {
    let f = |r: std::ops::Range<usize>| text[r].parse::<i64>().unwrap();
    let days = naive_days(f(0..4), f(5..7) as u32, f(8..10) as u32);
    (
        days * 86400 + f(11..13) * 3600 + f(14..16) * 60 + f(17..19),
        f(20..29) as u32,
    )
}

/// A test value: what goes in, plus what the independent comparator needs.
#[derive(Debug, Clone)]
enum TV {
    Missing,
    Null,
    Bool(bool),
    Num(NumKey, String),
    Date((u32, u32, u32)),
    /// (seconds since 0000-01-01Z, nanos), spelled text.
    Ts((i64, u32), String),
    S(String),
    B(Vec<u8>),
}

impl TV {
    fn is_null(&self) -> bool {
        matches!(self, TV::Missing | TV::Null)
    }

    fn rank(&self) -> u8 {
        match self {
            TV::Missing | TV::Null => 0,
            TV::Bool(_) => 1,
            TV::Num(..) => 2,
            TV::Date(_) => 3,
            TV::Ts(..) => 4,
            TV::S(_) => 5,
            TV::B(_) => 6,
        }
    }

    fn date_text(ymd: (u32, u32, u32)) -> String {
        format!("{:04}-{:02}-{:02}", ymd.0, ymd.1, ymd.2)
    }

    /// The DynamoDB value for `column`, if there is one (DATE/TIMESTAMP in an ANY column have none).
    fn value(&self, column: &Column) -> Option<Option<Value>> {
        Some(match self {
            TV::Missing => None,
            TV::Null => Some(Value::Null(true)),
            TV::Bool(b) => Some(Value::Bool(*b)),
            TV::Num(_, text) => Some(Value::N(text.clone())),
            TV::S(s) => Some(Value::S(s.clone())),
            TV::B(b) => Some(Value::B(b.clone())),
            TV::Date(ymd) if column.ty == ColumnType::Date => Some(Value::S(Self::date_text(*ymd))),
            TV::Ts(_, text) if column.ty == ColumnType::Timestamp => Some(Value::S(text.clone())),
            TV::Date(_) | TV::Ts(..) => return None,
        })
    }

    fn encode(&self, column: &Column, out: &mut String) -> Result<(), SortKeyError> {
        match (self.value(column), self) {
            (Some(value), _) => encode_value(column, value.as_ref(), out),
            (None, TV::Date(ymd)) => encode_sort_value(column, &SortValue::Date(Self::date_text(*ymd)), out),
            (None, TV::Ts(_, text)) => encode_sort_value(column, &SortValue::Timestamp(text.clone()), out),
            (None, _) => unreachable!(),
        }
    }

    /// Whether `decoded` is this value's canonical form.
    fn decoded_as(&self, decoded: &SortValue) -> bool {
        match (self, decoded) {
            (TV::Missing | TV::Null, SortValue::Null) => true,
            (TV::Bool(a), SortValue::Bool(b)) => a == b,
            (TV::Num(key, _), SortValue::N(text)) => key.canonical() == *text,
            (TV::Date(ymd), SortValue::Date(text)) => Self::date_text(*ymd) == *text,
            (TV::Ts(instant, _), SortValue::Timestamp(text)) => naive_instant(text) == *instant,
            (TV::S(a), SortValue::S(b)) => a == b,
            (TV::B(a), SortValue::B(b)) => a == b,
            _ => false,
        }
    }
}

/// The order of two values of one column, from the model alone.
fn cmp_elem(column: &Column, a: &TV, b: &TV) -> Ordering {
    let null_side = if column.nulls == Nulls::First {
        Ordering::Less
    } else {
        Ordering::Greater
    };
    match (a.is_null(), b.is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) => null_side,
        (false, true) => null_side.reverse(),
        (false, false) => {
            let o = a.rank().cmp(&b.rank()).then_with(|| match (a, b) {
                (TV::Bool(x), TV::Bool(y)) => x.cmp(y),
                (TV::Num(x, _), TV::Num(y, _)) => x.cmp(y),
                (TV::Date(x), TV::Date(y)) => x.cmp(y),
                (TV::Ts(x, _), TV::Ts(y, _)) => x.cmp(y),
                (TV::S(x), TV::S(y)) => x.as_bytes().cmp(y.as_bytes()),
                (TV::B(x), TV::B(y)) => x.cmp(y),
                _ => Ordering::Equal,
            });
            if column.direction == Direction::Desc {
                o.reverse()
            } else {
                o
            }
        }
    }
}

fn cmp_tuple(columns: &[Column], a: &[TV], b: &[TV]) -> Ordering {
    columns
        .iter()
        .zip(a.iter().zip(b))
        .map(|(c, (x, y))| cmp_elem(c, x, y))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

fn key_of(columns: &[Column], tuple: &[TV]) -> String {
    let mut out = String::new();
    for (c, v) in columns.iter().zip(tuple) {
        v.encode(c, &mut out).unwrap_or_else(|e| panic!("{v:?} in {c:?}: {e}"));
    }
    check_length(&out).unwrap();
    out
}

fn column() -> impl Strategy<Value = Column> {
    let ty = prop::sample::select(ColumnType::ALL.to_vec());
    let direction = prop_oneof![Just(Direction::Asc), Just(Direction::Desc)];
    let nulls = prop_oneof![Just(Nulls::First), Just(Nulls::Last)];
    (ty, direction, nulls).prop_map(|(ty, direction, nulls)| Column { ty, direction, nulls })
}

fn schema(max: usize) -> impl Strategy<Value = Vec<Column>> {
    prop::collection::vec(column(), 1..=max)
}

fn string() -> impl Strategy<Value = String> {
    let c = prop_oneof![
        4 => proptest::char::range('\u{0}', '\u{3}'),
        3 => proptest::char::range('a', 'c'),
        1 => proptest::char::range('\u{10000}', '\u{10FFFF}'),
        1 => proptest::char::range('\u{FF00}', '\u{FFFF}'),
        1 => any::<char>(),
    ];
    prop::collection::vec(c, 0..6).prop_map(|cs| cs.into_iter().collect())
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    let b = prop_oneof![prop::sample::select(vec![0u8, 1, 2, 0x7F, 0x80, 0xFF]), any::<u8>()];
    prop::collection::vec(b, 0..6)
}

fn date() -> impl Strategy<Value = (u32, u32, u32)> {
    let year = prop_oneof![0u32..=9999, 1999u32..=2001, Just(0), Just(9999)];
    (year, 1u32..=12, 1u32..=31)
        .prop_map(|(y, m, d)| (y, m, d.min(month_lengths(i64::from(y))[(m - 1) as usize] as u32)))
}

/// A timestamp spelling of `instant` at a random offset.
fn ts_text(instant: (i64, u32)) -> impl Strategy<Value = String> {
    let offset = prop_oneof![
        Just(0i64),
        -(23 * 60 + 59)..=(23i64 * 60 + 59),
        prop::sample::select(vec![-60i64, 60, 330])
    ];
    let zero = prop::sample::select(vec!["Z", "z", "+00:00", "-00:00"]);
    (offset, 0usize..=3, any::<bool>(), zero, any::<Index>()).prop_map(
        move |(offset, extra_zeros, lower_t, zero_style, digits_choice)| {
            let (secs, nanos) = instant;
            let local = secs + offset * 60;
            let (y, m, d) = naive_civil(local.div_euclid(86400));
            let tod = local.rem_euclid(86400);
            let t = if lower_t { 't' } else { 'T' };
            let mut text = format!(
                "{y:04}-{m:02}-{d:02}{t}{:02}:{:02}:{:02}",
                tod / 3600,
                tod / 60 % 60,
                tod % 60
            );
            let nine = format!("{nanos:09}");
            let needed = nine.trim_end_matches('0').len();
            let count = needed + digits_choice.index(9 - needed + 1);
            if count > 0 {
                text.push('.');
                text.push_str(&nine[..count]);
                if count == 9 {
                    text.push_str(&"0".repeat(extra_zeros));
                }
            } else if extra_zeros > 0 {
                text.push('.');
                text.push_str(&"0".repeat(extra_zeros));
            }
            if offset == 0 {
                text.push_str(zero_style);
            } else {
                let o = offset.abs();
                text.push_str(&format!(
                    "{}{:02}:{:02}",
                    if offset < 0 { '-' } else { '+' },
                    o / 60,
                    o % 60
                ));
            }
            text
        },
    )
}

fn instant() -> impl Strategy<Value = (i64, u32)> {
    let lo = naive_days(1, 1, 2) * 86400;
    let hi = naive_days(9998, 12, 30) * 86400;
    let near = naive_days(2024, 1, 1) * 86400;
    let secs = prop_oneof![lo..hi, near..near + 3, Just(lo), Just(hi)];
    let nanos = prop_oneof![
        Just(0u32),
        0u32..1_000_000_000,
        prop::sample::select(vec![1u32, 500_000_000, 999_999_999])
    ];
    (secs, nanos)
}

fn timestamp() -> impl Strategy<Value = TV> {
    instant().prop_flat_map(|i| ts_text(i).prop_map(move |text| TV::Ts(i, text)))
}

fn number() -> impl Strategy<Value = TV> {
    num_key().prop_flat_map(|k| spell(k.clone()).prop_map(move |text| TV::Num(k.clone(), text)))
}

/// A value for a column of type `ty`; `representable` leaves out what a
/// DynamoDB value cannot carry into the column (DATE/TIMESTAMP in ANY).
fn value(ty: ColumnType, representable: bool) -> BoxedStrategy<TV> {
    let typed = match ty {
        ColumnType::S => string().prop_map(TV::S).boxed(),
        ColumnType::N => number().boxed(),
        ColumnType::B => bytes().prop_map(TV::B).boxed(),
        ColumnType::Bool => any::<bool>().prop_map(TV::Bool).boxed(),
        ColumnType::Date => date().prop_map(TV::Date).boxed(),
        ColumnType::Timestamp => timestamp().boxed(),
        ColumnType::Any if representable => prop_oneof![
            any::<bool>().prop_map(TV::Bool),
            number(),
            string().prop_map(TV::S),
            bytes().prop_map(TV::B),
        ]
        .boxed(),
        ColumnType::Any => prop_oneof![
            any::<bool>().prop_map(TV::Bool),
            number(),
            date().prop_map(TV::Date),
            timestamp(),
            string().prop_map(TV::S),
            bytes().prop_map(TV::B),
        ]
        .boxed(),
    };
    prop_oneof![1 => Just(TV::Missing), 1 => Just(TV::Null), 10 => typed].boxed()
}

/// The same value in another spelling (numbers, timestamps), else itself.
fn respell(v: TV) -> BoxedStrategy<TV> {
    match v {
        TV::Num(k, _) => spell(k.clone()).prop_map(move |text| TV::Num(k.clone(), text)).boxed(),
        TV::Ts(i, _) => ts_text(i).prop_map(move |text| TV::Ts(i, text)).boxed(),
        TV::Null => Just(TV::Missing).boxed(),
        TV::Missing => Just(TV::Null).boxed(),
        other => Just(other).boxed(),
    }
}

fn tuple(columns: &[Column], representable: bool) -> BoxedStrategy<Vec<TV>> {
    columns
        .iter()
        .map(|c| value(c.ty, representable))
        .collect::<Vec<_>>()
        .boxed()
}

/// A tuple that often shares values (respelled) with `base`.
fn nearby(columns: &[Column], base: Vec<TV>) -> BoxedStrategy<Vec<TV>> {
    columns
        .iter()
        .zip(base)
        .map(|(c, v)| prop_oneof![2 => respell(v), 1 => value(c.ty, false)].boxed())
        .collect::<Vec<_>>()
        .boxed()
}

fn schema_and_pair() -> impl Strategy<Value = (Vec<Column>, Vec<TV>, Vec<TV>)> {
    schema(3).prop_flat_map(|columns| {
        let c = columns.clone();
        tuple(&columns, false).prop_flat_map(move |a| {
            let (c, a2) = (c.clone(), a.clone());
            nearby(&c, a).prop_map(move |b| (c.clone(), a2.clone(), b))
        })
    })
}

fn schema_and_tuple() -> impl Strategy<Value = (Vec<Column>, Vec<TV>)> {
    schema(3).prop_flat_map(|columns| {
        let c = columns.clone();
        tuple(&columns, false).prop_map(move |t| (c.clone(), t))
    })
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete(Index),
    Insert(Index, char),
    Replace(Index, char),
    Truncate(Index),
}

fn key_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => prop::sample::select("!~0123456789<=>DISX-_:.TZ[Vbcaonmlk\u{0}\u{1}\u{2}\u{3}\u{7f}".chars().collect::<Vec<_>>()),
        2 => proptest::char::range('\u{0}', '\u{7f}'),
        1 => any::<char>(),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<Index>().prop_map(Mutation::Delete),
        (any::<Index>(), key_char()).prop_map(|(i, c)| Mutation::Insert(i, c)),
        (any::<Index>(), key_char()).prop_map(|(i, c)| Mutation::Replace(i, c)),
        any::<Index>().prop_map(Mutation::Truncate),
    ]
}

fn mutate(key: &str, mutations: &[Mutation]) -> String {
    let mut chars: Vec<char> = key.chars().collect();
    for m in mutations {
        let len = chars.len();
        match m {
            Mutation::Delete(i) if len > 0 => {
                chars.remove(i.index(len));
            }
            Mutation::Insert(i, c) => chars.insert(i.index(len + 1), *c),
            Mutation::Replace(i, c) if len > 0 => chars[i.index(len)] = *c,
            Mutation::Truncate(i) => chars.truncate(i.index(len + 1)),
            _ => {}
        }
    }
    chars.into_iter().collect()
}

/// `decode` must not panic, and whatever it accepts must re-encode to the same key.
fn assert_strict(columns: &[Column], key: &str) -> Result<(), TestCaseError> {
    if let Ok(values) = decode(columns, key) {
        let again = encode_sort_values(columns, &values);
        prop_assert_eq!(again.as_deref(), Ok(key), "accepted {:?} as {:?}", key, values);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Byte order of keys equals the model's tuple order; equal tuples
    /// (also in different spellings) have equal keys.
    #[test]
    fn key_order_is_tuple_order((columns, a, b) in schema_and_pair()) {
        let (ka, kb) = (key_of(&columns, &a), key_of(&columns, &b));
        prop_assert_eq!(ka.as_bytes().cmp(kb.as_bytes()), cmp_tuple(&columns, &a, &b), "{:?} vs {:?}", ka, kb);
    }

    /// decode inverts encode, gives canonical values, and re-encodes to the key.
    #[test]
    fn decode_inverts_encode((columns, t) in schema_and_tuple()) {
        let key = key_of(&columns, &t);
        let decoded = decode(&columns, &key);
        prop_assert!(decoded.is_ok(), "{:?}: {:?}", key, decoded);
        let decoded = decoded.unwrap();
        for (v, d) in t.iter().zip(&decoded) {
            prop_assert!(v.decoded_as(d), "{:?} decoded as {:?}", v, d);
        }
        prop_assert_eq!(encode_sort_values(&columns, &decoded), Ok(key));
    }

    /// Numbers across the whole range in random spellings: order, equality, canonical text.
    #[test]
    fn numbers_order_exactly(
        (a, b, a1, a2, b1) in (num_key(), num_key()).prop_flat_map(|(a, b)| {
            (Just(a.clone()), Just(b.clone()), spell(a.clone()), spell(a), spell(b))
        }),
        desc in any::<bool>(),
    ) {
        let column = col(ColumnType::N, if desc { Direction::Desc } else { Direction::Asc });
        let enc = |text: &str| {
            let mut out = String::new();
            encode_value(&column, Some(&Value::N(text.to_owned())), &mut out).map(|()| out)
        };
        let (ka1, ka2, kb1) = (enc(&a1).unwrap(), enc(&a2).unwrap(), enc(&b1).unwrap());
        prop_assert_eq!(&ka1, &ka2, "{} and {} are equal", a1, a2);
        let expected = if desc { a.cmp(&b).reverse() } else { a.cmp(&b) };
        prop_assert_eq!(ka1.cmp(&kb1), expected, "{} vs {}", a1, b1);
        prop_assert_eq!(canonical_number(&a1), Ok(a.canonical()));
        prop_assert_eq!(canonical_number(&a.canonical()), Ok(a.canonical()));
        prop_assert_eq!(decode(&[column], &ka1), Ok(vec![SortValue::N(a.canonical())]));
    }

    /// Random strings never make decode panic, and anything accepted is canonical.
    #[test]
    fn decode_never_panics_on_random_strings(columns in schema(3), key in prop::collection::vec(key_char(), 0..40)) {
        let key: String = key.into_iter().collect();
        assert_strict(&columns, &key)?;
    }

    /// Mutated valid keys never make decode panic, and anything accepted is canonical.
    #[test]
    fn decode_never_panics_on_mutated_keys(
        (columns, t) in schema_and_tuple(),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let key = mutate(&key_of(&columns, &t), &mutations);
        assert_strict(&columns, &key)?;
    }

    /// Query bounds select exactly the rows the model says they should.
    #[test]
    fn bounds_select_the_right_rows(
        (columns, j, p, v, w, rows) in schema(3).prop_flat_map(|columns| {
            let n = columns.len();
            (Just(columns), 0..n)
        }).prop_flat_map(|(columns, j)| {
            let p = tuple(&columns[..j], true);
            let v = value(columns[j].ty, true);
            let w = value(columns[j].ty, true);
            let rows = prop::collection::vec(tuple(&columns, false), 1..8);
            (Just(columns), Just(j), p, v, w, rows)
        })
    ) {
        let values = |t: &[TV], cs: &[Column]| -> Vec<Option<Value>> {
            t.iter().zip(cs).map(|(x, c)| x.value(c).unwrap()).collect()
        };
        let pv = values(&p, &columns);
        let prefs: Vec<Option<&Value>> = pv.iter().map(Option::as_ref).collect();
        let vv = v.value(&columns[j]).unwrap();
        let wv = w.value(&columns[j]).unwrap();
        let after_cond = after(&columns, &prefs, vv.as_ref()).unwrap();
        let between_cond = between(&columns, &prefs, vv.as_ref(), wv.as_ref()).unwrap();
        let prefix_text = prefix(&columns, &prefs).unwrap();
        let (lo, hi) = if cmp_elem(&columns[j], &v, &w).is_gt() { (&w, &v) } else { (&v, &w) };
        // Rows: as generated, with the prefix forced, and with the element forced to a bound.
        let mut candidates = Vec::new();
        for row in rows {
            let mut forced = row.clone();
            forced[..j].clone_from_slice(&p);
            let mut at_v = forced.clone();
            at_v[j] = v.clone();
            let mut at_w = forced.clone();
            at_w[j] = w.clone();
            candidates.extend([row, forced, at_v, at_w]);
        }
        for row in &candidates {
            let key = key_of(&columns, row);
            let same_prefix = columns[..j].iter().zip(row.iter().zip(&p)).all(|(c, (x, y))| cmp_elem(c, x, y).is_eq());
            let c = &columns[j];
            prop_assert_eq!(key.starts_with(&prefix_text), same_prefix, "prefix {:?} on {:?}", prefix_text, key);
            prop_assert_eq!(
                after_cond.matches(&key),
                same_prefix && cmp_elem(c, &row[j], &v).is_gt(),
                "{:?} on {:?}", after_cond, key
            );
            prop_assert_eq!(
                between_cond.matches(&key),
                same_prefix && !cmp_elem(c, &row[j], lo).is_lt() && !cmp_elem(c, &row[j], hi).is_gt(),
                "{:?} on {:?}", between_cond, key
            );
        }
    }
}

/// The strictness properties above are only worth something if mutated keys
/// are sometimes still valid: check that they are, often enough.
#[test]
fn mutated_keys_are_often_still_accepted() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = (schema_and_tuple(), prop::collection::vec(mutation(), 1..4));
    let mut accepted = 0;
    for _ in 0..1000 {
        let ((columns, t), mutations) = strategy.new_tree(&mut runner).unwrap().current();
        let key = mutate(&key_of(&columns, &t), &mutations);
        if let Ok(values) = decode(&columns, &key) {
            assert_eq!(encode_sort_values(&columns, &values).as_deref(), Ok(key.as_str()));
            accepted += 1;
        }
    }
    assert!(accepted >= 20, "only {accepted} of 1000 mutated keys decoded");
}

/// Small enough to sit in other errors (and `Result`s) without boxing.
#[test]
fn error_is_small() {
    assert!(
        std::mem::size_of::<SortKeyError>() <= 40,
        "{}",
        std::mem::size_of::<SortKeyError>()
    );
}
