//! Megatron-LM / Megatron-Core indexed datasets: `NAME.idx` (`MMIDIDX`) +
//! `NAME.bin`, one file in reports (named by its `.bin`).
//!
//! Megatron's own loader checks only the magic, the version and that the
//! sequence count matches the last document index; an index whose lengths
//! or pointers do not fit its `.bin` loads, and training reads the wrong
//! tokens or crashes. So the whole index is checked when the file is opened,
//! in one pass that allocates nothing the index claims: its size against
//! its header (with checked arithmetic, so a header claiming 2^40 sequences
//! is an error, not an allocation), lengths ≥ 0, pointers contiguous from 0,
//! the last sequence ending exactly at the `.bin`'s size, document indices
//! starting at 0, non-decreasing, ending at the sequence count. Any break is
//! the file's error, naming the sequence or document index.
//!
//! The arrays of the index are never naturally aligned (they start at byte
//! 34), so they are decoded with `from_le_bytes`. The `.bin` holds the
//! sequences back to back, so row i (sequence i) is a list over the mapped
//! tokens: the values are an Arrow buffer over the mapping, only the
//! offsets of a batch are built. Units are runs of sequences of a few
//! million tokens; their pages are released once checked.
//!
//! From storage (the `.idx` an object of the same prefix) the index is one
//! read, and each unit's tokens one ranged read of the `.bin`.
//!
//! A dataset of no sequences checks as 0 rows with a note: megatron-core
//! cannot map its 0-byte `.bin` (numpy refuses to map an empty file), so
//! training fails at load, but nothing in it is wrong.
//!
//! fairseq's legacy `TNTIDX` and NeMo's retrieval `MMIDRET` indexes are
//! refused by name. The byte layout is in `tests/fixtures/tokens/FORMATS.md`.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, ListArray};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Field};
use bytes::Bytes;

use super::stream::{self as tokenbin, Region, TOKENS, UNIT_TOKENS};
use crate::error::ReadError;
use crate::source::formats::dtype::Dtype;
use crate::source::read::{BATCH_ROWS, Batch, Source};
use crate::source::storage;

const MAGIC: &[u8; 9] = b"MMIDIDX\0\0";
const HEADER: u64 = 34;
/// Most list elements per batch (at least one row).
const MAX_BATCH_ELEMS: u64 = 1 << 20;
/// Most sequences per unit, however short they are.
const MAX_UNIT_ROWS: u64 = 1 << 20;

/// The dtype codes of megatron-core's `DType` enum.
fn dtype_code(code: u8) -> Option<Dtype> {
    Some(match code {
        1 => Dtype::U8,
        2 => Dtype::I8,
        3 => Dtype::I16,
        4 => Dtype::I32,
        5 => Dtype::I64,
        6 => Dtype::F64,
        7 => Dtype::F32,
        8 => Dtype::U16,
        _ => return None,
    })
}

fn err(message: impl Into<String>) -> ReadError {
    ReadError::new(message.into())
}

/// A Megatron-LM indexed dataset: column `tokens`, row i = sequence i.
pub(crate) struct MegatronSource {
    columns: Vec<String>,
    /// The whole index (read once: it is checked whole when opened).
    idx: Bytes,
    /// Sequences.
    n: u64,
    dtype: Dtype,
    /// The `.bin`'s tokens.
    region: Region,
    /// First sequence of each unit, then `n`.
    unit_starts: Vec<u64>,
}

impl MegatronSource {
    /// Maps both files and checks the whole index against the `.bin`.
    /// `dtype` is the schema's `dtype:` for `tokens`, which must agree with
    /// the index's when given.
    pub(crate) fn open(bin: &Path, idx: &Path, dtype: Option<&str>) -> Result<Self, ReadError> {
        let wanted = tokenbin::schema_dtype(dtype)?;
        let at_idx = |e: ReadError| {
            e.at(format!(
                "index {}",
                idx.file_name().unwrap_or_default().to_string_lossy()
            ))
        };
        let idx_input = storage::Input::open(idx).map_err(at_idx)?;
        if idx_input.size() == 0 {
            return Err(at_idx(err("the index is empty")));
        }
        let idx_map = idx_input.all().map_err(at_idx)?;
        let (dtype, n, d) = header(&idx_map).map_err(at_idx)?;
        if let Some(w) = wanted
            && w != dtype
        {
            return Err(err(format!(
                "the index says the tokens are {}, but the schema says `dtype: {}`",
                dtype.name(),
                w.name()
            )));
        }
        let bin_input = tokenbin::open_input(bin)?;
        let bin_len = bin_input.size();
        let unit_starts = check_index(&idx_map, n, d, dtype, bin_len)?;
        // Checked: the index's pages are not needed again soon.
        if let Some(map) = idx_input.map() {
            storage::release(map, 0, map.len());
        }
        let tokens = (bin_len / dtype.size() as u64) as usize;
        Ok(MegatronSource {
            columns: vec![TOKENS.to_string()],
            idx: idx_map,
            n,
            dtype,
            region: Region::new(bin_input, 0, tokens, dtype),
            unit_starts,
        })
    }

    fn length(&self, i: u64) -> u64 {
        let at = (HEADER + 4 * i) as usize;
        i32_at(&self.idx, at) as u64
    }

    fn pointer(&self, i: u64) -> u64 {
        let at = (HEADER + 4 * self.n + 8 * i) as usize;
        i64_at(&self.idx, at) as u64
    }
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, i64::from_le_bytes)
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, i32::from_le_bytes)
}

/// Magic, version, dtype and the counts, with the index's size checked
/// against them: (dtype, sequences, document indices).
fn header(b: &[u8]) -> Result<(Dtype, u64, u64), ReadError> {
    if b.starts_with(b"TNTIDX\0\0") {
        return Err(err(
            "a legacy fairseq/Megatron IndexedDataset index (TNTIDX), not an MMIDIDX index: \
             not supported (rebuild the dataset with megatron-core's IndexedDatasetBuilder)",
        ));
    }
    if b.starts_with(b"MMIDRET\0\0") {
        return Err(err(
            "a NeMo retrieval index (MMIDRET), not a Megatron-LM token dataset index: not supported",
        ));
    }
    if !b.starts_with(MAGIC) {
        let shown: String = b
            .iter()
            .take(9)
            .map(|&c| match c {
                0 => "\\0".to_string(),
                b' '..=b'~' if c != b'"' && c != b'\\' => char::from(c).to_string(),
                _ => format!("\\x{c:02x}"),
            })
            .collect();
        return Err(err(format!(
            "not a Megatron-LM index: bad magic \"{shown}\" (expected \"MMIDIDX\\0\\0\")"
        )));
    }
    let size = b.len() as u64;
    if size < HEADER {
        return Err(err(format!(
            "index size mismatch: the index is {size} bytes, shorter than its 34-byte header"
        )));
    }
    let version = u64_at(b, 9);
    if version != 1 {
        return Err(err(format!("unsupported version {version} (only version 1 exists)")));
    }
    let code = b[17];
    let dtype = dtype_code(code).ok_or_else(|| err(format!("unknown dtype code {code} (codes are 1 to 8)")))?;
    let (n, d) = (u64_at(b, 18), u64_at(b, 26));
    // 34 + 12N + 8D (+ N with sequence modes), in u128: no overflow.
    let plain = u128::from(HEADER) + 12 * u128::from(n) + 8 * u128::from(d);
    let modes = plain + u128::from(n);
    if u128::from(size) != plain && u128::from(size) != modes {
        return Err(err(format!(
            "index size mismatch: the index is {size} bytes, its header ({n} sequences, {d} document indices) implies {plain} (or {modes} with sequence modes)"
        )));
    }
    Ok((dtype, n, d))
}

/// Checks lengths, pointers, the `.bin` size and the document indices;
/// returns the units' first sequences (then `n`).
fn check_index(b: &[u8], n: u64, d: u64, dtype: Dtype, bin_len: u64) -> Result<Vec<u64>, ReadError> {
    // The size check in `header` guarantees every offset below is in bounds.
    let size = dtype.size() as u64;
    let lengths = HEADER as usize;
    let pointers = lengths + 4 * n as usize;
    let docs = pointers + 8 * n as usize;
    let mut unit_starts = vec![0];
    let (mut unit_tokens, mut unit_rows) = (0u64, 0u64);
    let mut expected: u64 = 0;
    for i in 0..n as usize {
        let len = i32_at(b, lengths + 4 * i);
        if len < 0 {
            return Err(err(format!("sequence {i} has a negative length ({len})")));
        }
        let ptr = i64_at(b, pointers + 8 * i);
        if u64::try_from(ptr).ok() != Some(expected) {
            let why = if i == 0 {
                "the first sequence must start at byte 0".to_string()
            } else {
                format!("sequence {} ends there", i - 1)
            };
            return Err(err(format!(
                "pointer not contiguous: sequence {i} starts at byte {ptr} of the .bin, expected {expected} ({why})"
            )));
        }
        // Lengths are < 2^31 and there are fewer than 2^60 of them.
        let end = expected + len as u64 * size;
        if end > bin_len {
            return Err(err(format!(
                "sequence {i} ends at byte {end}, past the end of the .bin ({bin_len} bytes)"
            )));
        }
        expected = end;
        if unit_rows > 0 && (unit_tokens >= UNIT_TOKENS || unit_rows >= MAX_UNIT_ROWS) {
            unit_starts.push(i as u64);
            (unit_tokens, unit_rows) = (0, 0);
        }
        unit_tokens += len as u64;
        unit_rows += 1;
    }
    if expected != bin_len {
        return Err(err(format!(
            "bin size mismatch: the .bin holds {bin_len} bytes, but its last sequence ends at byte {expected}"
        )));
    }
    if d == 0 {
        return Err(err("the document indices are empty (they start with 0)"));
    }
    let doc = |k: u64| i64_at(b, docs + 8 * k as usize);
    if doc(0) != 0 {
        return Err(err(format!(
            "document indices not starting at 0: document_indices[0] is {}",
            doc(0)
        )));
    }
    for k in 1..d {
        if doc(k) < doc(k - 1) {
            return Err(err(format!(
                "document indices decreasing: document_indices[{}] = {} > document_indices[{k}] = {}",
                k - 1,
                doc(k - 1),
                doc(k)
            )));
        }
    }
    let last = doc(d - 1);
    if u64::try_from(last).ok() != Some(n) {
        return Err(err(format!(
            "document indices end at {last}, not at the sequence count {n}"
        )));
    }
    if n > 0 {
        unit_starts.push(n);
    } else {
        unit_starts.clear();
    }
    Ok(unit_starts)
}

impl Source for MegatronSource {
    fn columns(&self) -> &[String] {
        &self.columns
    }

    fn stored_type(&self, _column: usize) -> Option<DataType> {
        Some(self.dtype.arrow())
    }

    fn notes(&self) -> Vec<String> {
        if self.n > 0 {
            return Vec::new();
        }
        vec![
            "an empty dataset (0 sequences): megatron-core's IndexedDataset cannot map its 0-byte .bin \
             (the default mmap_bin_files=True raises 'cannot mmap an empty file')"
                .into(),
        ]
    }

    fn units(&self) -> usize {
        self.unit_starts.len().saturating_sub(1)
    }

    fn read(
        &self,
        unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        if unit >= self.units() {
            return Err(err(format!("no unit {unit} (the dataset has {})", self.units())));
        }
        tokenbin::check_projection(projection, "a Megatron-LM dataset")?;
        let (start, end) = (self.unit_starts[unit], self.unit_starts[unit + 1]);
        let size = self.dtype.size() as u64;
        let field = Arc::new(Field::new("item", self.dtype.arrow(), false));
        // The unit's tokens in memory: a view of the map, or one ranged read.
        let first = (self.pointer(start) / size) as usize;
        let last = if end < self.n {
            (self.pointer(end) / size) as usize
        } else {
            self.region.len()
        };
        let loaded = match projection.len() {
            0 => None,
            _ => Some(self.region.load(first, last - first)?),
        };
        let mut r = start;
        let mut offsets: Vec<i32> = Vec::new();
        while r < end {
            // Sequences until the batch holds enough elements (at least one).
            offsets.clear();
            offsets.push(0);
            let mut elems = 0u64;
            let mut k = r;
            while k < end && (k == r || (elems < MAX_BATCH_ELEMS && k - r < BATCH_ROWS as u64)) {
                let len = self.length(k);
                if k > r && elems + len > MAX_BATCH_ELEMS {
                    break;
                }
                elems += len;
                // A batch holds at most 2^20 elements or one sequence (< 2^31).
                offsets.push(elems as i32);
                k += 1;
            }
            let rows = (k - r) as usize;
            let first = (self.pointer(r) / size) as usize;
            let cols = match &loaded {
                None => Vec::new(),
                Some(loaded) => {
                    let values = loaded.array(first, elems as usize);
                    let offsets = OffsetBuffer::new(offsets.clone().into());
                    let list: ArrayRef = Arc::new(ListArray::try_new(field.clone(), offsets, values, None)?);
                    vec![list; projection.len()]
                }
            };
            sink(Batch {
                first_row: r,
                batch: tokenbin::token_batch(cols, rows)?,
            })?;
            r = k;
        }
        if loaded.is_some() {
            self.region.release(first, last - first);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{DataType, Int64Type};

    fn fixture(rel: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/tokens/megatron")
            .join(rel)
    }

    fn open(name: &str) -> Result<MegatronSource, ReadError> {
        MegatronSource::open(&fixture(&format!("{name}.bin")), &fixture(&format!("{name}.idx")), None)
    }

    fn rows(src: &MegatronSource) -> Vec<Vec<i64>> {
        let mut out = Vec::new();
        for u in 0..src.units() {
            src.read(u, &[0], &mut |b| {
                assert_eq!(b.first_row as usize, out.len());
                let list = b.batch.column(0).as_list::<i32>();
                for i in 0..list.len() {
                    let v = arrow::compute::cast(&list.value(i), &DataType::Int64).expect("cast");
                    out.push(v.as_primitive::<Int64Type>().values().to_vec());
                }
                Ok(())
            })
            .expect("read");
        }
        out
    }

    #[test]
    fn fixtures_read_as_the_real_reader_reads_them() {
        let text = std::fs::read_to_string(fixture("../expected.json")).expect("manifest");
        let manifest: serde_json::Value = serde_json::from_str(&text).expect("json");
        let mut seen = 0;
        for f in manifest["fixtures"].as_array().expect("fixtures") {
            if f["format"] != "megatron" || f.get("error").is_some() {
                continue;
            }
            let name = f["path"]
                .as_str()
                .expect("path")
                .trim_start_matches("megatron/")
                .trim_end_matches(".bin");
            let src = open(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            let want: Vec<Vec<i64>> = serde_json::from_value(f["tokens"].clone()).expect("tokens");
            assert_eq!(rows(&src), want, "{name}");
            seen += 1;
        }
        assert_eq!(seen, 8);
    }

    #[test]
    fn broken_indexes_are_errors_naming_the_cause() {
        for (name, want) in [
            ("bad_magic", "bad magic"),
            ("version2", "unsupported version 2"),
            ("dtype99", "unknown dtype code 99"),
            (
                "length_past_bin",
                "sequence 9 ends at byte 172, past the end of the .bin (74 bytes)",
            ),
            (
                "bin_truncated",
                "sequence 9 ends at byte 74, past the end of the .bin (72 bytes)",
            ),
            (
                "bin_trailing",
                "bin size mismatch: the .bin holds 76 bytes, but its last sequence ends at byte 74",
            ),
            (
                "pointer_gap",
                "pointer not contiguous: sequence 5 starts at byte 38 of the .bin, expected 36",
            ),
            ("doc_idx_not_zero", "document indices not starting at 0"),
            (
                "doc_idx_decreasing",
                "document indices decreasing: document_indices[1] = 7 > document_indices[2] = 6",
            ),
            (
                "doc_idx_last_not_n",
                "document indices end at 9, not at the sequence count 10",
            ),
            ("idx_truncated", "index size mismatch: the index is 98 bytes"),
            ("idx_trailing", "index size mismatch: the index is 213 bytes"),
            ("seq_count_2pow40", "1099511627776 sequences"),
            ("legacy_tntidx", "TNTIDX"),
            ("nemo_mmidret", "MMIDRET"),
        ] {
            let e = open(&format!("broken/{name}"))
                .err()
                .unwrap_or_else(|| panic!("{name} opened"));
            assert!(e.to_string().contains(want), "{name}: {e}");
        }
    }

    #[test]
    fn long_datasets_split_into_units_and_bounded_batches() {
        let dir = tempfile::tempdir().expect("tempdir");
        // 3000 sequences of 2000 tokens (6M): two units, batches of <= 2^20.
        let (n, len) = (3000u64, 2000u64);
        let mut idx = MAGIC.to_vec();
        idx.extend(1u64.to_le_bytes());
        idx.push(8);
        idx.extend(n.to_le_bytes());
        idx.extend(2u64.to_le_bytes());
        idx.extend((0..n).flat_map(|_| (len as i32).to_le_bytes()));
        idx.extend((0..n).flat_map(|i| (i * len * 2).to_le_bytes()));
        idx.extend(0u64.to_le_bytes());
        idx.extend(n.to_le_bytes());
        let bin: Vec<u8> = (0..n * len).flat_map(|t| ((t % 50000) as u16).to_le_bytes()).collect();
        std::fs::write(dir.path().join("d.idx"), idx).expect("idx");
        std::fs::write(dir.path().join("d.bin"), bin).expect("bin");
        let src =
            MegatronSource::open(&dir.path().join("d.bin"), &dir.path().join("d.idx"), Some("uint16")).expect("open");
        assert_eq!(src.units(), 2);
        let r = rows(&src);
        assert_eq!(r.len(), n as usize);
        for (i, row) in r.iter().enumerate() {
            let first = i as u64 * len;
            assert!(
                row.iter()
                    .enumerate()
                    .all(|(j, &v)| v as u64 == (first + j as u64) % 50000),
                "row {i}"
            );
        }
        let e = MegatronSource::open(&dir.path().join("d.bin"), &dir.path().join("d.idx"), Some("int32"))
            .err()
            .expect("dtype");
        assert!(e.message.contains("schema says `dtype: int32`"), "{e}");
    }
}
