//! End-to-end test support for streamdex.
//!
//! - [`moto`]: SDK clients, tables and stream reading against the run's local moto server.

pub mod moto;
