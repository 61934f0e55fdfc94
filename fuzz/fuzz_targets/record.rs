//! The record parser and what follows it in both consumers: any bytes as a
//! Lambda event, a GetRecords response, JSON Lines or one record; every
//! usable record of a declared table is validated, and a valid one planned
//! (the indexer) and classified (the router). Nothing may panic; a record
//! that fails validation must never reach the planner. A batch glanced at
//! (the router's reading) must read as it reads whole, but for the images
//! of the records glanced at, and route the same.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use model::config::{parse, Config, EXAMPLE_CONFIG};
use model::plan::Planner;
use model::record::Mode;
use model::value::Image;

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
    glanced_as_whole(config, data);
});

/// The router's reading against the whole reading (see the module doc).
fn glanced_as_whole(config: &Config, data: &[u8]) {
    let (Ok(glanced), Ok(whole)) = (model::record::read_batch::<Image>(data, Mode::Glance), model::record::read_batch::<Image>(data, Mode::Whole)) else {
        assert_eq!(
            model::record::read_batch::<Image>(data, Mode::Glance).err(),
            model::record::read_batch::<Image>(data, Mode::Whole).err()
        );
        return;
    };
    let (glanced, whole): (Vec<_>, Vec<_>) = (glanced.collect(), whole.collect());
    assert_eq!(glanced.len(), whole.len());
    for (g, w) in glanced.iter().zip(&whole) {
        let (Ok((_, g)), Ok((_, w))) = (g, w) else {
            assert_eq!(g.as_ref().err(), w.as_ref().err());
            continue;
        };
        assert_eq!(g.whole().record, w.record);
        assert_eq!(g.record.as_ref().err(), w.record.as_ref().err());
        let (Ok(glanced), Ok(record)) = (&g.record, &w.record) else { continue };
        assert_eq!(glanced.keys, record.keys);
        let Ok(table) = config.table_of_record(record) else { continue };
        assert_eq!(
            model::validate::check(glanced, table).is_ok(),
            model::validate::check(record, table).is_ok()
        );
        assert_eq!(
            model::event::classify_received(config, table, g, glanced).events,
            model::event::classify(config, table, record)
        );
    }
}
