//! A crate's source files as text: which files there are, by module path,
//! and the code in them with comments, string literals and test blocks
//! blanked; the paths it writes (`use` trees, inline `a::b::c`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::ModPath;

/// The code of a source file: comments and string and char literals
/// blanked (newlines kept), `#[cfg(test)] mod … { … }` blocks removed.
pub fn production_code(text: &str) -> String {
    without_test_blocks(&blank_comments_and_strings(text))
}

/// Every `.rs` file under `dir`, by module path.
pub(super) fn collect(root: &Path, dir: &Path, files: &mut BTreeMap<ModPath, PathBuf>) -> std::io::Result<()> {
    let mut entries = std::fs::read_dir(dir)?.collect::<Result<Vec<_>, _>>()?;
    entries.sort_by_key(|e| e.path());
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, files)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.insert(module_of(root, &path), path);
        }
    }
    Ok(())
}

/// `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`; `src/lib.rs` and `src/main.rs` the root.
fn module_of(root: &Path, file: &Path) -> ModPath {
    let relative = file.strip_prefix(root).unwrap_or(file).with_extension("");
    let mut parts: ModPath = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") || (parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main")) {
        parts.pop();
    }
    parts
}

pub(super) fn is_test_file(root: &Path, file: &Path) -> bool {
    let relative = file.strip_prefix(root).unwrap_or(file);
    relative.file_name().is_some_and(|n| n == "tests.rs") || relative.components().any(|c| c.as_os_str() == "tests")
}

/// `text` with comments and the contents of string and char literals blanked
/// (newlines kept, so offsets still give lines).
fn blank_comments_and_strings(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let keep_newlines = |s: &str| {
        s.chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect::<String>()
    };
    while i < bytes.len() {
        let rest = &text[i..];
        let skip = if rest.starts_with("//") {
            rest.find('\n').unwrap_or(rest.len())
        } else if rest.starts_with("/*") {
            rest.find("*/").map_or(rest.len(), |e| e + 2)
        } else if let Some(len) = raw_string_len(rest) {
            len
        } else if rest.starts_with('"') {
            let mut j = 1;
            while j < rest.len() {
                match rest.as_bytes()[j] {
                    b'\\' => j += 2,
                    b'"' => break,
                    _ => j += 1,
                }
            }
            (j + 1).min(rest.len())
        } else {
            char_literal_len(rest).unwrap_or_default()
        };
        if skip > 0 {
            out.push_str(&keep_newlines(&rest[..skip]));
            i += skip;
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The length of a raw string literal (`r"…"`, `r#"…"#`) that `text` starts with.
fn raw_string_len(text: &str) -> Option<usize> {
    let after_r = text.strip_prefix('r').or_else(|| text.strip_prefix("br"))?;
    let hashes = after_r.len() - after_r.trim_start_matches('#').len();
    let body = after_r[hashes..].strip_prefix('"')?;
    let close = format!("\"{}", "#".repeat(hashes));
    let end = body.find(&close)?;
    Some(text.len() - body.len() + end + close.len())
}

/// The length of a char literal (`'a'`, `'\n'`, `'\''`) that `text` starts
/// with; `None` for a lifetime (`'a`).
fn char_literal_len(text: &str) -> Option<usize> {
    let body = text.strip_prefix('\'')?;
    let mut chars = body.char_indices();
    let (_, first) = chars.next()?;
    let after = if first == '\\' {
        2 + body.get(2..)?.find('\'')?
    } else {
        first.len_utf8()
    };
    (body[after..].starts_with('\'')).then_some(1 + after + 1)
}

/// `code` without `#[cfg(test)] mod name { … }` blocks.
fn without_test_blocks(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let head = after.trim_start();
        let head = head.strip_prefix("pub ").unwrap_or(head).trim_start();
        let is_inline_mod = head.starts_with("mod ")
            && head
                .find(['{', ';'])
                .is_some_and(|i| head.as_bytes().get(i) == Some(&b'{'));
        if !is_inline_mod {
            out.push_str("#[cfg(test)]");
            rest = after;
            continue;
        }
        let open = after.find('{').unwrap_or(after.len());
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push_str(&after[..end].chars().filter(|&c| c == '\n').collect::<String>());
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The names of the modules `code` declares with `mod name;`.
pub(super) fn declared_mods(code: &str) -> BTreeSet<String> {
    let mut mods = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = find_word(rest, "mod") {
        let after = rest[at + 3..].trim_start();
        let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if !name.is_empty() && after[name.len()..].trim_start().starts_with(';') {
            mods.insert(name);
        }
        rest = &rest[at + 3..];
    }
    mods
}

/// Where `word` stands in `text` as a whole word.
pub(super) fn find_word(text: &str, word: &str) -> Option<usize> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(at) = text[from..].find(word).map(|a| from + a) {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        if !before.is_some_and(is_ident) && !after.is_some_and(is_ident) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// Every path of a `use` tree (`a::{b, c::{d as e, self}}` → `a::b`, `a::c::d`, `a::c`).
pub(super) fn expand(tree: &str) -> Vec<Vec<String>> {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = Vec::new();
    expand_into(&[], &tree, &mut out);
    out
}

fn expand_into(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
    for part in split_top_level(tree) {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        if let Some(open) = part.find('{') {
            let close = part.rfind('}').unwrap_or(part.len());
            let head = segments(&part[..open]);
            let inner = &part[open + 1..close.max(open + 1)];
            let mut next = prefix.to_vec();
            next.extend(head);
            expand_into(&next, inner, out);
        } else {
            let without_alias = part.split(" as ").next().unwrap_or(part);
            let mut path = prefix.to_vec();
            path.extend(segments(without_alias).into_iter().filter(|s| s != "self"));
            if !path.is_empty() {
                out.push(path);
            }
        }
    }
}

fn split_top_level(tree: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in tree.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&tree[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&tree[start..]);
    parts
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .map(|s| s.trim().trim_start_matches("pub").trim().to_owned())
        .filter(|s| !s.is_empty() && s != "*")
        .collect()
}

/// Paths written in code (`a::b::c`), with where each starts; a path that
/// continues one before it (`x::crate`) is not one.
pub(super) fn inline_paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        if !is_ident(bytes[i]) || (i > 0 && (is_ident(bytes[i - 1]) || bytes[i - 1] == b':')) {
            i += 1;
            continue;
        }
        let start = i;
        let mut path = Vec::new();
        loop {
            let word_start = i;
            while i < bytes.len() && is_ident(bytes[i]) {
                i += 1;
            }
            path.push(code[word_start..i].to_owned());
            if code[i..].starts_with("::") && bytes.get(i + 2).is_some_and(|&b| is_ident(b)) {
                i += 2;
            } else {
                break;
            }
        }
        if path.len() > 1 {
            found.push((start, path));
        }
    }
    found
}
