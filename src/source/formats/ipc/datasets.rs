//! Hugging Face `datasets` index mappings: the rows a dataset has.
//!
//! `filter`, `shuffle`, `sort`, `train_test_split` (and `select` where it
//! writes one) of a dataset whose data lives in files do not rewrite the
//! data: they write an index mapping (`cache-*.arrow`, one `indices` uint64
//! column) beside it, and the dataset is that mapping applied, `ds[i]` being
//! row `indices[i]` of its data files laid end to end. A mapping records
//! neither the table it orders nor the operation, so its data files are
//! decided by its folder: a `save_to_disk` folder's listed files, or a
//! `load_dataset` cache folder's only table (one split, no other data file);
//! anything else is an error that says so rather than a guess.
//!
//! A mapped dataset is one file of the run, named by its mapping, whose rows
//! are the dataset's indices; each example and spilled violation carries
//! the data file and row that store it ([`crate::check::tally::Origin`]). The
//! checked columns of its data files are read once and held in memory: the
//! rows a shuffle asks for lie anywhere in them.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow::array::{Array, ArrayRef, RecordBatch, UInt64Array};

use super::{IpcSource, is_datasets_indices};
use crate::check::tally::Origin;
use crate::error::ReadError;
use crate::source::read::{BATCH_ROWS, Batch, Source};

/// How a folder holds a `datasets` dataset.
pub(crate) enum Folder {
    /// A `save_to_disk` folder: the data files `state.json` lists, in
    /// order, and the other data files there (a `map`'s cache files).
    Saved { listed: Vec<PathBuf>, others: Vec<PathBuf> },
    /// A `load_dataset` cache folder (a `dataset_info.json`): its index
    /// mappings, and its other `.arrow` files as tables (a split's shards,
    /// or a `map`'s cache file) by name.
    Cache {
        mappings: Vec<PathBuf>,
        tables: Vec<(String, Vec<PathBuf>)>,
    },
}

/// Whether `dir` is a `load_dataset` cache folder (a `dataset_info.json`
/// and no `state.json`).
pub(crate) fn is_cache_folder(dir: &Path) -> bool {
    dir.join("dataset_info.json").is_file() && !dir.join("state.json").is_file()
}

/// Whether `path` is an index mapping of a local `datasets` folder that a
/// run reads as the dataset it maps (`indices` is not a schema column; an
/// object is never one, as its folder is no local directory).
pub(crate) fn is_mapping(path: &Path, columns: &[String]) -> bool {
    !columns.iter().any(|c| c == "indices")
        && path.extension().is_some_and(|e| e == "arrow")
        && path
            .parent()
            .is_some_and(|d| d.join("dataset_info.json").is_file() || d.join("state.json").is_file())
        && is_datasets_indices(path)
}

/// The files the `state.json` of `dir` lists, when it is a `save_to_disk`
/// folder (an object with a `_data_files` list of `{"filename": ...}`).
pub(crate) fn saved_files(dir: &Path) -> Option<Vec<String>> {
    let input = crate::source::storage::Input::open(&dir.join("state.json")).ok()?;
    if input.size() > 16 << 20 {
        return None;
    }
    let text = input.bytes(0..input.size()).ok()?;
    let doc: serde_json::Value = serde_json::from_slice(&text).ok()?;
    doc.get("_data_files")?
        .as_array()?
        .iter()
        .map(|f| f.get("filename").and_then(|n| n.as_str()).map(str::to_string))
        .collect()
}

/// What `dir` holds, when it is a local `datasets` folder.
pub(crate) fn folder(dir: &Path) -> Option<Folder> {
    let saved = saved_files(dir);
    if saved.is_none() && !is_cache_folder(dir) {
        return None;
    }
    let info: serde_json::Value = std::fs::read(dir.join("dataset_info.json"))
        .ok()
        .and_then(|t| serde_json::from_slice(&t).ok())
        .unwrap_or_default();
    let splits: Vec<String> = info
        .get("splits")
        .and_then(|s| s.as_object())
        .map(|s| s.keys().cloned().collect())
        .unwrap_or_default();
    let prefixes: Vec<String> = ["dataset_name", "builder_name"]
        .iter()
        .filter_map(|k| info.get(*k).and_then(|v| v.as_str()).map(str::to_string))
        .collect();
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".arrow") && !n.starts_with('.'))
        .collect();
    names.sort();
    if let Some(listed) = saved {
        let others = names
            .iter()
            .filter(|n| !listed.contains(n))
            .map(|n| dir.join(n))
            .filter(|p| !is_datasets_indices(p))
            .collect();
        let listed = listed.iter().map(|n| dir.join(n)).collect();
        return Some(Folder::Saved { listed, others });
    }
    let mut mappings = Vec::new();
    let mut tables: Vec<(String, Vec<PathBuf>)> = Vec::new();
    for name in names {
        let path = dir.join(&name);
        if is_datasets_indices(&path) {
            mappings.push(path);
            continue;
        }
        let table = split_of(&name, &prefixes, &splits)
            .map(|s| format!("split {s}"))
            .unwrap_or_else(|| format!("{} (a map's or another cache file)", shard_stem(&name)));
        match tables.iter_mut().find(|(t, _)| *t == table) {
            Some((_, files)) => files.push(path),
            None => tables.push((table, vec![path])),
        }
    }
    Some(Folder::Cache { mappings, tables })
}

/// The split a data file of a `load_dataset` cache holds:
/// `{name}-{split}.arrow` or `{name}-{split}-00000-of-00002.arrow`.
fn split_of<'a>(name: &str, prefixes: &[String], splits: &'a [String]) -> Option<&'a str> {
    let stem = name.strip_suffix(".arrow")?;
    let stem = shard_of(stem).unwrap_or(stem);
    prefixes.iter().find_map(|p| {
        let rest = stem.strip_prefix(p.as_str())?.strip_prefix('-')?;
        splits.iter().find(|s| *s == rest).map(String::as_str)
    })
}

/// `x` of a shard named `x-00000-of-00002` (a split's) or
/// `x_00000_of_00002` (a `map` with `num_proc`'s).
fn shard_of(stem: &str) -> Option<&str> {
    let (head, n) = stem.rsplit_once(['-', '_'])?;
    let (head, of) = head.rsplit_once(['-', '_'])?;
    let (head, i) = head.rsplit_once(['-', '_'])?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (of == "of" && digits(n) && digits(i)).then_some(head)
}

/// A file's name without `.arrow` and shard suffix.
fn shard_stem(name: &str) -> &str {
    let stem = name.strip_suffix(".arrow").unwrap_or(name);
    shard_of(stem).unwrap_or(stem)
}

/// The data files the mappings of a `load_dataset` cache folder order: its
/// only table, or why it cannot be told.
pub(crate) fn cache_base(tables: &[(String, Vec<PathBuf>)]) -> Result<Vec<PathBuf>, String> {
    match tables {
        [(_, files)] => Ok(files.clone()),
        [] => Err("the folder holds no data file for it to order".into()),
        _ => {
            let names: Vec<String> = tables
                .iter()
                .map(|(t, f)| format!("{t}: {} file(s)", f.len()))
                .collect();
            Err(format!(
                "which of the folder's tables ({}) it orders is written nowhere (it is in the code that made it)",
                names.join("; ")
            ))
        }
    }
}

/// The data files the mapping at `path` orders, by its folder.
fn base_of(path: &Path) -> Result<Vec<PathBuf>, ReadError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let why = |m: String| {
        ReadError::new(format!(
            "a datasets index mapping (one `indices` column, written by filter/shuffle/sort/select/\
             train_test_split): {m}; name a data file to check it as stored"
        ))
    };
    match folder(dir) {
        Some(Folder::Saved { listed, .. }) if listed.is_empty() => {
            Err(why("its state.json lists no data files".into()))
        }
        Some(Folder::Saved { listed, others }) if others.is_empty() => Ok(listed),
        Some(Folder::Saved { others, .. }) => Err(why(format!(
            "whether it orders the files state.json lists or the {} other data file(s) here (a map's cache) \
             is written nowhere (it is in the code that made it)",
            others.len()
        ))),
        Some(Folder::Cache { tables, .. }) => cache_base(&tables).map_err(why),
        None => Err(why("not in a datasets folder".into())),
    }
}

/// One data file of a mapped dataset.
struct Part {
    display: Arc<str>,
    source: IpcSource,
    /// Row of the table (the files end to end) of its first row.
    start: u64,
}

/// The projected columns of every data file, in table order.
struct Loaded {
    projection: Vec<usize>,
    batches: Vec<RecordBatch>,
    /// Table row of each batch's first row.
    starts: Vec<u64>,
}

/// A dataset that an index mapping defines over its data files; row i is
/// `ds[i]`.
pub(crate) struct MappedSource {
    indices: Vec<u64>,
    parts: Vec<Part>,
    columns: Vec<String>,
    loaded: Mutex<Option<Arc<Loaded>>>,
}

impl MappedSource {
    /// The dataset the mapping at `path` defines over its folder's data.
    pub(crate) fn open(path: &Path) -> Result<MappedSource, ReadError> {
        let base = base_of(path)?;
        MappedSource::open_over(path, &base)
    }

    /// The dataset the mapping at `path` defines over `base` (the data
    /// files of its table, in order). Data files are named in reports as
    /// the mapping's folder joined with their names.
    pub(crate) fn open_over(path: &Path, base: &[PathBuf]) -> Result<MappedSource, ReadError> {
        let indices = read_indices(path)?;
        let dir = path.parent().unwrap_or(Path::new(""));
        let named: Vec<(String, PathBuf)> = base
            .iter()
            .map(|file| {
                let name = file.file_name().map(|n| dir.join(n)).unwrap_or_else(|| file.clone());
                (name.to_string_lossy().into_owned(), file.clone())
            })
            .collect();
        MappedSource::with_indices(indices, &named)
    }

    /// The dataset `indices` defines over the data files `base` (each
    /// named as reports show it, in table order); `None`: every row in
    /// order (a dataset without a mapping).
    pub(crate) fn over_files(indices: Option<Vec<u64>>, base: &[(String, PathBuf)]) -> Result<MappedSource, ReadError> {
        let mut source = MappedSource::with_indices(indices.clone().unwrap_or_default(), base)?;
        if indices.is_none() {
            source.indices = (0..source.stored_rows()).collect();
        }
        Ok(source)
    }

    fn with_indices(indices: Vec<u64>, base: &[(String, PathBuf)]) -> Result<MappedSource, ReadError> {
        let mut parts = Vec::with_capacity(base.len());
        let mut start = 0u64;
        let mut columns: Option<Vec<String>> = None;
        for (shown, file) in base {
            let display: Arc<str> = shown.as_str().into();
            let at = |e: ReadError| ReadError::new(format!("its data file {display}: {e}"));
            let source = IpcSource::open(file).map_err(at)?;
            let rows = source
                .rows()
                .ok_or_else(|| at(ReadError::new("its rows cannot be counted")))?;
            match &columns {
                None => columns = Some(source.columns().to_vec()),
                Some(c) if c != source.columns() => {
                    return Err(at(ReadError::new("its columns differ from the first data file's")));
                }
                Some(_) => {}
            }
            parts.push(Part { display, source, start });
            start = start.saturating_add(rows);
        }
        if let Some((i, &bad)) = indices.iter().enumerate().find(|&(_, &v)| v >= start) {
            return Err(ReadError::new(format!(
                "index {i} maps to row {bad}, but its data files hold {start} rows: this mapping orders other data"
            ))
            .at("indices"));
        }
        Ok(MappedSource {
            indices,
            parts,
            columns: columns.unwrap_or_default(),
            loaded: Mutex::new(None),
        })
    }

    /// Rows of the data files, end to end.
    pub(crate) fn stored_rows(&self) -> u64 {
        self.parts.last().map_or(0, |p| p.start + p.source.rows().unwrap_or(0))
    }

    /// The projected columns of the whole table, read once per projection.
    fn load(&self, projection: &[usize]) -> Result<Arc<Loaded>, ReadError> {
        let mut slot = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = slot.as_ref().filter(|l| l.projection == projection) {
            return Ok(Arc::clone(l));
        }
        let (mut batches, mut starts) = (Vec::new(), Vec::new());
        for part in &self.parts {
            let at = |e: ReadError| ReadError::new(format!("{}: {}", part.display, e));
            for unit in 0..part.source.units() {
                part.source
                    .read(unit, projection, &mut |b| {
                        if b.batch.num_rows() > 0 {
                            starts.push(part.start + b.first_row);
                            batches.push(b.batch);
                        }
                        Ok(())
                    })
                    .map_err(at)?;
            }
        }
        let loaded = Arc::new(Loaded {
            projection: projection.to_vec(),
            batches,
            starts,
        });
        *slot = Some(Arc::clone(&loaded));
        Ok(loaded)
    }
}

/// The `indices` column of a mapping; a null is an error.
fn read_indices(path: &Path) -> Result<Vec<u64>, ReadError> {
    let source = IpcSource::open(path)?;
    // Headers may lie about rows: reserve no more than the file can hold.
    let most = std::fs::metadata(path).map_or(0, |m| m.len() / 8);
    let mut indices = Vec::with_capacity(source.rows().unwrap_or(0).min(most) as usize);
    for unit in 0..source.units() {
        source.read(unit, &[0], &mut |b| {
            let col = b.batch.column(0);
            let values = col
                .as_any()
                .downcast_ref::<UInt64Array>()
                .ok_or_else(|| ReadError::new("its `indices` column is not uint64"))?;
            if values.null_count() > 0 {
                return Err(ReadError::new("its `indices` column holds a null"));
            }
            indices.extend_from_slice(values.values());
            Ok(())
        })?;
    }
    Ok(indices)
}

impl Source for MappedSource {
    fn columns(&self) -> &[String] {
        &self.columns
    }

    fn units(&self) -> usize {
        self.indices.len().div_ceil(BATCH_ROWS).max(1)
    }

    fn read(
        &self,
        unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        let from = unit.saturating_mul(BATCH_ROWS).min(self.indices.len());
        let to = from.saturating_add(BATCH_ROWS).min(self.indices.len());
        if from == to {
            return Ok(());
        }
        let loaded = self.load(projection)?;
        let pairs: Vec<(usize, usize)> = self.indices[from..to]
            .iter()
            .map(|&g| {
                let b = loaded.starts.partition_point(|&s| s <= g).saturating_sub(1);
                (b, (g - loaded.starts[b]) as usize)
            })
            .collect();
        let first = &loaded.batches[0];
        let columns = (0..first.num_columns())
            .map(|c| {
                let arrays: Vec<&dyn Array> = loaded.batches.iter().map(|b| b.column(c).as_ref()).collect();
                arrow::compute::interleave(&arrays, &pairs)
            })
            .collect::<Result<Vec<ArrayRef>, _>>()?;
        let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(pairs.len()));
        let batch = RecordBatch::try_new_with_options(first.schema(), columns, &options)?;
        sink(Batch {
            first_row: from as u64,
            batch,
        })
    }

    fn origin(&self, row: u64) -> Option<Origin> {
        let g = *self.indices.get(usize::try_from(row).ok()?)?;
        let p = self.parts.partition_point(|p| p.start <= g).checked_sub(1)?;
        let part = &self.parts[p];
        Some(Origin {
            file: Arc::clone(&part.display),
            row: g - part.start,
        })
    }

    fn notes(&self) -> Vec<String> {
        let files: Vec<&str> = self.parts.iter().map(|p| &*p.display).collect();
        vec![format!(
            "a datasets index mapping: its {} rows are the dataset's (ds[i], reported as `index` beside the \
             data file and row that store it), over {} ({} rows)",
            self.indices.len(),
            files.join(", "),
            self.stored_rows()
        )]
    }
}
