//! streamdex infrastructure: the command line, templates, local stack.

pub mod cli;
