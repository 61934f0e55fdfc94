//! The config loader: any text as a config file. Parsing never panics; a
//! refusal names at least one problem, each with its place in the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use model::config::{parse, ConfigError};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse(text, "fuzz.toml") {
        Ok(_) => {}
        Err(ConfigError::Invalid { problems }) => assert!(!problems.is_empty(), "refused with no problem"),
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
