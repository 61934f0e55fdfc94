//! Sample data for the developer loop (`streamdex seed`): items shaped by
//! the config, so that every edge set, index and route gets something to
//! do.
//!
//! - **edge sets**: nodes `GOAL-1..`, `USER-1..` (and a node per other
//!   included edge type, `TEAM-1..` for `TEAMMEMBERSHIP`), and edges
//!   `SOURCE → TYPE-USER-j` of every included type, the other member
//!   attributes set to a role (`400-CONTRIBUTOR`, `500-LEAD`);
//! - **indexes**: items `PREFIX1..` with every attribute the index reads
//!   (a map of custom fields for a map `for_each`, numbers for `N` columns,
//!   strings otherwise) and the projected attributes;
//! - **routes** on other tables: items `PREFIXname-i` with a TTL a day ahead.
//!
//! [`sample`] is pure; [`write()`] puts the items with PutItem.

use std::collections::BTreeMap;

use aws_config::SdkConfig;
use aws_kit::convert::to_item;
use model::config::{Config, EdgeSetConfig, IndexConfig, RouteConfig, TemplatePart, ValueRef};
use model::sortkey::ColumnType;
use model::{Image, Value};

/// One item to write.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleItem {
    pub table: String,
    /// What it is, for the summary (`node`, `edge`, `item`).
    pub kind: &'static str,
    pub item: Image,
}

/// Why seeding stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeedError {
    /// Before anything was written: a table is not there (or could not be
    /// looked up).
    #[error("{reason}; nothing was written")]
    Table { table: String, reason: String },
    #[error("PutItem into `{table}` (item {position} of {total}): {reason}")]
    Put {
        table: String,
        position: usize,
        total: usize,
        reason: String,
    },
}

impl SeedError {
    /// A table the config names does not exist (`streamdex up` creates it).
    pub fn is_missing_table(&self) -> bool {
        match self {
            SeedError::Table { reason, .. } | SeedError::Put { reason, .. } => reason.contains("ResourceNotFound"),
        }
    }
}

fn s(v: impl Into<String>) -> Value {
    Value::S(v.into())
}

/// The node prefix of an edge type: `GOALMEMBERSHIP` → `GOAL`, else the type itself.
fn node_prefix(edge_type: &str) -> &str {
    edge_type
        .strip_suffix("MEMBERSHIP")
        .filter(|p| !p.is_empty())
        .unwrap_or(edge_type)
}

/// Sample items for `config`, `size` of each kind (at least 1): nodes and
/// edges of every edge set, items of every index's source table, and
/// items of the tables only a route reads.
pub fn sample(config: &Config, size: usize, now_secs: u64) -> Vec<SampleItem> {
    let size = size.max(1);
    let mut items = Vec::new();
    for set in &config.edge_sets {
        graph_items(config, set, size, &mut items);
    }
    for index in &config.indexes {
        index_items(config, index, size, &mut items);
    }
    let seeded: Vec<String> = items.iter().map(|i| i.table.clone()).collect();
    for route in config.routes.iter().filter(|r| !seeded.contains(&r.table)) {
        route_items(config, route, size, now_secs, &mut items);
    }
    items
}

/// The nodes (`USER-1`… and one per included edge type's node prefix)
/// and edges of edge set `set`, `size` of each kind.
fn graph_items(config: &Config, set: &EdgeSetConfig, size: usize, items: &mut Vec<SampleItem>) {
    let Some(table) = config.table(&set.table) else {
        return;
    };
    let Some(sort_key) = &table.sort_key else { return };
    let node = |id: &str| -> Image {
        [
            (table.partition_key.clone(), s(id)),
            (sort_key.clone(), s(id)),
            ("name".to_owned(), s(format!("{id} (sample)"))),
        ]
        .into()
    };
    for j in 1..=size + 1 {
        items.push(SampleItem {
            table: table.name.clone(),
            kind: "node",
            item: node(&format!("USER-{j}")),
        });
    }
    for edge_type in &set.include {
        let prefix = node_prefix(edge_type);
        for i in 1..=size {
            let source = format!("{prefix}-{i}");
            items.push(SampleItem {
                table: table.name.clone(),
                kind: "node",
                item: node(&source),
            });
            for j in 1..=(i % (size + 1)) + 1 {
                let mut edge = node(&source);
                edge.remove("name");
                edge.insert(sort_key.clone(), s(format!("{edge_type}-USER-{j}")));
                let role = if j == 1 { "500-LEAD" } else { "400-CONTRIBUTOR" };
                for attribute in &set.member {
                    if attribute != sort_key && attribute != &table.partition_key {
                        edge.insert(attribute.clone(), s(role));
                    }
                }
                items.push(SampleItem {
                    table: table.name.clone(),
                    kind: "edge",
                    item: edge,
                });
            }
        }
    }
}

/// Items of index `index`'s source table with the attributes its rows are
/// made of, `size` of them.
fn index_items(config: &Config, index: &IndexConfig, size: usize, items: &mut Vec<SampleItem>) {
    let Some(table) = config.table(&index.source.table) else {
        return;
    };
    let prefix = index
        .source
        .key_prefix
        .clone()
        .unwrap_or_else(|| format!("{}-", index.name));
    for i in 1..=size {
        let id = format!("{prefix}{i}");
        let mut item: Image = [(table.partition_key.clone(), s(&id))].into();
        if let Some(sk) = &table.sort_key {
            item.insert(sk.clone(), s(&id));
        }
        let mut attributes: BTreeMap<String, Value> = BTreeMap::new();
        for part in &index.partition.parts {
            if let TemplatePart::Ref(ValueRef::Attribute(a)) = part {
                attributes.insert(a.clone(), s(format!("{a}-{}", i % 2)));
            }
        }
        for column in &index.sort {
            if let ValueRef::Attribute(a) = &column.value {
                let value = match column.column.ty {
                    ColumnType::N => Value::N(format!("{}", 100 + i)),
                    ColumnType::Bool => Value::Bool(i % 2 == 0),
                    ColumnType::Date => s(format!("2025-01-{:02}", i % 28 + 1)),
                    ColumnType::Timestamp => s(format!("2025-01-{:02}T10:00:00Z", i % 28 + 1)),
                    _ => s(format!("{a}-{i}")),
                };
                attributes.insert(a.clone(), value);
            }
        }
        for a in &index.project {
            attributes.entry(a.clone()).or_insert_with(|| {
                s(if a == "state" {
                    "open".to_owned()
                } else {
                    format!("{a} {i}")
                })
            });
        }
        if let Some(for_each) = &index.for_each {
            let fields: std::collections::HashMap<String, Value> = [
                ("priority".to_owned(), s(["low", "high"][i % 2])),
                ("estimate".to_owned(), Value::N(format!("{}.5", i))),
                ("due".to_owned(), s(format!("2025-02-{:02}", i % 28 + 1))),
            ]
            .into();
            attributes.insert(for_each.clone(), Value::M(fields));
        }
        for (k, v) in attributes {
            if !item.contains_key(&k) {
                item.insert(k, v);
            }
        }
        items.push(SampleItem {
            table: table.name.clone(),
            kind: "item",
            item,
        });
    }
}

/// Items of a table only route `route` reads (expiring in a day when the
/// table has a TTL attribute), `size` of them.
fn route_items(config: &Config, route: &RouteConfig, size: usize, now_secs: u64, items: &mut Vec<SampleItem>) {
    let Some(table) = config.table(&route.table) else {
        return;
    };
    let prefix = route.key_prefix.clone().unwrap_or_default();
    for i in 1..=size {
        let id = format!("{prefix}sample-{i}");
        let mut item: Image = [(table.partition_key.clone(), s(&id))].into();
        if let Some(sk) = &table.sort_key {
            item.insert(sk.clone(), s(&id));
        }
        if let Some(ttl) = &table.ttl_attribute {
            item.insert(ttl.clone(), Value::N((now_secs + 86_400).to_string()));
        }
        items.push(SampleItem {
            table: table.name.clone(),
            kind: "item",
            item,
        });
    }
}

/// Checks that every table of `items` exists (DescribeTable), then puts
/// every item, in order, calling `progress` after each; stops at the first
/// failure. Each call goes through the one retry driver (`aws_kit::retry`:
/// throttling and 5xx retried with backoff), on the kit's client (no SDK
/// retries underneath, bounded timeouts).
pub async fn write(sdk: &SdkConfig, items: &[SampleItem], progress: &dyn Fn(usize)) -> Result<(), SeedError> {
    let client = aws_kit::clients::dynamodb_client(sdk);
    let backoff = model::Backoff::default();
    let mut tables: Vec<&str> = items.iter().map(|i| i.table.as_str()).collect();
    tables.sort_unstable();
    tables.dedup();
    for table in tables {
        aws_kit::retry::call(&backoff, |_| async {
            client
                .describe_table()
                .table_name(table)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_kit::error::table_fault("DescribeTable", table, e))
        })
        .await
        .map_err(|fault| SeedError::Table {
            table: table.to_owned(),
            reason: fault.message().to_owned(),
        })?;
    }
    for (position, item) in items.iter().enumerate() {
        aws_kit::retry::call(&backoff, |_| async {
            client
                .put_item()
                .table_name(&item.table)
                .set_item(Some(to_item(&item.item)))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_kit::error::table_fault("PutItem", &item.table, e))
        })
        .await
        .map_err(|fault| SeedError::Put {
            table: item.table.clone(),
            position: position + 1,
            total: items.len(),
            reason: fault.message().to_owned(),
        })?;
        progress(position + 1);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::config::{self, EXAMPLE_CONFIG};
    use model::Planner;

    #[test]
    fn samples_give_every_edge_set_index_and_route_work() {
        let config = config::parse(EXAMPLE_CONFIG, "example").unwrap();
        let items = sample(&config, 3, 1_700_000_000);
        let count = |table: &str, kind: &str| items.iter().filter(|i| i.table == table && i.kind == kind).count();
        assert!(count("records", "node") >= 4 + 3 + 3, "users, goals, teams");
        assert!(count("records", "edge") >= 6);
        assert_eq!(count("issues", "item"), 3);
        assert_eq!(count("layers", "item"), 3);
        // Each sample item, inserted, gives the planner something to do.
        let planner = Planner::new(&config);
        for item in items.iter().filter(|i| i.kind != "node" && i.table != "layers") {
            let table = config.table(&item.table).unwrap();
            let keys: Image = table
                .primary_key()
                .iter()
                .map(|k| ((*k).to_owned(), item.item[*k].clone()))
                .collect();
            let record = model::record::ChangeRecord {
                event_id: None,
                kind: model::record::EventKind::Insert,
                table: Some(item.table.as_str().into()),
                source_arn: None,
                keys,
                old: None,
                new: Some(item.item.clone()),
                sequence_number: "1".to_owned(),
                created: None,
                size_bytes: None,
                view_type: None,
                ttl_expiry: false,
            };
            let plan = planner.plan(&record);
            assert!(plan.problems.is_empty(), "{:?}: {:?}", item.item, plan.problems);
            assert!(!plan.mutations.is_empty(), "{:?} plans nothing", item.item);
        }
        let layer = items.iter().find(|i| i.table == "layers").unwrap();
        assert!(matches!(&layer.item["pk"], Value::S(pk) if pk.starts_with("lyr#")));
        assert_eq!(layer.item["ttl"], Value::N("1700086400".to_owned()));
    }
}
