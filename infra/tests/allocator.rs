//! The `streamdex` command runs on jemalloc with the options its `main`
//! gives it (`MALLOC_CONF` in `src/main.rs`): deeper thread caches, flushed
//! an eighth at a time. Checked from jemalloc's own account of its options,
//! printed at exit when `_RJEM_MALLOC_CONF` asks for it (run as a child
//! process, so the variable is the child's alone): were the options not
//! linked in, misspelt, or the allocator another, they would not read so.

use std::process::Command;

#[test]
fn replay_runs_on_jemalloc_with_deeper_thread_caches() {
    let history = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/example-history.jsonl");
    let output = Command::new(env!("CARGO_BIN_EXE_streamdex"))
        .args(["replay", history, "--no-progress"])
        .env("_RJEM_MALLOC_CONF", "stats_print:true")
        .output()
        .expect("the streamdex binary runs");
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{err}");
    // jemalloc complains on stderr of an option it cannot read.
    assert!(!err.contains("<jemalloc>"), "{err}");
    for option in [
        "opt.lg_tcache_nslots_mul: 3",
        "opt.tcache_nslots_small_max: 2048",
        "opt.lg_tcache_flush_small_div: 3",
    ] {
        assert!(err.contains(option), "jemalloc's statistics lack `{option}`");
    }
}
