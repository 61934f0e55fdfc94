//! No import cycles between the source files of any crate of the workspace
//! (the rule: `streamdex_tests::layering`'s doc), and the checker's own
//! tests on small trees it is given.

use std::path::{Path, PathBuf};

use streamdex_tests::layering::{cycles, production_sources};

/// The workspace's crates' `src/` folders, from the root `Cargo.toml`'s members.
fn crate_sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("the workspace's Cargo.toml");
    let members = manifest
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .expect("a members list in the workspace's Cargo.toml")
        .0;
    let sources: Vec<PathBuf> = members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| root.join(m).join("src"))
        .collect();
    assert!(sources.len() >= 5, "read too few members: {sources:?}");
    sources
}

#[test]
fn no_crate_has_an_import_cycle_between_its_files() {
    let mut found = Vec::new();
    for src in crate_sources() {
        for cycle in cycles(&src).unwrap_or_else(|e| panic!("reading {}: {e}", src.display())) {
            found.push(cycle.to_string());
        }
    }
    assert!(
        found.is_empty(),
        "each module may import only modules below it (see tests/src/layering.rs):\n{}",
        found.join("\n")
    );
}

/// A crate made of `files` (path under `src/`, text) in a new folder.
fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    for (path, text) in files {
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().expect("a parent")).expect("its folder");
        std::fs::write(file, text).expect("the file");
    }
    dir
}

fn cycle_files(files: &[(&str, &str)]) -> Vec<Vec<String>> {
    let dir = tree(files);
    cycles(dir.path())
        .expect("readable")
        .into_iter()
        .map(|cycle| {
            let mut names: Vec<String> = cycle
                .steps
                .iter()
                .map(|(from, _, _)| {
                    from.strip_prefix(dir.path())
                        .expect("under the tree")
                        .display()
                        .to_string()
                })
                .collect();
            names.sort();
            names
        })
        .collect()
}

#[test]
fn siblings_that_import_each_other_are_a_cycle() {
    let found = cycle_files(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "use crate::b::B;\npub struct A;\n"),
        ("b.rs", "pub struct B;\nfn f() -> crate::a::A { crate::a::A }\n"),
    ]);
    assert_eq!(found, vec![vec!["a.rs".to_owned(), "b.rs".to_owned()]]);
}

#[test]
fn a_cycle_through_a_use_tree_and_a_child_module_is_found() {
    let found = cycle_files(&[
        ("lib.rs", "pub mod record;\npub mod config;\n"),
        (
            "record.rs",
            "mod ahead;\npub struct Record;\nfn f(a: ahead::Ahead) {}\n",
        ),
        (
            "record/ahead.rs",
            "use crate::{config::{self, Config as C}};\npub struct Ahead;\n",
        ),
        ("config.rs", "use crate::record::Record;\npub struct Config;\n"),
    ]);
    assert_eq!(
        found,
        vec![vec![
            "config.rs".to_owned(),
            "record.rs".to_owned(),
            "record/ahead.rs".to_owned()
        ]]
    );
}

#[test]
fn a_child_may_name_what_encloses_it_and_tests_comments_and_strings_do_not_count() {
    let found = cycle_files(&[
        ("lib.rs", "mod a;\nmod b;\npub struct Root;\n"),
        (
            "a/mod.rs",
            "mod child;\npub use child::C;\npub struct A;\n// use crate::b::B;\nconst S: &str = \"crate::b::B\";\n",
        ),
        ("a/child.rs", "use super::A;\nuse crate::Root;\npub struct C;\n"),
        (
            "b.rs",
            "use crate::a::A;\n#[cfg(test)]\nmod tests {\n    use crate::a::C;\n}\n",
        ),
        ("a/tests.rs", "use crate::b::*;\n"),
    ]);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn only_the_clock_reads_the_system_time_outside_the_mains() {
    let mut readers = Vec::new();
    for src in crate_sources() {
        let sources = production_sources(&src).unwrap_or_else(|e| panic!("reading {}: {e}", src.display()));
        for (file, code) in sources {
            let allowed = file.ends_with("kit/src/clock.rs") || file.ends_with("main.rs");
            if code.contains("SystemTime::now") && !allowed {
                readers.push(file.display().to_string());
            }
        }
    }
    assert!(
        readers.is_empty(),
        "read the time through aws_kit::clock::Clock, not SystemTime::now: {readers:?}"
    );
}
