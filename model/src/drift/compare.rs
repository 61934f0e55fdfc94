//! Comparing one source item's rows, or one node's set, with what they should be: the findings and their corrections; values compared as DynamoDB compares them.

use super::*;

/// A node's edge set as stored on its item.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SetState {
    pub members: BTreeSet<String>,
    /// The node's `complete_attribute`, when it is a BOOL.
    pub complete: Option<bool>,
}

/// The set and marker stored on a node item; `Err` (with the set read as
/// empty) when the set attribute is not a String Set.
pub fn set_state(set: &EdgeSetConfig, node: &Image) -> Result<SetState, SetState> {
    let complete = match node.get(&set.complete_attribute) {
        Some(Value::Bool(b)) => Some(*b),
        _ => None,
    };
    match node.get(&set.attribute) {
        None => Ok(SetState {
            members: BTreeSet::new(),
            complete,
        }),
        Some(Value::Ss(members)) => Ok(SetState {
            members: members.iter().cloned().collect(),
            complete,
        }),
        Some(_) => Err(SetState {
            members: BTreeSet::new(),
            complete,
        }),
    }
}

/// Compares one index row with what it should be. `expected`: the
/// projection the source item gives the row (`None`: no item produces it);
/// `actual`: the row's non-key attributes (`None`: no such row).
pub fn compare_row(
    index: usize,
    key: &RowKey,
    expected: Option<&Image>,
    actual: Option<&Image>,
) -> Option<(DriftKind, Mutation)> {
    match (expected, actual) {
        (None, None) => None,
        (Some(e), None) => Some((
            DriftKind::MissingRow,
            Mutation::PutRow {
                index,
                key: key.clone(),
                attributes: crate::Projection::new(e.clone()),
            },
        )),
        (None, Some(_)) => Some((
            DriftKind::ExtraRow,
            Mutation::DeleteRow {
                index,
                key: key.clone(),
            },
        )),
        (Some(e), Some(a)) if !same_image(e, a) => Some((
            DriftKind::WrongProjection,
            Mutation::PutRow {
                index,
                key: key.clone(),
                attributes: crate::Projection::new(e.clone()),
            },
        )),
        (Some(_), Some(_)) => None,
    }
}

/// The result of [`compare_set`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SetCheck {
    /// In the order to apply them: a node past the limit is flagged before
    /// anything else; otherwise members are added, then removed, and the
    /// marker set to `true` last, so a reader never sees `true` on a set
    /// still missing members.
    pub findings: Vec<(DriftKind, Mutation)>,
    /// The node has more edges than `max_members` (it should be flagged).
    pub over_limit: bool,
}

/// Compares one node's stored set with the members of its partition's edges.
pub fn compare_set(
    edge_set: usize,
    set: &EdgeSetConfig,
    node: &str,
    actual: &SetState,
    expected: &BTreeSet<String>,
) -> SetCheck {
    let mut findings = Vec::new();
    let marker = |complete| Mutation::SetMarker {
        edge_set,
        node: node.to_owned(),
        complete,
    };
    let extra = actual.members.difference(expected).map(|m| {
        (
            DriftKind::ExtraMember,
            Mutation::RemoveMember {
                edge_set,
                node: node.to_owned(),
                member: m.clone(),
            },
        )
    });
    let over_limit = expected.len() > set.max_members;
    if over_limit {
        if actual.complete != Some(false) {
            findings.push((DriftKind::FlagMissing, marker(false)));
        }
        findings.extend(extra);
    } else {
        findings.extend(expected.difference(&actual.members).map(|m| {
            (
                DriftKind::MissingMember,
                Mutation::AddMember {
                    edge_set,
                    node: node.to_owned(),
                    member: m.clone(),
                },
            )
        }));
        findings.extend(extra);
        match actual.complete {
            Some(true) => {}
            Some(false) => findings.push((DriftKind::FlagStale, marker(true))),
            None => findings.push((DriftKind::MarkerMissing, marker(true))),
        }
    }
    SetCheck { findings, over_limit }
}

/// What the items of one node's partition say about its set: the node item's
/// stored set (`None` when there is no node item) and the members its edges
/// produce. `items` are every item of the partition (a Query).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Partition {
    pub node: Option<(Image, SetState)>,
    pub expected: BTreeSet<String>,
    pub notices: Vec<Notice>,
}

/// Reads a node's partition (see [`Partition`]).
pub fn partition(set: &EdgeSetConfig, table: &TableConfig, node: &str, items: &[Image]) -> Partition {
    let mut out = Partition::default();
    let about = format!("{}.{}", set.table, set.attribute);
    for item in items {
        match edge::classify(set, table, item) {
            Ok(GraphItem::Node { id }) if id == node => {
                let state = set_state(set, item).unwrap_or_else(|state| {
                    out.notices.push(Notice {
                        kind: NoticeKind::BadSet,
                        about: about.clone(),
                        key: key_image(table, item),
                        detail: format!("attribute `{}` is not a String Set", set.attribute),
                    });
                    state
                });
                out.node = Some((key_image(table, item), state));
            }
            Ok(GraphItem::Edge { node: n, .. }) if n == node => match edge::member(set, item) {
                Ok(Some(member)) => {
                    out.expected.insert(member);
                }
                Ok(None) => {}
                Err(e) => out.notices.push(Notice {
                    kind: NoticeKind::BadEdge,
                    about: about.clone(),
                    key: key_image(table, item),
                    detail: e.to_string(),
                }),
            },
            _ => {}
        }
    }
    out
}

/// The primary key attributes of `item` in `table`.
pub fn key_image(table: &TableConfig, item: &Image) -> Image {
    table
        .primary_key()
        .into_iter()
        .filter_map(|name| item.get(name).map(|v| (name, v.clone())))
        .collect()
}

/// The key of the source item an index row says it comes from: the source
/// table's key attributes, which every row carries. `None` if one is missing.
pub fn row_source(table: &TableConfig, attributes: &Image) -> Option<Image> {
    let key = key_image(table, attributes);
    (key.len() == table.primary_key().len()).then_some(key)
}

/// Whether two images are equal as DynamoDB compares values (see [`same_value`]).
pub fn same_image(a: &Image, b: &Image) -> bool {
    a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same_value(v, w)))
}

/// Whether two values are equal as DynamoDB compares them: numbers by value,
/// sets whatever the order of their members, maps and lists element-wise.
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::N(x), Value::N(y)) => same_number(x, y),
        (Value::Ss(x), Value::Ss(y)) => x.iter().collect::<BTreeSet<_>>() == y.iter().collect::<BTreeSet<_>>(),
        (Value::Bs(x), Value::Bs(y)) => x.iter().collect::<BTreeSet<_>>() == y.iter().collect::<BTreeSet<_>>(),
        (Value::Ns(x), Value::Ns(y)) => {
            let canonical = |v: &[String]| -> BTreeSet<String> {
                v.iter()
                    .map(|n| sortkey::canonical_number(n).unwrap_or_else(|_| n.clone()))
                    .collect()
            };
            canonical(x) == canonical(y)
        }
        (Value::M(x), Value::M(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        (Value::L(x), Value::L(y)) => x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same_value(v, w)),
        _ => a == b,
    }
}

pub(super) fn same_number(x: &str, y: &str) -> bool {
    x == y
        || match (sortkey::canonical_number(x), sortkey::canonical_number(y)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
}
