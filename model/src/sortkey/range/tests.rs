//! Key ranges: hand-computed vectors, every error, and a property test
//! against a filter over decoded values (the oracle).

use proptest::prelude::*;
use proptest::sample::Index;

use super::oracle::{pool, satisfies, Expect, Pooled, STRINGS};
use super::*;
use crate::sortkey::{encode_sort_values, ColumnType, Direction, Nulls};

fn col(ty: ColumnType, direction: Direction) -> Column {
    Column::new(ty, direction)
}

fn n(text: &str) -> SortValue {
    SortValue::N(text.to_owned())
}

fn s(text: &str) -> SortValue {
    SortValue::S(text.to_owned())
}

fn between(lower: &str, upper: &str) -> KeyRange {
    KeyRange::Keys {
        condition: Some(KeyCondition::Between(lower.into(), upper.into())),
        exclude: None,
    }
}

fn begins(prefix: &str) -> KeyRange {
    KeyRange::Keys {
        condition: Some(KeyCondition::BeginsWith(prefix.into())),
        exclude: None,
    }
}

fn range(columns: &[Column], equal: &[SortValue], condition: ColumnCondition) -> KeyRange {
    key_range(columns, &[], equal, Some(&condition)).unwrap_or_else(|e| panic!("{condition:?}: {e}"))
}

#[test]
fn numbers_ascending() {
    let c = [col(ColumnType::N, Direction::Asc)];
    // 5 is >1305!; N values end before `?` (the tag after `>`).
    assert_eq!(range(&c, &[], ColumnCondition::Gt(n("5"))), between(">1305\"", "?"));
    assert_eq!(range(&c, &[], ColumnCondition::Ge(n("5"))), between(">1305!", "?"));
    // Alone, the column is the whole key: the upper end of "below 5" is
    // the key of 5, named to be dropped.
    assert_eq!(
        range(&c, &[], ColumnCondition::Lt(n("5"))),
        KeyRange::Keys {
            condition: Some(KeyCondition::Between("<".into(), ">1305!".into())),
            exclude: Some(">1305!".into()),
        }
    );
    assert_eq!(range(&c, &[], ColumnCondition::Le(n("5.0"))), between("<", ">1305\""));
    // 1 and 10 share their digits: 10 is >1311!, above 1's >1301" .
    let le_one = range(&c, &[], ColumnCondition::Le(n("1")));
    assert!(le_one.matches(">1301!"));
    assert!(!le_one.matches(">1311!"));
    assert!(!le_one.matches("!"), "a null is never below anything");
}

#[test]
fn numbers_descending() {
    // From css1.md: N DESC nulls LAST: 4.2 is `anlokm~`; N values start
    // with a, b or c (`>`, `=`, `<` mapped), so the band ends before `d`.
    let c = [col(ColumnType::N, Direction::Desc)];
    assert_eq!(
        range(&c, &[], ColumnCondition::Lt(n("4.2"))),
        between("anlokm\u{7f}", "d")
    );
    assert_eq!(
        range(&c, &[], ColumnCondition::Ge(n("42E-1"))),
        between("a", "anlokm\u{7f}")
    );
    assert_eq!(
        range(&c, &[], ColumnCondition::Between(n("100"), n("4.2"))),
        range(&c, &[], ColumnCondition::Between(n("4.2"), n("100"))),
        "ends in either order"
    );
    assert_eq!(
        range(&c, &[], ColumnCondition::Between(n("4.2"), n("100"))),
        between("anlmn~", "anlokm\u{7f}")
    );
}

#[test]
fn string_prefixes_ascending() {
    let c = [col(ColumnType::S, Direction::Asc)];
    // Without the terminator: "ab" extends "a".
    assert_eq!(range(&c, &[], ColumnCondition::BeginsWith("a".into())), begins("Sa"));
    assert_eq!(range(&c, &[], ColumnCondition::BeginsWith("".into())), begins("S"));
    assert_eq!(
        range(&c, &[], ColumnCondition::BeginsWith("a\u{0}".into())),
        begins("Sa\u{2}\u{1}")
    );
    // Below "ab": "a" and "a\0" are, "ab" and "abc" are not.
    let lt = range(&c, &[], ColumnCondition::Lt(s("ab")));
    for (key, taken) in [
        ("Sa\u{1}", true),
        ("Sa\u{2}\u{1}\u{1}", true),
        ("Sab\u{1}", false),
        ("Sabc\u{1}", false),
        ("S\u{1}", true),
    ] {
        assert_eq!(lt.matches(key), taken, "{key:?}");
    }
}

#[test]
fn string_prefixes_descending() {
    // "a" is 0x61 = 011000 01: one whole base64 character (`N`, mapped `Q`),
    // then a character whose top bits are 01 (`F`..`U`, mapped `Y`..`J`).
    let c = [col(ColumnType::S, Direction::Desc)];
    let a = range(&c, &[], ColumnCondition::BeginsWith("a".into()));
    assert_eq!(a, between("LQJ", "LQZ"));
    // css1.md's S DESC vectors.
    for (key, taken) in [
        ("LQY~", true),  // "a"
        ("LQSh~", true), // "ab"
        ("LQYr~", true), // "a\0"
        ("LQI~", false), // "b"
        ("L~", false),   // ""
    ] {
        assert_eq!(a.matches(key), taken, "{key:?}");
    }
    // Three bytes are four whole characters: a plain prefix.
    assert_eq!(
        range(&c, &[], ColumnCondition::BeginsWith("abc".into())),
        begins("LQSgF")
    );
}

#[test]
fn bools_and_whole_keys() {
    let c = [col(ColumnType::Bool, Direction::Asc)];
    assert_eq!(
        range(&c, &[], ColumnCondition::Gt(SortValue::Bool(true))),
        KeyRange::Empty
    );
    assert_eq!(
        range(&c, &[], ColumnCondition::Ge(SortValue::Bool(true))),
        between("1", "2")
    );
    // Alone, the column is the whole key, and succ("0") is the key of true:
    // the BETWEEN's upper end is named to be dropped.
    let le = range(&c, &[], ColumnCondition::Le(SortValue::Bool(false)));
    assert_eq!(
        le,
        KeyRange::Keys {
            condition: Some(KeyCondition::Between("0".into(), "1".into())),
            exclude: Some("1".into()),
        }
    );
    assert!(le.matches("0"));
    assert!(!le.matches("1"));
    // With a column after it (an index row's source key), "1" is no key.
    let tail = [col(ColumnType::Any, Direction::Asc)];
    let le = key_range(&c, &tail, &[], Some(&ColumnCondition::Le(SortValue::Bool(false)))).unwrap();
    assert_eq!(le, between("0", "1"));
}

#[test]
fn equality_only() {
    let c = [col(ColumnType::S, Direction::Asc), col(ColumnType::N, Direction::Asc)];
    assert_eq!(
        key_range(&c, &[], &[], None).unwrap(),
        KeyRange::Keys {
            condition: None,
            exclude: None
        }
    );
    assert_eq!(key_range(&c, &[], &[s("a")], None).unwrap(), begins("Sa\u{1}"));
    assert_eq!(key_range(&c, &[], &[SortValue::Null], None).unwrap(), begins("!"));
    assert_eq!(
        key_range(&c, &[], &[s("a")], Some(&ColumnCondition::Gt(n("1")))).unwrap(),
        between("Sa\u{1}>1301\"", "Sa\u{1}?")
    );
}

#[test]
fn errors_name_the_comparison_and_the_column() {
    let c = [col(ColumnType::Any, Direction::Asc), col(ColumnType::N, Direction::Asc)];
    let err = |equal: &[SortValue], condition: Option<ColumnCondition>| {
        key_range(&c, &[], equal, condition.as_ref()).unwrap_err()
    };
    let e = err(&[s("a"), n("1"), n("2")], None);
    assert_eq!(e, RangeError::TooManyEquals { values: 3, columns: 2 });
    assert_eq!(e.to_string(), "3 `eq` value(s), but there are only 2 sort column(s)");
    let e = err(&[s("a"), n("1")], Some(ColumnCondition::Gt(n("1"))));
    assert_eq!(
        e.to_string(),
        "`gt` needs a sort column after the 2 `eq` value(s), but there are only 2"
    );
    let e = err(&[s("a")], Some(ColumnCondition::Lt(s("x"))));
    assert_eq!(e.to_string(), "`lt` on sort column 2: expects N or NULL, got S");
    assert_eq!((e.op(), e.column()), (Some(Op::Lt), Some(2)));
    let e = err(&[s("a")], Some(ColumnCondition::Le(n("1E+200"))));
    assert!(
        e.to_string()
            .starts_with("`le` on sort column 2: number is out of range"),
        "{e}"
    );
    let e = err(&[], Some(ColumnCondition::Ge(SortValue::Null)));
    assert_eq!(e, RangeError::NullBound { op: Op::Ge, column: 1 });
    let e = err(&[], Some(ColumnCondition::Between(n("1"), s("a"))));
    assert_eq!(
        e.to_string(),
        "`between` on sort column 1: one end is N, the other S; both must be of one type"
    );
    let e = err(&[s("a")], Some(ColumnCondition::BeginsWith("x".into())));
    assert_eq!(
        e.to_string(),
        "`begins` on sort column 2: the column is N; a string prefix needs an S or ANY column"
    );
    let e = err(&[s("a"), SortValue::B(vec![1])], None);
    assert_eq!((e.op(), e.column()), (Some(Op::Eq), Some(2)));
    let long = "x".repeat(MAX_KEY_BYTES);
    let e = err(&[s(&long)], None);
    assert!(
        matches!(
            e,
            RangeError::TooLong {
                op: Op::Eq,
                column: 1,
                ..
            }
        ),
        "{e:?}"
    );
}

// ---------------------------------------------------------------------------
// The property: a key range selects exactly the rows a filter over their
// decoded values selects.

fn column() -> impl Strategy<Value = Column> {
    let ty = prop::sample::select(ColumnType::ALL.to_vec());
    let direction = prop_oneof![Just(Direction::Asc), Just(Direction::Desc)];
    let nulls = prop_oneof![Just(Nulls::First), Just(Nulls::Last)];
    (ty, direction, nulls).prop_map(|(ty, direction, nulls)| Column { ty, direction, nulls })
}

/// A value of the column from its pool, or null (1 in `1 + odds`).
fn pick(column: &Column, i: Index, null: bool) -> Pooled {
    if null {
        return Pooled {
            given: SortValue::Null,
            canonical: SortValue::Null,
        };
    }
    let values = pool(column.ty, false);
    values[i.index(values.len())].clone()
}

#[derive(Debug, Clone)]
enum Cond {
    None,
    Lt,
    Le,
    Gt,
    Ge,
    Between,
    Begins,
}

#[derive(Debug, Clone)]
struct Case {
    columns: Vec<Column>,
    /// Whether keys go on after the columns (an index row's source key).
    tail: bool,
    rows: Vec<Vec<Pooled>>,
    equal: Vec<Pooled>,
    cond: Cond,
    bounds: (Pooled, Pooled),
    prefix: String,
}

fn case() -> impl Strategy<Value = Case> {
    (prop::collection::vec(column(), 1..=3), any::<bool>()).prop_flat_map(|(columns, tail)| {
        let width = columns.len();
        let value = (any::<Index>(), prop::bool::weighted(0.1));
        let rows = prop::collection::vec(prop::collection::vec(value.clone(), width), 1..12);
        let cond = prop_oneof![
            Just(Cond::None),
            Just(Cond::Lt),
            Just(Cond::Le),
            Just(Cond::Gt),
            Just(Cond::Ge),
            Just(Cond::Between),
            Just(Cond::Begins),
        ];
        (
            Just(columns),
            Just(tail),
            rows,
            0..=width,
            prop::collection::vec((any::<Index>(), any::<bool>(), value.clone()), width),
            cond,
            (value.clone(), value, any::<Index>(), any::<Index>(), 0u8..4),
            (any::<Index>(), any::<Index>()),
        )
            .prop_map(
                |(columns, tail, rows, j, equal, cond, (a, b, row_a, row_b, from_rows), prefix)| {
                    let rows: Vec<Vec<Pooled>> = rows
                        .into_iter()
                        .map(|r| columns.iter().zip(r).map(|(c, (i, null))| pick(c, i, null)).collect())
                        .collect();
                    // Equal values: often a row's own (so something matches).
                    let equal = columns[..j]
                        .iter()
                        .enumerate()
                        .zip(equal)
                        .map(|((k, c), (row, from_row, (i, null)))| {
                            if from_row {
                                rows[row.index(rows.len())][k].clone()
                            } else {
                                pick(c, i, null)
                            }
                        })
                        .collect();
                    let c = columns.get(j).copied().unwrap_or(columns[0]);
                    let at = |row: Index, (i, null): (Index, bool), from_row: bool| match columns.get(j) {
                        Some(_) if from_row => rows[row.index(rows.len())][j].clone(),
                        _ => pick(&c, i, null),
                    };
                    let bounds = (at(row_a, a, from_rows & 1 == 1), at(row_b, b, from_rows & 2 == 2));
                    // A prefix of a pool string, cut anywhere.
                    let (string, cut) = prefix;
                    let string = STRINGS[string.index(STRINGS.len())];
                    let prefix: String = string.chars().take(cut.index(string.chars().count() + 1)).collect();
                    Case {
                        columns,
                        tail,
                        rows,
                        equal,
                        cond,
                        bounds,
                        prefix,
                    }
                },
            )
    })
}

/// The tail's values: a few S keys, so that rows rarely collide.
fn tail_value(i: usize) -> SortValue {
    s(&format!("k{}", i % 3))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// For random rows and conditions, the key range takes exactly the rows
    /// whose decoded values pass the oracle's filter, and is a condition
    /// DynamoDB accepts.
    #[test]
    fn key_range_takes_exactly_the_filtered_rows(case in case()) {
        let Case { columns, tail, rows, equal, cond, bounds, prefix } = case;
        let tail_columns: Vec<Column> = if tail { vec![Column::new(ColumnType::Any, Direction::Asc)] } else { Vec::new() };
        let given: Vec<SortValue> = equal.iter().map(|p| p.given.clone()).collect();
        let (a, b) = (&bounds.0, &bounds.1);
        let (condition, expect) = match cond {
            Cond::None => (None, None),
            Cond::Lt => (Some(ColumnCondition::Lt(a.given.clone())), Some(Expect::Lt(a.canonical.clone()))),
            Cond::Le => (Some(ColumnCondition::Le(a.given.clone())), Some(Expect::Le(a.canonical.clone()))),
            Cond::Gt => (Some(ColumnCondition::Gt(a.given.clone())), Some(Expect::Gt(a.canonical.clone()))),
            Cond::Ge => (Some(ColumnCondition::Ge(a.given.clone())), Some(Expect::Ge(a.canonical.clone()))),
            Cond::Between => (
                Some(ColumnCondition::Between(a.given.clone(), b.given.clone())),
                Some(Expect::Between(a.canonical.clone(), b.canonical.clone())),
            ),
            Cond::Begins => (Some(ColumnCondition::BeginsWith(prefix.clone())), Some(Expect::Begins(prefix.clone()))),
        };
        let j = equal.len();
        let result = key_range(&columns, &tail_columns, &given, condition.as_ref());
        // Refusals: exactly the conditions that are not ranges of one type.
        let refusal = match (&cond, columns.get(j)) {
            (Cond::None, _) => None,
            (_, None) => Some("no column"),
            (Cond::Begins, Some(c)) if !matches!(c.ty, ColumnType::S | ColumnType::Any) => Some("not a string"),
            (Cond::Begins, Some(_)) => None,
            (Cond::Between, _) if a.given == SortValue::Null || b.given == SortValue::Null => Some("null"),
            (Cond::Between, _) if a.canonical.type_name() != b.canonical.type_name() => Some("mixed"),
            (_, _) if a.given == SortValue::Null && !matches!(cond, Cond::Between) => Some("null"),
            _ => None,
        };
        let range = match (result, refusal) {
            (Ok(range), None) => range,
            (Err(e), Some(why)) => {
                let fits = match why {
                    "no column" => matches!(e, RangeError::NoColumn { .. }),
                    "not a string" => matches!(e, RangeError::NotAString { .. }),
                    "null" => matches!(e, RangeError::NullBound { .. }),
                    _ => matches!(e, RangeError::MixedTypes { .. }),
                };
                prop_assert!(fits, "refused for {} but with {:?}", why, e);
                return Ok(());
            }
            (result, refusal) => {
                prop_assert!(false, "{:?} for {:?} on {:?} (expected refusal: {:?})", result, condition, columns, refusal);
                unreachable!()
            }
        };
        // A condition DynamoDB takes: BETWEEN's ends in order, no empty prefix.
        if let KeyRange::Keys { condition: Some(c), .. } = &range {
            match c {
                KeyCondition::Between(l, u) => prop_assert!(l < u, "{:?}", c),
                KeyCondition::BeginsWith(p) => prop_assert!(!p.is_empty()),
                KeyCondition::AtLeast(_) => {}
            }
        }
        let whole: Vec<Column> = columns.iter().chain(&tail_columns).copied().collect();
        for (i, row) in rows.iter().enumerate() {
            let mut values: Vec<SortValue> = row.iter().map(|p| p.given.clone()).collect();
            if tail {
                values.push(tail_value(i));
            }
            let key = encode_sort_values(&whole, &values).map_err(|e| TestCaseError::fail(format!("{values:?}: {e}")))?;
            let decoded = decode(&whole, &key).map_err(|e| TestCaseError::fail(format!("{key:?}: {e}")))?;
            for (d, p) in decoded.iter().zip(row) {
                prop_assert_eq!(d, &p.canonical, "the pool's canonical form");
            }
            let wanted = decoded[..j].iter().zip(&equal).all(|(d, e)| *d == e.canonical)
                && expect.as_ref().is_none_or(|x| satisfies(&decoded[j], x));
            prop_assert_eq!(range.matches(&key), wanted, "{:?} on {:?} ({:?})", range, key, decoded);
        }
    }
}

/// The property above is only worth something if its cases both take and
/// leave rows: check that they do, often enough.
#[test]
fn cases_take_and_leave_rows() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut taken, mut left, mut ranges) = (0, 0, 0);
    for _ in 0..1000 {
        let case = case().new_tree(&mut runner).unwrap().current();
        let a = &case.bounds.0.given;
        let condition = match case.cond {
            Cond::Gt => Some(ColumnCondition::Gt(a.clone())),
            Cond::Begins => Some(ColumnCondition::BeginsWith(case.prefix.clone())),
            Cond::Le => Some(ColumnCondition::Le(a.clone())),
            _ => None,
        };
        let given: Vec<SortValue> = case.equal.iter().map(|p| p.given.clone()).collect();
        let Ok(range) = key_range(&case.columns, &[], &given, condition.as_ref()) else {
            continue;
        };
        ranges += usize::from(condition.is_some());
        for row in &case.rows {
            let values: Vec<SortValue> = row.iter().map(|p| p.given.clone()).collect();
            let key = encode_sort_values(&case.columns, &values).unwrap();
            if range.matches(&key) {
                taken += 1;
            } else {
                left += 1;
            }
        }
    }
    assert!(
        ranges >= 150 && taken >= 500 && left >= 500,
        "{ranges} ranges, {taken} rows taken, {left} left"
    );
}
