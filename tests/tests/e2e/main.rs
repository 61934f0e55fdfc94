//! The end-to-end tests, one module per subject, linked into one test
//! binary: each binary links the AWS SDKs (about 70 MB each in a debug
//! build), so thirteen binaries cost CI about a gigabyte of disk and twelve
//! more links than this one. `cargo nextest run` still runs every test in
//! its own process; `cargo test -p streamdex-tests --test e2e -- cli::`
//! runs one module's tests.

mod cli;
mod failed_batches;
mod indexer_dynamodb;
mod items_of_any_size;
mod kinesis;
mod layering;
mod out_of_order;
mod quarantine;
mod query;
mod reaper;
mod rehearsal;
mod replay;
mod replay_golden;
mod replay_kinesis;
mod router_dynamodb;
mod run;
mod stack;
mod validate;
mod verify;
