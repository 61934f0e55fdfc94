//! streamdex's AWS runtime kit: what both stream consumers (the indexer and
//! the event router) and the TTL reaper need to run on AWS, once. Pure
//! decisions live in `model`; this crate carries them out.
//!
//! - [`alloc`]: the binaries' global allocator (mimalloc).
//! - [`clock`]: the one way time is read ([`clock::Clock`]; tests set a [`clock::ManualClock`]).
//! - [`clients`]: the SDK clients (DynamoDB, EventBridge, SQS), with the
//!   retry and timeout settings every function shares.
//! - [`error`]: SDK errors classified into `model::Fault`s.
//! - [`retry`]: the one retry driver (backoff, jitter, attempts without progress).
//! - [`dispatch`]: sending packed calls in the order their dependencies allow.
//! - [`convert`]: values and items between the model and the SDK; the partition Query.
//! - [`quarantine`]: the quarantine port (SQS and in memory).
//! - [`settle`]: a batch's settlement and its one quarantine call.
//! - [`lambda`]: the Lambda shell, generic over a [`lambda::Consumer`].

pub mod alloc;
pub mod clients;
pub mod clock;
pub mod convert;
pub mod dispatch;
pub mod error;
pub mod lambda;
pub mod quarantine;
pub mod retry;
pub mod settle;

pub use model::backoff::Backoff;
pub use model::fault::{Class, Fault};
