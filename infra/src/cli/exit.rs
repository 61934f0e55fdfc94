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

/// The exit code of a command whose run ended with `result`, its error (if
/// any) said on `err` after `who` (`streamdex replay: ...`): [`FAILURE`],
/// or [`OK`] when the error is only that the output's reader went away
/// (see [`output_closed`]), said nothing of.
pub fn of_result(result: anyhow::Result<u8>, who: &str, err: &mut dyn std::io::Write) -> u8 {
    match result {
        Ok(code) => code,
        Err(e) if output_closed(&e) => OK,
        Err(e) => {
            let _ = writeln!(err, "{who}: {e:#}");
            FAILURE
        }
    }
}

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

#[cfg(test)]
mod tests {
    use std::io::{Error, ErrorKind};

    use anyhow::Context;

    use super::*;

    /// What `of_result` answers for `error`, and what it says.
    fn said(error: anyhow::Error) -> (u8, String) {
        let mut err = Vec::new();
        let code = of_result(Err(error), "streamdex replay", &mut err);
        (code, String::from_utf8(err).unwrap())
    }

    #[test]
    fn a_closed_pipe_is_quiet_success_however_it_is_wrapped() {
        let pipe = || Error::from(ErrorKind::BrokenPipe);
        assert_eq!(said(pipe().into()), (OK, String::new()));
        let wrapped = Err::<(), _>(pipe()).context("writing the dump").unwrap_err();
        assert_eq!(said(wrapped), (OK, String::new()));
        // serde_json writing into a closed pipe.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let json = serde_json::to_writer(writer, &vec![0u8; 1 << 16]).unwrap_err();
        assert_eq!(said(json.into()), (OK, String::new()));
    }

    #[test]
    fn any_other_error_is_a_failure_and_said() {
        let (code, text) = said(Error::from(ErrorKind::StorageFull).into());
        assert_eq!(code, FAILURE);
        assert!(text.starts_with("streamdex replay: "), "{text}");
        let mut err = Vec::new();
        assert_eq!(of_result(Ok(BAD_INPUT), "x", &mut err), BAD_INPUT);
        assert!(err.is_empty(), "a code is passed on, nothing said");
    }
}
