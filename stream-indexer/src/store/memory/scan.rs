//! The [`Scan`] port on the in-memory tables: parallel segments, pages, consistent reads, as verify and rebuild use them.

use super::*;

/// Which of `of` parallel scan segments a key falls in (stable within a process).
pub(super) fn segment_of<K: std::hash::Hash>(key: &K, of: u32) -> u32 {
    use std::hash::Hasher as _;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    u32::try_from(h.finish() % u64::from(of.max(1))).unwrap_or(0)
}

pub(super) fn check_segment(segment: Segment, what: &str) -> Result<(), StoreError> {
    if segment.of == 0 || segment.number >= segment.of {
        return Err(StoreError::refused(format!(
            "{what}: segment {} of {} is not a valid parallel scan segment",
            segment.number, segment.of
        )));
    }
    Ok(())
}

/// One page of the entries of `range` that fall in `segment`.
pub(super) fn page_of<'a, K: std::hash::Hash + 'a, V: 'a, T>(
    range: impl Iterator<Item = (&'a K, &'a V)>,
    segment: Segment,
    limit: u32,
    take: impl Fn(&K, &V) -> T,
    cursor: impl Fn(&K) -> Image,
) -> Page<T> {
    let limit = usize::try_from(limit.max(1)).unwrap_or(usize::MAX);
    let mut page = Page {
        items: Vec::new(),
        next: None,
    };
    for (k, v) in range {
        if segment_of(k, segment.of) != segment.number {
            continue;
        }
        page.items.push(take(k, v));
        if page.items.len() >= limit {
            page.next = Some(cursor(k));
            break;
        }
    }
    page
}

impl Scan for MemoryStore {
    async fn scan_items(
        &self,
        table: &str,
        segment: Segment,
        start: Option<Image>,
        limit: u32,
    ) -> Result<Page<Image>, StoreError> {
        let what = format!("Scan on table `{table}`");
        check_segment(segment, &what)?;
        let t = self
            .config
            .table(table)
            .ok_or_else(|| StoreError::deployment(format!("{what}: ResourceNotFoundException")))?;
        let after = start
            .map(|s| item_key(t, &s))
            .transpose()
            .map_err(|e| StoreError::refused(format!("{what}: ExclusiveStartKey: {e}")))?;
        let state = self.lock();
        let Some(items) = state.tables.get(table) else {
            return Ok(Page::default());
        };
        let entries: Vec<(ItemKey, &Packed)> = items.after(after.as_ref()).collect();
        Ok(page_of(
            entries.iter().map(|(k, item)| (k, *item)),
            segment,
            limit,
            |_, item| item.unpack(),
            |k| {
                items
                    .get(k)
                    .map(|item| key_image(t, &item.unpack()))
                    .unwrap_or_default()
            },
        ))
    }

    async fn scan_rows(
        &self,
        index: usize,
        segment: Segment,
        start: Option<Image>,
        limit: u32,
    ) -> Result<Page<(RowKey, Image)>, StoreError> {
        let config = self
            .config
            .indexes
            .get(index)
            .ok_or_else(|| StoreError::deployment(format!("Scan: no index table #{index}")))?;
        let what = format!("Scan on table `{}`", config.table);
        check_segment(segment, &what)?;
        let after = match start {
            None => None,
            Some(s) => match (s.get(&config.partition_key), s.get(&config.sort_key)) {
                (Some(Value::S(p)), Some(Value::S(k))) => Some(RowKey {
                    partition: p.clone(),
                    sort: k.clone(),
                }),
                _ => {
                    return Err(StoreError::refused(format!(
                        "{what}: ExclusiveStartKey is not a row key"
                    )))
                }
            },
        };
        let mut state = self.lock();
        let range = state.rows.stored_after(index, after.as_ref());
        Ok(page_of(
            range,
            segment,
            limit,
            |k, v| (k.clone(), v.image()),
            |k| {
                Image::from([
                    (config.partition_key.clone(), Value::S(k.partition.clone())),
                    (config.sort_key.clone(), Value::S(k.sort.clone())),
                ])
            },
        ))
    }

    async fn read_item(&self, table: &str, key: &Image) -> Result<Option<Image>, StoreError> {
        self.get_item(table, key).map_err(|e| match e {
            MemoryError::UnknownTable(_) => StoreError::deployment(format!("GetItem: {e}")),
            MemoryError::BadKey { .. } => StoreError::refused(format!("GetItem: {e}")),
        })
    }

    async fn read_rows(&self, index: usize, keys: Vec<RowKey>) -> Result<RowsRead, StoreError> {
        if index >= self.config.indexes.len() {
            return Err(StoreError::deployment(format!("BatchGetItem: no index table #{index}")));
        }
        if keys.len() > MAX_BATCH_READS {
            return Err(StoreError::refused(format!(
                "BatchGetItem: {} keys, over the limit of {MAX_BATCH_READS}",
                keys.len()
            )));
        }
        let state = self.lock();
        let found = keys
            .into_iter()
            .filter_map(|k| state.rows.stored(index, k.clone()).map(|row| (k, row.image())))
            .collect();
        Ok(RowsRead {
            found,
            unprocessed: Vec::new(),
        })
    }
}
