//! A node UpdateItem under a [`SetStamp`]: the names and values it adds,
//! the condition on the node's edge mark, the `SET` of the new mark, and
//! what a failed condition means.

use model::version::EDGE_MARK_ATTRIBUTE;
use model::Version;

use super::*;
use crate::store::{MarkGuard, SetStamp};

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
    if stamp.guard != MarkGuard::None {
        // Tell a stale node from a missing one.
        request = request.return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    }
    request
}

/// `base` (a condition) and the stamp's condition on the mark.
pub(in crate::store) fn condition(base: &str, stamp: &SetStamp) -> String {
    match &stamp.guard {
        MarkGuard::None => base.to_owned(),
        MarkGuard::NotNewer(_) => format!("{base} AND (attribute_not_exists(#mark) OR #mark <= :guard)"),
        MarkGuard::AsRead(Some(_)) => format!("{base} AND #mark = :guard"),
        MarkGuard::AsRead(None) => format!("{base} AND attribute_not_exists(#mark)"),
    }
}

/// `base` (an update expression ending with its `SET` clause) and the
/// stamp's `SET` of the mark.
pub(in crate::store) fn update(base: &str, stamp: &SetStamp) -> String {
    match stamp.mark {
        Some(_) => format!("{base}, #mark = :mark"),
        None => base.to_owned(),
    }
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
    !stamp.admits(stored_mark(item).as_ref())
}

#[cfg(test)]
mod tests {
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
        };
        assert!(condition("x", &as_read).ends_with("attribute_not_exists(#mark)"));
        assert!(stale(&item("1"), &as_read));
    }
}
