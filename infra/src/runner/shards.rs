//! Shard lineage: a shard's records may be processed only once its parent's
//! are (a split keeps one partition key's records in order across the
//! parent and its children). [`ready`] says which shards a consumer may
//! start now.

use std::collections::BTreeSet;

use super::stream::ShardInfo;

/// The shards of `shards` (DescribeStream's listing) that may start now,
/// in listing order: not finished, not started, and whose parent is
/// finished or gone from the listing (trimmed, or never known).
pub fn ready<'s>(
    shards: &'s [ShardInfo],
    finished: &BTreeSet<String>,
    started: &BTreeSet<String>,
) -> Vec<&'s ShardInfo> {
    let listed: BTreeSet<&str> = shards.iter().map(|s| s.id.as_str()).collect();
    shards
        .iter()
        .filter(|s| !finished.contains(&s.id) && !started.contains(&s.id))
        .filter(|s| match &s.parent {
            None => true,
            Some(parent) => finished.contains(parent) || !listed.contains(parent.as_str()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(id: &str, parent: Option<&str>) -> ShardInfo {
        ShardInfo {
            id: id.to_owned(),
            parent: parent.map(str::to_owned),
            closed: false,
        }
    }

    fn set(ids: &[&str]) -> BTreeSet<String> {
        ids.iter().map(|s| (*s).to_owned()).collect()
    }

    fn ids(shards: Vec<&ShardInfo>) -> Vec<&str> {
        shards.into_iter().map(|s| s.id.as_str()).collect()
    }

    #[test]
    fn children_wait_for_their_parent() {
        // a splits into b and c; c splits into d; e's parent was trimmed.
        let shards = vec![
            shard("a", None),
            shard("b", Some("a")),
            shard("c", Some("a")),
            shard("d", Some("c")),
            shard("e", Some("gone")),
        ];
        assert_eq!(ids(ready(&shards, &set(&[]), &set(&[]))), ["a", "e"]);
        assert_eq!(ids(ready(&shards, &set(&[]), &set(&["a", "e"]))), Vec::<&str>::new());
        assert_eq!(ids(ready(&shards, &set(&["a"]), &set(&["e"]))), ["b", "c"]);
        assert_eq!(ids(ready(&shards, &set(&["a", "c"]), &set(&["b", "e"]))), ["d"]);
        assert_eq!(
            ids(ready(&shards, &set(&["a", "b", "c", "d", "e"]), &set(&[]))),
            Vec::<&str>::new()
        );
    }
}
