//! streamdex infrastructure: the `streamdex` command line and what it
//! drives. (The AWS kit both Lambdas share is the separate crate `aws-kit`
//! in `infra/kit`; the Lambdas never depend on this crate.)
//!
//! - [`cli`]: the command line, one module per subcommand.
//! - [`stack`]: the deployment described from the config, stood up on an
//!   endpoint and torn down (`streamdex up` / `down`).
//! - [`template`]: the same deployment rendered as the AWS SAM template.
//! - [`runner`]: the local stand-in for Lambda's event source mappings
//!   (`streamdex run`, `lag`, `record`) and replay's in-process pipeline.
//! - [`derived`]: the derived data read back as JSON (`show`, `replay --dump`).
//! - [`seed`]: sample items shaped by the config (`streamdex seed`).
//! - [`quarantine`]: the quarantine read, shown and redriven (`streamdex quarantine`).

pub mod cli;
pub mod deploy;
pub mod derived;
pub mod package;
pub mod quarantine;
pub mod runner;
pub mod seed;
pub mod stack;
pub mod template;
