//! A set update on the in-memory tables, as DynamoDB's UpdateItem of a
//! node's edge set does it: the node must exist, the stamp must admit the
//! update (the edge mark and the members' versions), an ADD that would pass
//! `max_members` flags the node instead, and the marker says which.

use super::packed::Aside;
use super::*;
use crate::store::MemberStamp;
use model::config::EdgeSetConfig;
use model::version::{member_version_attribute, MEMBER_VERSION_PREFIX};

/// The version a node's edge mark attribute holds, if well-formed.
pub(super) fn mark_of(held: Option<&Value>) -> Option<Version> {
    match held {
        Some(Value::S(text)) => Version::parse_stored(text),
        _ => None,
    }
}

/// Whether a request's members repeat one (DynamoDB refuses it). Most
/// requests carry one member or a few: those are compared without
/// allocating.
fn has_duplicates(members: &[String]) -> bool {
    match members.len() {
        0 | 1 => false,
        2..=16 => members.iter().enumerate().any(|(i, m)| members[i + 1..].contains(m)),
        _ => {
            let mut sorted: Vec<&String> = members.iter().collect();
            sorted.sort_unstable();
            sorted.windows(2).any(|w| w[0] == w[1])
        }
    }
}

/// Where a node item's member versions are: aside (see `packed`), or
/// among the attributes it shows (an item written with some by another).
enum Members<'a> {
    Aside(Aside<'a>),
    Shown(&'a Image),
}

impl Members<'_> {
    /// The text of the version attribute of `member`, if it is a string.
    fn text(&self, member: &str) -> Option<&str> {
        match self {
            Members::Aside(aside) => aside.text(MEMBER_VERSION_PREFIX, member),
            Members::Shown(item) => match item.get(&member_version_attribute(member)) {
                Some(Value::S(text)) => Some(text),
                _ => None,
            },
        }
    }

    /// Whether `member` has a version attribute, of any type.
    fn has(&self, member: &str) -> bool {
        match self {
            Members::Aside(aside) => aside.has(MEMBER_VERSION_PREFIX, member),
            Members::Shown(item) => item.contains_key(&member_version_attribute(member)),
        }
    }

    /// The version `member` holds.
    fn version(&self, member: &str) -> Option<Version> {
        self.text(member).and_then(Version::parse_stored)
    }
}

/// The members' version attributes an update under `stamp` writes: those
/// that change.
fn member_versions(held: &Members<'_>, stamp: &MemberStamp) -> Vec<(String, Value)> {
    let (version, members, restore) = match stamp {
        MemberStamp::None => return Vec::new(),
        MemberStamp::Newer { version, members } => (version, members, false),
        MemberStamp::Restore { version, members } => (version, members, true),
    };
    members
        .iter()
        .filter(|m| match held.text(m) {
            Some(held) => !restore && held != version.as_str(),
            // Absent, or not a string: a restore leaves what is there.
            None => !restore || !held.has(m),
        })
        .map(|m| (member_version_attribute(m), Value::S(version.as_str().to_owned())))
        .collect()
}

/// The mark value to set, when the stamp sets one that differs.
pub(super) fn new_mark(stored: Option<&Value>, stamp: &SetStamp) -> Option<Value> {
    let mark = Value::S(stamp.mark.as_ref()?.as_str().to_owned());
    (stored != Some(&mark)).then_some(mark)
}

impl State {
    /// An UpdateItem of `node`'s edge set `set` (of `table`), under `stamp`.
    pub(super) fn update_set(
        &mut self,
        set: &EdgeSetConfig,
        table: &TableConfig,
        node: &str,
        change: &SetChange,
        stamp: SetStamp<'_>,
    ) -> Result<SetOutcome, StoreError> {
        let members = match change {
            SetChange::Add(m) | SetChange::Remove(m) => m,
        };
        if has_duplicates(members) {
            return Err(StoreError::refused(
                "ValidationException: Input collection contains duplicates".to_owned(),
            ));
        }
        let recording = self.stream.is_some();
        let Some(stored) = self.tables.get_mut(&set.table).and_then(|items| items.node_mut(node)) else {
            // ConditionalCheckFailed: no node, nothing created.
            return Ok(SetOutcome::NodeMissing);
        };
        // Unpacked before the stamp is checked: a stale request is the rare
        // one. Its member versions stay packed, aside (see `packed`), unless
        // the item shows some (written by another, with its attributes):
        // then they are written among them.
        let (mut item, aside_of) = stored.split();
        let aside = !item.keys().any(|name| name.starts_with(MEMBER_VERSION_PREFIX));
        let held = item.get(EDGE_MARK_ATTRIBUTE);
        let versions_held = match aside {
            true => Members::Aside(aside_of),
            false => Members::Shown(&item),
        };
        if !stamp.admits(mark_of(held).as_ref()) || !stamp.members.admits(|m| versions_held.version(m)) {
            return Ok(SetOutcome::Stale);
        }
        let mark = new_mark(held, &stamp);
        let versions = member_versions(&versions_held, &stamp.members);
        let (current, sorted) = sorted_set(&mut item, &set.attribute)?;
        let (outcome, add, members) = effect(change, current, set.max_members);
        let marker = Value::Bool(outcome != SetOutcome::Flagged);
        let marker_changes = match item.get(&set.complete_attribute) {
            None => true,
            Some(_) if outcome == SetOutcome::Applied => false,
            Some(stored) => *stored != marker,
        };
        let shown_unchanged = members.is_empty() && !marker_changes && mark.is_none();
        if shown_unchanged && versions.is_empty() {
            if sorted {
                // Stored sorted from now on, as a write would leave it.
                *stored = aside_of.pack(&item, &[]);
            }
            return Ok(outcome);
        }
        let old = recording.then(|| item.clone());
        apply(&mut item, &set.attribute, &members, add);
        if marker_changes {
            item.insert(set.complete_attribute.as_str(), marker);
        }
        if let Some(mark) = mark {
            item.insert(EDGE_MARK_ATTRIBUTE, mark);
        }
        let packed = if aside {
            aside_of.pack(&item, &versions)
        } else {
            for (name, version) in versions {
                item.insert(name.as_str(), version);
            }
            aside_of.pack(&item, &[])
        };
        let was = std::mem::replace(stored, packed);
        if let Some(old) = old {
            let keys = key_image(table, &item);
            // The images leave the member versions out, but of an update
            // that changed nothing else: they would be equal.
            let (old, new) = match aside && shown_unchanged {
                true => (was.with_aside(old), stored.with_aside(item)),
                false => (old, item),
            };
            self.record(&set.table, keys, Some(old), Some(new), Origin::Pipeline);
        }
        Ok(outcome)
    }
}

/// The set `attribute` of `item`, sorted and distinct (a set's order means
/// nothing to DynamoDB; keeping it sorted makes each member a binary
/// search), and whether it had to be sorted here.
fn sorted_set<'i>(item: &'i mut Image, attribute: &str) -> Result<(&'i [String], bool), StoreError> {
    match item.get_mut(attribute) {
        None => Ok((&[], false)),
        Some(Value::Ss(m)) => {
            let sorted = !m.is_sorted();
            if sorted {
                m.sort_unstable();
                m.dedup();
            }
            Ok((m, sorted))
        }
        Some(_) => Err(StoreError::refused(
            "ValidationException: An operand in the update expression has an incorrect data type".to_owned(),
        )),
    }
}

/// What `change` does to the set `current` (sorted): its outcome, whether
/// it adds, and the members it adds or removes. An ADD that would pass
/// `max_members` adds nothing and flags the node.
fn effect<'c>(change: &'c SetChange, current: &[String], max_members: usize) -> (SetOutcome, bool, Vec<&'c String>) {
    let present = |m: &String| current.binary_search(m).is_ok();
    match change {
        SetChange::Add(members) => {
            let fresh: Vec<&String> = members.iter().filter(|m| !present(m)).collect();
            if current.len() + fresh.len() > max_members {
                (SetOutcome::Flagged, true, Vec::new())
            } else {
                (SetOutcome::Applied, true, fresh)
            }
        }
        SetChange::Remove(members) => (
            SetOutcome::Applied,
            false,
            members.iter().filter(|m| present(m)).collect(),
        ),
    }
}

/// Adds `members` to the sorted set `attribute` of `item` (or removes them);
/// a set left empty is removed, as DynamoDB removes it.
fn apply(item: &mut Image, attribute: &str, members: &[&String], add: bool) {
    if members.is_empty() {
        return;
    }
    let set_value = item.get_or_insert_with(attribute, || Value::Ss(Vec::new()));
    let Value::Ss(stored) = set_value else { return };
    for member in members {
        match (stored.binary_search(member), add) {
            (Err(at), true) => stored.insert(at, (*member).clone()),
            (Ok(at), false) => {
                stored.remove(at);
            }
            _ => {}
        }
    }
    if stored.is_empty() {
        item.remove(attribute);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// The duplicate check answers as a set of the members would, at
        /// every length (short lists take the path that does not allocate).
        #[test]
        fn duplicates_are_found_as_a_set_finds_them(members in proptest::collection::vec("[a-e]{1,2}", 0..40)) {
            let distinct: std::collections::BTreeSet<&String> = members.iter().collect();
            prop_assert_eq!(super::has_duplicates(&members), distinct.len() != members.len());
        }
    }
}
