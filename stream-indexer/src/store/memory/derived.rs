//! The derived data of the in-memory tables, as stored and as recomputed
//! from scratch: what tests and replays compare.

use super::*;

impl MemoryStore {
    /// The rows of one index, in key order: the key and the non-key attributes.
    pub fn rows(&self, index: usize) -> Vec<(RowKey, Image)> {
        let mut state = self.lock();
        state
            .rows
            .after(index, None)
            .map(|(key, row)| (key.clone(), Image::clone(row)))
            .collect()
    }

    /// The stored sets of every node of edge set `edge_set`, by node id.
    pub fn node_sets(&self, edge_set: usize) -> BTreeMap<String, NodeSet> {
        let Some(set) = self.config.edge_sets.get(edge_set) else {
            return BTreeMap::new();
        };
        let Ok(table) = self.table(&set.table) else {
            return BTreeMap::new();
        };
        let state = self.lock();
        let mut out = BTreeMap::new();
        for item in state
            .tables
            .get(&set.table)
            .into_iter()
            .flat_map(|items| items.values())
            .map(Packed::unpack)
        {
            if let Ok(GraphItem::Node { id }) = edge::classify(set, table, &item) {
                let members = match item.get(&set.attribute) {
                    Some(Value::Ss(members)) => members.iter().cloned().collect(),
                    _ => BTreeSet::new(),
                };
                let complete = match item.get(&set.complete_attribute) {
                    Some(Value::Bool(b)) => Some(*b),
                    _ => None,
                };
                out.insert(id.to_owned(), NodeSet { members, complete });
            }
        }
        out
    }

    /// The derived data as stored: every index row and every node's set.
    pub fn snapshot(&self) -> Derived {
        let rows = self.lock().rows.sorted();
        let mut sets = BTreeMap::new();
        for e in 0..self.config.edge_sets.len() {
            for (node, set) in self.node_sets(e) {
                sets.insert((e, node), set);
            }
        }
        Derived { rows, sets }
    }

    /// The derived data recomputed from scratch over the source tables: what
    /// [`MemoryStore::snapshot`] must equal once the stream is processed.
    /// Items that cannot be indexed produce no rows; every node's set holds
    /// the members of its partition's edges and is marked complete (unless it
    /// has more than `max_members`, when it is expected flagged, with
    /// whatever members it has).
    pub fn recompute(&self) -> Derived {
        let state = self.lock();
        let mut derived = Derived::default();
        for (i, index) in self.config.indexes.iter().enumerate() {
            let Some(table) = self.config.table(&index.source.table) else {
                continue;
            };
            for item in state
                .tables
                .get(&table.name)
                .into_iter()
                .flat_map(|items| items.values())
                .map(Packed::unpack)
            {
                let rows = index::rows(index, table, &item).unwrap_or_default();
                let projection = Projection::new(rows.projection);
                for key in rows.keys {
                    derived.rows.insert((i, key), projection.clone());
                }
            }
        }
        for (e, set) in self.config.edge_sets.iter().enumerate() {
            let Some(table) = self.config.table(&set.table) else {
                continue;
            };
            let items: Vec<Image> = state
                .tables
                .get(&set.table)
                .into_iter()
                .flat_map(|items| items.values())
                .map(Packed::unpack)
                .collect();
            let mut sets: BTreeMap<String, NodeSet> = items
                .iter()
                .filter_map(|item| match edge::classify(set, table, item) {
                    Ok(GraphItem::Node { id }) => Some((
                        id.to_owned(),
                        NodeSet {
                            members: BTreeSet::new(),
                            complete: Some(true),
                        },
                    )),
                    _ => None,
                })
                .collect();
            for item in &items {
                if let Ok(GraphItem::Edge { node, .. }) = edge::classify(set, table, item) {
                    if let (Some(node_set), Ok(Some(member))) = (sets.get_mut(node), edge::member(set, item)) {
                        node_set.members.insert(member);
                    }
                }
            }
            for (node, mut node_set) in sets {
                if node_set.members.len() > set.max_members {
                    node_set.complete = Some(false);
                }
                derived.sets.insert((e, node), node_set);
            }
        }
        derived
    }
}
