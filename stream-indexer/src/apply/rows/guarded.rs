//! Guarded row writes (see the parent module's doc): a call's writes as
//! conditional PutItems, sent together, and each settled by its answer.

use aws_kit::retry::{Partial, Resend};

use super::{Batch, Call};
use crate::store::{RowGuard, RowOutcome, Store, StoreError};

impl<S: Store> Call<'_, S> {
    /// The writes as conditional PutItems, sent together and resent
    /// (those that failed transiently) until each is done; on failure the
    /// writes left go back to the front of the queue.
    pub(super) async fn guarded(&mut self, batch: Batch) -> Result<(), StoreError> {
        let guards: Option<Vec<RowGuard>> = batch
            .writes
            .iter()
            .map(|write| self.stamping.row_guard(write.index, &write.key))
            .collect();
        let Some(guards) = guards else {
            // Not guarded after all: the unconditional request.
            return self.request(batch).await;
        };
        let mut resend = Resend::new(self.backoff, (batch, guards), |(batch, _)| batch.len());
        while let Some((attempt, (batch, guards))) = resend.next_attempt() {
            // Each write is a request of its own, and each one sent again a resend.
            if attempt > 0 {
                self.progress.stats.requests.retries += batch.len();
            }
            self.progress.stats.requests.put_row_if += batch.len();
            let answers = self.store.put_rows_if(&batch.writes, &guards).await;
            let sent = self.settle_guarded(batch, guards, answers);
            resend.sent(sent).await;
        }
        resend.finish().map_err(|(fault, (batch, _))| {
            self.queue.push_front(batch);
            fault
        })
    }

    /// Settles each guarded write by its answer: written, stale (done:
    /// what is there is newer) or refused; what failed otherwise is left,
    /// to send again (a write without an answer too).
    fn settle_guarded(
        &mut self,
        batch: Batch,
        guards: Vec<RowGuard>,
        answers: Vec<Result<RowOutcome, StoreError>>,
    ) -> Partial<(Batch, Vec<RowGuard>)> {
        let (mut left, mut left_guards) = (Batch::default(), Vec::new());
        // The first fault, and the first that fails the whole call (one
        // that is not transient: a deployment fault).
        let (mut fault, mut stop) = (None, None);
        let mut answers = answers.into_iter();
        for ((record, write), guard) in batch.into_pairs().zip(guards) {
            let answer = answers
                .next()
                .unwrap_or_else(|| Err(StoreError::transient("the store gave no answer for a row write")));
            match answer {
                Ok(RowOutcome::Written) => self.row_done(record, &write),
                Ok(RowOutcome::Stale) => {
                    self.progress.done.push(record);
                    self.progress.stats.stale += 1;
                }
                Err(error) if error.is_refused() => self.row_refused(record, &write, &error),
                Err(error) => {
                    if !error.is_retryable() && stop.is_none() {
                        stop = Some(error.clone());
                    }
                    fault.get_or_insert(error);
                    left.push(record, write);
                    left_guards.push(guard);
                }
            }
        }
        match (stop, fault) {
            (Some(stop), _) => Partial::Failed((left, left_guards), stop),
            (None, Some(fault)) => Partial::Left((left, left_guards), fault),
            (None, None) => Partial::Done,
        }
    }
}
