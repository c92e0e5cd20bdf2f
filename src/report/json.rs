//! The JSON report: the layout the docs document (docs/src/json-report.md),
//! keys in its order, and nothing that varies between runs over the same
//! input. Its JSON Schema ([`json_schema`]) is derived from the same types.

use schemars::JsonSchema;
use serde::Serialize;

use super::{ErrorEntry, Report};
use crate::schema::Rule;
use crate::source::layouts::tables::TableSnapshot;

/// A preflight report (`--format json`).
#[derive(Serialize, JsonSchema)]
#[schemars(title = "preflight report")]
struct Doc<'a> {
    /// Every rule held for every row of every file, and everything was checked.
    ok: bool,
    /// Files checked.
    files: usize,
    /// Rows checked.
    rows: u64,
    /// The sum of the checks' counts.
    violations: u64,
    /// One entry per rule of each schema column, in schema order.
    checks: Vec<Check<'a>>,
    /// What kept data from being checked completely.
    errors: &'a [ErrorEntry],
    /// What is suspicious without being a violation.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
    /// The lakehouse table read, when the run read exactly one.
    #[serde(skip_serializing_if = "Option::is_none")]
    table: Option<Table<'a>>,
    /// Every lakehouse table read, each as one snapshot, in path order.
    #[serde(skip_serializing_if = "<[TableSnapshot]>::is_empty")]
    tables: &'a [TableSnapshot],
    /// A schema with `dataset.splits`: each split, in the schema's order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    splits: Vec<Split<'a>>,
    /// A schema with `dataset.splits`: per class column, per split, the
    /// samples of each class (every class, in class order; a class is its
    /// index, or its name for `classes`).
    #[serde(skip_serializing_if = "ClassCounts::is_empty")]
    class_counts: ClassCounts<'a>,
    /// With --partial: what `preflight merge` needs.
    #[serde(skip_serializing_if = "Option::is_none")]
    partial: Option<serde_json::Value>,
}

#[derive(Serialize, JsonSchema)]
struct Check<'a> {
    /// The schema column.
    column: &'a str,
    /// The rule.
    rule: Rule,
    /// Values (value rules) or rows (length rules) that break it.
    violations: u64,
    /// The first violations in (file, row) order.
    examples: Vec<Example<'a>>,
    /// The rule in words.
    bound: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sources: Vec<Source<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pixel_counts: Option<Vec<PixelCount>>,
}

/// A table's snapshot, as the `table` key shows the one table of a run.
#[derive(Serialize, JsonSchema)]
struct Table<'a> {
    /// `delta`.
    format: &'a str,
    /// The snapshot's version.
    version: u64,
    /// Iceberg's snapshot id; null for Delta.
    snapshot_id: Option<u64>,
    /// Live data files.
    files: u64,
}

/// One split of `dataset.splits`.
#[derive(Serialize, JsonSchema)]
struct Split<'a> {
    /// Its name.
    name: &'a str,
    /// Its files as the schema lists them.
    files: &'a [String],
    /// Rows checked.
    rows: u64,
}

/// `class_counts`: column -> split -> class -> samples, in schema, split
/// and class order.
struct ClassCounts<'a>(&'a [super::splits::SplitReport]);

impl ClassCounts<'_> {
    fn is_empty(&self) -> bool {
        self.0.iter().all(|s| s.class_counts.is_empty())
    }
}

impl Serialize for ClassCounts<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        struct Pairs<'b>(&'b [(String, u64)]);
        impl Serialize for Pairs<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_map(self.0.iter().map(|(k, n)| (k, n)))
            }
        }
        struct PerSplit<'b>(&'b [super::splits::SplitReport], usize);
        impl Serialize for PerSplit<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_map(
                    self.0
                        .iter()
                        .filter_map(|r| Some((&r.name, Pairs(&r.class_counts.get(self.1)?.1)))),
                )
            }
        }
        let columns = self.0.first().map_or(0, |r| r.class_counts.len());
        let mut map = s.serialize_map(Some(columns))?;
        for c in 0..columns {
            map.serialize_entry(&self.0[0].class_counts[c].0, &PerSplit(self.0, c))?;
        }
        map.end()
    }
}

impl JsonSchema for ClassCounts<'_> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ClassCounts".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "additionalProperties": { "type": "integer", "minimum": 0 }
                }
            }
        })
    }
}

#[derive(Serialize, JsonSchema)]
struct PixelCount {
    value: serde_json::Value,
    pixels: u64,
}

#[derive(Serialize, JsonSchema)]
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

#[derive(Serialize, JsonSchema)]
struct Source<'a> {
    key: &'a str,
    from: &'a str,
}

/// `schemas/json/report.schema.json` as committed, built into the binary for
/// `preflight schema --json-schema report` (a test keeps it equal to
/// [`json_schema`]).
pub const JSON_SCHEMA: &str = include_str!("../../schemas/json/report.schema.json");

/// The JSON Schema (draft 7) of the report (committed as
/// `schemas/json/report.schema.json`).
pub fn json_schema() -> serde_json::Value {
    let schema = schemars::generate::SchemaSettings::draft07()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<Doc<'static>>();
    schema.to_value()
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
        table: match &report.tables[..] {
            [t] => Some(Table {
                format: &t.format,
                version: t.version,
                snapshot_id: t.snapshot_id,
                files: t.files,
            }),
            _ => None,
        },
        tables: &report.tables,
        splits: report
            .splits
            .iter()
            .map(|s| Split {
                name: &s.name,
                files: &s.files,
                rows: s.rows,
            })
            .collect(),
        class_counts: ClassCounts(&report.splits),
        partial,
    };
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_else(|e| format!("{{\"ok\": false, \"error\": \"{e}\"}}"));
    s.push('\n');
    s
}
