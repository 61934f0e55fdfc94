//! The retry policy every request shares: exponential backoff with full
//! jitter, and a bound on attempts in a row that make no progress.
//!
//! The policy is a value; the one retry driver (`aws_kit::retry`) carries it
//! out. The wait before the next attempt, after `stalled` attempts in a row
//! without progress (at least 1), is uniform in
//! `[0, min(cap, base · 2^(stalled-1))]`; an attempt that made progress
//! (some writes of a batch landed) counts as none, so a call that keeps
//! making progress is never given up on, and one that makes none is given up
//! after [`Backoff::attempts`] attempts in a row.

use std::time::Duration;

/// How failed requests are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
    pub cap: Duration,
    /// Attempts in a row without progress, the first included (at least 1 is made).
    pub max_attempts: u32,
}

impl Default for Backoff {
    /// 25 ms doubling up to 2 s, 8 attempts (at most about 5 s of waiting).
    fn default() -> Backoff {
        Backoff {
            base: Duration::from_millis(25),
            cap: Duration::from_secs(2),
            max_attempts: 8,
        }
    }
}

impl Backoff {
    /// No waiting at all (tests).
    pub const fn immediate(max_attempts: u32) -> Backoff {
        Backoff {
            base: Duration::ZERO,
            cap: Duration::ZERO,
            max_attempts,
        }
    }

    /// The longest wait before retry `retry` (0 = the first retry).
    pub fn ceiling(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
        self.base.checked_mul(factor).unwrap_or(self.cap).min(self.cap)
    }

    /// A random wait in `[0, ceiling(retry)]` (full jitter).
    pub fn delay(&self, retry: u32) -> Duration {
        let ceiling = self.ceiling(retry);
        if ceiling.is_zero() {
            return ceiling;
        }
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(fastrand::u64(0..=nanos))
    }

    /// Attempts in a row without progress, at least 1.
    pub fn attempts(&self) -> u32 {
        self.max_attempts.max(1)
    }

    /// After `stalled` attempts in a row without progress (0 when the last
    /// attempt made progress): the wait before the next attempt, or `None`
    /// when the attempts are spent.
    pub fn next(&self, stalled: u32) -> Option<Duration> {
        if stalled >= self.attempts() {
            return None;
        }
        Some(self.delay(stalled.saturating_sub(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn waits_double_up_to_the_cap() {
        let b = Backoff::default();
        assert_eq!(b.ceiling(0), Duration::from_millis(25));
        assert_eq!(b.ceiling(3), Duration::from_millis(200));
        assert_eq!(b.ceiling(10), Duration::from_secs(2));
        assert_eq!(b.ceiling(u32::MAX), Duration::from_secs(2));
    }

    #[test]
    fn attempts_without_progress_are_bounded_and_progress_resets_them() {
        let b = Backoff::immediate(3);
        assert_eq!(b.next(0), Some(Duration::ZERO), "progress: go again");
        assert_eq!(b.next(1), Some(Duration::ZERO));
        assert_eq!(b.next(2), Some(Duration::ZERO));
        assert_eq!(b.next(3), None, "three in a row without progress: give up");
        assert_eq!(
            Backoff::immediate(0).next(1),
            None,
            "at least one attempt, never a retry"
        );
    }

    proptest! {
        #[test]
        fn a_delay_never_passes_its_ceiling(retry in 0u32..64, base in 0u64..1000, cap in 0u64..10_000) {
            let b = Backoff { base: Duration::from_millis(base), cap: Duration::from_millis(cap), max_attempts: 5 };
            prop_assert!(b.delay(retry) <= b.ceiling(retry));
            prop_assert!(b.ceiling(retry) <= b.cap);
        }
    }
}
