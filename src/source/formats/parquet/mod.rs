//! Parquet: the footer is read once, each row group is a unit of work, and
//! only the columns the schema names are decoded.
//!
//! Two shortcuts spare decoding: row-group statistics that prove a column
//! valid (the scanner asks [`Source::unit_stats`]), and, for a list column
//! whose values are proven but whose lengths a rule needs, the row shapes
//! read from the pages' levels alone ([`Source::read_shapes`], `shape`).
//!
//! A file in object storage is read through the same code over fetched
//! byte ranges (`Blob`): the footer with one request for its tail
//! (`footer_request`; a second only for a larger footer), then per row
//! group only the projected column chunks, coalesced. Statistics prove a
//! row group from the footer alone; a dictionary proves one from its
//! dictionary page alone when the footer's encoding statistics say every
//! data page is dictionary-encoded. The bytes of the footer's request are
//! kept (a small object came whole with it), and a column read for its
//! shape alone has only its page headers and v2 levels fetched
//! (`ParquetSource::level_prefix`).
//!
//! What must be decoded is decoded by preflight's own reader for integer
//! columns, flat or in top-level lists (`values`, over `hybrid` and
//! `delta`), and by arrow-rs for everything else. Both build the same
//! arrays, so the checks and the report do not depend on the path; setting
//! `PREFLIGHT_PARQUET_DECODER=arrow-rs` sends every column through arrow-rs
//! (to compare the two).

mod delta;
mod footer;
mod hybrid;
mod pages;
mod patched;
mod shape;
mod thrift;
mod values;

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::basic::{Repetition, SortOrder, Type as PhysicalType};
use parquet::file::statistics::Statistics;

use crate::error::ReadError;
use crate::proof::{Judge, UnitStats};
use crate::source::format::Format;
use crate::source::read::{BATCH_ROWS, Batch, JudgedSink, Source};
use crate::source::storage::remote::Object;
use crate::source::storage::{Blob, Fetched};
use bytes::Bytes;
use pages::PageWalker;
use patched::Patched;
use shape::ShapeReader;
use values::{Plan, ValueReader};

/// Apache Parquet: `.parquet`, or a file starting `PAR1`. From storage it
/// opens by its footer alone.
pub(crate) const FORMAT: Format = Format::new(
    "parquet",
    |n, _| n.ext == Some("parquet"),
    |path, o| {
        Ok(Box::new(match o.remote {
            true => ParquetSource::open_remote(path)?,
            false => ParquetSource::open(path)?,
        }))
    },
)
.sniffed(|head| head.starts_with(b"PAR1"))
.footer_opens();

/// Rows per decoded batch. Small batches keep the decoder's buffers in
/// cache (measured on 3M rows of token lists: 1K rows a batch took 2.1 s and
/// 33 MB, 64K rows 8.1 s and 440 MB); list rows hold hundreds of elements.
const LIST_BATCH_ROWS: usize = 1024;
const SCALAR_BATCH_ROWS: usize = 8 * 1024;

/// Bytes of an object's tail fetched with its first request when its size
/// is not known (a named object: the answer gives it) or is no larger than
/// this (the object comes whole, and nothing after costs a request).
pub(crate) const FOOTER_PREFETCH: u64 = 256 * 1024;

/// The tail asked of a larger listed object: the footer of ordinary files
/// (a few KiB per row group and column) fits, so their footer costs one
/// request and a quarter of the bytes of [`FOOTER_PREFETCH`] (what a
/// response's bytes cost on a real store: bandwidth, egress).
const FOOTER_GUESS: u64 = 64 * 1024;

/// The largest footer this process has met (with a margin), up to
/// [`FOOTER_SEEN_MAX`]: later tails ask for that much. The shards of a
/// dataset come from one writer and their footers are alike, so a dataset
/// whose footers pass [`FOOTER_GUESS`] pays a second request on the files
/// opened before the first footer was read, not on every file.
static FOOTER_SEEN: AtomicU64 = AtomicU64::new(0);
const FOOTER_SEEN_MAX: u64 = 1024 * 1024;

/// The tail to ask of an object whose size is `listed`.
fn footer_request(listed: Option<u64>) -> u64 {
    match listed {
        Some(size) if size > FOOTER_PREFETCH => FOOTER_GUESS.max(FOOTER_SEEN.load(Ordering::Relaxed)),
        _ => FOOTER_PREFETCH,
    }
}

/// Records a footer of `len` bytes (with its 8-byte trailer) for
/// [`footer_request`]: an eighth more, so that the next shard's slightly
/// longer footer fits too.
fn footer_met(len: u64) {
    let want = (len + 8).saturating_add(len / 8).next_multiple_of(4096);
    FOOTER_SEEN.fetch_max(want.min(FOOTER_SEEN_MAX), Ordering::Relaxed);
}

/// A column chunk no larger than this is fetched whole even when only its
/// levels are needed: its bytes cost less than the round trips of a walk
/// over its pages (the same trade as the coalescing of nearby ranges).
const LEVEL_WALK_MIN: u64 = 1024 * 1024;

/// Bytes fetched at each page start of a level walk: the page header and,
/// for the pages of ordinary files, the levels behind it.
const LEVEL_PROBE: u64 = 8 * 1024;

/// Bytes of footer requests kept by the open sources of a process at once
/// ([`Held`]): a scan opens every file before it reads their units, so the
/// bytes of a long listing's files are kept up to this much, and the
/// files past it fetch their ranges as before.
const HELD_BUDGET: u64 = 256 * 1024 * 1024;

/// Bytes of footer requests kept now (see [`HELD_BUDGET`]).
static HELD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The bytes an object's footer request brought (`(offset, bytes)`, running
/// to the object's end), kept within [`HELD_BUDGET`]: all of a small
/// object, which is then not fetched again.
struct Held {
    parts: Vec<(u64, Bytes)>,
    counted: u64,
}

impl Held {
    /// `parts` kept if the budget allows, else nothing.
    fn keep(parts: Vec<(u64, Bytes)>) -> Held {
        use std::sync::atomic::Ordering;
        let n: u64 = parts.iter().map(|(_, b)| b.len() as u64).sum();
        let kept = HELD
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                held.checked_add(n).filter(|&t| t <= HELD_BUDGET)
            })
            .is_ok();
        match kept {
            true => Held { parts, counted: n },
            false => Held {
                parts: Vec::new(),
                counted: 0,
            },
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        HELD.fetch_sub(self.counted, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Where a Parquet file's bytes are.
enum Origin {
    Local(PathBuf),
    /// An object, with the bytes its footer's request brought.
    Remote {
        object: Object,
        held: Held,
    },
}

/// A Parquet file whose metadata has been read.
pub(crate) struct ParquetSource {
    origin: Origin,
    /// The file's size in bytes.
    size: u64,
    meta: ArrowReaderMetadata,
    columns: Vec<String>,
    /// File row of each row group's first row.
    first_rows: Vec<u64>,
    /// For each top-level column, its leaf column when it has exactly one.
    leaf_of: Vec<Option<usize>>,
    /// The writer compressed v2 data pages whatever their headers say.
    v2_always_compressed: bool,
    /// The writer's integer `min_value`/`max_value` are exact even when
    /// not flagged so (see [`writes_exact_integer_stats`]).
    exact_integer_stats: bool,
    /// Integer columns are decoded by `values` (unless the environment
    /// asks for arrow-rs everywhere).
    own_values: bool,
}

/// A column read some way other than through arrow-rs.
enum ColumnReader<'f> {
    Shape(Box<ShapeReader<'f>>),
    I32(ValueReader<'f, i32>),
    I64(ValueReader<'f, i64>),
}

impl ColumnReader<'_> {
    /// The next `n` rows, and whether the reader proved their values
    /// against the column's judge (then the array is a shape, see `values`).
    fn next_rows(&mut self, n: usize) -> Result<(ArrayRef, bool), ReadError> {
        match self {
            ColumnReader::Shape(r) => Ok((r.next_rows(n)?, false)),
            ColumnReader::I32(r) => r.next_rows(n),
            ColumnReader::I64(r) => r.next_rows(n),
        }
    }

    fn finish(&mut self) -> Result<(), ReadError> {
        match self {
            ColumnReader::Shape(r) => r.finish(),
            ColumnReader::I32(r) => r.finish(),
            ColumnReader::I64(r) => r.finish(),
        }
    }

    /// Rows per batch this reader prefers, when it sets the batch size.
    fn batch_rows(&self) -> usize {
        match self {
            ColumnReader::Shape(_) => BATCH_ROWS,
            ColumnReader::I32(r) => r.batch_rows(),
            ColumnReader::I64(r) => r.batch_rows(),
        }
    }
}

impl ParquetSource {
    /// Opens `path` and reads its footer.
    pub(crate) fn open(path: &Path) -> Result<ParquetSource, ReadError> {
        let file = Blob::open(path)?;
        ParquetSource::with_footer(Origin::Local(path.to_path_buf()), &file)
    }

    /// Opens an object in storage and reads its footer: one ranged request
    /// for its tail, a second only when the footer is larger than that.
    pub(crate) fn open_remote(url: &Path) -> Result<ParquetSource, ReadError> {
        let object = Object::open(url)?;
        let (size, tail) = object.tail(footer_request(object.listed_size()))?;
        let tail_at = size - tail.len() as u64;
        let mut held = Vec::with_capacity(2);
        if let Some(len) = tail.len().checked_sub(8).and_then(|i| tail.get(i..i + 4)) {
            let footer = u64::from(u32::from_le_bytes([len[0], len[1], len[2], len[3]]));
            if footer + 8 <= size {
                footer_met(footer);
            }
            let start = size.saturating_sub(8 + footer);
            if start < tail_at {
                let rest = object.ranges(std::slice::from_ref(&(start..tail_at)))?;
                held.push((start, rest.into_iter().next().unwrap_or_default()));
            }
        }
        held.push((tail_at, tail));
        let mut fetched = Fetched::new(size);
        for (at, bytes) in &held {
            fetched.add(*at, bytes.clone());
        }
        let file = Blob::Fetched(Arc::new(fetched));
        let held = Held::keep(held);
        ParquetSource::with_footer(Origin::Remote { object, held }, &file)
    }

    /// Reads the footer of `file`, which is at `origin`.
    fn with_footer(origin: Origin, file: &Blob) -> Result<ParquetSource, ReadError> {
        let size = file.size()?;
        let meta = match ArrowReaderMetadata::load(file, ArrowReaderOptions::new()) {
            Ok(meta) => meta,
            Err(e) => match footer::lenient_metadata(file) {
                Some(meta) => ArrowReaderMetadata::try_new(Arc::new(meta), ArrowReaderOptions::new())?,
                None => return Err(e.into()),
            },
        };
        let meta = match footer::normalized(meta.metadata()) {
            Some(fixed) => ArrowReaderMetadata::try_new(Arc::new(fixed), ArrowReaderOptions::new())?,
            None => meta,
        };
        let columns = meta.schema().fields().iter().map(|f| f.name().clone()).collect();
        let mut first_rows = Vec::with_capacity(meta.metadata().num_row_groups());
        let mut next = 0u64;
        for rg in meta.metadata().row_groups() {
            first_rows.push(next);
            let rows = u64::try_from(rg.num_rows())
                .map_err(|_| ReadError::new(format!("row group claims {} rows", rg.num_rows())))?;
            next = next
                .checked_add(rows)
                .ok_or_else(|| ReadError::new("row counts overflow"))?;
        }
        let descr = meta.parquet_schema();
        let mut leaves: Vec<Vec<usize>> = vec![Vec::new(); descr.root_schema().get_fields().len()];
        for leaf in 0..descr.num_columns() {
            if let Some(l) = leaves.get_mut(descr.get_column_root_idx(leaf)) {
                l.push(leaf);
            }
        }
        let leaf_of = leaves
            .iter()
            .map(|l| if l.len() == 1 { Some(l[0]) } else { None })
            .collect();
        let v2_always_compressed = patched::v2_always_compressed(meta.metadata());
        let exact_integer_stats = writes_exact_integer_stats(meta.metadata().file_metadata().created_by());
        Ok(ParquetSource {
            origin,
            size,
            meta,
            columns,
            first_rows,
            leaf_of,
            v2_always_compressed,
            exact_integer_stats,
            own_values: std::env::var_os("PREFLIGHT_PARQUET_DECODER").is_none_or(|v| v != "arrow-rs"),
        })
    }

    /// Whether column `column` of row group `unit` can be read as shapes
    /// (a top-level list of integers in a codec the page walker opens);
    /// if so, its leaf and the definition level of its elements.
    fn shape_leaf(&self, unit: usize, column: usize) -> Option<(usize, i16)> {
        let field = self.meta.schema().fields().get(column)?;
        if !plain_integers(field.data_type()) {
            return None;
        }
        let (leaf, element_def) = self.list_leaf(column)?;
        let chunk = self.meta.metadata().row_groups().get(unit)?.columns().get(leaf)?;
        pages::supported(chunk.compression()).then_some((leaf, element_def))
    }

    /// Whether column `column` is a top-level list with one leaf at
    /// repetition level 1; if so, its leaf and the definition level of its
    /// elements.
    fn list_leaf(&self, column: usize) -> Option<(usize, i16)> {
        let field = self.meta.schema().fields().get(column)?;
        if !matches!(field.data_type(), DataType::List(_) | DataType::LargeList(_)) {
            return None;
        }
        let leaf = (*self.leaf_of.get(column)?)?;
        let schema = self.meta.parquet_schema();
        let descr = schema.column(leaf);
        if descr.max_rep_level() != 1 || descr.max_def_level() > 255 {
            return None;
        }
        // The definition level of the repeated node: walk the path from the
        // top-level field down to the leaf.
        let mut node = schema.get_column_root(leaf);
        let (mut level, mut element_def) = (0i16, None);
        for (depth, name) in descr.path().parts().iter().enumerate() {
            if depth > 0 {
                if !node.is_group() {
                    return None;
                }
                node = node.get_fields().iter().find(|f| f.name() == name)?;
            }
            let info = node.get_basic_info();
            match info.has_repetition().then(|| info.repetition()) {
                Some(Repetition::OPTIONAL) => level += 1,
                Some(Repetition::REPEATED) => {
                    level += 1;
                    element_def = Some(level);
                }
                _ => {}
            }
        }
        (level == descr.max_def_level()).then_some((leaf, element_def?))
    }

    /// How `values` decodes column `column` of row group `unit`, when it
    /// can: integers read as arrow-rs reads them (INT32 as Int8..UInt32,
    /// INT64 as Int64/UInt64), flat or in a top-level list, in a codec
    /// whose pages open whole, every data page in PLAIN, a dictionary
    /// encoding or DELTA_BINARY_PACKED (from the page headers).
    fn value_plan(&self, file: &Blob, unit: usize, column: usize) -> Option<Plan> {
        if !self.own_values {
            return None;
        }
        let field = self.meta.schema().fields().get(column)?;
        let leaf = (*self.leaf_of.get(column)?)?;
        let descr = self.meta.parquet_schema().column(leaf);
        let wide = match descr.physical_type() {
            PhysicalType::INT32 => false,
            PhysicalType::INT64 => true,
            _ => return None,
        };
        let readable = |t: &DataType| {
            if wide {
                matches!(t, DataType::Int64 | DataType::UInt64)
            } else {
                matches!(
                    t,
                    DataType::Int8
                        | DataType::Int16
                        | DataType::Int32
                        | DataType::UInt8
                        | DataType::UInt16
                        | DataType::UInt32
                )
            }
        };
        let (target, list) = match field.data_type() {
            DataType::List(f) | DataType::LargeList(f) if readable(f.data_type()) => {
                let (_, element_def) = self.list_leaf(column)?;
                let large = matches!(field.data_type(), DataType::LargeList(_));
                let list = values::ListPlan {
                    element_def,
                    large,
                    field: f.clone(),
                };
                (f.data_type().clone(), Some(list))
            }
            t if readable(t) => {
                if descr.max_rep_level() != 0 || descr.max_def_level() > 1 {
                    return None;
                }
                (t.clone(), None)
            }
            _ => return None,
        };
        let chunk = self.meta.metadata().row_groups().get(unit)?.columns().get(leaf)?;
        if !pages::whole_supported(chunk.compression()) {
            return None;
        }
        let encodings = self.pages(file, unit, leaf).ok()?.data_encodings().ok()?;
        let known = [
            values::PLAIN,
            values::PLAIN_DICTIONARY,
            values::DELTA_BINARY_PACKED,
            values::RLE_DICTIONARY,
        ];
        if !encodings.iter().all(|e| known.contains(e)) {
            return None;
        }
        Some(Plan {
            leaf,
            target,
            list,
            max_rep: descr.max_rep_level(),
            max_def: descr.max_def_level(),
        })
    }

    fn value_reader<'f>(
        &self,
        file: &'f Blob,
        unit: usize,
        plan: Plan,
        judge: Option<Judge>,
    ) -> Result<ColumnReader<'f>, ReadError> {
        let pages = self
            .pages(file, unit, plan.leaf)?
            .v2_always_compressed(self.v2_always_compressed);
        let wide = self.meta.parquet_schema().column(plan.leaf).physical_type() == PhysicalType::INT64;
        let rows = self.footer_rows(unit);
        Ok(if wide {
            ColumnReader::I64(ValueReader::new(pages, plan, rows, judge))
        } else {
            ColumnReader::I32(ValueReader::new(pages, plan, rows, judge))
        })
    }

    /// The page headers of the projected column chunks, read and checked
    /// before the parquet crate decodes them (see `PageWalker::vet`); for a
    /// writer that flagged compressed v2 pages as uncompressed, where those
    /// flags are (see `patched`).
    fn vet_pages(&self, file: &Blob, unit: usize, projection: &[usize]) -> Result<Vec<u64>, ReadError> {
        let schema = self.meta.parquet_schema();
        let mut flags = Vec::new();
        for leaf in 0..schema.num_columns() {
            if projection.contains(&schema.get_column_root_idx(leaf)) {
                self.pages(file, unit, leaf)?.vet()?;
                let compressed = self.meta.metadata().row_group(unit).column(leaf).compression();
                if self.v2_always_compressed && compressed != parquet::basic::Compression::UNCOMPRESSED {
                    flags.extend(self.pages(file, unit, leaf)?.uncompressed_v2_flags()?);
                }
            }
        }
        Ok(flags)
    }

    /// The pages of leaf column `leaf` in row group `unit`.
    fn pages<'f>(&self, file: &'f Blob, unit: usize, leaf: usize) -> Result<PageWalker<'f>, ReadError> {
        let chunk = self.meta.metadata().row_group(unit).column(leaf);
        let descr = self.meta.parquet_schema().column(leaf);
        let start = chunk_start(chunk);
        let (Ok(start), Ok(len)) = (u64::try_from(start), u64::try_from(chunk.compressed_size())) else {
            return Err(ReadError::new("a column chunk has a negative offset or size"));
        };
        PageWalker::new(
            file,
            start,
            len,
            chunk.compression(),
            descr.max_rep_level(),
            descr.max_def_level(),
        )
    }

    fn shape_reader<'f>(
        &self,
        file: &'f Blob,
        unit: usize,
        leaf: usize,
        element_def: i16,
    ) -> Result<ShapeReader<'f>, ReadError> {
        let descr = self.meta.parquet_schema().column(leaf);
        ShapeReader::new(
            self.pages(file, unit, leaf)?,
            descr.max_rep_level(),
            descr.max_def_level(),
            element_def,
            self.footer_rows(unit),
        )
    }

    /// Exact integer statistics only: signed sort order, `min_value` /
    /// `max_value` (never the deprecated fields) marked exact or written by a
    /// writer known to write them exact, and a null count.
    fn statistics(&self, unit: usize, column: usize) -> Option<UnitStats> {
        let leaf = (*self.leaf_of.get(column)?)?;
        // Only plain integers (or lists of them): a decimal, date, duration
        // or struct also sorts as a signed INT32/INT64, but its statistics
        // are not the values the rules see.
        if !plain_integers(self.meta.schema().fields().get(column)?.data_type()) {
            return None;
        }
        let descr = self.meta.parquet_schema().column(leaf);
        if descr.sort_order() != SortOrder::SIGNED {
            return None;
        }
        let rg = self.meta.metadata().row_groups().get(unit)?;
        let stats = rg.column(leaf).statistics()?;
        let exact = (stats.min_is_exact() && stats.max_is_exact()) || self.exact_integer_stats;
        if stats.is_min_max_deprecated() || !exact {
            return None;
        }
        let (min, max) = match (stats, descr.physical_type()) {
            (Statistics::Int32(s), PhysicalType::INT32) => (i128::from(*s.min_opt()?), i128::from(*s.max_opt()?)),
            (Statistics::Int64(s), PhysicalType::INT64) => (i128::from(*s.min_opt()?), i128::from(*s.max_opt()?)),
            _ => return None,
        };
        Some(UnitStats {
            min,
            max,
            null_count: stats.null_count_opt()?,
            rows: u64::try_from(rg.num_rows()).ok()?,
            repeated: descr.max_rep_level() > 0,
        })
    }

    /// What a column chunk's dictionary proves when every data page of it is
    /// dictionary-encoded: every value is one of the entries, so the
    /// entries' extremes bound the values. Writers put only values they saw
    /// in a dictionary, so these are the chunk's extremes too (an entry no
    /// row uses could only widen the bounds: it never proves a value that
    /// is not there). The null count comes from the statistics when they
    /// hold one, else from the definition levels.
    fn dictionary_bounds(&self, unit: usize, column: usize) -> Option<UnitStats> {
        let leaf = (*self.leaf_of.get(column)?)?;
        if !plain_integers(self.meta.schema().fields().get(column)?.data_type()) {
            return None;
        }
        let descr = self.meta.parquet_schema().column(leaf);
        let width = match descr.physical_type() {
            PhysicalType::INT32 => 4,
            PhysicalType::INT64 => 8,
            _ => return None,
        };
        let rg = self.meta.metadata().row_groups().get(unit)?;
        let chunk = rg.column(leaf);
        if !pages::supported(chunk.compression()) || descr.max_def_level() > 255 || self.footer_rows(unit) == 0 {
            return None;
        }
        let (file, dictionary_end) = self.dictionary_blob(unit, leaf)?;
        let mut walker = self.pages(&file, unit, leaf).ok()?;
        if let Some(end) = dictionary_end {
            walker.end_at(end);
        }
        let (entries, bytes) = walker.dictionary().ok()??;
        let values = bytes.get(..entries.checked_mul(width)?)?;
        let (mut min, mut max) = (i128::MAX, i128::MIN);
        for v in values.chunks_exact(width) {
            let v = if width == 4 {
                i128::from(i32::from_le_bytes([v[0], v[1], v[2], v[3]]))
            } else {
                i128::from(i64::from_le_bytes([v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]]))
            };
            min = min.min(v);
            max = max.max(v);
        }
        if entries == 0 {
            return None;
        }
        let null_count = match chunk.statistics().and_then(|s| s.null_count_opt()) {
            Some(n) => n,
            None if descr.max_def_level() == 0 => 0,
            // Counted from the levels: the walk reads the whole chunk.
            None => {
                let whole = match dictionary_end {
                    Some(_) => self.chunk_blob(unit, leaf)?,
                    None => file.clone(),
                };
                shape::null_slots(self.pages(&whole, unit, leaf).ok()?, descr.max_def_level()).ok()?
            }
        };
        Some(UnitStats {
            min,
            max,
            null_count,
            rows: u64::try_from(rg.num_rows()).ok()?,
            repeated: descr.max_rep_level() > 0,
        })
    }

    /// The bytes the reads of row group `unit`'s leaf columns `leaves`
    /// need: the local file, or those column chunks fetched; of the leaves
    /// in `levels_only` (read as shapes), only what a walk over their
    /// levels reads (see [`ParquetSource::level_prefix`]).
    fn blob(&self, unit: usize, leaves: &[usize], levels_only: &[usize]) -> Result<Blob, ReadError> {
        let (object, held) = match &self.origin {
            Origin::Local(path) => return Ok(Blob::open(path)?),
            Origin::Remote { object, held } => (object, &held.parts),
        };
        let rg = self.meta.metadata().row_group(unit);
        let mut ranges = Vec::with_capacity(leaves.len() * 2);
        let mut walked = Vec::new();
        for &leaf in leaves {
            if levels_only.contains(&leaf) && rg.column(leaf).compressed_size() as u64 > LEVEL_WALK_MIN {
                walked.extend(self.level_prefix(object, held, unit, leaf)?);
                continue;
            }
            let chunk = rg.column(leaf);
            let len = chunk.compressed_size();
            // Where this reader's page walk starts, and where the parquet
            // crate's does (they differ for a dictionary offset of 0).
            let starts = [
                chunk_start(chunk),
                chunk.dictionary_page_offset().unwrap_or(chunk.data_page_offset()),
            ];
            for start in starts {
                ranges.push(self.in_file(start, len)?);
            }
        }
        self.fetch(object, held, ranges, walked)
    }

    /// What a walk over the levels of row group `unit`'s leaf `leaf` reads,
    /// fetched page by page: each page's header and, of a v2 data page, the
    /// levels stored uncompressed in front of its values; the values are
    /// not fetched. A v1 data page keeps its levels inside its compressed
    /// body, so at the first one the rest of the chunk is fetched whole
    /// (writers do not mix the versions in a chunk). With an OffsetIndex
    /// the pages are probed at once ([`ParquetSource::indexed_levels`]);
    /// without, one after another, each found from the header before it.
    /// A header that does not hold together gets the rest of the chunk
    /// fetched too, so that the walk reports it as a local read does.
    fn level_prefix(
        &self,
        object: &Object,
        held: &[(u64, Bytes)],
        unit: usize,
        leaf: usize,
    ) -> Result<Vec<(u64, Bytes)>, ReadError> {
        use pages::LevelSpan;
        let chunk = self.meta.metadata().row_group(unit).column(leaf);
        let range = self.in_file(chunk_start(chunk), chunk.compressed_size())?;
        if let Some(parts) = self.indexed_levels(object, held, chunk, &range)? {
            return Ok(parts);
        }
        let mut parts = Vec::new();
        // The last bytes fetched, which may hold the next page's start.
        let mut have: Option<(u64, Bytes)> = None;
        let (mut pos, mut probe) = (range.start, LEVEL_PROBE);
        while pos < range.end {
            let window = pos..pos.saturating_add(probe).min(range.end);
            let bytes = match &have {
                Some((at, b)) if *at <= pos && window.end <= at + b.len() as u64 => {
                    b.slice((pos - at) as usize..(window.end - at) as usize)
                }
                _ => self.bytes_at(object, held, window.clone())?,
            };
            have = Some((pos, bytes.clone()));
            match pages::level_span(&bytes, pos, range.end) {
                LevelSpan::Short if window.end < range.end && probe < 16 << 20 => probe *= 4,
                LevelSpan::Prefix { need, next } => {
                    parts.push((pos, bytes));
                    if need > window.end {
                        parts.push((window.end, self.bytes_at(object, held, window.end..need)?));
                    }
                    (pos, probe) = (next, LEVEL_PROBE);
                }
                _ if window.end == range.end => {
                    parts.push((pos, bytes));
                    break;
                }
                _ => {
                    parts.push((pos, self.bytes_at(object, held, pos..range.end)?));
                    break;
                }
            }
        }
        Ok(parts)
    }

    /// [`ParquetSource::level_prefix`] over the pages the chunk's
    /// OffsetIndex lists: the first data page probed, then (v2) every other
    /// page start at once, then any levels longer than their probe; a v1
    /// first page gets the chunk fetched whole. `None` (walk the headers)
    /// without an index, or when the pages do not lie where it says.
    fn indexed_levels(
        &self,
        object: &Object,
        held: &[(u64, Bytes)],
        chunk: &parquet::file::metadata::ColumnChunkMetaData,
        range: &Range<u64>,
    ) -> Result<Option<Vec<(u64, Bytes)>>, ReadError> {
        use pages::LevelSpan;
        let (Some(at), Some(len)) = (chunk.offset_index_offset(), chunk.offset_index_length()) else {
            return Ok(None);
        };
        let Ok(index) = self.in_file(at, i64::from(len)) else {
            return Ok(None);
        };
        let index = self.bytes_at(object, held, index)?;
        let Ok(index) = parquet::file::page_index::index_reader::decode_offset_index(&index) else {
            return Ok(None);
        };
        // Page starts: a dictionary page's before the first data page.
        let mut starts = Vec::with_capacity(index.page_locations().len() + 1);
        for p in index.page_locations() {
            match u64::try_from(p.offset) {
                Ok(o) => starts.push(o),
                Err(_) => return Ok(None),
            }
        }
        let Some(&first) = starts.first() else {
            return Ok(None);
        };
        let dictionary = range.start < first;
        if dictionary {
            starts.insert(0, range.start);
        }
        if starts[0] != range.start || !starts.windows(2).all(|w| w[0] < w[1]) || first >= range.end {
            return Ok(None);
        }
        let ends: Vec<u64> = starts.iter().skip(1).copied().chain([range.end]).collect();
        let probe = |i: usize| starts[i]..ends[i].min(starts[i] + LEVEL_PROBE);
        // Whether page `i`'s probe shows a page where the index says, and
        // the bytes its levels need past the probe.
        let page = |i: usize, bytes: &Bytes| match pages::level_span(bytes, starts[i], range.end) {
            LevelSpan::Prefix { need, next } if next == ends[i] => Some(need),
            _ => None,
        };
        let first_at = usize::from(dictionary);
        let first_bytes = self.bytes_at(object, held, probe(first_at))?;
        let mut parts = Vec::with_capacity(starts.len() + 1);
        let mut longer = Vec::new();
        match page(first_at, &first_bytes) {
            Some(need) => {
                if need > probe(first_at).end {
                    longer.push(probe(first_at).end..need);
                }
                parts.push((starts[first_at], first_bytes));
            }
            None if matches!(
                pages::level_span(&first_bytes, starts[first_at], range.end),
                LevelSpan::Whole
            ) =>
            {
                return Ok(Some(vec![(range.start, self.bytes_at(object, held, range.clone())?)]));
            }
            None => return Ok(None),
        }
        let rest: Vec<usize> = (0..starts.len()).filter(|&i| i != first_at).collect();
        let fetched = self.bytes_apart(object, held, rest.iter().map(|&i| probe(i)).collect())?;
        for (&i, bytes) in rest.iter().zip(fetched) {
            let Some(need) = page(i, &bytes) else {
                return Ok(None);
            };
            if need > probe(i).end {
                longer.push(probe(i).end..need);
            }
            parts.push((starts[i], bytes));
        }
        for (r, bytes) in longer.clone().into_iter().zip(self.bytes_apart(object, held, longer)?) {
            parts.push((r.start, bytes));
        }
        Ok(Some(parts))
    }

    /// The bytes of each of `ranges`, one request each, all at once (those
    /// inside the footer request's bytes taken from there).
    fn bytes_apart(
        &self,
        object: &Object,
        held: &[(u64, Bytes)],
        ranges: Vec<Range<u64>>,
    ) -> Result<Vec<Bytes>, ReadError> {
        let inside = |r: &Range<u64>| {
            held.iter()
                .find(|(at, b)| *at <= r.start && r.end <= at + b.len() as u64)
                .map(|(at, b)| b.slice((r.start - at) as usize..(r.end - at) as usize))
        };
        let wanted: Vec<Range<u64>> = ranges.iter().filter(|r| inside(r).is_none()).cloned().collect();
        let mut fetched = if wanted.is_empty() {
            Vec::new()
        } else {
            object.ranges_apart(&wanted)?
        }
        .into_iter();
        Ok(ranges
            .iter()
            .map(|r| inside(r).unwrap_or_else(|| fetched.next().unwrap_or_default()))
            .collect())
    }

    /// The bytes of `range`: from those the footer's request brought, or
    /// one request.
    fn bytes_at(&self, object: &Object, held: &[(u64, Bytes)], range: Range<u64>) -> Result<Bytes, ReadError> {
        for (at, b) in held {
            if *at <= range.start && range.end <= at + b.len() as u64 {
                return Ok(b.slice((range.start - at) as usize..(range.end - at) as usize));
            }
        }
        Ok(object
            .ranges(std::slice::from_ref(&range))?
            .into_iter()
            .next()
            .unwrap_or_default())
    }

    /// The bytes a dictionary proof of row group `unit`'s leaf `leaf` reads,
    /// decided the same way for a local file and an object (so both give
    /// the same report): when the footer's encoding statistics say every
    /// data page is dictionary-encoded, the dictionary page alone (with
    /// where the walk ends; of an object, that page is all that is
    /// fetched); when they say a page is not, no proof; without them, the
    /// whole chunk, whose page headers the walk reads (of an object, the
    /// chunk is fetched). The statistics are trusted as parquet-cpp and
    /// DuckDB trust them: a writer that lied about a plain page would hide
    /// its values from this proof. `--full-scan` reads every value.
    fn dictionary_blob(&self, unit: usize, leaf: usize) -> Option<(Blob, Option<u64>)> {
        use parquet::basic::Encoding;
        let chunk = self.meta.metadata().row_group(unit).column(leaf);
        let start = chunk_start(chunk);
        match chunk.page_encoding_stats_mask() {
            Some(m) if !(m.is_only(Encoding::PLAIN_DICTIONARY) || m.is_only(Encoding::RLE_DICTIONARY)) => None,
            Some(_) => {
                if start >= chunk.data_page_offset() {
                    return None;
                }
                let range = self.in_file(start, chunk.data_page_offset() - start).ok()?;
                let end = range.end;
                let blob = match &self.origin {
                    Origin::Local(path) => Blob::open(path).ok()?,
                    Origin::Remote { object, held } => self.fetch(object, &held.parts, vec![range], Vec::new()).ok()?,
                };
                Some((blob, Some(end)))
            }
            None => Some((self.chunk_blob(unit, leaf)?, None)),
        }
    }

    /// The whole of one column chunk: the local file, or the chunk fetched.
    fn chunk_blob(&self, unit: usize, leaf: usize) -> Option<Blob> {
        match &self.origin {
            Origin::Local(path) => Blob::open(path).ok(),
            Origin::Remote { .. } => self.blob(unit, &[leaf], &[]).ok(),
        }
    }

    /// `start..start + len` checked to lie in the file.
    fn in_file(&self, start: i64, len: i64) -> Result<Range<u64>, ReadError> {
        let (Ok(start), Ok(len)) = (u64::try_from(start), u64::try_from(len)) else {
            return Err(ReadError::new("a column chunk has a negative offset or size"));
        };
        match start.checked_add(len) {
            Some(end) if end <= self.size => Ok(start..end),
            _ => Err(ReadError::new(format!(
                "the column chunk at {start}+{len} lies past the end of the file"
            ))),
        }
    }

    /// `ranges` of the object as a [`Blob`], with the bytes the footer's
    /// request brought (`held`): what lies in them is not fetched again, so
    /// a small object, which came whole with its footer, costs no more; and
    /// with `more`, bytes fetched already.
    fn fetch(
        &self,
        object: &Object,
        held: &[(u64, Bytes)],
        ranges: Vec<Range<u64>>,
        more: Vec<(u64, Bytes)>,
    ) -> Result<Blob, ReadError> {
        // Where the held bytes start, running on to the object's end.
        let mut covered = self.size;
        for (at, b) in held.iter().rev() {
            if at + b.len() as u64 >= covered {
                covered = covered.min(*at);
            }
        }
        let mut ranges: Vec<Range<u64>> = ranges
            .into_iter()
            .map(|r| r.start..r.end.min(covered))
            .filter(|r| !r.is_empty())
            .collect();
        ranges.sort_by_key(|r| (r.start, r.end));
        ranges.dedup();
        let parts = if ranges.is_empty() {
            Vec::new()
        } else {
            object.ranges(&ranges)?
        };
        let mut fetched = Fetched::new(self.size);
        for (at, bytes) in held {
            fetched.add(*at, bytes.clone());
        }
        for (r, bytes) in ranges.iter().zip(parts) {
            fetched.add(r.start, bytes);
        }
        for (at, bytes) in more {
            fetched.add(at, bytes);
        }
        Ok(Blob::Fetched(Arc::new(fetched)))
    }

    /// Leaf columns under the top-level columns `projection`.
    fn leaves(&self, projection: &[usize]) -> Vec<usize> {
        let schema = self.meta.parquet_schema();
        (0..schema.num_columns())
            .filter(|&l| projection.contains(&schema.get_column_root_idx(l)))
            .collect()
    }

    /// Reads a unit with each projected column read as its shape (when
    /// flagged in `shapes` and its levels can be walked), by `values` (which
    /// may prove batches against `judges`), or by arrow-rs, assembled into
    /// batches in projection order.
    fn read_mixed(
        &self,
        unit: usize,
        projection: &[usize],
        shapes: &[bool],
        judges: &[Option<Judge>],
        sink: &mut JudgedSink<'_>,
    ) -> Result<(), ReadError> {
        let at = || format!("row group {unit}");
        // A row group the footer says is empty is read as empty, as pyarrow
        // reads it (some writers leave its page offsets at 0).
        if self.footer_rows(unit) == 0 {
            return Ok(());
        }
        // The bytes per unit: a local file handle (reads of different units
        // never share a file position), or the projected chunks fetched.
        // Of a column read as its shape, only the levels are fetched.
        let levels_only: Vec<usize> = projection
            .iter()
            .zip(shapes)
            .filter_map(|(&c, &s)| s.then(|| self.shape_leaf(unit, c)).flatten())
            .map(|(leaf, _)| leaf)
            .collect();
        let file = self
            .blob(unit, &self.leaves(projection), &levels_only)
            .map_err(|e| e.at(at()))?;
        let mut readers: Vec<Option<ColumnReader<'_>>> = Vec::with_capacity(projection.len());
        for (&c, &s) in projection.iter().zip(shapes) {
            let reader = if let Some((leaf, element_def)) = s.then(|| self.shape_leaf(unit, c)).flatten() {
                Some(ColumnReader::Shape(Box::new(
                    self.shape_reader(&file, unit, leaf, element_def)
                        .map_err(|e| e.at(at()))?,
                )))
            } else if let Some(plan) = self.value_plan(&file, unit, c) {
                let judge = judges.get(readers.len()).copied().flatten();
                Some(self.value_reader(&file, unit, plan, judge).map_err(|e| e.at(at()))?)
            } else {
                None
            };
            readers.push(reader);
        }
        if readers.iter().all(Option::is_none) {
            return self.read_from(&file, unit, projection, &mut |b| sink(b, &[]));
        }
        let rest: Vec<usize> = projection
            .iter()
            .zip(&readers)
            .filter(|(_, r)| r.is_none())
            .map(|(&c, _)| c)
            .collect();
        let batch_rows = readers
            .iter()
            .flatten()
            .map(ColumnReader::batch_rows)
            .min()
            .unwrap_or(BATCH_ROWS);
        let names = &self.columns;
        // Assembles a batch of `rows` rows in projection order: shapes from
        // their readers, the other columns from `decoded` in order; which
        // columns a reader proved go to `proven`.
        let mut proven = vec![false; projection.len()];
        let mut assemble = |rows: usize, decoded: &[ArrayRef], proven: &mut [bool]| -> Result<RecordBatch, ReadError> {
            let mut decoded = decoded.iter();
            let mut fields = Vec::with_capacity(projection.len());
            let mut columns = Vec::with_capacity(projection.len());
            for ((&c, reader), proven) in projection.iter().zip(readers.iter_mut()).zip(proven.iter_mut()) {
                let array = match reader {
                    Some(r) => {
                        let (array, p) = r.next_rows(rows).map_err(|e| e.at(at()))?;
                        *proven = p;
                        array
                    }
                    None => decoded
                        .next()
                        .cloned()
                        .ok_or_else(|| ReadError::new("a decoded column is missing"))?,
                };
                fields.push(Field::new(names[c].clone(), array.data_type().clone(), true));
                columns.push(array);
            }
            Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?)
        };
        if rest.is_empty() {
            let mut row = self.first_rows[unit];
            let mut left = self.footer_rows(unit);
            while left > 0 {
                let n = left.min(batch_rows as u64) as usize;
                let batch = assemble(n, &[], &mut proven)?;
                sink(Batch { first_row: row, batch }, &proven)?;
                row += n as u64;
                left -= n as u64;
            }
        } else {
            // The decoded columns set the batch sizes; shapes follow them.
            self.read_from(&file, unit, &rest, &mut |b| {
                let batch = assemble(b.batch.num_rows(), b.batch.columns(), &mut proven)?;
                sink(
                    Batch {
                        first_row: b.first_row,
                        batch,
                    },
                    &proven,
                )
            })?;
        }
        for reader in readers.iter_mut().flatten() {
            reader.finish().map_err(|e| e.at(at()))?;
        }
        Ok(())
    }

    /// Reads a unit through arrow-rs's reader, over the bytes `file` holds.
    fn read_from(
        &self,
        file: &Blob,
        unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        let at = || format!("row group {unit}");
        if self.footer_rows(unit) == 0 {
            return Ok(());
        }
        let flags = self.vet_pages(file, unit, projection).map_err(|e| e.at(at()))?;
        let mask = ProjectionMask::roots(self.meta.parquet_schema(), projection.iter().copied());
        let fields = self.meta.schema().fields();
        let lists = projection
            .iter()
            .any(|&p| fields.get(p).is_some_and(|f| f.data_type().is_nested()));
        let batch_rows = if lists { LIST_BATCH_ROWS } else { SCALAR_BATCH_ROWS };
        let reader =
            ParquetRecordBatchReaderBuilder::new_with_metadata(Patched::new(file.clone(), flags), self.meta.clone())
                .with_row_groups(vec![unit])
                .with_projection(mask)
                .with_batch_size(batch_rows)
                .build()
                .map_err(|e| ReadError::from(e).at(at()))?;
        // The reader returns projected columns in file order.
        let (_, order) = crate::source::read::file_order(projection);
        let said = self.footer_rows(unit);
        let mut row = self.first_rows[unit];
        for batch in reader {
            let batch = batch.map_err(|e| ReadError::from(e).at(at()))?;
            let n = batch.num_rows() as u64;
            // Pages holding more rows than the footer says: stop at once (a
            // few bytes can claim billions of rows).
            if row - self.first_rows[unit] + n > said {
                return Err(more_rows(said).at(at()));
            }
            let batch = batch.project(&order).map_err(|e| ReadError::from(e).at(at()))?;
            sink(Batch { first_row: row, batch })?;
            row += n;
        }
        // Pages that hold fewer rows than the footer says end the reader
        // early without an error: a truncated or lying file, not a checked one.
        let held = row - self.first_rows[unit];
        if held != said {
            return Err(fewer_rows(said, held).at(at()));
        }
        Ok(())
    }

    /// Rows the footer says row group `unit` holds.
    fn footer_rows(&self, unit: usize) -> u64 {
        u64::try_from(self.meta.metadata().row_group(unit).num_rows()).unwrap_or(0)
    }
}

/// Where a column chunk's first page starts: its dictionary page, when it
/// has one. Some writers (Dremio) set `dictionary_page_offset` to 0 for
/// "none"; as parquet-cpp does, an offset that is not positive or not before
/// the first data page is not a dictionary page's.
fn chunk_start(chunk: &parquet::file::metadata::ColumnChunkMetaData) -> i64 {
    let data = chunk.data_page_offset();
    match chunk.dictionary_page_offset() {
        Some(d) if d > 0 && d < data => d,
        _ => data,
    }
}

/// Pages holding fewer rows than the footer says (whichever reader finds it).
fn fewer_rows(footer_rows: u64, held: u64) -> ReadError {
    ReadError::new(format!(
        "the footer says {footer_rows} rows, the pages hold {held}: the file is truncated or corrupt"
    ))
}

/// Pages holding more rows than the footer says (whichever reader finds it).
fn more_rows(footer_rows: u64) -> ReadError {
    ReadError::new(format!(
        "the footer says {footer_rows} rows, the pages hold more: the file is corrupt"
    ))
}

impl Source for ParquetSource {
    fn label_names(&self, column: usize) -> Option<(Vec<Option<String>>, String)> {
        let names =
            crate::source::formats::features::class_names(self.meta.schema().metadata(), &self.columns[column])?;
        Some((names, crate::source::formats::features::FROM.to_string()))
    }

    /// What the row group's statistics prove, or else its dictionary.
    fn unit_stats(&self, unit: usize, column: usize) -> Option<UnitStats> {
        self.statistics(unit, column)
            .or_else(|| self.dictionary_bounds(unit, column))
    }

    fn columns(&self) -> &[String] {
        &self.columns
    }

    fn field_ids(&self) -> Vec<Option<i32>> {
        self.meta
            .schema()
            .fields()
            .iter()
            .map(|f| {
                f.metadata()
                    .get(::parquet::arrow::PARQUET_FIELD_ID_META_KEY)?
                    .parse()
                    .ok()
            })
            .collect()
    }

    /// The file schema's type: row groups that statistics prove are never
    /// read, and their type still counts.
    fn stored_type(&self, column: usize) -> Option<DataType> {
        self.meta.schema().fields().get(column).map(|f| f.data_type().clone())
    }

    fn read_shapes(
        &self,
        unit: usize,
        projection: &[usize],
        shapes: &[bool],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        self.read_mixed(unit, projection, shapes, &[], &mut |b, _| sink(b))
    }

    fn read_judged(
        &self,
        unit: usize,
        projection: &[usize],
        shapes: &[bool],
        judges: &[Option<Judge>],
        sink: &mut JudgedSink<'_>,
    ) -> Result<(), ReadError> {
        self.read_mixed(unit, projection, shapes, judges, sink)
    }

    fn units(&self) -> usize {
        self.first_rows.len()
    }

    fn read(
        &self,
        unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        self.read_mixed(unit, projection, &vec![false; projection.len()], &[], &mut |b, _| {
            sink(b)
        })
    }
}

/// Whether the writer named by `created_by` writes integer `min_value` /
/// `max_value` statistics that are the column's exact extremes, flagged or
/// not. The `is_*_exact` flags exist for truncated byte-array bounds; an
/// integer bound is the value itself in every writer below, several of which
/// (Polars, DuckDB, parquet-mr, older parquet-cpp) never set the flags.
/// Versions with known wrong statistics are left out, as parquet-cpp's own
/// `HasCorrectStatistics` leaves them out: parquet-cpp before 1.3.0 and
/// parquet-mr before 1.10.0 (signed/unsigned order bugs).
fn writes_exact_integer_stats(created_by: Option<&str>) -> bool {
    let Some(created_by) = created_by else {
        return false;
    };
    let Some((app, rest)) = created_by.split_once(" version") else {
        return false;
    };
    let version: Vec<u32> = rest
        .trim_start()
        .trim_start_matches('v')
        .split(|c: char| !c.is_ascii_digit())
        .take(3)
        .map(|p| p.parse().unwrap_or(0))
        .collect();
    let at_least = |want: [u32; 3]| version.as_slice() >= want.as_slice();
    match app.trim() {
        "parquet-cpp" => at_least([1, 3, 0]),
        "parquet-mr" => at_least([1, 10, 0]),
        "parquet-cpp-arrow" | "parquet-rs" | "DuckDB" | "Polars (python)" | "Polars" => true,
        _ => false,
    }
}

/// Whether a column holds plain signed integers, possibly in lists.
fn plain_integers(t: &arrow::datatypes::DataType) -> bool {
    use arrow::datatypes::DataType as T;
    match t {
        T::Int8 | T::Int16 | T::Int32 | T::Int64 => true,
        T::List(f) | T::LargeList(f) | T::FixedSizeList(f, _) => plain_integers(f.data_type()),
        T::Dictionary(_, v) => plain_integers(v),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::process::Command;

    use arrow::array::{Array, AsArray};

    use super::*;

    /// Each row's length, `None` for a null row, from a list array of
    /// either offset width.
    fn lengths(array: &dyn Array) -> Vec<Option<i64>> {
        let row = |i: usize, len: i64| if array.is_null(i) { None } else { Some(len) };
        match array.data_type() {
            DataType::List(_) => {
                let a = array.as_list::<i32>();
                (0..a.len()).map(|i| row(i, i64::from(a.value_length(i)))).collect()
            }
            DataType::LargeList(_) => {
                let a = array.as_list::<i64>();
                (0..a.len()).map(|i| row(i, a.value_length(i))).collect()
            }
            DataType::FixedSizeList(_, size) => (0..array.len()).map(|i| row(i, i64::from(*size))).collect(),
            t => panic!("not a list: {t}"),
        }
    }

    /// Reads column `column` of every unit of `path` fully and as shapes:
    /// (lengths from the values, lengths from the shapes, whether every
    /// unit came back as a shape).
    fn both_ways(path: &Path, column: usize) -> (Vec<Option<i64>>, Vec<Option<i64>>, bool) {
        let src = ParquetSource::open(path).unwrap();
        let (mut full, mut shaped, mut all_shapes) = (Vec::new(), Vec::new(), true);
        let mut rows = 0;
        for unit in 0..src.units() {
            src.read(unit, &[column], &mut |b| {
                full.extend(lengths(b.batch.column(0).as_ref()));
                Ok(())
            })
            .unwrap();
            src.read_shapes(unit, &[column], &[true], &mut |b| {
                assert_eq!(b.first_row, rows, "{}: batches follow each other", path.display());
                rows += b.batch.num_rows() as u64;
                let array = b.batch.column(0);
                all_shapes &= matches!(array.data_type(), DataType::LargeList(f) if f.data_type() == &DataType::Null);
                shaped.extend(lengths(array.as_ref()));
                Ok(())
            })
            .unwrap();
        }
        (full, shaped, all_shapes)
    }

    #[test]
    fn shapes_from_levels_match_the_decoded_lists_of_every_writer() {
        let dir = tempfile::tempdir().unwrap();
        // Null rows, empty lists, null elements, rows crossing small pages,
        // every codec and page version of pyarrow, polars and DuckDB.
        let script = r#"
import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq, polars as pl, duckdb
rng = np.random.default_rng(3)
rows = []
for i in range(6000):
    u = rng.random()
    rows.append(None if u < 0.03 else [] if u < 0.06 else
                [None if rng.random() < 0.01 else int(x) for x in rng.integers(0, 1000, int(rng.integers(1, 40)))])
t = pa.table({'ids': pa.array(rows, pa.list_(pa.int32()))})
big = pa.table({'ids': pa.array(rows, pa.large_list(pa.int64()))})
for codec in ['none', 'snappy', 'gzip', 'zstd', 'lz4', 'brotli']:
    for v in ['1.0', '2.0']:
        for dic in [False, True]:
            pq.write_table(t, f'pa_{codec}_{v}_{dic}.parquet', compression=codec, data_page_version=v,
                           data_page_size=512, use_dictionary=dic, row_group_size=2500, write_batch_size=37)
pq.write_table(big, 'pa_large.parquet', data_page_size=300)
pq.write_table(pa.table({'ids': pa.array([[1]] * 5, pa.list_(pa.int32(), 1))}), 'pa_fixed.parquet')
pl.from_arrow(t).write_parquet('polars.parquet', row_group_size=1000, data_page_size=1024)
con = duckdb.connect(); con.register('t', t)
for v in ['V1', 'V2']:
    con.execute(f"COPY t TO 'duckdb_{v}.parquet' (FORMAT parquet, ROW_GROUP_SIZE 2048, PARQUET_VERSION {v})")
"#;
        let out = Command::new(crate::source::test_python())
            .current_dir(dir.path())
            .args(["-c", script])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut files: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert_eq!(files.len(), 29);
        for path in &files {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let (full, shaped, all_shapes) = both_ways(path, 0);
            assert_eq!(full, shaped, "{name}");
            if name == "pa_fixed.parquet" {
                assert_eq!(full.len(), 5);
            } else {
                assert_eq!(full.len(), 6000, "{name}");
                assert!(full.iter().any(Option::is_none) && full.contains(&Some(0)), "{name}");
            }
            // Brotli pages and fixed-size lists are decoded, not walked.
            let walked = !name.contains("brotli") && name != "pa_fixed.parquet";
            assert_eq!(all_shapes, walked, "{name}");
        }
    }

    #[test]
    fn writers_known_for_exact_integer_statistics() {
        for (created_by, exact) in [
            ("parquet-cpp-arrow version 26.0.1", true),
            ("parquet-cpp version 1.5.1-SNAPSHOT", true),
            ("parquet-cpp version 1.2.0", false),
            (
                "parquet-mr version 1.12.3 (build f8dced182c4c1fbdec6ccb3185537b5a01e6ed6b)",
                true,
            ),
            (
                "parquet-mr version 1.9.0 (build 38262e2c80015d0935dad20f8e18f2d6f9fbd03c)",
                false,
            ),
            ("parquet-rs version 60.1.0", true),
            ("DuckDB version v2.0.1 (build 8d78114e90)", true),
            (
                "Polars (python) version 2.1.0 (build 7f902bd3ffd27ff82d14278a09a295ff2f7aed92)",
                true,
            ),
            ("impala version 1.0", false),
            ("parquet-mr", false),
        ] {
            assert_eq!(writes_exact_integer_stats(Some(created_by)), exact, "{created_by}");
        }
        assert!(!writes_exact_integer_stats(None));
    }

    /// Polars and DuckDB write integer statistics without the exact flags:
    /// they are taken as proof, with the values the full scan finds.
    #[test]
    fn unflagged_statistics_of_known_writers_are_proof() {
        let dir = tempfile::tempdir().unwrap();
        let script = r#"
import pyarrow as pa, polars as pl, duckdb
t = pa.table({'a': pa.array([3, -2, 7, None, 5], pa.int64()), 'l': pa.array([[1], [2, 9], None, [], [4]], pa.list_(pa.int32()))})
pl.from_arrow(t).write_parquet('polars.parquet')
con = duckdb.connect(); con.register('t', t)
con.execute("COPY t TO 'duckdb.parquet' (FORMAT parquet)")
"#;
        let out = Command::new(crate::source::test_python())
            .current_dir(dir.path())
            .args(["-c", script])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        for name in ["polars.parquet", "duckdb.parquet"] {
            let src = ParquetSource::open(&dir.path().join(name)).unwrap();
            assert!(src.exact_integer_stats, "{name}");
            let a = src.unit_stats(0, 0).unwrap_or_else(|| panic!("{name}: no stats for a"));
            assert_eq!((a.min, a.max, a.null_count, a.rows), (-2, 7, 1, 5), "{name}");
            let l = src.unit_stats(0, 1).unwrap_or_else(|| panic!("{name}: no stats for l"));
            assert_eq!((l.min, l.max, l.repeated), (1, 9, true), "{name}");
        }
    }

    /// Without statistics, a chunk whose data pages are all
    /// dictionary-encoded is bounded by its dictionary, with its null slots
    /// counted from the levels; a chunk that fell back to plain pages is not.
    #[test]
    fn dictionaries_bound_chunks_without_statistics() {
        let dir = tempfile::tempdir().unwrap();
        let script = r#"
import pyarrow as pa, pyarrow.parquet as pq
t = pa.table({'a': pa.array([3, -2, 7, None, 5] * 100, pa.int64()),
              'l': pa.array([[1], [2, 9], None, [], [4, None]] * 100, pa.list_(pa.int32()))})
for codec in ['none', 'snappy', 'zstd', 'gzip', 'lz4']:
    for v in ['1.0', '2.0']:
        pq.write_table(t, f'{codec}_{v}.parquet', write_statistics=False, compression=codec, data_page_version=v, data_page_size=256)
big = pa.table({'a': pa.array(range(5000), pa.int64()), 'l': pa.array([[i] for i in range(5000)], pa.list_(pa.int32()))})
pq.write_table(big, 'fallback.parquet', write_statistics=False, dictionary_pagesize_limit=256, data_page_size=256)
assert 'PLAIN' in pq.ParquetFile('fallback.parquet').metadata.row_group(0).column(0).encodings
"#;
        let out = Command::new(crate::source::test_python())
            .current_dir(dir.path())
            .args(["-c", script])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        for codec in ["none", "snappy", "zstd", "gzip", "lz4"] {
            for v in ["1.0", "2.0"] {
                let name = format!("{codec}_{v}.parquet");
                let src = ParquetSource::open(&dir.path().join(&name)).unwrap();
                assert!(src.statistics(0, 0).is_none(), "{name}");
                let a = src.unit_stats(0, 0).unwrap_or_else(|| panic!("{name}: no proof for a"));
                assert_eq!(
                    (a.min, a.max, a.null_count, a.rows, a.repeated),
                    (-2, 7, 100, 500, false),
                    "{name}"
                );
                let l = src.unit_stats(0, 1).unwrap_or_else(|| panic!("{name}: no proof for l"));
                // Null slots: a null row, an empty list and a null element per 5 rows.
                assert_eq!((l.min, l.max, l.null_count, l.repeated), (1, 9, 300, true), "{name}");
            }
        }
        let src = ParquetSource::open(&dir.path().join("fallback.parquet")).unwrap();
        assert!(src.unit_stats(0, 0).is_none() && src.unit_stats(0, 1).is_none());
        // Damaged dictionary and level bytes: a bound or none, never a panic.
        for codec in ["none", "zstd", "gzip", "snappy"] {
            let good = dir.path().join(format!("{codec}_1.0.parquet"));
            let bytes = std::fs::read(&good).unwrap();
            let chunk = ParquetSource::open(&good)
                .unwrap()
                .meta
                .metadata()
                .row_group(0)
                .column(1)
                .clone();
            let (start, len) = (chunk_start(&chunk) as usize, chunk.compressed_size() as usize);
            let bad = dir.path().join("bad.parquet");
            for at in (start..start + len).step_by(2) {
                for flip in [0x01u8, 0x80, 0xff] {
                    let mut b = bytes.clone();
                    b[at] ^= flip;
                    std::fs::write(&bad, &b).unwrap();
                    let _ = ParquetSource::open(&bad).unwrap().unit_stats(0, 1);
                }
            }
        }
    }

    /// A legacy two-level list (a repeated leaf at the top level), written
    /// with the parquet crate's own column writer.
    #[test]
    fn shapes_of_a_repeated_primitive_column() {
        use parquet::data_type::Int32Type;
        use parquet::file::properties::WriterProperties;
        use parquet::file::writer::SerializedFileWriter;
        use parquet::schema::parser::parse_message_type;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("two_level.parquet");
        let schema = Arc::new(parse_message_type("message m { repeated int32 ids; }").unwrap());
        let props = Arc::new(WriterProperties::builder().set_data_page_size_limit(64).build());
        let mut writer = SerializedFileWriter::new(File::create(&path).unwrap(), schema, props).unwrap();
        // Rows [1, 2, 3], [], [4], [], [5, 6] repeated.
        let (mut values, mut def, mut rep) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..300 {
            values.extend([1, 2, 3, 4, 5, 6]);
            def.extend([1, 1, 1, 0, 1, 0, 1, 1]);
            rep.extend([0, 1, 1, 0, 0, 0, 0, 1]);
        }
        let mut rg = writer.next_row_group().unwrap();
        let mut col = rg.next_column().unwrap().unwrap();
        col.typed::<Int32Type>()
            .write_batch(&values, Some(&def), Some(&rep))
            .unwrap();
        col.close().unwrap();
        rg.close().unwrap();
        writer.close().unwrap();
        let (full, shaped, all_shapes) = both_ways(&path, 0);
        assert!(all_shapes);
        assert_eq!(full, shaped);
        assert_eq!(&full[..5], &[Some(3), Some(0), Some(1), Some(0), Some(2)]);
        assert_eq!(full.len(), 1500);
    }

    /// Bytes of a list column's pages changed one at a time: the page
    /// walker gives an answer or an error, never a panic or a hang.
    #[test]
    fn damaged_pages_are_errors_not_panics() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.parquet");
        let out = Command::new(crate::source::test_python())
            .args([
                "-c",
                "import sys, pyarrow as pa, pyarrow.parquet as pq\n\
                 rows = [None if i % 13 == 0 else list(range(i % 7)) for i in range(400)]\n\
                 pq.write_table(pa.table({'ids': pa.array(rows, pa.list_(pa.int32()))}), sys.argv[1], compression=sys.argv[2], data_page_size=128, use_dictionary=False)",
            ])
            .arg(&good)
            .arg("zstd")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let bytes = std::fs::read(&good).unwrap();
        let src = ParquetSource::open(&good).unwrap();
        let chunk = src.meta.metadata().row_group(0).column(0);
        let start = chunk_start(chunk) as usize;
        let end = start + chunk.compressed_size() as usize;
        let bad = dir.path().join("bad.parquet");
        let (mut errors, mut answers) = (0, 0);
        for at in (start..end).step_by(3) {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[at] ^= flip;
                std::fs::write(&bad, &b).unwrap();
                // The footer is untouched, so the file opens.
                let src = ParquetSource::open(&bad).unwrap();
                let mut rows = 0;
                match src.read_shapes(0, &[0], &[true], &mut |b| {
                    rows += b.batch.num_rows();
                    Ok(())
                }) {
                    Ok(()) => {
                        assert_eq!(rows, 400);
                        answers += 1;
                    }
                    Err(e) => {
                        assert!(e.to_string().starts_with("row group 0"), "{e}");
                        errors += 1;
                    }
                }
            }
        }
        assert!(errors > 0 && answers > 0, "{errors} errors, {answers} answers");
    }
}

/// preflight's own value decoding against arrow-rs's on the same files.
#[cfg(test)]
mod own_values {
    use std::process::Command;

    use arrow::array::{Array, ArrayRef};

    use super::*;

    /// Every column of every unit of `path`, concatenated, read with own
    /// decoding on or off; and how many (unit, column) pairs took `values`.
    fn read_all(path: &Path, own: bool) -> Result<(Vec<ArrayRef>, usize), ReadError> {
        let mut src = ParquetSource::open(path).unwrap();
        src.own_values = own;
        let file = Blob::open(path).unwrap();
        let mut out = Vec::new();
        let mut planned = 0;
        for c in 0..src.columns().len() {
            let mut parts: Vec<ArrayRef> = Vec::new();
            for unit in 0..src.units() {
                planned += usize::from(src.footer_rows(unit) > 0 && src.value_plan(&file, unit, c).is_some());
                src.read(unit, &[c], &mut |b| {
                    parts.push(b.batch.column(0).clone());
                    Ok(())
                })?;
            }
            let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
            out.push(if refs.is_empty() {
                arrow::array::new_empty_array(src.meta.schema().field(c).data_type())
            } else {
                arrow::compute::concat(&refs).unwrap()
            });
        }
        Ok((out, planned))
    }

    fn python(dir: &Path, script: &str) {
        let out = Command::new(crate::source::test_python())
            .current_dir(dir)
            .args(["-c", script])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    /// The arrays both decoders build for every file in `dir`; returns the
    /// file names whose columns all took the own path.
    fn compare_dir(dir: &Path) -> Vec<String> {
        let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        let mut own_everywhere = Vec::new();
        for path in &files {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let (theirs, _) = read_all(path, false).unwrap_or_else(|e| panic!("{name}: arrow-rs: {e}"));
            let (ours, planned) = read_all(path, true).unwrap_or_else(|e| panic!("{name}: own: {e}"));
            let src = ParquetSource::open(path).unwrap();
            assert_eq!(theirs.len(), ours.len());
            for (c, (a, b)) in theirs.iter().zip(&ours).enumerate() {
                assert_eq!(a.data_type(), b.data_type(), "{name} column {c}");
                assert_eq!(a.to_data(), b.to_data(), "{name} column {c}");
            }
            let units_with_rows = (0..src.units()).filter(|&u| src.footer_rows(u) > 0).count();
            if planned == units_with_rows * src.columns().len() {
                own_everywhere.push(name);
            }
        }
        own_everywhere
    }

    #[test]
    fn own_decoding_builds_the_arrays_arrow_rs_builds() {
        let dir = tempfile::tempdir().unwrap();
        let script = r#"
import numpy as np, pyarrow as pa, pyarrow.parquet as pq, polars as pl, duckdb
rng = np.random.default_rng(5)
n = 5000
def ints(t, lo, hi, nulls):
    v = rng.integers(lo, hi, n, endpoint=True, dtype=np.uint64 if hi >= 2**63 else np.int64)
    mask = rng.random(n) < nulls
    return pa.array([None if m else int(x) for x, m in zip(v, mask)], t)
rows = []
for i in range(n):
    u = rng.random()
    rows.append(None if u < 0.03 else [] if u < 0.06 else
                [None if rng.random() < 0.01 else int(x) for x in rng.integers(-5, 30522, int(rng.integers(1, 60)))])
full = [r if r is not None else [] for r in rows]
full = [[x if x is not None else 7 for x in r] for r in full]
t = pa.table({
    'i8': ints(pa.int8(), -128, 127, 0.05), 'i16': ints(pa.int16(), -2**15, 2**15 - 1, 0.0),
    'i32': ints(pa.int32(), -2**31, 2**31 - 1, 0.1), 'i64': ints(pa.int64(), -2**63, 2**63 - 1, 0.02),
    'u8': ints(pa.uint8(), 0, 255, 0.05), 'u16': ints(pa.uint16(), 0, 2**16 - 1, 0.0),
    'u32': ints(pa.uint32(), 0, 2**32 - 1, 0.05), 'u64': ints(pa.uint64(), 0, 2**64 - 1, 0.05),
    'few': ints(pa.int64(), 0, 9, 0.2),
    'ids': pa.array(rows, pa.list_(pa.int32())),
    'big': pa.array(rows, pa.large_list(pa.int64())),
    'req': pa.array(full, pa.list_(pa.field('item', pa.int32(), nullable=False))),
})
for codec in ['none', 'snappy', 'gzip', 'zstd', 'lz4', 'brotli']:
    for v in ['1.0', '2.0']:
        for dic in [False, True]:
            pq.write_table(t, f'pa_{codec}_{v}_{dic}.parquet', compression=codec, data_page_version=v,
                           data_page_size=700, use_dictionary=dic, row_group_size=2100, write_batch_size=53)
delta = {c: 'DELTA_BINARY_PACKED' for c in t.column_names}
for v in ['1.0', '2.0']:
    pq.write_table(t, f'pa_delta_{v}.parquet', use_dictionary=False, column_encoding=delta, data_page_version=v, data_page_size=900)
pq.write_table(t, 'pa_dict_fallback.parquet', dictionary_pagesize_limit=300, data_page_size=400)
pq.write_table(t.slice(0, 0), 'pa_empty.parquet')
pl.from_arrow(t).write_parquet('polars.parquet', row_group_size=1000, data_page_size=1024)
pl.from_arrow(t).write_parquet('polars_zstd_stats.parquet', compression='zstd', statistics=True)
# DuckDB's V2 files store full-range 32-bit deltas that neither pyarrow nor
# arrow-rs reads ('min_delta' too large): those two columns are left out.
d = t.drop_columns(['i32', 'u32'])
con = duckdb.connect(); con.register('d', d)
for v in ['V1', 'V2']:
    con.execute(f"COPY d TO 'duckdb_{v}.parquet' (FORMAT parquet, ROW_GROUP_SIZE 2048, PARQUET_VERSION {v})")
"#;
        python(dir.path(), script);
        let own = compare_dir(dir.path());
        // Every pyarrow file takes the own path for every column.
        for name in [
            "pa_zstd_2.0_True.parquet",
            "pa_brotli_1.0_False.parquet",
            "pa_delta_1.0.parquet",
            "pa_delta_2.0.parquet",
            "pa_dict_fallback.parquet",
            "pa_none_1.0_True.parquet",
            "pa_lz4_2.0_True.parquet",
            "pa_gzip_1.0_True.parquet",
            "pa_snappy_2.0_False.parquet",
            "polars.parquet",
            "polars_zstd_stats.parquet",
            "duckdb_V1.parquet",
            "duckdb_V2.parquet",
        ] {
            assert!(
                own.iter().any(|o| o == name),
                "{name} did not take the own path: {own:?}"
            );
        }
    }

    /// Column `c` of every unit read with `judge`: each batch and whether
    /// the reader proved it.
    fn read_judged_all(path: &Path, c: usize, judge: Judge) -> Vec<(ArrayRef, bool)> {
        let src = ParquetSource::open(path).unwrap();
        let mut out = Vec::new();
        for unit in 0..src.units() {
            src.read_judged(unit, &[c], &[false], &[Some(judge)], &mut |b, proven| {
                out.push((b.batch.column(0).clone(), proven.first() == Some(&true)));
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
        out
    }

    /// The whole numbers (or nulls) of a list array's elements.
    fn elements(list: &dyn Array) -> Vec<Option<i128>> {
        use arrow::array::AsArray;
        let values = match list.data_type() {
            DataType::List(_) => {
                let l = list.as_list::<i32>();
                let (a, b) = (l.value_offsets()[0] as usize, l.value_offsets()[l.len()] as usize);
                l.values().slice(a, b - a)
            }
            DataType::LargeList(_) => {
                let l = list.as_list::<i64>();
                let (a, b) = (l.value_offsets()[0] as usize, l.value_offsets()[l.len()] as usize);
                l.values().slice(a, b - a)
            }
            t => panic!("not a list: {t}"),
        };
        let wide = arrow::compute::cast(&values, &DataType::Int64).unwrap();
        let wide = wide.as_primitive::<arrow::datatypes::Int64Type>();
        wide.iter().map(|v| v.map(i128::from)).collect()
    }

    /// Row lengths and nulls of a list array.
    fn shape(list: &dyn Array) -> Vec<Option<usize>> {
        use arrow::array::AsArray;
        (0..list.len())
            .map(|i| {
                list.is_valid(i).then(|| match list.data_type() {
                    DataType::List(_) => list.as_list::<i32>().value_length(i) as usize,
                    _ => list.as_list::<i64>().value_length(i) as usize,
                })
            })
            .collect()
    }

    /// Bytes of dense list pages (no null slot: row starts come from the
    /// repetition runs) changed one at a time, as pyarrow and Polars write
    /// them: the own decoder, judged or not, gives every row or an error
    /// for the row group, never a panic, a hang or a wrong row count.
    #[test]
    fn damaged_dense_pages_are_errors_not_panics() {
        let dir = tempfile::tempdir().unwrap();
        let script = r#"
import pyarrow as pa, pyarrow.parquet as pq, polars as pl
rows = [list(range(i % 5, i % 5 + (i * 7) % 24)) for i in range(150)]
t = pa.table({'ids': pa.array(rows, pa.list_(pa.int32()))})
pq.write_table(t, 'pa_dict.parquet', compression='none', data_page_size=256)
pq.write_table(t, 'pa_plain.parquet', compression='none', data_page_size=256, use_dictionary=False)
pl.from_arrow(t).write_parquet('polars.parquet', compression='uncompressed', data_page_size=256)
"#;
        python(dir.path(), script);
        let judge = Judge::new(crate::proof::Interval {
            lo: 0,
            hi: 40,
            extra: None,
        });
        for name in ["pa_dict.parquet", "pa_plain.parquet", "polars.parquet"] {
            let good = dir.path().join(name);
            let bytes = std::fs::read(&good).unwrap();
            let src = ParquetSource::open(&good).unwrap();
            let chunk = src.meta.metadata().row_group(0).column(0);
            let start = chunk_start(chunk) as usize;
            let end = start + chunk.compressed_size() as usize;
            let bad = dir.path().join("bad.parquet");
            let (mut errors, mut answers) = (0, 0);
            for at in (start..end).step_by(5) {
                for flip in [0x01u8, 0x02, 0xff] {
                    let mut b = bytes.clone();
                    b[at] ^= flip;
                    std::fs::write(&bad, &b).unwrap();
                    let mut src = ParquetSource::open(&bad).unwrap();
                    src.own_values = true;
                    // Only what the own decoder reads (a page header
                    // naming another encoding leaves the chunk to arrow-rs).
                    let file = Blob::open(&bad).unwrap();
                    if src.value_plan(&file, 0, 0).is_none() {
                        continue;
                    }
                    for judged in [false, true] {
                        let mut rows = 0;
                        let judges = [judged.then_some(judge)];
                        match src.read_judged(0, &[0], &[false], &judges, &mut |b, _| {
                            rows += b.batch.num_rows();
                            Ok(())
                        }) {
                            Ok(()) => {
                                assert_eq!(rows, 150, "{name} byte {at} ^ {flip:#x}");
                                answers += 1;
                            }
                            Err(e) => {
                                assert!(e.to_string().starts_with("row group 0"), "{e}");
                                errors += 1;
                            }
                        }
                    }
                }
            }
            assert!(errors > 0 && answers > 0, "{name}: {errors} errors, {answers} answers");
        }
    }

    /// A batch the reader proves holds exactly arrow-rs's rows (nulls and
    /// lengths, in the stored type) and only values that pass; every other
    /// batch is arrow-rs's, value for value. Files with offending values in
    /// a few pages prove the rest and build those.
    #[test]
    fn judged_batches_are_proven_only_when_every_value_passes() {
        let dir = tempfile::tempdir().unwrap();
        let script = r#"
import numpy as np, pyarrow as pa, pyarrow.parquet as pq, polars as pl, duckdb
rng = np.random.default_rng(11)
n = 6000
rows = [[int(x) for x in rng.integers(0, 500, int(rng.integers(0, 30)))] for _ in range(n)]
rows[100] = [500] * 20                      # an RLE run of one offending index
rows[2001] = rows[2001] + [501]             # bit-packed, at a row's end
rows[4321] = [-1] + rows[4321]              # at a row's start
rows[5999] = [499, 500]                     # the last row
mask = [[int(x) for x in rng.integers(0, 2, len(r))] for r in rows]
mask[3000] = [2] * len(mask[3000]) if mask[3000] else [2]
t = pa.table({'ids': pa.array(rows, pa.list_(pa.int32())), 'mask': pa.array(mask, pa.list_(pa.int8())),
              'big': pa.array(rows, pa.large_list(pa.int64()))})
for codec in ['none', 'zstd', 'snappy']:
    for v in ['1.0', '2.0']:
        for dic in [False, True]:
            pq.write_table(t, f'pa_{codec}_{v}_{dic}.parquet', compression=codec, data_page_version=v,
                           use_dictionary=dic, data_page_size=1024, row_group_size=500, write_statistics=False)
nulls = [None if i % 1000 == 7 else r for i, r in enumerate(rows)]
nulls[1500] = [1, None, 3]
pq.write_table(pa.table({'ids': pa.array(nulls, pa.list_(pa.int32()))}), 'nulls.parquet', data_page_size=1024, row_group_size=500)
pl.from_arrow(t).write_parquet('polars.parquet', row_group_size=500, data_page_size=2048)
con = duckdb.connect(); con.register('t', t)
for v in ['V1', 'V2']:
    con.execute(f"COPY t TO 'duckdb_{v}.parquet' (FORMAT parquet, ROW_GROUP_SIZE 2048, PARQUET_VERSION {v})")
"#;
        python(dir.path(), script);
        let mut files: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert_eq!(files.len(), 16);
        let ids = Judge::new(crate::proof::Interval {
            lo: 0,
            hi: 499,
            extra: None,
        });
        let mask = Judge::new(crate::proof::Interval {
            lo: 0,
            hi: 1,
            extra: None,
        });
        for path in &files {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let (theirs, _) = read_all(path, false).unwrap();
            let src = ParquetSource::open(path).unwrap();
            for (c, column) in src.columns().to_vec().iter().enumerate() {
                let judge = if column == "mask" { mask } else { ids };
                let batches = read_judged_all(path, c, judge);
                let (mut row, mut proven, mut built) = (0, 0, 0);
                for (array, p) in &batches {
                    let expect = theirs[c].slice(row, array.len());
                    assert_eq!(array.data_type(), expect.data_type(), "{name} {column}");
                    assert_eq!(
                        shape(array.as_ref()),
                        shape(expect.as_ref()),
                        "{name} {column} row {row}"
                    );
                    let real = elements(expect.as_ref());
                    if *p {
                        let bad: Vec<_> = real.iter().filter(|v| !v.is_some_and(|v| judge.passes(v))).collect();
                        assert!(bad.is_empty(), "{name} {column} row {row}: proven with {bad:?}");
                        proven += 1;
                    } else {
                        // Values of proven pages may be passing stand-ins;
                        // every other value (and every null) is the real one.
                        let ours = elements(array.as_ref());
                        assert_eq!(ours.len(), real.len(), "{name} {column} row {row}");
                        for (i, (a, b)) in ours.iter().zip(&real).enumerate() {
                            let stand_in = a.is_some_and(|a| judge.passes(a)) && b.is_some_and(|b| judge.passes(b));
                            assert!(a == b || stand_in, "{name} {column} row {row} element {i}: {a:?} {b:?}");
                        }
                        built += 1;
                    }
                    row += array.len();
                }
                assert_eq!(row, theirs[c].len(), "{name} {column}");
                // Batches without offending pages (or, in `nulls.parquet`,
                // nulls) are proven; the others are built.
                assert!(
                    proven > 0 && built > 0,
                    "{name} {column}: {proven} proven, {built} built"
                );
            }
        }
    }
}
