//! A node UpdateItem under a [`SetStamp`]: the names and values it adds,
//! the condition on the node's edge mark (or its members' versions), the
//! `SET` of the new mark (and versions), and what a failed condition means.
//!
//! The members' versions are named `#mv0`, `#mv1`, … in the order of the
//! stamp's members, and their version is `:mv`.

use std::fmt::Write as _;

use model::version::{member_version_attribute, EDGE_MARK_ATTRIBUTE};
use model::Version;

use super::*;
use crate::store::{MarkGuard, MemberStamp, SetStamp};

/// Adds `#mark`, `:guard` and `:mark` to `request`, as far as the stamp uses them.
pub(in crate::store) fn names(request: UpdateItemFluentBuilder, stamp: &SetStamp) -> UpdateItemFluentBuilder {
    let guard = match &stamp.guard {
        MarkGuard::NotNewer(v) | MarkGuard::AsRead(Some(v)) => Some(v),
        MarkGuard::None | MarkGuard::AsRead(None) => None,
    };
    let mut request = request;
    if stamp.guard != MarkGuard::None || stamp.mark.is_some() {
        request = request.expression_attribute_names("#mark", EDGE_MARK_ATTRIBUTE);
    }
    if let Some(v) = guard {
        request = request.expression_attribute_values(":guard", AttributeValue::S(v.as_str().to_owned()));
    }
    if let Some(v) = &stamp.mark {
        request = request.expression_attribute_values(":mark", AttributeValue::S(v.as_str().to_owned()));
    }
    // DynamoDB refuses a value that no expression uses: `:mv` only with members.
    if let Some((version, members)) = stamp.members.parts().filter(|(_, members)| !members.is_empty()) {
        for (i, member) in members.iter().enumerate() {
            request = request.expression_attribute_names(format!("#mv{i}"), member_version_attribute(member));
        }
        request = request.expression_attribute_values(":mv", AttributeValue::S(version.as_str().to_owned()));
    }
    if stamp.guard != MarkGuard::None || matches!(stamp.members, MemberStamp::Newer { .. }) {
        // Tell a stale node from a missing one.
        request = request.return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    }
    request
}

/// `base` (a condition) and the stamp's condition on the mark.
pub(in crate::store) fn condition(base: &str, stamp: &SetStamp) -> String {
    let mut condition = match &stamp.guard {
        MarkGuard::None => base.to_owned(),
        MarkGuard::NotNewer(_) => format!("{base} AND (attribute_not_exists(#mark) OR #mark <= :guard)"),
        MarkGuard::AsRead(Some(_)) => format!("{base} AND #mark = :guard"),
        MarkGuard::AsRead(None) => format!("{base} AND attribute_not_exists(#mark)"),
    };
    if let MemberStamp::Newer { members, .. } = &stamp.members {
        for i in 0..members.len() {
            let _ = write!(condition, " AND (attribute_not_exists(#mv{i}) OR #mv{i} < :mv)");
        }
    }
    condition
}

/// `base` (an update expression ending with its `SET` clause) and the
/// stamp's `SET` of the mark.
pub(in crate::store) fn update(base: &str, stamp: &SetStamp) -> String {
    let mut update = match stamp.mark {
        Some(_) => format!("{base}, #mark = :mark"),
        None => base.to_owned(),
    };
    match &stamp.members {
        MemberStamp::None => {}
        MemberStamp::Newer { members, .. } => {
            for i in 0..members.len() {
                let _ = write!(update, ", #mv{i} = :mv");
            }
        }
        MemberStamp::Restore { members, .. } => {
            for i in 0..members.len() {
                let _ = write!(update, ", #mv{i} = if_not_exists(#mv{i}, :mv)");
            }
        }
    }
    update
}

/// The edge mark of a node item as it was.
pub(in crate::store) fn stored_mark(item: &HashMap<String, AttributeValue>) -> Option<Version> {
    match item.get(EDGE_MARK_ATTRIBUTE) {
        Some(AttributeValue::S(text)) => Version::parse_stored(text),
        _ => None,
    }
}

/// Whether the node that failed a condition failed the stamp's guard.
pub(in crate::store) fn stale(item: &HashMap<String, AttributeValue>, stamp: &SetStamp) -> bool {
    let member = |m: &str| match item.get(&member_version_attribute(m)) {
        Some(AttributeValue::S(text)) => Version::parse_stored(text),
        _ => None,
    };
    !stamp.admits(stored_mark(item).as_ref()) || !stamp.members.admits(member)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn v(n: &str) -> Version {
        Version::of_sequence(n).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn conditions_and_updates_follow_the_stamp() {
        let none = SetStamp::default();
        assert_eq!(condition("attribute_exists(#pk)", &none), "attribute_exists(#pk)");
        assert_eq!(update("SET #a = :b", &none), "SET #a = :b");
        let newer = SetStamp {
            guard: MarkGuard::NotNewer(v("5")),
            mark: Some(v("5")),
            ..SetStamp::default()
        };
        assert_eq!(
            condition("attribute_exists(#pk)", &newer),
            "attribute_exists(#pk) AND (attribute_not_exists(#mark) OR #mark <= :guard)"
        );
        assert_eq!(update("SET #a = :b", &newer), "SET #a = :b, #mark = :mark");
        let item = |mark: &str| {
            HashMap::from([(
                EDGE_MARK_ATTRIBUTE.to_owned(),
                AttributeValue::S(v(mark).as_str().to_owned()),
            )])
        };
        assert!(stale(&item("6"), &newer));
        assert!(!stale(&item("5"), &newer));
        assert!(!stale(&HashMap::new(), &newer));
        let as_read = SetStamp {
            guard: MarkGuard::AsRead(None),
            mark: None,
            ..SetStamp::default()
        };
        assert!(condition("x", &as_read).ends_with("attribute_not_exists(#mark)"));
        assert!(stale(&item("1"), &as_read));
    }

    /// The `#` names and `:` values an expression uses.
    fn placeholders(expression: &str) -> BTreeSet<String> {
        let mut found = BTreeSet::new();
        let mut rest = expression;
        while let Some(at) = rest.find(['#', ':']) {
            let tail = &rest[at + 1..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(tail.len());
            found.insert(rest[at..at + 1 + end].to_owned());
            rest = &tail[end..];
        }
        found
    }

    /// DynamoDB refuses a request that defines a name or value no
    /// expression uses, or uses one it does not define: for every shape of
    /// stamp, what [`names`] defines is what [`condition`] and [`update`] use.
    #[test]
    fn a_stamp_defines_exactly_the_names_and_values_its_expressions_use() {
        let client = Client::from_conf(
            aws_sdk_dynamodb::Config::builder()
                .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
                .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
                .build(),
        );
        let members = ["GOALMEMBERSHIP-USER-1".to_owned(), "GOALMEMBERSHIP-USER-2".to_owned()];
        let guards = [
            MarkGuard::None,
            MarkGuard::NotNewer(v("4")),
            MarkGuard::AsRead(Some(v("4"))),
            MarkGuard::AsRead(None),
        ];
        let mut shapes = 0;
        for guard in &guards {
            for mark in [None, Some(v("5"))] {
                for count in 0..=members.len() {
                    let taken = &members[..count];
                    for stamped in [
                        MemberStamp::None,
                        MemberStamp::Newer {
                            version: v("5"),
                            members: taken,
                        },
                        MemberStamp::Restore {
                            version: v("5"),
                            members: taken,
                        },
                    ] {
                        let stamp = SetStamp {
                            guard: guard.clone(),
                            mark: mark.clone(),
                            members: stamped,
                        };
                        let request = names(client.update_item(), &stamp);
                        let input = request.as_input();
                        let names_defined = input.get_expression_attribute_names().iter().flat_map(|m| m.keys());
                        let values_defined = input.get_expression_attribute_values().iter().flat_map(|m| m.keys());
                        let defined: BTreeSet<String> = names_defined.chain(values_defined).cloned().collect();
                        let used: BTreeSet<String> = placeholders(&condition("attribute_exists(#pk)", &stamp))
                            .into_iter()
                            .chain(placeholders(&update("SET #a = :b", &stamp)))
                            .filter(|p| !["#pk", "#a", ":b"].contains(&p.as_str()))
                            .collect();
                        assert_eq!(defined, used, "{stamp:?}");
                        shapes += 1;
                    }
                }
            }
        }
        assert_eq!(shapes, guards.len() * 2 * (members.len() + 1) * 3);
    }

    #[test]
    fn each_member_is_conditioned_on_and_stamped_with_its_own_version() {
        let members = vec!["GOALMEMBERSHIP-USER-1".to_owned(), "GOALMEMBERSHIP-USER-2".to_owned()];
        let newer = SetStamp {
            mark: Some(v("7")),
            members: MemberStamp::Newer {
                version: v("7"),
                members: &members,
            },
            ..SetStamp::default()
        };
        assert_eq!(
            condition("attribute_exists(#pk)", &newer),
            "attribute_exists(#pk) AND (attribute_not_exists(#mv0) OR #mv0 < :mv) \
             AND (attribute_not_exists(#mv1) OR #mv1 < :mv)"
        );
        assert_eq!(
            update("SET #a = :b", &newer),
            "SET #a = :b, #mark = :mark, #mv0 = :mv, #mv1 = :mv"
        );
        let restore = SetStamp {
            members: MemberStamp::Restore {
                version: v("7"),
                members: &members[..1],
            },
            ..SetStamp::default()
        };
        assert_eq!(condition("x", &restore), "x", "a restore adds what the table holds now");
        assert_eq!(
            update("SET #a = :b", &restore),
            "SET #a = :b, #mv0 = if_not_exists(#mv0, :mv)"
        );
        let holding = |version: &str| {
            HashMap::from([(
                member_version_attribute(&members[1]),
                AttributeValue::S(v(version).as_str().to_owned()),
            )])
        };
        assert!(stale(&holding("7"), &newer), "the same change again");
        assert!(stale(&holding("9"), &newer));
        assert!(!stale(&holding("6"), &newer));
        assert!(!stale(&HashMap::new(), &newer));
        assert!(!stale(&holding("9"), &restore));
    }
}
