//! What a config gives: [`Stack::new`] derives every resource from the
//! [`Config`] alone (see the list in [`super`]).

use super::*;

impl Stack {
    /// The deployment of `config`.
    pub fn new(config: &Config) -> Stack {
        let ns = namespace(config);
        let source_tables: Vec<SourceTable> = config.tables.iter().map(|t| source_table(config, t)).collect();
        let index_tables = config
            .indexes
            .iter()
            .map(|i| IndexTable {
                name: i.table.clone(),
                index: i.name.clone(),
                partition_key: i.partition_key.clone(),
                sort_key: i.sort_key.clone(),
            })
            .collect();
        let rules: Vec<Rule> = config
            .routes
            .iter()
            .enumerate()
            .map(|(i, route)| Rule {
                name: model::event::rule_name(route),
                route: i,
                detail_type: route.detail_type.clone(),
                table: route.table.clone(),
                pattern: model::event::pattern(config, route),
                reaper: route.reap,
                local_queue: rule_queue_name(config, route),
            })
            .collect();
        let mut consumers: Vec<Consumer> = source_tables.iter().flat_map(|t| t.consumers.clone()).collect();
        consumers.sort_unstable();
        consumers.dedup();
        let reaper = rules.iter().any(|r| r.reaper);
        let mut queues = vec![Queue {
            name: quarantine_queue_name(config),
            purpose: QueuePurpose::Quarantine,
        }];
        if reaper {
            queues.push(Queue {
                name: reaper_dead_letter_queue_name(config),
                purpose: QueuePurpose::ReaperDeadLetter,
            });
        }
        queues.extend(rules.iter().map(|r| Queue {
            name: r.local_queue.clone(),
            purpose: QueuePurpose::RuleTarget(r.name.clone()),
        }));
        let mut functions: Vec<Function> = consumers
            .iter()
            .map(|c| FunctionRole::of(*c))
            .chain(reaper.then_some(FunctionRole::Reaper))
            .map(|role| Function {
                role,
                name: function_name(config, role),
            })
            .collect();
        functions.sort_by_key(|f| f.role);
        let mappings = config
            .tables
            .iter()
            .zip(&source_tables)
            .flat_map(|(table, source)| {
                source.consumers.iter().map(move |c| Mapping {
                    table: table.name.clone(),
                    consumer: *c,
                    settings: MappingSettings::of(*c),
                    filters: filter::patterns(config, table, *c),
                })
            })
            .collect();
        Stack {
            namespace: ns,
            bus: Bus {
                name: config.events.bus.clone(),
            },
            source_tables,
            index_tables,
            queues,
            quarantine_bucket: quarantine_bucket_name(config),
            rules,
            functions,
            mappings,
            ledger_table: config.reads_kinesis().then(|| config.events.ledger_table.clone()),
        }
    }
}

fn source_table(config: &Config, table: &TableConfig) -> SourceTable {
    let target_index = match (config.edge_set(&table.name), &table.sort_key) {
        (Some(set), Some(sort_key)) => {
            let mut projected: Vec<String> = set
                .member
                .iter()
                .filter(|a| **a != table.partition_key && *a != sort_key)
                .cloned()
                .collect();
            projected.sort_unstable();
            projected.dedup();
            Some(TargetIndex {
                name: set.target_index.clone(),
                partition_key: sort_key.clone(),
                sort_key: table.partition_key.clone(),
                projected,
            })
        }
        _ => None,
    };
    SourceTable {
        name: table.name.clone(),
        partition_key: table.partition_key.clone(),
        sort_key: table.sort_key.clone(),
        ttl_attribute: table.ttl_attribute.clone(),
        target_index,
        edge_set: config.edge_set(&table.name).map(|set| EdgeSetAttributes {
            attribute: set.attribute.clone(),
            complete_attribute: set.complete_attribute.clone(),
        }),
        consumers: filter::consumers(config, &table.name),
        kinesis: match table.stream {
            model::config::ChangeSource::DynamoDb => None,
            model::config::ChangeSource::Kinesis(kinesis) => Some(KinesisStream {
                name: kinesis_stream_name(config, &table.name),
                retention_hours: kinesis.retention_hours,
                precision: kinesis.precision,
            }),
        },
    }
}
