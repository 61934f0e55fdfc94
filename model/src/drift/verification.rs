//! A whole verification: what the scanned source items should produce, checked against the stored rows and sets as they stream by.

use super::*;

/// A row some source item produces, not yet matched with a stored row.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ExpectedRow {
    attributes: Image,
    source: Image,
}

/// One whole check: feed it every source item of the scope's tables
/// ([`Verification::source_item`]) and then every row of the scope's index
/// tables ([`Verification::index_row`]); [`Verification::finish`] gives the
/// report.
///
/// Memory: the rows the source items produce are held until their stored row
/// is seen (key, projection and source key of each), and every node's stored
/// set and the members its edges produce; stored rows are compared as they
/// come and only findings are kept.
#[derive(Debug)]
pub struct Verification<'c> {
    config: &'c Config,
    scope: Scope,
    rows: BTreeMap<(usize, RowKey), ExpectedRow>,
    /// Rows compared, with their finding (kept sorted at the end).
    found: Vec<Finding>,
    nodes: BTreeMap<(usize, String), (Image, SetState)>,
    members: BTreeMap<(usize, String), BTreeSet<String>>,
    notices: Vec<Notice>,
    scanned: Scanned,
}

impl<'c> Verification<'c> {
    pub fn new(config: &'c Config, scope: Scope) -> Verification<'c> {
        Verification {
            config,
            scope,
            rows: BTreeMap::new(),
            found: Vec::new(),
            nodes: BTreeMap::new(),
            members: BTreeMap::new(),
            notices: Vec::new(),
            scanned: Scanned::default(),
        }
    }

    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// One item of source table `table` (ignored if the table is not declared).
    pub fn source_item(&mut self, table: &str, item: &Image) {
        let config = self.config;
        let Some(t) = config.table(table) else { return };
        self.scanned.items += 1;
        for &i in &self.scope.indexes {
            let Some(index) = config.indexes.get(i).filter(|x| x.source.table == table) else {
                continue;
            };
            let notice = |detail: String| Notice {
                kind: NoticeKind::Unindexable,
                about: index.name.clone(),
                key: key_image(t, item),
                detail,
            };
            match index::rows(index, t, item) {
                Ok(rows) => {
                    self.notices.extend(rows.problems.iter().map(|p| notice(p.to_string())));
                    let source = key_image(t, item);
                    for key in rows.keys {
                        self.rows.insert(
                            (i, key),
                            ExpectedRow {
                                attributes: rows.projection.clone(),
                                source: source.clone(),
                            },
                        );
                    }
                }
                Err(e) => self.notices.push(notice(e.to_string())),
            }
        }
        for &e in &self.scope.edge_sets {
            let Some(set) = config.edge_sets.get(e).filter(|x| x.table == table) else {
                continue;
            };
            let about = || format!("{}.{}", set.table, set.attribute);
            match edge::classify(set, t, item) {
                Ok(GraphItem::Node { id }) => {
                    self.scanned.nodes += 1;
                    let state = set_state(set, item).unwrap_or_else(|state| {
                        self.notices.push(Notice {
                            kind: NoticeKind::BadSet,
                            about: about(),
                            key: key_image(t, item),
                            detail: format!("attribute `{}` is not a String Set", set.attribute),
                        });
                        state
                    });
                    self.nodes.insert((e, id.to_owned()), (key_image(t, item), state));
                }
                Ok(GraphItem::Edge { node, .. }) => match edge::member(set, item) {
                    Ok(Some(member)) => {
                        self.members.entry((e, node.to_owned())).or_default().insert(member);
                    }
                    Ok(None) => {}
                    Err(err) => self.notices.push(Notice {
                        kind: NoticeKind::BadEdge,
                        about: about(),
                        key: key_image(t, item),
                        detail: err.to_string(),
                    }),
                },
                Ok(GraphItem::Skipped) => {}
                Err(err) => self.notices.push(Notice {
                    kind: NoticeKind::BadEdge,
                    about: about(),
                    key: key_image(t, item),
                    detail: err.to_string(),
                }),
            }
        }
    }

    /// One stored row of index `index`: its key and non-key attributes, as
    /// stored (a tombstone is no row, and a row's version is not drift).
    /// Call only once every source item has been fed.
    pub fn index_row(&mut self, index: usize, key: RowKey, attributes: Image) {
        if !self.scope.indexes.contains(&index) {
            return;
        }
        let Some(attributes) = crate::version::live_row(attributes) else {
            return;
        };
        self.scanned.rows += 1;
        let expected = self.rows.remove(&(index, key.clone()));
        if let Some((kind, correction)) =
            compare_row(index, &key, expected.as_ref().map(|e| &e.attributes), Some(&attributes))
        {
            let source = match &expected {
                Some(e) => Some(e.source.clone()),
                None => self
                    .config
                    .indexes
                    .get(index)
                    .and_then(|x| self.config.table(&x.source.table))
                    .and_then(|t| row_source(t, &attributes)),
            };
            let found = (kind == DriftKind::WrongProjection).then_some(attributes);
            self.found.push(Finding {
                kind,
                correction,
                source,
                found,
            });
        }
    }

    /// The report: rows never seen are missing; every node's set is compared
    /// with its partition's edges.
    pub fn finish(self) -> Report {
        let mut findings = self.found;
        for ((index, key), expected) in self.rows {
            if let Some((kind, correction)) = compare_row(index, &key, Some(&expected.attributes), None) {
                findings.push(Finding {
                    kind,
                    correction,
                    source: Some(expected.source),
                    found: None,
                });
            }
        }
        findings.sort_by_key(|a| a.correction.target());
        let mut notices = self.notices;
        let empty = BTreeSet::new();
        for ((e, node), (key, state)) in self.nodes {
            let Some(set) = self.config.edge_sets.get(e) else {
                continue;
            };
            let expected = self.members.get(&(e, node.clone())).unwrap_or(&empty);
            let check = compare_set(e, set, &node, &state, expected);
            if check.over_limit {
                notices.push(Notice {
                    kind: NoticeKind::Flagged,
                    about: format!("{}.{}", set.table, set.attribute),
                    key: key.clone(),
                    detail: format!(
                        "{} edges, over max_members = {}: readers Query the partition",
                        expected.len(),
                        set.max_members
                    ),
                });
            }
            findings.extend(check.findings.into_iter().map(|(kind, correction)| Finding {
                kind,
                correction,
                source: Some(key.clone()),
                found: None,
            }));
        }
        Report {
            findings,
            notices,
            scanned: self.scanned,
        }
    }
}
