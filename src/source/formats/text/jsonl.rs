//! JSON Lines reader (`.jsonl`, `.ndjson`, optionally `.gz` / `.zst`).
//!
//! Each non-blank line is one JSON object, one row; blank lines are skipped
//! and are not rows (rows are 0-based object numbers, errors name 1-based
//! physical lines). JSON has no schema, and a key missing from
//! every row is a missing column, so `open` makes a cheap pre-pass over the
//! file collecting every top-level key in order of first appearance. The
//! pre-pass also checks that every line is one JSON object; values are
//! checked fully (UTF-8, nesting depth) only where a column is read. A key
//! missing from a row, and JSON `null`, are null. Values map to Arrow
//! through the shared column builder: numbers as `i64` / `u64` / `f64` as
//! serde_json parses them, booleans, strings, arrays as lists (recursively;
//! at most [`MAX_DEPTH`] levels), objects as their JSON text. The file is
//! streamed: memory is one batch plus one line (at most
//! `MAX_RECORD_BYTES`), never the whole file.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::column::{self, BATCH_BYTES, BATCH_ELEMENTS, ColumnBuilder, MAX_RECORD_BYTES};
use crate::error::ReadError;
use crate::source::format::Format;
use crate::source::read::{BATCH_ROWS, Batch, Source};

/// JSON Lines, optionally gzip- or zstd-compressed.
pub(crate) const FORMAT: Format = Format::new(
    "jsonl",
    |n, _| matches!(n.ext, Some("jsonl" | "ndjson")),
    |path, _| Ok(Box::new(JsonlSource::open(path)?)),
);

/// Deepest nesting of arrays inside a value; deeper is a read error.
pub(crate) const MAX_DEPTH: usize = 64;

/// A JSON Lines file: one unit, read front to back.
#[derive(Debug)]
pub(crate) struct JsonlSource {
    path: PathBuf,
    columns: Vec<String>,
    /// Longest line accepted ([`MAX_RECORD_BYTES`]; smaller in tests).
    max_line: usize,
}

/// The non-blank lines of a (decompressed) file, with their line numbers.
struct Lines {
    reader: BufReader<Box<dyn Read + Send>>,
    buf: Vec<u8>,
    /// 1-based number of the line in `buf`.
    line: u64,
    max_line: usize,
}

impl Lines {
    fn open(path: &Path, max_line: usize) -> Result<Self, ReadError> {
        Ok(Lines {
            reader: BufReader::with_capacity(256 << 10, column::open_decompressed(path)?),
            buf: Vec::new(),
            line: 0,
            max_line,
        })
    }

    /// The next non-blank line and its number, or `None` at the end.
    fn next_line(&mut self) -> Result<Option<(u64, &[u8])>, ReadError> {
        loop {
            self.buf.clear();
            self.line += 1;
            let line = self.line;
            let limit = self.max_line as u64 + 1;
            let n = (&mut self.reader)
                .take(limit)
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| ReadError::new(e.to_string()).at(format!("line {line}")))?;
            if n == 0 {
                return Ok(None);
            }
            if self.buf.len() > self.max_line {
                return Err(
                    ReadError::new(format!("line longer than {} MiB", self.max_line >> 20)).at(format!("line {line}"))
                );
            }
            let start = if line == 1 && self.buf.starts_with(b"\xEF\xBB\xBF") {
                3
            } else {
                0
            };
            if !self.buf[start..].trim_ascii().is_empty() {
                return Ok(Some((line, &self.buf[start..])));
            }
        }
    }
}

/// Parses one line with `seed`, which must accept a JSON object.
fn parse_line<'de, S: DeserializeSeed<'de>>(text: &'de [u8], line: u64, seed: S) -> Result<S::Value, ReadError> {
    let mut de = serde_json::Deserializer::from_slice(text);
    let parsed = seed.deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    parsed.map_err(|e| {
        // serde_json appends " at line 1 column C"; we know the real line.
        let full = e.to_string();
        let cause = full.rfind(" at line ").map_or(full.as_str(), |i| &full[..i]);
        let message = match e.classify() {
            serde_json::error::Category::Data => format!("not a JSON object: {cause}"),
            _ => format!("invalid JSON: {cause} (column {})", e.column()),
        };
        ReadError::new(message).at(format!("line {line}"))
    })
}

/// Stands in, as a string, for a number literal beyond f64 (`1e400`):
/// serde_json refuses such a line, Python's `json` reads the number as an
/// infinity, and so does preflight: only a line that serde_json refuses is
/// rewritten, so only there could a string of the data (one starting with
/// the control character U+0001) be mistaken for the marker.
const INFINITE: &str = "\u{1}preflight:inf";
/// Stands in, as a string, for Python's `NaN` literal (see [`python_literals`]).
const NAN: &str = "\u{1}preflight:nan";

/// The line with every number literal whose value is beyond f64 replaced by
/// an [`INFINITE`] marker string, or `None` when it has no such number.
fn beyond_f64(text: &[u8]) -> Option<Vec<u8>> {
    rewrite_numbers(text, false)
}

/// The text with what Python's `json` reads and serde_json refuses
/// replaced: number literals beyond f64, and the literals `NaN`, `Infinity`
/// and `-Infinity` (which `json.dump` writes for non-finite floats and
/// `json.load` reads back) by marker strings; lone surrogate escapes in
/// strings by U+FFFD. `None` when it has none of them.
pub(crate) fn python_literals(text: &[u8]) -> Option<Vec<u8>> {
    rewrite_numbers(text, true)
}

/// Whether a string of a rewritten text is one of its markers.
pub(crate) fn is_marker(s: &str) -> bool {
    s.starts_with("\u{1}preflight:")
}

fn rewrite_numbers(text: &[u8], names: bool) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() + 32);
    let (mut i, mut in_string, mut replaced) = (0, false, false);
    while i < text.len() {
        let c = text[i];
        if in_string {
            // A `\uD800`-`\uDFFF` escape that is no pair's half: Python's
            // json reads it (a lone surrogate, as `json.dump` writes names
            // decoded with surrogateescape), serde_json refuses it.
            if names && c == b'\\' && text.get(i + 1) == Some(&b'u') {
                let unit = |at: usize| {
                    let hex = text.get(at + 2..at + 6)?;
                    (text[at] == b'\\' && text[at + 1] == b'u')
                        .then(|| u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok())
                        .flatten()
                };
                if let Some(u) = unit(i).filter(|u| (0xD800..0xE000).contains(u)) {
                    let paired = u < 0xDC00 && unit(i + 6).is_some_and(|l| (0xDC00..0xE000).contains(&l));
                    if paired {
                        out.extend_from_slice(&text[i..i + 12]);
                        i += 12;
                    } else {
                        out.extend_from_slice(b"\\ufffd");
                        replaced = true;
                        i += 6;
                    }
                    continue;
                }
            }
            out.push(c);
            if c == b'\\' {
                if let Some(&next) = text.get(i + 1) {
                    out.push(next);
                    i += 1;
                }
            } else if c == b'"' {
                in_string = false;
            }
            i += 1;
        } else if c == b'"' {
            in_string = true;
            out.push(c);
            i += 1;
        } else if let Some((len, marker)) = names
            .then(|| {
                [
                    (&b"NaN"[..], NAN),
                    (b"Infinity", "\u{1}preflight:inf+"),
                    (b"-Infinity", "\u{1}preflight:inf-"),
                ]
                .into_iter()
                .find(|(lit, _)| text[i..].starts_with(lit))
            })
            .flatten()
            .map(|(lit, m)| (lit.len(), m))
        {
            out.extend_from_slice(format!("\"{}\"", marker.replace('\u{1}', "\\u0001")).as_bytes());
            replaced = true;
            i += len;
        } else if c == b'-' || c.is_ascii_digit() {
            let end = text[i..]
                .iter()
                .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                .map_or(text.len(), |n| i + n);
            let literal = &text[i..end];
            let value = std::str::from_utf8(literal).ok().and_then(|s| s.parse::<f64>().ok());
            match value {
                Some(v) if v.is_infinite() => {
                    out.extend_from_slice(b"\"\\u0001preflight:inf");
                    out.push(if v < 0.0 { b'-' } else { b'+' });
                    out.push(b'"');
                    replaced = true;
                }
                _ => out.extend_from_slice(literal),
            }
            i = end;
        } else {
            out.push(c);
            i += 1;
        }
    }
    replaced.then_some(out)
}

/// Top-level keys in order of first appearance.
#[derive(Default)]
pub(crate) struct Keys {
    pub(crate) names: Vec<String>,
    pub(crate) seen: HashSet<String>,
}

/// Records the keys of one object, skipping its values.
pub(crate) struct KeysSeed<'a>(pub(crate) &'a mut Keys);

impl<'de> DeserializeSeed<'de> for KeysSeed<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for KeysSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(KeyName(&mut *self.0))?.is_some() {
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

/// Adds one key to [`Keys`] unless already there.
struct KeyName<'a>(&'a mut Keys);

impl<'de> DeserializeSeed<'de> for KeyName<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyName<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        if !self.0.seen.contains(v) {
            self.0.seen.insert(v.to_owned());
            self.0.names.push(v.to_owned());
        }
        Ok(())
    }
}

/// The keys a read wants: their names in projection order, one slot per
/// distinct key (what [`RowSeed`] fills), and for each projected column its
/// slot (a column asked for twice reads one slot).
pub(crate) struct Slots<'a> {
    pub(crate) names: Vec<&'a str>,
    pub(crate) slots: HashMap<&'a str, usize>,
    pub(crate) outputs: Vec<usize>,
}

impl<'a> Slots<'a> {
    /// The slots of `projection` (indices into `columns`).
    pub(crate) fn of(columns: &'a [String], projection: &[usize]) -> Result<Slots<'a>, ReadError> {
        let names = projection
            .iter()
            .map(|&i| columns.get(i).map(String::as_str))
            .collect::<Option<Vec<&str>>>()
            .ok_or_else(|| ReadError::new("projection names a column the file lacks"))?;
        let mut slots: HashMap<&str, usize> = HashMap::new();
        let outputs = names
            .iter()
            .map(|&n| {
                let next = slots.len();
                *slots.entry(n).or_insert(next)
            })
            .collect();
        Ok(Slots { names, slots, outputs })
    }
}

/// Reads the values of the wanted keys of one object into `values` (by
/// slot; a repeated key keeps its last value), skipping the others.
pub(crate) struct RowSeed<'a> {
    pub(crate) slots: &'a HashMap<&'a str, usize>,
    pub(crate) values: &'a mut [Option<Value>],
}

impl<'de> DeserializeSeed<'de> for RowSeed<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RowSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(slot) = map.next_key_seed(SlotOf(self.slots))? {
            match slot {
                Some(i) => self.values[i] = Some(map.next_value()?),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// Looks a key up in the wanted keys' slots.
struct SlotOf<'a>(&'a HashMap<&'a str, usize>);

impl<'de> DeserializeSeed<'de> for SlotOf<'_> {
    type Value = Option<usize>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for SlotOf<'_> {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, v: &str) -> Result<Option<usize>, E> {
        Ok(self.0.get(v).copied())
    }
}

/// Appends one JSON value; returns how many list elements (all levels) it
/// held, or an error when arrays nest deeper than [`MAX_DEPTH`]. In a line
/// that [`beyond_f64`] or [`python_literals`] rewrote, its marker strings
/// are infinities and NaN.
pub(crate) fn push_value(b: &mut ColumnBuilder, v: &Value, depth: usize, rewritten: bool) -> Result<usize, String> {
    match v {
        Value::Null => b.push_null(),
        Value::Bool(x) => b.push_bool(*x),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                b.push_i64(i);
            } else if let Some(u) = n.as_u64() {
                b.push_u64(u);
            } else if let Some(f) = n.as_f64() {
                b.push_f64(f);
            } else {
                b.push_str(&n.to_string());
            }
        }
        Value::String(s) if rewritten && s == NAN => b.push_f64(f64::NAN),
        Value::String(s) => match s.strip_prefix(INFINITE).filter(|_| rewritten) {
            Some("+") => b.push_f64(f64::INFINITY),
            Some("-") => b.push_f64(f64::NEG_INFINITY),
            _ => b.push_str(s),
        },
        Value::Array(items) => {
            if depth >= MAX_DEPTH {
                return Err(format!("arrays nested deeper than {MAX_DEPTH} levels"));
            }
            let child = b.list_child();
            let mut elements = items.len();
            for item in items {
                elements += push_value(child, item, depth + 1, rewritten)?;
            }
            b.end_list();
            return Ok(elements);
        }
        Value::Object(_) => b.push_str(&v.to_string()),
    }
    Ok(0)
}

impl JsonlSource {
    /// Opens a JSON Lines file (optionally compressed), collecting its
    /// columns with a pre-pass that also checks every line is an object.
    pub(crate) fn open(path: &Path) -> Result<Self, ReadError> {
        Self::open_with_limit(path, MAX_RECORD_BYTES)
    }

    /// [`JsonlSource::open`] with another line length limit.
    fn open_with_limit(path: &Path, max_line: usize) -> Result<Self, ReadError> {
        let mut lines = Lines::open(path, max_line)?;
        let mut keys = Keys::default();
        while let Some((line, text)) = lines.next_line()? {
            if let Err(e) = parse_line(text, line, KeysSeed(&mut keys)) {
                let text = beyond_f64(text).ok_or(e)?;
                parse_line(&text, line, KeysSeed(&mut keys))?;
            }
        }
        Ok(JsonlSource {
            path: path.to_path_buf(),
            columns: keys.names,
            max_line,
        })
    }
}

impl Source for JsonlSource {
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
            return Err(ReadError::new(format!("no unit {unit}: a JSON Lines file is one unit")));
        }
        let Slots { names, slots, outputs } = Slots::of(&self.columns, projection)?;
        let mut values: Vec<Option<Value>> = vec![None; slots.len()];

        let mut lines = Lines::open(&self.path, self.max_line)?;
        let mut builders: Vec<ColumnBuilder> = projection.iter().map(|_| ColumnBuilder::new()).collect();
        let mut row: u64 = 0;
        let mut first_row: u64 = 0;
        let (mut rows, mut bytes, mut elements) = (0usize, 0usize, 0usize);
        while let Some((line, text)) = lines.next_line()? {
            bytes += text.len();
            let seed = RowSeed {
                slots: &slots,
                values: &mut values,
            };
            // Only a line rewritten here can hold the stand-in for infinity.
            let mut rewritten = false;
            if let Err(e) = parse_line(text, line, seed) {
                let text = beyond_f64(text).ok_or(e)?;
                let seed = RowSeed {
                    slots: &slots,
                    values: &mut values,
                };
                parse_line(&text, line, seed)?;
                rewritten = true;
            }
            for (b, &slot) in builders.iter_mut().zip(&outputs) {
                match &values[slot] {
                    Some(v) => {
                        elements +=
                            push_value(b, v, 0, rewritten).map_err(|m| ReadError::new(m).at(format!("line {line}")))?;
                    }
                    None => b.push_null(),
                }
            }
            values.iter_mut().for_each(|v| *v = None);
            row += 1;
            rows += 1;
            if rows >= BATCH_ROWS || bytes >= BATCH_BYTES || elements >= BATCH_ELEMENTS {
                sink(column::take_batch(&names, &mut builders, rows, first_row)?)?;
                first_row = row;
                (rows, bytes, elements) = (0, 0, 0);
            }
        }
        if rows > 0 {
            sink(column::take_batch(&names, &mut builders, rows, first_row)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{DataType, Float64Type, Int64Type, UInt64Type};
    use column::test_util::{garbage, one_batch, py_has, python, read_all, zstd_file};

    fn col(src: &JsonlSource, name: &str) -> usize {
        src.columns().iter().position(|c| c == name).unwrap()
    }

    #[test]
    fn json_dumps_lines() {
        let dir = tempfile::tempdir().unwrap();
        let ok = python(
            dir.path(),
            "json",
            r#"
import json
rows = [
    {"label": 1, "ids": [101, 2023, 102], "score": 0.5, "name": "a", "ok": True,
     "nest": [[1, 2], [3]], "obj": {"k": [1, 2]}, "none": None},
    {"label": None, "ids": [], "score": 1, "name": None, "ok": False, "nest": [[], None]},
    {"ids": None, "score": 2**63, "name": "é\n\"q\"", "nest": [[4]], "late": "x", "none": None},
    {"label": -100, "ids": [5, None, 2**53 + 1], "score": 1e300, "ok": None,
     "nest": [[5.5, 6]], "none": None},
]
with open("a.jsonl", "w") as f:
    for i, r in enumerate(rows):
        f.write(json.dumps(r) + "\n")
        if i == 1:
            f.write("\n   \n")
"#,
        );
        if !ok {
            return;
        }
        let src = JsonlSource::open(&dir.path().join("a.jsonl")).unwrap();
        assert_eq!(
            src.columns(),
            ["label", "ids", "score", "name", "ok", "nest", "obj", "none", "late"]
        );
        assert_eq!(src.units(), 1);
        assert!(!src.columns().iter().any(|c| c == "missing"));
        let all: Vec<usize> = (0..src.columns().len()).collect();
        let cols = one_batch(&src, &all);
        assert_eq!(cols[0].len(), 4, "blank lines are not rows");

        let label = cols[col(&src, "label")].as_primitive::<Int64Type>();
        assert_eq!((label.value(0), label.value(3)), (1, -100));
        assert!(label.is_null(1) && label.is_null(2), "JSON null and a missing key");

        let ids = cols[col(&src, "ids")].as_list::<i32>();
        assert_eq!(ids.value_offsets(), &[0, 3, 3, 3, 6]);
        assert!(ids.is_valid(1) && ids.is_null(2));
        let items = ids.values().as_primitive::<Int64Type>();
        assert_eq!(items.value(5), 9_007_199_254_740_993, "exact above 2^53");
        assert!(items.is_null(4));
        assert_eq!(items.value(0), 101);

        // 0.5, 1, 2^63, 1e300: float64, int64, uint64, float64.
        let score = cols[col(&src, "score")].as_union();
        assert_eq!((0..4).map(|i| score.type_id(i)).collect::<Vec<_>>(), [3, 1, 2, 3]);
        assert_eq!(score.child(2).as_primitive::<UInt64Type>().value(0), 1 << 63);
        assert_eq!(score.child(1).as_primitive::<Int64Type>().value(0), 1);
        assert_eq!(score.child(3).as_primitive::<Float64Type>().value(1), 1e300);

        let name = cols[col(&src, "name")].as_string::<i32>();
        assert_eq!(name.value(2), "é\n\"q\"");
        assert!(name.is_null(1) && name.is_null(3));

        let ok = cols[col(&src, "ok")].as_boolean();
        assert!(ok.value(0) && !ok.value(1) && ok.is_null(2) && ok.is_null(3));

        // [[1,2],[3]], [[], null], [[4]], [[5.5, 6]]
        let nest = cols[col(&src, "nest")].as_list::<i32>();
        assert_eq!(nest.value_offsets(), &[0, 2, 4, 5, 6]);
        let inner = nest.values().as_list::<i32>();
        assert!(inner.is_null(3));
        assert_eq!(inner.value_offsets(), &[0, 2, 3, 3, 3, 4, 6]);
        let leaves = inner.values().as_union();
        let ids: Vec<i8> = (0..leaves.len()).map(|i| leaves.type_id(i)).collect();
        assert_eq!(ids, [1, 1, 1, 1, 3, 1]);
        assert_eq!(leaves.child(3).as_primitive::<Float64Type>().value(0), 5.5);

        let obj = cols[col(&src, "obj")].as_string::<i32>();
        assert_eq!(obj.value(0), r#"{"k":[1,2]}"#);
        assert!(obj.is_null(1));

        let none = &cols[col(&src, "none")];
        assert_eq!(none.data_type(), &DataType::Null);
        assert_eq!(none.logical_null_count(), 4);

        // Projection order and repeats.
        let cols = one_batch(&src, &[3, 0, 3]);
        assert_eq!(cols[0].data_type(), &DataType::Utf8);
        assert_eq!(cols[1].data_type(), &DataType::Int64);
        assert_eq!(cols[2].as_string::<i32>().value(0), "a");
    }

    #[test]
    fn batches_rows_and_compression() {
        let dir = tempfile::tempdir().unwrap();
        let zst = py_has("zstandard");
        let ok = python(
            dir.path(),
            "json, gzip",
            &format!(
                r#"
import json, gzip
lines = []
for i in range(140000):
    lines.append(json.dumps({{"row": i, "ids": [i, i + 1]}}))
    if i % 10000 == 3:
        lines.append("")
data = ("\n".join(lines) + "\n").encode()
open("big.jsonl", "wb").write(data)
with gzip.open("big.jsonl.gz", "wb") as f:
    f.write(data)
if {zst}:
    import zstandard
    open("big.ndjson.zst", "wb").write(zstandard.ZstdCompressor().compress(data))
with open("wide.jsonl", "w") as f:
    for i in range(3000):
        f.write(json.dumps({{"ids": list(range(1000)), "row": i}}) + "\n")
"#,
                zst = if zst { "True" } else { "False" }
            ),
        );
        if !ok {
            return;
        }
        if !zst {
            zstd_file(&dir.path().join("big.jsonl"), &dir.path().join("big.ndjson.zst"));
        }
        for name in ["big.jsonl", "big.jsonl.gz", "big.ndjson.zst"] {
            let src = JsonlSource::open(&dir.path().join(name)).unwrap();
            assert_eq!(src.columns(), ["row", "ids"]);
            let batches = read_all(&src, &[0, 1]).unwrap();
            let firsts: Vec<u64> = batches.iter().map(|b| b.first_row).collect();
            assert_eq!(firsts, [0, 65536, 131072], "{name}");
            for b in &batches {
                let rows = b.batch.column(0).as_primitive::<Int64Type>();
                for (i, v) in rows.values().iter().enumerate() {
                    assert_eq!(*v as u64, b.first_row + i as u64, "{name}");
                }
                let ids = b.batch.column(1).as_list::<i32>();
                assert_eq!(ids.values().len(), 2 * rows.len());
            }
        }
        // 1000 elements a row: a batch ends once it holds 2^20 elements.
        let src = JsonlSource::open(&dir.path().join("wide.jsonl")).unwrap();
        let batches = read_all(&src, &[0, 1]).unwrap();
        let firsts: Vec<u64> = batches.iter().map(|b| b.first_row).collect();
        assert_eq!(firsts, [0, 1049, 2098]);
        let rows = batches[1].batch.column(1).as_primitive::<Int64Type>();
        assert_eq!(rows.value(0), 1049);
    }

    #[test]
    fn errors_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        let ok = python(
            dir.path(),
            "json",
            r#"
import json
with open("bad.jsonl", "w") as f:
    for i in range(10):
        f.write(json.dumps({"a": i}) + "\n")
    f.write("\n")
    f.write('{"a": 1,}\n')
with open("array.jsonl", "w") as f:
    f.write(json.dumps({"a": 1}) + "\n" + json.dumps([1, 2]) + "\n")
with open("two.jsonl", "w") as f:
    f.write('{"a": 1} {"a": 2}\n')
"#,
        );
        if !ok {
            return;
        }
        let err = JsonlSource::open(&p("bad.jsonl")).unwrap_err();
        assert_eq!(err.location.as_deref(), Some("line 12"), "{err}");
        assert!(err.message.starts_with("invalid JSON"), "{err}");

        let err = JsonlSource::open(&p("array.jsonl")).unwrap_err();
        assert_eq!(err.location.as_deref(), Some("line 2"));
        assert!(err.message.starts_with("not a JSON object"), "{err}");

        let err = JsonlSource::open(&p("two.jsonl")).unwrap_err();
        assert_eq!(err.location.as_deref(), Some("line 1"), "{err}");

        // 100 nested arrays parse, but exceed MAX_DEPTH when read.
        let deep = format!("{{\"x\": {}1{}}}\n", "[".repeat(100), "]".repeat(100));
        std::fs::write(p("deep.jsonl"), format!("{{\"x\": 1}}\n{deep}")).unwrap();
        let src = JsonlSource::open(&p("deep.jsonl")).unwrap();
        let err = read_all(&src, &[0]).unwrap_err();
        assert_eq!(err.location.as_deref(), Some("line 2"));
        assert!(err.message.contains("nested deeper"), "{err}");
        // 64 levels are fine.
        let ok64 = format!("{{\"x\": {}1{}}}\n", "[".repeat(64), "]".repeat(64));
        std::fs::write(p("ok64.jsonl"), ok64).unwrap();
        let src = JsonlSource::open(&p("ok64.jsonl")).unwrap();
        assert_eq!(read_all(&src, &[0]).unwrap()[0].batch.num_rows(), 1);
        // Far deeper nesting: skipped by the pre-pass, refused by the parser
        // when read, and never a stack overflow.
        let deeper = format!("{{\"x\": {}1{}}}\n", "[".repeat(100_000), "]".repeat(100_000));
        std::fs::write(p("deeper.jsonl"), deeper).unwrap();
        let src = JsonlSource::open(&p("deeper.jsonl")).unwrap();
        let err = read_all(&src, &[0]).unwrap_err();
        assert_eq!(err.location.as_deref(), Some("line 1"));
        assert!(err.message.contains("recursion limit"), "{err}");
    }

    #[test]
    fn long_lines_and_the_size_limit() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        let ids: Vec<String> = (0..2_000_000).map(|i| (i % 30522).to_string()).collect();
        let long = format!("{{\"ids\": [{}]}}", ids.join(", "));
        assert!(long.len() > 10 << 20);
        std::fs::write(p("long.jsonl"), format!("{{\"ids\": [1]}}\n{long}\n")).unwrap();
        let src = JsonlSource::open(&p("long.jsonl")).unwrap();
        let batches = read_all(&src, &[0]).unwrap();
        // The batch ends after the row that passed 2^20 elements.
        assert_eq!(batches.len(), 1);
        let list = batches[0].batch.column(0).as_list::<i32>();
        assert_eq!(list.value_offsets(), &[0, 1, 2_000_001]);

        let err = JsonlSource::open_with_limit(&p("long.jsonl"), 1 << 20).unwrap_err();
        assert_eq!(err.message, "line longer than 1 MiB");
        assert_eq!(err.location.as_deref(), Some("line 2"));
    }

    #[test]
    fn empty_and_hostile_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(p("empty.jsonl"), b"").unwrap();
        let src = JsonlSource::open(&p("empty.jsonl")).unwrap();
        assert!(src.columns().is_empty());
        assert!(read_all(&src, &[]).unwrap().is_empty());

        std::fs::write(p("blank.jsonl"), b"\n \r\n\t\n").unwrap();
        let src = JsonlSource::open(&p("blank.jsonl")).unwrap();
        assert!(src.columns().is_empty());
        assert!(read_all(&src, &[]).unwrap().is_empty());

        // A BOM, CRLF endings and no final newline.
        std::fs::write(p("bom.jsonl"), b"\xEF\xBB\xBF{\"a\": 1}\r\n{\"a\": 2}").unwrap();
        let src = JsonlSource::open(&p("bom.jsonl")).unwrap();
        assert_eq!(src.columns(), ["a"]);
        let batches = read_all(&src, &[0]).unwrap();
        let a = batches[0].batch.column(0).as_primitive::<Int64Type>();
        assert_eq!(a.values().to_vec(), [1, 2]);
        assert!(read_all(&src, &[1]).is_err(), "bad projection");
        assert!(src.read(1, &[0], &mut |_| Ok(())).is_err(), "bad unit");

        // Invalid UTF-8 inside a string is invalid JSON, named by line.
        std::fs::write(p("utf8.jsonl"), b"{\"a\": \"x\"}\n{\"a\": \"\xff\"}\n").unwrap();
        let src = JsonlSource::open(&p("utf8.jsonl")).unwrap();
        let err = read_all(&src, &[0]).unwrap_err();
        assert_eq!(err.location.as_deref(), Some("line 2"));
        assert!(err.message.starts_with("invalid JSON"), "{err}");

        for seed in 1..40u64 {
            let mut bytes = garbage(20_000, seed);
            // Mostly-JSON garbage gets further into the parser.
            if seed % 2 == 0 {
                let alphabet = b"{}[]\":,0123456789.eE-+tnufl \n\"ab";
                for (i, b) in bytes.iter_mut().enumerate() {
                    *b = alphabet[(*b as usize + i) % alphabet.len()];
                }
            }
            let name = p(&format!("g{seed}.jsonl"));
            std::fs::write(&name, &bytes).unwrap();
            if let Ok(src) = JsonlSource::open(&name) {
                let all: Vec<usize> = (0..src.columns().len()).collect();
                let _ = read_all(&src, &all);
            }
            let zst = p(&format!("g{seed}.jsonl.zst"));
            std::fs::write(&zst, &bytes[..2000]).unwrap();
            assert!(JsonlSource::open(&zst).is_err());
        }
    }
}
