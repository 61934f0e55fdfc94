#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use model::config::{self, EXAMPLE_CONFIG};
use model::record::parse_batch;
use model::Planner;
use std::time::Instant;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let payload = std::fs::read(&path).unwrap();
    let config = config::parse(EXAMPLE_CONFIG, "x").unwrap();
    let planner = Planner::new(&config);
    for round in 0..5 {
        let t = Instant::now();
        let recs = parse_batch(&payload).unwrap();
        let parse = t.elapsed();
        let t = Instant::now();
        let mut n = 0;
        let mut plans = Vec::new();
        for r in &recs {
            if let Ok(rec) = &r.record {
                let p = planner.plan(rec);
                n += p.mutations.len();
                plans.push(p);
            }
        }
        let plan = t.elapsed();
        let t = Instant::now();
        drop(plans);
        let dp = t.elapsed();
        let t = Instant::now();
        drop(recs);
        let dr = t.elapsed();
        println!(
            "round {round}: parse {:?} plan {:?} ({n} mutations) drop plans {:?} drop recs {:?}",
            parse, plan, dp, dr
        );
    }
}
