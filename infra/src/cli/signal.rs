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

    #[tokio::test]
    async fn sigterm_stops_like_ctrl_c() {
        let mut stop = std::pin::pin!(stop_requested());
        // Poll once so that the handlers are installed before the signal
        // is sent (an uncaught SIGTERM would end the test process).
        assert!(futures::poll!(stop.as_mut()).is_pending());
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &std::process::id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success());
        tokio::time::timeout(Duration::from_secs(10), stop)
            .await
            .expect("SIGTERM was not seen within 10 s");
    }
}
