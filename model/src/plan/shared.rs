//! One copy of each distinct projection across the plans of a long run.
//!
//! Every row an item produces carries the same projection, but the planner
//! makes one per record: a record that changes one of an issue's ten map
//! entries puts one row, with a projection of its own equal to the one its
//! nine siblings hold. Where the rows are kept in memory for a long run
//! (replay), an item's rows so come to hold several equal copies, and the
//! copies grow with the history, not with the table, to many times the
//! distinct projections (see `docs/PERFORMANCE.md`).
//! [`SharedProjections::share`] gives a plan's row puts the copy kept for an
//! equal projection instead, on the thread that plans, so the thread that
//! stores the rows does no lookup.
//!
//! A kept projection stays while anything else holds it: when the set has
//! doubled since its last sweep, it drops every projection only it holds.
//! So it holds at most about twice the distinct projections in use.

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

use hashbrown::hash_table::HashTable;

use super::{Mutation, Plan};
use crate::value::{Attr, Image, Projection, Scalar};

/// The projections kept, each distinct one once.
#[derive(Default)]
pub struct SharedProjections {
    kept: HashTable<Projection>,
    hasher: foldhash::fast::RandomState,
    /// How many were kept after the last sweep.
    swept_at: usize,
}

impl SharedProjections {
    /// Gives each row put of `plan` the kept copy of its projection (one
    /// lookup per distinct projection in the plan: a record's puts share
    /// one).
    pub fn share(&mut self, plan: &mut Plan) {
        let mut last: Option<(Projection, Projection)> = None;
        for mutation in &mut plan.mutations {
            let Mutation::PutRow { attributes, .. } = mutation else {
                continue;
            };
            let kept = match &last {
                Some((given, kept)) if Arc::ptr_eq(given, attributes) => kept.clone(),
                _ => {
                    let kept = self.keep(attributes);
                    last = Some((attributes.clone(), kept.clone()));
                    kept
                }
            };
            *attributes = kept;
        }
    }

    /// The kept copy of `given`: the one already kept if an equal one is,
    /// else `given` itself, kept from now on.
    fn keep(&mut self, given: &Projection) -> Projection {
        let hash = hash_of(&self.hasher, given);
        if let Some(kept) = self.kept.find(hash, |k| **k == **given) {
            return kept.clone();
        }
        self.sweep_if_doubled();
        let hasher = self.hasher.clone();
        self.kept
            .insert_unique(hash, given.clone(), move |k| hash_of(&hasher, k));
        given.clone()
    }

    /// How many distinct projections are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.kept.len()
    }

    /// Drops what only the set holds, once it has doubled since the last
    /// sweep.
    fn sweep_if_doubled(&mut self) {
        if self.kept.len() < 2 * self.swept_at.max(1024) {
            return;
        }
        self.kept.retain(|k| Arc::strong_count(k) > 1);
        self.swept_at = self.kept.len();
    }
}

/// A projection's hash: its names and the text of its scalars (an M, L or
/// set counts by its type alone; equality tells such images apart).
fn hash_of(hasher: &foldhash::fast::RandomState, image: &Image) -> u64 {
    let mut state = hasher.build_hasher();
    for (name, value) in image.iter() {
        name.hash(&mut state);
        match value.scalar() {
            Scalar::S(s) => (0u8, s).hash(&mut state),
            Scalar::N(n) => (1u8, n).hash(&mut state),
            Scalar::B(b) => (2u8, b).hash(&mut state),
            Scalar::Bool(b) => (3u8, b).hash(&mut state),
            Scalar::Null(b) => (4u8, b).hash(&mut state),
            Scalar::Other(tag) => (5u8, tag).hash(&mut state),
        }
    }
    state.finish()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::index::RowKey;
    use crate::Value;

    fn projection(name: &str, state: &str) -> Projection {
        Projection::new(Image::from([
            ("name", Value::S(name.to_owned())),
            ("state", Value::S(state.to_owned())),
        ]))
    }

    fn put(sort: &str, attributes: &Projection) -> Mutation {
        Mutation::PutRow {
            index: 0,
            key: RowKey {
                partition: "f000".to_owned(),
                sort: sort.to_owned(),
            },
            attributes: attributes.clone(),
        }
    }

    fn projections(plan: &Plan) -> Vec<&Projection> {
        plan.mutations
            .iter()
            .filter_map(|m| match m {
                Mutation::PutRow { attributes, .. } => Some(attributes),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn equal_projections_of_two_plans_become_one_copy() {
        let mut shared = SharedProjections::default();
        let (first, second) = (projection("Issue 1", "open"), projection("Issue 1", "open"));
        let mut a = Plan {
            mutations: vec![put("a", &first), put("b", &first)],
            problems: Vec::new(),
        };
        let mut b = Plan {
            mutations: vec![
                Mutation::DeleteRow {
                    index: 0,
                    key: RowKey {
                        partition: "f000".to_owned(),
                        sort: "z".to_owned(),
                    },
                },
                put("c", &second),
                put("d", &projection("Issue 1", "closed")),
            ],
            problems: Vec::new(),
        };
        shared.share(&mut a);
        shared.share(&mut b);
        let (a, b) = (projections(&a), projections(&b));
        assert!(
            Arc::ptr_eq(a[0], a[1]) && Arc::ptr_eq(a[0], b[0]),
            "one copy for the three equal ones"
        );
        assert!(!Arc::ptr_eq(a[0], b[1]), "a different projection is its own");
        assert_eq!(shared.len(), 2);
    }

    #[test]
    fn what_only_the_set_holds_goes_at_a_sweep() {
        let mut shared = SharedProjections::default();
        let mut held = Plan {
            mutations: vec![put("held", &projection("held", "open"))],
            problems: Vec::new(),
        };
        shared.share(&mut held);
        let mut gone = Plan {
            mutations: vec![put("gone", &projection("gone", "open"))],
            problems: Vec::new(),
        };
        shared.share(&mut gone);
        drop(gone);
        let mut plans = Vec::new();
        for i in 0..2047 {
            let mut plan = Plan {
                mutations: vec![put("x", &projection(&format!("Issue {i}"), "open"))],
                problems: Vec::new(),
            };
            shared.share(&mut plan);
            plans.push(plan);
        }
        assert_eq!(shared.len(), 2048, "the sweep at 2,048 dropped the one nothing held");
        let mut again = Plan {
            mutations: vec![put("again", &projection("held", "open"))],
            problems: Vec::new(),
        };
        shared.share(&mut again);
        assert!(
            Arc::ptr_eq(projections(&again)[0], projections(&held)[0]),
            "a held one stays"
        );
    }

    fn any_plan() -> impl Strategy<Value = Plan> {
        let mutation = (0..3u8, "[ab]", "[xy]").prop_map(|(kind, name, state)| match kind {
            0 => Mutation::DeleteRow {
                index: 0,
                key: RowKey {
                    partition: name.clone(),
                    sort: state,
                },
            },
            _ => put(&name, &projection(&name, &state)),
        });
        proptest::collection::vec(mutation, 0..12).prop_map(|mutations| Plan {
            mutations,
            problems: Vec::new(),
        })
    }

    proptest! {
        /// Sharing changes no plan's meaning: the same mutations, each row
        /// put with an equal projection; and equal projections end up one.
        #[test]
        fn sharing_changes_no_plan(plans in proptest::collection::vec(any_plan(), 0..8)) {
            let mut shared = SharedProjections::default();
            let mut shared_plans = plans.clone();
            for plan in &mut shared_plans {
                shared.share(plan);
            }
            prop_assert_eq!(&shared_plans, &plans);
            let all: Vec<&Projection> = shared_plans.iter().flat_map(projections).collect();
            for a in &all {
                for b in &all {
                    prop_assert_eq!(Arc::ptr_eq(a, b), a == b);
                }
            }
        }
    }
}
