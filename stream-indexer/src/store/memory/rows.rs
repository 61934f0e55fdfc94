//! The index rows of the in-memory store: a hash map for the writes (one
//! hash of the key per write, where a B-tree compares long keys a dozen
//! times), and the rows' key order, built when a scan or a dump asks for it
//! and kept until the next write.

use std::collections::HashMap;

use model::index::RowKey;
use model::Projection;

#[derive(Default)]
pub(super) struct Rows {
    map: HashMap<(usize, RowKey), Projection>,
    /// Every key, sorted; `None` after a write.
    order: Option<Vec<(usize, RowKey)>>,
}

impl Rows {
    pub(super) fn put(&mut self, index: usize, key: RowKey, projection: Projection) {
        self.map.insert((index, key), projection);
        self.order = None;
    }

    pub(super) fn delete(&mut self, index: usize, key: RowKey) {
        if self.map.remove(&(index, key)).is_some() {
            self.order = None;
        }
    }

    pub(super) fn get(&self, index: usize, key: RowKey) -> Option<&Projection> {
        self.map.get(&(index, key))
    }

    /// The rows of `index` after `after` (from the first when `None`), in
    /// key order.
    pub(super) fn after(
        &mut self,
        index: usize,
        after: Option<&RowKey>,
    ) -> impl Iterator<Item = (&RowKey, &Projection)> + '_ {
        let map = &self.map;
        let order = self.order.get_or_insert_with(|| {
            let mut keys: Vec<(usize, RowKey)> = map.keys().cloned().collect();
            keys.sort_unstable();
            keys
        });
        let start = match after {
            None => order.partition_point(|(i, _)| *i < index),
            Some(key) => order.partition_point(|(i, k)| (*i, k) <= (index, key)),
        };
        order[start..]
            .iter()
            .take_while(move |(i, _)| *i == index)
            .filter_map(move |entry| map.get(entry).map(|row| (&entry.1, row)))
    }

    /// Every row, in key order.
    pub(super) fn sorted(&self) -> std::collections::BTreeMap<(usize, RowKey), Projection> {
        self.map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(p: &str, s: &str) -> RowKey {
        RowKey {
            partition: p.to_owned(),
            sort: s.to_owned(),
        }
    }

    fn keys(rows: &mut Rows, index: usize, after: Option<&RowKey>) -> Vec<String> {
        rows.after(index, after)
            .map(|(k, _)| format!("{}/{}", k.partition, k.sort))
            .collect()
    }

    #[test]
    fn rows_come_in_key_order_per_index_and_the_order_follows_writes() {
        let mut rows = Rows::default();
        let p = Projection::default();
        for (i, part, sort) in [
            (1, "b", "2"),
            (0, "z", "1"),
            (1, "a", "9"),
            (1, "b", "1"),
            (2, "a", "1"),
        ] {
            rows.put(i, key(part, sort), p.clone());
        }
        assert_eq!(keys(&mut rows, 1, None), ["a/9", "b/1", "b/2"]);
        assert_eq!(keys(&mut rows, 1, Some(&key("a", "9"))), ["b/1", "b/2"]);
        assert_eq!(keys(&mut rows, 1, Some(&key("b", "2"))), Vec::<String>::new());
        assert_eq!(keys(&mut rows, 3, None), Vec::<String>::new());
        rows.delete(1, key("b", "1"));
        rows.put(1, key("a", "0"), p.clone());
        assert_eq!(
            keys(&mut rows, 1, None),
            ["a/0", "a/9", "b/2"],
            "a write is seen by the next scan"
        );
        assert!(rows.get(0, key("z", "1")).is_some());
        assert_eq!(rows.sorted().len(), 5);
    }
}
