//! The command-line reference, `docs/cli.md`, rendered from the clap
//! definitions: each command's `--help`, subcommands after their parent.
//! A test fails when the committed page differs from what this renders;
//! `STREAMDEX_WRITE_DOCS=1 cargo test -p infra cli::reference` writes it anew.

use clap::CommandFactory;

use super::Cli;

/// The width the reference's help text is wrapped at.
const WIDTH: usize = 100;

/// The whole page, in Markdown.
pub fn markdown() -> String {
    let mut command = Cli::command().term_width(WIDTH);
    command.build();
    let mut page = String::from(
        "# Command-line reference\n\n\
         Generated from the `streamdex` command's own help (`streamdex help COMMAND` prints the same);\n\
         do not edit by hand: `STREAMDEX_WRITE_DOCS=1 cargo test -p infra cli::reference` writes it anew.\n\n",
    );
    let mut names = Vec::new();
    contents(&command, &mut Vec::new(), &mut names);
    for (depth, name) in &names {
        page.push_str(&format!("{}- [`{name}`](#{})\n", "  ".repeat(*depth), anchor(name)));
    }
    section(&mut command, &mut Vec::new(), &mut page);
    page
}

/// Every command's full name, with its depth, in page order.
fn contents(command: &clap::Command, path: &mut Vec<String>, names: &mut Vec<(usize, String)>) {
    path.push(command.get_name().to_owned());
    names.push((path.len() - 1, path.join(" ")));
    for sub in command
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        contents(sub, path, names);
    }
    path.pop();
}

/// One command's section, then its subcommands'.
fn section(command: &mut clap::Command, path: &mut Vec<String>, page: &mut String) {
    path.push(command.get_name().to_owned());
    let name = path.join(" ");
    let help = command.render_long_help().to_string();
    page.push_str(&format!("\n## {name}\n\n```text\n{}\n```\n", help.trim_end()));
    for sub in command
        .get_subcommands_mut()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        section(sub, path, page);
    }
    path.pop();
}

/// GitHub's anchor for a heading: lower case, spaces as dashes.
fn anchor(heading: &str) -> String {
    heading.to_lowercase().replace(' ', "-")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn the_committed_reference_is_what_the_command_renders() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cli.md");
        let rendered = markdown();
        if std::env::var_os("STREAMDEX_WRITE_DOCS").is_some_and(|v| v == "1") {
            std::fs::write(&path, &rendered).expect("docs/cli.md written");
            return;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == rendered,
            "docs/cli.md is stale: the command's help changed. Write it anew with\n    \
             STREAMDEX_WRITE_DOCS=1 cargo test -p infra cli::reference\n(first differing line: {:?})",
            committed.lines().zip(rendered.lines()).find(|(a, b)| a != b)
        );
    }

    #[test]
    fn every_command_has_a_section_with_its_usage() {
        let page = markdown();
        for name in [
            "streamdex replay",
            "streamdex config check",
            "streamdex quarantine redrive",
            "streamdex query",
        ] {
            let heading = format!("\n## {name}\n");
            let at = page.find(&heading).unwrap_or_else(|| panic!("no section for {name}"));
            let usage = format!("Usage: {name}");
            assert!(page[at..].contains(&usage), "{name}'s section has no usage line");
        }
    }
}
