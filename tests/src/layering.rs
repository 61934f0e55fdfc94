//! The import graph between a crate's source files, and its cycles.
//!
//! The rule the workspace keeps: **no import cycles between source files**.
//! A file imports another when it names an item of the other's module: in a
//! `use` (`crate::a::b`, `super::x`, `self::c`, or a child module declared
//! in the file) or inline in code (`crate::a::f()`). One kind of import is
//! not counted: naming a module that encloses the file's own (`super::X`
//! from a child, `crate::X` from anywhere, for an item of the crate root).
//! A child lives inside its ancestors; what it must not do is reach a
//! sibling, or a parent reach its child, by a path that leads back.
//!
//! Test code is left out: files named `tests.rs` or under a `tests/`
//! folder, and `#[cfg(test)] mod … { … }` blocks. A module declaration
//! (`mod x;`) is ownership, not an import.
//!
//! The reading is textual (comments and string literals are blanked first),
//! which is enough for the paths the workspace writes; a path it cannot
//! resolve to a file of the crate (another crate's, `std`'s) is no edge.

mod source;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

pub use source::production_code;
use source::{collect, declared_mods, expand, find_word, inline_paths, is_test_file};

/// A module of a crate, as its path from the crate root (`["record", "walk"]`).
type ModPath = Vec<String>;

/// One import that is an edge of the graph: where it is written, and the
/// path as written.
#[derive(Debug, Clone)]
pub struct Import {
    pub line: usize,
    pub path: String,
}

/// One cycle: the files in order, each importing the next (and the last the
/// first), with the import that makes each step.
#[derive(Debug, Clone)]
pub struct Cycle {
    pub steps: Vec<(PathBuf, PathBuf, Import)>,
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "an import cycle of {} files:", self.steps.len())?;
        for (from, to, import) in &self.steps {
            writeln!(
                f,
                "  {}:{} imports {} (`{}`)",
                from.display(),
                import.line,
                to.display(),
                import.path
            )?;
        }
        Ok(())
    }
}

/// The production source files under `src` (a crate's `src/`): each file's
/// path and its [`production_code`]; test files left out.
pub fn production_sources(src: &Path) -> std::io::Result<Vec<(PathBuf, String)>> {
    let mut files = BTreeMap::new();
    collect(src, src, &mut files)?;
    files
        .into_values()
        .filter(|file| !is_test_file(src, file))
        .map(|file| {
            let code = production_code(&std::fs::read_to_string(&file)?);
            Ok((file, code))
        })
        .collect()
}

/// The cycles among the source files under `src` (a crate's `src/`), one
/// per strongly connected set of files, each shown as one loop through it.
pub fn cycles(src: &Path) -> std::io::Result<Vec<Cycle>> {
    let mut files = BTreeMap::new();
    collect(src, src, &mut files)?;
    let mut edges: BTreeMap<ModPath, BTreeMap<ModPath, Import>> = BTreeMap::new();
    for (module, file) in &files {
        if is_test_file(src, file) {
            continue;
        }
        let text = std::fs::read_to_string(file)?;
        for (target, import) in imports(module, &text, &files) {
            if target != *module && !target.iter().eq(module.iter().take(target.len())) {
                edges.entry(module.clone()).or_default().entry(target).or_insert(import);
            }
        }
    }
    let components = strongly_connected(&files.keys().cloned().collect::<Vec<_>>(), &edges);
    Ok(components
        .into_iter()
        .filter_map(|component| one_loop(&component, &edges))
        .map(|steps| Cycle {
            steps: steps
                .into_iter()
                .map(|(from, to, import)| (files[&from].clone(), files[&to].clone(), import))
                .collect(),
        })
        .collect())
}

/// The files `text` (the file of `module`) imports, with the first import of each.
fn imports(module: &ModPath, text: &str, files: &BTreeMap<ModPath, PathBuf>) -> Vec<(ModPath, Import)> {
    let code = production_code(text);
    let local_mods = declared_mods(&code);
    let mut found = Vec::new();
    let mut add = |offset: usize, path: Vec<String>| {
        if let Some(target) = resolve(module, &path, &local_mods, files) {
            let line = 1 + code[..offset].matches('\n').count();
            found.push((
                target,
                Import {
                    line,
                    path: path.join("::"),
                },
            ));
        }
    };
    // `use` trees.
    let mut rest = 0;
    while let Some(at) = find_word(&code[rest..], "use") {
        let start = rest + at + "use".len();
        let Some(end) = code[start..].find(';').map(|e| start + e) else {
            break;
        };
        for path in expand(&code[start..end]) {
            add(start, path);
        }
        rest = end;
    }
    // Inline paths: `crate::…`, `super::…`, `self::…`, `child::…`.
    for (offset, path) in inline_paths(&code) {
        let first = path[0].as_str();
        if matches!(first, "crate" | "super" | "self") || local_mods.contains(first) {
            add(offset, path);
        }
    }
    found
}

/// The file a path written in `module` names an item of, if one of the crate's.
fn resolve(
    module: &ModPath,
    path: &[String],
    local_mods: &BTreeSet<String>,
    files: &BTreeMap<ModPath, PathBuf>,
) -> Option<ModPath> {
    let first = path.first()?;
    let (mut full, rest): (ModPath, &[String]) = match first.as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (module.clone(), &path[1..]),
        "super" => {
            let supers = path.iter().take_while(|s| *s == "super").count();
            (module[..module.len().saturating_sub(supers)].to_vec(), &path[supers..])
        }
        name if local_mods.contains(name) => (module.clone(), path),
        _ => return None,
    };
    full.extend(rest.iter().cloned());
    (0..=full.len())
        .rev()
        .map(|n| full[..n].to_vec())
        .find(|m| files.contains_key(m))
}

/// Tarjan's strongly connected components with more than one member.
fn strongly_connected(nodes: &[ModPath], edges: &BTreeMap<ModPath, BTreeMap<ModPath, Import>>) -> Vec<Vec<ModPath>> {
    struct State<'a> {
        edges: &'a BTreeMap<ModPath, BTreeMap<ModPath, Import>>,
        index: BTreeMap<ModPath, usize>,
        low: BTreeMap<ModPath, usize>,
        stack: Vec<ModPath>,
        on_stack: BTreeSet<ModPath>,
        components: Vec<Vec<ModPath>>,
    }
    fn visit(state: &mut State<'_>, node: &ModPath) {
        let n = state.index.len();
        state.index.insert(node.clone(), n);
        state.low.insert(node.clone(), n);
        state.stack.push(node.clone());
        state.on_stack.insert(node.clone());
        let targets: Vec<ModPath> = state
            .edges
            .get(node)
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default();
        for target in targets {
            if !state.index.contains_key(&target) {
                visit(state, &target);
                let low = state.low[node].min(state.low[&target]);
                state.low.insert(node.clone(), low);
            } else if state.on_stack.contains(&target) {
                let low = state.low[node].min(state.index[&target]);
                state.low.insert(node.clone(), low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(member) = state.stack.pop() {
                state.on_stack.remove(&member);
                let done = member == *node;
                component.push(member);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                state.components.push(component);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for node in nodes {
        if !state.index.contains_key(node) {
            visit(&mut state, node);
        }
    }
    state.components
}

/// One loop through a strongly connected `component`: from its first member,
/// the shortest way back to it.
fn one_loop(
    component: &[ModPath],
    edges: &BTreeMap<ModPath, BTreeMap<ModPath, Import>>,
) -> Option<Vec<(ModPath, ModPath, Import)>> {
    let members: BTreeSet<&ModPath> = component.iter().collect();
    let start = component.iter().min()?;
    let mut came_from: BTreeMap<ModPath, ModPath> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.clone()]);
    while let Some(node) = queue.pop_front() {
        for target in edges.get(&node).into_iter().flat_map(|t| t.keys()) {
            if !members.contains(target) {
                continue;
            }
            if target == start {
                let mut path = vec![node.clone()];
                while let Some(previous) = came_from.get(path.last()?) {
                    path.push(previous.clone());
                }
                path.reverse();
                path.push(start.clone());
                return Some(
                    path.windows(2)
                        .map(|w| (w[0].clone(), w[1].clone(), edges[&w[0]][&w[1]].clone()))
                        .collect(),
                );
            }
            if !came_from.contains_key(target) && target != start {
                came_from.insert(target.clone(), node.clone());
                queue.push_back(target.clone());
            }
        }
    }
    None
}
