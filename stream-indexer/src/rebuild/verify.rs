//! Verify: scan the scope's source tables (parallel segments, strongly
//! consistent, page by page) into a `model::drift::Verification`, then its
//! index tables, and report the drift.

use super::*;

/// Scans every segment of one table concurrently, handing each page's items to `sink`.
pub(super) async fn scan_all<T, F, Fut>(
    options: &Options,
    table: &str,
    progress: &dyn Progress,
    page: F,
    sink: &(dyn Fn(Vec<T>) + Sync),
) -> Result<(), RebuildError>
where
    F: Fn(Segment, Option<Image>) -> Fut + Sync,
    Fut: Future<Output = Result<crate::store::scan::Page<T>, StoreError>>,
{
    let of = options.segments.max(1);
    let segments = (0..of).map(|number| {
        let page = &page;
        async move {
            let segment = Segment { number, of };
            let mut start = None;
            loop {
                let got = retry(&options.backoff, || page(segment, start.clone()))
                    .await
                    .map_err(|source| RebuildError::Scan {
                        table: table.to_owned(),
                        segment: number,
                        of,
                        source,
                    })?;
                progress.advance(got.items.len() as u64);
                sink(got.items);
                match got.next {
                    // A cursor that does not move would loop forever: refuse it.
                    Some(next) if start.as_ref() == Some(&next) => {
                        return Err(RebuildError::Scan {
                            table: table.to_owned(),
                            segment: number,
                            of,
                            source: StoreError::transient(format!("the scan did not advance past {next:?}; run again")),
                        })
                    }
                    Some(next) => start = Some(next),
                    None => return Ok::<(), RebuildError>(()),
                }
            }
        }
    });
    stream::iter(segments)
        .buffer_unordered(usize::try_from(of).unwrap_or(1))
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Checks the derived data of `scope` against its source tables.
pub async fn verify<S: Scan>(
    store: &S,
    config: &Config,
    scope: &Scope,
    options: &Options,
    progress: &dyn Progress,
) -> Result<Report, RebuildError> {
    let check = Mutex::new(Verification::new(config, scope.clone()));
    for table in scope.source_tables(config) {
        progress.start(&format!("scanning {}", table.name), None);
        let name = table.name.as_str();
        scan_all(
            options,
            name,
            progress,
            |segment, start| store.scan_items(name, segment, start, options.page_size),
            &|items: Vec<Image>| {
                let mut check = lock(&check);
                for item in &items {
                    check.source_item(name, item);
                }
            },
        )
        .await?;
        progress.finish();
    }
    for &i in &scope.indexes {
        let Some(index) = config.indexes.get(i) else { continue };
        progress.start(&format!("scanning {}", index.table), None);
        scan_all(
            options,
            &index.table,
            progress,
            |segment, start| store.scan_rows(i, segment, start, options.page_size),
            &|rows: Vec<(RowKey, Image)>| {
                let mut check = lock(&check);
                for (key, attributes) in rows {
                    check.index_row(i, key, attributes);
                }
            },
        )
        .await?;
        progress.finish();
    }
    let check = check.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
    Ok(check.finish())
}
