//! CSV and TSV reader.
//!
//! CSV has no types, so each cell's text decides (see docs/src/sources/tables.md): blank is
//! null, a number is a number (`i64`, `u64` above `i64::MAX`, else `f64`),
//! anything else is a string; the shared column builder turns one batch of a
//! column into one Arrow array (a dense union where kinds mix). The first
//! record is the header (a UTF-8 BOM is stripped); rows are the records after
//! it, so a quoted field spanning lines is still one row. `.tsv` files are
//! tab-separated, everything else comma-separated; `.gz` / `.zst` / `.zstd`
//! are decompressed on the fly. The file is streamed: memory is one batch,
//! never the whole file.
//!
//! Errors name the 0-based record (the report's `row`) and the 1-based line
//! where it starts. Invalid UTF-8 fails the file (as it does in pandas and
//! pyarrow).
//!
//! A large uncompressed file without a single quote character, the common
//! case for numeric training data, takes a faster path: it is memory-mapped,
//! cut at line ends into chunks that are checked in parallel (without quotes
//! every line end is a record end), and its lines are split on the delimiter
//! directly. A first pass over the chunks counts their records and lines, so
//! rows and error lines are numbered exactly as the sequential `csv` reader
//! numbers them; tests compare both paths on the same files.

use std::cell::Cell;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use ::csv::ByteRecord;
use memmap2::Mmap;

use super::column::{self, BATCH_BYTES, ColumnBuilder, MAX_RECORD_BYTES};
use crate::error::ReadError;
use crate::source::format::Format;
use crate::source::read::{BATCH_ROWS, Batch, Source};
use crate::source::storage;

/// CSV (comma) or TSV (tab), optionally gzip- or zstd-compressed.
pub(crate) const FORMAT: Format = Format::new(
    "csv",
    |n, _| matches!(n.ext, Some("csv" | "tsv")),
    |path, _| Ok(Box::new(CsvSource::open(path)?)),
);

/// A CSV or TSV file: one unit read front to back, or (see the module
/// docs) chunks of a memory-mapped quote-free file.
#[derive(Debug)]
pub(crate) struct CsvSource {
    path: PathBuf,
    delimiter: u8,
    columns: Vec<String>,
    /// Largest record accepted ([`MAX_RECORD_BYTES`]; smaller in tests).
    max_record: usize,
    /// The chunks of the fast path, when the file qualifies.
    fast: Option<Fast>,
}

/// Files at least this large (uncompressed, without quotes) take the fast path.
const FAST_MIN_BYTES: u64 = 1 << 20;
/// Target size of a fast-path chunk.
const CHUNK_BYTES: usize = 16 << 20;

/// A quote-free file, mapped, and its chunks.
#[derive(Debug)]
struct Fast {
    data: Arc<Mmap>,
    chunks: Vec<Chunk>,
}

/// Lines `start..end` (bytes) of a mapped file: `end` is just past a line
/// end or the end of the file.
#[derive(Debug, Clone, Copy)]
struct Chunk {
    start: usize,
    end: usize,
    /// Record index of the chunk's first record.
    first_row: u64,
    /// 1-based line number of the chunk's first line.
    first_line: u64,
}

/// Counts bytes read since the counter was last reset, and fails once a
/// single record grows past `limit` (an unbalanced quote would otherwise
/// make the CSV parser buffer the rest of the file).
struct Capped<R> {
    inner: R,
    used: Rc<Cell<usize>>,
    limit: usize,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.used.get() > self.limit {
            return Err(io::Error::other("record too large"));
        }
        let n = self.inner.read(buf)?;
        self.used.set(self.used.get() + n);
        Ok(n)
    }
}

type Reader = ::csv::Reader<Capped<Box<dyn Read + Send>>>;

impl CsvSource {
    /// Opens a CSV/TSV file (optionally compressed) and reads its header.
    pub(crate) fn open(path: &Path) -> Result<Self, ReadError> {
        Self::open_with_limit(path, MAX_RECORD_BYTES)
    }

    /// [`CsvSource::open`] with another record size limit.
    fn open_with_limit(path: &Path, max_record: usize) -> Result<Self, ReadError> {
        Self::open_with(path, max_record, FAST_MIN_BYTES, CHUNK_BYTES)
    }

    /// [`CsvSource::open`] with every threshold given (tests force the fast
    /// path on small files with small chunks).
    fn open_with(path: &Path, max_record: usize, fast_min: u64, chunk_bytes: usize) -> Result<Self, ReadError> {
        let delimiter = match column::inner_extension(path).as_deref() {
            Some("tsv") => b'\t',
            _ => b',',
        };
        let mut source = CsvSource {
            path: path.to_path_buf(),
            delimiter,
            columns: Vec::new(),
            max_record,
            fast: None,
        };
        let (mut rdr, used) = source.reader()?;
        let header = rdr
            .byte_headers()
            .map_err(|e| csv_error(e, "the header".into(), used.get(), source.max_record))?;
        if let Err(e) = std::str::from_utf8(header.as_slice()) {
            return Err(ReadError::new(format!("invalid UTF-8 in the header: {e}")));
        }
        source.columns = header
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let f = if i == 0 {
                    f.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(f)
                } else {
                    f
                };
                String::from_utf8_lossy(f).into_owned()
            })
            .collect();
        let body_start = rdr.position().byte();
        // A local file is scanned in place; an object is read in order.
        if column::Compression::of(path) == column::Compression::None
            && let Some(data) = storage::in_place(path)?
        {
            source.fast = Fast::plan(data, body_start, fast_min, chunk_bytes);
        }
        Ok(source)
    }

    /// A fresh reader positioned before the header.
    fn reader(&self) -> Result<(Reader, Rc<Cell<usize>>), ReadError> {
        let used = Rc::new(Cell::new(0));
        let inner = Capped {
            inner: column::open_decompressed(&self.path)?,
            used: Rc::clone(&used),
            limit: self.max_record,
        };
        let rdr = ::csv::ReaderBuilder::new()
            .delimiter(self.delimiter)
            .has_headers(true)
            .flexible(true)
            .buffer_capacity(256 << 10)
            .from_reader(inner);
        Ok((rdr, used))
    }

    /// The 1-based line on which the record at `byte` starts. The `csv`
    /// crate's own line count lags after CRLF and blank lines, so this
    /// rereads the file (on the error path only), counting newlines up to
    /// `byte` and then over the terminators and blank lines that follow it.
    fn line_at(&self, byte: u64) -> Option<u64> {
        let mut reader = BufReader::new(column::open_decompressed(&self.path).ok()?);
        let mut line = 1u64;
        let mut pos = 0u64;
        loop {
            let buf = reader.fill_buf().ok()?;
            if buf.is_empty() {
                return Some(line);
            }
            // Whole chunks before `byte`: count in bulk.
            let before = usize::try_from(byte.saturating_sub(pos)).map_or(buf.len(), |n| n.min(buf.len()));
            line += buf[..before].iter().filter(|&&b| b == b'\n').count() as u64;
            pos += before as u64;
            let mut used = before;
            for &b in &buf[before..] {
                if pos >= byte && b != b'\r' && b != b'\n' {
                    return Some(line);
                }
                line += u64::from(b == b'\n');
                pos += 1;
                used += 1;
            }
            reader.consume(used);
        }
    }
}

/// A `csv` error as a [`ReadError`] at `location`; `used > limit` means
/// the record outgrew the size limit.
fn csv_error(e: ::csv::Error, location: String, used: usize, limit: usize) -> ReadError {
    let message = if used > limit {
        format!("a record is larger than {} MiB (an unbalanced quote?)", limit >> 20)
    } else {
        match e.kind() {
            ::csv::ErrorKind::Io(io) => io.to_string(),
            _ => e.to_string(),
        }
    };
    ReadError::new(message).at(location)
}

impl Source for CsvSource {
    fn columns(&self) -> &[String] {
        &self.columns
    }

    fn units(&self) -> usize {
        self.fast.as_ref().map_or(1, |f| f.chunks.len())
    }

    fn read(
        &self,
        unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        if unit >= self.units() {
            return Err(ReadError::new(format!("no unit {unit} in this file")));
        }
        let width = self.columns.len();
        let names = projection
            .iter()
            .map(|&i| self.columns.get(i).map(String::as_str))
            .collect::<Option<Vec<&str>>>()
            .ok_or_else(|| ReadError::new("projection names a column the file lacks"))?;
        if let Some(fast) = &self.fast {
            return fast.read(fast.chunks[unit], self.delimiter, width, projection, &names, sink);
        }

        let (mut rdr, used) = self.reader()?;
        // Skip the header (read at open).
        rdr.byte_headers()
            .map_err(|e| csv_error(e, "the header".into(), used.get(), self.max_record))?;

        let mut builders: Vec<ColumnBuilder> = projection.iter().map(|_| ColumnBuilder::new()).collect();
        let mut record = ByteRecord::new();
        let mut row: u64 = 0; // record index of the next record
        let mut first_row: u64 = 0;
        let mut rows = 0usize;
        let mut bytes = 0usize;
        loop {
            used.set(0);
            let start = rdr.position().byte();
            match rdr.read_byte_record(&mut record) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    let location = match self.line_at(start) {
                        Some(line) => format!("record {row} (line {line})"),
                        None => format!("record {row}"),
                    };
                    return Err(csv_error(e, location, used.get(), self.max_record));
                }
            }
            // pandas and pyarrow refuse such a file; so does preflight
            // (a checked cell with broken bytes cannot be trusted to be text).
            if std::str::from_utf8(record.as_slice()).is_err() {
                let err = ReadError::new(format!("invalid UTF-8 in record {row}"));
                let line = record.position().and_then(|p| self.line_at(p.byte()));
                return Err(match line {
                    Some(line) => err.at(format!("line {line}")),
                    None => err,
                });
            }
            if record.len() > width {
                let err = ReadError::new(format!(
                    "record {row} has {} fields, the header has {width}",
                    record.len()
                ));
                let line = record.position().and_then(|p| self.line_at(p.byte()));
                return Err(match line {
                    Some(line) => err.at(format!("line {line}")),
                    None => err,
                });
            }
            for (b, &i) in builders.iter_mut().zip(projection) {
                match record.get(i) {
                    Some(cell) => b.push_text_cell(cell),
                    None => b.push_null(),
                }
            }
            row += 1;
            rows += 1;
            bytes += record.as_slice().len();
            if rows >= BATCH_ROWS || bytes >= BATCH_BYTES {
                sink(column::take_batch(&names, &mut builders, rows, first_row)?)?;
                first_row = row;
                rows = 0;
                bytes = 0;
            }
        }
        if rows > 0 {
            sink(column::take_batch(&names, &mut builders, rows, first_row)?)?;
        }
        Ok(())
    }
}

impl Fast {
    /// Cuts the mapped file's body (from `body_start`) into chunks, or
    /// `None` when the file is too small, holds a quote, or a carriage
    /// return that does not end a line (the `csv` reader's other record
    /// terminator): then the sequential reader handles it.
    fn plan(data: Arc<Mmap>, body_start: u64, fast_min: u64, chunk_bytes: usize) -> Option<Fast> {
        use rayon::prelude::*;
        if (data.len() as u64) < fast_min {
            return None;
        }
        let body_start = usize::try_from(body_start).unwrap_or(usize::MAX).min(data.len());
        let mut bounds = vec![body_start];
        let mut at = body_start;
        while at < data.len() {
            let want = at.saturating_add(chunk_bytes.max(1)).min(data.len());
            let end = match memchr::memchr(b'\n', &data[want.saturating_sub(1)..]) {
                Some(i) => want.saturating_sub(1) + i + 1,
                None => data.len(),
            };
            bounds.push(end);
            at = end;
        }
        // Per chunk: (records, newlines, eligible), counted in parallel.
        let spans: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
        let counts: Vec<(u64, u64, bool)> = spans
            .par_iter()
            .map(|&(a, b)| {
                storage::populate(&data, a, b - a);
                let counted = survey(&data[a..b]);
                storage::release(&data, a, b - a);
                counted
            })
            .collect();
        if counts.iter().any(|c| !c.2) {
            return None;
        }
        let mut row = 0u64;
        let mut line = 1 + memchr::memchr_iter(b'\n', &data[..body_start]).count() as u64;
        let mut chunks = Vec::with_capacity(spans.len().max(1));
        for (&(start, end), &(records, newlines, _)) in spans.iter().zip(&counts) {
            chunks.push(Chunk {
                start,
                end,
                first_row: row,
                first_line: line,
            });
            row += records;
            line += newlines;
        }
        if chunks.is_empty() {
            chunks.push(Chunk {
                start: body_start,
                end: body_start,
                first_row: 0,
                first_line: line,
            });
        }
        Some(Fast { data, chunks })
    }

    /// Reads one chunk as the sequential reader would read its records.
    fn read(
        &self,
        chunk: Chunk,
        delimiter: u8,
        width: usize,
        projection: &[usize],
        names: &[&str],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        // For each field of a record, the builder that wants it, if any.
        let mut wanted: Vec<Option<usize>> = vec![None; width];
        for (b, &field) in projection.iter().enumerate() {
            if let Some(w) = wanted.get_mut(field) {
                *w = Some(b);
            }
        }
        let mut builders: Vec<ColumnBuilder> = projection.iter().map(|_| ColumnBuilder::new()).collect();
        let body = &self.data[chunk.start..chunk.end];
        storage::populate(&self.data, chunk.start, body.len());
        let (mut row, mut line) = (chunk.first_row, chunk.first_line);
        let mut first_row = row;
        let (mut rows, mut bytes) = (0usize, 0usize);
        // One pass finds line ends and delimiters; an all-ASCII chunk (the
        // usual case) needs no per-record UTF-8 check.
        let ascii = body.is_ascii();
        let mut delimiters: Vec<usize> = Vec::with_capacity(width + 1);
        let mut line_start = 0;
        let ends = memchr::memchr2_iter(b'\n', delimiter, body).chain(std::iter::once(body.len()));
        for at in ends {
            if at < body.len() && body[at] == delimiter {
                delimiters.push(at);
                continue;
            }
            if at == body.len() && line_start >= body.len() {
                break; // the chunk ended with a line end
            }
            // A line ends at `at`.
            let this_line = line;
            line += 1;
            let mut end = at;
            if end > line_start && body[end - 1] == b'\r' {
                end -= 1;
            }
            let record = &body[line_start..end];
            let next_start = at + 1;
            if record.is_empty() {
                line_start = next_start;
                delimiters.clear();
                continue; // a blank line is no record
            }
            if !ascii && std::str::from_utf8(record).is_err() {
                return Err(ReadError::new(format!("invalid UTF-8 in record {row}")).at(format!("line {this_line}")));
            }
            let fields = delimiters.len() + 1;
            if fields > width {
                return Err(
                    ReadError::new(format!("record {row} has {fields} fields, the header has {width}"))
                        .at(format!("line {this_line}")),
                );
            }
            let mut cell_start = line_start;
            for (field, &want) in wanted.iter().enumerate() {
                if field >= fields {
                    if let Some(b) = want {
                        builders[b].push_null();
                    }
                    continue;
                }
                let cell_end = delimiters.get(field).copied().unwrap_or(end);
                if let Some(b) = want {
                    builders[b].push_text_cell(&body[cell_start..cell_end]);
                }
                cell_start = cell_end + 1;
            }
            delimiters.clear();
            line_start = next_start;
            row += 1;
            rows += 1;
            bytes += record.len() + 1 - fields;
            if rows >= BATCH_ROWS || bytes >= BATCH_BYTES {
                sink(column::take_batch(names, &mut builders, rows, first_row)?)?;
                first_row = row;
                rows = 0;
                bytes = 0;
                storage::release(&self.data, chunk.start, line_start.min(body.len()));
            }
        }
        if rows > 0 {
            sink(column::take_batch(names, &mut builders, rows, first_row)?)?;
        }
        storage::release(&self.data, chunk.start, body.len());
        Ok(())
    }
}

/// Records and newlines of a chunk, and whether it suits the fast path: no
/// quote, and every carriage return followed by a newline.
fn survey(chunk: &[u8]) -> (u64, u64, bool) {
    if memchr::memchr(b'"', chunk).is_some() {
        return (0, 0, false);
    }
    if memchr::memchr_iter(b'\r', chunk).any(|i| chunk.get(i + 1) != Some(&b'\n')) {
        return (0, 0, false);
    }
    // Bulk counts: every line ends in a newline but perhaps the last; a
    // line is no record when it is empty (or a lone CR before its newline).
    let newlines = memchr::memchr_iter(b'\n', chunk).count() as u64;
    let mut empty = u64::from(chunk.starts_with(b"\n") || chunk.starts_with(b"\r\n"));
    for pattern in [&b"\n\n"[..], b"\n\r\n"] {
        let finder = memchr::memmem::Finder::new(pattern);
        let mut from = 0;
        while let Some(i) = finder.find(&chunk[from..]) {
            empty += 1;
            from += i + 1; // overlapping: "\n\n\n" holds two empty lines
        }
    }
    let tail = match memchr::memrchr(b'\n', chunk) {
        Some(i) => &chunk[i + 1..],
        None => chunk,
    };
    let last = u64::from(!(tail.is_empty() || tail == b"\r"));
    // A chunk that is one empty line without its newline counts nothing.
    let records = (newlines - empty.min(newlines)) + last;
    (records, newlines, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{DataType, Float64Type, Int64Type, UInt64Type};
    use column::test_util::{garbage, one_batch, py_has, python, read_all, zstd_file};

    #[test]
    fn pandas_to_csv() {
        let dir = tempfile::tempdir().unwrap();
        let ok = python(
            dir.path(),
            "pandas, numpy",
            r#"
import pandas as pd, numpy as np
pd.DataFrame({
    "label": pd.array([0, 1, None, 2], dtype="Int64"),
    "score": [0.5, float("nan"), float("inf"), -1e20],
    "text": ["a", "hello, world", 'say "hi"', ""],
    "mixed": ["1", "x", "2.5", None],
    "big": np.array([2**64 - 1, 0, 5, 2**63], dtype=np.uint64),
    "flag": [True, False, True, False],
}).to_csv("p.csv", index=False)
pd.DataFrame({"a": [1, 2]}).to_csv("bom.csv", index=False, encoding="utf-8-sig")
"#,
        );
        if !ok {
            return;
        }
        let src = CsvSource::open(&dir.path().join("p.csv")).unwrap();
        assert_eq!(src.columns(), ["label", "score", "text", "mixed", "big", "flag"]);
        assert_eq!(src.units(), 1);
        let cols = one_batch(&src, &[0, 1, 2, 3, 4, 5]);

        let label = cols[0].as_primitive::<Int64Type>();
        assert_eq!((label.value(0), label.value(1), label.value(3)), (0, 1, 2));
        assert!(label.is_null(2));

        let score = cols[1].as_primitive::<Float64Type>();
        assert_eq!(score.value(0), 0.5);
        assert!(score.is_null(1));
        assert_eq!(score.value(2), f64::INFINITY);
        assert_eq!(score.value(3), -1e20);

        let text = cols[2].as_string::<i32>();
        assert_eq!(text.value(0), "a");
        assert_eq!(text.value(1), "hello, world");
        assert_eq!(text.value(2), "say \"hi\"");
        assert!(text.is_null(3), "an empty cell is null");

        // "1", "x", "2.5", None: int64, utf8, float64, null in one dense union.
        let mixed = cols[3].as_union();
        let ids: Vec<i8> = (0..4).map(|i| mixed.type_id(i)).collect();
        assert_eq!(ids, [1, 5, 3, 0]);
        assert_eq!(mixed.child(1).as_primitive::<Int64Type>().value(0), 1);
        assert_eq!(mixed.child(5).as_string::<i32>().value(0), "x");
        assert_eq!(mixed.child(3).as_primitive::<Float64Type>().value(0), 2.5);
        assert_eq!(cols[3].logical_null_count(), 1);

        let big = cols[4].as_primitive::<UInt64Type>();
        assert_eq!(big.values().to_vec(), [u64::MAX, 0, 5, 1 << 63]);

        // Booleans are text in CSV.
        assert_eq!(cols[5].as_string::<i32>().value(0), "True");

        // Projection order, a subset, and an empty projection (rows only).
        let cols = one_batch(&src, &[2, 0]);
        assert_eq!(cols[0].data_type(), &DataType::Utf8);
        assert_eq!(cols[1].data_type(), &DataType::Int64);
        let batches = read_all(&src, &[]).unwrap();
        assert_eq!(batches[0].batch.num_rows(), 4);
        assert_eq!(batches[0].batch.num_columns(), 0);

        let bom = CsvSource::open(&dir.path().join("bom.csv")).unwrap();
        assert_eq!(bom.columns(), ["a"]);
        let cols = one_batch(&bom, &[0]);
        assert_eq!(cols[0].as_primitive::<Int64Type>().values().to_vec(), [1, 2]);
    }

    #[test]
    fn python_csv_module_multiline_tsv_and_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let ok = python(
            dir.path(),
            "csv",
            r#"
import csv
with open("m.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["text", "label"])
    w.writerow(["line one\nline two", 3])
    w.writerow(["plain", 4])
    w.writerow(["a\r\nb,\"c\"", 5])
    w.writerow(["last", 6])
with open("t.tsv", "w", newline="") as f:
    w = csv.writer(f, delimiter="\t")
    w.writerow(["id", "name", "id"])
    w.writerow([1, "tab\there", 10])
    w.writerow([2, "x,y", 20])
with open("n.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["v"])
    for v in ["+3", " 7 ", "-7", "1e3", "nan", "-inf", "Infinity", "9223372036854775808",
              "99999999999999999999", "   ", "1,5", "0x10", "3.0"]:
        w.writerow([v])
with open("short.csv", "w", newline="") as f:
    f.write("a,b,c\n1,2,3\n4\n5,6\n")
"#,
        );
        if !ok {
            return;
        }
        let m = CsvSource::open(&dir.path().join("m.csv")).unwrap();
        let cols = one_batch(&m, &[0, 1]);
        let text = cols[0].as_string::<i32>();
        assert_eq!(text.len(), 4, "records, not lines");
        assert_eq!(text.value(0), "line one\nline two");
        assert_eq!(text.value(2), "a\r\nb,\"c\"");
        assert_eq!(cols[1].as_primitive::<Int64Type>().values().to_vec(), [3, 4, 5, 6]);

        let t = CsvSource::open(&dir.path().join("t.tsv")).unwrap();
        assert_eq!(t.columns(), ["id", "name", "id"], "duplicates kept");
        let cols = one_batch(&t, &[2, 1, 0]);
        assert_eq!(cols[0].as_primitive::<Int64Type>().values().to_vec(), [10, 20]);
        assert_eq!(cols[1].as_string::<i32>().value(0), "tab\there");
        assert_eq!(cols[1].as_string::<i32>().value(1), "x,y");
        assert_eq!(cols[2].as_primitive::<Int64Type>().values().to_vec(), [1, 2]);

        let n = CsvSource::open(&dir.path().join("n.csv")).unwrap();
        let cols = one_batch(&n, &[0]);
        let u = cols[0].as_union();
        let kinds: Vec<i8> = (0..u.len()).map(|i| u.type_id(i)).collect();
        assert_eq!(kinds, [1, 1, 1, 3, 3, 3, 3, 2, 3, 0, 5, 5, 3]);
        let ints = u.child(1).as_primitive::<Int64Type>();
        assert_eq!(ints.values().to_vec(), [3, 7, -7]);
        let floats = u.child(3).as_primitive::<Float64Type>();
        assert_eq!(floats.value(0), 1000.0);
        assert!(floats.value(1).is_nan());
        assert_eq!(floats.value(2), f64::NEG_INFINITY);
        assert_eq!(floats.value(3), f64::INFINITY);
        assert_eq!(floats.value(4), 1e20);
        assert_eq!(floats.value(5), 3.0);
        assert_eq!(u.child(2).as_primitive::<UInt64Type>().value(0), 9223372036854775808);
        assert_eq!(u.child(5).as_string::<i32>().value(0), "1,5");

        // Fewer fields than the header: the missing cells are null.
        let s = CsvSource::open(&dir.path().join("short.csv")).unwrap();
        let cols = one_batch(&s, &[0, 1, 2]);
        let c = cols[2].as_primitive::<Int64Type>();
        assert_eq!((c.value(0), c.is_null(1), c.is_null(2)), (3, true, true));
        assert!(cols[1].as_primitive::<Int64Type>().is_null(1));
    }

    #[test]
    fn batches_rows_and_compression() {
        let dir = tempfile::tempdir().unwrap();
        let zst = py_has("zstandard");
        let ok = python(
            dir.path(),
            "csv, gzip",
            &format!(
                r#"
import csv, gzip, io
buf = io.StringIO()
w = csv.writer(buf)
w.writerow(["row", "note"])
for i in range(150000):
    w.writerow([i, "" if i % 1000 == 7 else ("multi\nline" if i % 5000 == 0 else "n")])
data = buf.getvalue().encode()
open("big.csv", "wb").write(data)
with gzip.open("big.csv.gz", "wb") as f:
    f.write(data[: len(data) // 2])
with gzip.open("part2.gz", "wb") as f:
    f.write(data[len(data) // 2 :])
# Two concatenated gzip members make one stream.
open("big.csv.gz", "ab").write(open("part2.gz", "rb").read())
if {zst}:
    import zstandard
    open("big.tsv.zst", "wb").write(zstandard.ZstdCompressor().compress(data.replace(b",", b"\t")))
"#,
                zst = if zst { "True" } else { "False" }
            ),
        );
        if !ok {
            return;
        }
        if !zst {
            let tsv = std::fs::read(dir.path().join("big.csv"))
                .unwrap()
                .iter()
                .map(|&b| if b == b',' { b'\t' } else { b })
                .collect::<Vec<u8>>();
            std::fs::write(dir.path().join("big.tsv"), tsv).unwrap();
            zstd_file(&dir.path().join("big.tsv"), &dir.path().join("big.tsv.zst"));
        }
        for name in ["big.csv", "big.csv.gz", "big.tsv.zst"] {
            let src = CsvSource::open(&dir.path().join(name)).unwrap();
            assert_eq!(src.columns(), ["row", "note"], "{name}");
            let batches = read_all(&src, &[0, 1]).unwrap();
            let firsts: Vec<u64> = batches.iter().map(|b| b.first_row).collect();
            assert_eq!(firsts, [0, 65536, 131072], "{name}");
            for b in &batches {
                let rows = b.batch.column(0).as_primitive::<Int64Type>();
                for (i, v) in rows.values().iter().enumerate() {
                    assert_eq!(*v as u64, b.first_row + i as u64, "{name}");
                }
                let notes = b.batch.column(1).as_string::<i32>();
                for i in 0..notes.len() {
                    let row = b.first_row + i as u64;
                    assert_eq!(notes.is_null(i), row % 1000 == 7, "{name} row {row}");
                }
            }
        }
    }

    #[test]
    fn too_many_fields_names_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let ok = python(
            dir.path(),
            "csv",
            r#"
import csv
with open("bad.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["a", "b", "c"])
    for i in range(100):
        w.writerow([i, 1, 2, 3, 4] if i == 57 else [i, 1, 2])
"#,
        );
        if !ok {
            return;
        }
        let src = CsvSource::open(&dir.path().join("bad.csv")).unwrap();
        let err = read_all(&src, &[0]).unwrap_err();
        assert_eq!(err.message, "record 57 has 5 fields, the header has 3");
        assert_eq!(err.location.as_deref(), Some("line 59"));

        // LF endings, blank lines and a multi-line field before the record.
        let text = "a,b\n1,2\n\n\"x\ny\",3\n\n\n4,5,6\n";
        std::fs::write(dir.path().join("lf.csv"), text).unwrap();
        let src = CsvSource::open(&dir.path().join("lf.csv")).unwrap();
        let err = read_all(&src, &[0]).unwrap_err();
        assert_eq!(err.message, "record 2 has 3 fields, the header has 2");
        assert_eq!(err.location.as_deref(), Some("line 8"));
    }

    #[test]
    fn long_records_and_the_size_limit() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        // A 10 MB field is fine.
        let long = "x".repeat(10 << 20);
        std::fs::write(p("long.csv"), format!("a,b\n1,{long}\n2,y\n")).unwrap();
        let src = CsvSource::open(&p("long.csv")).unwrap();
        let cols = one_batch(&src, &[0, 1]);
        assert_eq!(cols[1].as_string::<i32>().value(0).len(), 10 << 20);
        assert_eq!(cols[0].as_primitive::<Int64Type>().value(1), 2);

        // An unbalanced quote would swallow the file: past the limit, an error.
        let rest = "3,4\r\n".repeat(1 << 20);
        std::fs::write(p("quote.csv"), format!("a,b\r\n1,2\r\n\"x,{rest}")).unwrap();
        let src = CsvSource::open_with_limit(&p("quote.csv"), 1 << 20).unwrap();
        let err = read_all(&src, &[0]).unwrap_err();
        assert_eq!(err.message, "a record is larger than 1 MiB (an unbalanced quote?)");
        assert_eq!(err.location.as_deref(), Some("record 1 (line 3)"));
    }

    #[test]
    fn empty_header_only_and_hostile_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(p("empty.csv"), b"").unwrap();
        let src = CsvSource::open(&p("empty.csv")).unwrap();
        assert!(src.columns().is_empty());
        assert!(read_all(&src, &[]).unwrap().is_empty());

        std::fs::write(p("header.csv"), b"a,b\r\n").unwrap();
        let src = CsvSource::open(&p("header.csv")).unwrap();
        assert_eq!(src.columns(), ["a", "b"]);
        assert!(read_all(&src, &[0, 1]).unwrap().is_empty());
        assert!(read_all(&src, &[2]).is_err(), "bad projection");
        assert!(src.read(1, &[0], &mut |_| Ok(())).is_err(), "bad unit");

        // Invalid UTF-8 is an error naming the line, as pandas and pyarrow
        // refuse such a file.
        std::fs::write(p("utf8.csv"), b"t,n\nab,1\nab\xfe,2\n").unwrap();
        let src = CsvSource::open(&p("utf8.csv")).unwrap();
        let err = read_all(&src, &[1]).unwrap_err();
        assert!(err.message.starts_with("invalid UTF-8 in record 1"), "{}", err.message);
        assert_eq!(err.location.as_deref(), Some("line 3"));
        std::fs::write(p("utf8h.csv"), b"t\xff,n\nab,1\n").unwrap();
        assert!(CsvSource::open(&p("utf8h.csv")).is_err());

        // An unbalanced quote swallows the rest of the file into one field.
        std::fs::write(p("quote.csv"), b"a,b\n\"1,2\n3,4\n").unwrap();
        let src = CsvSource::open(&p("quote.csv")).unwrap();
        let cols = one_batch(&src, &[0, 1]);
        assert_eq!(cols[0].len(), 1);

        // Garbage: any result but a panic.
        for seed in 1..40u64 {
            let name = p(&format!("g{seed}.csv"));
            std::fs::write(&name, garbage(20_000, seed)).unwrap();
            if let Ok(src) = CsvSource::open(&name) {
                let all: Vec<usize> = (0..src.columns().len()).collect();
                let _ = read_all(&src, &all);
            }
            // Corrupt compressed streams are errors, not panics.
            let gz = p(&format!("g{seed}.csv.gz"));
            std::fs::write(&gz, garbage(2_000, seed)).unwrap();
            assert!(CsvSource::open(&gz).is_err());
        }
        // A truncated gzip stream fails while reading, naming the record.
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let body: String = (0..50_000).map(|i| format!("{i}\n")).collect();
        std::io::Write::write_all(&mut enc, format!("x\n{body}").as_bytes()).unwrap();
        let packed = enc.finish().unwrap();
        std::fs::write(p("cut.csv.gz"), &packed[..packed.len() / 2]).unwrap();
        let src = CsvSource::open(&p("cut.csv.gz")).unwrap();
        let err = read_all(&src, &[0]).unwrap_err();
        assert!(err.location.as_ref().is_some_and(|l| l.starts_with("record ")), "{err}");
    }

    /// Reads every unit of `src` in order through a validator with a rule
    /// on each of its first three columns: the tally, or the first error.
    fn check_all(src: &CsvSource) -> Result<crate::check::tally::Tally, ReadError> {
        let yaml = "columns:\n  a: {kind: class, num_classes: 5, optional: true}\n  b: {kind: values, allowed: [1, x], optional: true, nullable: true}\n  c: {kind: range, min: 0, max: 10, optional: true}\n";
        let schema = crate::Schema::from_yaml(yaml, Path::new("t.yaml")).unwrap();
        let validator = crate::Validator::new(schema, 1000);
        let mut tally = validator.tally();
        let projection: Vec<usize> = ["a", "b", "c"]
            .iter()
            .filter_map(|n| src.columns().iter().position(|c| c == n))
            .collect();
        let slots: Vec<Option<usize>> = ["a", "b", "c"]
            .iter()
            .map(|n| projection.iter().position(|&p| src.columns()[p] == *n))
            .collect();
        for unit in 0..src.units() {
            src.read(unit, &projection, &mut |batch| {
                let cols: Vec<Option<arrow::array::ArrayRef>> =
                    slots.iter().map(|s| s.map(|i| batch.batch.column(i).clone())).collect();
                let errors = validator.check_columns(&cols, batch.batch.num_rows(), 0, batch.first_row, &mut tally);
                assert!(errors.is_empty(), "{errors:?}");
                Ok(())
            })?;
        }
        Ok(tally)
    }

    #[test]
    fn fast_path_agrees_with_the_sequential_reader() {
        let dir = tempfile::tempdir().unwrap();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let cells: [&[u8]; 14] = [
            b"", b"0", b"4", b"5", b" 7 ", b"-3", b"1e3", b"nan", b"x", b"1", b"11", b"2.5", b"abc def", b"inf",
        ];
        let (mut fast_taken, mut failed) = (0, 0);
        for case in 0..400 {
            let tab = next(4) == 0;
            let delim: &[u8] = if tab { b"\t" } else { b"," };
            let crlf = next(2) == 0;
            let nl: &[u8] = if crlf { b"\r\n" } else { b"\n" };
            let mut text: Vec<u8> = Vec::new();
            if next(5) == 0 {
                text.extend_from_slice(b"\xEF\xBB\xBF");
            }
            let width = 1 + next(4) as usize;
            let header: Vec<&[u8]> = [&b"a"[..], b"b", b"c", b"d"][..width].to_vec();
            text.extend_from_slice(&header.join(delim));
            text.extend_from_slice(nl);
            for _ in 0..next(60) {
                match next(40) {
                    0 => text.extend_from_slice(nl),                        // a blank line
                    1 if case % 7 == 0 => text.extend_from_slice(b"1\xff"), // invalid UTF-8
                    2 if case % 5 == 0 => {
                        let too_many: Vec<&[u8]> = vec![b"1"; width + 1];
                        text.extend_from_slice(&too_many.join(delim));
                    }
                    _ => {
                        let n = 1 + next(width as u64 + 1) as usize;
                        let row: Vec<&[u8]> = (0..n.min(width)).map(|_| cells[next(14) as usize]).collect();
                        text.extend_from_slice(&row.join(delim));
                    }
                }
                text.extend_from_slice(nl);
            }
            if next(3) == 0 {
                // No final line end.
                text.extend_from_slice(cells[next(14) as usize]);
            }
            let name = if tab { "t.tsv" } else { "t.csv" };
            let path = dir.path().join(name);
            std::fs::write(&path, &text).unwrap();
            let slow = CsvSource::open_with(&path, MAX_RECORD_BYTES, u64::MAX, CHUNK_BYTES).unwrap();
            let chunk = 1 + next(40) as usize;
            let fast = CsvSource::open_with(&path, MAX_RECORD_BYTES, 0, chunk).unwrap();
            assert!(slow.fast.is_none());
            fast_taken += usize::from(fast.fast.is_some());
            assert_eq!(slow.columns(), fast.columns());
            let (a, b) = (check_all(&slow), check_all(&fast));
            match (a, b) {
                // Debug text: NaN examples compare equal there.
                (Ok(x), Ok(y)) => assert_eq!(
                    format!("{x:?}"),
                    format!("{y:?}"),
                    "case {case}: {:?}",
                    String::from_utf8_lossy(&text)
                ),
                (Err(x), Err(y)) => {
                    failed += 1;
                    assert_eq!(x.message, y.message, "case {case}");
                    assert_eq!(
                        x.location,
                        y.location,
                        "case {case}: {:?}",
                        String::from_utf8_lossy(&text)
                    );
                }
                (x, y) => panic!("case {case}: {x:?} vs {y:?}: {:?}", String::from_utf8_lossy(&text)),
            }
        }
        assert_eq!(fast_taken, 400, "no quotes: every case took the fast path");
        assert!(
            failed > 20,
            "errors (invalid UTF-8, too many fields) agree too: {failed}"
        );

        // A quote anywhere, or a lone carriage return, keeps the sequential reader.
        for text in [&b"a,b\n1,\"2\"\n"[..], b"a,b\n1,2\r3,4\n"] {
            let path = dir.path().join("q.csv");
            std::fs::write(&path, text).unwrap();
            assert!(
                CsvSource::open_with(&path, MAX_RECORD_BYTES, 0, 4)
                    .unwrap()
                    .fast
                    .is_none()
            );
        }
    }
}
