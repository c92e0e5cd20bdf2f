//! Partial results: what checking part of a dataset produced, with the names
//! of the files it covers, so partials from anywhere (batches in a pipeline,
//! units on a rayon pool, tasks on Spark or Ray) merge into one report.
//!
//! A partial also travels as JSON (the `partial` key of a report written with
//! `--partial`): it carries the resolved schema, exact typed values and the
//! evidence behind hints, so a merge on another machine gives byte for byte
//! the report one `preflight check` over all the files would have given.

use serde::Deserialize;
use serde_json::{Value as J, json};

use super::splits::SplitTally;
use super::{CheckTally, ErrorEntry, Evidence, Example, PixelEvidence, Report, Tally, Value};
use crate::check::Validator;
use crate::schema::Schema;
use crate::schema::labels::LabelNames;
use crate::source::layouts::tables::TableSnapshot;

/// The result of checking some of a dataset's data.
///
/// [`Partial::merge`] is associative and commutative: examples are kept as
/// the first ones by (file, row), counts add, errors are ordered by (file,
/// unit) and said once per file. Merging the partials of any split of a
/// dataset gives the partial of the whole, and [`Partial::report`] the same
/// report as one `preflight check`.
#[derive(Debug, Clone, PartialEq)]
pub struct Partial {
    /// The files covered, sorted byte-wise, without repeats.
    pub files: Vec<String>,
    /// Counts and examples; [`Example::file`] indexes `files`.
    pub tally: Tally,
    /// What kept data from being checked, in (file, unit) order.
    pub errors: Vec<ErrorEntry>,
    /// Warnings about files (a reader's notes), in (file,
    /// message) order, each said once per file.
    pub notes: Vec<ErrorEntry>,
    /// The lakehouse tables read, each as one snapshot, in path order.
    pub tables: Vec<TableSnapshot>,
    /// The label names the files carry for counted class columns, in
    /// (column, file) order; a split's run moves them into its split.
    pub labels: Vec<LabelNames>,
    /// A run with splits: each split's rows, class counts and label
    /// names, in the schema's split order.
    pub splits: Vec<SplitTally>,
}

impl Partial {
    /// A partial covering nothing yet.
    pub fn empty(checks: usize, max_examples: usize) -> Partial {
        Partial {
            files: Vec::new(),
            tally: Tally::new(checks, max_examples),
            errors: Vec::new(),
            notes: Vec::new(),
            tables: Vec::new(),
            labels: Vec::new(),
            splits: Vec::new(),
        }
    }

    /// The partial of split `name`: its class counts and label names move
    /// into a [`SplitTally`] of that name (merged as such elsewhere).
    pub fn into_split(mut self, name: &str) -> Partial {
        let split = SplitTally {
            name: name.to_string(),
            rows: self.tally.rows,
            classes: std::mem::take(&mut self.tally.classes),
            labels: std::mem::take(&mut self.labels),
        };
        self.add_splits([split]);
        self
    }

    /// Adds label names, keeping them in order and each once.
    pub fn add_labels(&mut self, labels: impl IntoIterator<Item = LabelNames>) {
        super::splits::add_labels(&mut self.labels, labels.into_iter().collect());
    }

    /// Adds splits, merging those of the same name.
    pub fn add_splits(&mut self, splits: impl IntoIterator<Item = SplitTally>) {
        for s in splits {
            match self.splits.iter_mut().find(|m| m.name == s.name) {
                Some(mine) => mine.merge(s),
                None => self.splits.push(s),
            }
        }
        self.splits.sort_by(|a, b| a.name.cmp(&b.name));
    }

    /// Merges `other` into `self`; the order of merging never matters.
    pub fn merge(&mut self, other: Partial) {
        // Files that all follow this partial's (a run's files in order):
        // the same result without re-sorting every name.
        if self
            .files
            .last()
            .is_none_or(|last| other.files.first().is_none_or(|f| f > last))
            && other.files.windows(2).all(|w| w[0] < w[1])
        {
            return self.append(other);
        }
        let mut files: Vec<String> = self.files.iter().chain(&other.files).cloned().collect();
        files.sort_unstable();
        files.dedup();
        let remap =
            |own: &[String]| -> Vec<usize> { own.iter().map(|f| files.binary_search(f).unwrap_or_default()).collect() };
        let (mine, theirs) = (remap(&self.files), remap(&other.files));
        let keep = self.tally.max_examples.max(other.tally.max_examples);
        // Saturating: counts read from a hostile partial may not wrap to 0.
        self.tally.rows = self.tally.rows.saturating_add(other.tally.rows);
        self.tally.max_examples = keep;
        for (a, b) in self.tally.checks.iter_mut().zip(other.tally.checks) {
            a.violations = a.violations.saturating_add(b.violations);
            a.evidence.merge(&b.evidence);
            let relabel = |ex: Example, map: &[usize]| Example {
                file: map.get(ex.file).copied().unwrap_or_default(),
                ..ex
            };
            let left: Vec<Example> = std::mem::take(&mut a.examples)
                .into_iter()
                .map(|e| relabel(e, &mine))
                .collect();
            let right = b.examples.into_iter().map(|e| relabel(e, &theirs));
            a.examples = merge_first(left, right, keep);
        }
        self.tally.add_classes(other.tally.classes);
        self.files = files;
        self.add_errors(other.errors);
        self.add_notes(other.notes);
        self.add_tables(other.tables);
        self.add_labels(other.labels);
        self.add_splits(other.splits);
    }

    /// [`Partial::merge`] of a partial whose files all sort after this one's.
    fn append(&mut self, other: Partial) {
        let offset = self.files.len();
        let keep = self.tally.max_examples.max(other.tally.max_examples);
        self.tally.rows = self.tally.rows.saturating_add(other.tally.rows);
        self.tally.max_examples = keep;
        for (a, b) in self.tally.checks.iter_mut().zip(other.tally.checks) {
            a.violations = a.violations.saturating_add(b.violations);
            a.evidence.merge(&b.evidence);
            let room = keep.saturating_sub(a.examples.len());
            a.examples.extend(b.examples.into_iter().take(room).map(|e| Example {
                file: e.file + offset,
                ..e
            }));
        }
        self.tally.add_classes(other.tally.classes);
        self.files.extend(other.files);
        self.add_errors(other.errors);
        self.add_notes(other.notes);
        self.add_tables(other.tables);
        self.add_labels(other.labels);
        self.add_splits(other.splits);
    }

    /// Adds the tables read, keeping them in order and each once.
    pub fn add_tables(&mut self, tables: impl IntoIterator<Item = TableSnapshot>) {
        self.tables.extend(tables);
        self.tables.sort();
        self.tables.dedup();
    }

    /// Adds errors, keeping them in (file, unit, message) order and each
    /// said once per file.
    pub fn add_errors(&mut self, errors: impl IntoIterator<Item = ErrorEntry>) {
        self.errors.extend(errors);
        self.errors = ordered(std::mem::take(&mut self.errors));
    }

    /// Adds file notes, keeping them in (file, message) order and each said
    /// once per file.
    pub fn add_notes(&mut self, notes: impl IntoIterator<Item = ErrorEntry>) {
        self.notes
            .extend(notes.into_iter().map(|n| ErrorEntry { unit: 0, ..n }));
        self.notes = ordered(std::mem::take(&mut self.notes));
    }

    /// Merges the `partial` states of reports written with `--partial`,
    /// each named for messages, into one partial with its schema's
    /// validator. Reports of another schema or `max_examples` than the
    /// first are refused.
    pub fn merge_reports(reports: &[(String, J)]) -> Result<(Partial, Validator), String> {
        let mut merged: Option<(Partial, Validator, J)> = None;
        for (name, doc) in reports {
            let state = doc.get("partial").ok_or_else(|| {
                format!("{name}: no `partial` key: write the reports with `check --format json --partial`")
            })?;
            let (partial, validator) = Partial::from_json(state).map_err(|e| format!("{name}: {e}"))?;
            let identity = json!([
                state["schema"],
                state["warnings"],
                state["sources"],
                state["max_examples"],
                state.get("model_labels").cloned().unwrap_or_else(|| json!([]))
            ]);
            match &mut merged {
                None => merged = Some((partial, validator, identity)),
                Some((acc, _, first)) => {
                    if *first != identity {
                        return Err(format!(
                            "{name}: written with another schema or max_examples than the first report"
                        ));
                    }
                    acc.merge(partial);
                }
            }
        }
        merged
            .map(|(p, v, _)| (p, v))
            .ok_or_else(|| "no reports to merge".to_string())
    }

    /// Whether [`Partial::report`] would be clean (exit status 0), without
    /// building it: no error and no violation. A run with splits is judged
    /// by its report, whose comparisons of the splits can add errors.
    pub fn is_clean(self, validator: &Validator) -> bool {
        if !self.splits.is_empty() {
            return self.report(validator).ok();
        }
        self.errors.is_empty() && self.tally.checks.iter().all(|c| c.violations == 0)
    }

    /// The report of the data this partial covers.
    pub fn report(self, validator: &Validator) -> Report {
        let mut warnings = validator.schema().warnings.clone();
        warnings.extend(self.notes.iter().map(|n| match &n.file {
            Some(f) => format!("{f}: {}", n.message),
            None => n.message.clone(),
        }));
        let (splits, split_errors, split_warnings) = super::splits::judge(validator, &self.splits);
        let mut errors = self.errors;
        errors.extend(split_errors);
        warnings.extend(split_warnings);
        Report {
            tables: self.tables.into(),
            splits: splits.into(),
            ..Report::build(
                validator.schema(),
                validator.plan(),
                &self.files,
                self.tally,
                errors,
                warnings,
            )
        }
    }

    /// The partial as JSON, with what a merge elsewhere needs: the resolved
    /// schema, its warnings and bound sources, and typed values.
    pub fn to_json(&self, validator: &Validator) -> J {
        // (A check's partial is redacted already: no copy then.)
        let redacted;
        let this = if self.files.iter().all(|f| crate::redact::url(f) == f.as_str())
            && self
                .errors
                .iter()
                .chain(&self.notes)
                .all(|e| e.clone().redacted() == *e)
        {
            self
        } else {
            redacted = self.clone().redacted();
            &redacted
        };
        let schema = validator.schema();
        let sources: Vec<J> = schema
            .columns
            .iter()
            .enumerate()
            .flat_map(|(i, c)| c.bound_sources.iter().map(move |(k, f)| json!([i, k, f])))
            .collect();
        // The model's label names the files were compared with (the
        // resolved schema does not show them).
        let model_labels: Vec<J> = schema
            .columns
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.model_labels.as_ref().map(|m| json!([i, m.names, m.source])))
            .collect();
        let checks: Vec<J> = this
            .tally
            .checks
            .iter()
            .map(|c| {
                json!({
                    "violations": c.violations,
                    "examples": c.examples.iter().map(|e| match (e.xy, &e.origin) {
                        (None, None) => json!([e.file, e.row, typed(&e.value)]),
                        (Some((x, y)), None) => json!([e.file, e.row, typed(&e.value), x, y]),
                        (None, Some(o)) => json!([e.file, e.row, typed(&e.value), &*o.file, o.row]),
                        (Some((x, y)), Some(o)) => json!([e.file, e.row, typed(&e.value), x, y, &*o.file, o.row]),
                    }).collect::<Vec<_>>(),
                    "evidence": evidence_json(&c.evidence),
                })
            })
            .collect();
        json!({
            "version": 1,
            "schema": schema.to_resolved_yaml(),
            "warnings": schema.warnings,
            "sources": sources,
            "model_labels": model_labels,
            "max_examples": this.tally.max_examples,
            "files": this.files,
            "rows": this.tally.rows,
            "checks": checks,
            "errors": this.errors.iter().map(|e| json!([e.file, e.unit, e.message])).collect::<Vec<_>>(),
            "notes": this.notes.iter().map(|e| json!([e.file, e.message])).collect::<Vec<_>>(),
            "tables": this.tables,
            "classes": this.tally.classes,
            "labels": this.labels,
            "splits": this.splits,
        })
    }

    /// Reads a partial written by [`Partial::to_json`], with the validator
    /// of its schema.
    pub fn from_json(doc: &J) -> Result<(Partial, Validator), String> {
        let raw: RawPartial =
            serde_json::from_value(doc.clone()).map_err(|e| format!("not a preflight partial: {e}"))?;
        if raw.version != 1 {
            return Err(format!("partial version {} is not supported", raw.version));
        }
        let mut schema =
            Schema::from_yaml(&raw.schema, "<partial>".as_ref()).map_err(|e| format!("its schema: {e}"))?;
        schema.warnings = raw.warnings.clone();
        for (i, key, from) in &raw.sources {
            let column = schema.columns.get_mut(*i).ok_or("a bound source names no column")?;
            column.bound_sources.push((key.clone(), from.clone()));
        }
        for (i, names, source) in &raw.model_labels {
            let column = schema.columns.get_mut(*i).ok_or("model label names name no column")?;
            column.model_labels = Some(crate::schema::labels::ModelLabels {
                names: names.clone(),
                source: source.clone(),
            });
        }
        let validator = Validator::new(schema, raw.max_examples);
        let partial = Partial::from_raw(raw, &validator)?;
        Ok((partial, validator))
    }

    /// Reads a partial written by [`Partial::to_json`] for `validator`'s
    /// own check (its schema is not parsed again: the caller knows it is
    /// the same, as the result cache does by its keys).
    pub fn from_json_for(doc: &J, validator: &Validator) -> Result<Partial, String> {
        let raw: RawPartial =
            serde_json::from_value(doc.clone()).map_err(|e| format!("not a preflight partial: {e}"))?;
        if raw.version != 1 || raw.max_examples != validator.max_examples() {
            return Err("a partial of another check".into());
        }
        Partial::from_raw(raw, validator)
    }

    fn from_raw(raw: RawPartial, validator: &Validator) -> Result<Partial, String> {
        if raw.checks.len() != validator.plan().len() {
            return Err("its checks do not match its schema".into());
        }
        // Class counts of a hostile partial stay within the schema's columns
        // and the counted number of classes.
        let fits = |c: &[Vec<u64>]| {
            c.len() <= validator.schema().columns.len()
                && c.iter().all(|v| v.len() as i128 <= crate::check::classes::MAX_COUNTED)
        };
        if !fits(&raw.classes) || !raw.splits.iter().all(|s| fits(&s.classes)) {
            return Err("its class counts do not match its schema".into());
        }
        let mut files = raw.files;
        let sorted = files.windows(2).all(|w| w[0] < w[1]);
        if !sorted {
            return Err("its files are not sorted".into());
        }
        let mut checks = Vec::with_capacity(raw.checks.len());
        for c in raw.checks {
            let mut examples = Vec::with_capacity(c.examples.len());
            for e in c.examples {
                let (file, row, value, xy, origin) = match e {
                    RawExample::Plain(f, r, v) => (f, r, v, None, None),
                    RawExample::At(f, r, v, x, y) => (f, r, v, Some((x, y)), None),
                    RawExample::Mapped(f, r, v, of, or) => (f, r, v, None, Some((of, or))),
                    RawExample::MappedAt(f, r, v, x, y, of, or) => (f, r, v, Some((x, y)), Some((of, or))),
                };
                if file >= files.len() {
                    return Err("an example names no file".into());
                }
                examples.push(Example {
                    file,
                    row,
                    value: untyped(&value)?,
                    xy,
                    origin: origin.map(|(file, row)| super::Origin { file: file.into(), row }),
                });
            }
            checks.push(CheckTally {
                violations: c.violations,
                examples,
                evidence: evidence_from(&c.evidence)?,
            });
        }
        let errors = raw
            .errors
            .into_iter()
            .map(|(file, unit, message)| ErrorEntry { file, message, unit })
            .collect();
        let notes = raw
            .notes
            .into_iter()
            .map(|(file, message)| ErrorEntry { file, message, unit: 0 })
            .collect();
        files.shrink_to_fit();
        let partial = Partial {
            files,
            tally: Tally {
                checks,
                rows: raw.rows,
                max_examples: raw.max_examples,
                log: None,
                docs: None,
                classes: raw.classes,
            },
            errors,
            notes,
            tables: raw.tables,
            labels: raw.labels,
            splits: raw.splits,
        };
        // A partial written elsewhere (another version, by hand) never
        // brings a URL's credentials into a merged report.
        Ok(partial.redacted())
    }

    /// The partial with a URL's credentials redacted in its file names,
    /// errors and notes (`crate::redact`); names a check gave are so
    /// already. Names that redaction makes equal become one file.
    pub fn redacted(mut self) -> Partial {
        let shown = |f: &String| crate::redact::url(f).into_owned();
        self.errors = std::mem::take(&mut self.errors)
            .into_iter()
            .map(ErrorEntry::redacted)
            .collect();
        self.notes = std::mem::take(&mut self.notes)
            .into_iter()
            .map(ErrorEntry::redacted)
            .collect();
        for t in &mut self.tables {
            t.path = crate::redact::url(&t.path).into_owned();
        }
        if self.files.iter().all(|f| crate::redact::url(f) == f.as_str()) {
            return self;
        }
        self.files = self.files.iter().map(shown).collect();
        // Merged into an empty partial: names sorted again, examples
        // relabelled; then put back in (file, row) order.
        let mut out = Partial::empty(self.tally.checks.len(), self.tally.max_examples);
        let (errors, notes) = (std::mem::take(&mut self.errors), std::mem::take(&mut self.notes));
        out.merge(self);
        out.errors = ordered(errors);
        out.notes = ordered(notes);
        for c in &mut out.tally.checks {
            c.examples.sort_by_key(|e| (e.file, e.row, e.xy.map(|(x, y)| (y, x))));
        }
        out
    }
}

#[derive(Deserialize)]
struct RawPartial {
    version: u32,
    schema: String,
    warnings: Vec<String>,
    sources: Vec<(usize, String, String)>,
    /// Absent from partials written before label names were compared.
    #[serde(default)]
    model_labels: Vec<(usize, Vec<Option<String>>, String)>,
    max_examples: usize,
    files: Vec<String>,
    rows: u64,
    checks: Vec<RawCheck>,
    errors: Vec<(Option<String>, u64, String)>,
    /// Absent from partials written before file notes existed.
    #[serde(default)]
    notes: Vec<(Option<String>, String)>,
    /// Absent from partials written before tables were read.
    #[serde(default)]
    tables: Vec<TableSnapshot>,
    /// Absent from partials written before splits were counted.
    #[serde(default)]
    classes: Vec<Vec<u64>>,
    #[serde(default)]
    labels: Vec<LabelNames>,
    #[serde(default)]
    splits: Vec<SplitTally>,
}

#[derive(Deserialize)]
struct RawCheck {
    violations: u64,
    examples: Vec<RawExample>,
    evidence: J,
}

/// An example: (file, row, value), with (x, y) for a pixel, and the data
/// file and row of a mapped dataset's row (whose `row` is its index).
#[derive(Deserialize)]
#[serde(untagged)]
enum RawExample {
    Plain(usize, u64, J),
    At(usize, u64, J, u64, u64),
    Mapped(usize, u64, J, String, u64),
    MappedAt(usize, u64, J, u64, u64, String, u64),
}

/// Errors in (file, unit, message) order (no file first), each said once
/// per file.
fn ordered(mut errors: Vec<ErrorEntry>) -> Vec<ErrorEntry> {
    errors.sort_by(|x, y| (&x.file, x.unit, &x.message).cmp(&(&y.file, y.unit, &y.message)));
    let mut seen = std::collections::HashSet::new();
    errors.retain(|e| seen.insert((e.file.clone(), e.message.clone())));
    errors
}

/// The first `keep` examples of two (file, row)-ordered lists, in that order;
/// on a tie `left`'s come first.
fn merge_first(left: Vec<Example>, right: impl IntoIterator<Item = Example>, keep: usize) -> Vec<Example> {
    let mut out = Vec::with_capacity(keep.min(left.len() + 8));
    let mut l = left.into_iter().peekable();
    let mut r = right.into_iter().peekable();
    while out.len() < keep {
        let take_left = match (l.peek(), r.peek()) {
            (Some(a), Some(b)) => {
                (a.file, a.row, a.xy.map(|(x, y)| (y, x))) <= (b.file, b.row, b.xy.map(|(x, y)| (y, x)))
            }
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        out.extend(if take_left { l.next() } else { r.next() });
    }
    out
}

/// A value with its type: integers as decimal strings (any width), floats
/// as numbers or "NaN"/"inf"/"-inf", strings, null.
fn typed(v: &Value) -> J {
    match v {
        Value::Null => J::Null,
        Value::Int(i) => json!({"int": i.to_string()}),
        Value::Float(f) if f.is_finite() => json!({"float": f}),
        Value::Float(f) => json!({"float": Value::Float(*f).to_string()}),
        Value::Str(s) => json!({"str": s}),
    }
}

fn untyped(v: &J) -> Result<Value, String> {
    let bad = || format!("an example value {v} is not typed");
    if v.is_null() {
        return Ok(Value::Null);
    }
    let map = v.as_object().filter(|m| m.len() == 1).ok_or_else(bad)?;
    let (kind, inner) = map.iter().next().ok_or_else(bad)?;
    match (kind.as_str(), inner) {
        ("int", J::String(s)) => s.parse().map(Value::Int).map_err(|_| bad()),
        ("float", J::Number(n)) => n.as_f64().map(Value::Float).ok_or_else(bad),
        ("float", J::String(s)) => match s.as_str() {
            "NaN" => Ok(Value::Float(f64::NAN)),
            "inf" => Ok(Value::Float(f64::INFINITY)),
            "-inf" => Ok(Value::Float(f64::NEG_INFINITY)),
            _ => Err(bad()),
        },
        ("str", J::String(s)) => Ok(Value::Str(s.clone())),
        _ => Err(bad()),
    }
}

fn evidence_json(e: &Evidence) -> J {
    let int = |v: Option<i128>| v.map(|i| J::String(i.to_string())).unwrap_or(J::Null);
    let mut doc = json!({
        "bad_min": int(e.bad_min),
        "bad_max": int(e.bad_max),
        "min": int(e.min),
        "saw": [e.saw_minus_one, e.saw_minus_100, e.saw_255, e.saw_fraction],
        "bad_wide": e.bad_wide,
    });
    if e.pixels != PixelEvidence::default() {
        let p = &e.pixels;
        doc["pixels"] = json!({
            "counts": p.counts.iter().map(|(v, n)| json!([typed(v), n])).collect::<Vec<_>>(),
            "images": [p.images, p.lossy, p.palette_luminance, p.binary_255, p.wide16, p.boundary, p.located],
        });
    }
    doc
}

fn pixels_from(v: &J) -> Result<PixelEvidence, String> {
    if v.is_null() {
        return Ok(PixelEvidence::default());
    }
    let bad = || "evidence pixels is malformed".to_string();
    let n: [u64; 7] = serde_json::from_value(v["images"].clone()).map_err(|_| bad())?;
    let mut counts = Vec::new();
    for c in v["counts"].as_array().ok_or_else(bad)? {
        let pair = c.as_array().filter(|p| p.len() == 2).ok_or_else(bad)?;
        counts.push((untyped(&pair[0])?, pair[1].as_u64().ok_or_else(bad)?));
    }
    let mut p = PixelEvidence {
        images: n[0],
        lossy: n[1],
        palette_luminance: n[2],
        binary_255: n[3],
        wide16: n[4],
        boundary: n[5],
        located: n[6],
        counts: Vec::new(),
    };
    p.count(counts);
    Ok(p)
}

fn evidence_from(v: &J) -> Result<Evidence, String> {
    let int = |key: &str| -> Result<Option<i128>, String> {
        match &v[key] {
            J::Null => Ok(None),
            J::String(s) => s
                .parse()
                .map(Some)
                .map_err(|_| format!("evidence {key} is not an integer")),
            _ => Err(format!("evidence {key} is not an integer")),
        }
    };
    let saw: [bool; 4] = serde_json::from_value(v["saw"].clone()).map_err(|e| format!("evidence: {e}"))?;
    Ok(Evidence {
        bad_min: int("bad_min")?,
        bad_max: int("bad_max")?,
        min: int("min")?,
        saw_minus_one: saw[0],
        saw_minus_100: saw[1],
        saw_255: saw[2],
        saw_fraction: saw[3],
        bad_wide: match &v["bad_wide"] {
            J::Null => [0, 0],
            w => serde_json::from_value(w.clone()).map_err(|e| format!("evidence bad_wide: {e}"))?,
        },
        pixels: pixels_from(&v["pixels"])?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_values_round_trip() {
        for v in [
            Value::Null,
            Value::Int(-170141183460469231731687303715884105728),
            Value::Int(18446744073709551615),
            Value::Float(0.1),
            Value::Float(-0.0),
            Value::Float(f64::INFINITY),
            Value::Float(f64::NEG_INFINITY),
            Value::Str("NaN".into()),
        ] {
            assert_eq!(untyped(&typed(&v)).unwrap(), v);
        }
        assert!(matches!(untyped(&typed(&Value::Float(f64::NAN))), Ok(Value::Float(f)) if f.is_nan()));
        assert!(untyped(&json!({"int": "x"})).is_err());
        assert!(untyped(&json!(3)).is_err());
    }
}

#[cfg(test)]
mod note_tests {
    use super::*;

    fn note(file: &str, message: &str) -> ErrorEntry {
        ErrorEntry {
            file: Some(file.into()),
            message: message.into(),
            unit: 3,
        }
    }

    #[test]
    fn file_notes_merge_in_order_once_each_and_survive_json() {
        let schema = Schema::from_yaml(
            "version: 1\ncolumns:\n  label: {kind: class, num_classes: 2}\n",
            "s.yaml".as_ref(),
        )
        .unwrap();
        let validator = Validator::new(schema, 5);
        let mut a = validator.partial();
        a.files = vec!["b.png".into()];
        a.add_notes([note("b.png", "lossy"), note("b.png", "lossy")]);
        let mut b = validator.partial();
        b.files = vec!["a.png".into()];
        b.add_notes([note("a.png", "lossy")]);
        a.merge(b);
        let said: Vec<_> = a.notes.iter().map(|n| (n.file.as_deref().unwrap(), n.unit)).collect();
        assert_eq!(said, [("a.png", 0), ("b.png", 0)]);

        let back = Partial::from_json_for(&a.to_json(&validator), &validator).unwrap();
        assert_eq!(back, a);
        let report = back.report(&validator);
        assert_eq!(report.warnings, ["a.png: lossy", "b.png: lossy"]);
        // Partials written before notes existed still read.
        let mut old = a.to_json(&validator);
        old.as_object_mut().unwrap().remove("notes");
        assert!(Partial::from_json_for(&old, &validator).unwrap().notes.is_empty());
    }

    #[test]
    fn is_clean_is_the_reports_verdict() {
        use arrow::array::{Int64Array, RecordBatch};
        let schema = Schema::from_yaml(
            "version: 1\ncolumns:\n  label: {kind: class, num_classes: 3}\n  ids: {kind: index, size: 9, optional: true}\n",
            "s.yaml".as_ref(),
        )
        .unwrap();
        let validator = Validator::new(schema, 5);
        let batch = |name: &str, values: Vec<i64>| {
            RecordBatch::try_from_iter([(name, std::sync::Arc::new(Int64Array::from(values)) as _)]).unwrap()
        };
        for (batch, clean) in [
            (batch("label", vec![0, 1, 2]), true),
            (batch("label", vec![]), true),
            (batch("label", vec![0, 3, 2]), false),
            (batch("label", vec![-1]), false),
            (batch("ids", vec![0]), false), // the required label is missing: an error
        ] {
            let partial = validator.check("b", 0, &batch);
            assert_eq!(partial.clone().report(&validator).ok(), clean, "{batch:?}");
            assert_eq!(partial.is_clean(&validator), clean, "{batch:?}");
        }
    }

    #[test]
    fn splits_merge_in_any_order_survive_json_and_refuse_hostile_counts() {
        let schema = Schema::from_yaml(
            "version: 1\ndataset:\n  splits: {train: t, val: v}\ncolumns:\n  label: {kind: class, num_classes: 3}\n",
            "s.yaml".as_ref(),
        )
        .unwrap();
        let validator = Validator::new(schema, 5);
        let part = |file: &str, split: &str, counts: Vec<u64>| {
            let mut p = validator.partial();
            p.files = vec![file.into()];
            p.tally.rows = counts.iter().sum();
            p.tally.classes = vec![counts];
            p.into_split(split)
        };
        let pieces = [
            part("t1", "train", vec![2, 1, 0]),
            part("v1", "val", vec![0, 0, 4]),
            part("t2", "train", vec![1, 0, 0]),
        ];
        let mut forward = validator.partial();
        for p in pieces.iter().cloned() {
            forward.merge(p);
        }
        let mut backward = validator.partial();
        for p in pieces.iter().rev().cloned() {
            backward.merge(p);
        }
        assert_eq!(forward, backward);
        assert_eq!(forward.splits[0].classes, vec![vec![3, 1, 0]]);
        let back = Partial::from_json_for(&forward.to_json(&validator), &validator).unwrap();
        assert_eq!(back, forward);
        let report = back.report(&validator);
        assert_eq!(report.splits[1].class_counts[0].1[2], ("2".to_string(), 4));
        assert_eq!(
            report.warnings,
            [
                "column `label`: split `train` has no sample of 1 of its 3 classes: 2; the model never learns them (check num_classes and the data)",
                "column `label`: split `val` has 4 samples of 1 class that split `train` never has: 2; the model never learns them, and evaluation counts them against it",
                "column `label`: split `val` has no sample of 2 of its 3 classes: 0, 1; its metrics say nothing about them",
            ]
        );
        // Counts past the schema's classes or columns are refused.
        let mut hostile = forward.to_json(&validator);
        hostile["splits"][0]["classes"] = serde_json::json!([[1], [2], [3]]);
        assert!(Partial::from_json_for(&hostile, &validator).is_err());
    }
}
