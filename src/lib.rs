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
//! [`check()`], which finds the files, checks them in parallel and merges the
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
//! The stable API is what this page lists: [`Schema`], [`Validator`]
//! (`new`, `check`, `check_batches`, `partial`), [`Partial`] (`merge`,
//! `report`, JSON), [`Report`] with its renderers in [`report::human`],
//! [`report::json`] and [`report::junit`], whole runs ([`check()`] with a
//! [`Plan`]), distributed runs ([`plan_units`], [`plan_paths`],
//! [`check_units`] over [`WorkUnit`]s), a `datasets.Dataset`'s files
//! ([`check_dataset`]), a stream ([`stream::check_stream`]) and the
//! command line ([`cli`]). Readers, layouts, storage, the scanner and the
//! kernels are private to the crate.

// The modules in three groups, from the command line down; a group imports
// only from itself and the groups below it.
#![warn(unreachable_pub)]

#[cfg(feature = "cli")]
pub mod cli;
pub(crate) mod filter;
#[doc(hidden)]
pub mod fuzzing;
pub(crate) mod init;
pub mod stream;
// The pipeline: plan (this file), discover and open (`source::layouts`,
// `source`), read (`source::formats`, `pairing`, `pixels`), check
// (`scan`, `cache`, `batch`), merge and report.
mod batch;
pub(crate) mod cache;
pub(crate) mod pairing;
mod pixels;
pub(crate) mod progress;
pub mod report;
pub(crate) mod scan;
pub(crate) mod source;
pub(crate) mod violations;
// The kernels, the schema, and the ground.
pub(crate) mod check;
pub mod error;
pub(crate) mod proof;
pub(crate) mod redact;
pub mod schema;

use std::path::{Path, PathBuf};

pub use check::Validator;
pub use error::{Error, Result};
pub use report::{Outcome, Partial, Report};
pub use scan::{ScanOptions, WorkUnit, check_units};
pub use schema::Schema;
pub use source::format::TableAt;
pub use source::layouts::tables::TableSnapshot;

use report::ErrorEntry;

/// This crate's version (the Python package's `__version__` too).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The version with how it was built (`preflight --version`): the git
/// commit when known, and the enabled cargo features (see build.rs).
pub const LONG_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("PREFLIGHT_BUILD_INFO"), ")");

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
    /// Which snapshot of each lakehouse table to read; the latest when `None`.
    pub table_at: Option<TableAt>,
}

/// Runs a whole check: schema, file discovery, scan, report.
pub fn check(plan: &Plan) -> Report {
    match check_partial(plan) {
        Ok((validator, partial)) => partial.report(&validator),
        Err(report) => report,
    }
}

/// [`check()`], stopping short of the report: the validator and the merged
/// partial result (to write with `--partial` for a merge elsewhere). A
/// schema that cannot be used gives the failed report instead.
pub fn check_partial(plan: &Plan) -> Result<(Validator, Partial), Report> {
    let schema = Schema::from_file(&plan.schema).map_err(|e| Report::failed(vec![ErrorEntry::from(&e)]))?;
    check_schema_partial(plan, schema)
}

/// [`check_partial`] with a schema made elsewhere (`check --model` derives
/// one from the model): `plan.schema` only names it in messages. A schema
/// with `dataset.splits` (and no PATHs given) checks each split as a run
/// of its own; their partials merge, each split's class counts kept apart.
pub fn check_schema_partial(plan: &Plan, schema: Schema) -> Result<(Validator, Partial), Report> {
    let (validator, runs) = with_paths(plan, schema)?;
    if let [run] = &runs[..]
        && run.split.is_none()
    {
        let partial = check_paths(plan, &validator, &run.paths, plan.scan.violations.clone());
        return Ok((validator, partial));
    }
    // Splits: each run spills its violations apart (file numbers are a
    // run's own), renumbered into the run's spill once every file is known.
    let mut partial = validator.partial();
    let mut spills = Vec::new();
    for run in runs {
        let spill = match plan.scan.violations {
            Some(_) => match violations::Spill::new() {
                Ok(s) => Some(s),
                Err(e) => {
                    let message = format!("--violations-out: cannot make a spill folder: {e}");
                    return Err(Report::failed(vec![ErrorEntry {
                        file: None,
                        message,
                        unit: 0,
                    }]));
                }
            },
            None => None,
        };
        let checked = check_paths(plan, &validator, &run.paths, spill.clone());
        if let Some(s) = spill {
            spills.push((s, checked.files.clone()));
        }
        partial.merge(match &run.split {
            Some(name) => checked.into_split(name),
            None => checked,
        });
    }
    if let Some(main) = &plan.scan.violations {
        for (spill, files) in spills {
            let file_of: Vec<usize> = files
                .iter()
                .map(|f| partial.files.binary_search(f).unwrap_or(usize::MAX))
                .collect();
            if let Err(e) = main.absorb(&spill, &file_of) {
                partial.add_errors([ErrorEntry {
                    file: None,
                    message: format!("--violations-out: cannot collect the violations: {e}"),
                    unit: 0,
                }]);
            }
        }
    }
    Ok((validator, partial))
}

/// Finds the files `paths` name and checks them, spilling violations to
/// `spill` (`--violations-out`).
fn check_paths(
    plan: &Plan,
    validator: &Validator,
    paths: &[PathBuf],
    spill: Option<std::sync::Arc<violations::Spill>>,
) -> Partial {
    let Found {
        mut files,
        errors: discover_errors,
        notes,
        tables,
    } = find(plan, validator, paths);
    // Masks paired with images: images without a mask join the files.
    let mut opts = ScanOptions {
        violations: spill,
        ..plan.scan.clone()
    };
    let mut pair_errors = Vec::new();
    if let Some(mut pairing) = pairing::Pairing::build(validator, &files, paths, true) {
        files.extend(pairing.orphan_files());
        files.sort_by(|a, b| a.display.cmp(&b.display));
        files.dedup_by(|a, b| a.display == b.display);
        pair_errors = std::mem::take(&mut pairing.errors);
        opts.pairing = Some(std::sync::Arc::new(pairing));
    }
    let mut partial = match &opts.cache {
        // Spilled violations need every file read: the cache does not apply.
        Some(dir) if opts.violations.is_none() => cache::scan_cached(validator, &files, &opts, dir),
        _ => scan::scan(validator, &files, &opts),
    };
    // Errors of paths that matched nothing join the scan's, in file order.
    partial.add_errors(discover_errors);
    partial.add_errors(pair_errors);
    partial.add_notes(notes);
    partial.add_tables(tables);
    partial
}

/// The units of work of a check, for an engine to spread over workers
/// (`preflight plan`): [`plan_paths`] over the plan's paths (or the
/// schema's `dataset.files`), with the compiled schema.
pub fn plan_units(plan: &Plan, split_bytes: u64) -> Result<(Validator, Vec<WorkUnit>), Report> {
    let schema = Schema::from_file(&plan.schema).map_err(|e| Report::failed(vec![ErrorEntry::from(&e)]))?;
    let (validator, runs) = with_paths(plan, schema)?;
    let hints = source::Hints {
        table_at: plan.table_at,
        ..source::Hints::from_schema(validator.schema())
    };
    let mut all = Vec::new();
    for run in runs {
        let mut units = plan_paths_with(&run.paths, split_bytes, &hints);
        for u in &mut units {
            // A mask's pair_with folder is found from the PATH it came from.
            if validator.schema().columns.iter().any(|c| c.pair_with().is_some()) {
                u.root = pairing::root_of(&u.path, &run.paths);
            }
            u.split = run.split.clone();
        }
        all.extend(units);
    }
    Ok((validator, all))
}

/// The units of work for `paths`: each file, and each unit of files of at
/// least `split_bytes` bytes. Paths that match nothing are units that carry
/// their error. The `schema` decides which files that only some schemas
/// use a directory search picks up (token `.bin` files for a `tokens`
/// column; none without a schema). Check them with [`check_units`].
pub fn plan_paths(paths: &[PathBuf], split_bytes: u64, schema: Option<&Schema>) -> Vec<WorkUnit> {
    let hints = schema.map(source::Hints::from_schema).unwrap_or_default();
    plan_paths_with(paths, split_bytes, &hints)
}

/// [`plan_paths`] with the hints a schema gives.
fn plan_paths_with(paths: &[PathBuf], split_bytes: u64, hints: &source::Hints) -> Vec<WorkUnit> {
    let source::layouts::discover::Discovered {
        files,
        errors: discover_errors,
        ..
    } = source::layouts::discover::discover(paths, hints);
    let mut units = scan::plan_units(&files, split_bytes, hints);
    units.extend(discover_errors.iter().map(|e| WorkUnit {
        path: e.file().unwrap_or_default().into(),
        file: e.file().unwrap_or_default(),
        unit: None,
        bytes: 0,
        error: Some(e.message()),
        class: None,
        root: None,
        split: None,
        table: None,
    }));
    units
}

/// Checks a Hugging Face `datasets.Dataset` as its cache files store it:
/// the Arrow files `files` (whole, in table order; `rows` rows in all)
/// read through `indices` (its index mapping; `None`: every row in order),
/// units in parallel on `opts.jobs` threads. The dataset is one file of
/// the report, named `name`; examples name the data file and row of each
/// value, and its dataset index. Files that do not hold `rows` rows are
/// the dataset's error.
pub fn check_dataset(
    validator: &Validator,
    files: &[PathBuf],
    rows: u64,
    indices: Option<Vec<u64>>,
    name: &str,
    opts: &ScanOptions,
) -> Partial {
    use source::formats::ipc::datasets::MappedSource;
    let file = source::layouts::discover::DataFile {
        display: name.to_string(),
        ..source::layouts::discover::DataFile::new(name.into())
    };
    let base: Vec<(String, PathBuf)> = files
        .iter()
        .map(|f| (f.to_string_lossy().into_owned(), f.clone()))
        .collect();
    let opened = MappedSource::over_files(indices, &base).and_then(|s| match s.stored_rows() == rows {
        true => Ok(s),
        false => Err(error::ReadError::new(format!(
            "its data files hold {} rows, but its table has {rows}: not a whole-file table",
            s.stored_rows()
        ))),
    });
    match opened {
        Ok(source) => scan::scan_source(validator, &file, Box::new(source), opts),
        Err(e) => {
            let mut partial = validator.partial();
            partial.files = vec![file.display.clone()];
            partial.add_errors([ErrorEntry {
                file: Some(file.display),
                message: e.to_string(),
                unit: 0,
            }]);
            partial
        }
    }
}

/// What a run's PATHs name.
struct Found {
    /// The files, in report order.
    files: Vec<source::layouts::discover::DataFile>,
    /// Errors of PATHs that matched nothing or could not be listed.
    errors: Vec<ErrorEntry>,
    /// The layout's warnings (an image folder's hidden class), as notes on
    /// the folder.
    notes: Vec<ErrorEntry>,
    /// The lakehouse tables read, each as one snapshot.
    tables: Vec<TableSnapshot>,
}

/// Finds the files `paths` name, as the validator's schema reads them.
fn find(plan: &Plan, validator: &Validator, paths: &[PathBuf]) -> Found {
    let hints = source::Hints {
        table_at: plan.table_at,
        ..source::Hints::from_schema(validator.schema())
    };
    let found = source::layouts::discover::discover(paths, &hints);
    let notes = found
        .notes
        .into_iter()
        .map(|(file, message)| ErrorEntry {
            file: Some(file),
            message,
            unit: 0,
        })
        .collect();
    Found {
        files: found.files,
        errors: found.errors.iter().map(ErrorEntry::from).collect(),
        notes,
        tables: found.tables,
    }
}

/// A plan made ready to scan without splits (`filter`): the schema
/// compiled and the files found.
pub(crate) struct Prepared {
    pub validator: Validator,
    /// The files the PATHs name, in report order.
    pub files: Vec<source::layouts::discover::DataFile>,
    /// Errors of PATHs that matched nothing or could not be listed.
    pub errors: Vec<ErrorEntry>,
}

/// Compiles the plan's schema and finds the files its PATHs name, every
/// split's together (as one run: no class counts).
pub(crate) fn prepare(plan: &Plan) -> Result<Prepared, Report> {
    let schema = Schema::from_file(&plan.schema).map_err(|e| Report::failed(vec![ErrorEntry::from(&e)]))?;
    let (validator, runs) = with_paths(plan, schema)?;
    let paths: Vec<PathBuf> = runs.into_iter().flat_map(|r| r.paths).collect();
    let schema = Schema {
        splits: Vec::new(),
        ..validator.schema().clone()
    };
    let validator = Validator::new(schema, plan.max_examples);
    let found = find(plan, &validator, &paths);
    Ok(Prepared {
        validator,
        files: found.files,
        errors: found.errors,
    })
}

/// The paths of one run: a split's, or all of them.
struct Run {
    /// The split's name (`dataset.splits`), if the run is one.
    split: Option<String>,
    paths: Vec<PathBuf>,
}

/// The schema compiled, and the runs to check: the plan's paths, or the
/// schema's `dataset.files`, or one run per split of `dataset.splits`.
/// PATHs on the command line replace the schema's data, splits included.
fn with_paths(plan: &Plan, mut schema: Schema) -> Result<(Validator, Vec<Run>), Report> {
    let base = schema.base_dir();
    // A URL is not relative to the schema's folder.
    let resolve = |files: &[String]| -> Vec<PathBuf> {
        files
            .iter()
            .map(|f| match source::storage::remote::is_url(Path::new(f)) {
                true => PathBuf::from(f),
                false => base.join(f),
            })
            .collect()
    };
    let runs: Vec<Run> = if !plan.paths.is_empty() {
        schema.splits.clear();
        vec![Run {
            split: None,
            paths: plan.paths.clone(),
        }]
    } else if !schema.splits.is_empty() {
        schema
            .splits
            .iter()
            .map(|s| Run {
                split: Some(s.name.clone()),
                paths: resolve(&s.files),
            })
            .collect()
    } else {
        vec![Run {
            split: None,
            paths: resolve(&schema.files),
        }]
    };
    if runs.iter().all(|r| r.paths.is_empty()) {
        let e = Error::Schema {
            file: plan.schema.clone(),
            key: Some("dataset.files".into()),
            message: "no data to check: give PATHs on the command line or list dataset.files in the schema".into(),
        };
        return Err(Report::failed(vec![ErrorEntry::from(&e)]));
    }
    Ok((Validator::new(schema, plan.max_examples), runs))
}
