//! Columns of the token-shard containers (MosaicML Streaming, LitData):
//! samples hold little-endian numbers (a scalar, or an array whose dtype may
//! change from sample to sample) and text, gathered row by row into Arrow
//! arrays. Shared by `mds` and `litdata`, which differ only in framing.
//!
//! Values are copied once, into aligned Arrow buffers; a list column whose
//! rows disagree on dtype (MDS `ndarray` without a fixed dtype) is widened
//! to one type per batch: `int64`, `uint64` or, for floats or a mix of
//! `uint64` with signed types, `float64` (exact for every id below 2^53).

use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow::array::{ArrayRef, LargeListArray, RecordBatch, RecordBatchOptions, StringBuilder};
use arrow::buffer::{OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{Field, Schema};

use crate::source::formats::dtype::Dtype;
use crate::source::storage;

use crate::source::read::{BATCH_ROWS, Batch};

use crate::error::ReadError;

/// A shard's or chunk's bytes: a view of the file's map (or the one
/// request that read an object), or decompressed.
pub(crate) enum Data {
    Mapped(storage::Input, bytes::Bytes),
    Owned(Vec<u8>),
}

impl std::ops::Deref for Data {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Data::Mapped(_, b) => b,
            Data::Owned(v) => v,
        }
    }
}

impl Data {
    /// Gives a mapped file's pages back once every sample was read (a run
    /// over many shards keeps only the ones in flight resident).
    pub(crate) fn release(&self) {
        if let Data::Mapped(input, _) = self
            && let Some(m) = input.map()
        {
            storage::release(m, 0, m.len());
        }
    }
}

/// Most sample bytes gathered into one batch (at least one sample).
pub(crate) const BATCH_BYTES: usize = 32 << 20;

/// Whether the `index.json` in `dir` holds `key` as an empty list (a dataset
/// written empty).
pub(crate) fn index_lists_none(dir: &Path, key: &str) -> bool {
    std::fs::read(dir.join("index.json"))
        .ok()
        .and_then(|text| serde_json::from_slice::<serde_json::Value>(&text).ok())
        .is_some_and(|doc| doc.get(key).and_then(|v| v.as_array()).is_some_and(Vec::is_empty))
}

/// The one type rows of differing dtypes are widened to.
fn common(elems: &[Dtype]) -> Dtype {
    let first = elems[0];
    if elems.iter().all(|&e| e == first) {
        return first;
    }
    let any_u64 = elems.contains(&Dtype::U64);
    if elems.iter().any(|e| e.is_float()) || (any_u64 && elems.iter().any(|e| e.is_signed())) {
        Dtype::F64
    } else if any_u64 {
        Dtype::U64
    } else {
        Dtype::I64
    }
}

/// Converts every row's values to `to` (a widening or F64).
fn widen(rows: &[(Dtype, usize, usize)], data: &[u8], to: Dtype) -> Vec<u8> {
    let total: usize = rows.iter().map(|&(e, a, b)| (b - a) / e.size()).sum();
    let mut out = Vec::with_capacity(total * to.size());
    for &(e, a, b) in rows {
        let part = &data[a..b];
        for i in 0..part.len() / e.size() {
            match to {
                Dtype::F64 => out.extend_from_slice(&e.f64_at(part, i).to_le_bytes()),
                Dtype::U64 => out.extend_from_slice(&(e.int_at(part, i).unwrap_or(0) as u64).to_le_bytes()),
                _ => out.extend_from_slice(&(e.int_at(part, i).unwrap_or(0) as i64).to_le_bytes()),
            }
        }
    }
    out
}

/// One column being gathered for a batch.
pub(crate) enum Col {
    /// One value a row, of a fixed type.
    Scalar { elem: Dtype, data: Vec<u8> },
    /// A list a row; `fixed` is the element type when every row must have it.
    List {
        fixed: Option<Dtype>,
        /// (dtype, start, end) of each row's bytes in `data`.
        rows: Vec<(Dtype, usize, usize)>,
        data: Vec<u8>,
    },
    /// A UTF-8 string a row.
    Str(StringBuilder),
}

impl Col {
    pub(crate) fn scalar(elem: Dtype) -> Col {
        Col::Scalar { elem, data: Vec::new() }
    }

    pub(crate) fn list(fixed: Option<Dtype>) -> Col {
        Col::List {
            fixed,
            rows: Vec::new(),
            data: Vec::new(),
        }
    }

    pub(crate) fn string() -> Col {
        Col::Str(StringBuilder::new())
    }

    /// Appends one scalar row: `bytes` must be exactly one element.
    pub(crate) fn push_scalar(&mut self, bytes: &[u8]) -> Result<(), String> {
        match self {
            Col::Scalar { elem, data } => {
                if bytes.len() != elem.size() {
                    return Err(format!(
                        "{} bytes where a {} takes {}",
                        bytes.len(),
                        elem.name(),
                        elem.size()
                    ));
                }
                data.extend_from_slice(bytes);
                Ok(())
            }
            _ => Err("not a scalar column".into()),
        }
    }

    /// Appends a scalar row from an integer (parsed text).
    pub(crate) fn push_i64(&mut self, v: i64) -> Result<(), String> {
        self.push_scalar(&v.to_le_bytes())
    }

    /// Appends one list row of `elem` values (`bytes`, a whole number of them).
    pub(crate) fn push_list(&mut self, elem: Dtype, bytes: &[u8]) -> Result<(), String> {
        match self {
            Col::List { fixed, rows, data } => {
                if let Some(f) = fixed
                    && *f != elem
                {
                    return Err(format!("{} values where the column holds {}", elem.name(), f.name()));
                }
                if !bytes.len().is_multiple_of(elem.size()) {
                    return Err(format!(
                        "{} bytes is not a whole number of {} ({} bytes each)",
                        bytes.len(),
                        elem.name(),
                        elem.size()
                    ));
                }
                let at = data.len();
                data.extend_from_slice(bytes);
                rows.push((elem, at, data.len()));
                Ok(())
            }
            _ => Err("not a list column".into()),
        }
    }

    /// Appends one string row.
    pub(crate) fn push_str(&mut self, bytes: &[u8]) -> Result<(), String> {
        match self {
            Col::Str(b) => {
                let s = std::str::from_utf8(bytes).map_err(|e| format!("invalid UTF-8 ({e})"))?;
                b.append_value(s);
                Ok(())
            }
            _ => Err("not a string column".into()),
        }
    }

    /// The gathered rows as an array; the column is left empty.
    pub(crate) fn finish(&mut self) -> ArrayRef {
        match self {
            Col::Scalar { elem, data } => {
                let a = elem.values(data);
                data.clear();
                a
            }
            Col::Str(b) => Arc::new(b.finish()),
            Col::List { fixed, rows, data } => {
                let elems: Vec<Dtype> = rows.iter().map(|r| r.0).collect();
                let to = match (fixed, elems.is_empty()) {
                    (Some(f), _) => *f,
                    (None, true) => Dtype::I64,
                    (None, false) => common(&elems),
                };
                let values_array = if elems.iter().all(|&e| e == to) {
                    to.values(data)
                } else {
                    to.values(&widen(rows, data, to))
                };
                let mut offsets = Vec::with_capacity(rows.len() + 1);
                offsets.push(0i64);
                let mut n = 0i64;
                for &(e, a, b) in rows.iter() {
                    n += ((b - a) / e.size()) as i64;
                    offsets.push(n);
                }
                rows.clear();
                data.clear();
                let field = Arc::new(Field::new("item", to.arrow(), false));
                Arc::new(LargeListArray::new(
                    field,
                    OffsetBuffer::new(ScalarBuffer::from(offsets)),
                    values_array,
                    None,
                ))
            }
        }
    }
}

/// A record batch of `cols` named `names`, keeping the row count when there
/// are no columns.
pub(crate) fn batch(names: &[&str], cols: Vec<ArrayRef>, rows: usize) -> Result<RecordBatch, ReadError> {
    let fields: Vec<Field> = names
        .iter()
        .zip(&cols)
        .map(|(n, c)| Field::new(*n, c.data_type().clone(), false))
        .collect();
    let opts = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        cols,
        &opts,
    )?)
}

/// A shard's samples gathered into batches of the projected columns: the
/// walk `mds` and `litdata` share (each splits a sample into its columns'
/// bytes its own way, then hands them here).
pub(crate) struct Gather<'n> {
    cols: Vec<Col>,
    names: Vec<&'n str>,
    /// For each file column, its places in the batch.
    wanted: Vec<Vec<usize>>,
    /// The batch's first sample, and its bytes so far.
    first: usize,
    bytes: usize,
}

impl<'n> Gather<'n> {
    /// Batches of `projection` (indices into `columns`), gathered in `cols`
    /// (one per projected column, in its order).
    pub(crate) fn new(columns: &'n [String], projection: &[usize], cols: Vec<Col>) -> Gather<'n> {
        let mut wanted: Vec<Vec<usize>> = vec![Vec::new(); columns.len()];
        for (k, &c) in projection.iter().enumerate() {
            wanted[c].push(k);
        }
        Gather {
            cols,
            names: projection.iter().map(|&c| columns[c].as_str()).collect(),
            wanted,
            first: 0,
            bytes: 0,
        }
    }

    /// Calls `push` with every batch column that file column `c` fills.
    pub(crate) fn push(
        &mut self,
        c: usize,
        mut push: impl FnMut(&mut Col) -> Result<(), String>,
    ) -> Result<(), String> {
        for &k in &self.wanted[c] {
            push(&mut self.cols[k])?;
        }
        Ok(())
    }

    /// Sample `i` of `n`, `len` bytes, is gathered: the batch goes to
    /// `sink` when it is full or the sample is the last.
    pub(crate) fn sample_done(
        &mut self,
        i: usize,
        n: usize,
        len: usize,
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        self.bytes += len;
        let rows = i + 1 - self.first;
        if rows == BATCH_ROWS || self.bytes >= BATCH_BYTES || i + 1 == n {
            let arrays = self.cols.iter_mut().map(|c| c.finish()).collect();
            sink(Batch {
                first_row: self.first as u64,
                batch: batch(&self.names, arrays, rows)?,
            })?;
            self.first = i + 1;
            self.bytes = 0;
        }
        Ok(())
    }
}

/// How a format names a sample and its parts in messages: ("sample",
/// "column", "columns") or ("item", "leaf", "leaves").
pub(crate) type Nouns = (&'static str, &'static str, &'static str);

/// Splits `sample` after its first `head` bytes into consecutive fields of
/// `sizes` (one per file column, named by `names`), calling `field` with
/// each; the fields must fill the sample exactly.
pub(crate) fn fields(
    sample: &[u8],
    head: usize,
    sizes: impl Iterator<Item = usize>,
    names: &[String],
    (noun, part, parts): Nouns,
    mut field: impl FnMut(usize, &[u8]) -> Result<(), String>,
) -> Result<(), String> {
    let mut at = head;
    for (c, size) in sizes.enumerate() {
        let end = at.checked_add(size).filter(|&e| e <= sample.len()).ok_or_else(|| {
            format!(
                "{part} {}: {size} bytes at byte {at} run past the {noun}'s {} bytes",
                names[c],
                sample.len()
            )
        })?;
        field(c, &sample[at..end]).map_err(|m| format!("column {}: {m}", names[c]))?;
        at = end;
    }
    if at != sample.len() {
        return Err(format!("the {noun} is {} bytes, its {parts} take {at}", sample.len()));
    }
    Ok(())
}

/// Largest `index.json` read.
const MAX_INDEX: u64 = 256 << 20;
/// How many parsed `index.json` files are kept (the shards of one directory
/// are opened together; each would otherwise parse the index again).
const INDEX_CACHE: usize = 16;

type CacheKey = (PathBuf, u64, Option<std::time::SystemTime>);
type Cached = Arc<dyn Any + Send + Sync>;

/// The `index.json` at `path` parsed by `parse`, once for all the files
/// beside it (kept while its size and time are unchanged). `what` names
/// the file that needs it, for the message when it is missing.
/// Whether an index's file name names a file in the index's own folder
/// (no separator, not `.` or `..`, not empty).
pub(crate) fn plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

pub(crate) fn load_index<T: Any + Send + Sync>(
    path: &Path,
    what: &str,
    parse: fn(&[u8]) -> Result<T, String>,
) -> Result<Arc<T>, ReadError> {
    static CACHE: Mutex<Vec<(CacheKey, Cached)>> = Mutex::new(Vec::new());
    let needs = |e: String| ReadError::new(format!("{what} needs the index.json beside it: {e}"));
    // An object's: its size from the listing (or one request), no mtime.
    let (len, modified) = storage::stat(path).map_err(|e| needs(e.message))?;
    let key: CacheKey = (path.to_path_buf(), len, modified);
    let hit = CACHE
        .lock()
        .ok()
        .and_then(|c| c.iter().find(|(k, _)| *k == key).map(|(_, v)| Arc::clone(v)));
    if let Some(hit) = hit.and_then(|h| h.downcast::<T>().ok()) {
        return Ok(hit);
    }
    if len > MAX_INDEX {
        return Err(ReadError::new(format!(
            "index.json is {len} bytes: too large for an index"
        )));
    }
    let text = storage::Input::open(path)?.all()?;
    let index = Arc::new(parse(&text).map_err(|e| ReadError::new(format!("index.json: {e}")))?);
    if let Ok(mut c) = CACHE.lock() {
        if c.len() >= INDEX_CACHE {
            c.remove(0);
        }
        c.push((key, Arc::clone(&index) as Cached));
    }
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{DataType, Float64Type, Int64Type, UInt16Type};

    #[test]
    fn mixed_dtypes_widen_per_batch() {
        let mut c = Col::list(None);
        c.push_list(Dtype::U16, &[1, 0, 2, 0]).unwrap();
        c.push_list(Dtype::I32, &(-5i32).to_le_bytes()).unwrap();
        let a = c.finish();
        let l = a.as_list::<i64>();
        assert_eq!(l.value_type(), DataType::Int64);
        let v = l.values().as_primitive::<Int64Type>();
        assert_eq!(v.values().to_vec(), vec![1, 2, -5]);
        c.push_list(Dtype::U64, &u64::MAX.to_le_bytes()).unwrap();
        c.push_list(Dtype::U8, &[7]).unwrap();
        let a = c.finish();
        assert_eq!(a.as_list::<i64>().value_type(), DataType::UInt64);
        c.push_list(Dtype::U64, &1u64.to_le_bytes()).unwrap();
        c.push_list(Dtype::I8, &[0xff]).unwrap();
        let a = c.finish();
        let v = a
            .as_list::<i64>()
            .values()
            .as_primitive::<Float64Type>()
            .values()
            .to_vec();
        assert_eq!(v, vec![1.0, -1.0]);
        assert_eq!(a.len(), 2);
    }

    #[test]
    fn fixed_lists_refuse_other_dtypes_and_partial_elements() {
        let mut c = Col::list(Some(Dtype::I32));
        assert!(c.push_list(Dtype::U16, &[0, 0]).is_err());
        assert!(c.push_list(Dtype::I32, &[0, 0, 0]).is_err());
        let mut s = Col::scalar(Dtype::U16);
        assert!(s.push_scalar(&[1, 2, 3]).is_err());
        s.push_scalar(&[1, 2]).unwrap();
        assert_eq!(s.finish().as_primitive::<UInt16Type>().value(0), 0x0201);
    }
}
