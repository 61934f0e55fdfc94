//! Exit codes every `streamdex` command keeps, for scripts.

/// Success.
pub const OK: u8 = 0;
/// An I/O, AWS or processing failure (retrying may help).
pub const FAILURE: u8 = 1;
/// Bad input: a bad config, file, value or flag (retrying will not help).
pub const BAD_INPUT: u8 = 2;
/// `verify` or `rebuild` found drift that is still there (see their `--help`).
pub const DRIFT: u8 = 3;
/// `lag` found a shard whose iterator age is above `--max-age`.
pub const LAGGING: u8 = 4;
