//! `streamdex lag`: how far each consumer is behind on each shard, from the
//! checkpoints (`streamdex run`'s file) or, without one, from the trim
//! horizon (everything in the stream is backlog). The backlog is every
//! record after the checkpoint (filtered or not: Lambda's iterator age does
//! not look at filters either); the age is that of the oldest of them, and
//! the time left is how long until the stream trims that record (its
//! retention from its creation: 24 h for a DynamoDB stream, a Kinesis data
//! stream's own): what the on-call has before data is lost.

use model::filter::Consumer;
use serde::Serialize;

use super::checkpoint::Checkpoints;
use super::stream::{Position, RecentReads, StreamError, StreamRecord, StreamSource};
use crate::stack::Stack;

/// One consumer on one shard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShardLag {
    pub table: String,
    pub consumer: String,
    pub shard: String,
    /// The checkpoint (the last sequence number done), if any.
    pub checkpoint: Option<String>,
    /// The consumer finished this (closed) shard.
    pub finished: bool,
    /// Records after the checkpoint.
    pub backlog: u64,
    /// The age of the oldest of them, milliseconds (0 without backlog).
    pub age_ms: u64,
    /// Time left before the stream trims the oldest of them (the stream's
    /// retention from its creation), milliseconds; `None` without backlog
    /// (nothing at risk).
    pub time_left_ms: Option<u64>,
    /// The stream's retention (milliseconds): a DynamoDB stream's 24 hours,
    /// or a Kinesis data stream's `retention_hours`.
    pub retention_ms: u64,
}

/// Every consumer's lag on every shard of every configured table.
pub async fn measure(
    source: &dyn StreamSource,
    stack: &Stack,
    checkpoints: &Checkpoints,
    now_ms: u64,
) -> Result<Vec<ShardLag>, StreamError> {
    let mut lags = Vec::new();
    for table in &stack.source_tables {
        if table.consumers.is_empty() {
            continue;
        }
        let arn = source.stream_arn(&table.name).await?;
        let shards = source.shards(&arn).await?;
        let retention_ms = table.kinesis.as_ref().map_or(super::age::STREAM_RETENTION_MS, |k| {
            u64::from(k.retention_hours) * 3_600_000
        });
        for shard in &shards {
            for consumer in &table.consumers {
                let at = Shard {
                    table: &table.name,
                    arn: &arn,
                    shard: &shard.id,
                    retention_ms,
                };
                lags.push(shard_lag(source, &at, *consumer, checkpoints, now_ms).await?);
            }
        }
    }
    Ok(lags)
}

/// One shard of a table's stream, and how long the stream keeps a record.
struct Shard<'a> {
    table: &'a str,
    arn: &'a str,
    shard: &'a str,
    retention_ms: u64,
}

async fn shard_lag(
    source: &dyn StreamSource,
    at: &Shard<'_>,
    consumer: Consumer,
    checkpoints: &Checkpoints,
    now_ms: u64,
) -> Result<ShardLag, StreamError> {
    let &Shard {
        table,
        arn,
        shard,
        retention_ms,
    } = at;
    let position = checkpoints.get(arn, shard, consumer);
    let mut lag = ShardLag {
        table: table.to_owned(),
        consumer: consumer.as_str().to_owned(),
        shard: shard.to_owned(),
        checkpoint: position.sequence_number.clone(),
        finished: position.finished,
        backlog: 0,
        age_ms: 0,
        time_left_ms: None,
        retention_ms,
    };
    if position.finished {
        return Ok(lag);
    }
    let checkpoint = position.sequence_number.clone();
    let from = position.sequence_number.map_or(Position::TrimHorizon, Position::After);
    let mut iterator = Some(source.iterator(arn, shard, &from).await?);
    let mut oldest = None;
    // A record handed out again, or numbered at or before the checkpoint, is
    // not backlog, and a page of nothing new is the end (DynamoDB Streams
    // never hands out either; moto does: see RecentReads).
    let after_checkpoint = |r: &StreamRecord| {
        checkpoint
            .as_deref()
            .is_none_or(|c| model::sequence::cmp(&r.sequence_number, c).is_gt())
    };
    let mut recent = RecentReads::default();
    while let Some(it) = iterator.take() {
        let page = source.records(arn, shard, &it, 1000).await?;
        let mut new = page
            .records
            .iter()
            .filter(|r| recent.first_read(r) && after_checkpoint(r))
            .peekable();
        if new.peek().is_none() {
            break;
        }
        for record in new {
            if oldest.is_none() {
                oldest = record.created_ms;
            }
            lag.backlog = lag.backlog.saturating_add(1);
        }
        iterator = page.next;
    }
    lag.age_ms = oldest.map_or(0, |created| now_ms.saturating_sub(created));
    lag.time_left_ms = (lag.backlog > 0).then(|| super::age::time_left_ms(retention_ms, lag.age_ms));
    Ok(lag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::checkpoint;
    use crate::runner::stream::memory::{stream_arn, MemoryStreams};
    use model::config;

    /// The example's stack, each table's stream one empty in-memory shard (`TABLE-0`).
    fn example_streams() -> (Stack, MemoryStreams) {
        let config = config::parse(config::EXAMPLE_CONFIG, "example").unwrap();
        let streams = MemoryStreams::new();
        for table in ["records", "issues", "layers"] {
            streams.add_shard(table, &format!("{table}-0"), None);
        }
        (Stack::new(&config), streams)
    }

    /// The records indexer's checkpoint at `sequence_number`; no other.
    fn indexer_at(sequence_number: &str) -> Checkpoints {
        let mut checkpoints = Checkpoints::default();
        checkpoints.set(
            "records",
            &stream_arn("records"),
            "records-0",
            Consumer::Indexer,
            checkpoint::Position {
                sequence_number: Some(sequence_number.to_owned()),
                finished: false,
            },
        );
        checkpoints
    }

    #[tokio::test]
    async fn lag_counts_what_is_after_the_checkpoint() {
        let (stack, streams) = example_streams();
        for i in 1..=5u64 {
            streams.push("records-0", &format!("{i}00"), Some(i * 1000), "{}".to_owned());
        }
        let checkpoints = indexer_at("300");
        let lags = measure(&streams, &stack, &checkpoints, 10_000).await.unwrap();
        let of = |table: &str, consumer: &str| {
            lags.iter()
                .find(|l| l.table == table && l.consumer == consumer)
                .map(|l| (l.backlog, l.age_ms, l.time_left_ms))
        };
        let day = 86_400_000;
        assert_eq!(
            of("records", "indexer"),
            Some((2, 6_000, Some(day - 6_000))),
            "records 400 and 500; 400 is 6 s old, so trimmed in 24 h less 6 s"
        );
        assert_eq!(
            of("records", "router"),
            Some((5, 9_000, Some(day - 9_000))),
            "no checkpoint: from the trim horizon"
        );
        assert_eq!(
            of("issues", "indexer"),
            Some((0, 0, None)),
            "nothing unread, nothing at risk"
        );
        assert_eq!(of("layers", "router"), Some((0, 0, None)));
        assert_eq!(of("layers", "indexer"), None, "layers has no indexer");
    }

    /// moto can hand out the last record on every read after it (see
    /// `MemoryStreams::iterate_like_moto`): `lag` read it forever. It counts
    /// each record once and stops at the first page of nothing new.
    #[tokio::test]
    async fn a_record_handed_out_again_is_counted_once_and_the_count_ends() {
        let (stack, streams) = example_streams();
        streams.iterate_like_moto();
        // Bounds the test: without the fix every read after 20 fails the count.
        streams.fail_reads_after(20);
        streams.push("records-0", "100", Some(1000), "{\"a\":1}".to_owned());
        streams.push("records-0", "101", Some(2000), "{\"b\":1}".to_owned());
        streams.push("records-0", "101", Some(3000), "{\"c\":1}".to_owned());
        let checkpoints = indexer_at("101");
        let lags = measure(&streams, &stack, &checkpoints, 10_000).await.unwrap();
        let of = |table: &str, consumer: &str| {
            lags.iter()
                .find(|l| l.table == table && l.consumer == consumer)
                .map(|l| l.backlog)
        };
        assert_eq!(of("records", "router"), Some(3), "from the trim horizon, each once");
        assert_eq!(
            of("records", "indexer"),
            Some(0),
            "after 101: the second 101 (moto's way) is not after the checkpoint, then nothing new"
        );
    }
}
