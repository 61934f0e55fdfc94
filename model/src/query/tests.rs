//! Index queries: the plan of the example index, the merge, and a property
//! test of the whole: random items through the real row derivation (sharded
//! or not) into a simulated table, queried page by page through the merge,
//! against a filter and sort over the decoded values.

use super::*;
use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::sample::Index;

use crate::config::{parse, Config, EXAMPLE_CONFIG};
use crate::index::{self, RowKey};
use crate::sortkey::oracle::{cmp_tuples, pool, satisfies, Expect, Pooled, STRINGS};
use crate::sortkey::{decode, KeyCondition, Nulls};
use crate::value::{Image, Value};

fn example() -> Config {
    parse(EXAMPLE_CONFIG, "example").unwrap()
}

fn n(text: &str) -> SortValue {
    SortValue::N(text.to_owned())
}

#[test]
fn plans_the_example_index() {
    let config = example();
    let index = config.index("issue-attrib").unwrap();
    let source = config.table("issues").unwrap();
    let q = plan(index, source, "prio", &Conditions::default()).unwrap();
    assert_eq!(q.partitions, ["prio"]);
    assert_eq!(
        q.range,
        KeyRange::Keys {
            condition: None,
            exclude: None
        }
    );
    let any = Column::new(ColumnType::Any, Direction::Asc);
    let num = Column::new(ColumnType::N, Direction::Asc).with_nulls(Nulls::Last);
    assert_eq!(q.key_columns, [any, num, any, any]);
    // "prio" = "high", num ≤ 10: the S tag, esc, terminator, then N.
    let q = plan(
        index,
        source,
        "prio",
        &Conditions {
            equal: vec![SortValue::S("high".into())],
            range: Some(ColumnCondition::Le(n("10"))),
        },
    )
    .unwrap();
    assert_eq!(
        q.range,
        KeyRange::Keys {
            condition: Some(KeyCondition::Between("Shigh\u{1}<".into(), "Shigh\u{1}>1311\"".into())),
            exclude: None,
        },
        "the source key always follows: no bound is a whole key"
    );
}

#[test]
fn sharded_partitions_and_their_limits() {
    let mut config = example();
    config.indexes[0].shards = 16;
    let index = &config.indexes[0];
    let source = &config.table("issues").unwrap().clone();
    let q = plan(index, source, "prio", &Conditions::default()).unwrap();
    assert_eq!(q.partitions.len(), 16);
    assert_eq!(q.partitions[0], "prio#0");
    assert_eq!(q.partitions[15], "prio#15");
    assert_eq!(
        plan(index, source, "", &Conditions::default()),
        Err(QueryError::EmptyPartition)
    );
    // 2,046 bytes fit alone and with `#9`, not with `#10`.
    let long = "p".repeat(2046);
    let e = plan(index, source, &long, &Conditions::default()).unwrap_err();
    assert!(matches!(e, QueryError::PartitionTooLong { bytes: 2049, .. }), "{e:?}");
    let mut unsharded = index.clone();
    unsharded.shards = 1;
    assert!(plan(&unsharded, source, &long, &Conditions::default()).is_ok());
    let e = plan(
        &unsharded,
        source,
        "prio",
        &Conditions {
            equal: vec![n("1"), n("2"), n("3")],
            range: None,
        },
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "3 `eq` value(s), but there are only 2 sort column(s)");
}

#[test]
fn an_empty_range_reads_nothing() {
    let config = parse(
        r#"
[table.things]
partition_key = "id"
[[index]]
name = "i"
source = { table = "things" }
table = "Index1"
partition = "all"
sort = [ { value = "done", type = "bool" } ]
shards = 4
"#,
        "t.toml",
    )
    .unwrap();
    let q = plan(
        &config.indexes[0],
        &config.tables[0],
        "all",
        &Conditions {
            equal: vec![],
            range: Some(ColumnCondition::Gt(SortValue::Bool(true))),
        },
    )
    .unwrap();
    assert_eq!(q.range, KeyRange::Empty);
    let mut merge = q.merge::<()>(false, None);
    assert!(merge.wanted().is_empty());
    assert_eq!(merge.step(), Step::Done);
}

// ---------------------------------------------------------------------------
// The merge alone.

#[test]
fn merge_interleaves_partitions_and_stops_at_the_limit() {
    let rows = |keys: &[&str]| keys.iter().map(|k| ((*k).to_owned(), ())).collect::<Vec<_>>();
    let mut m: Merge<()> = Merge::new(2, false, Some(3), Some("c".into()));
    assert_eq!(m.step(), Step::Fetch);
    assert_eq!(m.wanted(), [0, 1]);
    assert_eq!(m.page_limit(), Some(4), "the limit, and one for the excluded key");
    m.feed(0, rows(&["a", "c"]), true).unwrap();
    m.feed(1, rows(&["b"]), false).unwrap();
    assert_eq!(m.step(), Step::Row("a".into(), ()));
    // Partition 0 has nothing in hand, but what it has left sorts after its
    // "c" (dropped: excluded), so "b" can go first.
    assert_eq!(m.step(), Step::Row("b".into(), ()));
    assert_eq!(m.step(), Step::Fetch);
    assert_eq!(m.wanted(), [0]);
    assert_eq!(m.feed(1, rows(&["z"]), false), Err(MergeError::Finished { run: 1 }));
    assert_eq!(
        m.feed(0, rows(&["b"]), true),
        Err(MergeError::OutOfOrder {
            run: 0,
            key: "b".into(),
            after: "c".into()
        })
    );
    m.feed(0, rows(&["d", "e"]), true).unwrap();
    assert_eq!(m.step(), Step::Row("d".into(), ()));
    assert_eq!(m.step(), Step::Done, "three rows");
    assert!(m.wanted().is_empty());
    assert_eq!(
        m.feed(5, rows(&[]), false),
        Err(MergeError::NoSuchRun { run: 5, runs: 2 })
    );

    let mut m: Merge<u8> = Merge::new(2, true, None, None);
    assert_eq!(m.page_limit(), None);
    m.feed(0, vec![("b".into(), 0)], false).unwrap();
    m.feed(1, vec![("c".into(), 1), ("a".into(), 1)], false).unwrap();
    let mut out = Vec::new();
    while let Step::Row(key, from) = m.step() {
        out.push((key, from));
    }
    assert_eq!(out, [("c".into(), 1), ("b".into(), 0), ("a".into(), 1)]);
}

proptest! {
    /// Random sorted runs, fed in random pages: the merge gives the sorted
    /// union, cut at the limit.
    #[test]
    fn merge_gives_the_sorted_union(
        runs in prop::collection::vec(prop::collection::btree_set("[a-e]{1,3}", 0..8), 1..5),
        pages in prop::collection::vec(1usize..4, 64),
        desc in any::<bool>(),
        limit in prop::option::of(0usize..12),
    ) {
        // Keys unique across runs, as sort keys of different items are.
        let runs: Vec<Vec<String>> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| r.iter().map(|k| format!("{k}{i}")).collect())
            .collect();
        let mut expected: Vec<String> = runs.iter().flatten().cloned().collect();
        expected.sort();
        if desc {
            expected.reverse();
        }
        expected.truncate(limit.unwrap_or(usize::MAX));
        let mut cursors: Vec<Vec<String>> = runs
            .into_iter()
            .map(|mut r| {
                if desc {
                    r.reverse();
                }
                r
            })
            .collect();
        let mut m: Merge<()> = Merge::new(cursors.len(), desc, limit, None);
        let mut out = Vec::new();
        let mut page = pages.iter().cycle();
        loop {
            match m.step() {
                Step::Row(key, ()) => out.push(key),
                Step::Done => break,
                Step::Fetch => {
                    let wanted = m.wanted();
                    prop_assert!(!wanted.is_empty());
                    for run in wanted {
                        let size = page.next().copied().unwrap_or(1).min(m.page_limit().unwrap_or(usize::MAX));
                        let rest = &mut cursors[run];
                        let taken: Vec<(String, ())> = rest.drain(..size.min(rest.len())).map(|k| (k, ())).collect();
                        let more = !rest.is_empty();
                        m.feed(run, taken, more).unwrap();
                    }
                }
            }
        }
        prop_assert_eq!(out, expected);
    }
}

// ---------------------------------------------------------------------------
// The whole: random items → rows (the real derivation, sharded or not) → a
// simulated table → `plan` + page-wise Queries + `Merge`, against a filter
// and sort over the rows' decoded values.

/// One sort column of the generated index: its type, direction, null placement.
type ColumnSpec = (ColumnType, Direction, Nulls);

/// The partition the query reads, and another one beside it.
const QUERIED: &str = "f";
const OTHER: &str = "g";

fn index_text(columns: &[ColumnSpec], shards: u32) -> String {
    let mut sort = Vec::new();
    for (i, (ty, direction, nulls)) in columns.iter().enumerate() {
        let value = if i == 0 {
            "{entry.value}".to_owned()
        } else {
            format!("a{i}")
        };
        let ty = match ty {
            ColumnType::S => "s",
            ColumnType::N => "n",
            ColumnType::B => "b",
            ColumnType::Bool => "bool",
            ColumnType::Date => "date",
            ColumnType::Timestamp => "timestamp",
            ColumnType::Any => "any",
        };
        let order = if *direction == Direction::Asc { "asc" } else { "desc" };
        let nulls = if *nulls == Nulls::First { "first" } else { "last" };
        sort.push(format!(
            "{{ value = \"{value}\", type = \"{ty}\", order = \"{order}\", nulls = \"{nulls}\" }}"
        ));
    }
    format!(
        "[table.issues]\npartition_key = \"id\"\nsort_key = \"rel\"\n\n[[index]]\nname = \"q\"\n\
         source = {{ table = \"issues\" }}\ntable = \"QIndex\"\nfor_each = \"fields\"\n\
         partition = \"{{entry.key}}\"\nsort = [{}]\nshards = {shards}\n",
        sort.join(", ")
    )
}

/// A value of a column as an item holds it: `None` missing, else a pool
/// entry or NULL.
#[derive(Debug, Clone)]
enum Cell {
    Missing,
    Null,
    Is(Pooled),
}

impl Cell {
    fn value(&self) -> Option<Value> {
        match self {
            Cell::Missing => None,
            Cell::Null => Some(Value::Null(true)),
            Cell::Is(p) => Some(p.given.to_value()),
        }
    }
}

fn cell(ty: ColumnType) -> BoxedStrategy<Cell> {
    let values = pool(ty, true);
    prop_oneof![
        1 => Just(Cell::Missing),
        1 => Just(Cell::Null),
        8 => prop::sample::select(values).prop_map(Cell::Is),
    ]
    .boxed()
}

#[derive(Debug, Clone)]
struct Item {
    /// The item's sort key is a number (else a string like its partition key).
    numeric_rel: bool,
    /// The field "f" (the queried partition) and "g", when present.
    fields: [Cell; 2],
    /// `a1`, `a2`: the other sort columns' attributes.
    attributes: Vec<Cell>,
}

fn image(i: usize, item: &Item) -> Image {
    let mut image = Image::new();
    image.insert("id", Value::S(format!("issue-{i}")));
    let rel = if item.numeric_rel {
        Value::N(format!("{i}"))
    } else {
        Value::S(format!("issue-{i}"))
    };
    image.insert("rel", rel);
    let mut fields = Image::new();
    for (name, cell) in [QUERIED, OTHER].iter().zip(&item.fields) {
        if let Some(v) = cell.value() {
            fields.insert((*name).to_owned(), v);
        }
    }
    image.insert("fields", Value::M(fields.into_map()));
    for (k, cell) in item.attributes.iter().enumerate() {
        if let Some(v) = cell.value() {
            image.insert(format!("a{}", k + 1), v);
        }
    }
    image
}

#[derive(Debug, Clone)]
struct Scenario {
    columns: Vec<ColumnSpec>,
    shards: u32,
    items: Vec<Item>,
    /// How many leading columns are fixed by equality, and their values.
    equal: Vec<Cell>,
    /// The condition on the next column: 0 none, 1 lt, 2 le, 3 gt, 4 ge, 5 between, 6 begins.
    op: u8,
    bounds: (Cell, Cell),
    prefix: String,
    desc: bool,
    limit: Option<usize>,
    pages: Vec<usize>,
}

fn column_spec() -> impl Strategy<Value = ColumnSpec> {
    (
        prop::sample::select(ColumnType::ALL.to_vec()),
        prop_oneof![Just(Direction::Asc), Just(Direction::Desc)],
        prop_oneof![Just(Nulls::First), Just(Nulls::Last)],
    )
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        prop::collection::vec(column_spec(), 1..=3),
        prop::sample::select(vec![1u32, 2, 3, 4, 16]),
    )
        .prop_flat_map(|(columns, shards)| {
            let width = columns.len();
            let first = columns[0].0;
            let rest: Vec<BoxedStrategy<Cell>> = columns[1..].iter().map(|c| cell(c.0)).collect();
            let item =
                (any::<bool>(), [cell(first), cell(first)], rest).prop_map(|(numeric_rel, fields, attributes)| Item {
                    numeric_rel,
                    fields,
                    attributes,
                });
            let items = prop::collection::vec(item, 0..24);
            let equal: Vec<BoxedStrategy<Cell>> = columns.iter().map(|c| cell(c.0)).collect();
            // A pair of bounds for each column: the condition is on column `j`.
            let bounds: Vec<(BoxedStrategy<Cell>, BoxedStrategy<Cell>)> =
                columns.iter().map(|c| (cell(c.0), cell(c.0))).collect();
            (
                Just(columns.clone()),
                Just(shards),
                items,
                (0..=width, equal, any::<Index>()),
                0u8..7,
                bounds,
                (any::<Index>(), any::<Index>()),
                (any::<bool>(), prop::option::of(0usize..10)),
                prop::collection::vec(1usize..5, 32),
            )
        })
        .prop_map(
            |(columns, shards, items, (j, equal, from), op, bounds, (string, cut), (desc, limit), pages)| {
                // Equal values: often an item's own, so that something matches.
                let mut equal: Vec<Cell> = equal.into_iter().take(j).collect();
                if !items.is_empty() && from.index(3) > 0 {
                    let item = &items[from.index(items.len())];
                    for (k, cell) in equal.iter_mut().enumerate() {
                        *cell = if k == 0 {
                            item.fields[0].clone()
                        } else {
                            item.attributes[k - 1].clone()
                        };
                    }
                }
                let bounds = bounds.get(j).cloned().unwrap_or((Cell::Missing, Cell::Missing));
                let string = STRINGS[string.index(STRINGS.len())];
                let prefix = string.chars().take(cut.index(string.chars().count() + 1)).collect();
                Scenario {
                    columns,
                    shards,
                    items,
                    equal,
                    op,
                    bounds,
                    prefix,
                    desc,
                    limit,
                    pages,
                }
            },
        )
}

/// The canonical value a cell decodes to (missing and NULL are null).
fn canonical(cell: &Cell) -> SortValue {
    match cell {
        Cell::Missing | Cell::Null => SortValue::Null,
        Cell::Is(p) => p.canonical.clone(),
    }
}

fn given(cell: &Cell) -> SortValue {
    match cell {
        Cell::Missing | Cell::Null => SortValue::Null,
        Cell::Is(p) => p.given.clone(),
    }
}

/// Every row of the items, as the index table holds them: key → source id.
fn table(config: &Config, items: &[Item]) -> BTreeMap<RowKey, usize> {
    let (index, source) = (&config.indexes[0], &config.tables[0]);
    let mut rows = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        let derived = index::rows(index, source, &image(i, item)).expect("rows");
        assert!(derived.problems.is_empty(), "{:?}", derived.problems);
        for key in derived.keys {
            rows.insert(key, i);
        }
    }
    rows
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    /// `plan`, one paginated Query per shard and the merge return exactly
    /// the rows of the partition whose decoded values pass the conditions,
    /// in the columns' order (then the source key's), reversed with `desc`,
    /// cut at the limit; the same with shards as without.
    #[test]
    fn a_query_returns_the_filtered_rows_in_order(s in scenario()) {
        let sharded = parse(&index_text(&s.columns, s.shards), "q.toml").map_err(|e| TestCaseError::fail(e.to_string()))?;
        let plain = parse(&index_text(&s.columns, 1), "q.toml").map_err(|e| TestCaseError::fail(e.to_string()))?;
        let (a, b) = (&s.bounds.0, &s.bounds.1);
        let (range, expect) = match s.op {
            1 => (Some(ColumnCondition::Lt(given(a))), Some(Expect::Lt(canonical(a)))),
            2 => (Some(ColumnCondition::Le(given(a))), Some(Expect::Le(canonical(a)))),
            3 => (Some(ColumnCondition::Gt(given(a))), Some(Expect::Gt(canonical(a)))),
            4 => (Some(ColumnCondition::Ge(given(a))), Some(Expect::Ge(canonical(a)))),
            5 => (
                Some(ColumnCondition::Between(given(a), given(b))),
                Some(Expect::Between(canonical(a), canonical(b))),
            ),
            6 => (Some(ColumnCondition::BeginsWith(s.prefix.clone())), Some(Expect::Begins(s.prefix.clone()))),
            _ => (None, None),
        };
        let j = s.equal.len();
        let conditions = Conditions { equal: s.equal.iter().map(given).collect(), range };
        // Refused must be exactly the conditions that are no range of one
        // type (which refusal is the range tests' business).
        let null = |c: &Cell| canonical(c) == SortValue::Null;
        let refusable = match (s.op, s.columns.get(j)) {
            (0, _) => false,
            (_, None) => true,
            (6, Some(c)) => !matches!(c.0, ColumnType::S | ColumnType::Any),
            (5, _) => null(a) || null(b) || canonical(a).type_name() != canonical(b).type_name(),
            _ => null(a),
        };
        let query = match (plan(&sharded.indexes[0], &sharded.tables[0], QUERIED, &conditions), refusable) {
            (Ok(query), false) => query,
            (Err(QueryError::Condition(_)), true) => return Ok(()),
            (result, _) => return Err(TestCaseError::fail(format!("{result:?} for {conditions:?}"))),
        };

        // Expected: the unsharded rows of the partition, filtered and sorted by their decoded values.
        let key_columns = query.key_columns.clone();
        let mut expected: Vec<(Vec<SortValue>, String)> = table(&plain, &s.items)
            .into_keys()
            .filter(|k| k.partition == QUERIED)
            .map(|k| (decode(&key_columns, &k.sort).expect("a row's key decodes"), k.sort))
            .filter(|(values, _)| {
                values[..j].iter().zip(&s.equal).all(|(v, e)| *v == canonical(e))
                    && expect.as_ref().is_none_or(|x| satisfies(&values[j], x))
            })
            .collect();
        expected.sort_by(|x, y| cmp_tuples(&key_columns, &x.0, &y.0));
        if s.desc {
            expected.reverse();
        }
        expected.truncate(s.limit.unwrap_or(usize::MAX));
        let expected: Vec<String> = expected.into_iter().map(|(_, k)| k).collect();

        // Actual: each shard's partition read as DynamoDB would (the key
        // condition only, in key order), a page at a time, through the merge.
        let rows = table(&sharded, &s.items);
        for key in rows.keys() {
            prop_assert!(
                !key.partition.starts_with(QUERIED) || query.partitions.contains(&key.partition),
                "row in partition {:?}, not among {:?}", key.partition, query.partitions
            );
        }
        let condition = match &query.range {
            KeyRange::Keys { condition, .. } => condition.clone(),
            KeyRange::Empty => None,
        };
        let mut partitions: Vec<Vec<(String, usize)>> = query
            .partitions
            .iter()
            .map(|p| {
                let mut keys: Vec<(String, usize)> = rows
                    .iter()
                    .filter(|(k, _)| k.partition == *p && condition.as_ref().is_none_or(|c| c.matches(&k.sort)))
                    .map(|(k, i)| (k.sort.clone(), *i))
                    .collect();
                if s.desc {
                    keys.reverse();
                }
                keys
            })
            .collect();
        let mut merge = query.merge::<usize>(s.desc, s.limit);
        let mut pages = s.pages.iter().cycle();
        let mut actual = Vec::new();
        loop {
            match merge.step() {
                Step::Row(key, _) => actual.push(key),
                Step::Done => break,
                Step::Fetch => {
                    for run in merge.wanted() {
                        let size = pages.next().copied().unwrap_or(1).min(merge.page_limit().unwrap_or(usize::MAX));
                        let rest = &mut partitions[run];
                        let page: Vec<(String, usize)> = rest.drain(..size.min(rest.len())).collect();
                        let more = !rest.is_empty();
                        merge.feed(run, page, more).map_err(|e| TestCaseError::fail(e.to_string()))?;
                    }
                }
            }
        }
        prop_assert_eq!(actual, expected, "{:?} over {:?}", query.range, query.partitions);
    }
}

/// The property above is only worth something if its scenarios return
/// rows, and leave some: check that they do, often enough.
#[test]
fn scenarios_return_rows_and_leave_some() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut with_rows, mut filtered, mut sharded) = (0, 0, 0);
    for _ in 0..300 {
        let s = scenario().new_tree(&mut runner).unwrap().current();
        let config = parse(&index_text(&s.columns, s.shards), "q.toml").unwrap();
        let conditions = Conditions {
            equal: s.equal.iter().map(given).collect(),
            range: None,
        };
        let Ok(query) = plan(&config.indexes[0], &config.tables[0], QUERIED, &conditions) else {
            continue;
        };
        let rows = table(&config, &s.items);
        let in_partition = rows.keys().filter(|k| query.partitions.contains(&k.partition)).count();
        let taken = rows
            .keys()
            .filter(|k| query.partitions.contains(&k.partition) && query.range.matches(&k.sort))
            .count();
        with_rows += usize::from(taken > 0);
        filtered += usize::from(taken < in_partition);
        sharded += usize::from(s.shards > 1 && taken > 1);
    }
    assert!(
        with_rows >= 100 && filtered >= 50 && sharded >= 50,
        "{with_rows} with rows, {filtered} filtered, {sharded} sharded"
    );
}
