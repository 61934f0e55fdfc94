//! The record parser and what follows it in both consumers: any bytes as a
//! Lambda event, a GetRecords response, JSON Lines or one record; every
//! usable record of a declared table is validated, and a valid one planned
//! (the indexer) and classified (the router). Nothing may panic; a record
//! that fails validation must never reach the planner.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use model::config::{parse, Config, EXAMPLE_CONFIG};
use model::plan::Planner;

fn config() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| match parse(EXAMPLE_CONFIG, "streamdex.example.toml") {
        Ok(config) => config,
        Err(e) => panic!("the example config does not load: {e}"),
    })
}

fuzz_target!(|data: &[u8]| {
    let config = config();
    let Ok(batch) = model::record::parse_any(data) else { return };
    let planner = Planner::new(config);
    for received in &batch {
        let _ = received.raw_json().text();
        let Ok(record) = &received.record else { continue };
        let Ok(table) = config.table_of_record(record) else { continue };
        if model::validate::check(record, table).is_err() {
            continue;
        }
        let _ = planner.plan(record);
        let _ = model::event::classify(config, table, record);
    }
});
