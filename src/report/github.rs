//! GitHub Actions workflow commands: one `::error` annotation per example,
//! naming the file and the row, a summary annotation per failing check, and
//! one per error, so a failing gate shows its reasons on the run's page.

use std::fmt::Write;

use super::{Outcome, Report, plural};

/// Renders the report as workflow commands, one per line.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    for c in report.checks.iter().filter(|c| c.violations > 0) {
        let title = format!("preflight: column {} ({})", c.column, c.rule.name());
        for e in &c.examples {
            let (file, row, value) = (&e.file, e.row, &e.value);
            let _ = writeln!(
                out,
                "::error file={},title={}::row {row}{}: {} violates {}",
                property(file),
                property(&title),
                data(&format!("{}{}", e.at_index(), super::at_pixel(&e.xy))),
                data(&value.to_string()),
                data(&c.bound)
            );
        }
        let mut summary = c.headline();
        let more = c.violations.saturating_sub(c.examples.len() as u64);
        if more > 0 {
            summary.push_str(&format!(" ({} not annotated)", plural(more, "more", "more")));
        }
        if let Some(h) = &c.hint {
            summary.push_str(&format!("\nhint: {h}"));
        }
        let _ = writeln!(out, "::error title={}::{}", property(&title), data(&summary));
    }
    for e in &report.errors {
        let file = e
            .file
            .as_deref()
            .map(|f| format!("file={},", property(f)))
            .unwrap_or_default();
        let _ = writeln!(out, "::error {file}title=preflight: cannot check::{}", data(&e.message));
    }
    for w in &report.warnings {
        let _ = writeln!(out, "::warning title=preflight::{}", data(w));
    }
    let scanned = format!(
        "{}, {}",
        plural(report.files as u64, "file", "files"),
        plural(report.rows, "row", "rows")
    );
    let summary = match report.outcome() {
        Outcome::Clean => format!("::notice title=preflight::ok: every rule holds: {scanned}"),
        Outcome::Violations => format!(
            "::error title=preflight::FAILED: {}: {scanned}",
            plural(report.violations(), "violation", "violations")
        ),
        Outcome::Incomplete => format!(
            "::error title=preflight::INCOMPLETE: {} kept the data from being checked completely: {scanned}",
            plural(report.errors.len() as u64, "error", "errors")
        ),
    };
    out.push_str(&summary);
    out.push('\n');
    out
}

/// Escapes a command's message (as the Actions toolkit does).
fn data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// Escapes a command property's value.
fn property(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_the_toolkit() {
        assert_eq!(data("50%\nnext\r"), "50%25%0Anext%0D");
        assert_eq!(property("a:b,c%"), "a%3Ab%2Cc%25");
    }
}
