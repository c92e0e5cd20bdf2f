//! MosaicML Streaming (MDS) shards: `index.json` plus `shard.NNNNN.mds`
//! files, optionally compressed whole (`.mds.zstd`, `.gz`, `.br`, `.bz2`,
//! `.snappy`).
//!
//! LLM Foundry and most MosaicML pipelines store pre-tokenised corpora this
//! way, and the real reader trusts the shard: a count that disagrees with
//! `index.json` or a truncated file surfaces hours into training as an
//! `IndexError` or a short sample. So each shard is one file in reports
//! (row i = sample i of the shard), read against its sibling `index.json`
//! and checked before any sample is decoded: its size against the index,
//! the sample count, the offset table (monotone, inside the file, the last
//! one at the end), and every sample's column sizes against its bytes.
//!
//! Every MDS column is a column: `int` and NumPy scalar encodings are
//! scalars, `ndarray[:dtype[:shape]]` a list of its values in C order (the
//! dtype may differ per sample), `str`/`str_decimal` strings, `json` a list
//! of the numbers `json.loads` gives (token ids; any other JSON value is an
//! error), `str_int`/`str_float` numbers. A `bytes` column carries no dtype: read as
//! tokens it needs `dtype:` from the schema. `pkl` is never unpickled and,
//! like image encodings, refused as that column's error only when the
//! schema asks for the column. The byte layout is in
//! `tests/fixtures/tokens/FORMATS.md` (section 4).
//!
//! A shard is one unit, its bytes read whole through `Input` (a local map,
//! or one request for an object beside an `index.json` in storage).

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::column::{self, Col, Data};
use super::mdshash;
use crate::error::ReadError;
use crate::source::format::{DatasetIndex, Format};
use crate::source::formats::dtype::Dtype;
use crate::source::read::{Batch, Source};
use crate::source::storage;
use crate::source::storage::Input;

/// A MosaicML Streaming shard (`.mds`, or compressed whole), read with the
/// `index.json` beside it and the schema's `dtype:` for raw columns.
pub(crate) const FORMAT: Format = Format::new(
    "mds",
    |n, _| is_shard_name(n.name),
    |path, o| {
        Ok(Box::new(MdsSource::open_with(path, &|c| {
            o.hints.dtype(c).and_then(Dtype::from_name)
        })?))
    },
)
.searched_when(|path, _| searched(path), |_| true)
.indexed(DatasetIndex {
    missing: missing_shards,
    empty: |dir| {
        column::index_lists_none(dir, "shards")
            .then_some("an empty dataset: its index.json (MDS) lists no shards, so there is nothing to check")
    },
});

/// Largest shard: its offsets are u32, so nothing past 4 GiB is addressable.
const MAX_SHARD: u64 = u32::MAX as u64;

/// A column's MDS encoding, as far as a validator cares.
#[derive(Debug, Clone, PartialEq)]
enum Enc {
    /// One number (`int` is int64).
    Scalar(Dtype),
    /// `ndarray`, its dtype and shape when the encoding string fixes them.
    NdArray {
        dtype: Option<Dtype>,
        shape: Option<Vec<u64>>,
    },
    /// `bytes`: no dtype stored.
    Bytes,
    /// `str`, `str_decimal`: text.
    Text,
    /// `json`: `json.loads` of the sample; read when it is a list of
    /// numbers (token ids, as a consumer gets them: a Python list).
    Json,
    /// `str_int`: an integer written in decimal.
    StrInt,
    /// `str_float`: a float written in decimal.
    StrFloat,
    /// `pkl`: refused, never unpickled.
    Pickle,
    /// Image encodings and anything unknown: refused when asked for.
    Other(String),
}

impl Enc {
    fn parse(s: &str) -> Enc {
        match s {
            "int" => return Enc::Scalar(Dtype::I64),
            "bytes" => return Enc::Bytes,
            "str" | "str_decimal" => return Enc::Text,
            "json" => return Enc::Json,
            "str_int" => return Enc::StrInt,
            "str_float" => return Enc::StrFloat,
            "pkl" => return Enc::Pickle,
            _ => {}
        }
        if s != "bool"
            && let Some(e) = Dtype::from_name(s)
        {
            return Enc::Scalar(e);
        }
        let mut parts = s.split(':');
        if parts.next() != Some("ndarray") {
            return Enc::Other(s.to_string());
        }
        let dtype = match parts.next() {
            None => None,
            Some(d) => match Dtype::from_name(d) {
                Some(e) if e != Dtype::Bool => Some(e),
                _ => return Enc::Other(s.to_string()),
            },
        };
        let shape = match parts.next() {
            None => None,
            Some(dims) => {
                let dims: Option<Vec<u64>> = dims.split(',').map(|d| d.trim().parse().ok()).collect();
                match dims {
                    Some(d) if !d.is_empty() && dtype.is_some() => Some(d),
                    _ => return Enc::Other(s.to_string()),
                }
            }
        };
        if parts.next().is_some() {
            return Enc::Other(s.to_string());
        }
        Enc::NdArray { dtype, shape }
    }

    /// The fixed size in bytes the encoding implies, `None` for variable.
    fn fixed_size(&self) -> Option<u64> {
        match self {
            Enc::Scalar(e) => Some(e.size() as u64),
            Enc::NdArray {
                dtype: Some(e),
                shape: Some(s),
            } => s
                .iter()
                .try_fold(e.size() as u64, |acc, &d| acc.checked_mul(d))
                .or(Some(u64::MAX)),
            _ => None,
        }
    }
}

/// The ndarray dtype codes (`_int2value_dtype` in `encodings.py`).
fn dtype_code(code: u8) -> Option<Dtype> {
    Some(match code {
        8 => Dtype::U8,
        9 => Dtype::I8,
        16 => Dtype::U16,
        17 => Dtype::I16,
        18 => Dtype::F16,
        32 => Dtype::U32,
        33 => Dtype::I32,
        34 => Dtype::F32,
        64 => Dtype::U64,
        65 => Dtype::I64,
        66 => Dtype::F64,
        _ => return None,
    })
}

// ---------------------------------------------------------------------------
// index.json
// ---------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
struct RawIndex {
    version: Option<serde_json::Value>,
    shards: Vec<serde_json::Value>,
}

#[derive(Debug, Clone, Deserialize)]
struct RawFile {
    basename: String,
    bytes: u64,
    /// Algorithm -> hex digest (`MDSWriter(hashes=...)`), checked on read.
    #[serde(default)]
    hashes: mdshash::Hashes,
}

/// One `shards` entry, every field checked when a shard is opened.
#[derive(Debug, Clone, Deserialize)]
struct RawShard {
    column_encodings: Option<Vec<String>>,
    column_names: Option<Vec<String>>,
    column_sizes: Option<Vec<Option<u64>>>,
    compression: Option<String>,
    format: Option<String>,
    raw_data: Option<RawFile>,
    samples: Option<u64>,
    version: Option<serde_json::Value>,
    zip_data: Option<RawFile>,
}

/// A parsed `index.json`: each shard entry and the file names that find it.
#[derive(Debug)]
struct Index {
    shards: Vec<Result<RawShard, String>>,
    /// basename -> (entry, whether it is the compressed file).
    by_name: HashMap<String, (usize, bool)>,
}

fn parse_index(text: &[u8]) -> Result<Index, String> {
    let raw: RawIndex = serde_json::from_slice(text).map_err(|e| format!("not an MDS index ({e})"))?;
    if raw.version != Some(serde_json::json!(2)) {
        return Err(format!(
            "MDS index version {} (only 2 exists)",
            raw.version.map_or("missing".into(), |v| v.to_string())
        ));
    }
    let mut shards = Vec::with_capacity(raw.shards.len());
    let mut by_name = HashMap::new();
    for (i, v) in raw.shards.into_iter().enumerate() {
        let parsed = serde_json::from_value::<RawShard>(v).map_err(|e| format!("shard {i}: {e}"));
        if let Ok(s) = &parsed {
            if let Some(f) = &s.raw_data {
                by_name.entry(f.basename.clone()).or_insert((i, false));
            }
            if let Some(f) = &s.zip_data {
                by_name.entry(f.basename.clone()).or_insert((i, true));
            }
        }
        shards.push(parsed);
    }
    Ok(Index { shards, by_name })
}

/// The `index.json` at `path`, parsed once for all the shards beside it.
fn load_index(path: &Path) -> Result<Arc<Index>, ReadError> {
    column::load_index(path, "an MDS shard", parse_index)
}

/// Whole-shard compression codecs (`streaming/base/compression.py`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Codec {
    Zstd,
    Gzip,
    Brotli,
    Bzip2,
    Snappy,
}

impl Codec {
    fn parse(s: &str) -> Result<Codec, ReadError> {
        let family = s.split(':').next().unwrap_or(s);
        Ok(match family {
            "zstd" => Codec::Zstd,
            "gz" => Codec::Gzip,
            "br" => Codec::Brotli,
            "bz2" => Codec::Bzip2,
            "snappy" => Codec::Snappy,
            _ => return Err(ReadError::new(format!("MDS compression `{s}` is not supported"))),
        })
    }

    /// Decompresses `file` (`zip` bytes) into exactly `raw` bytes.
    fn decompress(self, mut file: &[u8], zip: u64, raw: u64) -> Result<Vec<u8>, ReadError> {
        let bad = |e: std::io::Error| ReadError::new(format!("corrupt {self:?} data: {e}"));
        // Never trust the claim for the allocation: grow as bytes arrive.
        let mut out = Vec::with_capacity(raw.min(64 << 20) as usize);
        let limit = raw + 1;
        match self {
            Codec::Zstd => {
                let d = zstd::stream::read::Decoder::new(file).map_err(bad)?;
                d.take(limit).read_to_end(&mut out).map_err(bad)?;
            }
            Codec::Gzip => {
                flate2::read::MultiGzDecoder::new(file)
                    .take(limit)
                    .read_to_end(&mut out)
                    .map_err(bad)?;
            }
            Codec::Brotli => {
                brotli::Decompressor::new(file, 64 << 10)
                    .take(limit)
                    .read_to_end(&mut out)
                    .map_err(bad)?;
            }
            Codec::Bzip2 => {
                bzip2::read::MultiBzDecoder::new(file)
                    .take(limit)
                    .read_to_end(&mut out)
                    .map_err(bad)?;
            }
            Codec::Snappy => {
                // A raw block, not the framed stream: its length comes first.
                let mut buf = Vec::with_capacity(zip.min(64 << 20) as usize);
                (&mut file).take(zip).read_to_end(&mut buf)?;
                let n =
                    snap::raw::decompress_len(&buf).map_err(|e| ReadError::new(format!("corrupt snappy data: {e}")))?;
                if n as u64 != raw {
                    return Err(ReadError::new(format!(
                        "the snappy block holds {n} bytes, index.json says the shard has {raw}"
                    )));
                }
                out = snap::raw::Decoder::new()
                    .decompress_vec(&buf)
                    .map_err(|e| ReadError::new(format!("corrupt snappy data: {e}")))?;
            }
        }
        if out.len() as u64 != raw {
            let got = if out.len() as u64 > raw {
                "more".to_string()
            } else {
                out.len().to_string()
            };
            return Err(ReadError::new(format!(
                "decompressed to {got} bytes, index.json says the shard has {raw}"
            )));
        }
        Ok(out)
    }
}

// ---------------------------------------------------------------------------
// The source
// ---------------------------------------------------------------------------

/// One MDS shard.
pub(crate) struct MdsSource {
    path: PathBuf,
    columns: Vec<String>,
    encodings: Vec<Enc>,
    /// The encodings as `index.json` spells them, for messages.
    encoding_names: Vec<String>,
    /// Fixed sizes (`column_sizes`), `None` for variable-size columns.
    sizes: Vec<Option<u64>>,
    /// The schema's `dtype:` for each column, where given.
    dtypes: Vec<Option<Dtype>>,
    /// Samples per `index.json`.
    samples: u64,
    /// Uncompressed shard size per `index.json`.
    raw_bytes: u64,
    /// How the file on disk is compressed (and its size), if it is.
    codec: Option<(Codec, u64)>,
    /// The hashes `index.json` lists for the raw shard and for the
    /// compressed file (when that is the file read).
    raw_hashes: mdshash::Hashes,
    zip_hashes: mdshash::Hashes,
    /// Hashes listed in an algorithm preflight does not know.
    notes: Vec<String>,
}

impl MdsSource {
    /// Opens a shard, `dtype_of(column)` giving the schema's `dtype:` for a
    /// column (how a `bytes` column's tokens are stored). Checks the entry
    /// of `index.json` that names the file and the file's size; samples are
    /// checked when read.
    pub(crate) fn open_with(path: &Path, dtype_of: &dyn Fn(&str) -> Option<Dtype>) -> Result<Self, ReadError> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = path.parent().unwrap_or(Path::new("."));
        let index = load_index(&dir.join("index.json"))?;
        let Some(&(i, zipped)) = index.by_name.get(&name) else {
            return Err(ReadError::new(format!(
                "{name} is not listed in the index.json beside it"
            )));
        };
        let entry = index.shards[i]
            .as_ref()
            .map_err(|e| ReadError::new(format!("index.json: {e}")))?;
        let at = |e: String| ReadError::new(format!("index.json, shard {i}: {e}"));
        if let Some(f) = entry.format.as_deref()
            && f != "mds"
        {
            return Err(at(format!("format `{f}` is not supported (only `mds`)")));
        }
        match &entry.version {
            Some(v) if *v == serde_json::json!(2) => {}
            v => {
                return Err(at(format!(
                    "version {} (only 2 exists)",
                    v.as_ref().map_or("missing".into(), |v| v.to_string())
                )));
            }
        }
        let missing = |k: &str| at(format!("no `{k}`"));
        let columns = entry.column_names.clone().ok_or_else(|| missing("column_names"))?;
        let encodings = entry
            .column_encodings
            .clone()
            .ok_or_else(|| missing("column_encodings"))?;
        let sizes = entry.column_sizes.clone().ok_or_else(|| missing("column_sizes"))?;
        let samples = entry.samples.ok_or_else(|| missing("samples"))?;
        let raw = entry.raw_data.clone().ok_or_else(|| missing("raw_data"))?;
        if encodings.len() != columns.len() || sizes.len() != columns.len() {
            return Err(at(format!(
                "{} column names, {} encodings, {} sizes",
                columns.len(),
                encodings.len(),
                sizes.len()
            )));
        }
        let encoding_names = encodings.clone();
        let encodings: Vec<Enc> = encodings.iter().map(|e| Enc::parse(e)).collect();
        for ((c, e), s) in columns.iter().zip(&encodings).zip(&sizes) {
            let fixed = e.fixed_size();
            if !matches!(e, Enc::Other(_)) && fixed != *s {
                return Err(at(format!(
                    "column `{c}`: size {} in index.json, its encoding takes {}",
                    s.map_or("null".into(), |s| s.to_string()),
                    fixed.map_or("a variable size".into(), |s| s.to_string())
                )));
            }
        }
        if raw.bytes > MAX_SHARD {
            return Err(at(format!(
                "the shard is said to hold {} bytes: MDS offsets (u32) cannot address more than 4 GiB",
                raw.bytes
            )));
        }
        let on_disk = Input::open(path)?.size();
        let codec = if zipped {
            let zip = entry.zip_data.as_ref().ok_or_else(|| missing("zip_data"))?;
            let codec = Codec::parse(entry.compression.as_deref().ok_or_else(|| missing("compression"))?)?;
            if on_disk != zip.bytes {
                return Err(ReadError::new(format!(
                    "the file is {on_disk} bytes, index.json says {} (truncated or changed since it was written)",
                    zip.bytes
                )));
            }
            Some((codec, zip.bytes))
        } else {
            // The raw shard (a reader's cache holds it even when compressed).
            if on_disk != raw.bytes {
                return Err(ReadError::new(format!(
                    "the file is {on_disk} bytes, index.json says {} (truncated or changed since it was written)",
                    raw.bytes
                )));
            }
            None
        };
        let dtypes = columns.iter().map(|c| dtype_of(c)).collect();
        let zip_hashes = match (&codec, &entry.zip_data) {
            (Some(_), Some(z)) => z.hashes.clone(),
            _ => mdshash::Hashes::new(),
        };
        let mut unknown: Vec<&str> = mdshash::unknown(&raw.hashes);
        unknown.extend(mdshash::unknown(&zip_hashes));
        unknown.sort_unstable();
        unknown.dedup();
        let notes = unknown
            .iter()
            .map(|a| format!("index.json lists a `{a}` hash, an algorithm preflight does not know: not verified"))
            .collect();
        Ok(MdsSource {
            raw_hashes: raw.hashes.clone(),
            zip_hashes,
            notes,
            path: path.to_path_buf(),
            columns,
            encodings,
            encoding_names,
            sizes,
            dtypes,
            samples,
            raw_bytes: raw.bytes,
            codec,
        })
    }

    fn data(&self) -> Result<Data, ReadError> {
        let input = Input::open(&self.path)?;
        match self.codec {
            Some((codec, zip)) => {
                // The compressed file whole (an object in one request),
                // verified before it is decompressed.
                let file = input.all()?;
                mdshash::verify_bytes(&file, &self.zip_hashes, "the file", "zip_data")?;
                Ok(Data::Owned(codec.decompress(&file, zip, self.raw_bytes)?))
            }
            None => {
                if input.size() != self.raw_bytes {
                    return Err(ReadError::new("the file changed while it was read"));
                }
                if let Some(m) = input.map() {
                    storage::populate(m, 0, m.len());
                }
                let bytes = input.all()?;
                Ok(Data::Mapped(input, bytes))
            }
        }
    }

    /// The writer's config between the offsets and the samples: its
    /// columns must be the index's (a shard from another dataset, or an
    /// index rewritten by hand, would otherwise be decoded with the wrong
    /// layout).
    fn check_config(&self, cfg: &[u8]) -> Result<(), ReadError> {
        if cfg.is_empty() {
            return Ok(());
        }
        let v: serde_json::Value = serde_json::from_slice(cfg)
            .map_err(|e| ReadError::new(format!("the shard's own config is not JSON ({e})")))?;
        let sizes: Vec<serde_json::Value> = self.sizes.iter().map(|s| serde_json::json!(s)).collect();
        for (key, mine) in [
            ("column_names", serde_json::json!(self.columns)),
            ("column_encodings", serde_json::json!(self.encoding_names)),
            ("column_sizes", serde_json::json!(sizes)),
        ] {
            if let Some(theirs) = v.get(key)
                && *theirs != mine
            {
                return Err(ReadError::new(format!(
                    "the shard's own config has {key} {theirs}, index.json {mine}"
                )));
            }
        }
        Ok(())
    }

    /// How to gather column `c`, or why it cannot be checked.
    fn column(&self, c: usize) -> Result<Col, ReadError> {
        let name = &self.columns[c];
        let refuse = |why: String| ReadError::new(why).at(format!("column {name}"));
        // A schema `dtype:` must agree with a type the shard records.
        let stored = match &self.encodings[c] {
            Enc::Scalar(e) | Enc::NdArray { dtype: Some(e), .. } => Some(*e),
            _ => None,
        };
        if let (Some(s), Some(d)) = (stored, self.dtypes[c])
            && s != d
        {
            return Err(refuse(format!(
                "stored as {} (MDS encoding `{}`), the schema says dtype: {}",
                s.name(),
                self.encoding_names[c],
                d.name()
            )));
        }
        Ok(match (&self.encodings[c], self.dtypes[c]) {
            (Enc::Scalar(e), _) => Col::scalar(*e),
            // Per-sample dtypes: each must be the schema's, when it says one.
            (Enc::NdArray { dtype: None, .. }, d) => Col::list(d),
            (Enc::NdArray { dtype, .. }, _) => Col::list(*dtype),
            (Enc::Bytes, Some(e)) => Col::list(Some(e)),
            (Enc::Bytes, None) => {
                return Err(refuse(
                    "MDS `bytes` store no element type: say how the tokens are stored with `dtype:` \
                     in the schema column (e.g. `dtype: uint16`)"
                        .into(),
                ));
            }
            (Enc::Text, _) => Col::string(),
            (Enc::Json, _) => Col::list(None),
            (Enc::StrInt, _) => Col::scalar(Dtype::I64),
            (Enc::StrFloat, _) => Col::scalar(Dtype::F64),
            (Enc::Pickle, _) => {
                return Err(refuse(
                    "MDS encoding `pkl` is a Python pickle, which preflight never loads (unpickling runs \
                     code): refused"
                        .into(),
                ));
            }
            (Enc::Other(e), _) => return Err(refuse(format!("MDS encoding `{e}` is not supported"))),
        })
    }

    /// Appends column `c`'s bytes `b` of a sample to `col`.
    fn push(&self, c: usize, col: &mut Col, b: &[u8]) -> Result<(), String> {
        match &self.encodings[c] {
            Enc::Scalar(_) => col.push_scalar(b),
            Enc::NdArray { dtype, shape } => {
                let (elem, values) = ndarray(b, *dtype, shape.as_deref())?;
                col.push_list(elem, values)
            }
            Enc::Bytes => match self.dtypes[c] {
                Some(e) => col.push_list(e, b),
                None => Err("no dtype".into()),
            },
            Enc::Text => col.push_str(b),
            Enc::Json => json_list(b, col),
            Enc::StrInt => {
                let s = std::str::from_utf8(b).map_err(|_| "str_int: invalid UTF-8".to_string())?;
                let v: i64 = s
                    .trim()
                    .parse()
                    .map_err(|_| format!("str_int: {s:?} is not an integer"))?;
                col.push_i64(v)
            }
            Enc::StrFloat => {
                let s = std::str::from_utf8(b).map_err(|_| "str_float: invalid UTF-8".to_string())?;
                let v: f64 = s
                    .trim()
                    .parse()
                    .map_err(|_| format!("str_float: {s:?} is not a number"))?;
                col.push_scalar(&v.to_le_bytes())
            }
            Enc::Pickle | Enc::Other(_) => Err("unsupported encoding".into()),
        }
    }
}

/// A `json` sample (`json.dumps(obj, sort_keys=True)`): a list of integers
/// is a list of int64 values, a list of numbers with a fraction or exponent
/// one of float64 values (as `json.loads` gives them); any other value is
/// not read (the column is that shard's error, never judged as text).
fn json_list(b: &[u8], col: &mut Col) -> Result<(), String> {
    let v: serde_json::Value = serde_json::from_slice(b).map_err(|e| format!("json: {e}"))?;
    let items = v
        .as_array()
        .ok_or_else(|| "json: only lists of numbers are read (a json column of token ids or labels)".to_string())?;
    if items.iter().all(serde_json::Value::is_i64) {
        let bytes: Vec<u8> = items
            .iter()
            .flat_map(|x| x.as_i64().unwrap_or(0).to_le_bytes())
            .collect();
        col.push_list(Dtype::I64, &bytes)
    } else if items.iter().all(|x| x.is_i64() || x.is_f64()) {
        let bytes: Vec<u8> = items
            .iter()
            .flat_map(|x| x.as_f64().unwrap_or(0.0).to_le_bytes())
            .collect();
        col.push_list(Dtype::F64, &bytes)
    } else {
        Err(
            "json: only lists of numbers are read (an integer beyond int64, a string, null or a nested \
             list is not)"
                .into(),
        )
    }
}

/// An `ndarray` sample: its dtype and value bytes, checked against its shape.
fn ndarray<'a>(b: &'a [u8], dtype: Option<Dtype>, shape: Option<&[u64]>) -> Result<(Dtype, &'a [u8]), String> {
    let mut p = 0usize;
    let elem = match dtype {
        Some(e) => e,
        None => {
            let code = *b.first().ok_or("ndarray: no dtype byte")?;
            p = 1;
            dtype_code(code).ok_or_else(|| format!("ndarray: unknown dtype code {code}"))?
        }
    };
    let count: u128 = match shape {
        Some(dims) => dims
            .iter()
            .try_fold(1u128, |acc, &d| acc.checked_mul(d as u128))
            .ok_or("ndarray: its shape overflows")?,
        None => {
            let byte = *b.get(p).ok_or("ndarray: no shape byte")?;
            p += 1;
            let ndim = (byte >> 2) as usize;
            let width = 1usize << (byte & 3);
            let end = p + ndim * width;
            let dims = b.get(p..end).ok_or("ndarray: its shape runs past the sample")?;
            p = end;
            dims.chunks_exact(width)
                .map(|d| {
                    let mut x = [0u8; 8];
                    x[..width].copy_from_slice(d);
                    u64::from_le_bytes(x) as u128
                })
                .try_fold(1u128, |acc, d| acc.checked_mul(d))
                .ok_or("ndarray: its shape overflows")?
        }
    };
    let values = &b[p..];
    if count.checked_mul(elem.size() as u128) != Some(values.len() as u128) {
        return Err(format!(
            "ndarray: {} bytes of {} values where its shape says {count} values",
            values.len(),
            elem.name()
        ));
    }
    Ok((elem, values))
}

/// The shard's offset table, checked against its bytes and the index.
fn offsets(data: &[u8], samples: u64) -> Result<Vec<u32>, ReadError> {
    let len = data.len() as u64;
    let head = data
        .get(..4)
        .ok_or_else(|| ReadError::new("the shard is shorter than its sample count"))?;
    let n = u32::from_le_bytes(head.try_into().unwrap_or_default()) as u64;
    if n != samples {
        return Err(ReadError::new(format!(
            "the shard holds {n} samples, index.json says {samples}"
        )));
    }
    let table_end = 4 + 4 * (n + 1);
    if table_end > len {
        return Err(ReadError::new(format!(
            "the offsets of {n} samples run past the end of the {len}-byte shard"
        )));
    }
    let off: Vec<u32> = data[4..table_end as usize]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if (off[0] as u64) < table_end {
        return Err(ReadError::new(format!(
            "sample 0 starts at byte {}, inside the offset table (which ends at {table_end})",
            off[0]
        )));
    }
    for (i, w) in off.windows(2).enumerate() {
        if w[1] < w[0] {
            return Err(ReadError::new(format!(
                "sample {i} ends at byte {} before it starts at {} (offsets decrease)",
                w[1], w[0]
            )));
        }
    }
    let last = off[n as usize] as u64;
    if last > len {
        let i = off.iter().position(|&o| o as u64 > len).unwrap_or(1).saturating_sub(1);
        return Err(ReadError::new(format!(
            "sample {i} ends at byte {} past the end of the {len}-byte shard (truncated)",
            off[i + 1]
        )));
    }
    if last < len {
        return Err(ReadError::new(format!(
            "{} bytes after the last sample, which ends at byte {last}",
            len - last
        )));
    }
    Ok(off)
}

impl Source for MdsSource {
    fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The element type `index.json` records, or the schema's `dtype:`
    /// that every sample of the column must have.
    fn stored_type(&self, column: usize) -> Option<arrow::datatypes::DataType> {
        let elem = match self.encodings.get(column)? {
            Enc::Scalar(e) | Enc::NdArray { dtype: Some(e), .. } => Some(*e),
            Enc::NdArray { dtype: None, .. } | Enc::Bytes => self.dtypes[column],
            _ => None,
        };
        elem.map(|e| e.arrow())
    }

    fn units(&self) -> usize {
        1
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    fn read(
        &self,
        unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        if unit != 0 {
            return Err(ReadError::new(format!("no unit {unit} (an MDS shard has 1)")));
        }
        if let Some(&bad) = projection.iter().find(|&&c| c >= self.columns.len()) {
            return Err(ReadError::new(format!("no column {bad}")));
        }
        // Refuse what cannot be checked before touching the data.
        let cols: Vec<Col> = projection.iter().map(|&c| self.column(c)).collect::<Result<_, _>>()?;
        let mut gather = column::Gather::new(&self.columns, projection, cols);
        let nvar = self.sizes.iter().filter(|s| s.is_none()).count();

        // The file is the one the index describes, before a byte of it is
        // decoded: its hashes (the compressed file's and the shard's).
        let data = self.data()?;
        let what = if self.codec.is_some() {
            "the decompressed shard"
        } else {
            "the file"
        };
        mdshash::verify_bytes(&data, &self.raw_hashes, what, "raw_data")?;
        let off = offsets(&data, self.samples)?;
        self.check_config(&data[4 + 4 * off.len()..off[0] as usize])?;
        let n = off.len() - 1;
        let mut sizes = vec![0usize; self.columns.len()];
        for i in 0..n {
            let row_err = |m: String| ReadError::new(m).at(format!("row {i}"));
            let s = &data[off[i] as usize..off[i + 1] as usize];
            let head = nvar * 4;
            if s.len() < head {
                return Err(row_err(format!(
                    "the sample is {} bytes, shorter than its {nvar} column sizes",
                    s.len()
                )));
            }
            let mut v = 0;
            for (c, fixed) in self.sizes.iter().enumerate() {
                sizes[c] = match fixed {
                    Some(f) => *f as usize,
                    None => {
                        let x = &s[v * 4..v * 4 + 4];
                        v += 1;
                        u32::from_le_bytes([x[0], x[1], x[2], x[3]]) as usize
                    }
                };
            }
            column::fields(
                s,
                head,
                sizes.iter().copied(),
                &self.columns,
                ("sample", "column", "columns"),
                |c, bytes| gather.push(c, |col| self.push(c, col, bytes)),
            )
            .map_err(row_err)?;
            gather.sample_done(i, n, s.len(), sink)?;
        }
        data.release();
        Ok(())
    }
}

/// The shards the MDS `index.json` in `dir` lists that are not in `dir`
/// (neither the compressed file nor its raw twin): (the name the index
/// gives it, why it is an error). Nothing for an index that is no MDS
/// index (a shard beside it reports that when opened).
pub(crate) fn missing_shards(dir: &Path) -> Vec<(String, String)> {
    let Ok(index) = load_index(&dir.join("index.json")) else {
        return Vec::new();
    };
    let mut missing = Vec::new();
    for (i, shard) in index.shards.iter().enumerate() {
        let Ok(shard) = shard else { continue };
        let names: Vec<&str> = [&shard.zip_data, &shard.raw_data]
            .into_iter()
            .flatten()
            .map(|f| f.basename.as_str())
            .collect();
        let Some(&name) = names.first() else { continue };
        if let Some(bad) = names.iter().find(|n| !column::plain_name(n)) {
            missing.push((
                name.to_string(),
                format!("index.json lists shard {i} as `{bad}`, which is not a file name in its folder"),
            ));
        } else if !names.iter().any(|n| storage::exists(&dir.join(n))) {
            let samples = shard.samples.map(|n| format!(", {n} samples")).unwrap_or_default();
            missing.push((
                name.to_string(),
                format!("listed in index.json (shard {i}{samples}) but missing from the folder"),
            ));
        }
    }
    missing
}

/// Whether a directory search checks this shard: not a compressed one whose
/// decompressed twin (as a reader's cache keeps it) lies beside it, which
/// would count every sample twice.
pub(crate) fn searched(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.rsplit_once('.') {
        Some((raw, _)) if !name.to_ascii_lowercase().ends_with(".mds") => !storage::exists(&path.with_file_name(raw)),
        _ => true,
    }
}

/// Whether a file name is an MDS shard's: `*.mds`, or one compressed whole.
pub(crate) fn is_shard_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let name = [".zstd", ".gz", ".br", ".bz2", ".snappy"]
        .iter()
        .find_map(|c| name.strip_suffix(c))
        .unwrap_or(&name);
    name.ends_with(".mds")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_parse() {
        assert_eq!(Enc::parse("int"), Enc::Scalar(Dtype::I64));
        assert_eq!(Enc::parse("uint16"), Enc::Scalar(Dtype::U16));
        assert_eq!(
            Enc::parse("ndarray"),
            Enc::NdArray {
                dtype: None,
                shape: None
            }
        );
        assert_eq!(
            Enc::parse("ndarray:int32:2,3"),
            Enc::NdArray {
                dtype: Some(Dtype::I32),
                shape: Some(vec![2, 3])
            }
        );
        assert_eq!(Enc::parse("ndarray:int32:2,3").fixed_size(), Some(24));
        assert_eq!(Enc::parse("ndarray::8"), Enc::Other("ndarray::8".into()));
        assert_eq!(Enc::parse("ndarray:int33"), Enc::Other("ndarray:int33".into()));
        assert_eq!(Enc::parse("bool"), Enc::Other("bool".into()));
        assert_eq!(Enc::parse("jpeg"), Enc::Other("jpeg".into()));
        assert_eq!(
            Enc::parse("ndarray:int8:99999999999,99999999999,99999999999").fixed_size(),
            Some(u64::MAX)
        );
    }

    #[test]
    fn ndarray_prefixes() {
        // u16 dtype code, ndim 1 with u8 dims, 2 values.
        let b = [16, 0b100, 2, 1, 0, 2, 0];
        assert_eq!(ndarray(&b, None, None).unwrap(), (Dtype::U16, &b[3..]));
        assert!(ndarray(&b[..6], None, None).is_err());
        assert!(ndarray(&[99, 4, 1, 0], None, None).is_err());
        // ndim 2, u64 dims claiming 2^62 x 2^62: an overflow, not a panic.
        let mut huge = vec![8, (2 << 2) | 3];
        huge.extend_from_slice(&(1u64 << 62).to_le_bytes());
        huge.extend_from_slice(&(1u64 << 62).to_le_bytes());
        assert!(ndarray(&huge, None, None).is_err());
        assert!(ndarray(&[1, 2, 3, 4], Some(Dtype::I32), Some(&[1])).is_ok());
        assert!(ndarray(&[1, 2, 3], Some(Dtype::I32), Some(&[1])).is_err());
        // A fixed shape whose product overflows even u128.
        assert!(ndarray(&[1], Some(Dtype::I8), Some(&[u64::MAX, u64::MAX, u64::MAX])).is_err());
    }

    #[test]
    fn offset_table_is_checked() {
        let mut shard = Vec::new();
        shard.extend_from_slice(&2u32.to_le_bytes());
        for o in [16u32, 18, 20] {
            shard.extend_from_slice(&o.to_le_bytes());
        }
        shard.extend_from_slice(&[0; 4]);
        assert_eq!(offsets(&shard, 2).unwrap(), vec![16, 18, 20]);
        assert!(
            offsets(&shard, 3)
                .unwrap_err()
                .message
                .contains("holds 2 samples, index.json says 3")
        );
        assert!(offsets(&shard[..19], 2).unwrap_err().message.contains("truncated"));
        let mut long = shard.clone();
        long.push(0);
        assert!(offsets(&long, 2).unwrap_err().message.contains("1 bytes after"));
        let mut dec = shard.clone();
        dec[8..12].copy_from_slice(&30u32.to_le_bytes());
        assert!(offsets(&dec, 2).is_err());
        // A count of 2^32-1 with a 4-byte file: refused before any table.
        assert!(
            offsets(&u32::MAX.to_le_bytes(), u32::MAX as u64)
                .unwrap_err()
                .message
                .contains("run past")
        );
    }

    #[test]
    fn shard_names() {
        for n in [
            "shard.00000.mds",
            "shard.00000.mds.zstd",
            "x.MDS.gz",
            "s.mds.br",
            "s.mds.bz2",
            "s.mds.snappy",
        ] {
            assert!(is_shard_name(n), "{n}");
        }
        for n in ["shard.00000.md", "index.json", "mds", "x.mds.lz4"] {
            assert!(!is_shard_name(n), "{n}");
        }
    }
}
