//! The signals that stop a long-running command (`run`, `record`): Ctrl-C
//! (SIGINT) and SIGTERM, what systemd, container runtimes and `kill` send.
//! Both stop the command the same way: it finishes its round, saves its
//! checkpoints and says so.

/// Resolves on the first Ctrl-C or SIGTERM. If a signal cannot be listened
/// for (no signal driver), that one is simply not awaited.
pub async fn stop_requested() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

/// A watch that turns `true` on the first stop signal (see [`stop_requested`]).
pub fn stop_watch() -> tokio::sync::watch::Receiver<bool> {
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        stop_requested().await;
        let _ = stop_tx.send(true);
    });
    stop
}

#[cfg(all(test, unix))]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Set in the child process that the test starts: SIGTERM goes to the
    /// whole process, so it is sent in a process of its own, not beside the
    /// other tests (whose `run` loops would stop).
    const CHILD: &str = "STREAMDEX_SIGTERM_TEST_CHILD";

    #[test]
    fn sigterm_stops_like_ctrl_c() {
        if std::env::var_os(CHILD).is_some() {
            return sigterm_in_this_process();
        }
        let exe = std::env::current_exe().expect("the test binary");
        let output = std::process::Command::new(exe)
            .args([
                "cli::signal::tests::sigterm_stops_like_ctrl_c",
                "--exact",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .output()
            .expect("run the test binary again");
        assert!(
            output.status.success(),
            "the child test failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout)
        );
        assert!(String::from_utf8_lossy(&output.stdout).contains("1 passed"));
    }

    fn sigterm_in_this_process() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let mut stop = std::pin::pin!(stop_requested());
            // Poll once so that the handlers are installed before the signal
            // is sent (an uncaught SIGTERM would end the process).
            assert!(futures::poll!(stop.as_mut()).is_pending());
            let sent = std::process::Command::new("kill")
                .args(["-TERM", &std::process::id().to_string()])
                .status()
                .expect("run kill");
            assert!(sent.success());
            tokio::time::timeout(Duration::from_secs(10), stop)
                .await
                .expect("SIGTERM was not seen within 10 s");
        });
    }
}
