//! TFRecord files of `tf.train.Example` records (`.tfrecord`, `.tfrecords`,
//! and `.gz` of them): row i is record i, each feature a list column —
//! `int64_list` as `list<int64>`, `float_list` as `list<float32>`, `bytes_list`
//! as `list<binary>`. A feature a record lacks (or holds with no kind set) is
//! null in that row: the `tfrecord` package raises `KeyError` for it, and
//! TensorFlow's `FixedLenFeature` without a default fails, so by default it
//! is a `null` violation.
//!
//! Framing and both checksums are checked on every record (`framing`);
//! the messages are prost structs derived by hand (`proto`). A feature
//! whose kind differs between records is the file's error naming both
//! records (no reader can give it one type); a `SequenceExample` is refused
//! (see `proto::SequenceProbe` for how it is told apart: read as an
//! `Example` it would parse, showing only its context).
//!
//! Opening lists the file: for an uncompressed file, memory-mapped, each
//! record's length checksum, the feature names and kinds (values skipped),
//! and unit boundaries every `UNIT_BYTES` at a record start, so that units
//! (their data checksums and values) are read in parallel. A gzip file is
//! one unit, decompressed twice (once to list, once to read), with records
//! of at most `framing::MAX_RECORD` bytes.

mod framing;
mod proto;
mod skim;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{ArrayRef, BinaryArray, Float32Array, Int64Array, ListArray, RecordBatch, RecordBatchOptions};
use arrow::buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{DataType, Field, Schema};
use bytes::Bytes;
use memmap2::Mmap;
use prost::Message;

use self::framing::{MapRecords, StreamRecords};
use self::proto::{EntryRaw, ExampleRaw, Feature, FeatureKind, Kind, KindOnly, SequenceProbe};
use crate::error::ReadError;
use crate::source::format::Format;
use crate::source::read::{BATCH_ROWS, Batch, Source};
use crate::source::storage;
use crate::source::storage::Input;

/// A TFRecord file of `tf.train.Example` records (`.tfrecord`,
/// `.tfrecords`, `.gz` of them, or TF-slim's `train-00000-of-01024` known
/// by its framing). A search keeps its files when one has a feature the
/// schema names.
pub(crate) const FORMAT: Format = Format::new(
    "tfrecord",
    |n, _| matches!(n.ext, Some("tfrecord" | "tfrecords")),
    |path, _| Ok(Box::new(TfRecordSource::open(path)?)),
)
.sniffed(looks_like)
.shards(provides_any);

/// An uncompressed file is split into units of about this many bytes.
const UNIT_BYTES: usize = 16 << 20;
/// Records of at least this many bytes are listed by position ([`skim`]);
/// smaller ones, whose pages the listing touches anyway, through the map.
const SKIM_MIN: usize = 16 << 10;
/// Most distinct feature names a file may have (they are its columns).
const MAX_FEATURES: usize = 100_000;
/// Feature bytes gathered into one batch before it is handed on.
const BATCH_BYTES: usize = 32 << 20;

/// A feature's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FKind {
    Bytes,
    Float,
    Int64,
}

impl FKind {
    fn name(self) -> &'static str {
        match self {
            FKind::Bytes => "bytes_list",
            FKind::Float => "float_list",
            FKind::Int64 => "int64_list",
        }
    }
}

/// A run of records read as one unit.
#[derive(Debug, Clone)]
struct Unit {
    offset: usize,
    first_row: u64,
    rows: u64,
}

/// A TFRecord file, listed and ready to read.
pub(crate) struct TfRecordSource {
    path: PathBuf,
    gzip: bool,
    map: Option<(Arc<Mmap>, Bytes)>,
    /// An uncompressed object in storage, its units read by range.
    object: Option<Input>,
    columns: Vec<String>,
    kinds: Vec<Option<(FKind, u64)>>,
    units: Vec<Unit>,
}

/// The record's entries, the last one of each key kept, in record order.
fn entries(data: Bytes) -> Result<Vec<EntryRaw>, String> {
    let ex = ExampleRaw::decode(data.clone()).map_err(|e| format!("not a tf.train.Example ({e})"))?;
    if SequenceProbe::decode(data).is_ok_and(|p| !p.feature_lists.is_empty()) {
        return Err(
            "a tf.train.SequenceExample: preflight reads tf.train.Example records only (read as an \
                    Example it would show only its context features)"
                .into(),
        );
    }
    let mut all: Vec<EntryRaw> = ex.features.into_iter().flat_map(|f| f.feature).collect();
    // Map semantics: a repeated key keeps its last entry (a hash set for
    // records with many features, so a hostile record is not quadratic).
    let keep: Vec<bool> = if all.len() <= 16 {
        (0..all.len())
            .map(|i| !all[i + 1..].iter().any(|e| e.key == all[i].key))
            .collect()
    } else {
        let mut seen = std::collections::HashSet::with_capacity(all.len());
        let mut keep: Vec<bool> = all.iter().rev().map(|e| seen.insert(e.key.clone())).collect();
        keep.reverse();
        keep
    };
    let mut k = keep.iter();
    all.retain(|_| *k.next().unwrap_or(&true));
    for e in &all {
        if std::str::from_utf8(&e.key).is_err() {
            return Err("not a tf.train.Example (a feature name is not UTF-8)".into());
        }
    }
    Ok(all)
}

/// A feature's kind from its value parts (merged: the last kind set wins).
fn kind_of(parts: &[Bytes]) -> Result<Option<FKind>, String> {
    let mut f = FeatureKind::default();
    for p in parts {
        f.merge(p.clone())
            .map_err(|e| format!("not a tf.train.Example ({e})"))?;
    }
    Ok(f.kind.map(|k| match k {
        KindOnly::Bytes(_) => FKind::Bytes,
        KindOnly::Float(_) => FKind::Float,
        KindOnly::Int64(_) => FKind::Int64,
    }))
}

/// The listing pass over one record.
struct Lister {
    columns: Vec<String>,
    index: std::collections::HashMap<Bytes, usize>,
    kinds: Vec<Option<(FKind, u64)>>,
}

impl Lister {
    fn record(&mut self, data: Bytes, record: u64) -> Result<(), String> {
        for e in entries(data)? {
            let kind = kind_of(&e.value)?;
            self.add(&e.key, kind, record)?;
        }
        Ok(())
    }

    /// One entry of record `record`: its (UTF-8) key and kind.
    fn add(&mut self, key: &[u8], kind: Option<FKind>, record: u64) -> Result<(), String> {
        let c = match self.index.get(key) {
            Some(&c) => c,
            None => {
                if self.columns.len() >= MAX_FEATURES {
                    return Err(format!(
                        "more than {MAX_FEATURES} distinct features: not read by preflight"
                    ));
                }
                self.columns
                    .push(std::str::from_utf8(key).unwrap_or_default().to_string());
                self.kinds.push(None);
                self.index.insert(Bytes::copy_from_slice(key), self.columns.len() - 1);
                self.columns.len() - 1
            }
        };
        let Some(kind) = kind else { return Ok(()) };
        match self.kinds[c] {
            None => self.kinds[c] = Some((kind, record)),
            Some((k, first)) if k != kind => {
                return Err(format!(
                    "feature '{}' is {} here but {} in record {first}: no reader gives it one type",
                    self.columns[c],
                    kind.name(),
                    k.name()
                ));
            }
            Some(_) => {}
        }
        Ok(())
    }
}

impl TfRecordSource {
    /// Lists the file at `path`.
    pub(crate) fn open(path: &Path) -> Result<TfRecordSource, ReadError> {
        TfRecordSource::open_split(path, UNIT_BYTES, SKIM_MIN)
    }

    /// [`TfRecordSource::open`] with units of about `unit_bytes`, records
    /// of `skim_min` bytes or more listed by position.
    fn open_split(path: &Path, unit_bytes: usize, skim_min: usize) -> Result<TfRecordSource, ReadError> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        if name.ends_with(".zst") || name.ends_with(".zstd") {
            return Err(ReadError::new(
                "a zstd-compressed TFRecord: TensorFlow writes TFRecords plain or gzip-compressed",
            ));
        }
        let gzip = name.ends_with(".gz");
        let mut lister = Lister {
            columns: Vec::new(),
            index: Default::default(),
            kinds: Vec::new(),
        };
        let mut units = Vec::new();
        let input = Input::open(path)?;
        let mut object = None;
        // A local file is listed in place (its map); a compressed one, or an
        // object, as it streams.
        let map = if let Some(map) = input.map().filter(|_| !gzip).cloned() {
            let all = input.all()?;
            // Large records are listed by position (see `skim`): headers
            // too, while the records are large.
            let mut cursor = skim::Cursor::new(input.window(0..input.size())?);
            let mut skimmed = skim::Skimmed::default();
            let mut large = true;
            // The next record's offset and number.
            let (mut pos, mut record) = (0usize, 0u64);
            let mut unit_start = 0usize;
            while pos < map.len() {
                let (offset, r) = (pos, record);
                let mut h = [0u8; 12];
                let head = if large && map.len() - offset >= 12 && cursor.read_at(offset as u64, &mut h).is_some() {
                    &h[..]
                } else {
                    map.get(offset..offset + 12).unwrap_or(&map[offset..])
                };
                let (start, end) = match framing::frame(head, offset, map.len(), r) {
                    Err(e) if r == 0 && map.starts_with(&[0x1f, 0x8b]) => {
                        return Err(ReadError::new(format!(
                            "{}; the file is gzip-compressed: name it .gz",
                            e.message
                        )));
                    }
                    f => f?,
                };
                pos = end + 4;
                record += 1;
                if offset - unit_start >= unit_bytes || units.is_empty() {
                    if let Some(u) = units.last_mut() {
                        let u: &mut Unit = u;
                        u.rows = r - u.first_row;
                        // Listed: its pages can go (resident memory stays
                        // at a unit, not the file).
                        storage::release(&map, u.offset, offset - u.offset);
                    }
                    units.push(Unit {
                        offset,
                        first_row: r,
                        rows: 0,
                    });
                    unit_start = offset;
                }
                large = end - start >= skim_min;
                if large && skim::example(&mut cursor, start as u64, end as u64, &mut skimmed).is_some() {
                    for (key, kind) in skimmed.iter() {
                        lister
                            .add(key, kind, r)
                            .map_err(|e| ReadError::new(e).at(format!("record {r}")))?;
                    }
                    continue;
                }
                let data = all.slice(start..end);
                if let Err(e) = lister.record(data.clone(), r) {
                    let e = if framing::masked_crc(&data).to_le_bytes() == map[end..end + 4] {
                        e
                    } else {
                        "data checksum mismatch: the record is damaged".into()
                    };
                    return Err(ReadError::new(e).at(format!("record {r}")));
                }
            }
            if let Some(u) = units.last_mut() {
                u.rows = record - u.first_row;
            }
            storage::release(&map, 0, map.len());
            Some((map, all))
        } else {
            // Listed in order as it streams; an uncompressed object is then
            // split into units at record starts (as a local file is), each
            // read by one ranged request.
            let size = input.size();
            let mut records = StreamRecords {
                reader: stream(path, gzip)?,
                record: 0,
                total: (!gzip).then_some(size),
                pos: 0,
            };
            let (mut offset, mut unit_start) = (0usize, 0usize);
            units.push(Unit {
                offset: 0,
                first_row: 0,
                rows: 0,
            });
            loop {
                let r = records.record;
                let data = match records.next_record() {
                    Ok(Some(data)) => data,
                    Ok(None) => break,
                    Err(e) if r == 0 && !gzip && size >= 2 => {
                        if input.bytes(0..2)?[..] == [0x1f, 0x8b] {
                            return Err(ReadError::new(format!(
                                "{}; the file is gzip-compressed: name it .gz",
                                e.message
                            )));
                        }
                        return Err(e);
                    }
                    Err(e) => return Err(e),
                };
                if !gzip && offset - unit_start >= unit_bytes {
                    if let Some(u) = units.last_mut() {
                        u.rows = r - u.first_row;
                    }
                    units.push(Unit {
                        offset,
                        first_row: r,
                        rows: 0,
                    });
                    unit_start = offset;
                }
                offset += data.len() + 16;
                lister
                    .record(data, r)
                    .map_err(|e| ReadError::new(e).at(format!("record {r}")))?;
            }
            if let Some(u) = units.last_mut() {
                u.rows = records.record - u.first_row;
            }
            if !gzip {
                // As a local file: no record, no unit.
                if records.record == 0 {
                    units.clear();
                }
                object = Some(input);
            }
            None
        };
        Ok(TfRecordSource {
            path: path.to_path_buf(),
            gzip,
            map,
            object,
            columns: lister.columns,
            kinds: lister.kinds,
            units,
        })
    }
}

/// The file's records in order ([`storage::sequential`]); gunzipped when
/// `gzip`.
fn stream(path: &Path, gzip: bool) -> Result<Box<dyn std::io::Read>, ReadError> {
    let raw = storage::sequential(path)?;
    Ok(if gzip {
        Box::new(flate2::read::MultiGzDecoder::new(raw))
    } else {
        raw
    })
}

/// Reads `rows` records of `data` from byte `pos` (record `first_row`),
/// both checksums checked.
fn read_records(data: Bytes, pos: usize, first_row: u64, rows: u64, reader: &mut Reader) -> Result<(), ReadError> {
    let mut records = MapRecords {
        data,
        pos,
        record: first_row,
        check_data: true,
    };
    for _ in 0..rows {
        let r = records.record;
        match records.next_record()? {
            Some((_, data)) => reader.record(data, r)?,
            None => break,
        }
    }
    Ok(())
}

/// One projected feature being gathered: list offsets, row validity, values.
struct ColBuf {
    name: String,
    kind: FKind,
    offsets: Vec<i32>,
    valid: Vec<bool>,
    ints: Vec<i64>,
    floats: Vec<f32>,
    bytes: Vec<u8>,
    byte_offsets: Vec<i32>,
}

impl ColBuf {
    fn new(name: String, kind: FKind) -> ColBuf {
        ColBuf {
            name,
            kind,
            offsets: vec![0],
            valid: Vec::new(),
            ints: Vec::new(),
            floats: Vec::new(),
            bytes: Vec::new(),
            byte_offsets: vec![0],
        }
    }

    fn len(&self) -> usize {
        match self.kind {
            FKind::Int64 => self.ints.len(),
            FKind::Float => self.floats.len(),
            FKind::Bytes => self.byte_offsets.len() - 1,
        }
    }

    fn too_big(&self) -> Result<(), ReadError> {
        if self.len() > i32::MAX as usize || self.bytes.len() > i32::MAX as usize {
            return Err(ReadError::new("a batch of this feature holds more than 2^31 values"));
        }
        Ok(())
    }

    fn push(&mut self, feature: Option<Feature>) -> Result<(), ReadError> {
        let kind = feature.and_then(|f| f.kind);
        match kind {
            None => self.valid.push(false),
            Some(Kind::Int64List(l)) if self.kind == FKind::Int64 => {
                self.ints.extend_from_slice(&l.value);
                self.valid.push(true);
            }
            Some(Kind::FloatList(l)) if self.kind == FKind::Float => {
                self.floats.extend_from_slice(&l.value);
                self.valid.push(true);
            }
            Some(Kind::BytesList(l)) if self.kind == FKind::Bytes => {
                for v in &l.value {
                    self.bytes.extend_from_slice(v);
                    self.byte_offsets.push(self.bytes.len() as i32);
                }
                self.valid.push(true);
            }
            Some(_) => {
                return Err(ReadError::new(format!(
                    "feature '{}' changes kind (it is {} elsewhere)",
                    self.name,
                    self.kind.name()
                )));
            }
        }
        self.too_big()?;
        self.offsets.push(self.len() as i32);
        Ok(())
    }

    fn finish(&mut self) -> ArrayRef {
        let (values, item): (ArrayRef, DataType) = match self.kind {
            FKind::Int64 => (
                Arc::new(Int64Array::new(
                    ScalarBuffer::from(std::mem::take(&mut self.ints)),
                    None,
                )),
                DataType::Int64,
            ),
            FKind::Float => (
                Arc::new(Float32Array::new(
                    ScalarBuffer::from(std::mem::take(&mut self.floats)),
                    None,
                )),
                DataType::Float32,
            ),
            FKind::Bytes => (
                Arc::new(BinaryArray::new(
                    OffsetBuffer::new(ScalarBuffer::from(std::mem::replace(&mut self.byte_offsets, vec![0]))),
                    Buffer::from_vec(std::mem::take(&mut self.bytes)),
                    None,
                )),
                DataType::Binary,
            ),
        };
        let offsets = OffsetBuffer::new(ScalarBuffer::from(std::mem::replace(&mut self.offsets, vec![0])));
        let nulls = NullBuffer::from(std::mem::take(&mut self.valid));
        Arc::new(ListArray::new(
            Arc::new(Field::new("item", item, false)),
            offsets,
            values,
            Some(nulls),
        ))
    }
}

/// The reading pass: projected features gathered into batches.
struct Reader<'s> {
    cols: Vec<ColBuf>,
    /// For each asked column, its slot in `cols`.
    order: Vec<usize>,
    rows: usize,
    bytes: usize,
    first_row: u64,
    sink: &'s mut dyn FnMut(Batch) -> Result<(), ReadError>,
}

impl Reader<'_> {
    fn record(&mut self, data: Bytes, record: u64) -> Result<(), ReadError> {
        let bytes = data.len();
        let entries = entries(data).map_err(|e| ReadError::new(e).at(format!("record {record}")))?;
        for c in &mut self.cols {
            let found = entries.iter().find(|e| e.key.as_ref() == c.name.as_bytes());
            let feature = match found {
                None => None,
                Some(e) => {
                    let mut f = Feature::default();
                    for p in &e.value {
                        f.merge(p.clone()).map_err(|err| {
                            ReadError::new(format!("not a tf.train.Example ({err})")).at(format!("record {record}"))
                        })?;
                    }
                    Some(f)
                }
            };
            c.push(feature).map_err(|e| e.at(format!("record {record}")))?;
        }
        self.rows += 1;
        self.bytes += bytes;
        if self.rows >= BATCH_ROWS || self.bytes >= BATCH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ReadError> {
        if self.rows == 0 {
            return Ok(());
        }
        let arrays: Vec<ArrayRef> = self.cols.iter_mut().map(ColBuf::finish).collect();
        let cols: Vec<ArrayRef> = self.order.iter().map(|&s| Arc::clone(&arrays[s])).collect();
        let fields: Vec<Field> = self
            .order
            .iter()
            .zip(&cols)
            .map(|(&s, a)| Field::new(self.cols[s].name.clone(), a.data_type().clone(), true))
            .collect();
        let opts = RecordBatchOptions::new().with_row_count(Some(self.rows));
        let batch = RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), cols, &opts)?;
        let first_row = self.first_row;
        self.first_row += self.rows as u64;
        self.rows = 0;
        self.bytes = 0;
        (self.sink)(Batch { first_row, batch })
    }
}

impl Source for TfRecordSource {
    fn columns(&self) -> &[String] {
        &self.columns
    }

    fn empty(&self) -> bool {
        self.units.iter().all(|u| u.rows == 0)
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
        let u = &self.units[unit];
        let mut cols: Vec<ColBuf> = Vec::new();
        let mut order = Vec::with_capacity(projection.len());
        for &p in projection {
            let name = &self.columns[p];
            let s = match cols.iter().position(|c| &c.name == name) {
                Some(s) => s,
                None => {
                    // A feature never given a kind is null throughout.
                    let kind = self.kinds[p].map_or(FKind::Int64, |k| k.0);
                    cols.push(ColBuf::new(name.clone(), kind));
                    cols.len() - 1
                }
            };
            order.push(s);
        }
        let mut reader = Reader {
            cols,
            order,
            rows: 0,
            bytes: 0,
            first_row: u.first_row,
            sink,
        };
        match (&self.map, &self.object) {
            (Some((map, all)), _) => {
                let end = self.units.get(unit + 1).map_or(map.len(), |n| n.offset);
                storage::populate(map, u.offset, end - u.offset);
                let res = read_records(all.clone(), u.offset, u.first_row, u.rows, &mut reader);
                storage::release(map, u.offset, end - u.offset);
                res?;
            }
            (None, Some(input)) => {
                let end = self.units.get(unit + 1).map_or(input.size(), |n| n.offset as u64);
                let data = input.bytes(u.offset as u64..end)?;
                read_records(data, 0, u.first_row, u.rows, &mut reader)?;
            }
            (None, None) => {
                let mut records = StreamRecords {
                    reader: stream(&self.path, self.gzip)?,
                    record: 0,
                    total: None,
                    pos: 0,
                };
                while let Some(data) = records.next_record()? {
                    reader.record(data, records.record - 1)?;
                }
            }
        }
        reader.flush()
    }
}

/// Whether a file's first bytes are a TFRecord header: a length and its
/// masked CRC-32C (a chance match is one in 2^32).
pub(crate) fn looks_like(head: &[u8]) -> bool {
    head.len() >= 12 && framing::masked_crc(&head[..8]).to_le_bytes() == head[8..12]
}

/// Whether the file has a feature the schema's `columns` name: in its first
/// record only (`deep` false: a directory search's cheap look), or in any
/// record (`deep` true: feature names only, values and data checksums
/// skipped). A file whose records cannot be read answers true, so that its
/// error is reported.
pub(crate) fn provides_any(path: &Path, columns: &[String], deep: bool) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let has = |data: &Bytes| match entries(data.clone()) {
        Ok(es) => es
            .iter()
            .any(|e| columns.iter().any(|c| c.as_bytes() == e.key.as_ref())),
        Err(_) => true,
    };
    if name.ends_with(".gz") {
        let Ok(reader) = stream(path, true) else { return true };
        let mut records = StreamRecords {
            reader,
            record: 0,
            total: None,
            pos: 0,
        };
        loop {
            match records.next_record() {
                Ok(Some(data)) if has(&data) => return true,
                Ok(Some(_)) if deep => {}
                Ok(_) => return false,
                Err(_) => return true,
            }
        }
    }
    let Ok(input) = Input::open(path) else { return true };
    let data = if deep {
        input.all()
    } else {
        // The first record's header, then the record itself (bounded).
        let Ok(head) = input.bytes(0..input.size().min(12)) else {
            return true;
        };
        if head.len() < 12 {
            return true;
        }
        let len = u64::from_le_bytes(head[..8].try_into().unwrap_or_default());
        if len > framing::MAX_RECORD {
            return true;
        }
        input.bytes(0..input.size().min(12 + len + 4))
    };
    let Ok(data) = data else { return true };
    let mut records = MapRecords {
        data,
        pos: 0,
        record: 0,
        check_data: !deep,
    };
    loop {
        match records.next_record() {
            Ok(Some((_, data))) if has(&data) => return true,
            Ok(Some(_)) if deep => {}
            Ok(_) => return false,
            Err(_) => return true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::Int64Type;

    fn python(dir: &Path, script: &str) {
        let out = std::process::Command::new(crate::source::test_python())
            .arg("-c")
            .arg(script)
            .current_dir(dir)
            .output()
            .expect("python");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    /// (row, the row's int64 list or None) of every unit.
    fn read_all(src: &TfRecordSource, column: usize) -> Vec<(u64, Option<Vec<i64>>)> {
        let mut out = Vec::new();
        for u in 0..src.units() {
            src.read(u, &[column], &mut |b| {
                let l = b.batch.column(0).as_list::<i32>();
                for i in 0..l.len() {
                    let v = l
                        .is_valid(i)
                        .then(|| l.value(i).as_primitive::<Int64Type>().values().to_vec());
                    out.push((b.first_row + i as u64, v));
                }
                Ok(())
            })
            .expect("read");
        }
        out
    }

    #[test]
    fn units_split_at_record_starts_read_as_the_whole_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        python(
            dir.path(),
            "from tfrecord import TFRecordWriter\n\
             w = TFRecordWriter('t.tfrecord')\n\
             for i in range(500):\n\
             \x20   d = {'image': (bytes(100 + i), 'byte')}\n\
             \x20   if i % 9: d['label'] = ([i, -i], 'int')\n\
             \x20   w.write(d)\n\
             w.close()\n",
        );
        let path = dir.path().join("t.tfrecord");
        let whole = TfRecordSource::open(&path).expect("open");
        assert_eq!(whole.units(), 1);
        let split = TfRecordSource::open_split(&path, 8 << 10, SKIM_MIN).expect("open");
        assert!(split.units() > 10, "{} units", split.units());
        let label = whole.columns().iter().position(|c| c == "label").expect("label");
        let a = read_all(&whole, label);
        assert_eq!(a, read_all(&split, label));
        let expected: Vec<_> = (0..500u64)
            .map(|i| (i, (i % 9 != 0).then(|| vec![i as i64, -(i as i64)])))
            .collect();
        assert_eq!(a, expected);
    }

    #[test]
    fn listing_by_position_lists_what_the_map_lists() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Large records; `late` appears in record 30 only; `x` changes kind
        // in the second file's record 40.
        python(
            dir.path(),
            "from tfrecord import TFRecordWriter\n\
             for name, bad in [('a.tfrecord', False), ('b.tfrecord', True)]:\n\
             \x20   w = TFRecordWriter(name)\n\
             \x20   for i in range(50):\n\
             \x20       d = {'image': (bytes(30000 + i), 'byte'), 'x': ([i], 'float' if bad and i == 40 else 'int')}\n\
             \x20       if i == 30: d['late'] = (b'z', 'byte')\n\
             \x20       w.write(d)\n\
             \x20   w.close()\n",
        );
        let a = dir.path().join("a.tfrecord");
        let by_map = TfRecordSource::open_split(&a, 1 << 20, usize::MAX).expect("open");
        let by_pos = TfRecordSource::open_split(&a, 1 << 20, 0).expect("open");
        // (The writer's protobuf orders map entries as it likes.)
        let mut names = by_pos.columns().to_vec();
        names.sort();
        assert_eq!(names, ["image", "late", "x"]);
        assert_eq!(by_pos.columns(), by_map.columns());
        assert_eq!(by_pos.kinds, by_map.kinds);
        let late = by_pos.columns().iter().position(|c| c == "late").expect("late");
        assert_eq!(by_pos.kinds[late], Some((FKind::Bytes, 30)));
        let units = |s: &TfRecordSource| {
            s.units
                .iter()
                .map(|u| (u.offset, u.first_row, u.rows))
                .collect::<Vec<_>>()
        };
        assert_eq!(units(&by_pos), units(&by_map));
        assert!(by_pos.units() > 1);
        let x = by_pos.columns().iter().position(|c| c == "x").expect("x");
        let expected: Vec<_> = (0..50u64).map(|i| (i, Some(vec![i as i64]))).collect();
        assert_eq!(read_all(&by_pos, x), expected);
        let b = dir.path().join("b.tfrecord");
        let e1 = TfRecordSource::open_split(&b, 1 << 20, usize::MAX)
            .err()
            .expect("error");
        let e2 = TfRecordSource::open_split(&b, 1 << 20, 0).err().expect("error");
        assert_eq!(e1.to_string(), e2.to_string());
        assert!(e2.to_string().contains("record 40"), "{e2}");
    }

    #[test]
    fn damaged_files_are_errors_not_panics() {
        let dir = tempfile::tempdir().expect("tempdir");
        python(
            dir.path(),
            "from tfrecord import TFRecordWriter\n\
             w = TFRecordWriter('t.tfrecord')\n\
             for i in range(5):\n\
             \x20   w.write({'label': ([i] * i, 'int'), 'f': ([0.5] * i, 'float'), 'b': (b'x' * i, 'byte')})\n\
             w.close()\n",
        );
        let good = std::fs::read(dir.path().join("t.tfrecord")).expect("read");
        let path = dir.path().join("m.tfrecord");
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut opened = 0;
        for _ in 0..2000 {
            let mut bytes = good.clone();
            for _ in 0..1 + next() % 3 {
                let at = (next() % bytes.len() as u64) as usize;
                bytes[at] = next() as u8;
            }
            // Fix both checksums of every record, so the damage reaches the
            // protobuf decoder instead of stopping at a checksum.
            let mut at = 0;
            while at + 12 <= bytes.len() {
                let len = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8")) as usize;
                let crc = framing::masked_crc(&bytes[at..at + 8]).to_le_bytes();
                bytes[at + 8..at + 12].copy_from_slice(&crc);
                if len > bytes.len() - at - 12 || bytes.len() - at - 12 - len < 4 {
                    break;
                }
                let crc = framing::masked_crc(&bytes[at + 12..at + 12 + len]).to_le_bytes();
                bytes[at + 12 + len..at + 16 + len].copy_from_slice(&crc);
                at += 16 + len;
            }
            std::fs::write(&path, &bytes).expect("write");
            if let Ok(src) = TfRecordSource::open(&path) {
                opened += 1;
                let all: Vec<usize> = (0..src.columns().len()).collect();
                for u in 0..src.units() {
                    let _ = src.read(u, &all, &mut |_| Ok(()));
                }
            }
        }
        assert!(opened > 100, "{opened} of 2000 opened: the mutations reach the decoder");
    }
}
