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

/// Whether `error` comes of writing to a pipe whose reader has gone (`EPIPE`:
/// `streamdex replay --dump json | head`), directly or through serde_json
/// (whose error does not give its I/O error as its source). Not a failure:
/// the reader took what it wanted.
pub fn output_closed(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        let kind = match (
            cause.downcast_ref::<std::io::Error>(),
            cause.downcast_ref::<serde_json::Error>(),
        ) {
            (Some(io), _) => Some(io.kind()),
            (None, Some(json)) => json.io_error_kind(),
            (None, None) => None,
        };
        kind == Some(std::io::ErrorKind::BrokenPipe)
    })
}
