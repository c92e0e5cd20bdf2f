//! WebDataset tar shards (`.tar`, `.tar.gz`, `.tgz`): row i is sample i as
//! the `webdataset` package (1.0) yields it, each member extension a column.
//!
//! Why a reader of its own: a shard's labels are `.cls` members, and the
//! classic way a label reaches `cross_entropy` out of range is a sample
//! grouped differently than its writer meant. So samples are formed exactly
//! as `tar_file_iterator` + `group_by_keys` form them (`names`): members
//! that are not regular files, metadata (`__*__`) and names without an
//! extension are passed over; the key is the path up to the first dot of the
//! base name, the suffix lower-cased; consecutive members with one key make
//! a sample; a suffix repeated within a sample raises `ValueError` in
//! `webdataset`, so it is this file's error here; a sample holding a
//! non-empty `__bad__` member is dropped, as `valid_sample` drops it.
//!
//! Columns: `cls`, `cls2`, `index`, `inx` and `id` (the last dot-separated
//! part of the suffix, as `autodecode` matches it) are integers read as
//! `int(data)` does (int64, or float64 in a batch holding a number beyond
//! int64; text `int()` refuses is the file's error); every other member is a
//! Binary column of its raw bytes (images are decoded by the table-wide
//! `decode` transform, not here). A sample lacking a member is null there.
//!
//! Warnings ([`Source::notes`]): members whose base name has more than one
//! dot (their column is `b.png`, not `png`, and samples that share the part
//! before the first dot merge), a key that comes back after other keys (its
//! members become two samples), members `webdataset` drops (no extension),
//! samples dropped as `__bad__`.
//!
//! Reading: an uncompressed shard is read by hopping over its data
//! (`crate::source::storage::Input::hops` and `window`); opening walks its
//! headers only to learn the columns, the samples and the unit
//! boundaries (every `UNIT_BYTES` at a sample start), so units
//! read in parallel and only the asked columns' data is touched. A
//! compressed shard (gzip, bzip2 or zstd, recognised by content, as
//! `tarfile`'s `r|*` mode does) is one unit, streamed twice: once to list
//! it, once to read it. A member read is at most `MAX_MEMBER` bytes.

mod names;
mod tarwalk;

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{ArrayRef, BinaryArray, Float64Array, Int64Array, RecordBatch, RecordBatchOptions};
use arrow::buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{Field, Schema};

use self::names::PyInt;
use self::tarwalk::{Flow, Member};
use crate::error::ReadError;
use crate::source::format::Format;
use crate::source::read::{BATCH_ROWS, Batch, Source};
use crate::source::storage::{self, Input};

/// A WebDataset tar shard (`.tar`, `.tar.gz`, `.tgz`; compression by
/// content). A search keeps its shards when one has a member the schema
/// names.
pub(crate) const FORMAT: Format = Format::new(
    "webdataset",
    |n, _| matches!(n.ext, Some("tar" | "tgz")),
    |path, _| Ok(Box::new(WdsSource::open(path)?)),
)
.sniffed(|head| head.get(257..262) == Some(b"ustar"))
.shards(provides_any);

/// Largest member whose data is read (an image, a label): a header claiming
/// more is the file's error rather than an allocation.
pub(crate) const MAX_MEMBER: u64 = 256 << 20;
/// An uncompressed shard is split into units of about this many bytes.
const UNIT_BYTES: u64 = 64 << 20;
/// Most distinct member extensions a shard may have (they are its columns).
const MAX_COLUMNS: usize = 100_000;
/// Binary data gathered into one batch before it is handed on.
const BATCH_BYTES: usize = 32 << 20;

/// How the tar stream is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compression {
    None,
    Gzip,
    Bzip2,
    Zstd,
}

impl Compression {
    /// By content, as `tarfile.open(mode="r|*")` decides.
    fn sniff(path: &Path) -> Result<Compression, ReadError> {
        let head = storage::head(path, 6)?;
        Ok(if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(b"BZh") {
            Compression::Bzip2
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
            return Err(ReadError::new(
                "an xz-compressed tar: preflight reads plain, gzip, bzip2 and zstd tars",
            ));
        } else {
            Compression::None
        })
    }

    /// The tar stream, decompressed ([`storage::sequential`]).
    fn stream(self, path: &Path) -> Result<Box<dyn Read>, ReadError> {
        let file = storage::sequential(path)?;
        Ok(match self {
            Compression::None => Box::new(file),
            Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(file)),
            Compression::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(file)),
            Compression::Zstd => Box::new(
                zstd::stream::read::Decoder::with_buffer(file)
                    .map_err(|e| ReadError::new(format!("not a zstd stream: {e}")))?,
            ),
        })
    }
}

/// A range of whole samples read as one unit.
#[derive(Debug, Clone)]
struct Unit {
    /// Byte offset of its first header (uncompressed shards).
    offset: u64,
    /// Byte offset where the next unit starts.
    end: Option<u64>,
    /// File row of its first sample.
    first_row: u64,
}

/// A WebDataset shard, listed and ready to read.
pub(crate) struct WdsSource {
    path: PathBuf,
    compression: Compression,
    /// The file's size, for an uncompressed shard (read by window).
    len: Option<u64>,
    /// An uncompressed shard, its units read by window.
    input: Option<Input>,
    columns: Vec<String>,
    units: Vec<Unit>,
    notes: Vec<String>,
}

/// What one pass over members does with each sample's members.
trait Visit {
    /// A member of the current sample (`column` indexes the columns seen so
    /// far, `row` is the sample's row if it is kept).
    fn member<R: Read>(
        &mut self,
        row: u64,
        key: &[u8],
        column: usize,
        m: &mut Member<'_, '_, R>,
    ) -> Result<(), ReadError>;
    /// The current sample ended; `keep` is false for a `__bad__` sample.
    fn end_sample(&mut self, keep: bool) -> Result<(), ReadError>;
}

/// Grouping state shared by the listing and the reading pass.
struct Grouper {
    columns: Vec<String>,
    /// Column of each (lower-cased) suffix, and a buffer to look one up.
    index: std::collections::HashMap<Vec<u8>, usize>,
    scratch: Vec<u8>,
    key: Option<Vec<u8>>,
    /// For each column, the serial of the last sample that had it (so a
    /// repeat is found in constant time however many members a sample has).
    seen: Vec<u64>,
    /// Serial of the current sample (from 1) and how many members it has.
    serial: u64,
    members: usize,
    bad: bool,
    /// Samples kept so far (the next kept sample's row).
    rows: u64,
}

impl Grouper {
    fn new(columns: Vec<String>, first_row: u64) -> Grouper {
        let index = columns
            .iter()
            .enumerate()
            .map(|(i, c)| (c.as_bytes().to_vec(), i))
            .collect();
        Grouper {
            columns,
            index,
            scratch: Vec::new(),
            key: None,
            seen: Vec::new(),
            serial: 0,
            members: 0,
            bad: false,
            rows: first_row,
        }
    }

    /// The column of a raw suffix, lower-cased (without allocating when it
    /// is ASCII and already known: this runs for every member).
    fn column(&mut self, suffix: &[u8]) -> Result<usize, ReadError> {
        self.scratch.clear();
        if suffix.is_ascii() {
            self.scratch.extend(suffix.iter().map(u8::to_ascii_lowercase));
        } else {
            self.scratch.extend_from_slice(names::lower(suffix).as_bytes());
        }
        if let Some(&c) = self.index.get(&self.scratch[..]) {
            return Ok(c);
        }
        if self.columns.len() >= MAX_COLUMNS {
            return Err(ReadError::new(format!(
                "more than {MAX_COLUMNS} distinct member extensions: not read by preflight"
            )));
        }
        self.columns.push(String::from_utf8_lossy(&self.scratch).into_owned());
        self.index.insert(self.scratch.clone(), self.columns.len() - 1);
        Ok(self.columns.len() - 1)
    }

    /// Ends the current sample, if any; returns whether one was kept.
    fn finish(&mut self, v: &mut impl Visit) -> Result<bool, ReadError> {
        if self.key.take().is_none() {
            return Ok(false);
        }
        let keep = !self.bad;
        v.end_sample(keep)?;
        self.members = 0;
        self.bad = false;
        if keep {
            self.rows += 1;
        }
        Ok(keep)
    }

    /// One member: `Ok(Some(true))` when it starts a new sample.
    fn member<R: Read>(
        &mut self,
        m: &mut Member<'_, '_, R>,
        notes: &mut Notes,
        v: &mut impl Visit,
    ) -> Result<Option<bool>, ReadError> {
        if names::is_meta(m.name) {
            return Ok(None);
        }
        let Some((key, suffix)) = names::base_plus_ext(m.name) else {
            notes.no_ext(m.name);
            return Ok(None);
        };
        let new = self.key.as_deref() != Some(key);
        if new {
            self.finish(v)?;
            self.key = Some(key.to_vec());
            self.serial += 1;
        }
        let c = self.column(suffix)?;
        let suffix = self.columns[c].as_str();
        if suffix.contains('.') {
            notes.dotted(m.name, key, suffix);
        }
        let row = self.rows;
        let here = || format!("sample {row} (key {})", String::from_utf8_lossy(key));
        // `__key__` and `__url__` are in every sample dict from its start,
        // `__local_path__` (local shards) from its first member on.
        if suffix == "__key__" || suffix == "__url__" || (suffix == "__local_path__" && self.members > 0) {
            return Err(duplicate(m.name, suffix).at(here()));
        }
        if self.seen.len() <= c {
            self.seen.resize(c + 1, 0);
        }
        if self.seen[c] == self.serial {
            return Err(duplicate(m.name, suffix).at(here()));
        }
        self.seen[c] = self.serial;
        self.members += 1;
        if suffix == "__bad__" && m.size > 0 {
            self.bad = true;
            notes.bad(key);
        }
        v.member(row, key, c, m).map_err(|e| e.at(here()))?;
        Ok(Some(new))
    }
}

fn duplicate(name: &[u8], suffix: &str) -> ReadError {
    ReadError::new(format!(
        "member {} repeats suffix '{suffix}' within one sample: webdataset raises ValueError (duplicate file name)",
        String::from_utf8_lossy(name)
    ))
}

/// Findings that do not stop the check, counted with a first example each.
#[derive(Default)]
struct Notes {
    dotted: (u64, String),
    no_ext: (u64, String),
    bad: (u64, String),
    split: (u64, String),
    keys: HashSet<u128>,
    /// The shard ends right after its last member, without the zero blocks
    /// that end a tar archive.
    unterminated: bool,
}

impl Notes {
    fn dotted(&mut self, name: &[u8], key: &[u8], suffix: &str) {
        if self.dotted.0 == 0 {
            self.dotted.1 = format!(
                "{} has key '{}' and column '{suffix}'",
                String::from_utf8_lossy(name),
                String::from_utf8_lossy(key)
            );
        }
        self.dotted.0 += 1;
    }
    fn no_ext(&mut self, name: &[u8]) {
        if self.no_ext.0 == 0 {
            self.no_ext.1 = String::from_utf8_lossy(name).into_owned();
        }
        self.no_ext.0 += 1;
    }
    fn bad(&mut self, key: &[u8]) {
        if self.bad.0 == 0 {
            self.bad.1 = String::from_utf8_lossy(key).into_owned();
        }
        self.bad.0 += 1;
    }
    /// A sample starts with `key`: was it seen before?
    fn start(&mut self, key: &[u8], row: u64) {
        if !self.keys.insert(twox_hash::XxHash3_128::oneshot(key)) {
            if self.split.0 == 0 {
                self.split.1 = format!("key '{}' at sample {row}", String::from_utf8_lossy(key));
            }
            self.split.0 += 1;
        }
    }

    fn into_messages(self) -> Vec<String> {
        let mut out = Vec::new();
        if self.dotted.0 > 0 {
            out.push(format!(
                "{} member(s) have a dot in their base name beyond the extension; webdataset keys them by the part \
                 before the first dot (first: {}), so samples sharing that part merge and the column is not the \
                 plain extension",
                self.dotted.0, self.dotted.1
            ));
        }
        if self.split.0 > 0 {
            out.push(format!(
                "{} sample(s) repeat a key that an earlier, non-adjacent sample had (first: {}): webdataset groups \
                 only consecutive members, so that key's members are split over separate samples",
                self.split.0, self.split.1
            ));
        }
        if self.no_ext.0 > 0 {
            out.push(format!(
                "{} member(s) have no extension and are dropped by webdataset (first: {})",
                self.no_ext.0, self.no_ext.1
            ));
        }
        if self.bad.0 > 0 {
            out.push(format!(
                "{} sample(s) hold a non-empty __bad__ member and are dropped by webdataset (first key: {})",
                self.bad.0, self.bad.1
            ));
        }
        if self.unterminated {
            out.push(
                "the shard ends right after its last member, without the zero blocks that end every tar archive \
                 (Python's tarfile and GNU tar write them): it was probably cut at a member boundary, and webdataset \
                 reads the samples present without a word, so the rest would be lost silently"
                    .into(),
            );
        }
        out
    }
}

/// The listing pass: columns and unit boundaries.
struct Lister {
    units: Vec<Unit>,
    unit_rows: u64,
    split: bool,
}

impl Visit for Lister {
    fn member<R: Read>(&mut self, _: u64, _: &[u8], _: usize, _: &mut Member<'_, '_, R>) -> Result<(), ReadError> {
        Ok(())
    }
    fn end_sample(&mut self, keep: bool) -> Result<(), ReadError> {
        self.unit_rows += u64::from(keep);
        Ok(())
    }
}

impl WdsSource {
    /// Lists the shard at `path`.
    pub(crate) fn open(path: &Path) -> Result<WdsSource, ReadError> {
        WdsSource::open_split(path, UNIT_BYTES)
    }

    /// [`WdsSource::open`] with units of about `unit_bytes`.
    fn open_split(path: &Path, unit_bytes: u64) -> Result<WdsSource, ReadError> {
        let compression = Compression::sniff(path)?;
        let mut notes = Notes::default();
        let mut grouper = Grouper::new(Vec::new(), 0);
        let mut lister = Lister {
            units: vec![Unit {
                offset: 0,
                end: None,
                first_row: 0,
            }],
            unit_rows: 0,
            split: compression == Compression::None,
        };
        let mut input = None;
        let len = if compression == Compression::None {
            // Listed by its headers (data hopped over), then each unit read
            // as a window of its bytes.
            let file = Input::open(path)?;
            let len = file.size();
            let mut archive = tar::Archive::new(file.hops()?);
            let entries = archive.entries_with_seek().map_err(tarwalk::tar_error)?.raw(true);
            let end = tarwalk::walk(entries, Some(len), |mut m| {
                list_member(&mut grouper, &mut lister, &mut notes, &mut m, unit_bytes)
            })?;
            notes.unterminated = end > 0 && end >= len;
            input = Some(file);
            Some(len)
        } else {
            let mut archive = tar::Archive::new(compression.stream(path)?);
            let entries = archive.entries().map_err(tarwalk::tar_error)?.raw(true);
            tarwalk::walk(entries, None, |mut m| {
                list_member(&mut grouper, &mut lister, &mut notes, &mut m, unit_bytes)
            })?;
            None
        };
        grouper.finish(&mut lister)?;
        Ok(WdsSource {
            path: path.to_path_buf(),
            compression,
            len,
            input,
            columns: grouper.columns,
            units: lister.units,
            notes: notes.into_messages(),
        })
    }

    /// Reads unit `unit` calling `visit` for its members.
    fn walk_unit(&self, unit: usize, reader: &mut Reader) -> Result<(), ReadError> {
        let u = &self.units[unit];
        let mut grouper = Grouper::new(self.columns.clone(), u.first_row);
        let mut notes = Notes::default();
        // Members from the next unit's first header on belong to it.
        let stop = u.end.map(|e| e - u.offset);
        fn step<R: Read>(
            stop: Option<u64>,
            m: &mut Member<'_, '_, R>,
            g: &mut Grouper,
            notes: &mut Notes,
            r: &mut Reader,
        ) -> Result<Flow, ReadError> {
            if stop.is_some_and(|e| m.start >= e) {
                return Ok(Flow::Stop);
            }
            g.member(m, notes, r)?;
            Ok(Flow::Continue)
        }
        match (self.len, &self.input) {
            (Some(len), Some(input)) => {
                // Only headers and the asked members' data are read (a shard
                // is mostly images left unread).
                let end = u.end.unwrap_or(len);
                let mut archive = tar::Archive::new(input.window(u.offset..end)?);
                let entries = archive.entries_with_seek().map_err(tarwalk::tar_error)?.raw(true);
                tarwalk::walk(entries, Some(end - u.offset), |mut m| {
                    step(stop, &mut m, &mut grouper, &mut notes, reader)
                })?;
            }
            _ => {
                let mut archive = tar::Archive::new(self.compression.stream(&self.path)?);
                let entries = archive.entries().map_err(tarwalk::tar_error)?.raw(true);
                tarwalk::walk(entries, None, |mut m| {
                    step(stop, &mut m, &mut grouper, &mut notes, reader)
                })?;
            }
        }
        grouper.finish(reader)?;
        reader.flush()
    }
}

fn list_member<R: Read>(
    grouper: &mut Grouper,
    lister: &mut Lister,
    notes: &mut Notes,
    m: &mut Member<'_, '_, R>,
    unit_bytes: u64,
) -> Result<Flow, ReadError> {
    // A unit boundary is decided at the first member of a sample: when the
    // key changes, the previous sample is complete.
    let had_sample = grouper.key.is_some();
    if let Some(true) = grouper.member(m, notes, lister)? {
        let key = grouper.key.as_deref().unwrap_or_default();
        notes.start(key, grouper.rows);
        let last = lister.units.last().map_or(0, |u| u.offset);
        if lister.split && had_sample && lister.unit_rows > 0 && m.start - last >= unit_bytes {
            if let Some(u) = lister.units.last_mut() {
                u.end = Some(m.start);
            }
            lister.units.push(Unit {
                offset: m.start,
                end: None,
                first_row: grouper.rows,
            });
            lister.unit_rows = 0;
        }
    }
    Ok(Flow::Continue)
}

/// One projected column being gathered.
enum ColBuf {
    Int {
        values: Vec<i64>,
        big: Vec<(usize, f64)>,
        valid: Vec<bool>,
        pending: Option<PyInt>,
    },
    Bin {
        data: Vec<u8>,
        offsets: Vec<i32>,
        valid: Vec<bool>,
        /// Where the current sample's value starts in `data`, when it has one.
        pending: Option<usize>,
    },
}

/// The reading pass: projected members gathered into batches.
struct Reader<'s> {
    /// For each file column, its slot in `cols` when projected.
    slot: Vec<Option<usize>>,
    names: Vec<String>,
    cols: Vec<ColBuf>,
    /// Order of the asked projection, as slots.
    order: Vec<usize>,
    rows: usize,
    first_row: u64,
    scratch: Vec<u8>,
    sink: &'s mut dyn FnMut(Batch) -> Result<(), ReadError>,
}

impl Reader<'_> {
    fn bytes(&self) -> usize {
        self.cols
            .iter()
            .map(|c| match c {
                ColBuf::Bin { data, .. } => data.len(),
                ColBuf::Int { .. } => 0,
            })
            .sum()
    }

    fn flush(&mut self) -> Result<(), ReadError> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.cols.len());
        for c in &mut self.cols {
            arrays.push(match c {
                ColBuf::Int { values, big, valid, .. } => {
                    let nulls = NullBuffer::from(std::mem::take(valid));
                    let values = std::mem::take(values);
                    if big.is_empty() {
                        Arc::new(Int64Array::new(ScalarBuffer::from(values), Some(nulls)))
                    } else {
                        let mut f: Vec<f64> = values.iter().map(|&v| v as f64).collect();
                        for (i, v) in big.drain(..) {
                            f[i] = v;
                        }
                        Arc::new(Float64Array::new(ScalarBuffer::from(f), Some(nulls)))
                    }
                }
                ColBuf::Bin {
                    data, offsets, valid, ..
                } => {
                    let nulls = NullBuffer::from(std::mem::take(valid));
                    let offs = std::mem::replace(offsets, vec![0]);
                    let data = std::mem::take(data);
                    Arc::new(BinaryArray::new(
                        OffsetBuffer::new(ScalarBuffer::from(offs)),
                        Buffer::from_vec(data),
                        Some(nulls),
                    ))
                }
            });
        }
        let cols: Vec<ArrayRef> = self.order.iter().map(|&s| Arc::clone(&arrays[s])).collect();
        let fields: Vec<Field> = self
            .order
            .iter()
            .zip(&cols)
            .map(|(&s, a)| Field::new(self.names[s].clone(), a.data_type().clone(), true))
            .collect();
        let opts = RecordBatchOptions::new().with_row_count(Some(self.rows));
        let batch = RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), cols, &opts)?;
        let first_row = self.first_row;
        self.first_row += self.rows as u64;
        self.rows = 0;
        (self.sink)(Batch { first_row, batch })
    }
}

impl Visit for Reader<'_> {
    fn member<R: Read>(
        &mut self,
        _row: u64,
        key: &[u8],
        column: usize,
        m: &mut Member<'_, '_, R>,
    ) -> Result<(), ReadError> {
        let Some(Some(s)) = self.slot.get(column).copied() else {
            return Ok(());
        };
        if m.size > MAX_MEMBER {
            return Err(ReadError::new(format!(
                "member {} is {} bytes (preflight reads members of at most {MAX_MEMBER})",
                String::from_utf8_lossy(m.name),
                m.size
            )));
        }
        let read_err = |e: std::io::Error| tarwalk::tar_error(e);
        match &mut self.cols[s] {
            ColBuf::Int { pending, .. } => {
                self.scratch.clear();
                (&mut *m.data)
                    .take(m.size)
                    .read_to_end(&mut self.scratch)
                    .map_err(read_err)?;
                if (self.scratch.len() as u64) < m.size {
                    return Err(ReadError::new("truncated tar archive: the data ends inside a member"));
                }
                let v = names::parse_int(&self.scratch).map_err(|why| {
                    let shown: String = String::from_utf8_lossy(&self.scratch).chars().take(40).collect();
                    ReadError::new(format!(
                        "member {}: {shown:?} is {why}: webdataset's int() raises ValueError",
                        String::from_utf8_lossy(m.name)
                    ))
                })?;
                *pending = Some(v);
            }
            ColBuf::Bin { data, pending, .. } => {
                let at = data.len();
                (&mut *m.data).take(m.size).read_to_end(data).map_err(read_err)?;
                if ((data.len() - at) as u64) < m.size {
                    return Err(ReadError::new("truncated tar archive: the data ends inside a member"));
                }
                *pending = Some(at);
            }
        }
        let _ = key;
        Ok(())
    }

    fn end_sample(&mut self, keep: bool) -> Result<(), ReadError> {
        let row = self.rows;
        for c in &mut self.cols {
            match c {
                ColBuf::Int {
                    values,
                    big,
                    valid,
                    pending,
                } => {
                    let p = pending.take();
                    if keep {
                        match p {
                            Some(PyInt::Int(v)) => values.push(v),
                            Some(PyInt::Big(f)) => {
                                values.push(0);
                                big.push((row, f));
                            }
                            None => values.push(0),
                        }
                        valid.push(p.is_some());
                    }
                }
                ColBuf::Bin {
                    data,
                    offsets,
                    valid,
                    pending,
                } => {
                    let p = pending.take();
                    if keep {
                        offsets.push(data.len() as i32);
                        valid.push(p.is_some());
                    } else if let Some(at) = p {
                        data.truncate(at);
                    }
                }
            }
        }
        if keep {
            self.rows += 1;
            if self.rows >= BATCH_ROWS || self.bytes() >= BATCH_BYTES {
                self.flush()?;
            }
        }
        Ok(())
    }
}

impl Source for WdsSource {
    fn columns(&self) -> &[String] {
        &self.columns
    }

    fn units(&self) -> usize {
        self.units.len()
    }

    fn read(
        &self,
        unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        let mut slot = vec![None; self.columns.len()];
        let mut cols = Vec::new();
        let mut names = Vec::new();
        let mut order = Vec::with_capacity(projection.len());
        for &p in projection {
            let s = match slot[p] {
                Some(s) => s,
                None => {
                    slot[p] = Some(cols.len());
                    names.push(self.columns[p].clone());
                    cols.push(if names::is_int_column(&self.columns[p]) {
                        ColBuf::Int {
                            values: Vec::new(),
                            big: Vec::new(),
                            valid: Vec::new(),
                            pending: None,
                        }
                    } else {
                        ColBuf::Bin {
                            data: Vec::new(),
                            offsets: vec![0],
                            valid: Vec::new(),
                            pending: None,
                        }
                    });
                    cols.len() - 1
                }
            };
            order.push(s);
        }
        let mut reader = Reader {
            slot,
            names,
            cols,
            order,
            rows: 0,
            first_row: self.units[unit].first_row,
            scratch: Vec::new(),
            sink,
        };
        self.walk_unit(unit, &mut reader)
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}

/// Whether the shard has a member the schema's `columns` name: in its first
/// sample only (`deep` false: a directory search's cheap look), or in any
/// sample (`deep` true: headers only, seeking past data in an uncompressed
/// shard). A shard that cannot be listed answers true, so that its error is
/// reported.
pub(crate) fn provides_any(path: &Path, columns: &[String], deep: bool) -> bool {
    let Ok(compression) = Compression::sniff(path) else {
        return true;
    };
    let mut first_key: Option<Vec<u8>> = None;
    let mut found = false;
    let mut members = 0;
    let mut visit = |name: &[u8]| {
        members += 1;
        if names::is_meta(name) {
            return Flow::Continue;
        }
        let Some((key, suffix)) = names::base_plus_ext(name) else {
            return Flow::Continue;
        };
        if !deep {
            match &first_key {
                Some(k) if k != key => return Flow::Stop,
                Some(_) => {}
                None => first_key = Some(key.to_vec()),
            }
        }
        found |= columns.iter().any(|c| *c == names::lower(suffix));
        if found || (!deep && members > 1000) {
            Flow::Stop
        } else {
            Flow::Continue
        }
    };
    let walked = if deep && compression == Compression::None {
        let Ok(file) = Input::open(path) else { return true };
        let len = file.size();
        let Ok(hops) = file.hops() else { return true };
        let mut archive = tar::Archive::new(hops);
        let Ok(entries) = archive.entries_with_seek() else {
            return true;
        };
        tarwalk::walk(entries.raw(true), Some(len), |m| Ok(visit(m.name))).map(|_| ())
    } else {
        let Ok(stream) = compression.stream(path) else {
            return true;
        };
        let mut archive = tar::Archive::new(stream);
        let Ok(entries) = archive.entries() else {
            return true;
        };
        tarwalk::walk(entries.raw(true), None, |m| Ok(visit(m.name))).map(|_| ())
    };
    found || walked.is_err()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::Int64Type;

    /// Writes `script` with the test venv's webdataset in `dir`.
    fn python(dir: &Path, script: &str) {
        let out = std::process::Command::new(crate::source::test_python())
            .arg("-c")
            .arg(script)
            .current_dir(dir)
            .output()
            .expect("python");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    /// Every (row, cls) of every unit, and the rows each batch starts at.
    fn read_all(src: &WdsSource, column: usize) -> Vec<(u64, Option<i64>)> {
        let mut out = Vec::new();
        for u in 0..src.units() {
            src.read(u, &[column], &mut |b| {
                let a = b.batch.column(0).as_primitive::<Int64Type>();
                for i in 0..a.len() {
                    out.push((b.first_row + i as u64, a.is_valid(i).then(|| a.value(i))));
                }
                Ok(())
            })
            .expect("read");
        }
        out
    }

    #[test]
    fn units_split_at_sample_starts_read_as_the_whole_shard() {
        let dir = tempfile::tempdir().expect("tempdir");
        python(
            dir.path(),
            "import webdataset as wds\n\
             with wds.TarWriter('s.tar') as w:\n\
             \x20   for i in range(300):\n\
             \x20       d = {'__key__': '%05d' % i, 'jpg': bytes(700 + i)}\n\
             \x20       if i % 7: d['cls'] = i\n\
             \x20       w.write(d)\n",
        );
        let path = dir.path().join("s.tar");
        let whole = WdsSource::open(&path).expect("open");
        assert_eq!(whole.units(), 1);
        let split = WdsSource::open_split(&path, 16 << 10).expect("open");
        assert!(split.units() > 10, "{} units", split.units());
        let cls = whole.columns().iter().position(|c| c == "cls").expect("cls");
        let a = read_all(&whole, cls);
        let b = read_all(&split, cls);
        assert_eq!(a.len(), 300);
        assert_eq!(a, b);
        let expected: Vec<(u64, Option<i64>)> = (0..300).map(|i| (i, (i % 7 != 0).then_some(i as i64))).collect();
        assert_eq!(a, expected);
    }

    #[test]
    fn damaged_shards_are_errors_not_panics() {
        let dir = tempfile::tempdir().expect("tempdir");
        python(
            dir.path(),
            "import webdataset as wds\n\
             with wds.TarWriter('s.tar') as w:\n\
             \x20   for i in range(6):\n\
             \x20       w.write({'__key__': 'k%d' % i, 'cls': i, 'png': b'x' * i})\n",
        );
        let good = std::fs::read(dir.path().join("s.tar")).expect("read");
        let path = dir.path().join("m.tar");
        // A fixed pseudo-random sequence of byte changes (xorshift).
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..300 {
            let mut bytes = good.clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() % bytes.len() as u64) as usize;
                bytes[at] = next() as u8;
            }
            if next() % 4 == 0 {
                bytes.truncate((next() % bytes.len() as u64) as usize);
            }
            std::fs::write(&path, &bytes).expect("write");
            if let Ok(src) = WdsSource::open(&path) {
                let all: Vec<usize> = (0..src.columns().len()).collect();
                for u in 0..src.units() {
                    let _ = src.read(u, &all, &mut |_| Ok(()));
                }
            }
        }
    }
}
