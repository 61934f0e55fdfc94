//! streamdex's first stream consumer: it plans each record with `model` and
//! carries the plan out against the index tables and edge sets, with the
//! failure semantics Lambda's event source mappings impose.
//!
//! - [`store`]: the `Store` port (DynamoDB and in memory).
//! - [`apply`]: the executor of a batch's plans (row writes packed across
//!   partition-key groups, edge-set changes coalesced per group, retries,
//!   per-record failure accounting).
//! - [`batch`]: one invocation's records: grouping, concurrency, quarantine,
//!   the `batchItemFailures` response.
//! - [`rebuild`]: verify and rebuild: drift between the derived data and the
//!   source tables, and its repair.
//! - [`lambda`]: the Lambda function (the kit's shell around an
//!   [`Indexer`]); [`metrics`]: its EMF figures.
//! - `workload` (feature `testing`): the example-mix workload generator for
//!   benchmarks and property tests.
//!
//! What both consumers share lives below them: the pure rules in `model`
//! (settlement, packing, the call schedule, the backoff policy, the fault
//! classes), the I/O in `aws_kit` (SDK clients and errors, the retry
//! driver, the quarantine, the Lambda shell).

// The handler future (SDK calls inside concurrent groups) nests deeply.
#![recursion_limit = "256"]

pub mod apply;
pub mod batch;
pub mod lambda;
pub mod metrics;
pub mod rebuild;
pub mod store;
#[cfg(test)]
mod test_support;
#[cfg(any(test, feature = "testing"))]
pub mod workload;

pub use aws_kit::quarantine::memory::MemoryQuarantine;
pub use batch::{BatchStats, Indexer, Options};
pub use model::backoff::Backoff;
pub use model::settlement::BatchResponse;
pub use store::memory::MemoryStore;
