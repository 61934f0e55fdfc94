//! The write budget: items per second at most, shared by every write of a run.

use super::*;

/// Paces writes to at most `per_second` items per second: each request
/// waits for its turn, spaced by its item count (integer nanoseconds, no
/// floating point).
#[derive(Debug)]
pub struct WriteBudget {
    /// Nanoseconds per item; 0: no limit.
    interval: u64,
    next: tokio::sync::Mutex<Option<tokio::time::Instant>>,
}

impl WriteBudget {
    pub fn new(per_second: Option<u32>) -> WriteBudget {
        WriteBudget {
            interval: per_second
                .filter(|r| *r > 0)
                .map_or(0, |r| 1_000_000_000 / u64::from(r)),
            next: tokio::sync::Mutex::new(None),
        }
    }

    /// Waits until `items` more items may be written.
    pub async fn take(&self, items: u64) {
        if self.interval == 0 || items == 0 {
            return;
        }
        let at = {
            let mut next = self.next.lock().await;
            let now = tokio::time::Instant::now();
            let at = next.map_or(now, |n| n.max(now));
            *next = Some(at + Duration::from_nanos(self.interval.saturating_mul(items)));
            at
        };
        tokio::time::sleep_until(at).await;
    }
}
