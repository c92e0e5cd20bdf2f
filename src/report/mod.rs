//! Results: partial results that merge, and the final report.
//!
//! The kernels' [`Tally`] (counts and first examples of one unit of work)
//! merges into a [`Partial`] (with the errors and files of a run), which
//! becomes the [`Report`] the formats below print.

pub mod github;
pub mod hint;
pub mod human;
pub mod json;
pub mod junit;
mod partial;
pub mod splits;

use serde::Serialize;

pub use partial::Partial;

pub use crate::check::tally::{
    CheckTally, Evidence, Example, Logged, Origin, PIXEL_COUNTS, PixelEvidence, Spot, Tally, Value, value_order,
};
use crate::schema::{Rule, Schema, ValueRule};
use crate::source::layouts::tables::TableSnapshot;

/// A failure that kept some data from being checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ErrorEntry {
    /// The file it concerns, as the user named it, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// What went wrong.
    pub message: String,
    /// Where in its file: 0 when opening it, 1 + the unit's index for an
    /// error in a unit. Errors are reported in (file, unit) order.
    #[serde(skip)]
    pub unit: u64,
}

impl ErrorEntry {
    /// The entry with a URL's credentials redacted in its file and message.
    pub fn redacted(self) -> ErrorEntry {
        ErrorEntry {
            file: self.file.map(|f| crate::redact::url(&f).into_owned()),
            message: crate::redact::text(&self.message).into_owned(),
            unit: self.unit,
        }
    }
}

impl From<&crate::error::Error> for ErrorEntry {
    fn from(e: &crate::error::Error) -> ErrorEntry {
        ErrorEntry {
            file: e.file(),
            message: e.message(),
            unit: 0,
        }
    }
}

/// An example as reports show it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportExample {
    /// The file, as the user named it (for a mapped dataset, the data file
    /// that stores the row).
    pub file: String,
    /// 0-based row within `file`.
    pub row: u64,
    /// The offending value.
    pub value: Value,
    /// A pixel's (x, y).
    pub xy: Option<(u64, u64)>,
    /// For a mapped dataset, the row's dataset index (`ds[index]`).
    pub index: Option<u64>,
}

impl ReportExample {
    /// ` (index 7)` for a row of a mapped dataset, nothing otherwise.
    pub(crate) fn at_index(&self) -> String {
        self.index.map(|i| format!(" (index {i})")).unwrap_or_default()
    }
}

/// One check's result in the report.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckReport {
    /// The schema column.
    pub column: String,
    /// The rule.
    pub rule: Rule,
    /// Offending values (value rules) or rows (length rules).
    pub violations: u64,
    /// First examples.
    pub examples: Vec<ReportExample>,
    /// A pixel column's value check: the pixels of each bad value (the
    /// smallest [`PIXEL_COUNTS`] values).
    pub pixel_counts: Option<Vec<(Value, u64)>>,
    /// The rule's bound in words, e.g. `0 <= v < 10, or v == -100`.
    pub bound: String,
    /// Whether the violations count documents (the length rules of an
    /// `eod_id` column, and empty documents) rather than rows or values.
    pub documents: bool,
    /// Where referenced bounds came from.
    pub sources: Vec<(String, String)>,
    /// A likely cause, when the data shows one.
    pub hint: Option<String>,
}

impl CheckReport {
    /// The check's result in one line, e.g. `3 values violate 0 <= v < 10`.
    pub fn headline(&self) -> String {
        let unit = match self.rule {
            _ if self.documents => plural(self.violations, "document", "documents"),
            Rule::MaxLength | Rule::MinLength | Rule::SameLengthAs => plural(self.violations, "row", "rows"),
            Rule::PairWith => plural(self.violations, "file", "files"),
            Rule::Box => plural(self.violations, "box", "boxes"),
            _ => plural(self.violations, "value", "values"),
        };
        let verb = if self.violations == 1 { "violates" } else { "violate" };
        format!("{unit} {verb} {}", self.bound)
    }
}

/// ` (x=3, y=7)` for a pixel, nothing otherwise: how the text reports place
/// a pixel after its row.
pub(crate) fn at_pixel(xy: &Option<(u64, u64)>) -> String {
    xy.map(|(x, y)| format!(" (x={x}, y={y})")).unwrap_or_default()
}

/// A pixel column's counts in one line: `255: 1200 pixels, 38: 12 pixels`.
pub(crate) fn pixel_counts_line(counts: &[(Value, u64)]) -> Option<String> {
    if counts.is_empty() {
        return None;
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|(v, n)| format!("{v}: {}", plural(*n, "pixel", "pixels")))
        .collect();
    Some(parts.join(", "))
}

/// `n` with the noun's singular or plural form.
pub(crate) fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The outcome of a run, derived from the report alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every rule holds for every row of every file: exit 0.
    Clean,
    /// Violations, and every file was checked completely: exit 1.
    Violations,
    /// Something prevented a complete check: exit 2 (wins over violations).
    Incomplete,
}

impl Outcome {
    /// The process exit status.
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Clean => 0,
            Outcome::Violations => 1,
            Outcome::Incomplete => 2,
        }
    }
}

/// The whole report of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Data files named or found, readable or not.
    pub files: usize,
    /// Rows read.
    pub rows: u64,
    /// Every check, in schema order then rule order.
    pub checks: Vec<CheckReport>,
    /// Everything that prevented a complete check.
    pub errors: Vec<ErrorEntry>,
    /// Warnings that do not affect the outcome (artifact mismatches, ...).
    pub warnings: Vec<String>,
    /// The lakehouse tables read, each as one snapshot, in path order.
    pub tables: Box<[TableSnapshot]>,
    /// A run with splits: each split, in the schema's order, with its
    /// class counts.
    pub splits: Box<[splits::SplitReport]>,
}

impl Report {
    /// Total violations over all checks.
    pub fn violations(&self) -> u64 {
        self.checks.iter().map(|c| c.violations).sum()
    }

    /// Clean, violations, or incomplete; any error wins.
    pub fn outcome(&self) -> Outcome {
        if !self.errors.is_empty() {
            Outcome::Incomplete
        } else if self.violations() > 0 {
            Outcome::Violations
        } else {
            Outcome::Clean
        }
    }

    /// `ok` of the JSON report: true exactly when the exit status is 0.
    pub fn ok(&self) -> bool {
        self.outcome() == Outcome::Clean
    }

    /// The report under `--strict`: every warning (about the schema, the
    /// model or the data) becomes an error, after the others, so the run
    /// exits 2.
    pub fn strict(mut self) -> Report {
        let warnings = std::mem::take(&mut self.warnings);
        self.errors.extend(warnings.into_iter().map(|w| ErrorEntry {
            file: None,
            message: format!("--strict: {w}"),
            unit: 0,
        }));
        self
    }

    /// A report holding only errors (e.g. the schema itself is invalid).
    pub fn failed(errors: Vec<ErrorEntry>) -> Report {
        Report {
            files: 0,
            rows: 0,
            checks: Vec::new(),
            errors: errors.into_iter().map(ErrorEntry::redacted).collect(),
            warnings: Vec::new(),
            tables: Box::default(),
            splits: Box::default(),
        }
    }

    /// Builds the report from the merged tally of every unit.
    pub fn build(
        schema: &Schema,
        plan: &[(usize, Rule)],
        files: &[String],
        tally: Tally,
        errors: Vec<ErrorEntry>,
        mut warnings: Vec<String>,
    ) -> Report {
        for (&(col, rule), t) in plan.iter().zip(&tally.checks) {
            if let Some(w) = hint::pixel_warning(&schema.columns[col], rule, &t.evidence) {
                warnings.push(w);
            }
        }
        let checks = plan
            .iter()
            .zip(tally.checks)
            .map(|(&(col, rule), t)| {
                let spec = &schema.columns[col];
                let hint = hint::hint(spec, rule, &t);
                let pixel = spec.is_pixels();
                let pixel_counts = (pixel && rule == spec.values.rule()).then(|| t.evidence.pixels.counts.clone());
                CheckReport {
                    column: spec.name.clone(),
                    rule,
                    violations: t.violations,
                    examples: t
                        .examples
                        .into_iter()
                        .map(|e| {
                            let xy = if pixel { e.xy } else { None };
                            match e.origin {
                                Some(o) => ReportExample {
                                    file: crate::redact::url(o.file.as_ref()).into_owned(),
                                    row: o.row,
                                    value: e.value,
                                    xy,
                                    index: Some(e.row),
                                },
                                None => ReportExample {
                                    file: crate::redact::url(files.get(e.file).map_or("", String::as_str)).into_owned(),
                                    row: e.row,
                                    value: e.value,
                                    xy,
                                    index: None,
                                },
                            }
                        })
                        .collect(),
                    pixel_counts,
                    bound: describe_bound(schema, col, rule),
                    documents: rule == Rule::EmptyDocument
                        || (matches!(rule, Rule::MaxLength | Rule::MinLength) && spec.eod_id.is_some()),
                    sources: spec.bound_sources.clone(),
                    hint,
                }
            })
            .collect();
        // Names and messages as every rendering shows them: a URL's
        // credentials redacted (a file's name already is; this also covers
        // messages that quote a URL, and partials from elsewhere).
        Report {
            files: files.len(),
            rows: tally.rows,
            checks,
            errors: errors.into_iter().map(ErrorEntry::redacted).collect(),
            warnings: warnings
                .into_iter()
                .map(|w| crate::redact::text(&w).into_owned())
                .collect(),
            tables: Box::default(),
            splits: Box::default(),
        }
    }
}

/// The rule's condition in words, as the reports show it.
pub fn describe_bound(schema: &Schema, col: usize, rule: Rule) -> String {
    let spec = &schema.columns[col];
    match rule {
        Rule::Class | Rule::Index | Rule::Values | Rule::Range => match &spec.values {
            ValueRule::Class {
                num_classes,
                ignore_index,
            } => match ignore_index {
                Some(ig) => format!("0 <= v < {num_classes} (num_classes), or v == {ig} (ignore_index)"),
                None => format!("0 <= v < {num_classes} (num_classes)"),
            },
            ValueRule::ClassNames { classes } => format!("one of {} class names", classes.len()),
            ValueRule::Index {
                size,
                wrap_negative: false,
            } => format!("0 <= v < {size} (size)"),
            ValueRule::Index {
                size,
                wrap_negative: true,
            } => format!("-{size} <= v < {size} (size, wrap_negative)"),
            ValueRule::Values { numbers, strings } => {
                let mut all: Vec<String> = numbers.iter().map(|n| n.to_string()).collect();
                all.extend(strings.iter().map(|s| format!("{s:?}")));
                format!("one of [{}]", all.join(", "))
            }
            ValueRule::Range { min, max } => match (min, max) {
                (Some(lo), Some(hi)) => format!("finite, {lo} <= v <= {hi}"),
                (Some(lo), None) => format!("finite, v >= {lo}"),
                (None, Some(hi)) => format!("finite, v <= {hi}"),
                (None, None) => "finite".to_string(),
            },
            ValueRule::Box { format, .. } => box_bound(*format),
        },
        Rule::Box => match &spec.values {
            ValueRule::Box { format, .. } => box_bound(*format),
            _ => String::new(),
        },
        Rule::Null => "no nulls (set nullable: true to allow them)".to_string(),
        Rule::NotInteger => "whole numbers only".to_string(),
        Rule::TokenizerSize => {
            let size = match &spec.values {
                ValueRule::Index { size, .. } => *size,
                _ => 0,
            };
            format!(
                "v < {} (tokenizer_size): ids {}..{size} have embedding rows the tokenizer never emits",
                spec.tokenizer_size.unwrap_or(0),
                spec.tokenizer_size.unwrap_or(0)
            )
        }
        Rule::MaxLength | Rule::MinLength => {
            let (what, n) = match rule {
                Rule::MaxLength => ("at most", spec.max_length),
                _ => ("at least", spec.min_length),
            };
            let n = n.unwrap_or(0);
            match (spec.eod_id, spec.pad_id) {
                (Some(eod), _) => format!("{what} {n} tokens per document (between end-of-document ids {eod})"),
                (None, Some(p)) => format!("{what} {n} elements per row, not counting pad {p}"),
                (None, None) => format!("{what} {n} elements per row"),
            }
        }
        Rule::EmptyDocument => format!(
            "no empty documents (two end-of-document ids {} in a row)",
            spec.eod_id.unwrap_or(0)
        ),
        Rule::PairWith => {
            let p = spec.pair_with().cloned().unwrap_or_default();
            let mut s = format!(
                "each mask has one image in `{}` of its width and height, each image a mask",
                p.dir
            );
            if !p.mask_suffix.is_empty() || !p.image_suffix.is_empty() {
                s += &format!(
                    " (mask stem suffix `{}`, image stem suffix `{}`)",
                    p.mask_suffix, p.image_suffix
                );
            }
            s
        }
        Rule::SameLengthAs => {
            let other = spec
                .same_length_as
                .map(|i| schema.columns[i].name.as_str())
                .unwrap_or("");
            format!("as many elements as `{other}`, row by row")
        }
    }
}

/// What a box must be, in words.
fn box_bound(format: crate::schema::BoxFormat) -> String {
    let (w, h) = match format {
        crate::schema::BoxFormat::Xyxy => ("x1 < x2", "y1 < y2"),
        _ => ("width > 0", "height > 0"),
    };
    format!(
        "four finite numbers ({}) with {w} and {h} in float32, as torchvision's detection models require",
        format.name()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_headline_counts_what_the_check_counts_whatever_its_bound_says() {
        let report = |rule, documents| CheckReport {
            column: "tokens".into(),
            rule,
            violations: 2,
            examples: Vec::new(),
            pixel_counts: None,
            bound: "at most 9 tokens".into(),
            documents,
            sources: Vec::new(),
            hint: None,
        };
        assert_eq!(
            report(Rule::MaxLength, true).headline(),
            "2 documents violate at most 9 tokens"
        );
        assert_eq!(
            report(Rule::MaxLength, false).headline(),
            "2 rows violate at most 9 tokens"
        );
        assert_eq!(
            report(Rule::Null, false).headline(),
            "2 values violate at most 9 tokens"
        );
    }
}
