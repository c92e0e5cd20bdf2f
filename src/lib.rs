//! preflight: catch bad training data before it reaches the GPU.
//!
//! An out-of-range label in `CrossEntropyLoss`, a token id past the end of an
//! embedding table, a sequence longer than the position table: on a GPU each
//! trips a device-side assert that surfaces far from its cause and kills the
//! process. All of it is decidable from the data and a few numbers. This
//! crate checks data files against a declarative [`Schema`] and reports every
//! offending value with its file and row.
//!
//! The library is the product; the `preflight` binary is a thin layer over
//! [`check`], which finds the files, checks them in parallel and merges the
//! results. To check Arrow data you already hold (a pipeline step), compile
//! the schema into a [`Validator`] once and feed it batches; each gives a
//! [`Partial`] result, and partials merge (in any order) into the report that
//! `preflight check` would give for the same rows:
//!
//! ```no_run
//! use preflight::{Schema, Validator};
//! # fn batches() -> Vec<arrow::array::RecordBatch> { unimplemented!() }
//! let schema = Schema::from_file("preflight.yaml".as_ref())?;
//! let validator = Validator::new(schema, 5);
//! let mut result = validator.partial();
//! let mut row = 0;
//! for batch in batches() {
//!     result.merge(validator.check("train.arrows", row, &batch));
//!     row += batch.num_rows() as u64;
//! }
//! let report = result.report(&validator);
//! println!("{} violations; exit status {}", report.violations(), report.outcome().exit_code());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Stable API: [`Schema`], [`Validator`] (`new`, `check`, `partial`),
//! [`Partial`] (`merge`, `report`), [`Report`] with its renderers in
//! [`report::human`] and [`report::json`], [`check`] with [`Plan`]. The
//! kernels' lower-level entry points (`check_columns`, `Tally`) serve the
//! scanner and may change.

pub mod check;
pub mod error;
pub mod init;
pub mod progress;
pub mod report;
pub mod scan;
pub mod schema;
pub mod source;
pub mod stream;

use std::path::PathBuf;

pub use check::Validator;
pub use error::{Error, Result};
pub use report::{Outcome, Partial, Report};
pub use scan::ScanOptions;
pub use schema::Schema;

use report::ErrorEntry;

/// Everything a run needs, decided before any data is read.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The schema file.
    pub schema: PathBuf,
    /// Files, directories or globs; empty means the schema's `dataset.files`.
    pub paths: Vec<PathBuf>,
    /// Examples kept per check.
    pub max_examples: usize,
    /// Threads, statistics, progress.
    pub scan: ScanOptions,
}

/// Runs a whole check: schema, file discovery, scan, report.
pub fn check(plan: &Plan) -> Report {
    let schema = match Schema::from_file(&plan.schema) {
        Ok(s) => s,
        Err(e) => return Report::failed(vec![ErrorEntry::from(&e)]),
    };
    let paths: Vec<PathBuf> = if plan.paths.is_empty() {
        let base = schema.base_dir();
        schema.files.iter().map(|f| base.join(f)).collect()
    } else {
        plan.paths.clone()
    };
    if paths.is_empty() {
        let e = Error::Schema {
            file: plan.schema.clone(),
            key: Some("dataset.files".into()),
            message: "no data to check: give PATHs on the command line or list dataset.files in the schema".into(),
        };
        return Report::failed(vec![ErrorEntry::from(&e)]);
    }
    let (files, discover_errors) = source::discover::discover(&paths);
    let validator = Validator::new(schema, plan.max_examples);
    let (tally, scan_errors) = scan::scan(&validator, &files, &plan.scan);
    // Files are already in report order; their errors too.
    let partial = Partial {
        files: files.iter().map(|f| f.display.clone()).collect(),
        tally,
        errors: discover_errors
            .iter()
            .chain(&scan_errors)
            .map(ErrorEntry::from)
            .collect(),
    };
    partial.report(&validator)
}
