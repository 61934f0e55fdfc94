//! The pure core of streamdex: everything that can be decided without I/O.
//!
//! - [`value`]: DynamoDB attribute values and item images.
//! - [`record`]: one change record, normalised from every shape AWS delivers.
//! - [`config`]: the pipeline config (the one source of truth) and its validation.
//! - [`sortkey`]: the CSS1 composite sort string codec.
//! - [`index`]: which index rows an item image produces.
//! - [`edge`]: which edge-set member an edge item contributes to its node.
//! - [`plan`]: the change planner (old image, new image → minimal mutations).
//! - [`drift`]: where derived data differs from the source tables, and the corrections.
//! - [`event`]: which event routes a change matches, and the EventBridge entries it becomes.
//! - [`filter`]: the event source mapping filter patterns each consumer of a table needs, and their matcher.
//!
//! No I/O, no async, no AWS SDK: the other crates carry out what this one decides.

pub mod backoff;
pub mod config;
pub mod delivery;
pub mod drift;
pub mod edge;
pub mod event;
pub mod fault;
pub mod filter;
pub mod index;
pub mod metrics;
pub mod pack;
pub mod plan;
pub mod reap;
pub mod record;
pub mod schedule;
pub mod sequence;
pub mod settlement;
pub mod sortkey;
pub mod time;
pub mod value;

pub use backoff::Backoff;
pub use config::Config;
pub use fault::{Class, Fault};
pub use plan::{Mutation, Plan, PlanError, Planner};
pub use record::{ChangeRecord, EventKind};
pub use value::{Image, Value};
