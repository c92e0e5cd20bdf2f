//! CSV and TSV reader.
//!
//! CSV has no types, so each cell's text decides (see the SPEC): blank is
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
//! where it starts. Invalid UTF-8 never fails the file: text cells keep it as
//! U+FFFD.

use std::cell::Cell;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use ::csv::ByteRecord;

use super::textcol::{self, BATCH_BYTES, ColumnBuilder, MAX_RECORD_BYTES};
use super::{BATCH_ROWS, Batch, ReadError, Source};

/// A CSV or TSV file: one unit, read front to back.
#[derive(Debug)]
pub struct CsvSource {
    path: PathBuf,
    delimiter: u8,
    columns: Vec<String>,
    /// Largest record accepted ([`MAX_RECORD_BYTES`]; smaller in tests).
    max_record: usize,
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
    pub fn open(path: &Path) -> Result<Self, ReadError> {
        Self::open_with_limit(path, MAX_RECORD_BYTES)
    }

    /// [`CsvSource::open`] with another record size limit.
    fn open_with_limit(path: &Path, max_record: usize) -> Result<Self, ReadError> {
        let delimiter = match textcol::inner_extension(path).as_deref() {
            Some("tsv") => b'\t',
            _ => b',',
        };
        let mut source = CsvSource {
            path: path.to_path_buf(),
            delimiter,
            columns: Vec::new(),
            max_record,
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
        Ok(source)
    }

    /// A fresh reader positioned before the header.
    fn reader(&self) -> Result<(Reader, Rc<Cell<usize>>), ReadError> {
        let used = Rc::new(Cell::new(0));
        let inner = Capped {
            inner: textcol::open_decompressed(&self.path)?,
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
        let mut reader = BufReader::new(textcol::open_decompressed(&self.path).ok()?);
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
        1
    }

    fn read(
        &self,
        unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        if unit != 0 {
            return Err(ReadError::new(format!("no unit {unit}: a CSV file is one unit")));
        }
        let width = self.columns.len();
        let names = projection
            .iter()
            .map(|&i| self.columns.get(i).map(String::as_str))
            .collect::<Option<Vec<&str>>>()
            .ok_or_else(|| ReadError::new("projection names a column the file lacks"))?;

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
            if let Err(e) = std::str::from_utf8(record.as_slice()) {
                let err = ReadError::new(format!("invalid UTF-8 in record {row}: {e}"));
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
                sink(textcol::take_batch(&names, &mut builders, rows, first_row)?)?;
                first_row = row;
                rows = 0;
                bytes = 0;
            }
        }
        if rows > 0 {
            sink(textcol::take_batch(&names, &mut builders, rows, first_row)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{DataType, Float64Type, Int64Type, UInt64Type};
    use textcol::test_util::{garbage, one_batch, py_has, python, read_all, zstd_file};

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
}
