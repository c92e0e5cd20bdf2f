//! The splits of one dataset (`dataset.splits`), which must agree.
//!
//! Nothing crashes when they do not: a validation split whose class folders
//! differ from training's numbers its classes otherwise, a class seen only
//! in validation is never learnt, a class with no sample is never seen.
//! Each split's rows are checked as any run's; what a split adds is
//! counted here per class column (its histogram and the label names its
//! files carry) and compared once every split is merged, so a merge of
//! partials judges the splits as one run does.

use serde::{Deserialize, Serialize};

use super::ErrorEntry;
use crate::check::Validator;
use crate::check::classes::Classes;
use crate::schema::labels::LabelNames;

/// What a split's rows showed about its class columns, ready to merge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitTally {
    /// The split's name in `dataset.splits`.
    pub name: String,
    /// Rows read.
    pub rows: u64,
    /// Per schema column, how often each class occurred (empty for a
    /// column not counted).
    pub classes: Vec<Vec<u64>>,
    /// The label names its files carry, in (column, file) order.
    pub labels: Vec<LabelNames>,
}

impl SplitTally {
    /// Adds another part of the same split.
    pub fn merge(&mut self, other: SplitTally) {
        self.rows = self.rows.saturating_add(other.rows);
        crate::check::tally::add_counts(&mut self.classes, other.classes);
        add_labels(&mut self.labels, other.labels);
    }
}

/// Adds label names, in order. Names from the same place (an image
/// folder's listing arrives image by image) join where they agree.
pub(crate) fn add_labels(labels: &mut Vec<LabelNames>, more: Vec<LabelNames>) {
    for l in more {
        let joined = labels
            .iter_mut()
            .find(|m| m.column == l.column && m.file == l.file && m.from == l.from && agree(&m.names, &l.names));
        match joined {
            Some(m) => {
                if m.names.len() < l.names.len() {
                    m.names.resize(l.names.len(), None);
                }
                for (a, b) in m.names.iter_mut().zip(l.names) {
                    if a.is_none() {
                        *a = b;
                    }
                }
            }
            None => labels.push(l),
        }
    }
    labels.sort();
    labels.dedup();
}

/// Whether two lists never name one class differently.
fn agree(a: &[Option<String>], b: &[Option<String>]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.is_none() || y.is_none() || x == y)
}

/// One split as the report shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitReport {
    /// The split's name.
    pub name: String,
    /// Its files as the schema lists them.
    pub files: Vec<String>,
    /// Rows read.
    pub rows: u64,
    /// Per counted class column: (column, (class, samples) for every class
    /// in class order). A class is its index, or its name for `classes`.
    pub class_counts: Vec<(String, Vec<(String, u64)>)>,
}

/// The splits in the schema's order, with what comparing them found:
/// errors (label names that differ between splits) and warnings (classes
/// that only other splits have, classes without a sample).
pub(crate) fn judge(validator: &Validator, tallies: &[SplitTally]) -> (Vec<SplitReport>, Vec<ErrorEntry>, Vec<String>) {
    let schema = validator.schema();
    let mut reports = Vec::new();
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    // (A validator fed batches directly has a schema with splits but no
    // split's rows: nothing to compare.)
    if schema.splits.is_empty() || tallies.is_empty() {
        return (reports, errors, warnings);
    }
    let empty = SplitTally {
        name: String::new(),
        rows: 0,
        classes: Vec::new(),
        labels: Vec::new(),
    };
    let tally_of = |name: &str| tallies.iter().find(|t| t.name == name).unwrap_or(&empty);
    let train = schema.training_split().map(|s| s.name.as_str()).unwrap_or_default();
    let counted: Vec<(usize, Classes)> = schema
        .columns
        .iter()
        .enumerate()
        .filter(|(ci, _)| validator.counts_classes(*ci))
        .filter_map(|(ci, c)| Some((ci, Classes::of(&c.values)?)))
        .collect();
    let counts_of = |t: &SplitTally, ci: usize, n: usize| -> Vec<u64> {
        let mut c = t.classes.get(ci).cloned().unwrap_or_default();
        c.resize(n, 0);
        c
    };
    for split in &schema.splits {
        let t = tally_of(&split.name);
        let class_counts = counted
            .iter()
            .map(|(ci, k)| {
                let counts = counts_of(t, *ci, k.len());
                let keyed = counts.into_iter().enumerate().map(|(i, n)| (key(k, i), n)).collect();
                (schema.columns[*ci].name.clone(), keyed)
            })
            .collect();
        reports.push(SplitReport {
            name: split.name.clone(),
            files: split.files.clone(),
            rows: t.rows,
            class_counts,
        });
    }
    let trained = tally_of(train);
    for (ci, k) in &counted {
        let column = &schema.columns[*ci].name;
        // Names as the training split's files give them, to show classes.
        let known: Vec<Option<String>> = trained
            .labels
            .iter()
            .find(|l| l.column == *column)
            .map(|l| l.names.clone())
            .unwrap_or_default();
        let shown = |i: usize| match (k, known.get(i).and_then(|n| n.as_deref())) {
            (Classes::Numbered(_), Some(name)) => format!("{i} `{name}`"),
            _ => key(k, i),
        };
        let train_counts = counts_of(trained, *ci, k.len());
        for split in &schema.splits {
            let t = tally_of(&split.name);
            if t.rows == 0 {
                continue;
            }
            let counts = counts_of(t, *ci, k.len());
            if split.name != train && trained.rows > 0 {
                let unseen: Vec<usize> = (0..k.len())
                    .filter(|&i| counts[i] > 0 && train_counts[i] == 0)
                    .collect();
                if !unseen.is_empty() {
                    let samples: u64 = unseen.iter().map(|&i| counts[i]).sum();
                    warnings.push(format!(
                        "column `{column}`: split `{}` has {} of {} that split `{train}` never has: {}; the model never learns them, and evaluation counts them against it",
                        split.name,
                        super::plural(samples, "sample", "samples"),
                        super::plural(unseen.len() as u64, "class", "classes"),
                        listed(unseen.iter().map(|&i| shown(i)))
                    ));
                }
            }
            let empty: Vec<usize> = (0..k.len()).filter(|&i| counts[i] == 0).collect();
            if !empty.is_empty() {
                warnings.push(format!(
                    "column `{column}`: split `{}` has no sample of {} of its {} classes: {}{}",
                    split.name,
                    empty.len(),
                    k.len(),
                    listed(empty.iter().map(|&i| shown(i))),
                    if split.name == train {
                        "; the model never learns them (check num_classes and the data)"
                    } else {
                        "; its metrics say nothing about them"
                    }
                ));
            }
        }
        errors.extend(names_differ(column, train, &schema.splits, &tally_of));
    }
    (reports, errors, warnings)
}

/// Errors for label names that differ from the training split's first
/// list (each split's files are compared with it, the training split's
/// other files too).
fn names_differ<'a>(
    column: &str,
    train: &str,
    splits: &[crate::schema::Split],
    tally_of: &dyn Fn(&str) -> &'a SplitTally,
) -> Vec<ErrorEntry> {
    let lists_of = |name: &str| tally_of(name).labels.iter().filter(move |l| l.column == column);
    let Some(reference) = lists_of(train).next() else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    for split in splits {
        for l in lists_of(&split.name).filter(|l| l.names != reference.names) {
            let here = place(&split.name, l);
            let there = place(train, reference);
            let name_set = |v: &[Option<String>]| -> Vec<String> { v.iter().flatten().cloned().collect() };
            let (mine, theirs) = (name_set(&l.names), name_set(&reference.names));
            let lacks: Vec<&str> = theirs
                .iter()
                .filter(|n| !mine.contains(n))
                .map(String::as_str)
                .collect();
            let extra: Vec<&str> = mine
                .iter()
                .filter(|n| !theirs.contains(n))
                .map(String::as_str)
                .collect();
            let (a, b) = (&split.name, train);
            let mut what = Vec::new();
            if !lacks.is_empty() {
                what.push(format!("`{a}` lacks {}", quoted(&lacks)));
            }
            if !extra.is_empty() {
                what.push(format!("only `{a}` has {}", quoted(&extra)));
            }
            let first = l
                .names
                .iter()
                .zip(&reference.names)
                .position(|(x, y)| x != y)
                .unwrap_or(l.names.len().min(reference.names.len()));
            let at = |v: &[Option<String>]| match v.get(first) {
                Some(Some(n)) => format!("`{n}`"),
                _ => "no class".to_string(),
            };
            what.push(format!(
                "class {first} is {} in `{b}` but {} in `{a}`",
                at(&reference.names),
                at(&l.names)
            ));
            errors.push(ErrorEntry {
                file: (!l.file.is_empty()).then(|| l.file.clone()),
                message: format!(
                    "column `{column}`: {here} and {there} name the classes differently ({}; {} vs {} classes): \
                     each split numbers its classes on its own, so from class {first} on the same index means \
                     different classes in training and evaluation; give every split the same classes",
                    what.join(", "),
                    reference.names.len(),
                    l.names.len(),
                ),
                unit: 0,
            });
        }
    }
    errors
}

/// `split `val` (its class folders)`, or `split `val` (FILE: the COCO
/// categories)`.
fn place(split: &str, l: &LabelNames) -> String {
    match l.file.is_empty() {
        true => format!("split `{split}` ({})", l.from),
        false => format!("split `{split}` ({}: {})", l.file, l.from),
    }
}

/// How reports name class `i`: its index, or its name for `classes`.
fn key(k: &Classes, i: usize) -> String {
    match k {
        Classes::Numbered(_) => i.to_string(),
        Classes::Named(names) => names.get(i).cloned().unwrap_or_default(),
    }
}

/// Classes, at most 12 of them.
fn listed(items: impl Iterator<Item = String>) -> String {
    at_most(items.collect(), 12)
}

/// Names in backquotes, at most 8 of them.
fn quoted(names: &[&str]) -> String {
    at_most(names.iter().map(|n| format!("`{n}`")).collect(), 8)
}

/// `a, b, c, and 4 more`: the first `shown` items.
fn at_most(mut items: Vec<String>, shown: usize) -> String {
    if items.len() > shown {
        let more = items.len() - shown;
        items.truncate(shown);
        items.push(format!("and {more} more"));
    }
    items.join(", ")
}
