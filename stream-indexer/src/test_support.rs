//! What the crate's unit tests share: the example config, and a runtime
//! to run one future on.

use std::sync::Arc;

use model::config::{self, Config};

/// The example config (`streamdex.example.toml`), parsed.
pub(crate) fn example() -> Arc<Config> {
    Arc::new(config::parse(config::EXAMPLE_CONFIG, "streamdex.example.toml").unwrap_or_else(|e| panic!("{e}")))
}

/// Runs `f` to completion on a fresh current-thread runtime (timers on).
pub(crate) fn block<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
        .block_on(f)
}
