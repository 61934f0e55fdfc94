//! A one-line progress bar on stderr for `verify` and `rebuild` (only when
//! stderr is a terminal, unless asked for): the phase, steps done (of the
//! total when known) and the rate, redrawn at most five times a second.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use stream_indexer::rebuild::Progress;

const REDRAW: Duration = Duration::from_millis(200);

struct State {
    name: String,
    total: Option<u64>,
    done: u64,
    started: Instant,
    drawn: Option<Instant>,
}

/// The progress bar (see the module doc).
pub struct Bar {
    enabled: bool,
    state: Mutex<State>,
}

impl Bar {
    /// A bar drawn on stderr when `wanted` and stderr is a terminal.
    pub fn stderr(wanted: bool) -> Bar {
        Bar {
            enabled: wanted && std::io::stderr().is_terminal(),
            state: Mutex::new(State {
                name: String::new(),
                total: None,
                done: 0,
                started: Instant::now(),
                drawn: None,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The bar's text: `NAME: DONE[/TOTAL] [PERCENT%] (RATE/s)`, integers only.
pub fn line(name: &str, done: u64, total: Option<u64>, elapsed: Duration) -> String {
    let millis = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX).max(1);
    let rate = done.saturating_mul(1000) / millis;
    match total {
        Some(total) if total > 0 => {
            let percent = done.min(total).saturating_mul(100) / total;
            let filled = usize::try_from(percent / 5).unwrap_or(20);
            format!(
                "{name}: [{}{}] {done}/{total} {percent}% ({rate}/s)",
                "#".repeat(filled),
                " ".repeat(20 - filled.min(20))
            )
        }
        _ => format!("{name}: {done} ({rate}/s)"),
    }
}

impl Bar {
    fn draw(&self, state: &mut State, last: bool) {
        let now = Instant::now();
        if !last && state.drawn.is_some_and(|d| now.duration_since(d) < REDRAW) {
            return;
        }
        state.drawn = Some(now);
        let text = line(&state.name, state.done, state.total, now.duration_since(state.started));
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{text}");
        if last {
            let _ = writeln!(err);
        }
        let _ = err.flush();
    }
}

impl Progress for Bar {
    fn start(&self, name: &str, total: Option<u64>) {
        if !self.enabled {
            return;
        }
        let mut state = self.lock();
        *state = State {
            name: name.to_owned(),
            total,
            done: 0,
            started: Instant::now(),
            drawn: None,
        };
        self.draw(&mut state, false);
    }

    fn advance(&self, n: u64) {
        if !self.enabled {
            return;
        }
        let mut state = self.lock();
        state.done = state.done.saturating_add(n);
        self.draw(&mut state, false);
    }

    fn finish(&self) {
        if !self.enabled {
            return;
        }
        let mut state = self.lock();
        self.draw(&mut state, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_show_counts_percent_and_rate() {
        assert_eq!(
            line("correcting", 50, Some(200), Duration::from_secs(2)),
            "correcting: [#####               ] 50/200 25% (25/s)"
        );
        assert_eq!(line("scanning t", 7, None, Duration::ZERO), "scanning t: 7 (7000/s)");
        assert!(line("x", 300, Some(200), Duration::from_secs(1)).contains("100%"));
    }
}
