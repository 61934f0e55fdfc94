//! The reaper's [`Graph`] port on the indexer's in-memory tables
//! ([`MemoryStore`], shared with the indexer): deletes are recorded in its
//! stream like any user delete, so a local run feeds them back to the
//! indexer. It lives here, where both consumers meet, because the reaper
//! depends on neither the indexer nor its store.

use std::sync::Arc;

use event_router::Graph;
use model::{Fault as StoreError, Image, Value};
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
        let pk = self
            .config()
            .table(table)
            .map(|t| t.partition_key.clone())
            .ok_or_else(|| unknown(format!("table `{table}` is not declared in the config")))?;
        let value = Value::S(partition.to_owned());
        Ok(self
            .items(table)
            .into_iter()
            .filter(|item| item.get(&pk) == Some(&value))
            .collect())
    }

    async fn pointing_at(&self, table: &str, _index: &str, target: &str) -> Result<Vec<Image>, StoreError> {
        let sk = self
            .config()
            .table(table)
            .and_then(|t| t.sort_key.clone())
            .ok_or_else(|| unknown(format!("table `{table}` has no sort key in the config")))?;
        let value = Value::S(target.to_owned());
        Ok(self
            .items(table)
            .into_iter()
            .filter(|item| item.get(&sk) == Some(&value))
            .collect())
    }

    async fn delete(&self, table: &str, keys: Vec<Image>) -> Result<Vec<Image>, StoreError> {
        for key in &keys {
            self.delete_item(table, key).map_err(unknown)?;
        }
        Ok(Vec::new())
    }
}
