//! The runner wired to an endpoint (a moto server, or AWS): the stream
//! read with DynamoDB Streams, the indexer on DynamoDB, the router on the
//! config's EventBridge bus, the quarantine and on-failure queues and the
//! reap rules' queues that `streamdex up` created, the reaper on DynamoDB.

use std::sync::Arc;

use aws_config::SdkConfig;
use aws_kit::clients::{s3_client, sqs_client};
use aws_kit::quarantine::claim::ClaimBucket;
use aws_kit::quarantine::sqs::SqsQuarantine;
use aws_kit::quarantine::Quarantine;
use event_router::ledger::dynamo::DynamoLedger;
use event_router::publish::eventbridge::{eventbridge_client, EventBridgePublisher};
use event_router::reaper::dynamo::DynamoGraph;
use event_router::{Reaper, Router};
use model::filter::Consumer;
use model::Config;
use stream_indexer::store::dynamo::{dynamodb_client, DynamoStore};
use stream_indexer::{Backoff, Indexer};

use super::age::Thresholds;
use super::checkpoint::Checkpoints;
use super::copier::{Copier, Delivery};
use super::expiry::Expiries;
use super::failure::{OnFailure, S3OnFailure};
use super::function::{ConsumerFunction, Function};
use super::host::{HostedFunction, HostedReaper, Hosting};
use super::mapping::Settings;
use super::reaper_feed::{Queue, ReaperFeed};
use super::stream::dynamo::DynamoStreams;
use super::stream::kinesis::source_for;
use super::stream::StreamSource;
use super::sweeper::Sweeper;
use super::{MappingSpec, Runner, RunnerOptions};
use crate::stack::{self, FunctionRole, QueuePurpose, Stack, StackError};
use aws_kit::clock::Clock;

/// Why the runner could not be wired.
#[derive(Debug, thiserror::Error)]
pub enum WiringError {
    #[error("queue `{name}` does not exist on this endpoint: run `streamdex up CONFIG` against it first")]
    MissingQueue { name: String },
    #[error("bucket `{name}` does not exist on this endpoint: run `streamdex up CONFIG` against it first")]
    MissingBucket { name: String },
    #[error("the deployed mapping of table `{table}` has no on-failure bucket; the template gives every mapping one")]
    NoOnFailureDestination { table: String },
    /// Looking a queue or bucket up failed (the error names which).
    #[error(transparent)]
    Lookup(#[from] StackError),
}

/// What to wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wiring {
    /// Feed the reaper from the reap rules' queues.
    pub reaper: bool,
    pub discover_every_ms: u64,
    /// The longest wait between reads of an idle shard (milliseconds).
    pub poll_interval_ms: u64,
    /// Act as the TTL service, sweeping every this many milliseconds (`None`: off).
    pub local_ttl_every_ms: Option<u64>,
    /// Overrides every mapping's batching window (milliseconds); `None`: the
    /// mappings' own (none in the template).
    pub window_ms: Option<u64>,
    /// How the copy into the data streams of tables read from Kinesis
    /// delivers (see [`super::copier`]).
    pub delivery: Delivery,
}

/// The URL of the queue `name`, which `up` must have created.
pub(crate) async fn queue_url(sqs: &aws_sdk_sqs::Client, name: &str) -> Result<String, WiringError> {
    match stack::queue_url(sqs, name).await {
        Ok(Some(url)) => Ok(url),
        Ok(None) => Err(WiringError::MissingQueue { name: name.to_owned() }),
        Err(e) => Err(WiringError::Lookup(e)),
    }
}

async fn check_bucket(s3: &aws_sdk_s3::Client, name: &str) -> Result<(), WiringError> {
    match stack::bucket_exists(s3, name).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(WiringError::MissingBucket { name: name.to_owned() }),
        Err(e) => Err(WiringError::Lookup(e)),
    }
}

/// The consumer `consumer` of `config` on the endpoint of `sdk` as a
/// function (what its Lambda runs), quarantining into `quarantine`.
pub fn consumer_function<Q: Quarantine + 'static>(
    sdk: &SdkConfig,
    dynamodb: &aws_sdk_dynamodb::Client,
    config: &Arc<Config>,
    consumer: Consumer,
    quarantine: Q,
) -> Arc<dyn Function> {
    let name = stack::function_name(config, FunctionRole::of(consumer));
    match consumer {
        Consumer::Indexer => Arc::new(ConsumerFunction {
            name,
            consumer: Indexer::new(
                config.clone(),
                DynamoStore::new(dynamodb.clone(), config.clone()),
                quarantine,
                stream_indexer::Options::default(),
            ),
        }),
        Consumer::Router => Arc::new(ConsumerFunction {
            name,
            consumer: Router::new(
                config.clone(),
                EventBridgePublisher::new(eventbridge_client(sdk), config.events.bus.clone()),
                quarantine,
                event_router::Options::default(),
            )
            .with_ledger(DynamoLedger::for_config(dynamodb, config)),
        }),
    }
}

/// One mapping to wire.
struct Planned {
    table: String,
    consumer: Consumer,
    settings: Settings,
    filters: Vec<model::filter::Pattern>,
    /// Its on-failure destination: a bucket, and the mapping's name in its keys.
    on_failure: Option<(String, String)>,
}

/// The functions by consumer, and the mappings feeding them.
type Wired = (Vec<(Consumer, Arc<dyn Function>)>, Vec<Planned>);

/// The runner for `config` on the endpoint of `sdk`: the consumers in
/// process, fed as the config's stack describes, or (with `hosting`) the
/// built functions, fed as the deployed mappings say.
pub async fn connect(
    sdk: &SdkConfig,
    config: Arc<Config>,
    clock: Arc<dyn Clock>,
    checkpoints: Checkpoints,
    wiring: Wiring,
    hosting: Option<&Hosting>,
) -> Result<Runner, WiringError> {
    let stack = Stack::new(&config);
    let sqs = sqs_client(sdk);
    let s3 = s3_client(sdk);
    let dynamodb = dynamodb_client(sdk);
    // Buckets known to exist: each is looked up once.
    let mut buckets = std::collections::BTreeSet::new();
    let (functions, planned) = match hosting {
        Some(hosting) => hosted(hosting, &stack),
        None => {
            let quarantine_url = queue_url(&sqs, &stack::quarantine_queue_name(&config)).await?;
            check_bucket(&s3, &stack.quarantine_bucket).await?;
            buckets.insert(stack.quarantine_bucket.clone());
            in_process(sdk, (&sqs, &s3), &dynamodb, &config, &stack, quarantine_url)
        }
    };
    let expiries = Arc::new(Expiries::new(checkpoints.expiries.clone()));
    let sweeper = wiring
        .local_ttl_every_ms
        .and_then(|every| Some((Sweeper::new(dynamodb.clone(), &config, expiries.clone())?, every)));
    let streams = match &sweeper {
        Some(_) => DynamoStreams::new(sdk).with_expiries(expiries.clone()),
        None => DynamoStreams::new(sdk),
    };
    // Tables read from Kinesis: their data streams are read, and their
    // DynamoDB streams copied into them (see `copier`).
    let source: Arc<dyn StreamSource> = Arc::from(source_for(sdk, &stack, streams.clone()));
    let copier = Copier::new(
        Arc::new(streams),
        aws_sdk_kinesis::Client::new(sdk),
        &config,
        wiring.delivery,
    );
    let mut runner = Runner::new(
        source,
        clock,
        RunnerOptions {
            discover_every_ms: wiring.discover_every_ms,
            poll_interval_ms: wiring.poll_interval_ms,
            thresholds: Thresholds::of(&config.alarms),
        },
        checkpoints,
    );
    for Planned {
        table,
        consumer,
        settings,
        filters,
        on_failure: destination,
    } in planned
    {
        let Some((_, function)) = functions.iter().find(|(c, _)| *c == consumer) else {
            continue;
        };
        let on_failure: Arc<dyn OnFailure> = match destination {
            Some((bucket, mapping)) => {
                if !buckets.contains(&bucket) {
                    check_bucket(&s3, &bucket).await?;
                    buckets.insert(bucket.clone());
                }
                Arc::new(S3OnFailure {
                    client: s3.clone(),
                    bucket,
                    mapping,
                })
            }
            None => return Err(WiringError::NoOnFailureDestination { table }),
        };
        let retention_ms = config
            .table(&table)
            .map_or(super::age::STREAM_RETENTION_MS, |t| super::age::retention_ms(t.stream));
        runner.add_mapping(MappingSpec {
            retention_ms,
            table,
            consumer,
            settings: Settings {
                window_ms: wiring.window_ms.unwrap_or(settings.window_ms),
                ..settings
            },
            filters,
            function: function.clone(),
            on_failure,
        });
    }
    if wiring.reaper {
        if let Some(feed) = reaper_feed(&sqs, &dynamodb, &config, &stack, hosting).await? {
            runner.set_reaper_feed(feed);
        }
    }
    if let Some((sweeper, every)) = sweeper {
        runner.set_sweeper(sweeper, every, expiries);
    }
    if let Some(copier) = copier {
        runner.set_copier(copier, config.clone());
    }
    Ok(runner)
}

/// The built functions of `hosting`, fed as its deployed mappings say.
fn hosted(hosting: &Hosting, stack: &Stack) -> Wired {
    let mut functions: Vec<(Consumer, Arc<dyn Function>)> = Vec::new();
    for consumer in Consumer::ALL {
        if let Some(hosted) = hosting.function(FunctionRole::of(consumer)) {
            functions.push((consumer, Arc::new(HostedFunction(hosted.clone()))));
        }
    }
    // A mapping of a table read from Kinesis reads the table's data
    // stream: the runner knows it by its table.
    let table_of_stream: std::collections::BTreeMap<String, String> = stack
        .kinesis_streams()
        .into_iter()
        .map(|(table, s)| (s, table))
        .collect();
    let planned = hosting
        .mappings
        .iter()
        .filter_map(|m| {
            let role = stack.functions.iter().find(|f| f.name == m.function)?.role;
            let consumer = Consumer::ALL.into_iter().find(|c| FunctionRole::of(*c) == role)?;
            Some(Planned {
                table: table_of_stream.get(&m.table).unwrap_or(&m.table).clone(),
                consumer,
                settings: m.settings,
                filters: m.filters.clone(),
                on_failure: m.on_failure_bucket.clone().map(|b| (b, m.id.clone())),
            })
        })
        .collect();
    (functions, planned)
}

/// The consumers in process, quarantining into the queue at
/// `quarantine_url` (and its claim bucket), fed as the config's stack
/// describes, each mapping's failed batches under its name in the
/// quarantine bucket.
fn in_process(
    sdk: &SdkConfig,
    (sqs, s3): (&aws_sdk_sqs::Client, &aws_sdk_s3::Client),
    dynamodb: &aws_sdk_dynamodb::Client,
    config: &Arc<Config>,
    stack: &Stack,
    quarantine_url: String,
) -> Wired {
    let mut functions: Vec<(Consumer, Arc<dyn Function>)> = Vec::new();
    for consumer in Consumer::ALL {
        if stack.mappings.iter().any(|m| m.consumer == consumer) {
            let quarantine = SqsQuarantine::new(sqs.clone(), quarantine_url.clone())
                .with_claims(ClaimBucket::new(s3.clone(), stack.quarantine_bucket.clone()));
            functions.push((consumer, consumer_function(sdk, dynamodb, config, consumer, quarantine)));
        }
    }
    let planned = stack
        .mappings
        .iter()
        .map(|m| Planned {
            table: m.table.clone(),
            consumer: m.consumer,
            settings: Settings::of(&m.settings),
            filters: m.filters.clone(),
            on_failure: Some((stack.quarantine_bucket.clone(), format!("{}-{}", m.consumer, m.table))),
        })
        .collect();
    (functions, planned)
}

/// The reaper fed from the reap rules' queues (`None`: no route reaps):
/// the built reaper of `hosting`, or the reaper in process.
async fn reaper_feed(
    sqs: &aws_sdk_sqs::Client,
    dynamodb: &aws_sdk_dynamodb::Client,
    config: &Arc<Config>,
    stack: &Stack,
    hosting: Option<&Hosting>,
) -> Result<Option<ReaperFeed>, WiringError> {
    let reap_rules: Vec<&stack::Rule> = stack.rules.iter().filter(|r| r.reaper).collect();
    if reap_rules.is_empty() {
        return Ok(None);
    }
    let mut queues = Vec::new();
    for rule in reap_rules {
        queues.push(Queue {
            name: rule.local_queue.clone(),
            url: queue_url(sqs, &rule.local_queue).await?,
        });
    }
    let dead_letters = match stack.queue(&QueuePurpose::ReaperDeadLetter) {
        Some(q) => Some(Queue {
            name: q.name.clone(),
            url: queue_url(sqs, &q.name).await?,
        }),
        None => None,
    };
    Ok(Some(ReaperFeed {
        sqs: sqs.clone(),
        queues,
        dead_letters,
        reaper: match hosting.and_then(|h| h.function(FunctionRole::Reaper)) {
            Some(hosted) => Arc::new(HostedReaper(hosted.clone())),
            None => Arc::new(
                Reaper::new(
                    config.clone(),
                    DynamoGraph::new(dynamodb.clone(), config.clone()),
                    Backoff::default(),
                )
                .with_ledger(DynamoLedger::for_config(dynamodb, config)),
            ),
        },
    }))
}
