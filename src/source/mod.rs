//! Sources: one reader per file format, all yielding Arrow arrays.
//!
//! Three concerns, three folders: [`storage`] (how bytes are reached),
//! [`formats`] (one decoder per format), [`layouts`] (how paths and names
//! become files and tables). A format describes itself once, as a
//! [`Format`] in its folder, and `formats::ALL` lists it: nothing here
//! names one.
//!
//! Everything after this module sees `RecordBatch`es only; the check kernels
//! never learn which format a value came from. A reader splits its file into
//! *units* (Parquet row groups, IPC record batches, row ranges of a NumPy
//! array) that can be read independently and in parallel, and reads a unit as
//! bounded batches tagged with the row (within the file) of their first row.
//!
//! Readers report problems as [`ReadError`]s, which carry the cause and where
//! inside the file it happened; the scanner adds the file's path.

pub(crate) mod format;
pub(crate) mod formats;
pub(crate) mod layouts;
pub(crate) mod read;
pub(crate) mod storage;

use std::path::{Path, PathBuf};

pub(crate) use crate::error::ReadError;
pub(crate) use format::{FileName, Format, Hints, Opening};
pub(crate) use read::{Source, guarded};

impl Format {
    /// The format a path's name says it has, if any.
    pub(crate) fn from_path(path: &Path) -> Option<Format> {
        Format::named(path, &Hints::default())
    }

    /// The format a path's name says it has, with the schema's hints (a
    /// `.txt` of a `layout: yolo` dataset is a YOLO label file).
    pub(crate) fn named(path: &Path, hints: &Hints) -> Option<Format> {
        let path = storage::remote::without_query(path);
        let path = path.as_ref();
        let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
        let bare = [".gz", ".zst", ".zstd"]
            .iter()
            .find_map(|c| name.strip_suffix(c))
            .unwrap_or(&name);
        let name = FileName {
            path,
            name: &name,
            ext: bare.rsplit_once('.').map(|(_, e)| e),
        };
        formats::ALL.iter().copied().find(|f| f.names(&name, hints))
    }

    /// The format a local file's first bytes say it has, for a file named on
    /// the command line whose extension says nothing (`x.arrow_file`,
    /// `data.stream`).
    pub(crate) fn from_content(path: &Path) -> Option<Format> {
        let mut head = Vec::with_capacity(512);
        let file = std::fs::File::open(path).ok()?;
        std::io::Read::read_to_end(&mut std::io::Read::take(file, 512), &mut head).ok()?;
        formats::ALL.iter().copied().find(|f| f.sniffs(&head))
    }
}

/// Files that the dataset index in `dir` (an MDS or LitData
/// `index.json`) lists and `dir` lacks, each with why it is an error: a
/// directory search reports them, since no file is there to be found.
pub(crate) fn listed_but_missing(dir: &Path) -> Vec<(PathBuf, String)> {
    formats::ALL
        .iter()
        .flat_map(|f| f.missing_in(dir))
        .map(|(name, why)| (dir.join(name), why))
        .collect()
}

/// Why `dir` is a dataset whose index (an MDS or LitData `index.json`)
/// lists no file, so that a search finding nothing there says so.
pub(crate) fn empty_index(dir: &Path) -> Option<&'static str> {
    formats::ALL.iter().find_map(|f| f.empty_in(dir))
}

/// Opens a data file as a [`Source`], choosing the reader by its format.
pub(crate) fn open(path: &Path) -> Result<Box<dyn Source>, ReadError> {
    open_with(path, &Hints::default())
}

/// Opens a data file as a [`Source`] with what the schema says about it.
///
/// A local file or an object in storage (a URL) is opened by the same
/// reader, which reaches its bytes through `storage::Input` (Parquet
/// through its own range plan, `storage::Blob`). An object's format is its
/// name's: content is not sniffed, which would cost a request per object a
/// listing finds.
pub(crate) fn open_with(path: &Path, hints: &Hints) -> Result<Box<dyn Source>, ReadError> {
    let remote = storage::remote::is_url(path);
    let len = if remote {
        storage::remote::listed_size(path).unwrap_or(0)
    } else {
        // A FIFO, socket or device named like a data file would block or
        // never end; only regular files (or links to them) are read.
        let meta = std::fs::metadata(path)?;
        if !meta.is_file() {
            let what = if meta.is_dir() {
                "a directory"
            } else {
                "not a regular file"
            };
            return Err(ReadError::new(format!("{what}: preflight reads regular files only")));
        }
        meta.len()
    };
    let format = match remote {
        true => Format::named(path, hints),
        false => Format::named(path, hints).or_else(|| Format::from_content(path)),
    };
    if let Some(format) = format {
        return format.open(path, &Opening { remote, len, hints });
    }
    let ext = path.extension().map(|e| e.to_string_lossy()).unwrap_or_default();
    if let Some(why) = formats::ALL.iter().find_map(|f| f.companion_of(&ext)) {
        return Err(ReadError::new(why));
    }
    // An object that is not there says so (as a missing local file does),
    // whatever its name.
    if remote {
        storage::remote::Object::open(path)?.size()?;
    }
    Err(ReadError::new("not a file of a known format"))
}

/// The Python with the foreign writers (numpy, pyarrow) that unit tests use
/// to write real files: run-tests.sh exports it.
#[cfg(test)]
pub(crate) fn test_python() -> std::path::PathBuf {
    match std::env::var_os("PREFLIGHT_TEST_PYTHON") {
        Some(p) => p.into(),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-venv/bin/python"),
    }
}
