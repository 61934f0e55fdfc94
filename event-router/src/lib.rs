//! streamdex's second stream consumer: it turns stream records into domain
//! events on an EventBridge bus (where rules route them), and the TTL
//! reaper that one of those rules feeds.
//!
//! - [`publish`]: the `Publisher` port (EventBridge and in memory).
//! - [`batch`]: one invocation's records: classification (by
//!   `model::event`), packing into PutEvents calls (`model::pack`: 10
//!   entries, a byte budget), publishing with retries (`aws_kit::retry`),
//!   quarantine, the `batchItemFailures` response.
//! - [`lambda`]: the router Lambda; [`metrics`]: its EMF figures.
//! - [`reaper`]: the Lambda behind the expiry rule, deleting an expired
//!   node's edges.

#![recursion_limit = "256"]

pub mod batch;
pub mod lambda;
pub mod ledger;
pub mod metrics;
pub mod publish;
pub mod reaper;

pub use batch::{Options, Router, RouterStats};
pub use ledger::{Ledger, MemoryLedger};
pub use publish::memory::MemoryPublisher;
pub use publish::{Entry, Publisher};
pub use reaper::{Graph, Reaped, Reaper};
