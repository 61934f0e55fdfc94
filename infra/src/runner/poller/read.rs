//! A worker's read: one GetRecords on its shard (taking an iterator
//! first when it holds none), into its buffer the records that pass the
//! mapping's filter; a trimmed stream is reported and read on from its
//! oldest record. See the pacing and iterator rules in [`super`].

use model::filter;

use super::view::filter_view;
use super::{Buffered, Tick, Worker, ITERATOR_REFRESH_MS};
use crate::runner::stream::{Position, StreamError, StreamSource};
use crate::runner::{MappingSpec, RunEvent};

impl Worker {
    /// Reads at most `limit` records (see the module doc).
    pub(super) async fn read(
        &mut self,
        spec: &MappingSpec,
        source: &dyn StreamSource,
        limit: u32,
        now_ms: u64,
        tick: &mut Tick,
    ) {
        // Until a read says otherwise (a failed one does not).
        self.at_tip = false;
        let iterator = match self.iterator.take() {
            Some(iterator) => iterator,
            None => match source.iterator(&self.stream, &self.shard, &self.read_from).await {
                Ok(iterator) => {
                    self.iterator_fresh_ms = now_ms;
                    iterator
                }
                Err(e) => {
                    tick.events.push(self.problem(&e));
                    return;
                }
            },
        };
        match source.records(&self.stream, &self.shard, &iterator, limit).await {
            Ok(page) => {
                let mut got = 0;
                for record in page.records {
                    if !self.recent.first_read(&record) {
                        continue;
                    }
                    got += 1;
                    self.read_from = Position::After(record.sequence_number.clone());
                    if filter::passes(&spec.filters, &filter_view(&record.json)) {
                        self.buffer.push_back(Buffered {
                            record: record.clone(),
                            read_ms: now_ms,
                        });
                    }
                    self.last_read = Some(record);
                }
                self.at_tip = got == 0;
                tick.busy |= got > 0;
                if got > 0 {
                    self.iterator_fresh_ms = now_ms;
                }
                let stale = now_ms.saturating_sub(self.iterator_fresh_ms) >= ITERATOR_REFRESH_MS;
                match page.next {
                    None => self.ended = true,
                    // LATEST again would skip what was written meanwhile: keep that one.
                    Some(next) if !stale || self.read_from == Position::Latest => self.iterator = Some(next),
                    Some(_) => {}
                }
            }
            Err(StreamError::Trimmed { shard, reason }) => {
                tick.events.push(RunEvent::Problem {
                    context: format!("{} {} shard {shard}", self.table, self.consumer),
                    error: format!(
                        "records after {} were trimmed from the stream before they were read ({reason}); \
                         reading on from the oldest record left: run `streamdex verify` to find what they changed",
                        self.read_from
                    ),
                });
                self.read_from = Position::TrimHorizon;
            }
            Err(e) => tick.events.push(self.problem(&e)),
        }
    }

    fn problem(&self, e: &StreamError) -> RunEvent {
        RunEvent::Problem {
            context: format!("{} {} shard {}", self.table, self.consumer, self.shard),
            error: e.to_string(),
        }
    }
}
