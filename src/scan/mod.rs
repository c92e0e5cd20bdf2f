//! The parallel driver: open every file, split files into units, check the
//! units on a rayon pool, and merge the results in (file, unit) order.
//!
//! Results are collected in unit order and folded sequentially, so counts,
//! examples and errors are the same for every `--jobs` value.

mod folder_rows;

use std::sync::atomic::{AtomicBool, Ordering};

use arrow::array::ArrayRef;
use rayon::prelude::*;

use crate::check::Validator;
use crate::check::tally::Tally;
use crate::error::Error;
use crate::progress::Progress;
use crate::report::{ErrorEntry, Partial};
use crate::schema::labels::{Clash, LabelNames, compare};
use crate::source;
use crate::source::layouts::discover::{DataFile, FolderLabel};
use crate::source::layouts::tables::{Snapshot, TableRef};
use crate::source::read::Source;

/// How a scan runs.
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    /// Worker threads; 0 means one per core.
    pub jobs: usize,
    /// Decode every value even where metadata proves a column valid.
    pub full_scan: bool,
    /// Draw a progress bar (the caller decides whether stderr is a terminal).
    pub progress: bool,
    /// Where every violation is spilled (`--violations-out`), if wanted.
    pub violations: Option<std::sync::Arc<crate::violations::Spill>>,
    /// A result cache folder (`--cache`): unchanged files are not read.
    pub cache: Option<std::path::PathBuf>,
    /// Masks paired with images (`pair_with`), decided before the scan.
    pub pairing: Option<std::sync::Arc<crate::pairing::Pairing>>,
}

/// A file opened and bound to the schema.
struct Opened {
    source: Box<dyn Source>,
    /// Source column indices to read.
    projection: Vec<usize>,
    /// For each schema column, its position in `projection`.
    positions: Vec<Option<usize>>,
    /// Warnings of binding it to the schema (label names the model lacks).
    notes: Vec<String>,
    /// The label names it carries for counted class columns (a run with
    /// splits compares them across splits).
    labels: Vec<LabelNames>,
}

/// Threads of a scan over objects in storage, at least: files opened and
/// units read at once (each unit's ranges are up to ten requests more).
pub(crate) const REMOTE_THREADS: usize = 16;

/// Parquet objects opened at once by a run over storage. Opening one is its
/// footer's request or two, of bounded bytes, so more of them wait on the
/// network together than units are read ([`REMOTE_THREADS`], which bounds
/// the bytes of units in memory).
pub(crate) const REMOTE_OPENS: usize = 64;

/// Set by a Ctrl-C handler; units not yet started are skipped.
pub(crate) static CANCELLED: AtomicBool = AtomicBool::new(false);

/// Checks every unit of `files`.
pub(crate) fn scan(validator: &Validator, files: &[DataFile], opts: &ScanOptions) -> Partial {
    scan_units(validator, files, &vec![None; files.len()], opts)
}

/// Checks the units `only[i]` of file `files[i]` (`None`: all of them);
/// returns their merged result, errors in (file, unit) order.
pub(crate) fn scan_units(
    validator: &Validator,
    files: &[DataFile],
    only: &[Option<Vec<usize>>],
    opts: &ScanOptions,
) -> Partial {
    // Objects in storage: a file or unit mostly waits on its requests, so
    // more of them are read at once than there are cores.
    let remote = files.iter().any(|f| source::storage::remote::is_url(&f.path));
    let threads = if remote {
        opts.jobs.max(REMOTE_THREADS)
    } else {
        opts.jobs
    };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build();
    let run = || scan_in_current_pool(validator, files, only, opts);
    match pool {
        Ok(pool) => pool.install(run),
        Err(_) => run(),
    }
}

/// [`scan_units`] in the calling thread pool (for a caller already
/// spreading files over it, as the cache does).
pub(crate) fn scan_in_current_pool(
    validator: &Validator,
    files: &[DataFile],
    only: &[Option<Vec<usize>>],
    opts: &ScanOptions,
) -> Partial {
    let mut partial = scan_files(validator, files, only, opts);
    partial.add_labels(folder_classes(validator, files));
    partial
}

/// The class folders an image folder's rows name (a run with splits
/// compares them): each split of a valid image folder has an image in
/// every class folder (torchvision refuses empty ones), so its images name
/// them all, however the run was divided.
fn folder_classes(validator: &Validator, files: &[DataFile]) -> Option<LabelNames> {
    let column = source::layouts::image_folder::LABEL;
    let ci = validator.schema().columns.iter().position(|c| c.name == column)?;
    let n = validator.counted_classes(ci);
    let mut names: Vec<Option<String>> = Vec::new();
    for label in files.iter().filter_map(|f| f.label.as_ref()) {
        let Some(i) = usize::try_from(label.index).ok().filter(|&i| i < n) else {
            continue;
        };
        if names.len() <= i {
            names.resize(i + 1, None);
        }
        names[i].get_or_insert_with(|| label.class.to_string());
    }
    (!names.is_empty()).then(|| LabelNames {
        column: column.to_string(),
        file: String::new(),
        from: "its class folders".to_string(),
        names,
    })
}

fn scan_files(validator: &Validator, files: &[DataFile], only: &[Option<Vec<usize>>], opts: &ScanOptions) -> Partial {
    // An image folder's rows are checked without a source per image (see
    // folder_rows); spilled violations take the general path.
    if !files.is_empty()
        && opts.violations.is_none()
        && files.iter().all(|f| f.label.is_some())
        && only.iter().all(|o| o.as_ref().is_none_or(|u| u == &[0]))
    {
        let progress = Progress::new(opts.progress, files.len() as u64);
        let partial = folder_rows::scan_rows(validator, files, &progress);
        progress.finish();
        return partial;
    }
    // An image without a mask (`pair_with`) is a file of the run that is
    // not read: its one unit records the violation.
    let pairing = opts.pairing.as_deref();
    let orphan = |f: &DataFile| pairing.is_some_and(|p| p.orphan(&f.display));
    // What the schema tells the readers, built once for every file.
    let hints = source::Hints::from_schema(validator.schema());
    let open_all = || -> Vec<(Option<Opened>, Vec<Error>)> {
        files
            .par_iter()
            .map(|f| {
                if orphan(f) {
                    (None, Vec::new())
                } else {
                    open(validator, &hints, f)
                }
            })
            .collect()
    };
    let footers_only = files.len() > REMOTE_THREADS
        && files.iter().all(|f| {
            f.label.is_none()
                && source::storage::remote::is_url(&f.path)
                && source::Format::from_path(&f.path).is_some_and(source::Format::opens_by_footer)
        });
    let opened = match footers_only {
        true => match rayon::ThreadPoolBuilder::new().num_threads(REMOTE_OPENS).build() {
            Ok(wide) => wide.install(open_all),
            Err(_) => open_all(),
        },
        false => open_all(),
    };
    let mut opened = opened;
    let mut units: Vec<(usize, usize)> = Vec::new();
    for (fi, (o, errors)) in opened.iter_mut().enumerate() {
        if orphan(&files[fi]) {
            units.push((fi, 0));
            continue;
        }
        let Some(o) = o else { continue };
        let n = o.source.units();
        match only.get(fi).and_then(|o| o.as_ref()) {
            Some(list) => {
                for &u in list {
                    if u < n {
                        units.push((fi, u));
                    } else {
                        // Planned against another version of the file.
                        errors.push(Error::Read {
                            path: files[fi].display.clone(),
                            source: source::ReadError::new(format!(
                                "unit {u} is not in the file (it has {n}): did it change since it was planned?"
                            )),
                        });
                    }
                }
            }
            None => units.extend((0..n).map(|u| (fi, u))),
        }
    }
    let progress = Progress::new(opts.progress, units.len() as u64);
    let results: Vec<(Tally, Vec<Error>)> = units
        .par_iter()
        .map(|&(fi, unit)| {
            let out = match (&opened[fi].0, pairing) {
                (Some(o), _) if !CANCELLED.load(Ordering::Relaxed) => {
                    check_unit(validator, o, &files[fi], fi, unit, opts)
                }
                (None, Some(p)) if orphan(&files[fi]) => check_orphan(validator, p, &files[fi], fi, unit, opts),
                _ => (validator.tally(), Vec::new()),
            };
            progress.inc();
            out
        })
        .collect();
    progress.finish();

    // Fold in (file, unit) order: open errors of a file come before its units'.
    let mut partial = validator.partial();
    partial.files = files.iter().map(|f| f.display.clone()).collect();
    for (_, open_errors) in &opened {
        partial.errors.extend(open_errors.iter().map(ErrorEntry::from));
    }
    for (&(_, unit), (t, errs)) in units.iter().zip(results) {
        partial.tally.merge(t);
        for e in errs {
            let mut entry = ErrorEntry::from(&e);
            entry.unit = 1 + unit as u64;
            partial.errors.push(entry);
        }
    }
    let notes = opened.iter().zip(files).flat_map(|((o, _), f)| {
        let mut notes = o
            .as_ref()
            .map(|o| [&o.notes[..], &o.source.notes()].concat())
            .unwrap_or_default();
        notes.extend(pairing.and_then(|p| p.note(&f.display)));
        notes.into_iter().map(|message| ErrorEntry {
            file: Some(f.display.clone()),
            message,
            unit: 0,
        })
    });
    partial.add_notes(notes);
    partial.add_labels(
        opened
            .iter()
            .flat_map(|(o, _)| o.iter().flat_map(|o| o.labels.iter().cloned())),
    );
    // A type problem repeats in every unit: said once per file, in order.
    let errors = std::mem::take(&mut partial.errors);
    partial.add_errors(errors);
    partial
}

/// One unit of work for a distributed check: a whole file, or one unit (a
/// Parquet row group, an IPC record batch) of a large file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WorkUnit {
    /// The file as reports name it.
    pub file: String,
    /// The path to open.
    pub path: std::path::PathBuf,
    /// The unit within the file; `None` for the whole file.
    pub unit: Option<usize>,
    /// The file's size in bytes (0 when it cannot be read).
    pub bytes: u64,
    /// Set for a path that matched nothing: checking the unit reports this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// For an image of an image folder: (class index, class name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<(i64, String)>,
    /// The directory PATH the file was found under (where a `pair_with`
    /// folder is resolved from).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<std::path::PathBuf>,
    /// The split (`dataset.splits`) the file belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
    /// For a data file of a lakehouse table: the table, pinned at the
    /// version the plan read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<source::layouts::tables::TableRef>,
}

/// Splits `files` into units of work: a file of at least `split_bytes`
/// bytes with several units is one work unit per unit, any other file one
/// work unit. A file that cannot be opened is one unit (checking it reports
/// why). Files are opened with the schema's `hints`, as the check opens
/// them (a token stream's units follow its `eod_id`).
pub(crate) fn plan_units(files: &[DataFile], split_bytes: u64, hints: &source::Hints) -> Vec<WorkUnit> {
    files
        .par_iter()
        .flat_map_iter(|f| {
            let bytes = match source::storage::remote::listed_size(&f.path) {
                Some(size) => size,
                // A named object: one request for its size.
                None if source::storage::remote::is_url(&f.path) => source::storage::remote::Object::open(&f.path)
                    .and_then(|o| o.size())
                    .unwrap_or(0),
                None => std::fs::metadata(&f.path).map(|m| m.len()).unwrap_or(0),
            };
            let units = if f.label.is_some() {
                1
            } else if bytes >= split_bytes {
                source::guarded(|| source::open_with(&f.path, hints)).map_or(1, |s| s.units())
            } else {
                1
            };
            let whole = units <= 1;
            let make = move |unit: Option<usize>| WorkUnit {
                file: f.display.clone(),
                path: f.path.clone(),
                unit,
                bytes,
                error: None,
                class: f.label.as_ref().map(|l| (l.index, l.class.to_string())),
                root: None,
                split: None,
                table: f.opens.as_ref().map(|o| o.0.table()),
            };
            let list: Vec<WorkUnit> = if whole {
                vec![make(None)]
            } else {
                (0..units).map(|u| make(Some(u))).collect()
            };
            list.into_iter()
        })
        .collect()
}

/// Checks some work units (as listed by [`crate::plan_units`]) and returns their
/// partial result; units of a split count into that split.
pub fn check_units(validator: &Validator, units: &[WorkUnit], opts: &ScanOptions) -> Partial {
    if units.iter().all(|u| u.split.is_none()) {
        return check_unsplit(validator, units, opts);
    }
    let mut splits: Vec<Option<&str>> = units.iter().map(|u| u.split.as_deref()).collect();
    splits.sort_unstable();
    splits.dedup();
    let mut partial = validator.partial();
    for split in splits {
        let group: Vec<WorkUnit> = units.iter().filter(|u| u.split.as_deref() == split).cloned().collect();
        let checked = check_unsplit(validator, &group, opts);
        partial.merge(match split {
            Some(name) => checked.into_split(name),
            None => checked,
        });
    }
    partial
}

fn check_unsplit(validator: &Validator, units: &[WorkUnit], opts: &ScanOptions) -> Partial {
    let mut files: Vec<DataFile> = Vec::new();
    let mut only: Vec<Option<Vec<usize>>> = Vec::new();
    let mut unmatched = Vec::new();
    // The tables the units' files belong to, each read once at the version
    // the plan pinned: its snapshot, or why it cannot be read.
    let mut tables: Vec<(TableRef, Snapshot)> = Vec::new();
    for u in units {
        // A unit's name as reports show it (a plan written by hand may
        // hold a URL's credentials).
        let shown = crate::redact::url(&u.file);
        let table_file = match &u.table {
            Some(t) => {
                let at = match tables.iter().position(|(r, _)| r == t) {
                    Some(i) => i,
                    None => {
                        tables.push((t.clone(), source::layouts::tables::reopen(t)));
                        tables.len() - 1
                    }
                };
                match &tables[at].1 {
                    Ok((_, live)) => match live.iter().find(|f| f.path == u.path) {
                        Some(f) => Ok(f.opens.clone()),
                        None => Err(format!("not a live data file of the {}", t.describe())),
                    },
                    Err(e) => Err(format!("its table {}: {e}", t.named())),
                }
            }
            None => Ok(None),
        };
        let error = u.error.clone().or_else(|| table_file.as_ref().err().cloned());
        if let Some(message) = &error {
            unmatched.push(ErrorEntry {
                file: Some(shown.into_owned()),
                message: crate::redact::text(message).into_owned(),
                unit: 0,
            });
            continue;
        }
        let at = match files.iter().position(|f| f.display == shown) {
            Some(i) => i,
            None => {
                files.push(DataFile {
                    display: shown.into_owned(),
                    path: u.path.clone(),
                    label: u.class.as_ref().map(|(index, class)| FolderLabel {
                        index: *index,
                        class: class.as_str().into(),
                    }),
                    opens: table_file.ok().flatten(),
                });
                only.push(Some(Vec::new()));
                files.len() - 1
            }
        };
        match (&mut only[at], u.unit) {
            (Some(list), Some(unit)) => list.push(unit),
            (slot, None) => *slot = None,
            (None, Some(_)) => {}
        }
    }
    // Files in report order, as a scan has them.
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by(|&a, &b| files[a].display.cmp(&files[b].display));
    let files: Vec<DataFile> = order.iter().map(|&i| files[i].clone()).collect();
    let only: Vec<Option<Vec<usize>>> = order.iter().map(|&i| only[i].clone()).collect();
    // Masks pair with images (each unit's own; images without a mask need
    // the whole run's masks and are left to it).
    let mut opts = opts.clone();
    let roots: Vec<std::path::PathBuf> = units.iter().filter_map(|u| u.root.clone()).collect();
    if let Some(mut pairing) = crate::pairing::Pairing::build(validator, &files, &roots, false) {
        unmatched.append(&mut pairing.errors);
        opts.pairing = Some(std::sync::Arc::new(pairing));
    }
    let mut partial = scan_units(validator, &files, &only, &opts);
    partial.add_errors(unmatched);
    partial.add_tables(
        tables
            .into_iter()
            .filter_map(|(_, read)| read.ok().map(|(snapshot, _)| snapshot)),
    );
    partial
}

fn open(validator: &Validator, hints: &source::Hints, file: &DataFile) -> (Option<Opened>, Vec<Error>) {
    let read_err = |source| Error::Read {
        path: file.display.clone(),
        source,
    };
    // An image of an image folder is a row built from the listing.
    // A table's data file opens as its layout says.
    let source: Box<dyn Source> = match (&file.label, &file.opens) {
        (Some(label), _) => Box::new(source::layouts::image_folder::ImageRow::new(label)),
        (None, opens) => match source::guarded(|| match opens {
            Some(opens) => opens.0.open(hints),
            None => source::open_with(&file.path, hints),
        }) {
            Ok(s) => s,
            Err(e) => return (None, vec![read_err(e)]),
        },
    };
    bind(validator, file, source)
}

/// A source bound to the schema: the columns to read, and the required
/// columns it lacks as errors.
fn bind(validator: &Validator, file: &DataFile, source: Box<dyn Source>) -> (Option<Opened>, Vec<Error>) {
    let names = source.columns();
    let mut projection = Vec::new();
    let mut positions = Vec::new();
    let mut errors = Vec::new();
    let mut notes = Vec::new();
    let mut labels = Vec::new();
    for (ci, spec) in validator.schema().columns.iter().enumerate() {
        match names.iter().position(|n| *n == spec.name) {
            Some(i) => {
                // Only a column the model names or a run with splits
                // counts: reading a file's names may parse metadata.
                let counted = validator.counts_classes(ci);
                let data = (spec.model_labels.is_some() || counted)
                    .then(|| source.label_names(i))
                    .flatten();
                if let (true, Some((names, from))) = (counted, &data) {
                    labels.push(LabelNames {
                        column: spec.name.clone(),
                        file: file.display.clone(),
                        from: from.clone(),
                        names: names.clone(),
                    });
                }
                let model = spec.model_labels.as_ref();
                match model
                    .zip(data)
                    .and_then(|(model, (data, from))| compare(&data, &from, model))
                {
                    Some(Clash::Order(message)) => errors.push(Error::ColumnType {
                        path: file.display.clone(),
                        column: spec.name.clone(),
                        message,
                    }),
                    Some(Clash::Absent(message)) => notes.push(format!("column `{}`: {message}", spec.name)),
                    None => {}
                }
                if let Some(message) = source.stored_type(i).and_then(|t| validator.too_narrow(ci, &t)) {
                    errors.push(Error::ColumnType {
                        path: file.display.clone(),
                        column: spec.name.clone(),
                        message,
                    });
                }
                positions.push(Some(projection.len()));
                projection.push(i);
            }
            None => {
                positions.push(None);
                if !spec.optional && !source.empty() {
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
            notes,
            labels,
        }),
        errors,
    )
}

/// Checks a source the caller opened (a `datasets.Dataset`'s rows, from the
/// Python binding), named `file.display` in reports, its units in parallel
/// on `opts.jobs` threads; the same result as a scan of a file so read.
pub(crate) fn scan_source(
    validator: &Validator,
    file: &DataFile,
    source: Box<dyn Source>,
    opts: &ScanOptions,
) -> Partial {
    let run = || {
        let (opened, open_errors) = bind(validator, file, source);
        let mut partial = validator.partial();
        partial.files = vec![file.display.clone()];
        partial.errors.extend(open_errors.iter().map(ErrorEntry::from));
        let Some(o) = opened else { return partial };
        let units: Vec<usize> = (0..o.source.units()).collect();
        let results: Vec<(Tally, Vec<Error>)> = units
            .par_iter()
            .map(|&unit| check_unit(validator, &o, file, 0, unit, opts))
            .collect();
        for (unit, (t, errs)) in results.into_iter().enumerate() {
            partial.tally.merge(t);
            for e in errs {
                let mut entry = ErrorEntry::from(&e);
                entry.unit = 1 + unit as u64;
                partial.errors.push(entry);
            }
        }
        partial.add_labels(o.labels.iter().cloned());
        let notes = [&o.notes[..], &o.source.notes()].concat();
        partial.add_notes(notes.into_iter().map(|message| ErrorEntry {
            file: Some(file.display.clone()),
            message,
            unit: 0,
        }));
        let errors = std::mem::take(&mut partial.errors);
        partial.add_errors(errors);
        partial
    };
    match rayon::ThreadPoolBuilder::new().num_threads(opts.jobs).build() {
        Ok(pool) => pool.install(run),
        Err(_) => run(),
    }
}

/// The one unit of an image without a mask: its violation, spilled with
/// `--violations-out` as every other.
fn check_orphan(
    validator: &Validator,
    pairing: &crate::pairing::Pairing,
    file: &DataFile,
    fi: usize,
    unit: usize,
    opts: &ScanOptions,
) -> (Tally, Vec<Error>) {
    let mut tally = validator.tally();
    let mut spill = opts.violations.as_ref().map(|s| s.unit(fi, unit));
    if spill.is_some() {
        tally.log = Some(Vec::new());
    }
    pairing.check_orphan(validator, &file.display, fi, &mut tally);
    let mut errors = Vec::new();
    if let (Some(mut spill), Some(log)) = (spill.take(), tally.log.as_mut()) {
        let written = spill.write_before(log, None).and_then(|()| spill.finish());
        if let Err(e) = written {
            errors.push(Error::Read {
                path: file.display.clone(),
                source: source::ReadError::new(format!("cannot spill violations: {e}")),
            });
        }
    }
    (tally, errors)
}

fn check_unit(
    validator: &Validator,
    o: &Opened,
    file: &DataFile,
    fi: usize,
    unit: usize,
    opts: &ScanOptions,
) -> (Tally, Vec<Error>) {
    let full_scan = opts.full_scan;
    let pair = opts.pairing.as_deref().and_then(|p| p.pair(&file.display));
    let mut tally = validator.tally();
    let mut errors: Vec<Error> = Vec::new();
    let mut spill = opts.violations.as_ref().map(|s| s.unit(fi, unit));
    if spill.is_some() {
        tally.log = Some(Vec::new());
    }
    if o.source.documents() {
        validator.start_documents(&mut tally);
    }
    // Columns that the file's statistics prove valid are not decoded.
    let mut projection = Vec::with_capacity(o.projection.len());
    let mut positions = vec![None; o.positions.len()];
    // Columns whose values are proven but whose row shapes a length rule needs.
    let mut shaped = vec![false; o.positions.len()];
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
            stats => {
                if let Some(s) = stats.filter(|s| validator.shape_suffices(ci, s)) {
                    validator.note_proven(ci, &s, &mut tally);
                    shaped[ci] = true;
                }
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
    // Per projected column (projection follows schema column order).
    let shapes: Vec<bool> = positions
        .iter()
        .zip(&shaped)
        .filter_map(|(p, &s)| p.map(|_| s))
        .collect();
    // The value rules a reader may prove batches against itself.
    let rules: Vec<Option<crate::proof::Judge>> = positions
        .iter()
        .enumerate()
        .filter_map(|(ci, p)| p.map(|_| validator.judge(ci)))
        .collect();
    let mut as_shape = shaped.clone();
    let src = &o.source;
    let result = source::guarded(|| {
        src.read_judged(unit, &projection, &shapes, &rules, &mut |batch, p| {
            let mut columns: Vec<Option<ArrayRef>> = positions
                .iter()
                .map(|p| p.map(|p| batch.batch.column(p).clone()))
                .collect();
            let rows = batch.batch.num_rows();
            // Encoded images are decoded and checked here, row by row.
            let undecoded = crate::pixels::check_batch(
                validator,
                &batch.batch,
                &positions,
                &mut columns,
                crate::pixels::Site {
                    file: fi,
                    row: batch.first_row,
                    pair,
                },
                &mut tally,
            );
            for (row, whole_file, message) in undecoded {
                let e = source::ReadError::new(message);
                errors.push(Error::Read {
                    path: file.display.clone(),
                    source: if whole_file { e } else { e.at(format!("row {row}")) },
                });
            }
            // A column the reader proved in this batch is checked as a shape.
            for (ci, pos) in positions.iter().enumerate() {
                as_shape[ci] = shaped[ci] || pos.is_some_and(|i| p.get(i) == Some(&true));
            }
            let mut type_errors = validator.stored_type_errors(&columns);
            type_errors.extend(validator.check_columns_shaped(
                &columns,
                &as_shape,
                rows,
                fi,
                batch.first_row,
                &mut tally,
            ));
            for e in type_errors {
                let err = Error::ColumnType {
                    path: file.display.clone(),
                    column: e.column,
                    message: e.message,
                };
                if !errors.iter().any(|x| x.to_string() == err.to_string()) {
                    errors.push(err);
                }
            }
            // A mapped dataset's rows: where each is stored.
            if let Some(log) = tally.log.as_mut() {
                for l in log.iter_mut().filter(|l| l.origin.is_none()) {
                    l.origin = src.origin(l.spot.row);
                }
            }
            // A document's violation names its first row: what lies past
            // the start of a document still open waits for it.
            let open_from = tally.docs.as_ref().and_then(|d| d.open_from());
            if let (Some(spill), Some(log)) = (spill.as_mut(), tally.log.as_mut()) {
                spill
                    .write_before(log, open_from)
                    .map_err(|e| source::ReadError::new(format!("cannot spill violations: {e}")))?;
            }
            if CANCELLED.load(Ordering::Relaxed) {
                return Err(source::ReadError::new("interrupted"));
            }
            Ok(())
        })
    });
    if result.is_ok() {
        validator.finish_documents(fi, &mut tally);
    }
    tally.docs = None;
    for e in tally.checks.iter_mut().flat_map(|c| c.examples.iter_mut()) {
        if e.origin.is_none() {
            e.origin = src.origin(e.row);
        }
    }
    if let Some(log) = tally.log.as_mut() {
        for l in log.iter_mut().filter(|l| l.origin.is_none()) {
            l.origin = src.origin(l.spot.row);
        }
    }
    if let (Some(spill), Some(log)) = (spill.as_mut(), tally.log.as_mut())
        && let Err(e) = spill.write_before(log, None)
    {
        errors.push(Error::Read {
            path: file.display.clone(),
            source: source::ReadError::new(format!("cannot spill violations: {e}")),
        });
    }
    if let Some(spill) = spill
        && let Err(e) = spill.finish()
    {
        errors.push(Error::Read {
            path: file.display.clone(),
            source: source::ReadError::new(format!("cannot spill violations: {e}")),
        });
    }
    if let Err(e) = result {
        errors.push(Error::Read {
            path: file.display.clone(),
            source: e,
        });
    }
    (tally, errors)
}
