//! The stand-in for DynamoDB's copy of a table's changes into its Kinesis
//! data stream, which the local endpoint does not make: each round, the
//! DynamoDB stream of every table read from Kinesis is read on, and each
//! change is put into the table's data stream as DynamoDB writes it
//! (`model::delivery::kinesis_change`, creation times in the table's
//! precision), optionally reordered within a window and repeated, as a
//! Kinesis data stream may deliver them.
//!
//! Creation times: the local stream's are whole seconds, which would make
//! two changes of a second one version. Each change gets the later of its
//! own time and a unit after the change before it, as DynamoDB's finer
//! clock would. The copy is at least once: it starts from the oldest
//! record on every run, and a change put again is a repeat, which the
//! consumers drop.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use aws_sdk_kinesis::primitives::Blob;
use aws_sdk_kinesis::types::PutRecordsRequestEntry;
use model::config::{Config, Precision};
use model::record::{parse_record, CreationTime};

use super::stream::{Position, StreamError, StreamSource};
use super::RunEvent;

/// Records read from a DynamoDB shard at a time.
const READ_LIMIT: u32 = 1000;
/// PutRecords takes at most this many entries.
const MAX_PUT: usize = 500;

/// How the copy delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Delivery {
    /// A change lands at most this many places from where it stood.
    pub reorder_window: usize,
    /// Percent of the changes put twice.
    pub repeat_percent: u32,
    /// The seed of the shuffle.
    pub seed: u64,
}

/// One table's copy.
struct Copy {
    table: String,
    stream: String,
    precision: Precision,
    arn: Option<String>,
    /// Shard → where its reading is (`None`: from the oldest).
    positions: BTreeMap<String, Option<String>>,
    last: Option<CreationTime>,
}

/// What a copy round did.
#[derive(Debug, Default)]
pub struct Copied {
    pub busy: bool,
    pub events: Vec<RunEvent>,
}

/// Copies the DynamoDB streams of the tables read from Kinesis.
pub struct Copier {
    source: Arc<dyn StreamSource>,
    kinesis: aws_sdk_kinesis::Client,
    copies: Vec<Copy>,
    delivery: Delivery,
    rng: fastrand::Rng,
    /// Changes read and not yet put: (copy, entry).
    pending: VecDeque<(usize, PutRecordsRequestEntry)>,
}

impl Copier {
    /// The copier of `config`'s tables read from Kinesis (`None` if none
    /// is), reading their DynamoDB streams through `source`.
    pub fn new(
        source: Arc<dyn StreamSource>,
        kinesis: aws_sdk_kinesis::Client,
        config: &Config,
        delivery: Delivery,
    ) -> Option<Self> {
        let copies: Vec<Copy> = config
            .tables
            .iter()
            .filter_map(|t| match t.stream {
                model::config::ChangeSource::Kinesis(k) => Some(Copy {
                    table: t.name.clone(),
                    stream: crate::stack::kinesis_stream_name(config, &t.name),
                    precision: k.precision,
                    arn: None,
                    positions: BTreeMap::new(),
                    last: None,
                }),
                model::config::ChangeSource::DynamoDb => None,
            })
            .collect();
        (!copies.is_empty()).then(|| Copier {
            source,
            kinesis,
            copies,
            delivery,
            rng: fastrand::Rng::with_seed(delivery.seed),
            pending: VecDeque::new(),
        })
    }

    /// One round: reads on, then puts what the window lets go (all of it
    /// once nothing new came).
    pub async fn copy(&mut self, config: &Config) -> Copied {
        let mut copied = Copied::default();
        let mut read = 0;
        for at in 0..self.copies.len() {
            match self.read(at, config).await {
                Ok(n) => read += n,
                Err(error) => copied.events.push(RunEvent::Problem {
                    context: format!("copying table `{}` into Kinesis", self.copies[at].table),
                    error: error.to_string(),
                }),
            }
        }
        let keep = if read == 0 { 0 } else { self.delivery.reorder_window };
        let mut out: Vec<(usize, PutRecordsRequestEntry)> = Vec::new();
        while self.pending.len() > keep {
            // Any of the first `window + 1` goes next: none moves further.
            let pick = self.rng.usize(..=keep.min(self.pending.len() - 1));
            if let Some(entry) = self.pending.remove(pick) {
                out.push(entry);
            }
        }
        copied.busy = read > 0 || !self.pending.is_empty();
        if let Err(problem) = self.put(out).await {
            copied.busy = true;
            copied.events.push(problem);
        }
        copied
    }

    /// Reads the new records of one table's DynamoDB stream into `pending`.
    async fn read(&mut self, at: usize, config: &Config) -> Result<usize, StreamError> {
        let table = self.copies[at].table.clone();
        let arn = match self.copies[at].arn.clone() {
            Some(arn) => arn,
            None => {
                let arn = self.source.stream_arn(&table).await?;
                self.copies[at].arn = Some(arn.clone());
                arn
            }
        };
        let mut read = 0;
        for shard in self.source.shards(&arn).await? {
            let position = match self.copies[at].positions.get(&shard.id).cloned().flatten() {
                Some(seq) => Position::After(seq),
                None => Position::TrimHorizon,
            };
            let iterator = self.source.iterator(&arn, &shard.id, &position).await?;
            let page = self.source.records(&arn, &shard.id, &iterator, READ_LIMIT).await?;
            for record in page.records {
                self.copies[at]
                    .positions
                    .insert(shard.id.clone(), Some(record.sequence_number.clone()));
                let Ok(raw) = serde_json::from_str::<&serde_json::value::RawValue>(&record.json) else {
                    continue;
                };
                let Ok(mut change) = parse_record(raw).record else {
                    continue;
                };
                let copy = &mut self.copies[at];
                change.created = Some(next_time(change.created, copy.last, copy.precision));
                copy.last = change.created;
                let data = model::delivery::kinesis_change(&change, copy.precision).to_string();
                let key = config
                    .table(&table)
                    .map(|t| model::ledger::item_of(t, &change.keys))
                    .unwrap_or_default();
                let entry = PutRecordsRequestEntry::builder()
                    .data(Blob::new(data.into_bytes()))
                    .partition_key(partition_key(&key))
                    .build()
                    .map_err(|e| StreamError::Read {
                        shard: shard.id.clone(),
                        reason: e.to_string(),
                    })?;
                // A repeat goes in beside it; the window moves each alike.
                if self.rng.u32(..100) < self.delivery.repeat_percent {
                    self.pending.push_back((at, entry.clone()));
                }
                self.pending.push_back((at, entry));
                read += 1;
            }
        }
        Ok(read)
    }

    /// Puts `entries` into their streams, in order; what fails goes back
    /// to the front of `pending`.
    async fn put(&mut self, entries: Vec<(usize, PutRecordsRequestEntry)>) -> Result<(), RunEvent> {
        let mut failed: Vec<(usize, PutRecordsRequestEntry)> = Vec::new();
        let mut problem = None;
        // One call per run of entries of one stream.
        let mut runs: Vec<(usize, Vec<PutRecordsRequestEntry>)> = Vec::new();
        for (at, entry) in entries {
            match runs.last_mut() {
                Some((last, run)) if *last == at && run.len() < MAX_PUT => run.push(entry),
                _ => runs.push((at, vec![entry])),
            }
        }
        for (at, run) in runs {
            let stream = self.copies[at].stream.clone();
            match self
                .kinesis
                .put_records()
                .stream_name(&stream)
                .set_records(Some(run.clone()))
                .send()
                .await
            {
                Ok(out) => {
                    for (entry, result) in run.into_iter().zip(out.records()) {
                        if result.error_code().is_some() {
                            failed.push((at, entry));
                        }
                    }
                }
                Err(e) => {
                    problem.get_or_insert(RunEvent::Problem {
                        context: format!("PutRecords into Kinesis stream `{stream}`"),
                        error: aws_kit::error::sdk_message(&e),
                    });
                    failed.extend(run.into_iter().map(|entry| (at, entry)));
                }
            }
        }
        for entry in failed.into_iter().rev() {
            self.pending.push_front(entry);
        }
        problem.map_or(Ok(()), Err)
    }
}

/// The later of `own` and one unit of `precision` after `last`.
fn next_time(own: Option<CreationTime>, last: Option<CreationTime>, precision: Precision) -> CreationTime {
    let unit = match precision {
        Precision::Microsecond => 1_000,
        Precision::Millisecond => 1_000_000,
    };
    let after = last.map(|l| {
        let nanos = l.nanos - l.nanos % unit + unit;
        CreationTime {
            seconds: l.seconds + i64::from(nanos / 1_000_000_000),
            nanos: nanos % 1_000_000_000,
        }
    });
    match (own, after) {
        (Some(own), Some(after)) => own.max(after),
        (Some(own), None) => own,
        (None, Some(after)) => after,
        (None, None) => CreationTime { seconds: 0, nanos: 0 },
    }
}

/// A Kinesis partition key (at most 256 characters) for an item.
fn partition_key(item: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    item.hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creation_times_step_a_unit_past_the_one_before() {
        let at = |seconds, nanos| CreationTime { seconds, nanos };
        let micro = Precision::Microsecond;
        assert_eq!(next_time(Some(at(10, 0)), None, micro), at(10, 0));
        assert_eq!(next_time(Some(at(10, 0)), Some(at(10, 0)), micro), at(10, 1_000));
        assert_eq!(next_time(Some(at(10, 0)), Some(at(10, 999_999_500)), micro), at(11, 0));
        assert_eq!(next_time(Some(at(12, 0)), Some(at(10, 5_000)), micro), at(12, 0));
        assert_eq!(
            next_time(Some(at(10, 0)), Some(at(10, 2_000_000)), Precision::Millisecond),
            at(10, 3_000_000)
        );
    }
}
