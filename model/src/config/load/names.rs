//! Names and key paths as problems report them (`table.NAME.key`,
//! `index[2] ("issue-attrib").sort[0]`), and the name characters allowed.

use super::*;

pub(super) fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

pub(super) fn join_key(context: &str, key: &str) -> String {
    match (context.is_empty(), key.is_empty()) {
        (true, _) => key.to_string(),
        (_, true) => context.to_string(),
        _ => format!("{context} {key}"),
    }
}

/// `[table.records]`, quoting names TOML would need quoted.
pub(super) fn table_context(name: &str) -> String {
    let bare = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        format!("[table.{name}]")
    } else {
        format!("[table.{name:?}]")
    }
}

/// `[[index]] "issue-attrib"` when the element has a readable name (or
/// detail type, or table), else `[[index]] #2`.
pub(super) fn element_context(section: &str, element: &DeValue<'_>, i: usize) -> String {
    let label_key = match section {
        "index" => "name",
        "route" => "detail_type",
        _ => "table",
    };
    match element.get(label_key).and_then(|v| v.get_ref().as_str()) {
        Some(label) if section == "edge_set" => {
            let attribute = element
                .get("attribute")
                .and_then(|v| v.get_ref().as_str())
                .unwrap_or("?");
            format!("[[{section}]] \"{label}.{attribute}\"")
        }
        Some(label) => format!("[[{section}]] \"{label}\""),
        None => format!("[[{section}]] #{}", i + 1),
    }
}

/// The key path (`source.table`, `sort[2].type`) inside `value` that holds
/// byte `offset`, or `""`.
pub(super) fn key_path_at(value: &Spanned<DeValue<'_>>, offset: usize) -> String {
    let mut path = String::new();
    let mut current = value.get_ref();
    loop {
        let next = match current {
            DeValue::Table(table) => table.iter().find_map(|(k, v)| {
                let in_key = k.span().contains(&offset);
                (in_key || v.span().contains(&offset)).then(|| {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(k.get_ref());
                    (v, in_key)
                })
            }),
            DeValue::Array(array) => array.iter().enumerate().find_map(|(i, v)| {
                v.span().contains(&offset).then(|| {
                    path.push_str(&format!("[{}]", i + 1));
                    (v, false)
                })
            }),
            _ => None,
        };
        match next {
            Some((v, false)) => current = v.get_ref(),
            _ => return path,
        }
    }
}
