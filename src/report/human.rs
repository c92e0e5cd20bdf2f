//! The human report: a compiler-style diagnostic per failing check — the
//! column, the rule and its bound, the count, the first examples as
//! `file:row: value`, and a hint where the data points at a likely cause.

use std::fmt::Write;
use std::time::Duration;

use super::{Report, plural};

/// Renders the report; `elapsed`, when given, goes into the summary line.
pub fn render(report: &Report, elapsed: Option<Duration>) -> String {
    let mut out = String::new();
    for c in report.checks.iter().filter(|c| c.violations > 0) {
        let _ = writeln!(out, "error[{}]: column `{}`: {}", c.rule.name(), c.column, c.headline());
        for (k, from) in &c.sources {
            let _ = writeln!(out, "  = {k} from {from}");
        }
        for e in &c.examples {
            let (file, row, value) = (&e.file, e.row, &e.value);
            let _ = writeln!(
                out,
                "  --> {file}:{row}{}{}: {value}",
                e.at_index(),
                super::at_pixel(&e.xy)
            );
        }
        let more = c.violations.saturating_sub(c.examples.len() as u64);
        if more > 0 {
            let _ = writeln!(out, "  ... and {more} more");
        }
        if let Some(line) = c.pixel_counts.as_deref().and_then(super::pixel_counts_line) {
            let _ = writeln!(out, "  = pixels per bad value: {line}");
        }
        if let Some(h) = &c.hint {
            let _ = writeln!(out, "  hint: {h}");
        }
        out.push('\n');
    }
    for e in &report.errors {
        match &e.file {
            Some(f) => {
                let _ = writeln!(out, "error: {f}: {}", e.message);
            }
            None => {
                let _ = writeln!(out, "error: {}", e.message);
            }
        }
    }
    for w in &report.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    for t in &report.tables {
        let _ = writeln!(
            out,
            "table: {} ({} version {}, {})",
            t.path,
            t.format,
            t.version,
            plural(t.files, "live data file", "live data files")
        );
    }
    for s in &report.splits {
        let counts: Vec<String> = s
            .class_counts
            .iter()
            .map(|(column, counts)| {
                let mut shown: Vec<String> = counts.iter().take(12).map(|(k, n)| format!("{k}: {n}")).collect();
                if counts.len() > 12 {
                    shown.push(format!("... ({} classes)", counts.len()));
                }
                format!("; `{column}` {}", shown.join(", "))
            })
            .collect();
        let _ = writeln!(
            out,
            "split {}: {}{}",
            s.name,
            plural(s.rows, "row", "rows"),
            counts.concat()
        );
    }
    let time = elapsed
        .map(|t| format!(" ({:.2} s)", t.as_secs_f64()))
        .unwrap_or_default();
    let scanned = format!(
        "{}, {}{time}",
        plural(report.files as u64, "file", "files"),
        plural(report.rows, "row", "rows"),
    );
    let failing = report.checks.iter().filter(|c| c.violations > 0).count();
    let summary = match report.outcome() {
        super::Outcome::Clean => format!("ok: every rule holds: {scanned}"),
        super::Outcome::Violations => format!(
            "FAILED: {} in {}: {scanned}",
            plural(report.violations(), "violation", "violations"),
            plural(failing as u64, "check", "checks")
        ),
        super::Outcome::Incomplete => {
            let v = if report.violations() > 0 {
                format!(
                    "{} in {}, and ",
                    plural(report.violations(), "violation", "violations"),
                    plural(failing as u64, "check", "checks")
                )
            } else {
                String::new()
            };
            format!(
                "INCOMPLETE: {v}{} kept the data from being checked completely: {scanned}",
                plural(report.errors.len() as u64, "error", "errors")
            )
        }
    };
    out.push_str(&summary);
    out.push('\n');
    out
}
