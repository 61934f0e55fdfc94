//! What EventBridge needs of a route: its rule's event pattern and name.

use crate::config::{Config, RouteConfig};

/// The EventBridge rule of a route: its name and event pattern.
///
/// The pattern matches the route's events and nothing else: `source`,
/// `detail-type` and `detail.table` (two tables may use one detail type;
/// one table may not, see the config):
///
/// ```json
/// {"source": ["streamdex"], "detail-type": ["Node Expired"], "detail": {"table": ["records"]}}
/// ```
pub fn pattern(config: &Config, route: &RouteConfig) -> serde_json::Value {
    serde_json::json!({
        "source": [config.events.source],
        "detail-type": [route.detail_type],
        "detail": {"table": [route.table]},
    })
}

/// EventBridge's limit on rule names (characters of `[.\-_A-Za-z0-9]`).
pub const RULE_NAME_CHARS: usize = 64;

/// The rule name of a route: `TABLE-DETAIL-TYPE` in lower case, every run
/// of other characters as one `-` (`records` + `Node Expired` →
/// `records-node-expired`). A name over [`RULE_NAME_CHARS`] keeps its first
/// 55 characters and ends in `-` and 8 hex digits of a hash of the whole
/// (FNV-1a), so it stays stable and distinct. The config refuses two routes
/// with one rule name.
pub fn rule_name(route: &RouteConfig) -> String {
    let whole = format!("{}-{}", route.table, route.detail_type);
    let mut name = String::with_capacity(whole.len());
    for c in whole.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
            name.push(c.to_ascii_lowercase());
        } else if !name.ends_with('-') {
            name.push('-');
        }
    }
    let name = name.trim_matches('-').to_owned();
    if name.len() <= RULE_NAME_CHARS {
        return name;
    }
    let hash = whole.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!(
        "{}-{:08x}",
        name[..RULE_NAME_CHARS - 9].trim_end_matches('-'),
        hash as u32
    )
}
