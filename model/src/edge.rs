//! Edge sets: which items of a graph table are nodes and edges, and which
//! member an edge contributes to its node's String Set.
//!
//! A node is an item whose sort key equals its partition key. Any other item
//! of the partition is an edge of that node; its *edge type* is its sort key
//! up to the first `-` (`GOALMEMBERSHIP-USER-42` → `GOALMEMBERSHIP`), or the
//! whole sort key when it has no `-`.
//!
//! A member joins the configured parts of the edge with [`SEPARATOR`],
//! escaping `\` as `\\` and the separator as `\#`, so [`decode_member`]
//! recovers the parts exactly. Parts without those characters are copied as
//! they are: `GOALMEMBERSHIP-USER-42#400-CONTRIBUTOR`.

use std::borrow::Cow;

use smallvec::SmallVec;

use crate::config::{Config, EdgeSetConfig, TableConfig};
use crate::sortkey;
use crate::value::{Attr, Attrs, Scalar};

/// Joins the parts of a member.
pub const SEPARATOR: char = '#';
const ESCAPE: char = '\\';

/// What an item of a table with an edge set is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphItem<'a> {
    /// A node: sort key == partition key.
    Node { id: &'a str },
    /// An edge of node `node`, of a type the edge set includes.
    Edge { node: &'a str, edge_type: &'a str },
    /// An edge of a type the edge set skips.
    Skipped,
}

/// Why an item's graph role or member could not be worked out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EdgeError {
    #[error("key attribute `{attribute}` must be a String (S) in a table with an edge set, got {found}")]
    KeyNotString { attribute: String, found: &'static str },
    #[error("key attribute `{attribute}` is missing")]
    KeyMissing { attribute: String },
    #[error("member part `{attribute}` must be S or N, got {found}")]
    PartType { attribute: String, found: &'static str },
    #[error("member part `{attribute}`: {source}")]
    PartNumber {
        attribute: String,
        source: sortkey::SortKeyError,
    },
}

/// The edge type of an edge's sort key.
pub fn edge_type(sort_key: &str) -> &str {
    sort_key.split_once('-').map_or(sort_key, |(head, _)| head)
}

fn key_str<'a, I: Attrs>(item: &'a I, attribute: &str) -> Result<&'a str, EdgeError> {
    match item.get(attribute).map(Attr::scalar) {
        Some(Scalar::S(s)) => Ok(s),
        Some(other) => Err(EdgeError::KeyNotString {
            attribute: attribute.to_owned(),
            found: other.type_name(),
        }),
        None => Err(EdgeError::KeyMissing {
            attribute: attribute.to_owned(),
        }),
    }
}

/// Whether the item with these `keys`, of `table`, is a node of the
/// table's edge set (`false` for a table without one).
pub fn is_node<I: Attrs>(config: &Config, table: &TableConfig, keys: &I) -> bool {
    config
        .edge_set(&table.name)
        .is_some_and(|set| matches!(classify(set, table, keys), Ok(GraphItem::Node { .. })))
}

/// Classifies an item (or its keys) of `table`, which has the edge set `set`.
pub fn classify<'a, I: Attrs>(
    set: &EdgeSetConfig,
    table: &TableConfig,
    keys: &'a I,
) -> Result<GraphItem<'a>, EdgeError> {
    let pk = key_str(keys, &table.partition_key)?;
    // An edge set is only accepted on a table with a sort key (config validation).
    let sk = match &table.sort_key {
        Some(name) => key_str(keys, name)?,
        None => return Ok(GraphItem::Skipped),
    };
    if pk == sk {
        return Ok(GraphItem::Node { id: pk });
    }
    let ty = edge_type(sk);
    if set.include.iter().any(|t| t == ty) {
        Ok(GraphItem::Edge {
            node: pk,
            edge_type: ty,
        })
    } else {
        Ok(GraphItem::Skipped)
    }
}

/// The member an edge item contributes, or `None` when one of its parts is
/// missing (or NULL): such an edge is not replicated.
pub fn member<I: Attrs>(set: &EdgeSetConfig, item: &I) -> Result<Option<String>, EdgeError> {
    // The parts first, then the member in a string of their size: built
    // part by part, it would grow two or three times per member.
    let mut parts: SmallVec<[Cow<'_, str>; 4]> = SmallVec::new();
    for attribute in &set.member {
        match item.get(attribute).map(Attr::scalar) {
            None | Some(Scalar::Null(_)) => return Ok(None),
            Some(Scalar::S(s)) => parts.push(Cow::Borrowed(s)),
            Some(Scalar::N(n)) => {
                let canonical = sortkey::canonical_number(n).map_err(|source| EdgeError::PartNumber {
                    attribute: attribute.clone(),
                    source,
                })?;
                parts.push(Cow::Owned(canonical));
            }
            Some(other) => {
                return Err(EdgeError::PartType {
                    attribute: attribute.clone(),
                    found: other.type_name(),
                })
            }
        }
    }
    Ok(Some(encode_member(&parts)))
}

fn push_escaped(out: &mut String, part: &str) {
    // Both are ASCII, so a byte of either is that character: found without
    // decoding the part's characters.
    const _: () = assert!(SEPARATOR.is_ascii() && ESCAPE.is_ascii());
    if memchr::memchr2(SEPARATOR as u8, ESCAPE as u8, part.as_bytes()).is_none() {
        out.push_str(part);
        return;
    }
    for c in part.chars() {
        if c == SEPARATOR || c == ESCAPE {
            out.push(ESCAPE);
        }
        out.push(c);
    }
}

/// Splits a member back into its parts; `None` if it is not a valid encoding
/// (a dangling or unknown escape).
pub fn decode_member(member: &str) -> Option<Vec<String>> {
    let mut parts = vec![String::new()];
    let mut chars = member.chars();
    while let Some(c) = chars.next() {
        match c {
            ESCAPE => match chars.next() {
                Some(e @ (SEPARATOR | ESCAPE)) => parts.last_mut()?.push(e),
                _ => return None,
            },
            SEPARATOR => parts.push(String::new()),
            c => parts.last_mut()?.push(c),
        }
    }
    Some(parts)
}

/// Encodes parts into a member: [`member`]'s encoding, for tools and
/// tests as well.
pub fn encode_member<S: AsRef<str>>(parts: &[S]) -> String {
    // The parts and their separators; an escape (rare) grows it.
    let room = parts.iter().map(|part| part.as_ref().len() + 1).sum::<usize>();
    let mut out = String::with_capacity(room.saturating_sub(1));
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push(SEPARATOR);
        }
        push_escaped(&mut out, part.as_ref());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn edge_types() {
        assert_eq!(edge_type("GOALMEMBERSHIP-USER-42"), "GOALMEMBERSHIP");
        assert_eq!(edge_type("PLAIN"), "PLAIN");
        assert_eq!(edge_type("-X"), "");
    }

    #[test]
    fn plain_parts_are_copied() {
        assert_eq!(
            encode_member(&["GOALMEMBERSHIP-USER-42", "400-CONTRIBUTOR"]),
            "GOALMEMBERSHIP-USER-42#400-CONTRIBUTOR"
        );
    }

    #[test]
    fn a_node_is_an_item_of_an_edge_set_table_whose_keys_are_equal() {
        let config = crate::config::parse(crate::config::EXAMPLE_CONFIG, "example").expect("the example config");
        let keys = |table: &str, pk: &str, sk: &str| {
            let t = config.table(table).expect("a declared table");
            let sort_key = t.sort_key.clone().expect("a sort key");
            let keys = crate::value::Image::from([
                (t.partition_key.clone(), crate::value::Value::S(pk.to_owned())),
                (sort_key, crate::value::Value::S(sk.to_owned())),
            ]);
            is_node(&config, t, &keys)
        };
        assert!(keys("records", "GOAL-1", "GOAL-1"));
        assert!(!keys("records", "GOAL-1", "TEAM-1"), "an edge");
        assert!(!keys("issues", "issue-1", "issue-1"), "a table without an edge set");
    }

    #[test]
    fn escapes() {
        assert_eq!(encode_member(&["a#b", "c\\"]), "a\\#b#c\\\\");
        assert_eq!(
            decode_member("a\\#b#c\\\\"),
            Some(vec!["a#b".to_owned(), "c\\".to_owned()])
        );
        assert_eq!(decode_member("a\\"), None);
        assert_eq!(decode_member("a\\x"), None);
    }

    proptest! {
        #[test]
        fn members_round_trip(parts in proptest::collection::vec("[a-c#\\\\-]{0,6}", 1..4)) {
            let encoded = encode_member(&parts);
            prop_assert_eq!(decode_member(&encoded), Some(parts));
        }

        #[test]
        fn distinct_parts_give_distinct_members(a in proptest::collection::vec("[a#\\\\]{0,4}", 2), b in proptest::collection::vec("[a#\\\\]{0,4}", 2)) {
            prop_assert_eq!(a == b, encode_member(&a) == encode_member(&b));
        }
    }
}
