//! An image folder's rows, checked in bulk: the rows come from the listing
//! (class index and name), so a run over a million images is a listing and
//! a few thousand batches, not a million sources.

use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, StringArray};
use rayon::prelude::*;

use crate::check::Validator;
use crate::check::tally::Tally;
use crate::error::Error;
use crate::progress::Progress;
use crate::report::{ErrorEntry, Partial};
use crate::source::layouts::discover::DataFile;
use crate::source::layouts::image_folder::COLUMNS;

/// Images checked per task of [`scan_rows`]: enough to amortise a task's
/// tally, few enough to spread a small tree over every thread.
const ROWS_PER_TASK: usize = 2048;

/// Checks a run whose files are all image folder rows, as the scanner
/// would (same counts, examples, errors and order) without its per-file
/// machinery: a task checks a run of consecutive images into one tally,
/// one one-row batch per image sliced from the task's arrays, and the tasks'
/// tallies merge in file order. This is what makes a tree of a million
/// images cost a listing, not a million file opens.
pub(super) fn scan_rows(validator: &Validator, files: &[DataFile], progress: &Progress) -> Partial {
    let schema = validator.schema();
    // Each schema column: its array (label, class_name) or none.
    let wanted: Vec<Option<usize>> = schema
        .columns
        .iter()
        .map(|c| COLUMNS.iter().position(|n| *n == c.name))
        .collect();
    let missing: Vec<&str> = schema
        .columns
        .iter()
        .zip(&wanted)
        .filter(|(c, w)| w.is_none() && !c.optional)
        .map(|(c, _)| c.name.as_str())
        .collect();
    let results: Vec<(Tally, Vec<ErrorEntry>)> = files
        .par_chunks(ROWS_PER_TASK)
        .enumerate()
        .map(|(chunk, task)| {
            let mut tally = validator.tally();
            let mut errors = Vec::new();
            if super::CANCELLED.load(std::sync::atomic::Ordering::Relaxed) {
                return (tally, errors);
            }
            let labels: ArrayRef = Arc::new(Int64Array::from_iter_values(
                task.iter().map(|f| f.label.as_ref().map_or(0, |l| l.index)),
            ));
            let names: ArrayRef = Arc::new(StringArray::from_iter_values(
                task.iter().map(|f| f.label.as_ref().map_or("", |l| l.class.as_ref())),
            ));
            let arrays = [labels, names];
            let mut columns: Vec<Option<ArrayRef>> = vec![None; wanted.len()];
            for (i, f) in task.iter().enumerate() {
                let fi = chunk * ROWS_PER_TASK + i;
                for (c, w) in columns.iter_mut().zip(&wanted) {
                    *c = w.map(|w| arrays[w].slice(i, 1));
                }
                for column in &missing {
                    errors.push(ErrorEntry::from(&Error::MissingColumn {
                        path: f.display.clone(),
                        column: column.to_string(),
                    }));
                }
                for e in validator.check_columns(&columns, 1, fi, 0, &mut tally) {
                    let mut entry = ErrorEntry::from(&Error::ColumnType {
                        path: f.display.clone(),
                        column: e.column,
                        message: e.message,
                    });
                    entry.unit = 1;
                    errors.push(entry);
                }
                progress.inc();
            }
            (tally, errors)
        })
        .collect();
    let mut partial = validator.partial();
    partial.files = files.iter().map(|f| f.display.clone()).collect();
    let mut all_errors = Vec::new();
    for (t, e) in results {
        partial.tally.merge(t);
        all_errors.extend(e);
    }
    partial.add_errors(all_errors);
    partial
}
