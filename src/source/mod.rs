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
pub mod storage;

use std::fmt;
use std::path::{Path, PathBuf};

use arrow::array::RecordBatch;
use arrow::error::ArrowError;

use crate::check::UnitStats;

/// Rows per batch handed to the checks: large enough to amortise per-batch
/// work, small enough that a few batches per thread stay in cache and memory.
pub const BATCH_ROWS: usize = 64 * 1024;

/// A batch of projected columns and the file row of its first row.
#[derive(Debug, Clone)]
pub struct Batch {
    /// Row within the file (0-based) of the batch's first row.
    pub first_row: u64,
    /// The projected columns, in the order they were asked for.
    pub batch: RecordBatch,
}

/// Where [`Source::read_judged`] hands each batch, with which of its
/// columns the reader proved.
pub type JudgedSink<'a> = dyn FnMut(Batch, &[bool]) -> Result<(), ReadError> + 'a;

/// One data file, opened and ready to be read unit by unit.
pub trait Source: Send + Sync {
    /// Names of the file's top-level columns, in file order.
    fn columns(&self) -> &[String];

    /// How many independently readable units the file has.
    fn units(&self) -> usize;

    /// Reads unit `unit`, projected to the columns at `projection` (indices
    /// into [`Source::columns`]), calling `sink` with each batch in row order.
    /// Batch columns come in the order of `projection`.
    fn read(
        &self,
        unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError>;

    /// Like [`Source::read`], except that the projected columns flagged in
    /// `shapes` may come back as their shape alone: a list array with the
    /// exact row nulls and lengths, whose elements are nulls. The caller asks
    /// for this for list columns whose values it already knows are valid.
    /// Formats that cannot read a shape cheaply read the values.
    fn read_shapes(
        &self,
        unit: usize,
        projection: &[usize],
        shapes: &[bool],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        let _ = shapes;
        self.read(unit, projection, sink)
    }

    /// Like [`Source::read_shapes`], with the value rule of each projected
    /// column as a judge where it has one ([`crate::check::Judge`]). A
    /// reader that proves a batch's values of a column pass its judge may
    /// hand that column as a shape of the stored type (exact row nulls and
    /// lengths, element values meaningless) and flag it in the slice `sink`
    /// gets (indexed like `projection`; empty or false: not proven). Only a
    /// caller that checks flagged columns for their length rules alone may
    /// call this. Formats without such proofs prove nothing.
    fn read_judged(
        &self,
        unit: usize,
        projection: &[usize],
        shapes: &[bool],
        judges: &[Option<crate::check::Judge>],
        sink: &mut JudgedSink<'_>,
    ) -> Result<(), ReadError> {
        let _ = judges;
        self.read_shapes(unit, projection, shapes, &mut |b| sink(b, &[]))
    }

    /// Whether the file holds no rows and has no column list of its own (a
    /// TFRecord file of no records): no column is then missing from it, as
    /// its readers yield nothing and so never miss a feature.
    fn empty(&self) -> bool {
        false
    }

    /// Column statistics for a unit, when the format stores them (Parquet).
    /// `None` means "unknown": the unit must be read.
    fn unit_stats(&self, _unit: usize, _column: usize) -> Option<UnitStats> {
        None
    }

    /// The type column `column` is stored in, as the file declares it (its
    /// header, its schema), when known once opened: for the rule that the
    /// stored type must hold the column's bound, judged on the file's own
    /// type even where a reader widens the values (NumPy's float16) or
    /// statistics spare reading them. `None`: the batches' type is the
    /// stored type.
    fn stored_type(&self, _column: usize) -> Option<arrow::datatypes::DataType> {
        None
    }

    /// What the reader noticed about the file that does not stop its check
    /// but should reach the user as a warning (a lossy JPEG mask, a label
    /// file a loader would drop): asked once the file's units are read, so a
    /// reader may also record what it met while reading. The report sorts
    /// and deduplicates them.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether every unit but the last ends right after an end-of-document
    /// id ([`Hints::eods`]), so that no document crosses units: only then
    /// can the checks judge the documents of an `eod_id` column.
    fn documents(&self) -> bool {
        false
    }

    /// For a source whose rows are not stored in its own file (a
    /// `datasets` index mapping's dataset), where row `row` is stored.
    fn origin(&self, row: u64) -> Option<crate::report::Origin> {
        let _ = row;
        None
    }
}

/// A failure inside one file: what went wrong and, where known, where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    /// The cause, in words.
    pub message: String,
    /// Where inside the file, e.g. "row group 3" or "member labels.npy".
    pub location: Option<String>,
}

impl ReadError {
    /// A read error with a cause and no location.
    pub fn new(message: impl Into<String>) -> Self {
        ReadError {
            message: message.into(),
            location: None,
        }
    }

    /// Adds where in the file the error happened, unless already known.
    pub fn at(mut self, location: impl Into<String>) -> Self {
        if self.location.is_none() {
            self.location = Some(location.into());
        }
        self
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some(loc) => write!(f, "{loc}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ReadError {}

impl From<ArrowError> for ReadError {
    fn from(e: ArrowError) -> Self {
        ReadError::new(e.to_string())
    }
}

impl From<::parquet::errors::ParquetError> for ReadError {
    fn from(e: ::parquet::errors::ParquetError) -> Self {
        ReadError::new(e.to_string())
    }
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        ReadError::new(e.to_string())
    }
}

/// For readers that return projected columns in file order: the projection
/// sorted (what to ask the reader for) and, for each asked column, its
/// position in that sorted list (to put the columns back in the asked order).
pub(crate) fn file_order(projection: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let mut sorted = projection.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let order = projection
        .iter()
        .map(|p| sorted.binary_search(p).unwrap_or(0))
        .collect();
    (sorted, order)
}

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
                columns.iter().any(|c| c == formats::tokenbin::TOKENS)
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
        Some(Format::TokenBin) => formats::tokenbin::open(
            path,
            hints.dtype(formats::tokenbin::TOKENS),
            hints.eod(formats::tokenbin::TOKENS),
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

thread_local! {
    /// Set while [`guarded`] runs: a panic there becomes a file's error.
    static GUARDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, turning a panic inside a reader (a dependency's bug on a
/// hostile file) into that file's error instead of a crash of the run. Such
/// a panic is not printed (it is reported as the file's error); panics
/// elsewhere still reach the previous panic hook.
pub fn guarded<T>(f: impl FnOnce() -> Result<T, ReadError>) -> Result<T, ReadError> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !GUARDED.with(|g| g.get()) {
                previous(info);
            }
        }));
    });
    let was = GUARDED.with(|g| g.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(was));
    match result {
        Ok(r) => r,
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown cause".into());
            Err(ReadError::new(format!("the reader failed on this file ({what})")))
        }
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
