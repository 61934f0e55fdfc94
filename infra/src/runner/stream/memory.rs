//! A stream in memory: shards with any lineage, records appended by the
//! test, iterators that are plain positions. For the runner's tests (moto
//! has one shard and never splits).

use std::collections::BTreeMap;
use std::sync::Mutex;

use futures::future::BoxFuture;
use futures::FutureExt;

use super::{Page, Position, ShardInfo, StreamError, StreamRecord, StreamSource};

#[derive(Debug, Default)]
struct Shard {
    info: Option<ShardInfo>,
    records: Vec<StreamRecord>,
}

#[derive(Debug, Default)]
struct Inner {
    /// table → stream ARN.
    streams: BTreeMap<String, String>,
    /// (stream, shard id) → shard, in creation order per stream.
    shards: Vec<(String, Shard)>,
    /// Failures to answer the next GetRecords calls with.
    fail_reads: usize,
    reads: usize,
    /// GetRecords calls past this many fail (a bound for tests of loops).
    read_limit: Option<usize>,
    /// Iterators resolve sequence numbers as moto's do (see [`MemoryStreams::iterate_like_moto`]).
    like_moto: bool,
}

/// Streams in memory. See the module doc.
#[derive(Debug, Default)]
pub struct MemoryStreams {
    inner: Mutex<Inner>,
}

/// The ARN the memory stream of `table` gets.
pub fn stream_arn(table: &str) -> String {
    format!("arn:aws:dynamodb:us-east-1:123456789012:table/{table}/stream/2025-01-01T00:00:00.000")
}

impl MemoryStreams {
    pub fn new() -> MemoryStreams {
        MemoryStreams::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds an open shard to `table`'s stream (created on first use).
    pub fn add_shard(&self, table: &str, shard: &str, parent: Option<&str>) {
        let mut inner = self.lock();
        let arn = inner
            .streams
            .entry(table.to_owned())
            .or_insert_with(|| stream_arn(table))
            .clone();
        inner.shards.push((
            arn,
            Shard {
                info: Some(ShardInfo {
                    id: shard.to_owned(),
                    parent: parent.map(str::to_owned),
                    closed: false,
                }),
                records: Vec::new(),
            },
        ));
    }

    /// Closes a shard: it takes no more records, and reading it ends.
    pub fn close(&self, shard: &str) {
        let mut inner = self.lock();
        if let Some(info) = inner
            .shards
            .iter_mut()
            .filter_map(|(_, s)| s.info.as_mut())
            .find(|i| i.id == shard)
        {
            info.closed = true;
        }
    }

    /// Appends a record to a shard. `json` is the record's Lambda JSON.
    pub fn push(&self, shard: &str, sequence_number: &str, created_ms: Option<u64>, json: String) {
        let mut inner = self.lock();
        if let Some((_, s)) = inner
            .shards
            .iter_mut()
            .find(|(_, s)| s.info.as_ref().is_some_and(|i| i.id == shard))
        {
            s.records.push(StreamRecord {
                sequence_number: sequence_number.to_owned(),
                created_ms,
                json,
            });
        }
    }

    /// The next `n` GetRecords calls fail (as moto's HTTP 500 on a bad iterator).
    pub fn fail_next_reads(&self, n: usize) {
        self.lock().fail_reads = n;
    }

    /// Iterators as moto's: `AFTER_SEQUENCE_NUMBER n` reads from the record
    /// after the first one numbered `n`, and a page's next iterator is
    /// `AFTER_SEQUENCE_NUMBER` its highest number. moto numbers a record by
    /// the shard's length when it is written, so two writes at once can get
    /// one number: then the second of them is handed out again by every
    /// read after it.
    pub fn iterate_like_moto(&self) {
        self.lock().like_moto = true;
    }

    /// The position after the first record numbered `seq`, moto's way; `None`
    /// when no record has that number.
    fn after_first(records: &[StreamRecord], seq: &str) -> Option<usize> {
        records
            .iter()
            .position(|r| model::sequence::cmp(&r.sequence_number, seq).is_eq())
            .map(|at| at + 1)
    }

    /// Every GetRecords call after the first `n` fails: a test that would
    /// otherwise read forever ends.
    pub fn fail_reads_after(&self, n: usize) {
        self.lock().read_limit = Some(n);
    }

    /// GetRecords calls so far.
    pub fn reads(&self) -> usize {
        self.lock().reads
    }

    fn shard_records(inner: &Inner, shard: &str) -> Option<(bool, Vec<StreamRecord>)> {
        inner
            .shards
            .iter()
            .find(|(_, s)| s.info.as_ref().is_some_and(|i| i.id == shard))
            .map(|(_, s)| (s.info.as_ref().is_some_and(|i| i.closed), s.records.clone()))
    }
}

impl StreamSource for MemoryStreams {
    fn stream_arn<'a>(&'a self, table: &'a str) -> BoxFuture<'a, Result<String, StreamError>> {
        let found = self.lock().streams.get(table).cloned();
        async move {
            found.ok_or_else(|| StreamError::NoStream {
                table: table.to_owned(),
            })
        }
        .boxed()
    }

    fn shards<'a>(&'a self, stream: &'a str) -> BoxFuture<'a, Result<Vec<ShardInfo>, StreamError>> {
        let shards = self
            .lock()
            .shards
            .iter()
            .filter(|(arn, _)| arn == stream)
            .filter_map(|(_, s)| s.info.clone())
            .collect();
        async move { Ok(shards) }.boxed()
    }

    fn iterator<'a>(
        &'a self,
        _stream: &'a str,
        shard: &'a str,
        position: &'a Position,
    ) -> BoxFuture<'a, Result<String, StreamError>> {
        let inner = self.lock();
        let result = match Self::shard_records(&inner, shard) {
            None => Err(StreamError::Iterator {
                shard: shard.to_owned(),
                position: position.to_string(),
                reason: "no such shard".to_owned(),
            }),
            Some((_, records)) => {
                let at = match position {
                    Position::TrimHorizon => 0,
                    Position::Latest => records.len(),
                    Position::After(seq) => inner
                        .like_moto
                        .then(|| Self::after_first(&records, seq))
                        .flatten()
                        .or_else(|| {
                            records
                                .iter()
                                .position(|r| model::sequence::cmp(&r.sequence_number, seq).is_gt())
                        })
                        .unwrap_or(records.len()),
                };
                Ok(format!("{shard}#{at}"))
            }
        };
        async move { result }.boxed()
    }

    fn records<'a>(
        &'a self,
        _stream: &'a str,
        shard: &'a str,
        iterator: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Page, StreamError>> {
        let mut inner = self.lock();
        inner.reads += 1;
        let over_limit = inner.read_limit.is_some_and(|limit| inner.reads > limit);
        let result = if over_limit {
            Err(StreamError::Read {
                shard: shard.to_owned(),
                reason: "over the test's read limit".to_owned(),
            })
        } else if inner.fail_reads > 0 {
            inner.fail_reads -= 1;
            Err(StreamError::IteratorExpired {
                shard: shard.to_owned(),
                reason: "HTTP 500 (injected)".to_owned(),
            })
        } else {
            let at = iterator
                .rsplit_once('#')
                .and_then(|(_, at)| at.parse::<usize>().ok())
                .unwrap_or(0);
            match Self::shard_records(&inner, shard) {
                None => Err(StreamError::Read {
                    shard: shard.to_owned(),
                    reason: "no such shard".to_owned(),
                }),
                Some((closed, records)) => {
                    let end = at
                        .saturating_add(usize::try_from(limit).unwrap_or(usize::MAX))
                        .min(records.len());
                    let page: Vec<StreamRecord> = records.get(at..end).map(<[_]>::to_vec).unwrap_or_default();
                    let highest = page
                        .iter()
                        .map(|r| r.sequence_number.as_str())
                        .max_by(|a, b| model::sequence::cmp(a, b));
                    let resume = match highest {
                        Some(seq) if inner.like_moto => Self::after_first(&records, seq).unwrap_or(end),
                        _ => end,
                    };
                    let next = (!(closed && end >= records.len())).then(|| format!("{shard}#{resume}"));
                    Ok(Page { records: page, next })
                }
            }
        };
        async move { result }.boxed()
    }
}
