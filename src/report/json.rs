//! The JSON report: the layout the README documents ("JSON report"), keys in its order, and
//! nothing that varies between runs over the same input.

use serde::Serialize;

use super::{ErrorEntry, Report};
use crate::schema::Rule;

#[derive(Serialize)]
struct Doc<'a> {
    ok: bool,
    files: usize,
    rows: u64,
    violations: u64,
    checks: Vec<Check<'a>>,
    errors: &'a [ErrorEntry],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    partial: Option<serde_json::Value>,
}

#[derive(Serialize)]
struct Check<'a> {
    column: &'a str,
    rule: Rule,
    violations: u64,
    examples: Vec<Example<'a>>,
    bound: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sources: Vec<Source<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pixel_counts: Option<Vec<PixelCount>>,
}

#[derive(Serialize)]
struct PixelCount {
    value: serde_json::Value,
    pixels: u64,
}

#[derive(Serialize)]
struct Example<'a> {
    file: &'a str,
    row: u64,
    /// A mapped dataset's index of the row (`ds[index]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    x: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    y: Option<u64>,
    value: serde_json::Value,
}

#[derive(Serialize)]
struct Source<'a> {
    key: &'a str,
    from: &'a str,
}

/// Renders the report as one JSON document (with a final newline).
pub fn render(report: &Report) -> String {
    render_with(report, None)
}

/// [`render`], with a `partial` key holding the mergeable partial result
/// (`--partial`; see [`crate::Partial::to_json`]).
pub fn render_with(report: &Report, partial: Option<serde_json::Value>) -> String {
    let doc = Doc {
        ok: report.ok(),
        files: report.files,
        rows: report.rows,
        violations: report.violations(),
        checks: report
            .checks
            .iter()
            .map(|c| Check {
                column: &c.column,
                rule: c.rule,
                violations: c.violations,
                examples: c
                    .examples
                    .iter()
                    .map(|e| Example {
                        file: &e.file,
                        row: e.row,
                        index: e.index,
                        x: e.xy.map(|p| p.0),
                        y: e.xy.map(|p| p.1),
                        value: e.value.to_json(),
                    })
                    .collect(),
                bound: &c.bound,
                sources: c.sources.iter().map(|(k, f)| Source { key: k, from: f }).collect(),
                hint: c.hint.as_deref(),
                pixel_counts: c.pixel_counts.as_ref().map(|counts| {
                    counts
                        .iter()
                        .map(|(v, n)| PixelCount {
                            value: v.to_json(),
                            pixels: *n,
                        })
                        .collect()
                }),
            })
            .collect(),
        errors: &report.errors,
        warnings: &report.warnings,
        partial,
    };
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_else(|e| format!("{{\"ok\": false, \"error\": \"{e}\"}}"));
    s.push('\n');
    s
}
