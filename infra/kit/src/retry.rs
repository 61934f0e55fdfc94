//! The one retry driver: every DynamoDB write and query, every PutEvents
//! and every reaper request that is retried is retried here, by the policy
//! in `model::backoff::Backoff` (exponential backoff, full jitter, a bound
//! on attempts in a row without progress).
//!
//! Two ways in: [`call`], for a call that succeeds or fails as a whole, and
//! [`Resend`], for a request that can partly succeed (`UnprocessedItems`,
//! PutEvents entries that failed), whose attempts report a [`Partial`].
//! Either way an attempt ends in a `Step`: done; work left that is worth
//! another attempt (a transient fault, or a partial success, saying whether
//! it made progress); or stop (a fault that another attempt cannot fix). The
//! driver waits and calls again, or gives up with the last fault, its
//! message saying after how many attempts.

use std::future::Future;
use std::time::Duration;

use model::backoff::Backoff;
use model::fault::Fault;

/// What one attempt did.
#[derive(Debug)]
enum Step<T> {
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
    fn of(result: Result<T, Fault>) -> Step<T> {
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

/// The policy's state over one request's attempts: told each attempt's
/// [`Step`], it waits before the next or says to stop ([`Flow`]).
#[derive(Debug)]
struct Retry<'a> {
    backoff: &'a Backoff,
    stalled: u32,
    attempt: u32,
}

/// What the caller does after an attempt.
#[derive(Debug)]
#[must_use]
enum Flow<T> {
    /// Make another attempt (the wait is over).
    Again,
    Done(T),
    /// Give up: the last fault, saying after how many attempts.
    Failed(Fault),
}

impl<'a> Retry<'a> {
    fn new(backoff: &'a Backoff) -> Retry<'a> {
        Retry {
            backoff,
            stalled: 0,
            attempt: 0,
        }
    }

    /// The number of the attempt about to be made (0 first; more means a retry).
    fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Takes an attempt's step: waits before another attempt, or ends.
    async fn next<T>(&mut self, step: Step<T>) -> Flow<T> {
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

/// What one attempt at a request that can partly succeed left.
#[derive(Debug)]
pub enum Partial<L> {
    /// All done.
    Done,
    /// Some is still left (`UnprocessedItems`, entries that failed
    /// transiently): to send again; the fault says what and why.
    Left(L, Fault),
    /// The whole call failed: what it was given, and why.
    Failed(L, Fault),
}

/// The driver of a request that can partly succeed, sent again until
/// nothing of it is left. The caller loops:
///
/// ```text
/// let mut resend = Resend::new(backoff, keys, Vec::len);
/// while let Some((attempt, left)) = resend.next_attempt() {
///     let partial = /* send `left`; settle what can be settled */;
///     resend.sent(partial).await;
/// }
/// resend.finish()  // Ok, or the last fault and what was never done
/// ```
///
/// An attempt that leaves less than it was given made progress (the count
/// of attempts in a row without it starts again); a whole call's fault goes
/// again when retryable, as in [`call`]. (A loop at the call site,
/// not a closure: the attempts borrow the caller's state mutably, which an
/// async closure cannot do inside the `Send` futures the Lambda runtime
/// needs.)
#[derive(Debug)]
pub struct Resend<'a, L> {
    retry: Retry<'a>,
    len: fn(&L) -> usize,
    state: Resending<L>,
}

#[derive(Debug)]
enum Resending<L> {
    /// To send next.
    Ready(L),
    /// Given to the caller's attempt; its length then.
    Sent(usize),
    Done,
    GaveUp(Fault, L),
}

impl<'a, L> Resend<'a, L> {
    /// A request for `left`, whose size `len` tells.
    pub fn new(backoff: &'a Backoff, left: L, len: fn(&L) -> usize) -> Resend<'a, L> {
        Resend {
            retry: Retry::new(backoff),
            len,
            state: Resending::Ready(left),
        }
    }

    /// What the next attempt sends, with its number (0 first); `None` once
    /// done or given up.
    pub fn next_attempt(&mut self) -> Option<(u32, L)> {
        let len = self.len;
        match std::mem::replace(&mut self.state, Resending::Done) {
            Resending::Ready(left) => {
                self.state = Resending::Sent(len(&left));
                Some((self.retry.attempt(), left))
            }
            other => {
                self.state = other;
                None
            }
        }
    }

    /// What the attempt [`Resend::next_attempt`] gave left; waits before the next
    /// attempt when there is one.
    pub async fn sent(&mut self, partial: Partial<L>) {
        let before = match self.state {
            Resending::Sent(before) => before,
            _ => usize::MAX,
        };
        let (left, step) = match partial {
            Partial::Done => (None, Step::Done(())),
            Partial::Left(left, _) if (self.len)(&left) == 0 => (None, Step::Done(())),
            Partial::Left(left, fault) => {
                let progressed = (self.len)(&left) < before;
                (Some(left), Step::Again { progressed, fault })
            }
            Partial::Failed(left, fault) => (Some(left), Step::of(Err(fault))),
        };
        self.state = match (self.retry.next(step).await, left) {
            (Flow::Again, Some(left)) => Resending::Ready(left),
            (Flow::Failed(fault), Some(left)) => Resending::GaveUp(fault, left),
            _ => Resending::Done,
        };
    }

    /// Done, or the last fault (saying after how many attempts) and what
    /// was never done.
    pub fn finish(self) -> Result<(), (Fault, L)> {
        match self.state {
            Resending::GaveUp(fault, left) => Err((fault, left)),
            _ => Ok(()),
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

    /// Drives `resend` with `attempt` until it ends.
    fn drive<L>(mut resend: Resend<'_, L>, mut attempt: impl FnMut(u32, L) -> Partial<L>) -> Result<(), (Fault, L)> {
        block(async {
            while let Some((n, left)) = resend.next_attempt() {
                resend.sent(attempt(n, left)).await;
            }
            resend.finish()
        })
    }

    #[test]
    fn a_partial_success_is_sent_again_until_nothing_is_left() {
        let backoff = Backoff::immediate(2);
        let mut sent = Vec::new();
        let result = drive(Resend::new(&backoff, vec![1, 2, 3, 4], Vec::len), |_, left: Vec<u8>| {
            sent.push(left.clone());
            Partial::Left(left[1..].to_vec(), Fault::transient("some left"))
        });
        assert!(result.is_ok());
        // Each attempt made progress, so two attempts without it were never reached.
        assert_eq!(sent, vec![vec![1, 2, 3, 4], vec![2, 3, 4], vec![3, 4], vec![4]]);
    }

    #[test]
    fn giving_up_on_a_partial_success_hands_back_what_is_left() {
        let backoff = Backoff::immediate(3);
        let mut attempts = Vec::new();
        let result = drive(Resend::new(&backoff, vec![7, 8], Vec::len), |n, left: Vec<u8>| {
            attempts.push(n);
            Partial::Left(left, Fault::transient("2 left"))
        });
        let (fault, left) = result.unwrap_err();
        assert_eq!(left, vec![7, 8]);
        assert_eq!(attempts, vec![0, 1, 2]);
        assert_eq!(fault.message(), "2 left (gave up after 3 attempts without progress)");
    }

    #[test]
    fn a_whole_call_that_cannot_succeed_stops_at_once_with_what_it_was_given() {
        let backoff = Backoff::immediate(5);
        let mut calls = 0;
        let result = drive(Resend::new(&backoff, vec![1], Vec::len), |_, left: Vec<u8>| {
            calls += 1;
            Partial::Failed(left, Fault::refused("ValidationException"))
        });
        let (fault, left) = result.unwrap_err();
        assert_eq!((calls, left), (1, vec![1]));
        assert!(fault.is_refused());
    }

    #[test]
    fn a_transient_whole_call_fault_is_retried_and_done_ends_at_once() {
        let backoff = Backoff::immediate(5);
        let mut calls = 0;
        let result = drive(Resend::new(&backoff, vec![1, 2], Vec::len), |_, left: Vec<u8>| {
            calls += 1;
            if calls < 3 {
                Partial::Failed(left, Fault::transient("throttled"))
            } else {
                Partial::Done
            }
        });
        assert!(result.is_ok());
        assert_eq!(calls, 3);
    }
}
