//! The names of the deployment's resources: every queue and function name
//! starts with the bus's namespace, so two stacks on one server never collide.

use super::*;

/// The deployment's namespace: the event bus name with every character
/// outside `[A-Za-z0-9_-]` as `-` (`streamdex`).
pub fn namespace(config: &Config) -> String {
    config
        .events
        .bus
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// `NAMESPACE-SUFFIX` with every character outside `[A-Za-z0-9_-]` as `-`
/// (queue and function names allow no others), within `limit` characters: a longer name keeps its
/// start and ends in `-` and 8 hex digits of a hash of the whole (FNV-1a),
/// so it stays stable and distinct.
pub(super) fn bounded_name(config: &Config, suffix: &str, limit: usize) -> String {
    let whole: String = format!("{}-{suffix}", namespace(config))
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if whole.len() <= limit {
        return whole;
    }
    let hash = whole.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    // Every character is ASCII, so any cut is on a character boundary.
    format!("{}-{:08x}", &whole[..limit - 9], hash as u32)
}

/// Kinesis stream names: 1 to 128 characters.
const KINESIS_STREAM_NAME_CHARS: usize = 128;

/// The quarantine queue: `NAMESPACE-quarantine`.
pub fn quarantine_queue_name(config: &Config) -> String {
    bounded_name(config, "quarantine", QUEUE_NAME_CHARS)
}

/// The quarantine's claim-check bucket, locally: `namespace-quarantine-records`,
/// lowercase with `-` for `_` (S3's rules for bucket names).
/// The Kinesis data stream table `table` sends its changes to:
/// `NAMESPACE-TABLE-changes`, within Kinesis's 128 characters.
pub fn kinesis_stream_name(config: &Config, table: &str) -> String {
    bounded_name(config, &format!("{table}-changes"), KINESIS_STREAM_NAME_CHARS)
}

pub fn quarantine_bucket_name(config: &Config) -> String {
    bounded_name(config, "quarantine-records", BUCKET_NAME_CHARS)
        .to_ascii_lowercase()
        .replace('_', "-")
}

/// The dead-letter queue of the reaper rules' target: `NAMESPACE-reaper-dead-letters`.
pub fn reaper_dead_letter_queue_name(config: &Config) -> String {
    bounded_name(config, "reaper-dead-letters", QUEUE_NAME_CHARS)
}

/// The local stand-in for the target of `route`'s rule: `NAMESPACE-rule-RULE`
/// (RULE from [`model::event::rule_name`]). For a route with `reap = true`
/// it is the queue a local runner polls to feed the reaper.
pub fn rule_queue_name(config: &Config, route: &RouteConfig) -> String {
    bounded_name(
        config,
        &format!("rule-{}", model::event::rule_name(route)),
        QUEUE_NAME_CHARS,
    )
}

/// A function's name: `NAMESPACE-stream-indexer`, `NAMESPACE-event-router`, `NAMESPACE-reaper`.
pub fn function_name(config: &Config, role: FunctionRole) -> String {
    bounded_name(config, role.binary(), FUNCTION_NAME_CHARS)
}
