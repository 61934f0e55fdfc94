//! Carrying out an [`IndexQuery`] against DynamoDB: one Query per partition
//! (shard), page by page, with the plan's sort key condition, fed to the
//! model's merge, which says which partitions it needs a page of and when
//! the limit is reached. The pages the merge asks for together are
//! requested concurrently; each is retried by the one retry driver
//! (`aws_kit::retry`: throttling, 5xx, timeouts).

use std::collections::HashMap;

use aws_kit::convert::to_image;
use aws_kit::error::table_fault;
use aws_kit::retry;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use futures::future::try_join_all;
use model::config::IndexConfig;
use model::fault::Fault;
use model::query::{IndexQuery, Step};
use model::sortkey::KeyCondition;
use model::{Backoff, Image, Value};

/// Placeholders of the key condition expression (the attribute names come
/// from the config, the values from the plan).
const PARTITION_NAME: &str = "#pk";
const SORT_NAME: &str = "#sk";
const PARTITION_VALUE: &str = ":pk";
const LOW_VALUE: &str = ":low";
const HIGH_VALUE: &str = ":high";

/// The most rows one page asks for (DynamoDB's `Limit`) when the query has
/// no limit of its own: pages then end at DynamoDB's 1 MB.
const NO_LIMIT: i32 = i32::MAX;

/// One row of the result: its sort key and all its attributes.
pub struct Row {
    pub sort: String,
    pub item: Image,
}

/// The key condition expression and its values for `condition`.
fn key_condition(condition: Option<&KeyCondition>) -> (String, Vec<(&'static str, String)>) {
    let pk = format!("{PARTITION_NAME} = {PARTITION_VALUE}");
    match condition {
        None => (pk, Vec::new()),
        Some(KeyCondition::BeginsWith(prefix)) => (
            format!("{pk} AND begins_with({SORT_NAME}, {LOW_VALUE})"),
            vec![(LOW_VALUE, prefix.clone())],
        ),
        Some(KeyCondition::AtLeast(low)) => (
            format!("{pk} AND {SORT_NAME} >= {LOW_VALUE}"),
            vec![(LOW_VALUE, low.clone())],
        ),
        Some(KeyCondition::Between(low, high)) => (
            format!("{pk} AND {SORT_NAME} BETWEEN {LOW_VALUE} AND {HIGH_VALUE}"),
            vec![(LOW_VALUE, low.clone()), (HIGH_VALUE, high.clone())],
        ),
    }
}

/// Where one partition's Query goes on from: `None` before its first page.
type Cursor = Option<HashMap<String, AttributeValue>>;

/// One page of one partition: its rows and where the next page starts.
struct Page {
    rows: Vec<(String, Image)>,
    next: Cursor,
}

/// The rows of `query` on `index`'s table, in sort key order (descending with
/// `desc`), at most `limit`, each handed to `emit` as soon as it is known.
/// Returns how many Query requests were made.
pub async fn run(
    client: &Client,
    index: &IndexConfig,
    query: &IndexQuery,
    desc: bool,
    limit: Option<usize>,
    backoff: &Backoff,
    mut emit: impl FnMut(Row) -> Result<(), Fault>,
) -> Result<usize, Fault> {
    let condition = match &query.range {
        model::sortkey::KeyRange::Keys { condition, .. } => condition.clone(),
        model::sortkey::KeyRange::Empty => None,
    };
    let (expression, values) = key_condition(condition.as_ref());
    let mut merge = query.merge::<Image>(desc, limit);
    let mut cursors: Vec<Cursor> = vec![None; query.partitions.len()];
    let mut requests = 0;
    loop {
        match merge.step() {
            Step::Done => return Ok(requests),
            Step::Row(sort, item) => emit(Row { sort, item })?,
            Step::Fetch => {
                let wanted = merge.wanted();
                let page_limit = merge
                    .page_limit()
                    .map_or(NO_LIMIT, |l| i32::try_from(l).unwrap_or(NO_LIMIT));
                let pages = wanted.iter().map(|&run| {
                    let partition = query.partitions.get(run).cloned().unwrap_or_default();
                    let start = cursors.get(run).cloned().flatten();
                    let (expression, values) = (&expression, &values);
                    async move {
                        let page = retry::call(backoff, |_| {
                            page(
                                client,
                                index,
                                &partition,
                                expression,
                                values,
                                desc,
                                page_limit,
                                start.clone(),
                            )
                        })
                        .await?;
                        Ok::<_, Fault>((run, page))
                    }
                });
                let pages = try_join_all(pages).await?;
                requests += pages.len();
                for (run, page) in pages {
                    let more = page.next.is_some();
                    if let Some(cursor) = cursors.get_mut(run) {
                        *cursor = page.next;
                    }
                    merge
                        .feed(run, page.rows, more)
                        .map_err(|e| Fault::refused(format!("Query on table `{}`: {e}", index.table)))?;
                }
            }
        }
    }
}

/// One Query request.
#[allow(clippy::too_many_arguments)]
async fn page(
    client: &Client,
    index: &IndexConfig,
    partition: &str,
    expression: &str,
    values: &[(&'static str, String)],
    desc: bool,
    limit: i32,
    start: Cursor,
) -> Result<Page, Fault> {
    let mut request = client
        .query()
        .table_name(&index.table)
        .key_condition_expression(expression)
        .expression_attribute_names(PARTITION_NAME, &index.partition_key)
        .expression_attribute_values(PARTITION_VALUE, AttributeValue::S(partition.to_owned()))
        .scan_index_forward(!desc)
        .limit(limit)
        .set_exclusive_start_key(start);
    if !values.is_empty() {
        request = request.expression_attribute_names(SORT_NAME, &index.sort_key);
    }
    for (name, value) in values {
        request = request.expression_attribute_values(*name, AttributeValue::S(value.clone()));
    }
    let output = request
        .send()
        .await
        .map_err(|e| table_fault("Query", &index.table, e))?;
    let mut rows = Vec::new();
    for item in output.items.unwrap_or_default() {
        let image = to_image(item).map_err(|e| Fault::refused(format!("Query on table `{}`: {e}", index.table)))?;
        // A tombstone (a deleted row's version) is no row; a version is not data.
        let Some(image) = model::version::live_row(image) else {
            continue;
        };
        let Some(Value::S(sort)) = image.get(&index.sort_key) else {
            return Err(Fault::refused(format!(
                "Query on table `{}`: a row of partition `{partition}` has no String sort key `{}`",
                index.table, index.sort_key
            )));
        };
        rows.push((sort.clone(), image));
    }
    let next = output.last_evaluated_key.filter(|key| !key.is_empty());
    Ok(Page { rows, next })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_conditions_name_their_placeholders() {
        assert_eq!(key_condition(None), ("#pk = :pk".to_owned(), vec![]));
        assert_eq!(
            key_condition(Some(&KeyCondition::BeginsWith("Sa".into()))),
            (
                "#pk = :pk AND begins_with(#sk, :low)".to_owned(),
                vec![(":low", "Sa".to_owned())]
            )
        );
        assert_eq!(
            key_condition(Some(&KeyCondition::AtLeast("b".into()))).0,
            "#pk = :pk AND #sk >= :low"
        );
        assert_eq!(
            key_condition(Some(&KeyCondition::Between("a".into(), "b".into()))),
            (
                "#pk = :pk AND #sk BETWEEN :low AND :high".to_owned(),
                vec![(":low", "a".to_owned()), (":high", "b".to_owned())]
            )
        );
    }
}
