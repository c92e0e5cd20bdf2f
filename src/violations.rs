//! Every violation, not just examples (`check --violations-out FILE`).
//!
//! A run may find a hundred million violations, so none are held: each unit
//! of work logs its violations batch by batch (sorted within the batch into
//! (row, schema column, rule, position) order) to a spill file of its own in
//! a private temporary folder, in a compact binary form. Once the scan is
//! done, the spill files are read back in (file, unit) order — the order of
//! examples — and written as JSON Lines, CSV or Parquet to a temporary file
//! beside FILE, which is renamed over FILE at the end: an interrupted or
//! failed run leaves no half file. Memory is one batch's violations while
//! scanning and one output batch while writing.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow::array::{ArrayRef, RecordBatch, StringBuilder, UInt64Builder};
use arrow::datatypes::{DataType, Field, Schema};

use crate::check::Validator;
use crate::check::tally::{Logged, Origin, Spot, Value};

/// Output records per Parquet batch.
const OUT_BATCH: usize = 64 * 1024;

/// Where the units of a run spill their violations.
#[derive(Debug)]
pub struct Spill {
    dir: tempfile::TempDir,
}

/// Paths to remove if the process is interrupted (Ctrl-C exits at once,
/// without running destructors).
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Removes the spill folders and half-written outputs of this process; the
/// binary calls it before exiting on Ctrl-C.
pub(crate) fn clean_up() {
    if let Ok(paths) = PENDING.lock() {
        for p in paths.iter() {
            let _ = if p.is_dir() {
                std::fs::remove_dir_all(p)
            } else {
                std::fs::remove_file(p)
            };
        }
    }
}

fn pending(path: &Path, add: bool) {
    if let Ok(mut paths) = PENDING.lock() {
        if add {
            paths.push(path.to_path_buf());
        } else {
            paths.retain(|p| p != path);
        }
    }
}

impl Spill {
    /// A new, empty spill folder.
    pub fn new() -> io::Result<Arc<Spill>> {
        let dir = tempfile::Builder::new().prefix("preflight-violations-").tempdir()?;
        pending(dir.path(), true);
        Ok(Arc::new(Spill { dir }))
    }

    fn unit_path(&self, file: usize, unit: usize) -> PathBuf {
        // Names sort as (file, unit).
        self.dir.path().join(format!("{file:010}-{unit:010}.bin"))
    }

    /// Moves the units `other` spilled into this spill, their files
    /// renumbered by `file_of` (a run checked in parts, each with its own
    /// file list: a split of `dataset.splits`). A unit spilled by both is
    /// joined, `other`'s after this one's.
    pub(crate) fn absorb(&self, other: &Spill, file_of: &[usize]) -> io::Result<()> {
        for entry in std::fs::read_dir(other.dir.path())? {
            let from = entry?.path();
            let name = from.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            let parsed = name
                .strip_suffix(".bin")
                .and_then(|n| n.split_once('-'))
                .and_then(|(f, u)| Some((f.parse::<usize>().ok()?, u.parse::<usize>().ok()?)));
            let Some((file, unit)) = parsed else { continue };
            let Some(&renumbered) = file_of.get(file) else { continue };
            let to = self.unit_path(renumbered, unit);
            if to.exists() {
                let mut out = std::fs::OpenOptions::new().append(true).open(&to)?;
                io::copy(&mut File::open(&from)?, &mut out)?;
            } else {
                std::fs::rename(&from, &to)?;
            }
        }
        Ok(())
    }

    /// The spill of one unit, created on its first violation.
    pub(crate) fn unit(&self, file: usize, unit: usize) -> UnitSpill {
        UnitSpill {
            path: self.unit_path(file, unit),
            out: None,
        }
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        pending(self.dir.path(), false);
    }
}

/// The violations of one unit, in order.
pub(crate) struct UnitSpill {
    path: PathBuf,
    out: Option<BufWriter<File>>,
}

impl UnitSpill {
    /// Appends one batch's violations, put in (row, check, position) order
    /// (a batch's checks run column by column), and takes them from `log`:
    /// those before row `before` (all of them for `None`); the rest stay in
    /// `log` for a later write (a document still open when they were found
    /// may yet add its own violation at its first row, before them).
    pub(crate) fn write_before(&mut self, log: &mut Vec<Logged>, before: Option<u64>) -> io::Result<()> {
        if log.is_empty() {
            return Ok(());
        }
        log.sort_by_key(|l| (l.spot.row, l.check, l.spot.parent, l.spot.pos));
        let ready = before.map_or(log.len(), |b| log.partition_point(|l| l.spot.row < b));
        if ready == 0 {
            return Ok(());
        }
        let out = match &mut self.out {
            Some(out) => out,
            None => self
                .out
                .insert(BufWriter::with_capacity(1 << 20, File::create(&self.path)?)),
        };
        for l in log.drain(..ready) {
            encode(out, &l)?;
        }
        Ok(())
    }

    pub(crate) fn finish(self) -> io::Result<()> {
        match self.out {
            Some(mut out) => out.flush(),
            None => Ok(()),
        }
    }
}

const NONE: u64 = u64::MAX;

fn encode(out: &mut impl Write, l: &Logged) -> io::Result<()> {
    out.write_all(&(l.check as u32).to_le_bytes())?;
    out.write_all(&l.spot.row.to_le_bytes())?;
    out.write_all(&l.spot.pos.unwrap_or(NONE).to_le_bytes())?;
    out.write_all(&l.spot.parent.unwrap_or(NONE).to_le_bytes())?;
    match &l.value {
        Value::Null => out.write_all(&[0])?,
        Value::Int(i) => {
            out.write_all(&[1])?;
            out.write_all(&i.to_le_bytes())?;
        }
        Value::Float(f) => {
            out.write_all(&[2])?;
            out.write_all(&f.to_le_bytes())?;
        }
        Value::Str(s) => {
            out.write_all(&[3])?;
            out.write_all(&(s.len() as u64).to_le_bytes())?;
            out.write_all(s.as_bytes())?;
        }
    }
    match &l.origin {
        None => out.write_all(&[0]),
        Some(o) => {
            out.write_all(&[1])?;
            out.write_all(&o.row.to_le_bytes())?;
            out.write_all(&(o.file.len() as u64).to_le_bytes())?;
            out.write_all(o.file.as_bytes())
        }
    }
}

/// A spilled violation: check, place, value and a mapped row's origin.
type Decoded = (usize, Spot, Value, Option<Origin>);

/// The next record of a spill file; `None` at its end.
fn decode(input: &mut impl Read) -> io::Result<Option<Decoded>> {
    let mut check = [0u8; 4];
    match input.read_exact(&mut check) {
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        r => r?,
    }
    let mut word = || -> io::Result<u64> {
        let mut b = [0u8; 8];
        input.read_exact(&mut b)?;
        Ok(u64::from_le_bytes(b))
    };
    let row = word()?;
    let pos = Some(word()?).filter(|&p| p != NONE);
    let parent = Some(word()?).filter(|&p| p != NONE);
    let mut tag = [0u8; 1];
    input.read_exact(&mut tag)?;
    let value = match tag[0] {
        0 => Value::Null,
        1 => {
            let mut b = [0u8; 16];
            input.read_exact(&mut b)?;
            Value::Int(i128::from_le_bytes(b))
        }
        2 => {
            let mut b = [0u8; 8];
            input.read_exact(&mut b)?;
            Value::Float(f64::from_le_bytes(b))
        }
        _ => {
            let mut b = [0u8; 8];
            input.read_exact(&mut b)?;
            let mut s = vec![0u8; u64::from_le_bytes(b) as usize];
            input.read_exact(&mut s)?;
            Value::Str(String::from_utf8_lossy(&s).into_owned())
        }
    };
    input.read_exact(&mut tag)?;
    let origin = match tag[0] {
        0 => None,
        _ => {
            let mut b = [0u8; 8];
            input.read_exact(&mut b)?;
            let row = u64::from_le_bytes(b);
            input.read_exact(&mut b)?;
            let mut s = vec![0u8; u64::from_le_bytes(b) as usize];
            input.read_exact(&mut s)?;
            Some(Origin {
                file: String::from_utf8_lossy(&s).into(),
                row,
            })
        }
    };
    Ok(Some((
        u32::from_le_bytes(check) as usize,
        Spot { row, pos, parent },
        value,
        origin,
    )))
}

/// The rows of file `file` holding a violation, sorted, each once.
pub(crate) fn rows_of(spill: &Spill, file: usize) -> io::Result<Vec<u64>> {
    let prefix = format!("{file:010}-");
    let mut names: Vec<PathBuf> = std::fs::read_dir(spill.dir.path())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&prefix)))
        .collect();
    names.sort();
    let mut rows: Vec<u64> = Vec::new();
    for name in names {
        let mut input = BufReader::with_capacity(1 << 20, File::open(name)?);
        while let Some((_, spot, _, _)) = decode(&mut input)? {
            if rows.last() != Some(&spot.row) {
                rows.push(spot.row);
            }
        }
    }
    // Units of one file follow each other in row order; sorted to be sure.
    rows.sort_unstable();
    rows.dedup();
    Ok(rows)
}

/// The formats `--violations-out` writes, by the file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutFormat {
    Jsonl,
    Csv,
    Parquet,
}

impl OutFormat {
    /// The format `path`'s extension names.
    pub(crate) fn of(path: &Path) -> Result<OutFormat, String> {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        match ext.as_str() {
            "jsonl" | "ndjson" => Ok(OutFormat::Jsonl),
            "csv" => Ok(OutFormat::Csv),
            "parquet" => Ok(OutFormat::Parquet),
            _ => Err(format!(
                "--violations-out {}: the file must end in .jsonl, .csv or .parquet",
                path.display()
            )),
        }
    }
}

/// One output record's fields.
struct Record<'a> {
    file: &'a str,
    row: u64,
    /// A mapped dataset's index of the row.
    index: Option<u64>,
    column: &'a str,
    rule: &'static str,
    value: &'a Value,
    spot: Spot,
    /// A pixel column's: JSON Lines says `x` and `y` for the positions.
    pixel: bool,
}

impl Record<'_> {
    /// The value as text for CSV and Parquet: a number as written in
    /// examples, a string as itself, a null as empty.
    fn value_text(&self) -> Option<String> {
        match self.value.to_json() {
            serde_json::Value::Null => None,
            serde_json::Value::String(s) => Some(s),
            v => Some(v.to_string()),
        }
    }
}

/// Writes every spilled violation of the run to `out` (atomically), files
/// named by `files` (the run's sorted file list); returns how many.
pub(crate) fn write(spill: &Spill, out: &Path, files: &[String], validator: &Validator) -> Result<u64, String> {
    let format = OutFormat::of(out)?;
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = out.with_file_name(format!(".{name}.preflight-{}.tmp", std::process::id()));
    pending(&tmp, true);
    let result = write_to(spill, &tmp, format, files, validator).and_then(|n| {
        std::fs::rename(&tmp, out).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
        Ok(n)
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    pending(&tmp, false);
    result
}

fn write_to(
    spill: &Spill,
    tmp: &Path,
    format: OutFormat,
    files: &[String],
    validator: &Validator,
) -> Result<u64, String> {
    let fail = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", tmp.display());
    let mut names: Vec<PathBuf> = std::fs::read_dir(spill.dir.path())
        .map_err(|e| fail(&e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    names.sort();
    let checks: Vec<(&str, &'static str, bool)> = validator
        .plan()
        .iter()
        .map(|(ci, rule)| {
            let spec = &validator.schema().columns[*ci];
            let pixel = spec.is_pixels();
            (spec.name.as_str(), rule.name(), pixel)
        })
        .collect();
    let file = File::create(tmp).map_err(|e| fail(&e))?;
    let mut sink = Sink::new(format, file).map_err(|e| fail(&e))?;
    let mut n = 0u64;
    for spill_file in names {
        let fi: usize = spill_file
            .file_name()
            .and_then(|s| s.to_str())
            .and_then(|s| s.split('-').next())
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| fail(&"a stray file in the spill folder"))?;
        let shown = files.get(fi).map(String::as_str).unwrap_or_default();
        let mut input = BufReader::with_capacity(1 << 20, File::open(&spill_file).map_err(|e| fail(&e))?);
        while let Some((check, spot, value, origin)) = decode(&mut input).map_err(|e| fail(&e))? {
            let (column, rule, pixel) = checks.get(check).copied().unwrap_or(("?", "?", false));
            sink.push(&Record {
                file: origin.as_ref().map_or(shown, |o| &o.file),
                row: origin.as_ref().map_or(spot.row, |o| o.row),
                index: origin.as_ref().map(|_| spot.row),
                column,
                rule,
                value: &value,
                spot,
                pixel,
            })
            .map_err(|e| fail(&e))?;
            n += 1;
        }
    }
    sink.finish().map_err(|e| fail(&e))?;
    Ok(n)
}

/// A JSON Lines record, keys in the documented order.
#[derive(serde::Serialize)]
struct Line<'a> {
    file: &'a str,
    row: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<u64>,
    column: &'a str,
    rule: &'a str,
    value: serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    position: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    outer_position: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    x: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    y: Option<u64>,
}

/// The output, in one of the three formats.
enum Sink {
    Jsonl(BufWriter<File>),
    Csv(Box<csv::Writer<BufWriter<File>>>),
    Parquet(Box<ParquetSink>),
}

struct ParquetSink {
    writer: parquet::arrow::ArrowWriter<File>,
    schema: Arc<Schema>,
    file: StringBuilder,
    row: UInt64Builder,
    column: StringBuilder,
    rule: StringBuilder,
    value: StringBuilder,
    position: UInt64Builder,
    outer: UInt64Builder,
    index: UInt64Builder,
    len: usize,
}

impl Sink {
    fn new(format: OutFormat, file: File) -> Result<Sink, String> {
        Ok(match format {
            OutFormat::Jsonl => Sink::Jsonl(BufWriter::with_capacity(1 << 20, file)),
            OutFormat::Csv => {
                let mut w = csv::Writer::from_writer(BufWriter::with_capacity(1 << 20, file));
                w.write_record([
                    "file",
                    "row",
                    "column",
                    "rule",
                    "value",
                    "position",
                    "outer_position",
                    "index",
                ])
                .map_err(|e| e.to_string())?;
                Sink::Csv(Box::new(w))
            }
            OutFormat::Parquet => {
                let schema = Arc::new(Schema::new(vec![
                    Field::new("file", DataType::Utf8, false),
                    Field::new("row", DataType::UInt64, false),
                    Field::new("column", DataType::Utf8, false),
                    Field::new("rule", DataType::Utf8, false),
                    Field::new("value", DataType::Utf8, true),
                    Field::new("position", DataType::UInt64, true),
                    Field::new("outer_position", DataType::UInt64, true),
                    Field::new("index", DataType::UInt64, true),
                ]));
                let writer =
                    parquet::arrow::ArrowWriter::try_new(file, schema.clone(), None).map_err(|e| e.to_string())?;
                Sink::Parquet(Box::new(ParquetSink {
                    writer,
                    schema,
                    file: StringBuilder::new(),
                    row: UInt64Builder::new(),
                    column: StringBuilder::new(),
                    rule: StringBuilder::new(),
                    value: StringBuilder::new(),
                    position: UInt64Builder::new(),
                    outer: UInt64Builder::new(),
                    index: UInt64Builder::new(),
                    len: 0,
                }))
            }
        })
    }

    fn push(&mut self, r: &Record<'_>) -> Result<(), String> {
        match self {
            Sink::Jsonl(w) => {
                let line = Line {
                    file: r.file,
                    row: r.row,
                    index: r.index,
                    column: r.column,
                    rule: r.rule,
                    value: r.value.to_json(),
                    position: r.spot.pos.filter(|_| !r.pixel),
                    outer_position: r.spot.parent.filter(|_| !r.pixel),
                    x: r.spot.pos.filter(|_| r.pixel),
                    y: r.spot.parent.filter(|_| r.pixel),
                };
                serde_json::to_writer(&mut *w, &line).map_err(|e| e.to_string())?;
                w.write_all(b"\n").map_err(|e| e.to_string())
            }
            Sink::Csv(w) => {
                let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
                w.write_record([
                    r.file,
                    &r.row.to_string(),
                    r.column,
                    r.rule,
                    &r.value_text().unwrap_or_default(),
                    &opt(r.spot.pos),
                    &opt(r.spot.parent),
                    &opt(r.index),
                ])
                .map_err(|e| e.to_string())
            }
            Sink::Parquet(p) => {
                p.file.append_value(r.file);
                p.row.append_value(r.row);
                p.column.append_value(r.column);
                p.rule.append_value(r.rule);
                p.value.append_option(r.value_text());
                p.position.append_option(r.spot.pos);
                p.outer.append_option(r.spot.parent);
                p.index.append_option(r.index);
                p.len += 1;
                if p.len >= OUT_BATCH {
                    p.flush()?;
                }
                Ok(())
            }
        }
    }

    fn finish(self) -> Result<(), String> {
        match self {
            Sink::Jsonl(mut w) => w.flush().map_err(|e| e.to_string()),
            Sink::Csv(mut w) => w.flush().map_err(|e| e.to_string()),
            Sink::Parquet(mut p) => {
                p.flush()?;
                p.writer.close().map(|_| ()).map_err(|e| e.to_string())
            }
        }
    }
}

impl ParquetSink {
    fn flush(&mut self) -> Result<(), String> {
        if self.len == 0 {
            return Ok(());
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.file.finish()),
            Arc::new(self.row.finish()),
            Arc::new(self.column.finish()),
            Arc::new(self.rule.finish()),
            Arc::new(self.value.finish()),
            Arc::new(self.position.finish()),
            Arc::new(self.outer.finish()),
            Arc::new(self.index.finish()),
        ];
        let batch = RecordBatch::try_new(self.schema.clone(), columns).map_err(|e| e.to_string())?;
        self.writer.write(&batch).map_err(|e| e.to_string())?;
        self.len = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spill_records_round_trip() {
        let values = [
            Value::Null,
            Value::Int(-(1i128 << 100)),
            Value::Float(f64::NEG_INFINITY),
            Value::Str("é\n\"x\"".into()),
        ];
        let mut bytes = Vec::new();
        for (i, v) in values.iter().enumerate() {
            let spot = Spot {
                row: i as u64 * 7,
                pos: (i % 2 == 0).then_some(i as u64),
                parent: (i == 2).then_some(9),
            };
            encode(
                &mut bytes,
                &Logged {
                    check: i,
                    file: 0,
                    spot,
                    value: v.clone(),
                    origin: (i == 3).then(|| Origin {
                        file: "d/x.arrow".into(),
                        row: 11,
                    }),
                },
            )
            .unwrap();
        }
        let mut input = &bytes[..];
        for (i, v) in values.iter().enumerate() {
            let (check, spot, value, origin) = decode(&mut input).unwrap().unwrap();
            assert_eq!((check, spot.row, &value), (i, i as u64 * 7, v));
            assert_eq!(
                origin.map(|o| (o.file.to_string(), o.row)),
                (i == 3).then(|| ("d/x.arrow".into(), 11))
            );
            assert_eq!(spot.pos, (i % 2 == 0).then_some(i as u64));
            assert_eq!(spot.parent, (i == 2).then_some(9));
        }
        assert!(decode(&mut input).unwrap().is_none());
    }
}
