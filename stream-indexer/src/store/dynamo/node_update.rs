//! One conditional UpdateItem of a node and what its answer means: written, no node, a conflict (the old item, for the exact `max_members` union), too large; and the plan of an ADD against `max_members`.

use super::*;

/// What one conditional `UpdateItem` of a node did.
pub(super) enum Attempt {
    Written,
    /// The condition failed and no item came back: there is no node (or the
    /// request did not ask for the item, in which case only the node-exists
    /// clause could fail).
    NodeMissing,
    /// The condition failed on an existing node: the item as it was (ALL_OLD).
    Conflict(HashMap<String, AttributeValue>),
    /// The update would pass DynamoDB's 400 KB item limit.
    TooLarge,
}

pub(super) fn attempt(
    table: &str,
    result: Result<UpdateItemOutput, SdkError<UpdateItemError, aws_sdk_dynamodb::config::http::HttpResponse>>,
) -> Result<Attempt, StoreError> {
    match result {
        Ok(_) => Ok(Attempt::Written),
        Err(SdkError::ServiceError(e)) if e.err().is_conditional_check_failed_exception() => Ok(match e.into_err() {
            UpdateItemError::ConditionalCheckFailedException(failed) => match failed.item {
                Some(item) if !item.is_empty() => Attempt::Conflict(item),
                _ => Attempt::NodeMissing,
            },
            _ => Attempt::NodeMissing,
        }),
        Err(SdkError::ServiceError(e)) if is_item_too_large(e.err().code(), e.err().message()) => Ok(Attempt::TooLarge),
        Err(e) => Err(store_error("UpdateItem", table, e)),
    }
}

/// The members of the edge set in a node item: none when the attribute is
/// absent (DynamoDB never stores an empty set).
pub(super) fn set_members<'a>(
    item: &'a HashMap<String, AttributeValue>,
    set: &EdgeSetConfig,
) -> Result<&'a [String], StoreError> {
    match item.get(&set.attribute) {
        None => Ok(&[]),
        Some(AttributeValue::Ss(members)) => Ok(members),
        Some(_) => Err(StoreError::refused(format!(
            "UpdateItem on table `{}`: attribute `{}` of the node is not a string set",
            set.table, set.attribute
        ))),
    }
}

/// What an ADD of members to a set holding `current` must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddPlan {
    /// Every member is already in the set, which is within `max_members`:
    /// nothing to add.
    Present,
    /// These members (distinct, sorted, not empty) are missing, and the set
    /// with them stays within `max_members`.
    Missing(Vec<String>),
    /// |current ∪ members| > `max_members`: the node is to be flagged.
    Overflow,
}

/// The exact-union rule of [`Store::update_set`]: an ADD passes `max_members`
/// only when |current ∪ members| does, so members already present count once.
pub fn plan_add(current: &[String], members: &[String], max_members: usize) -> AddPlan {
    let current: BTreeSet<&str> = current.iter().map(String::as_str).collect();
    let missing: BTreeSet<&str> = members
        .iter()
        .map(String::as_str)
        .filter(|m| !current.contains(m))
        .collect();
    if current.len().saturating_add(missing.len()) > max_members {
        // Also when nothing is missing from a set already past the limit (a
        // limit lowered since): the reference semantics (`MemoryStore`) flag it.
        AddPlan::Overflow
    } else if missing.is_empty() {
        AddPlan::Present
    } else {
        AddPlan::Missing(missing.into_iter().map(str::to_owned).collect())
    }
}
