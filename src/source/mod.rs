//! Sources: one reader per file format, all yielding Arrow arrays.
//!
//! Three concerns, three folders: [`storage`] (how bytes are reached),
//! [`formats`] (one decoder per format), [`layouts`] (how paths and names
//! become files and tables). Adding a format touches `formats/` and the
//! [`Format`] list here.
//!
//! Everything after this module sees `RecordBatch`es only; the check kernels
//! never learn which format a value came from. A reader splits its file into
//! *units* (Parquet row groups, IPC record batches, row ranges of a NumPy
//! array) that can be read independently and in parallel, and reads a unit as
//! bounded batches tagged with the row (within the file) of their first row.
//!
//! Readers report problems as [`ReadError`]s, which carry the cause and where
//! inside the file it happened; the scanner adds the file's path.

pub mod formats;
pub mod layouts;
pub mod read;
pub mod storage;

use std::path::{Path, PathBuf};

pub use crate::error::ReadError;
pub use read::{BATCH_ROWS, Batch, JudgedSink, Source, guarded};

/// The formats preflight reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Apache Parquet.
    Parquet,
    /// CSV (comma) or TSV (tab), optionally gzip- or zstd-compressed.
    Csv,
    /// JSON Lines, optionally gzip- or zstd-compressed.
    Jsonl,
    /// Arrow IPC, file or stream (decided by content).
    Ipc,
    /// A NumPy `.npy` array: one column named by the file's stem.
    Npy,
    /// A NumPy `.npz` archive: one column per member.
    Npz,
    /// A MosaicML Streaming shard (`.mds`, or compressed whole), read with
    /// the `index.json` beside it.
    Mds,
    /// A LitData chunk (`chunk-R-I[.zstd].bin` with an `index.json` beside
    /// it), read with that index.
    LitData,
    /// A `.bin` of token ids: a Megatron-LM dataset (an `.idx` beside it),
    /// an llm.c / modded-nanogpt shard (its header) or a raw nanoGPT stream
    /// (`dtype:` from the schema). Searched for only when the schema has a
    /// `tokens` column.
    TokenBin,
    /// An image (`.png`, `.tif`, `.bmp`, `.gif`, `.pgm`, `.jpg`, `.webp`, ...): a segmentation
    /// mask, one row with column `pixels`. Searched for only when the
    /// schema has a `pixels` column.
    Image,
    /// A COCO annotation file (`.json` holding `images`, `annotations` and
    /// `categories`): a table of its annotations. Searched for only when
    /// its content is COCO.
    Coco,
    /// A YOLO label file (`.txt`), with `dataset: {layout: yolo}`.
    Yolo,
    /// A WebDataset tar shard (`.tar`, `.tar.gz`, `.tgz`; compression by
    /// content). A search keeps its shards when one has a member the schema
    /// names ([`Format::provides`]).
    WebDataset,
    /// A TFRecord file of `tf.train.Example` records (`.tfrecord`,
    /// `.tfrecords`, `.gz` of them). A search keeps its files when one has a
    /// feature the schema names ([`Format::provides`]).
    TfRecord,
}

impl Format {
    /// Whether a directory search or glob picks up a file of this format
    /// for a schema with these columns: token `.bin` files only for a
    /// `tokens` column, and never inside an MDS or LitData dataset (a
    /// folder with an `index.json`, whose reader owns its files).
    pub fn searched(self, path: &Path, columns: &[String]) -> bool {
        match self {
            Format::TokenBin => {
                columns.iter().any(|c| c == formats::tokens::TOKENS)
                    && !path.parent().is_some_and(|d| d.join("index.json").is_file())
            }
            Format::Mds => formats::mds::searched(path),
            Format::Image => columns.iter().any(|c| c == formats::image::PIXELS),
            Format::Coco => formats::coco::is_coco(path),
            // WebDataset and TFRecord shards are then kept or dropped
            // together by the search: see `provides`.
            _ => true,
        }
    }

    /// For the shard formats a search keeps or drops as a set (WebDataset,
    /// TFRecord; `None` for the others): whether the file has a column in
    /// `columns`, in its first sample (`deep` false) or in any (`deep` true).
    /// A file that cannot be read answers true, so that its error is reported.
    pub fn provides(self, path: &Path, columns: &[String], deep: bool) -> Option<bool> {
        match self {
            Format::WebDataset => Some(formats::webdataset::provides_any(path, columns, deep)),
            Format::TfRecord => Some(formats::tfrecord::provides_any(path, columns, deep)),
            _ => None,
        }
    }

    /// The format a path's name says it has, if any.
    pub fn from_path(path: &Path) -> Option<Format> {
        // Lossy: a name that is not UTF-8 still has its (ASCII) extension.
        let path = storage::remote::without_query(path);
        let path = path.as_ref();
        let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
        if formats::mds::is_shard_name(&name) {
            return Some(Format::Mds);
        }
        if formats::litdata::is_chunk_name(&name)
            && path.parent().is_some_and(|d| storage::exists(&d.join("index.json")))
        {
            return Some(Format::LitData);
        }
        // A compression suffix wraps the real extension: x.csv.gz, x.jsonl.zst.
        let name = [".gz", ".zst", ".zstd"]
            .iter()
            .find_map(|c| name.strip_suffix(c))
            .unwrap_or(&name);
        let ext = name.rsplit_once('.').map(|(_, e)| e)?;
        match ext {
            "csv" | "tsv" => Some(Format::Csv),
            "jsonl" | "ndjson" => Some(Format::Jsonl),
            "parquet" => Some(Format::Parquet),
            "arrow" | "feather" | "ipc" | "arrows" => Some(Format::Ipc),
            "npy" => Some(Format::Npy),
            "npz" => Some(Format::Npz),
            "bin" => Some(Format::TokenBin),
            e if formats::image::is_image_name(e) => Some(Format::Image),
            "json" => Some(Format::Coco),
            "tar" | "tgz" => Some(Format::WebDataset),
            "tfrecord" | "tfrecords" => Some(Format::TfRecord),
            _ => None,
        }
    }
}

impl Format {
    /// The format a file's first bytes say it has, for a file named on the
    /// command line whose extension says nothing (`x.arrow_file`,
    /// `data.stream`): Parquet, Arrow IPC (file or stream) and NumPy `.npy`
    /// start with their own magic numbers.
    pub fn from_content(path: &Path) -> Option<Format> {
        let mut head = Vec::with_capacity(512);
        let file = std::fs::File::open(path).ok()?;
        std::io::Read::read_to_end(&mut std::io::Read::take(file, 512), &mut head).ok()?;
        let head = &head[..];
        if head.starts_with(b"PAR1") {
            Some(Format::Parquet)
        } else if head.starts_with(b"ARROW1") || head.starts_with(&[0xff; 4]) {
            Some(Format::Ipc)
        } else if head.starts_with(b"\x93NUMPY") {
            Some(Format::Npy)
        } else if formats::tfrecord::looks_like(head) {
            // TF-slim names its shards `train-00000-of-01024`.
            Some(Format::TfRecord)
        } else if head.get(257..262) == Some(b"ustar") {
            Some(Format::WebDataset)
        } else {
            None
        }
    }
}

/// Files that the dataset index in `dir` (an MDS or LitData
/// `index.json`) lists and `dir` lacks, each with why it is an error: a
/// directory search reports them, since no file is there to be found.
pub fn listed_but_missing(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut missing = formats::mds::missing_shards(dir);
    missing.extend(formats::litdata::missing_chunks(dir));
    missing.into_iter().map(|(name, why)| (dir.join(name), why)).collect()
}

/// What the schema tells readers about files whose bytes do not say it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hints {
    /// (column, `dtype:`): how a column's raw token bytes are stored.
    pub dtypes: Vec<(String, String)>,
    /// The schema's column names: a directory search picks up files that
    /// only some schemas use (token `.bin` files) only for these.
    pub columns: Vec<String>,
    /// (column, `eod_id`): where a token stream's documents end, so that
    /// its reader cuts units there.
    pub eods: Vec<(String, i128)>,
    /// `dataset.layout`: image folders, YOLO label files.
    pub layout: Option<crate::schema::Layout>,
    /// (column, `coco_mapping:`): how a COCO file maps category ids.
    pub coco_mappings: Vec<(String, crate::schema::CocoMapping)>,
    /// (column, num_classes) of the schema's class columns: a YOLO file
    /// says whether ultralytics drops it for a class past `nc`.
    pub num_classes: Vec<(String, i128)>,
    /// `dataset.kpt_shape`: YOLO label files are pose labels.
    pub kpt_shape: Option<(usize, usize)>,
}

impl Hints {
    /// The hints a schema gives.
    pub fn from_schema(schema: &crate::schema::Schema) -> Hints {
        Hints {
            dtypes: schema
                .columns
                .iter()
                .filter_map(|c| c.dtype.clone().map(|d| (c.name.clone(), d)))
                .collect(),
            columns: schema.columns.iter().map(|c| c.name.clone()).collect(),
            eods: schema
                .columns
                .iter()
                .filter_map(|c| c.eod_id.map(|e| (c.name.clone(), e)))
                .collect(),
            layout: schema.layout,
            kpt_shape: schema.kpt_shape,
            coco_mappings: schema
                .columns
                .iter()
                .filter_map(|c| c.coco_mapping.clone().map(|m| (c.name.clone(), m)))
                .collect(),
            num_classes: schema
                .columns
                .iter()
                .filter_map(|c| match c.values {
                    crate::schema::ValueRule::Class { num_classes, .. } => Some((c.name.clone(), num_classes)),
                    _ => None,
                })
                .collect(),
        }
    }

    /// The `dtype:` the schema gives column `column`, if any.
    pub fn dtype(&self, column: &str) -> Option<&str> {
        self.dtypes.iter().find(|(c, _)| c == column).map(|(_, d)| d.as_str())
    }

    /// The `eod_id:` the schema gives column `column`, if any.
    pub fn eod(&self, column: &str) -> Option<i128> {
        self.eods.iter().find(|(c, _)| c == column).map(|&(_, e)| e)
    }
}

/// Opens a data file as a [`Source`], choosing the reader by its format.
pub fn open(path: &Path) -> Result<Box<dyn Source>, ReadError> {
    open_with(path, &Hints::default())
}

/// Opens a data file as a [`Source`] with what the schema says about it.
///
/// A local file or an object in storage (a URL) is opened by the same
/// reader, which reaches its bytes through [`storage::Input`] (Parquet
/// through its own range plan, [`storage::Blob`]). An object's format is its
/// name's: content is not sniffed, which would cost a request per object a
/// listing finds.
pub fn open_with(path: &Path, hints: &Hints) -> Result<Box<dyn Source>, ReadError> {
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
    let yolo = hints.layout == Some(crate::schema::Layout::Yolo) && formats::yolo::is_label_name(path);
    let format = if yolo {
        Some(Format::Yolo)
    } else if remote {
        Format::from_path(path)
    } else {
        Format::from_path(path).or_else(|| Format::from_content(path))
    };
    match format {
        Some(Format::Parquet) if remote => Ok(Box::new(formats::parquet::ParquetSource::open_remote(path)?)),
        Some(Format::Parquet) => Ok(Box::new(formats::parquet::ParquetSource::open(path)?)),
        Some(Format::Csv) => Ok(Box::new(formats::csv::CsvSource::open(path)?)),
        Some(Format::Jsonl) => Ok(Box::new(formats::jsonl::JsonlSource::open(path)?)),
        Some(Format::Ipc) if layouts::hfcache::is_mapping(path, &hints.columns) => {
            Ok(Box::new(layouts::hfcache::MappedSource::open(path)?))
        }
        Some(Format::Ipc) => Ok(Box::new(formats::ipc::IpcSource::open(path)?)),
        Some(Format::Npy) => Ok(Box::new(formats::npy::NpySource::open(path)?)),
        Some(Format::Npz) => Ok(Box::new(formats::npy::NpzSource::open(path)?)),
        Some(Format::Mds) => Ok(Box::new(formats::mds::MdsSource::open_with(path, &|c| {
            hints.dtype(c).and_then(formats::shardcol::Elem::from_name)
        })?)),
        Some(Format::LitData) => Ok(Box::new(formats::litdata::LitDataSource::open_with(path, &|c| {
            hints.dtype(c).and_then(formats::shardcol::Elem::from_name)
        })?)),
        Some(Format::TokenBin) => formats::tokens::open(
            path,
            hints.dtype(formats::tokens::TOKENS),
            hints.eod(formats::tokens::TOKENS),
        ),
        Some(Format::Image) => Ok(Box::new(formats::image::ImageSource::open(path, len))),
        Some(Format::Coco) => Ok(Box::new(formats::coco::CocoSource::open_with(path, &|c| {
            hints.coco_mappings.iter().find(|(n, _)| n == c).map(|(_, m)| m.clone())
        })?)),
        Some(Format::Yolo) => {
            let nc = hints.num_classes.iter().find(|(c, _)| c == formats::yolo::COLUMNS[0]);
            Ok(Box::new(formats::yolo::YoloSource::open(
                path,
                nc.map(|(_, n)| *n),
                hints.kpt_shape,
            )?))
        }
        Some(Format::WebDataset) => Ok(Box::new(formats::webdataset::WdsSource::open(path)?)),
        Some(Format::TfRecord) => Ok(Box::new(formats::tfrecord::TfRecordSource::open(path)?)),
        None if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("idx")) => Err(ReadError::new(
            "a Megatron-LM index: name the dataset by its .bin (the pair is one file in reports)",
        )),
        // An object that is not there says so (as a missing local file
        // does), whatever its name.
        None if remote => match storage::remote::Object::open(path)?.size() {
            Ok(_) => Err(ReadError::new("not a file of a known format")),
            Err(e) => Err(e),
        },
        None => Err(ReadError::new("not a file of a known format")),
    }
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
