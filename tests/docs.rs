//! The documentation is tested like code: every ```console example of the
//! docs (docs/src) and the README runs against the built binary and must
//! print what the page shows (trycmd), and every relative link and anchor
//! must resolve. A binary of its own: trycmd runs commands in the process's
//! working directory, which this test points at a scratch folder that sees
//! the repository's `sample_data/` and `schemas/`, so examples that write
//! files (`init -o`, `filter --out`) never touch the checkout.
//!
//! mdBook has no link checker of its own; `mdbook-linkcheck` is built for
//! mdBook 0.4 and would be a second tool to install, so links are checked
//! here, offline, with mdBook's own heading-id rule.

use std::collections::{BTreeSet, HashSet};
use std::path::{Component, Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every page the docs test reads: the book's pages, then the README.
fn pages() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root().join("docs/src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    out.sort();
    out.push(root().join("README.md"));
    out
}

/// The page's lines outside fenced code blocks, with their line numbers.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(f) = fence {
            if trimmed.starts_with(f) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") {
            fence = Some("```");
            continue;
        }
        out.push((i + 1, line));
    }
    out
}

/// mdBook's heading id (mdbook-html's `id_from_content`), on the heading's
/// text with its Markdown taken out; repeated ids get `-1`, `-2`.
fn anchors(text: &str) -> HashSet<String> {
    let mut used = HashSet::new();
    for (_, line) in prose(text) {
        let Some(rest) = line.strip_prefix('#') else { continue };
        let heading = rest.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let plain = strip_links(heading).replace(['`', '*'], "");
        let id: String = plain
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| {
                if c.is_alphanumeric() || c == '_' || c == '-' {
                    Some(c)
                } else if c.is_whitespace() {
                    Some('-')
                } else {
                    None
                }
            })
            .collect();
        let mut candidate = id.clone();
        let mut n = 0;
        while !used.insert(candidate.clone()) {
            n += 1;
            candidate = format!("{id}-{n}");
        }
    }
    used
}

/// `[text](target)` becomes `text`.
fn strip_links(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after
            .find("](")
            .and_then(|close| after[close..].find(')').map(|end| (close, close + end)))
        {
            Some((close, end)) => {
                out.push_str(&after[..close]);
                rest = &after[end + 1..];
            }
            None => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of inline links on one line of prose, code spans left out.
fn link_targets(line: &str) -> Vec<String> {
    let mut text = String::new();
    for (i, part) in line.split('`').enumerate() {
        if i % 2 == 0 {
            text.push_str(part);
        }
    }
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        out.push(after[..end].trim().to_string());
        rest = &after[end + 1..];
    }
    out
}

fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn docs_links_resolve() {
    let book = root().join("docs/src");
    let summary = std::fs::read_to_string(book.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<PathBuf> = prose(&summary)
        .iter()
        .flat_map(|(_, l)| link_targets(l))
        .map(|t| normalize(&book.join(t)))
        .collect();
    let mut broken = Vec::new();
    for page in pages() {
        let rel = page.strip_prefix(root()).unwrap().display().to_string();
        let in_book = page.starts_with(&book);
        if in_book && page.file_name().unwrap() != "SUMMARY.md" && !listed.contains(&page) {
            broken.push(format!(
                "{rel}: not listed in docs/src/SUMMARY.md, so mdBook never renders it"
            ));
        }
        let text = std::fs::read_to_string(&page).unwrap();
        for (n, line) in prose(&text) {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (file, anchor) = match target.split_once('#') {
                    Some((f, a)) => (f, Some(a)),
                    None => (target.as_str(), None),
                };
                let dest = if file.is_empty() {
                    page.clone()
                } else {
                    normalize(&page.parent().unwrap().join(file))
                };
                if !dest.exists() {
                    broken.push(format!("{rel}:{n}: `{target}`: no such file"));
                    continue;
                }
                if in_book && !dest.starts_with(&book) {
                    broken.push(format!(
                        "{rel}:{n}: `{target}`: outside docs/src, not part of the built book"
                    ));
                    continue;
                }
                if in_book && dest.is_file() && dest.extension().is_some_and(|e| e == "md") && !listed.contains(&dest) {
                    broken.push(format!("{rel}:{n}: `{target}`: a page SUMMARY.md does not list"));
                }
                if let Some(anchor) = anchor {
                    let ids = anchors(&std::fs::read_to_string(&dest).unwrap_or_default());
                    if !ids.contains(anchor) {
                        broken.push(format!("{rel}:{n}: `{target}`: no heading with id `{anchor}`"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// A `preflight` command in a fenced block that trycmd does not read
/// (```sh, ```text, ...) would drift unnoticed: command examples are
/// ```console blocks (run), or ```console,ignore where they need a server,
/// a network or files the repository does not have.
#[test]
fn docs_command_examples_are_console_blocks() {
    let mut bad = Vec::new();
    for page in pages() {
        let rel = page.strip_prefix(root()).unwrap().display().to_string();
        let text = std::fs::read_to_string(&page).unwrap();
        let mut lang: Option<String> = None;
        for (i, line) in text.lines().enumerate() {
            let t = line.trim_start();
            if let Some(info) = t.strip_prefix("```") {
                lang = match lang {
                    Some(_) => None,
                    None => Some(info.split(',').next().unwrap_or("").trim().to_string()),
                };
                continue;
            }
            if let Some(l) = &lang
                && l != "console"
                && l != "text"
                && (t.starts_with("preflight ") || t.starts_with("$ preflight"))
            {
                bad.push(format!("{rel}:{}: `{t}` in a ```{l} block", i + 1));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "preflight commands outside ```console blocks:\n{}",
        bad.join("\n")
    );
}

#[cfg(unix)]
#[test]
fn docs_examples_run() {
    // The scratch folder the examples run in: the repository's sample data
    // and schemas through links, everything an example writes kept there.
    let scratch = tempfile::tempdir().unwrap();
    for name in ["sample_data", "schemas"] {
        std::os::unix::fs::symlink(root().join(name), scratch.path().join(name)).unwrap();
    }
    std::env::set_current_dir(scratch.path()).unwrap();
    let cases = trycmd::TestCases::new();
    cases
        .register_bin("preflight", Path::new(env!("CARGO_BIN_EXE_preflight")))
        .env("NO_COLOR", "1");
    for page in pages() {
        cases.case(page);
    }
    cases.run();
}
