//! A bad `AWS_ENDPOINT_URL` is refused like a bad `--endpoint-url`: exit 2,
//! one line that names both, nothing tried (run as a child process, so the
//! variable is the child's alone).

use std::process::Command;

#[test]
fn a_bad_aws_endpoint_url_is_a_usage_error_naming_the_variable() {
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/../streamdex.example.toml");
    for bad in ["not a url", "ftp://127.0.0.1:5005", "http://"] {
        let output = Command::new(env!("CARGO_BIN_EXE_streamdex"))
            .args(["show", config])
            .env("AWS_ENDPOINT_URL", bad)
            .output()
            .expect("the streamdex binary runs");
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains("AWS_ENDPOINT_URL") && err.contains(bad), "{bad}: {err}");
        assert!(!err.contains("DispatchFailure"), "{bad}: {err}");
    }
}
