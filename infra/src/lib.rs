//! streamdex infrastructure: the command line, the deployment ([`stack`]:
//! described from the config, stood up locally with `streamdex up`) and its
//! AWS template ([`template`]).

pub mod cli;
pub mod derived;
pub mod runner;
pub mod seed;
pub mod stack;
pub mod template;
