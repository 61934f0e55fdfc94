//! Tailing streams (`streamdex record`): every record of the configured
//! tables' streams, from the trim horizon or from now (`LATEST`), shard by
//! shard with parents before children, for as long as the caller polls.
//! A record a read hands out again ([`RecentReads`]) is not given twice.

use std::collections::{BTreeMap, BTreeSet};

use super::shards;
use super::stream::{Position, RecentReads, ShardInfo, StreamRecord, StreamSource};

/// Re-list the shards every this many polls.
const LIST_EVERY: u32 = 20;

#[derive(Debug)]
struct Cursor {
    read_from: Position,
    iterator: Option<String>,
    ended: bool,
    /// To skip a record a read hands out again.
    recent: RecentReads,
}

#[derive(Debug, Default)]
struct Stream {
    arn: String,
    shards: Vec<ShardInfo>,
}

/// What one poll gave.
#[derive(Debug, Default)]
pub struct Polled {
    /// (table, record), in stream order per shard.
    pub records: Vec<(String, StreamRecord)>,
    /// Failures that the next poll tries again.
    pub problems: Vec<String>,
}

/// A tail of several tables' streams.
pub struct Tail<'s> {
    source: &'s dyn StreamSource,
    tables: Vec<String>,
    start: Position,
    streams: BTreeMap<String, Stream>,
    /// (stream, shard) → cursor.
    cursors: BTreeMap<(String, String), Cursor>,
    polls: u32,
    listed_once: bool,
    /// (stream, shard) listed at the first listing: they start at `start`.
    initial: BTreeSet<(String, String)>,
}

impl<'s> Tail<'s> {
    /// `start` is where shards open at the first listing start
    /// ([`Position::TrimHorizon`] or [`Position::Latest`]); shards that
    /// appear later are read whole.
    pub fn new(source: &'s dyn StreamSource, tables: Vec<String>, start: Position) -> Tail<'s> {
        Tail {
            source,
            tables,
            start,
            streams: BTreeMap::new(),
            cursors: BTreeMap::new(),
            polls: 0,
            listed_once: false,
            initial: BTreeSet::new(),
        }
    }

    /// Lists every table's shards (fails when a table has no stream).
    pub async fn list(&mut self) -> Result<(), super::stream::StreamError> {
        for table in &self.tables {
            let arn = self.source.stream_arn(table).await?;
            let shards = self.source.shards(&arn).await?;
            if !self.listed_once {
                self.initial.extend(shards.iter().map(|s| (arn.clone(), s.id.clone())));
            }
            self.streams.insert(table.clone(), Stream { arn, shards });
        }
        for stream in self.streams.values() {
            let ended: BTreeSet<String> = self
                .cursors
                .iter()
                .filter(|((arn, _), c)| *arn == stream.arn && c.ended)
                .map(|((_, shard), _)| shard.clone())
                .collect();
            let started: BTreeSet<String> = self
                .cursors
                .keys()
                .filter(|(arn, _)| *arn == stream.arn)
                .map(|(_, shard)| shard.clone())
                .collect();
            for shard in shards::ready(&stream.shards, &ended, &started) {
                let key = (stream.arn.clone(), shard.id.clone());
                let read_from = if self.initial.contains(&key) {
                    self.start.clone()
                } else {
                    Position::TrimHorizon
                };
                // LATEST means "from now": take the iterator now, not at the first read.
                let iterator = match read_from {
                    Position::Latest => Some(self.source.iterator(&stream.arn, &shard.id, &read_from).await?),
                    _ => None,
                };
                self.cursors.insert(
                    key,
                    Cursor {
                        read_from,
                        iterator,
                        ended: false,
                        recent: RecentReads::default(),
                    },
                );
            }
        }
        self.listed_once = true;
        Ok(())
    }

    /// Reads once from every started shard.
    pub async fn poll(&mut self) -> Polled {
        let mut polled = Polled::default();
        self.polls = self.polls.wrapping_add(1);
        if !self.listed_once || self.polls.is_multiple_of(LIST_EVERY) {
            if let Err(e) = self.list().await {
                polled.problems.push(e.to_string());
            }
        }
        let tables: BTreeMap<String, String> = self
            .streams
            .iter()
            .map(|(table, s)| (s.arn.clone(), table.clone()))
            .collect();
        let mut ended_any = false;
        for ((arn, shard), cursor) in self.cursors.iter_mut().filter(|(_, c)| !c.ended) {
            let iterator = match cursor.iterator.take() {
                Some(it) => it,
                None => match self.source.iterator(arn, shard, &cursor.read_from).await {
                    Ok(it) => it,
                    Err(e) => {
                        polled.problems.push(e.to_string());
                        continue;
                    }
                },
            };
            match self.source.records(arn, shard, &iterator, 1000).await {
                Ok(page) => {
                    let mut got = 0;
                    for record in page.records {
                        if !cursor.recent.first_read(&record) {
                            continue;
                        }
                        got += 1;
                        cursor.read_from = Position::After(record.sequence_number.clone());
                        polled
                            .records
                            .push((tables.get(arn).cloned().unwrap_or_default(), record));
                    }
                    match page.next {
                        None => {
                            cursor.ended = true;
                            ended_any = true;
                        }
                        Some(next) if got > 0 || cursor.read_from == Position::Latest => cursor.iterator = Some(next),
                        Some(_) => {}
                    }
                }
                Err(e) => polled.problems.push(e.to_string()),
            }
        }
        if ended_any {
            if let Err(e) = self.list().await {
                polled.problems.push(e.to_string());
            }
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::stream::memory::MemoryStreams;

    #[tokio::test]
    async fn a_tail_reads_parents_before_children_and_latest_skips_the_past() {
        let streams = MemoryStreams::new();
        streams.add_shard("t", "parent", None);
        streams.add_shard("t", "child", Some("parent"));
        streams.push("parent", "100", None, "{\"p\":1}".to_owned());
        streams.push("child", "200", None, "{\"c\":1}".to_owned());
        let mut tail = Tail::new(&streams, vec!["t".to_owned()], Position::TrimHorizon);
        let first = tail.poll().await;
        let seqs = |p: &Polled| {
            p.records
                .iter()
                .map(|(_, r)| r.sequence_number.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(seqs(&first), ["100"], "the child waits");
        streams.close("parent");
        let second = tail.poll().await;
        assert!(second.records.is_empty() && second.problems.is_empty(), "{second:?}");
        let third = tail.poll().await;
        assert_eq!(seqs(&third), ["200"]);
        assert_eq!(third.records[0].0, "t");

        let mut latest = Tail::new(&streams, vec!["t".to_owned()], Position::Latest);
        assert!(latest.poll().await.records.is_empty());
        streams.push("child", "300", None, "{}".to_owned());
        assert_eq!(seqs(&latest.poll().await), ["300"]);
    }

    /// moto can give two records one sequence number and then hands out the
    /// second on every read after it (see `MemoryStreams::iterate_like_moto`):
    /// `record --idle-exit` never saw the stream idle.
    #[tokio::test]
    async fn a_record_handed_out_again_is_given_once() {
        let streams = MemoryStreams::new();
        streams.add_shard("t", "s", None);
        streams.iterate_like_moto();
        streams.push("s", "100", None, "{\"a\":1}".to_owned());
        streams.push("s", "101", None, "{\"b\":1}".to_owned());
        streams.push("s", "101", None, "{\"c\":1}".to_owned());
        let mut tail = Tail::new(&streams, vec!["t".to_owned()], Position::TrimHorizon);
        let jsons = |p: &Polled| p.records.iter().map(|(_, r)| r.json.clone()).collect::<Vec<_>>();
        assert_eq!(jsons(&tail.poll().await), ["{\"a\":1}", "{\"b\":1}", "{\"c\":1}"]);
        for _ in 0..3 {
            let again = tail.poll().await;
            assert!(again.records.is_empty() && again.problems.is_empty(), "{again:?}");
        }
        streams.push("s", "103", None, "{\"d\":1}".to_owned());
        assert_eq!(jsons(&tail.poll().await), ["{\"d\":1}"]);
    }
}
