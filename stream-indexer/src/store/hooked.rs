//! A store that runs a hook right after each read returns (feature
//! `testing`): how race tests land a user's write, and the stream's record
//! of it, between a command's read and its write, with no sleeps.
//!
//! [`Hooked`] forwards every [`Store`] and [`Scan`] request to the store it
//! wraps; after a [`Store::query_partition`] or a [`Scan::read_item`] it
//! awaits [`AfterRead::after_read`] with what was read, then returns the
//! read's result.

use std::future::Future;

use model::index::RowKey;
use model::Image;

use super::scan::{Page, RowsRead, Scan, Segment};
use super::{RowGuard, RowOutcome, RowWrite, SetChange, SetOutcome, SetStamp, Store, StoreError};

/// A read that has just returned.
#[derive(Debug, Clone, Copy)]
pub enum Read<'a> {
    /// A Query of one partition ([`Store::query_partition`]).
    Query { table: &'a str, partition: &'a str },
    /// A point read of one source item ([`Scan::read_item`]).
    Item { table: &'a str, key: &'a Image },
}

/// What runs after a read (the race a test stages).
pub trait AfterRead: Send + Sync {
    fn after_read(&self, read: Read<'_>) -> impl Future<Output = ()> + Send;
}

/// A store whose reads run `hook` once they return. See the module doc.
pub struct Hooked<S, H> {
    pub store: S,
    pub hook: H,
}

impl<S: Store, H: AfterRead> Store for Hooked<S, H> {
    async fn write_rows(&self, writes: &[RowWrite]) -> Result<Vec<RowWrite>, StoreError> {
        self.store.write_rows(writes).await
    }

    async fn put_row_if(&self, write: &RowWrite, guard: &RowGuard) -> Result<RowOutcome, StoreError> {
        self.store.put_row_if(write, guard).await
    }

    async fn update_set_stamped(
        &self,
        edge_set: usize,
        node: &str,
        change: &SetChange,
        stamp: SetStamp<'_>,
    ) -> Result<SetOutcome, StoreError> {
        self.store.update_set_stamped(edge_set, node, change, stamp).await
    }

    async fn query_partition(&self, table: &str, partition: &str) -> Result<Vec<Image>, StoreError> {
        let read = self.store.query_partition(table, partition).await;
        self.hook.after_read(Read::Query { table, partition }).await;
        read
    }

    async fn set_marker_stamped(
        &self,
        edge_set: usize,
        node: &str,
        complete: bool,
        stamp: SetStamp<'_>,
    ) -> Result<SetOutcome, StoreError> {
        self.store.set_marker_stamped(edge_set, node, complete, stamp).await
    }
}

impl<S: Scan, H: AfterRead> Scan for Hooked<S, H> {
    async fn scan_items(
        &self,
        table: &str,
        segment: Segment,
        start: Option<Image>,
        limit: u32,
    ) -> Result<Page<Image>, StoreError> {
        self.store.scan_items(table, segment, start, limit).await
    }

    async fn scan_rows(
        &self,
        index: usize,
        segment: Segment,
        start: Option<Image>,
        limit: u32,
    ) -> Result<Page<(RowKey, Image)>, StoreError> {
        self.store.scan_rows(index, segment, start, limit).await
    }

    async fn read_item(&self, table: &str, key: &Image) -> Result<Option<Image>, StoreError> {
        let read = self.store.read_item(table, key).await;
        self.hook.after_read(Read::Item { table, key }).await;
        read
    }

    async fn read_rows(&self, index: usize, keys: Vec<RowKey>) -> Result<RowsRead, StoreError> {
        self.store.read_rows(index, keys).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use model::config;
    use model::Value;

    use super::*;
    use crate::store::memory::MemoryStore;

    /// Records what it was told was read.
    #[derive(Default)]
    struct Log(Mutex<Vec<String>>);

    impl AfterRead for Log {
        async fn after_read(&self, read: Read<'_>) {
            let what = match read {
                Read::Query { table, partition } => format!("query {table} {partition}"),
                Read::Item { table, key } => format!("item {table} {}", key.len()),
            };
            self.0.lock().unwrap_or_else(|p| p.into_inner()).push(what);
        }
    }

    #[test]
    fn reads_run_the_hook_after_they_return_and_writes_do_not() {
        let config = Arc::new(config::parse(config::EXAMPLE_CONFIG, "example").unwrap_or_else(|e| panic!("{e}")));
        let store = Arc::new(MemoryStore::new(config));
        let node = Image::from([
            ("source".to_owned(), Value::S("GOAL-1".to_owned())),
            ("target".to_owned(), Value::S("GOAL-1".to_owned())),
        ]);
        let _ = store.put_item("records", node.clone());
        let hooked = Hooked {
            store,
            hook: Log::default(),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        runtime.block_on(async {
            let items = hooked.query_partition("records", "GOAL-1").await;
            assert_eq!(items.map(|i| i.len()).ok(), Some(1));
            let item = hooked.read_item("records", &node).await;
            assert_eq!(item.ok().flatten().as_ref(), Some(&node));
            let _ = hooked.write_rows(&[]).await;
        });
        let log = hooked.hook.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        assert_eq!(log, ["query records GOAL-1", "item records 2"]);
    }
}
