//! The reaper's [`Graph`] port on the indexer's in-memory tables
//! ([`MemoryStore`], shared with the indexer): deletes are recorded in its
//! stream like any user delete, so a local run feeds them back to the
//! indexer. It lives here, where both consumers meet, because the reaper
//! depends on neither the indexer nor its store.

use std::sync::Arc;

use event_router::Graph;
use model::{Fault as StoreError, Image};
use stream_indexer::store::memory::MemoryStore;

/// The in-memory source tables, as the reaper sees them.
#[derive(Clone)]
pub struct StoreGraph(pub Arc<MemoryStore>);

impl std::ops::Deref for StoreGraph {
    type Target = Arc<MemoryStore>;

    fn deref(&self) -> &Arc<MemoryStore> {
        &self.0
    }
}

fn unknown(e: impl std::fmt::Display) -> StoreError {
    StoreError::deployment(e.to_string())
}

impl Graph for StoreGraph {
    async fn get(&self, table: &str, key: &Image) -> Result<Option<Image>, StoreError> {
        self.get_item(table, key).map_err(unknown)
    }

    async fn partition(&self, table: &str, partition: &str) -> Result<Vec<Image>, StoreError> {
        if self.config().table(table).is_none() {
            return Err(unknown(format!("table `{table}` is not declared in the config")));
        }
        Ok(self.partition_items(table, partition))
    }

    async fn pointing_at(&self, table: &str, _index: &str, target: &str) -> Result<Vec<Image>, StoreError> {
        if self.config().table(table).and_then(|t| t.sort_key.as_ref()).is_none() {
            return Err(unknown(format!("table `{table}` has no sort key in the config")));
        }
        Ok(self.items_by_sort_key(table, target))
    }

    async fn delete(&self, table: &str, keys: Vec<Image>) -> Result<Vec<Image>, StoreError> {
        for key in &keys {
            self.remove_item(table, key).map_err(unknown)?;
        }
        Ok(Vec::new())
    }
}
