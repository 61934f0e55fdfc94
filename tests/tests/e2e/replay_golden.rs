//! Pins what `streamdex replay FILE --dump json` prints for every recorded
//! fixture, byte for byte: the dump (stdout) and the summary (stderr). The
//! golden files were written by the code before the structure and speed
//! work, so any refactor that changes a row, a member, an event, a count or
//! the order of any of them fails here.
//!
//! When a change of output is intended, regenerate them and review the diff:
//!
//! ```sh
//! STREAMDEX_BLESS=1 cargo test -p streamdex-tests --test e2e -- replay_golden::
//! git diff tests/fixtures/
//! ```

use std::path::{Path, PathBuf};

use infra::cli::replay::{self, Dump, ReplayArgs};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The first line where two texts differ, for the failure message.
fn first_difference(expected: &str, actual: &str) -> String {
    let (mut e, mut a) = (expected.lines(), actual.lines());
    for line in 1.. {
        match (e.next(), a.next()) {
            (None, None) => return "no line differs (only line endings?)".to_owned(),
            (x, y) if x == y => continue,
            (x, y) => return format!("line {line}:\n  expected {x:?}\n  actual   {y:?}"),
        }
    }
    unreachable!()
}

fn check(golden: &Path, actual: &str) {
    if std::env::var_os("STREAMDEX_BLESS").is_some() {
        std::fs::write(golden, actual).expect("write the golden file");
        return;
    }
    let expected = std::fs::read_to_string(golden)
        .unwrap_or_else(|e| panic!("{}: {e} (STREAMDEX_BLESS=1 writes it)", golden.display()));
    assert!(
        expected == actual,
        "{} differs from what replay prints now; first difference at {}\n\
         If the change is intended: STREAMDEX_BLESS=1 cargo test -p streamdex-tests --test e2e -- replay_golden::",
        golden.display(),
        first_difference(&expected, actual)
    );
}

#[test]
fn every_fixture_replays_to_its_golden_dump_and_summary() {
    let mut seen = 0;
    let mut entries: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("tests/fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    entries.sort();
    for history in entries {
        let stem = history
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("a file name")
            .to_owned();
        let args = ReplayArgs {
            dump: Some(Dump::Json),
            no_progress: true,
            ..ReplayArgs::embedded(vec![history.clone()])
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = replay::run_with(&args, &mut out, &mut err).expect("replay runs");
        assert_eq!(code, 0, "{}: {}", history.display(), String::from_utf8_lossy(&err));
        check(
            &fixtures().join(format!("{stem}.dump.json")),
            &String::from_utf8_lossy(&out),
        );
        check(
            &fixtures().join(format!("{stem}.summary.txt")),
            &String::from_utf8_lossy(&err),
        );
        seen += 1;
    }
    assert!(seen >= 2, "the fixtures were not found");
}
