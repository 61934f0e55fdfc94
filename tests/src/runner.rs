//! Driving `streamdex run`'s engine from a test.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use infra::runner::Runner;

/// Runs rounds, paced as `streamdex run` paces them, until the runner has
/// applied everything written before the call: every shard read again
/// after it ([`Runner::look_again`]) and found its tip after the last round
/// that did something. Fails, naming the wait, if that takes over `limit`.
pub async fn run_until_idle(runner: &mut Runner, limit: Duration) -> Result<()> {
    let deadline = Instant::now() + limit;
    runner.look_again();
    loop {
        let round = runner.round().await;
        if !round.busy && runner.idle() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the runner was not idle within {limit:?} (every shard read to its tip)");
        }
        if !round.busy {
            tokio::time::sleep(Duration::from_millis(round.wait_ms)).await;
        }
    }
}
