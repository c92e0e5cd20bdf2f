//! The parallel driver: open every file, split files into units, check the
//! units on a rayon pool, and merge the results in (file, unit) order.
//!
//! Results are collected in unit order and folded sequentially, so counts,
//! examples and errors are the same for every `--jobs` value.

use std::sync::atomic::{AtomicBool, Ordering};

use arrow::array::ArrayRef;
use rayon::prelude::*;

use crate::check::Validator;
use crate::error::Error;
use crate::progress::Progress;
use crate::report::Tally;
use crate::source::discover::DataFile;
use crate::source::{self, Source};

/// How a scan runs.
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    /// Worker threads; 0 means one per core.
    pub jobs: usize,
    /// Decode every value even where metadata proves a column valid.
    pub full_scan: bool,
    /// Draw a progress bar (the caller decides whether stderr is a terminal).
    pub progress: bool,
}

/// A file opened and bound to the schema.
struct Opened {
    source: Box<dyn Source>,
    /// Source column indices to read.
    projection: Vec<usize>,
    /// For each schema column, its position in `projection`.
    positions: Vec<Option<usize>>,
}

/// Set by a Ctrl-C handler; units not yet started are skipped.
pub static CANCELLED: AtomicBool = AtomicBool::new(false);

/// Checks `files`; returns the merged tally and every error, in file order.
pub fn scan(validator: &Validator, files: &[DataFile], opts: &ScanOptions) -> (Tally, Vec<Error>) {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(opts.jobs).build();
    let run = || scan_in_pool(validator, files, opts);
    match pool {
        Ok(pool) => pool.install(run),
        Err(_) => run(),
    }
}

fn scan_in_pool(validator: &Validator, files: &[DataFile], opts: &ScanOptions) -> (Tally, Vec<Error>) {
    let opened: Vec<(Option<Opened>, Vec<Error>)> = files.par_iter().map(|f| open(validator, f)).collect();
    let units: Vec<(usize, usize)> = opened
        .iter()
        .enumerate()
        .flat_map(|(fi, (o, _))| {
            let n = o.as_ref().map_or(0, |o| o.source.units());
            (0..n).map(move |u| (fi, u))
        })
        .collect();
    let progress = Progress::new(opts.progress, units.len() as u64);
    let results: Vec<(Tally, Vec<Error>)> = units
        .par_iter()
        .map(|&(fi, unit)| {
            let out = match &opened[fi].0 {
                Some(o) if !CANCELLED.load(Ordering::Relaxed) => {
                    check_unit(validator, o, &files[fi], fi, unit, opts.full_scan)
                }
                _ => (validator.tally(), Vec::new()),
            };
            progress.inc();
            out
        })
        .collect();
    progress.finish();

    // Fold in (file, unit) order: open errors of a file come before its units'.
    let mut tally = validator.tally();
    let mut errors = Vec::new();
    let mut results = results.into_iter();
    for (o, open_errors) in opened {
        errors.extend(open_errors);
        let n = o.as_ref().map_or(0, |o| o.source.units());
        let mut file_errors: Vec<Error> = Vec::new();
        for (t, errs) in results.by_ref().take(n) {
            tally.merge(t);
            for e in errs {
                // A type problem repeats in every unit: say it once per file.
                if !file_errors.iter().any(|x| x.to_string() == e.to_string()) {
                    file_errors.push(e);
                }
            }
        }
        errors.extend(file_errors);
    }
    (tally, errors)
}

fn open(validator: &Validator, file: &DataFile) -> (Option<Opened>, Vec<Error>) {
    let read_err = |source| Error::Read {
        path: file.display.clone(),
        source,
    };
    let source = match source::guarded(|| source::open(&file.path)) {
        Ok(s) => s,
        Err(e) => return (None, vec![read_err(e)]),
    };
    let names = source.columns();
    let mut projection = Vec::new();
    let mut positions = Vec::new();
    let mut errors = Vec::new();
    for spec in &validator.schema().columns {
        match names.iter().position(|n| *n == spec.name) {
            Some(i) => {
                positions.push(Some(projection.len()));
                projection.push(i);
            }
            None => {
                positions.push(None);
                if !spec.optional {
                    errors.push(Error::MissingColumn {
                        path: file.display.clone(),
                        column: spec.name.clone(),
                    });
                }
            }
        }
    }
    (
        Some(Opened {
            source,
            projection,
            positions,
        }),
        errors,
    )
}

fn check_unit(
    validator: &Validator,
    o: &Opened,
    file: &DataFile,
    fi: usize,
    unit: usize,
    full_scan: bool,
) -> (Tally, Vec<Error>) {
    let mut tally = validator.tally();
    let mut errors: Vec<Error> = Vec::new();
    // Columns that the file's statistics prove valid are not decoded.
    let mut projection = Vec::with_capacity(o.projection.len());
    let mut positions = vec![None; o.positions.len()];
    let mut unit_rows = None;
    for (ci, pos) in o.positions.iter().enumerate() {
        let Some(p) = *pos else { continue };
        let stats = if full_scan {
            None
        } else {
            o.source.unit_stats(unit, o.projection[p])
        };
        match stats {
            Some(s) if validator.proven_by(ci, &s) => {
                validator.note_proven(ci, &s, &mut tally);
                unit_rows = Some(s.rows);
            }
            _ => {
                positions[ci] = Some(projection.len());
                projection.push(o.projection[p]);
            }
        }
    }
    if projection.is_empty()
        && let Some(rows) = unit_rows
    {
        tally.rows += rows;
        return (tally, errors);
    }
    let result = source::guarded(|| {
        o.source.read(unit, &projection, &mut |batch| {
            let columns: Vec<Option<ArrayRef>> = positions
                .iter()
                .map(|p| p.map(|p| batch.batch.column(p).clone()))
                .collect();
            for e in validator.check_columns(&columns, batch.batch.num_rows(), fi, batch.first_row, &mut tally) {
                let err = Error::ColumnType {
                    path: file.display.clone(),
                    column: e.column,
                    message: e.message,
                };
                if !errors.iter().any(|x| x.to_string() == err.to_string()) {
                    errors.push(err);
                }
            }
            if CANCELLED.load(Ordering::Relaxed) {
                return Err(source::ReadError::new("interrupted"));
            }
            Ok(())
        })
    });
    if let Err(e) = result {
        errors.push(Error::Read {
            path: file.display.clone(),
            source: e,
        });
    }
    (tally, errors)
}
