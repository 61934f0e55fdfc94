//! End-to-end test support for streamdex.
//!
//! - [`moto`]: SDK clients, tables and stream reading against the run's local moto server.
//! - [`images`]: values and images as the tests write them.
//! - [`runner`]: running `streamdex run`'s engine until it has applied the test's writes.
//! - [`layering`]: the import graph between source files, and its cycles.
//! - [`derived`]: draining the streams through the indexer, and checking the
//!   derived data against a recomputation.

pub mod derived;
pub mod images;
pub mod layering;
pub mod moto;
pub mod runner;
