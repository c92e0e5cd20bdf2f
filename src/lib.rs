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
//! [`check`]. To check Arrow data you already hold (a pipeline step), build a
//! [`Validator`] once and feed it batches:
//!
//! ```no_run
//! use preflight::{Schema, Validator};
//! let schema = Schema::from_file("preflight.yaml".as_ref())?;
//! let validator = Validator::new(schema, 5);
//! let mut tally = validator.tally();
//! # let batch: arrow::array::RecordBatch = unimplemented!();
//! let type_errors = validator.check_batch(&batch, 0, 0, &mut tally);
//! assert!(type_errors.is_empty());
//! println!("{} violations", tally.checks.iter().map(|c| c.violations).sum::<u64>());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod check;
pub mod error;
pub mod init;
pub mod progress;
pub mod report;
pub mod scan;
pub mod schema;
pub mod source;

use std::path::PathBuf;

pub use check::Validator;
pub use error::{Error, Result};
pub use report::{Outcome, Report};
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
        Err(e) => return Report::failed(vec![entry(&e)]),
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
        return Report::failed(vec![entry(&e)]);
    }
    let (files, discover_errors) = source::discover::discover(&paths);
    let validator = Validator::new(schema, plan.max_examples);
    let (tally, scan_errors) = scan::scan(&validator, &files, &plan.scan);
    let names: Vec<String> = files.iter().map(|f| f.display.clone()).collect();
    let errors = discover_errors.iter().chain(&scan_errors).map(entry).collect();
    let warnings = validator.schema().warnings.clone();
    Report::build(validator.schema(), validator.plan(), &names, tally, errors, warnings)
}

fn entry(e: &Error) -> ErrorEntry {
    ErrorEntry {
        file: e.file(),
        message: e.message(),
    }
}
