//! Token streams: llm.c and modded-nanogpt shards, raw nanoGPT `.bin` files.
//!
//! Pre-training data in these layouts is a flat array of token ids on disk,
//! written once and read for weeks; a bad id crashes the embedding hours into
//! a run. The check is a memory scan: the file is memory-mapped, its tokens
//! are handed to the kernels as Arrow arrays built straight over the mapping
//! (no copy: the data starts at byte 0 or 1024, so it is aligned), in units
//! of a few million tokens whose pages are released once checked, so
//! resident memory stays at the units in flight.
//!
//! Row i is token i; the one column is `tokens`. Which layout a `.bin` has is
//! decided by its first four bytes: an llm.c header (256 × int32: magic,
//! version, token count) names the dtype; a raw file stores none, so the
//! schema column must say it (`dtype: uint16`). Anything the header claims
//! is checked against the file's size before a byte of data is read. A
//! `.bin` with an `.idx` beside it is a Megatron-LM dataset (see
//! [`super::megatron`]); [`super::open`] dispatches between the two.
//!
//! With the schema's `eod_id`, a stream's documents are judged
//! ([`mod@crate::check`]'s documents kernel), and a document must not cross
//! units: [`TokenStreamSource::with_documents`] ends each unit right after
//! the first end-of-document id at or past its nominal 4M-token mark,
//! found by a search that reads only as far as that id.
//!
//! An object in storage is read by the same code through
//! `storage::Input`: the header is one ranged read, each unit another
//! (its bytes are the unit's arrays, without a copy when aligned), so
//! memory is the units in flight there too.

use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

use arrow::array::{ArrayRef, PrimitiveArray, RecordBatch, RecordBatchOptions};
use arrow::buffer::{Buffer, ScalarBuffer};
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Field, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type,
    Int64Type, Schema, SchemaRef, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use bytes::Bytes;
use memmap2::Mmap;

use crate::error::ReadError;
use crate::source::formats::dtype::Dtype;
use crate::source::read::{BATCH_ROWS, Batch, Source};
use crate::source::storage;
use crate::source::storage::Input;

/// The column every token layout provides.
pub(crate) const TOKENS: &str = "tokens";

/// Tokens per unit of work: large enough to amortise a unit, small enough to
/// spread a file over every thread and to release pages often.
pub(crate) const UNIT_TOKENS: u64 = 4 << 20;

/// Size of the llm.c header: 256 × int32.
const LLMC_HEADER: usize = 1024;

/// Opens a file or object as an [`storage::Input`], hinting a local map
/// for a sequential read.
pub(crate) fn open_input(path: &Path) -> Result<Arc<Input>, ReadError> {
    let input = Input::open(path)?;
    #[cfg(unix)]
    if let Some(map) = input.map() {
        let _ = map.advise(memmap2::Advice::Sequential);
    }
    Ok(Arc::new(input))
}

/// A run of little-endian elements inside a file, handed out as Arrow
/// arrays: over the local map itself when aligned (always, for the layouts
/// here) on a little-endian machine, else decoded into a copy. An object's
/// elements are fetched a stretch at a time ([`Region::load`]).
pub(crate) struct Region {
    input: Arc<Input>,
    /// Byte offset of element 0 in the file.
    offset: usize,
    /// Elements.
    len: usize,
    dtype: Dtype,
    zero_copy: Option<Buffer>,
}

/// Elements `first..` of a [`Region`], in memory: a view of the map, or
/// the bytes one ranged request fetched.
pub(crate) struct Loaded {
    first: usize,
    dtype: Dtype,
    /// Aligned native elements, handed out without a copy.
    buf: Option<Buffer>,
    /// The same bytes, for decoding when `buf` is `None`.
    bytes: Bytes,
}

impl Loaded {
    /// Elements `first..first + count` (indices of the region) as an array.
    pub(crate) fn array(&self, first: usize, count: usize) -> ArrayRef {
        let size = self.dtype.size();
        let at = (first - self.first) * size;
        if let Some(buf) = &self.buf {
            return typed(self.dtype, buf.slice_with_length(at, count * size));
        }
        self.dtype
            .values(self.bytes.get(at..at + count * size).unwrap_or_default())
    }
}

impl Region {
    /// Elements `offset..offset + len * size` of `input`; the caller has
    /// checked that they lie inside it.
    pub(crate) fn new(input: Arc<Input>, offset: usize, len: usize, dtype: Dtype) -> Region {
        let bytes = len * dtype.size();
        let mut zero_copy = None;
        if cfg!(target_endian = "little")
            && bytes > 0
            && let Some(m) = input.map()
            && let Some(region) = m.get(offset..offset + bytes)
            && (region.as_ptr() as usize).is_multiple_of(dtype.size())
        {
            let owner: Arc<Mmap> = Arc::clone(m);
            // SAFETY: the range lies inside the mapping, which `owner` keeps
            // alive for the buffer's lifetime.
            zero_copy = Some(unsafe { Buffer::from_custom_allocation(NonNull::from(region).cast(), bytes, owner) });
        }
        Region {
            input,
            offset,
            len,
            dtype,
            zero_copy,
        }
    }

    /// Elements `first..first + count` in memory: a view of a local map (no
    /// read), or one ranged request for an object.
    pub(crate) fn load(&self, first: usize, count: usize) -> Result<Loaded, ReadError> {
        let size = self.dtype.size();
        if let Some(buf) = &self.zero_copy {
            return Ok(Loaded {
                first,
                dtype: self.dtype,
                buf: Some(buf.slice_with_length(first * size, count * size)),
                bytes: Bytes::new(),
            });
        }
        let start = (self.offset + first * size) as u64;
        let bytes = self.input.bytes(start..start + (count * size) as u64)?;
        let buf = (cfg!(target_endian = "little") && (bytes.as_ptr() as usize).is_multiple_of(size))
            .then(|| Buffer::from(bytes.clone()));
        Ok(Loaded {
            first,
            dtype: self.dtype,
            buf,
            bytes,
        })
    }

    /// Lets the kernel drop the pages of elements `first..first + count`
    /// (a local map's; an object's bytes go when their arrays do).
    pub(crate) fn release(&self, first: usize, count: usize) {
        if let Some(m) = self.input.map() {
            let size = self.dtype.size();
            storage::release(m, self.offset + first * size, count * size);
        }
    }

    /// Elements in the region.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The position of the first element at or after `from` that equals
    /// `id` (as the kernels compare: a float equal to the whole number),
    /// reading the bytes in place (an object's in growing ranged reads) and
    /// releasing the pages it passed.
    pub(crate) fn find(&self, from: usize, id: i128) -> Option<usize> {
        let size = self.dtype.size();
        let pattern: Vec<u8> = match self.dtype {
            Dtype::U8 => u8::try_from(id).ok()?.to_le_bytes().to_vec(),
            Dtype::I8 => i8::try_from(id).ok()?.to_le_bytes().to_vec(),
            Dtype::U16 => u16::try_from(id).ok()?.to_le_bytes().to_vec(),
            Dtype::I16 => i16::try_from(id).ok()?.to_le_bytes().to_vec(),
            Dtype::U32 => u32::try_from(id).ok()?.to_le_bytes().to_vec(),
            Dtype::I32 => i32::try_from(id).ok()?.to_le_bytes().to_vec(),
            Dtype::U64 => u64::try_from(id).ok()?.to_le_bytes().to_vec(),
            Dtype::I64 => i64::try_from(id).ok()?.to_le_bytes().to_vec(),
            // -0.0 equals 0 too; missing it only moves a cut further on.
            Dtype::F32 => Some(id as f32).filter(|f| *f as i128 == id)?.to_le_bytes().to_vec(),
            Dtype::F64 => Some(id as f64).filter(|f| *f as i128 == id)?.to_le_bytes().to_vec(),
            // Never a token type (`Dtype::of_tokens`).
            Dtype::Bool | Dtype::F16 => return None,
        };
        let end = self.offset + self.len * size;
        // A local map in steps of a unit's bytes, each released once passed:
        // a stretch without the id never makes the whole file resident. An
        // object from 64 KiB on, doubling up to a unit: a document usually
        // ends soon after the mark, and each step is a request.
        let unit = UNIT_TOKENS as usize * size;
        let mut step = if self.input.is_remote() {
            (64 << 10) / size * size
        } else {
            unit
        };
        let mut at = self.offset + from * size;
        while at < end {
            let stop = (at + step).min(end);
            let bytes = self.input.bytes(at as u64..stop as u64).ok()?;
            let found = bytes.chunks_exact(size).position(|c| c == pattern.as_slice());
            if let Some(map) = self.input.map() {
                storage::release(map, at, found.map_or(bytes.len(), |p| (p + 1) * size));
            }
            if let Some(p) = found {
                return Some((at - self.offset) / size + p);
            }
            at = stop;
            step = (step * 2).min(unit);
        }
        None
    }
}

/// An array over `buf`, which holds whole native-endian, aligned elements.
fn typed(dtype: Dtype, buf: Buffer) -> ArrayRef {
    fn mk<T: ArrowPrimitiveType>(buf: Buffer) -> ArrayRef {
        let len = buf.len() / size_of::<T::Native>();
        Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::new(buf, 0, len), None))
    }
    match dtype {
        Dtype::U8 => mk::<UInt8Type>(buf),
        Dtype::I8 => mk::<Int8Type>(buf),
        Dtype::U16 => mk::<UInt16Type>(buf),
        Dtype::I16 => mk::<Int16Type>(buf),
        Dtype::U32 => mk::<UInt32Type>(buf),
        Dtype::I32 => mk::<Int32Type>(buf),
        Dtype::U64 => mk::<UInt64Type>(buf),
        Dtype::I64 => mk::<Int64Type>(buf),
        Dtype::F32 => mk::<Float32Type>(buf),
        Dtype::F64 => mk::<Float64Type>(buf),
        Dtype::F16 => mk::<Float16Type>(buf),
        Dtype::Bool => dtype.values(buf.as_slice()),
    }
}

/// A batch of `cols` (all named `tokens`), keeping the row count when the
/// projection is empty.
pub(crate) fn token_batch(cols: Vec<ArrayRef>, rows: usize) -> Result<RecordBatch, ReadError> {
    let fields = cols
        .iter()
        .map(|c| Field::new(TOKENS, c.data_type().clone(), false))
        .collect::<Vec<_>>();
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let opts = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(schema, cols, &opts)?)
}

/// Refuses a projection naming any column but `tokens` (column 0).
pub(crate) fn check_projection(projection: &[usize], what: &str) -> Result<(), ReadError> {
    match projection.iter().find(|&&c| c != 0) {
        Some(bad) => Err(ReadError::new(format!("no column {bad} ({what} has one: tokens)"))),
        None => Ok(()),
    }
}

/// A header magic of the llm.c family, and what it is.
fn llmc_magic(magic: i32) -> Option<&'static str> {
    Some(match magic {
        20240520 => "gpt-2",
        20240801 => "llama-3",
        20240522 => "eval",
        20240326 | 20240803 => "model",
        _ => return None,
    })
}

/// Whether a `.bin` is a raw stream, which records no dtype: no `.idx`
/// beside it, no llm.c magic at its start.
pub(crate) fn is_raw(path: &Path) -> bool {
    let magic = Input::open(path)
        .and_then(|i| i.bytes(0..4))
        .ok()
        .and_then(|b| b.first_chunk::<4>().map(|m| i32::from_le_bytes(*m)));
    !storage::exists(&path.with_extension("idx")) && magic.and_then(llmc_magic).is_none()
}

/// The schema's `dtype:` as a token type.
pub(crate) fn schema_dtype(dtype: Option<&str>) -> Result<Option<Dtype>, ReadError> {
    dtype
        .map(|d| {
            Dtype::of_tokens(d)
                .ok_or_else(|| ReadError::new(format!("`dtype: {d}` is not a type token ids are stored in")))
        })
        .transpose()
}

/// A token stream: one scalar column `tokens`, row i = token i.
pub(crate) struct TokenStreamSource {
    columns: Vec<String>,
    region: Region,
    /// First token of each unit, ascending from 0.
    starts: Vec<u64>,
    /// Whether every unit but the last ends right after an `eod_id`.
    documents: bool,
}

impl TokenStreamSource {
    /// Maps the file and checks its header (if any) against its size.
    pub(crate) fn open(path: &Path, dtype: Option<&str>) -> Result<Self, ReadError> {
        let wanted = schema_dtype(dtype)?;
        let input = open_input(path)?;
        let size = usize::try_from(input.size()).map_err(|_| ReadError::new("too large for this machine"))?;
        // The header, or as much of it as there is: all a raw file needs read
        // before its units.
        let head = input.bytes(0..(size.min(LLMC_HEADER)) as u64)?;
        let magic = head.first_chunk::<4>().map(|b| i32::from_le_bytes(*b));
        let (dtype, offset, count) = match magic.and_then(|m| llmc_magic(m).map(|k| (m, k))) {
            Some((magic, kind)) => {
                let (dtype, version) = match kind {
                    "gpt-2" => (Dtype::U16, 1),
                    "llama-3" => (Dtype::U32, 7),
                    "eval" => {
                        return Err(ReadError::new(format!(
                            "an llm.c eval file (magic {magic}), not a token shard: not supported"
                        )));
                    }
                    _ => {
                        return Err(ReadError::new(format!(
                            "an llm.c model checkpoint (magic {magic}), not a token shard"
                        )));
                    }
                };
                let Some(header) = head.get(..LLMC_HEADER) else {
                    return Err(ReadError::new(format!(
                        "truncated llm.c shard: the 1024-byte header is cut at {size} bytes"
                    )));
                };
                let word = |i: usize| {
                    i32::from_le_bytes([header[4 * i], header[4 * i + 1], header[4 * i + 2], header[4 * i + 3]])
                };
                let (v, ntok) = (word(1), word(2));
                if v != version {
                    return Err(ReadError::new(format!(
                        "llm.c shard (magic {magic}, {kind}): unsupported version {v} (its readers require {version})"
                    )));
                }
                let expect = u64::try_from(ntok)
                    .ok()
                    .map(|n| LLMC_HEADER as u64 + n * dtype.size() as u64);
                if ntok < 0 || expect != Some(size as u64) {
                    return Err(ReadError::new(format!(
                        "llm.c shard: token count mismatch: the header says {ntok} {} tokens ({} bytes with the header), the file holds {size} bytes",
                        dtype.name(),
                        expect.map_or_else(|| "an impossible size".to_string(), |e| e.to_string()),
                    )));
                }
                // llm.c's loader asserts `ntok > 0` ("we expect some tokens
                // in the file"): a shard of no tokens aborts training.
                if ntok == 0 {
                    return Err(ReadError::new(
                        "llm.c shard of no tokens: the header's token count is 0, and llm.c's loader \
                         aborts on it (assert(ntok > 0))",
                    ));
                }
                if let Some(w) = wanted
                    && w != dtype
                {
                    return Err(ReadError::new(format!(
                        "llm.c shard of {} tokens (magic {magic}), but the schema says `dtype: {}`",
                        dtype.name(),
                        w.name()
                    )));
                }
                (dtype, LLMC_HEADER, ntok as usize)
            }
            None => {
                let Some(dtype) = wanted else {
                    return Err(ReadError::new(
                        "a raw token file (no .idx beside it, no llm.c header) does not record its dtype: \
                         set `dtype:` on the schema column `tokens` (e.g. `dtype: uint16`, as nanoGPT writes)",
                    ));
                };
                if !size.is_multiple_of(dtype.size()) {
                    return Err(ReadError::new(format!(
                        "size not a multiple of the dtype: {size} bytes is not a whole number of {} tokens",
                        dtype.name()
                    )));
                }
                (dtype, 0, size / dtype.size())
            }
        };
        let starts = (0..count as u64).step_by(UNIT_TOKENS as usize).collect();
        Ok(TokenStreamSource {
            columns: vec![TOKENS.to_string()],
            region: Region::new(input, offset, count, dtype),
            starts,
            documents: false,
        })
    }

    /// Cuts the units right after an `eod` id instead of every
    /// `UNIT_TOKENS` tokens, so that no document crosses units: each unit
    /// after the first starts at the first document that begins at or past
    /// its nominal start. A stretch without an EOD id stays in one unit
    /// (long, but read batch by batch, its pages released as it goes).
    pub(crate) fn with_documents(mut self, eod: i128) -> TokenStreamSource {
        let total = self.region.len() as u64;
        let mut starts = vec![0];
        let mut next = UNIT_TOKENS;
        while next < total {
            // The unit ends after the last token before `next` if that is
            // an EOD, else after the first EOD past it.
            match self.region.find(next as usize - 1, eod) {
                Some(e) if (e as u64) + 1 < total => {
                    let start = e as u64 + 1;
                    starts.push(start);
                    next = start + UNIT_TOKENS;
                }
                _ => break,
            }
        }
        self.starts = starts;
        self.documents = true;
        self
    }
}

impl Source for TokenStreamSource {
    fn columns(&self) -> &[String] {
        &self.columns
    }

    fn stored_type(&self, _column: usize) -> Option<DataType> {
        Some(self.region.dtype.arrow())
    }

    fn units(&self) -> usize {
        self.starts.len()
    }

    fn documents(&self) -> bool {
        self.documents
    }

    fn read(
        &self,
        unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        let Some(&start) = self.starts.get(unit) else {
            return Err(ReadError::new(format!(
                "no unit {unit} (the file has {})",
                self.units()
            )));
        };
        check_projection(projection, "a token file")?;
        let total = self.region.len() as u64;
        let end = self.starts.get(unit + 1).copied().unwrap_or(total);
        // A unit-sized stretch at a time (a long unit, a document stretch
        // without EOD ids, in several): one ranged read of an object, or a
        // view of the map whose pages are given back once checked.
        let mut at = start;
        while at < end {
            let stop = end.min(at + UNIT_TOKENS);
            let loaded = match projection.len() {
                0 => None,
                _ => Some(self.region.load(at as usize, (stop - at) as usize)?),
            };
            let mut r = at;
            while r < stop {
                let nb = (stop - r).min(BATCH_ROWS as u64) as usize;
                let cols = match &loaded {
                    None => Vec::new(),
                    Some(l) => vec![l.array(r as usize, nb); projection.len()],
                };
                sink(Batch {
                    first_row: r,
                    batch: token_batch(cols, nb)?,
                })?;
                r += nb as u64;
            }
            if loaded.is_some() {
                self.region.release(at as usize, (stop - at) as usize);
            }
            at = stop;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(rel: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/tokens")
            .join(rel)
    }

    fn tokens(src: &dyn Source) -> Vec<i128> {
        let mut out = Vec::new();
        for u in 0..src.units() {
            src.read(u, &[0], &mut |b| {
                let a = b.batch.column(0);
                let a = arrow::compute::cast(a, &DataType::Int64).expect("cast");
                let a = a.as_any().downcast_ref::<PrimitiveArray<Int64Type>>().expect("i64");
                out.extend(a.values().iter().map(|&v| i128::from(v)));
                Ok(())
            })
            .expect("read");
        }
        out
    }

    #[test]
    fn llmc_headers_name_their_dtype() {
        let s = TokenStreamSource::open(&fixture("llmc/gpt2_bad.bin"), None).expect("gpt2");
        assert_eq!((s.region.offset, s.region.dtype), (LLMC_HEADER, Dtype::U16));
        let t = tokens(&s);
        assert_eq!(t.len(), 64);
        assert_eq!((t[0], t[17], t[63]), (1000, 50257, 65535));
        let s = TokenStreamSource::open(&fixture("llmc/llama3_bad.bin"), Some("uint32")).expect("llama3");
        assert_eq!(s.region.dtype, Dtype::U32);
        let t = tokens(&s);
        assert_eq!((t.len(), t[20]), (48, 4294967295));
        let e = TokenStreamSource::open(&fixture("llmc/llama3_bad.bin"), Some("uint16"))
            .err()
            .expect("dtype");
        assert!(e.message.contains("schema says `dtype: uint16`"), "{e}");
    }

    #[test]
    fn broken_llmc_and_raw_files_are_errors() {
        for (f, want) in [
            ("llmc/gpt2_ntok_too_big.bin", "token count mismatch"),
            ("llmc/gpt2_ntok_too_small.bin", "token count mismatch"),
            ("llmc/gpt2_odd_payload.bin", "token count mismatch"),
            ("llmc/llama3_ntok_too_big.bin", "token count mismatch"),
            ("llmc/gpt2_bad_version.bin", "unsupported version 2"),
        ] {
            let e = TokenStreamSource::open(&fixture(f), None).err().expect(f);
            assert!(e.message.contains(want), "{f}: {e}");
        }
        let e = TokenStreamSource::open(&fixture("nanogpt/raw/odd_bytes.bin"), Some("uint16"))
            .err()
            .expect("odd");
        assert!(e.message.contains("not a whole number of uint16"), "{e}");
        let e = TokenStreamSource::open(&fixture("nanogpt/raw/u16_bad.bin"), None)
            .err()
            .expect("no dtype");
        assert!(e.message.contains("set `dtype:`"), "{e}");
        let e = TokenStreamSource::open(&fixture("nanogpt/raw/u16_bad.bin"), Some("object"))
            .err()
            .expect("bad dtype");
        assert!(e.message.contains("not a type"), "{e}");
    }

    #[test]
    fn raw_streams_split_into_units_and_batches() {
        let dir = tempfile::tempdir().expect("tempdir");
        let n = UNIT_TOKENS as usize + 70_000;
        let bytes: Vec<u8> = (0..n).flat_map(|i| ((i % 65521) as u16).to_le_bytes()).collect();
        let p = dir.path().join("t.bin");
        std::fs::write(&p, &bytes).expect("write");
        let s = TokenStreamSource::open(&p, Some("uint16")).expect("open");
        assert_eq!(s.units(), 2);
        let t = tokens(&s);
        assert_eq!(t.len(), n);
        assert!(t.iter().enumerate().all(|(i, &v)| v == (i % 65521) as i128));
        let mut rows = Vec::new();
        s.read(1, &[], &mut |b| {
            rows.push((b.first_row, b.batch.num_rows()));
            Ok(())
        })
        .expect("read");
        assert_eq!(rows, [(UNIT_TOKENS, 65536), (UNIT_TOKENS + 65536, 4464)]);
        // With an end-of-document id, units end right after one: the first
        // at or past each 4M mark (here the one at the mark's last token).
        let mut ids: Vec<u16> = (0..n).map(|i| (i % 65521) as u16).collect();
        let unit = UNIT_TOKENS as usize;
        for e in [10, unit - 1, unit + 5] {
            ids[e] = 65530;
        }
        let p = dir.path().join("d.bin");
        std::fs::write(&p, ids.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).expect("write");
        let d = TokenStreamSource::open(&p, Some("uint16"))
            .expect("open")
            .with_documents(65530);
        assert_eq!((d.starts.clone(), d.documents()), (vec![0, UNIT_TOKENS], true));
        ids[unit - 1] = 0;
        std::fs::write(&p, ids.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).expect("write");
        let d = TokenStreamSource::open(&p, Some("uint16"))
            .expect("open")
            .with_documents(65530);
        assert_eq!(d.starts, [0, UNIT_TOKENS + 6]);
        assert_eq!(tokens(&d).len(), n, "every token read once");
        // An id the dtype cannot hold, or none after the mark: one unit.
        let d = TokenStreamSource::open(&p, Some("uint16"))
            .expect("open")
            .with_documents(70000);
        assert_eq!(d.starts, [0]);
        // Empty file: no unit, no rows.
        let p = dir.path().join("e.bin");
        std::fs::write(&p, b"").expect("write");
        assert_eq!(TokenStreamSource::open(&p, Some("int32")).expect("empty").units(), 0);
    }
}
