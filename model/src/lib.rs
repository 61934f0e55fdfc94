//! The pure core of streamdex: everything that can be decided without I/O.
//!
//! Data and config:
//! - [`value`]: DynamoDB attribute values and item images.
//! - [`record`]: one change record, normalised from every shape AWS delivers.
//! - [`delivery`]: change records in the JSON shape Lambda delivers them.
//! - [`config`]: the pipeline config (the one source of truth) and its validation.
//! - [`time`]: the calendar, RFC 3339 parsing and formatting (every date and timestamp).
//!
//! What the consumers derive:
//! - [`sortkey`]: the CSS1 composite sort string codec.
//! - [`index`]: which index rows an item image produces (and in which shard).
//! - [`query`]: typed conditions on an index's sort columns → the partitions
//!   and exact sort key condition to Query, and the merge of their pages.
//! - [`edge`]: which edge-set member an edge item contributes to its node.
//! - [`plan`]: the change planner (old image, new image → minimal mutations).
//! - [`drift`]: where derived data differs from the source tables, and the corrections.
//! - [`event`]: which event routes a change matches, and the EventBridge entries it becomes.
//! - [`reap`]: what the TTL reaper deletes for an expired node.
//! - [`filter`]: the event source mapping filter patterns each consumer of a table needs, and their matcher.
//! - [`metrics`]: CloudWatch Embedded Metric Format lines, iterator age.
//!
//! How a batch is carried out, decided alike for both consumers:
//! - [`fault`]: the one error vocabulary (transient / refused / deployment).
//! - [`poison`]: why a record can never succeed, typed as it was found.
//! - [`backoff`]: the retry policy (exponential backoff, full jitter, attempts without progress).
//! - [`sequence`]: stream sequence numbers compared as numbers.
//! - [`pack`]: ordered bin-packing of a batch's requests into calls.
//! - [`schedule`]: which packed calls may be sent, given the calls they wait for.
//! - [`settlement`]: which records of a batch failed or are quarantined, and the batch response.
//! - [`outcome`]: what a consumer made of a batch (its settlement and its counts), as both report it.
//!
//! For tests (feature `testing`): `testing`, the random write histories the
//! property tests of the planner and of the indexer's batches share.
//!
//! No I/O, no async, no AWS SDK: the other crates carry out what this one
//! decides (the AWS kit, `aws_kit`, holds the I/O both consumers share).

pub mod backoff;
pub mod config;
pub mod delivery;
pub mod drift;
pub mod edge;
pub mod event;
pub mod fault;
pub mod filter;
pub mod index;
pub mod ledger;
pub mod metrics;
pub mod outcome;
pub mod pack;
pub mod plan;
pub mod poison;
pub mod query;
pub mod reap;
pub mod record;
pub mod schedule;
pub mod sequence;
pub mod settlement;
pub mod sortkey;
pub mod source;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod time;
pub mod ttl;
pub mod validate;
pub mod value;
pub mod version;

pub use backoff::Backoff;
pub use config::Config;
pub use fault::{Class, Fault};
pub use plan::{Mutation, Plan, PlanError, Planner};
pub use record::{ChangeRecord, EventKind};
pub use value::{Image, Name, Projection, Value};
pub use version::Version;
