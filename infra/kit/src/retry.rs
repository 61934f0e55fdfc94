//! The one retry driver: every DynamoDB write and query, every PutEvents
//! and every reaper request that is retried is retried here, by the policy
//! in `model::backoff::Backoff` (exponential backoff, full jitter, a bound
//! on attempts in a row without progress).
//!
//! An attempt reports a [`Step`]: done; work left that is worth another
//! attempt (a transient fault, or a partial success such as
//! `UnprocessedItems`, saying whether it made progress); or stop (a fault
//! that another attempt cannot fix). The driver waits and calls again, or
//! gives up with the last fault, its message saying after how many attempts.

use std::future::Future;
use std::time::Duration;

use model::backoff::Backoff;
use model::fault::Fault;

/// What one attempt did.
#[derive(Debug)]
pub enum Step<T> {
    /// Finished.
    Done(T),
    /// Work is left and another attempt may do it. `progressed`: this
    /// attempt did some of the work (the count of attempts in a row without
    /// progress starts again). `fault` says what is left and why; it is the
    /// error if the driver gives up.
    Again { progressed: bool, fault: Fault },
    /// Stop: another attempt cannot help.
    Stop(Fault),
}

impl<T> Step<T> {
    /// The step of a call that either succeeded or failed as a whole: a
    /// retryable fault goes again, any other stops.
    pub fn of(result: Result<T, Fault>) -> Step<T> {
        match result {
            Ok(value) => Step::Done(value),
            Err(fault) if fault.is_retryable() => Step::Again {
                progressed: false,
                fault,
            },
            Err(fault) => Step::Stop(fault),
        }
    }
}

/// The driver of one request's attempts. The caller makes an attempt,
/// reports its [`Step`] to [`Retry::next`], and goes on as told:
///
/// ```text
/// let mut retry = Retry::new(backoff);
/// let result = loop {
///     let step = attempt(retry.attempt()).await;
///     match retry.next(step).await {
///         Flow::Again => continue,
///         Flow::Done(value) => break Ok(value),
///         Flow::Failed(fault) => break Err(fault),
///     }
/// };
/// ```
///
/// (A loop at the call site rather than a closure: the attempts borrow the
/// caller's state mutably, which an async closure cannot do inside the
/// `Send` futures the Lambda runtime needs.)
#[derive(Debug)]
pub struct Retry<'a> {
    backoff: &'a Backoff,
    stalled: u32,
    attempt: u32,
}

/// What the caller does after an attempt.
#[derive(Debug)]
#[must_use]
pub enum Flow<T> {
    /// Make another attempt (the wait is over).
    Again,
    Done(T),
    /// Give up: the last fault, saying after how many attempts.
    Failed(Fault),
}

impl<'a> Retry<'a> {
    pub fn new(backoff: &'a Backoff) -> Retry<'a> {
        Retry {
            backoff,
            stalled: 0,
            attempt: 0,
        }
    }

    /// The number of the attempt about to be made (0 first; more means a retry).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Takes an attempt's step: waits before another attempt, or ends.
    pub async fn next<T>(&mut self, step: Step<T>) -> Flow<T> {
        match step {
            Step::Done(value) => Flow::Done(value),
            Step::Stop(fault) => Flow::Failed(fault),
            Step::Again { progressed, fault } => {
                self.stalled = if progressed { 0 } else { self.stalled + 1 };
                let Some(wait) = self.backoff.next(self.stalled) else {
                    let stalled = self.stalled;
                    return Flow::Failed(
                        fault.map_message(|m| format!("{m} (gave up after {stalled} attempts without progress)")),
                    );
                };
                pause(wait).await;
                self.attempt = self.attempt.saturating_add(1);
                Flow::Again
            }
        }
    }
}

/// Runs a call that succeeds or fails as a whole: `send(attempt)` until it
/// succeeds, fails other than transiently, or the attempts are spent.
pub async fn call<T, F, Fut>(backoff: &Backoff, mut send: F) -> Result<T, Fault>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, Fault>>,
{
    let mut retry = Retry::new(backoff);
    loop {
        let step = Step::of(send(retry.attempt()).await);
        match retry.next(step).await {
            Flow::Again => continue,
            Flow::Done(value) => return Ok(value),
            Flow::Failed(fault) => return Err(fault),
        }
    }
}

/// Waits `delay` (nothing for zero, so tests with an immediate backoff never
/// touch the timer).
pub async fn pause(delay: Duration) {
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn block<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    #[test]
    fn a_transient_fault_is_retried_until_the_attempts_are_spent() {
        let calls = Cell::new(0);
        let result: Result<(), Fault> = block(call(&Backoff::immediate(3), |_| {
            calls.set(calls.get() + 1);
            async { Err(Fault::transient("throttled")) }
        }));
        assert_eq!(calls.get(), 3);
        let fault = result.unwrap_err();
        assert!(fault.is_transient());
        assert_eq!(fault.message(), "throttled (gave up after 3 attempts without progress)");
    }

    #[test]
    fn other_faults_stop_at_once() {
        let calls = Cell::new(0);
        let result: Result<(), Fault> = block(call(&Backoff::immediate(5), |_| {
            calls.set(calls.get() + 1);
            async { Err(Fault::deployment("no table")) }
        }));
        assert_eq!(calls.get(), 1);
        assert_eq!(result.unwrap_err(), Fault::deployment("no table"));
    }

    #[test]
    fn progress_starts_the_count_again() {
        // 10 items, 1 done per attempt, with 2 attempts allowed in a row
        // without progress: it finishes, after 10 attempts.
        let mut left = 10;
        let mut attempts = Vec::new();
        let backoff = Backoff::immediate(2);
        let mut retry = Retry::new(&backoff);
        let result = block(async {
            loop {
                attempts.push(retry.attempt());
                left -= 1;
                let step = if left == 0 {
                    Step::Done("all")
                } else {
                    Step::Again {
                        progressed: true,
                        fault: Fault::transient(format!("{left} left")),
                    }
                };
                match retry.next(step).await {
                    Flow::Again => continue,
                    Flow::Done(value) => break Ok(value),
                    Flow::Failed(fault) => break Err(fault),
                }
            }
        });
        assert_eq!(result, Ok("all"));
        assert_eq!(attempts, (0..10).collect::<Vec<u32>>());
    }

    #[test]
    fn the_first_attempt_that_succeeds_ends_it() {
        let calls = Cell::new(0);
        let result = block(call(&Backoff::immediate(5), |_| {
            calls.set(calls.get() + 1);
            let n = calls.get();
            async move {
                if n < 3 {
                    Err(Fault::transient("busy"))
                } else {
                    Ok(n)
                }
            }
        }));
        assert_eq!(result, Ok(3));
    }
}
