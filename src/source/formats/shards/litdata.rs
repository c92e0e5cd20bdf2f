//! LitData (`litdata.optimize`) chunks: `index.json` plus `chunk-R-I.bin`
//! files, each chunk one file in reports (row i = item i of the chunk).
//!
//! Lightning's streaming loaders trust the chunk header the way MosaicML's
//! do, so the header is checked before any item is decoded: the item count
//! against `index.json`, offsets monotone and inside the chunk, the last one
//! at its end, every item's leaf sizes against its bytes.
//!
//! - `PyTreeLoader` items: each pytree leaf is a column, named by its path
//!   in `data_spec` (dict keys; list and tuple positions; nested paths
//!   joined with `.`; a bare leaf is `item`). `int`, `float`, `bool` leaves
//!   are scalars, `str` text; NumPy arrays and torch tensors (with or
//!   without their dtype/shape header) are list columns of their values in
//!   C order; `json` leaves holding a list of numbers are list columns.
//!   `pickle` (never loaded), media and `bytes` leaves without the schema's
//!   `dtype:` are refused when the schema asks for them.
//! - `TokensLoader` chunks have no per-item header: one column `tokens`,
//!   one row per item as written (the offsets delimit the original
//!   sequences), so `max_length` judges sequence lengths. The loader itself
//!   ignores those boundaries and serves `block_size` windows chosen at load
//!   time, which a static check cannot know; every token is checked either
//!   way, and `dim` (the chunk's token count) is checked against the bytes.
//! - zstd: whole-chunk (`chunk-R-I.zstd.bin`), `LDFZ01` framed batches and
//!   per-item frames, each decompressed no further than the sizes they
//!   declare.
//! - Dict rows of plain values that LitData stored as an Arrow IPC file in
//!   the chunk (`LDARW01` footer) are read as that table.
//!
//! Encrypted chunks and the Parquet and temporal loaders are refused. The
//! byte layout is in `tests/fixtures/tokens/FORMATS.md` (section 5).
//!
//! A chunk is one unit, its bytes read whole through `Input` (a local map,
//! or one request for an object beside an `index.json` in storage).

use std::io::Read;
use std::path::{Path, PathBuf};

use arrow::array::ArrayRef;
use serde::Deserialize;
use serde_json::Value;

use super::column::{self, Col, Data};
use crate::error::ReadError;
use crate::source::format::{DatasetIndex, Format};
use crate::source::formats::dtype::Dtype;
use crate::source::formats::ipc;
use crate::source::read::{Batch, Source};
use crate::source::storage;
use crate::source::storage::Input;

/// A LitData chunk (`chunk-R-I[.zstd].bin` with an `index.json` beside it),
/// read with that index.
pub(crate) const FORMAT: Format = Format::new(
    "litdata",
    |n, _| is_chunk_name(n.name) && n.path.parent().is_some_and(|d| storage::exists(&d.join("index.json"))),
    |path, o| {
        Ok(Box::new(LitDataSource::open_with(path, &|c| {
            o.hints.dtype(c).and_then(Dtype::from_name)
        })?))
    },
)
.indexed(DatasetIndex {
    missing: missing_chunks,
    empty: |dir| {
        column::index_lists_none(dir, "chunks")
            .then_some("an empty dataset: its index.json (LitData) lists no chunks, so there is nothing to check")
    },
});

/// Largest chunk decompressed (offsets are u32: nothing past 4 GiB).
const MAX_CHUNK: u64 = u32::MAX as u64;
/// Trailing magic of a chunk whose rows are an Arrow IPC file.
const ARROW_MAGIC: &[u8; 8] = b"LDARW01\0";
/// Magic of a framed-zstd chunk.
const FRAMED_MAGIC: &[u8; 8] = b"LDFZ01\0\0";
/// Deepest `data_spec` nesting followed.
const MAX_DEPTH: usize = 64;

/// How a pytree leaf is stored (`data_format` entries).
#[derive(Debug, Clone, PartialEq)]
enum Leaf {
    Int,
    Float,
    Bool,
    Str,
    Bytes,
    /// 1-D array, dtype in the format string, no header.
    Raw(Dtype),
    /// `numpy`: LE u32 dtype index, ndim, dims, values.
    Numpy,
    /// `tensor`: BE u32 dtype index, rank, dims, values (LE).
    Tensor,
    /// LitData's nested binary (or legacy JSON text).
    Json,
    /// `pickle`, media, anything else: refused when asked for.
    Other(String),
}

/// `_NUMPY_DTYPES_MAPPING` index -> dtype.
fn numpy_dtype(i: u32) -> Option<Dtype> {
    Some(match i {
        0 => Dtype::I8,
        1 => Dtype::I16,
        2 => Dtype::I32,
        3 => Dtype::I64,
        4 => Dtype::U8,
        5 => Dtype::U16,
        6 => Dtype::U32,
        7 => Dtype::U64,
        8 => Dtype::F16,
        9 => Dtype::F32,
        10 => Dtype::F64,
        13 => Dtype::Bool,
        _ => return None,
    })
}

/// `_TORCH_DTYPES_MAPPING` index -> dtype (both aliases of each).
fn torch_dtype(i: u32) -> Option<Dtype> {
    Some(match i {
        0 | 1 => Dtype::F32,
        2 | 3 => Dtype::F64,
        8 | 9 => Dtype::F16,
        11 => Dtype::U8,
        12 => Dtype::I8,
        13 | 14 => Dtype::I16,
        15 | 16 => Dtype::I32,
        17 | 18 => Dtype::I64,
        19 => Dtype::Bool,
        20 => Dtype::U16,
        _ => return None,
    })
}

impl Leaf {
    fn parse(s: &str) -> Leaf {
        let raw = |prefix: &str, table: fn(u32) -> Option<Dtype>| {
            s.strip_prefix(prefix)
                .and_then(|k| k.parse().ok())
                .and_then(table)
                .map(Leaf::Raw)
        };
        match s {
            "int" => Leaf::Int,
            "float" => Leaf::Float,
            "bool" => Leaf::Bool,
            "str" => Leaf::Str,
            "bytes" => Leaf::Bytes,
            "numpy" => Leaf::Numpy,
            "tensor" => Leaf::Tensor,
            "json" => Leaf::Json,
            _ => raw("no_header_numpy:", numpy_dtype)
                .or_else(|| raw("no_header_tensor:", torch_dtype))
                .unwrap_or_else(|| Leaf::Other(s.to_string())),
        }
    }
}

// ---------------------------------------------------------------------------
// index.json
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Deserialize)]
struct RawChunk {
    chunk_bytes: Option<u64>,
    chunk_size: Option<u64>,
    dim: Option<u64>,
    filename: String,
}

#[derive(Debug, Clone, Deserialize)]
struct RawConfig {
    compression: Option<String>,
    compression_level: Option<String>,
    data_format: Option<Vec<String>>,
    data_spec: Option<String>,
    encryption: Option<Value>,
    item_loader: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RawIndex {
    chunks: Vec<RawChunk>,
    config: RawConfig,
}

/// Leaf names of a `data_spec` (torch pytree treespec, protocol 1).
fn leaf_names(spec: &str) -> Result<Vec<String>, String> {
    let v: Value = serde_json::from_str(spec).map_err(|e| format!("data_spec is not JSON ({e})"))?;
    let root = match &v {
        Value::Array(a) if a.len() == 2 => &a[1],
        _ => return Err("data_spec is not [protocol, treespec]".into()),
    };
    let mut out = Vec::new();
    walk_spec(root, "", 0, &mut out)?;
    Ok(out)
}

fn walk_spec(node: &Value, prefix: &str, depth: usize, out: &mut Vec<String>) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err("data_spec nests too deep".into());
    }
    let children = node["children_spec"].as_array().cloned().unwrap_or_default();
    let join = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match node["type"].as_str() {
        None => {
            out.push(if prefix.is_empty() {
                "item".into()
            } else {
                prefix.to_string()
            });
        }
        Some(t) if t.ends_with("dict") || t.ends_with("OrderedDict") || t.ends_with("defaultdict") => {
            let keys: Vec<Value> = match &node["context"] {
                Value::String(s) => serde_json::from_str(s).map_err(|e| format!("data_spec: dict keys ({e})"))?,
                Value::Array(a) => a.clone(),
                _ => return Err("data_spec: a dict without its keys".into()),
            };
            if keys.len() != children.len() {
                return Err("data_spec: a dict whose keys and children differ in number".into());
            }
            for (k, c) in keys.iter().zip(&children) {
                let k = k.as_str().map_or_else(|| k.to_string(), str::to_string);
                walk_spec(c, &join(&k), depth + 1, out)?;
            }
        }
        Some(_) => {
            for (i, c) in children.iter().enumerate() {
                walk_spec(c, &join(&i.to_string()), depth + 1, out)?;
            }
        }
    }
    Ok(())
}

/// How chunk files are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compression {
    None,
    /// The whole chunk is one zstd frame (`chunk-R-I.zstd.bin`).
    Chunk,
    /// `LDFZ01` framed batches of items.
    Batch,
    /// A classic header over per-item zstd frames.
    Sample,
}

#[derive(Debug)]
struct Index {
    chunks: Vec<RawChunk>,
    config: RawConfig,
}

fn parse_index(text: &[u8]) -> Result<Index, String> {
    let raw: RawIndex = serde_json::from_slice(text).map_err(|e| format!("not a LitData index ({e})"))?;
    Ok(Index {
        chunks: raw.chunks,
        config: raw.config,
    })
}

// ---------------------------------------------------------------------------
// The source
// ---------------------------------------------------------------------------

/// What a chunk's items are.
#[derive(Debug, Clone)]
enum Items {
    /// PyTree items, one leaf per column.
    Tree(Vec<Leaf>),
    /// Headerless token arrays of one dtype.
    Tokens(Dtype),
}

/// One LitData chunk.
pub(crate) struct LitDataSource {
    path: PathBuf,
    columns: Vec<String>,
    items: Items,
    /// The schema's `dtype:` for each column (for `bytes` leaves).
    dtypes: Vec<Option<Dtype>>,
    /// Items per `index.json`.
    count: u64,
    /// Bytes per `index.json` (uncompressed for whole-chunk zstd).
    chunk_bytes: Option<u64>,
    /// Tokens per `index.json` (TokensLoader).
    dim: Option<u64>,
    compression: Compression,
}

/// A chunk's bytes and where each item lies in them.
struct Chunk {
    data: Data,
    /// (start, end) of each item.
    bounds: Vec<(usize, usize)>,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at.checked_add(4)?)
        .map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]))
}

/// The classic header: u32 count and `count + 1` absolute offsets, checked.
/// Returns the items' bounds.
fn classic(data: &[u8], count: u64) -> Result<Vec<(usize, usize)>, ReadError> {
    let len = data.len() as u64;
    let n = u32_at(data, 0).ok_or_else(|| ReadError::new("the chunk is shorter than its item count"))? as u64;
    if n != count {
        return Err(ReadError::new(format!(
            "the chunk holds {n} items, index.json says {count}"
        )));
    }
    let table_end = 4 + 4 * (n + 1);
    if table_end > len {
        return Err(ReadError::new(format!(
            "the offsets of {n} items run past the end of the {len}-byte chunk"
        )));
    }
    let off: Vec<u64> = data[4..table_end as usize]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64)
        .collect();
    if off[0] != table_end {
        return Err(ReadError::new(format!(
            "item 0 starts at byte {}, not where the offset table ends ({table_end})",
            off[0]
        )));
    }
    let mut bounds = Vec::with_capacity(n as usize);
    for (i, w) in off.windows(2).enumerate() {
        if w[1] < w[0] {
            return Err(ReadError::new(format!(
                "item {i} ends at byte {} before it starts at {} (offsets decrease)",
                w[1], w[0]
            )));
        }
        if w[1] > len {
            return Err(ReadError::new(format!(
                "item {i} ends at byte {} past the end of the {len}-byte chunk (truncated)",
                w[1]
            )));
        }
        bounds.push((w[0] as usize, w[1] as usize));
    }
    let last = off[n as usize];
    if last != len && !data.ends_with(ARROW_MAGIC) {
        return Err(ReadError::new(format!(
            "{} bytes after the last item, which ends at byte {last}",
            len - last
        )));
    }
    Ok(bounds)
}

/// Decompresses one zstd frame (or several) into at most `limit` bytes.
fn unzstd(bytes: &[u8], limit: u64, what: &str) -> Result<Vec<u8>, ReadError> {
    let bad = |e: std::io::Error| ReadError::new(format!("{what}: corrupt zstd data: {e}"));
    let mut out = Vec::with_capacity(limit.min(64 << 20) as usize);
    zstd::stream::read::Decoder::new(bytes)
        .map_err(bad)?
        .take(limit + 1)
        .read_to_end(&mut out)
        .map_err(bad)?;
    if out.len() as u64 > limit {
        return Err(ReadError::new(format!(
            "{what}: decompresses to more than {limit} bytes"
        )));
    }
    Ok(out)
}

/// A framed (`LDFZ01`) chunk: its items, decompressed.
fn framed(data: &[u8], count: u64) -> Result<Chunk, ReadError> {
    let bad = |m: String| ReadError::new(format!("framed zstd chunk: {m}"));
    let head = |at| u32_at(data, at).ok_or_else(|| bad("truncated header".into()));
    if data.get(..8) != Some(&FRAMED_MAGIC[..]) {
        return Err(bad("no LDFZ01 magic".into()));
    }
    if data.len() < 24 {
        return Err(bad("truncated header".into()));
    }
    let version = u16::from_le_bytes([data[8], data[9]]);
    if version != 1 {
        return Err(bad(format!("version {version} (only 1 exists)")));
    }
    let n = head(12)? as u64;
    let per = head(16)? as u64;
    let frames = head(20)? as u64;
    if n != count {
        return Err(ReadError::new(format!(
            "the chunk holds {n} items, index.json says {count}"
        )));
    }
    if per == 0 && n > 0 || frames != n.div_ceil(per.max(1)) {
        return Err(bad(format!("{frames} frames of {per} items cannot hold {n} items")));
    }
    let table = 24 + 4 * (n + 1);
    let frames_end = table + 24 * frames;
    if frames_end > data.len() as u64 {
        return Err(bad(format!(
            "its tables run past the end of the {}-byte chunk",
            data.len()
        )));
    }
    let off: Vec<u64> = data[24..table as usize]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64)
        .collect();
    let mut total = 0u64;
    let mut frame_list = Vec::with_capacity(frames as usize);
    for f in 0..frames as usize {
        let e = &data[table as usize + 24 * f..table as usize + 24 * (f + 1)];
        let first = u32::from_le_bytes([e[0], e[1], e[2], e[3]]) as u64;
        let items = u32::from_le_bytes([e[4], e[5], e[6], e[7]]) as u64;
        let at = u64::from_le_bytes(e[8..16].try_into().unwrap_or_default());
        let zlen = u32::from_le_bytes([e[16], e[17], e[18], e[19]]) as u64;
        let raw = u32::from_le_bytes([e[20], e[21], e[22], e[23]]) as u64;
        if first != f as u64 * per || items != per.min(n - first.min(n)) {
            return Err(bad(format!(
                "frame {f} holds items {first}..+{items}, expected {}..",
                f as u64 * per
            )));
        }
        let end = at.checked_add(zlen).filter(|&e| e <= data.len() as u64);
        let Some(end) = end else {
            return Err(bad(format!("frame {f} runs past the end of the chunk")));
        };
        total += raw;
        frame_list.push((at as usize, end as usize, raw));
    }
    if total > MAX_CHUNK || off.last().copied() != Some(total) || off[0] != 0 {
        return Err(bad(format!(
            "its item offsets end at {}, its frames hold {total} bytes",
            off.last().copied().unwrap_or(0)
        )));
    }
    let mut out = Vec::with_capacity(total.min(64 << 20) as usize);
    for (f, &(a, b, raw)) in frame_list.iter().enumerate() {
        let part = unzstd(&data[a..b], raw, &format!("frame {f}"))?;
        if part.len() as u64 != raw {
            return Err(bad(format!(
                "frame {f} holds {} bytes, its table says {raw}",
                part.len()
            )));
        }
        out.extend_from_slice(&part);
    }
    let mut bounds = Vec::with_capacity(n as usize);
    for (i, w) in off.windows(2).enumerate() {
        if w[1] < w[0] {
            return Err(bad(format!("item {i} ends before it starts (offsets decrease)")));
        }
        bounds.push((w[0] as usize, w[1] as usize));
    }
    Ok(Chunk {
        data: Data::Owned(out),
        bounds,
    })
}

impl LitDataSource {
    /// Opens a chunk, `dtype_of(column)` giving the schema's `dtype:`.
    /// Checks its entry in the `index.json` beside it; items are checked
    /// when read.
    pub(crate) fn open_with(path: &Path, dtype_of: &dyn Fn(&str) -> Option<Dtype>) -> Result<Self, ReadError> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = path.parent().unwrap_or(Path::new("."));
        let index = column::load_index(&dir.join("index.json"), "a LitData chunk", parse_index)?;
        let Some(chunk) = index.chunks.iter().find(|c| c.filename == name) else {
            return Err(ReadError::new(format!(
                "{name} is not listed in the index.json beside it"
            )));
        };
        let cfg = &index.config;
        let at = |m: String| ReadError::new(format!("index.json: {m}"));
        if cfg.encryption.as_ref().is_some_and(|e| !e.is_null()) {
            return Err(at("the chunks are encrypted: preflight cannot read them".into()));
        }
        let formats = cfg.data_format.clone().ok_or_else(|| at("no data_format".into()))?;
        let (columns, items) = match cfg.item_loader.as_deref() {
            Some("TokensLoader") => {
                let elem = match formats.as_slice() {
                    [f] => match Leaf::parse(f) {
                        Leaf::Raw(e) => e,
                        _ => return Err(at(format!("TokensLoader with data_format {f:?}"))),
                    },
                    _ => return Err(at(format!("TokensLoader with {} leaves (1 expected)", formats.len()))),
                };
                (vec!["tokens".to_string()], Items::Tokens(elem))
            }
            Some("PyTreeLoader") | None => {
                let spec = cfg.data_spec.as_deref().ok_or_else(|| at("no data_spec".into()))?;
                let names = leaf_names(spec).map_err(at)?;
                if names.len() != formats.len() {
                    return Err(at(format!(
                        "data_spec has {} leaves, data_format {}",
                        names.len(),
                        formats.len()
                    )));
                }
                (names, Items::Tree(formats.iter().map(|f| Leaf::parse(f)).collect()))
            }
            Some(other) => return Err(at(format!("item loader `{other}` is not supported"))),
        };
        let compression = match (cfg.compression.as_deref(), cfg.compression_level.as_deref()) {
            (None, _) => Compression::None,
            (Some(c), level) if c == "zstd" || c.starts_with("zstd:") => match level {
                None | Some("chunk") => Compression::Chunk,
                Some("batch") => Compression::Batch,
                Some("sample") => Compression::Sample,
                Some(l) => return Err(at(format!("compression level `{l}` is not supported"))),
            },
            (Some(c), _) => return Err(at(format!("compression `{c}` is not supported"))),
        };
        let count = chunk.chunk_size.ok_or_else(|| at(format!("{name}: no chunk_size")))?;
        let on_disk = Input::open(path)?.size();
        if compression != Compression::Chunk
            && let Some(b) = chunk.chunk_bytes
            && b != on_disk
        {
            return Err(ReadError::new(format!(
                "the file is {on_disk} bytes, index.json says {b} (truncated or changed since it was written)"
            )));
        }
        if compression == Compression::Chunk && chunk.chunk_bytes.is_some_and(|b| b > MAX_CHUNK) {
            return Err(at(format!(
                "{name} is said to hold {} bytes: chunk offsets (u32) cannot address more than 4 GiB",
                chunk.chunk_bytes.unwrap_or(0)
            )));
        }
        let dtypes = columns.iter().map(|c| dtype_of(c)).collect();
        Ok(LitDataSource {
            path: path.to_path_buf(),
            columns,
            items,
            dtypes,
            count,
            chunk_bytes: chunk.chunk_bytes,
            dim: chunk.dim,
            compression,
        })
    }

    /// The chunk's items, decompressed and delimited.
    fn chunk(&self) -> Result<Chunk, ReadError> {
        let input = Input::open(&self.path)?;
        if let Some(m) = input.map() {
            storage::populate(m, 0, m.len());
        }
        let map = input.all()?;
        match self.compression {
            Compression::None => {
                let bounds = classic(&map, self.count)?;
                Ok(Chunk {
                    data: Data::Mapped(input, map),
                    bounds,
                })
            }
            Compression::Chunk => {
                let limit = self.chunk_bytes.unwrap_or(MAX_CHUNK).min(MAX_CHUNK);
                let data = unzstd(&map, limit, "the chunk")?;
                if let Some(b) = self.chunk_bytes
                    && data.len() as u64 != b
                {
                    return Err(ReadError::new(format!(
                        "decompressed to {} bytes, index.json says the chunk has {b}",
                        data.len()
                    )));
                }
                let bounds = classic(&data, self.count)?;
                Ok(Chunk {
                    data: Data::Owned(data),
                    bounds,
                })
            }
            Compression::Batch => framed(&map, self.count),
            Compression::Sample => {
                let frames = classic(&map, self.count)?;
                let mut data = Vec::new();
                let mut bounds = Vec::with_capacity(frames.len());
                for (i, &(a, b)) in frames.iter().enumerate() {
                    let left = MAX_CHUNK.saturating_sub(data.len() as u64);
                    let item = unzstd(&map[a..b], left, &format!("item {i}"))?;
                    let start = data.len();
                    data.extend_from_slice(&item);
                    bounds.push((start, data.len()));
                }
                Ok(Chunk {
                    data: Data::Owned(data),
                    bounds,
                })
            }
        }
    }

    /// How to gather column `c`, or why it cannot be checked.
    fn column(&self, c: usize) -> Result<Col, ReadError> {
        let name = &self.columns[c];
        let refuse = |why: String| ReadError::new(why).at(format!("column {name}"));
        let leaf = match &self.items {
            Items::Tokens(e) => &Leaf::Raw(*e),
            Items::Tree(leaves) => &leaves[c],
        };
        // A schema `dtype:` must agree with a type the chunk records.
        let stored = match leaf {
            Leaf::Int => Some(Dtype::I64),
            Leaf::Float => Some(Dtype::F64),
            Leaf::Bool => Some(Dtype::Bool),
            Leaf::Raw(e) => Some(*e),
            _ => None,
        };
        if let (Some(s), Some(d)) = (stored, self.dtypes[c])
            && s != d
        {
            return Err(refuse(format!(
                "stored as {}, the schema says dtype: {}",
                s.name(),
                d.name()
            )));
        }
        Ok(match leaf {
            Leaf::Int => Col::scalar(Dtype::I64),
            Leaf::Float => Col::scalar(Dtype::F64),
            Leaf::Bool => Col::scalar(Dtype::Bool),
            Leaf::Str => Col::string(),
            Leaf::Raw(e) => Col::list(Some(*e)),
            // Per-item dtypes: each must be the schema's, when it says one.
            Leaf::Numpy | Leaf::Tensor | Leaf::Json => Col::list(self.dtypes[c]),
            Leaf::Bytes => match self.dtypes[c] {
                Some(e) => Col::list(Some(e)),
                None => {
                    return Err(refuse(
                        "a LitData `bytes` leaf stores no element type: say how the tokens are stored with \
                         `dtype:` in the schema column (e.g. `dtype: uint16`)"
                            .into(),
                    ));
                }
            },
            Leaf::Other(f) if f == "pickle" => {
                return Err(refuse(
                    "LitData leaf `pickle` is a Python pickle, which preflight never loads (unpickling runs \
                     code): refused"
                        .into(),
                ));
            }
            Leaf::Other(f) => return Err(refuse(format!("LitData leaf format `{f}` is not supported"))),
        })
    }

    /// Appends leaf `c`'s bytes to `col`.
    fn push(&self, c: usize, col: &mut Col, b: &[u8]) -> Result<(), String> {
        let Items::Tree(leaves) = &self.items else {
            return Err("not a pytree".into());
        };
        match &leaves[c] {
            Leaf::Int | Leaf::Float | Leaf::Bool => col.push_scalar(b),
            Leaf::Str => col.push_str(b),
            Leaf::Raw(e) => col.push_list(*e, b),
            Leaf::Bytes => match self.dtypes[c] {
                Some(e) => col.push_list(e, b),
                None => Err("no dtype".into()),
            },
            Leaf::Numpy => {
                let (e, v) = shaped(b, false)?;
                col.push_list(e, v)
            }
            Leaf::Tensor => {
                let (e, v) = shaped(b, true)?;
                col.push_list(e, v)
            }
            Leaf::Json => json_leaf(b, col),
            Leaf::Other(f) => Err(format!("leaf format `{f}` is not supported")),
        }
    }

    /// Reads an Arrow-footer chunk: the IPC file's table, projected. The
    /// file's messages are read as the stream they are (after its 8-byte
    /// magic), by the house IPC decoder that vets every declared size.
    fn read_arrow(
        &self,
        data: &[u8],
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        let bad = |m: String| ReadError::new(format!("the chunk's Arrow table: {m}"));
        let end = data
            .len()
            .checked_sub(ARROW_MAGIC.len() + 4)
            .ok_or_else(|| bad("the chunk is shorter than its footer".into()))?;
        let ipc_len = u32_at(data, end).unwrap_or(0) as usize;
        let ipc = end
            .checked_sub(ipc_len)
            .map(|start| &data[start..end])
            .filter(|ipc| ipc.starts_with(b"ARROW1") && ipc.len() >= 8)
            .ok_or_else(|| bad(format!("{ipc_len} bytes before the footer are not an Arrow IPC file")))?;
        let mut input: &[u8] = &ipc[8..];
        let mut decoder = Some(ipc::message::Decoder::default());
        let names: Vec<&str> = projection.iter().map(|&c| self.columns[c].as_str()).collect();
        let mut order = Vec::new();
        let (mut rows, mut i) = (0u64, 0usize);
        while let Some(message) = ipc::message::next_message(&mut input).map_err(|e| e.at(format!("message {i}")))? {
            if message.is_end {
                break;
            }
            let (flat, body) = (message.flat, message.body);
            let buf = arrow::buffer::Buffer::from_vec(message.bytes);
            let d = decoder.as_mut().ok_or_else(|| bad("no decoder".into()))?;
            let batch = d.decode(&buf, flat, body).map_err(|e| e.at(format!("message {i}")))?;
            i += 1;
            let Some(batch) = batch else {
                // The schema: decode only the asked columns from now on.
                if order.is_empty()
                    && let Some(schema) = decoder.as_ref().and_then(|d| d.schema.clone())
                {
                    let cols: Vec<usize> = names
                        .iter()
                        .map(|n| schema.index_of(n).map_err(|_| bad(format!("no column {n}"))))
                        .collect::<Result<_, _>>()?;
                    let (sorted, o) = crate::source::read::file_order(&cols);
                    order = o;
                    decoder = decoder.take().map(|d| d.project(sorted));
                }
                continue;
            };
            let batch = batch.project(&order)?;
            let arrays: Vec<ArrayRef> = batch.columns().to_vec();
            let n = batch.num_rows();
            sink(Batch {
                first_row: rows,
                batch: column::batch(&names, arrays, n)?,
            })?;
            rows += n as u64;
        }
        if rows != self.count {
            return Err(ReadError::new(format!(
                "the chunk's Arrow table holds {rows} rows, index.json says {}",
                self.count
            )));
        }
        Ok(())
    }
}

/// A `numpy` (LE header) or `tensor` (BE header) leaf: dtype and values.
fn shaped(b: &[u8], big_endian: bool) -> Result<(Dtype, &[u8]), String> {
    let word = |at: usize| -> Result<u32, String> {
        let x = b.get(at..at + 4).ok_or("its header runs past the leaf")?;
        let x = [x[0], x[1], x[2], x[3]];
        Ok(if big_endian {
            u32::from_be_bytes(x)
        } else {
            u32::from_le_bytes(x)
        })
    };
    let (what, table): (&str, fn(u32) -> Option<Dtype>) = if big_endian {
        ("tensor", torch_dtype)
    } else {
        ("numpy", numpy_dtype)
    };
    let code = word(0)?;
    let elem = table(code).ok_or_else(|| format!("{what}: dtype index {code} is not a number type preflight reads"))?;
    let ndim = word(4)? as usize;
    let values_at = ndim
        .checked_mul(4)
        .and_then(|d| d.checked_add(8))
        .filter(|&e| e <= b.len())
        .ok_or_else(|| format!("{what}: its {ndim} dims run past the leaf"))?;
    let mut count = 1u128;
    for d in 0..ndim {
        count = count.saturating_mul(word(8 + 4 * d)? as u128);
    }
    let values = &b[values_at..];
    if count.checked_mul(elem.size() as u128) != Some(values.len() as u128) {
        return Err(format!(
            "{what}: {} bytes of {} values where its shape says {count} values",
            values.len(),
            elem.name()
        ));
    }
    Ok((elem, values))
}

/// A `json` leaf holding a list of numbers (LitData's nested binary, tag 1
/// empty, 2 ints, 3 floats, 4 bools; or legacy JSON text).
fn json_leaf(b: &[u8], col: &mut Col) -> Result<(), String> {
    let tag = *b.first().ok_or("an empty json leaf")?;
    if tag > 0x20 {
        return json_text(b, col);
    }
    let n = u32_at(b, 1).ok_or("json leaf: truncated")? as usize;
    let body = &b[5..];
    let (elem, size) = match tag {
        0 => return json_text(&body[..n.min(body.len())], col),
        1 if n == 0 => (Dtype::I64, 8),
        2 => (Dtype::I64, 8),
        3 => (Dtype::F64, 8),
        4 => (Dtype::Bool, 1),
        t => return Err(format!("json leaf: only lists of numbers are read (tag {t})")),
    };
    if n.checked_mul(size) != Some(body.len()) {
        return Err(format!("json leaf: {} bytes for {n} values", body.len()));
    }
    col.push_list(elem, body)
}

fn json_text(b: &[u8], col: &mut Col) -> Result<(), String> {
    let v: Value = serde_json::from_slice(b).map_err(|e| format!("json leaf: {e}"))?;
    let items = v.as_array().ok_or("json leaf: only lists of numbers are read")?;
    if items.iter().all(|x| x.is_i64()) {
        let bytes: Vec<u8> = items
            .iter()
            .flat_map(|x| x.as_i64().unwrap_or(0).to_le_bytes())
            .collect();
        col.push_list(Dtype::I64, &bytes)
    } else if items.iter().all(|x| x.is_number()) {
        let bytes: Vec<u8> = items
            .iter()
            .flat_map(|x| x.as_f64().unwrap_or(0.0).to_le_bytes())
            .collect();
        col.push_list(Dtype::F64, &bytes)
    } else {
        Err("json leaf: only lists of numbers are read".into())
    }
}

impl Source for LitDataSource {
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
            return Err(ReadError::new(format!("no unit {unit} (a LitData chunk has 1)")));
        }
        if let Some(&bad) = projection.iter().find(|&&c| c >= self.columns.len()) {
            return Err(ReadError::new(format!("no column {bad}")));
        }
        // An Arrow-footer chunk's columns are its table's, whatever the leaves.
        let chunk = self.chunk()?;
        if matches!(self.items, Items::Tree(_)) && chunk.data.ends_with(ARROW_MAGIC) {
            return self.read_arrow(&chunk.data, projection, sink);
        }
        let cols: Vec<Col> = projection.iter().map(|&c| self.column(c)).collect::<Result<_, _>>()?;
        let mut gather = column::Gather::new(&self.columns, projection, cols);
        let n = chunk.bounds.len();
        let mut tokens = 0u64;
        for (i, &(a, b)) in chunk.bounds.iter().enumerate() {
            let row_err = |m: String| ReadError::new(m).at(format!("row {i}"));
            let item = &chunk.data[a..b];
            match &self.items {
                Items::Tokens(e) => {
                    tokens += (item.len() / e.size()) as u64;
                    gather.push(0, |col| col.push_list(*e, item)).map_err(row_err)?;
                    if !item.len().is_multiple_of(e.size()) {
                        return Err(row_err(format!(
                            "{} bytes is not a whole number of {} tokens",
                            item.len(),
                            e.name()
                        )));
                    }
                }
                Items::Tree(leaves) => {
                    let head = leaves.len() * 4;
                    if item.len() < head {
                        return Err(row_err(format!(
                            "the item is {} bytes, shorter than its {} leaf sizes",
                            item.len(),
                            leaves.len()
                        )));
                    }
                    let sizes = (0..self.columns.len()).map(|c| u32_at(item, c * 4).unwrap_or(0) as usize);
                    column::fields(
                        item,
                        head,
                        sizes,
                        &self.columns,
                        ("item", "leaf", "leaves"),
                        |c, bytes| gather.push(c, |col| self.push(c, col, bytes)),
                    )
                    .map_err(row_err)?;
                }
            }
            gather.sample_done(i, n, item.len(), sink)?;
        }
        if let (Items::Tokens(_), Some(dim)) = (&self.items, self.dim)
            && dim != tokens
        {
            return Err(ReadError::new(format!(
                "the chunk holds {tokens} tokens, index.json says {dim} (dim)"
            )));
        }
        chunk.data.release();
        Ok(())
    }
}

/// The chunks the LitData `index.json` in `dir` lists that are not in
/// `dir`: (the chunk's name, why it is an error). The index a
/// multi-worker `optimize` merges lists every rank's chunks, so a rank
/// whose chunks never arrived is found here. Nothing for an index that is
/// no LitData index.
pub(crate) fn missing_chunks(dir: &Path) -> Vec<(String, String)> {
    let Ok(index) = column::load_index(&dir.join("index.json"), "a LitData chunk", parse_index) else {
        return Vec::new();
    };
    let mut missing = Vec::new();
    for (i, chunk) in index.chunks.iter().enumerate() {
        let name = chunk.filename.as_str();
        if !column::plain_name(name) {
            missing.push((
                name.to_string(),
                format!("index.json lists chunk {i} as `{name}`, which is not a file name in its folder"),
            ));
        } else if !storage::exists(&dir.join(name)) {
            let items = chunk.chunk_size.map(|n| format!(", {n} items")).unwrap_or_default();
            missing.push((
                name.to_string(),
                format!("listed in index.json (chunk {i}{items}) but missing from the folder"),
            ));
        }
    }
    missing
}

/// Whether a file name is a LitData chunk's (`chunk-R-I.bin`, or
/// `chunk-R-I.<compression>.bin`); it is one when an `index.json` lies
/// beside it.
pub(crate) fn is_chunk_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("chunk-").and_then(|r| r.strip_suffix(".bin")) else {
        return false;
    };
    let core = rest.split_once('.').map_or(rest, |(c, _)| c);
    let mut parts = core.split('-');
    let digits = |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    digits(parts.next()) && digits(parts.next()) && parts.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_names() {
        for n in [
            "chunk-0-0.bin",
            "chunk-12-345.bin",
            "chunk-0-1.zstd.bin",
            "chunk-0-1.zstd:4.bin",
        ] {
            assert!(is_chunk_name(n), "{n}");
        }
        for n in [
            "chunk-0.bin",
            "chunk-a-0.bin",
            "chunk-0-0.idx",
            "train.bin",
            "chunk-0-0-0.bin",
        ] {
            assert!(!is_chunk_name(n), "{n}");
        }
    }

    #[test]
    fn data_spec_leaves_are_named_by_path() {
        let leaf = r#"{"type": null, "context": null, "children_spec": []}"#;
        let spec = format!(
            r#"[1, {{"type": "builtins.dict", "context": "[\"b\", \"a\"]", "children_spec": [{leaf}, {{"type": "builtins.list", "context": "null", "children_spec": [{leaf}, {leaf}]}}]}}]"#
        );
        assert_eq!(leaf_names(&spec).unwrap(), vec!["b", "a.0", "a.1"]);
        assert_eq!(leaf_names(&format!("[1, {leaf}]")).unwrap(), vec!["item"]);
        let mut deep = leaf.to_string();
        for _ in 0..100 {
            deep = format!(r#"{{"type": "builtins.list", "context": "null", "children_spec": [{deep}]}}"#);
        }
        assert!(leaf_names(&format!("[1, {deep}]")).is_err());
    }

    #[test]
    fn shaped_leaves() {
        // tensor: BE int64 (18), rank 1, dim 2, then LE values.
        let mut t = vec![0, 0, 0, 18, 0, 0, 0, 1, 0, 0, 0, 2];
        t.extend_from_slice(&5i64.to_le_bytes());
        t.extend_from_slice(&6i64.to_le_bytes());
        assert_eq!(shaped(&t, true).unwrap().0, Dtype::I64);
        assert!(shaped(&t[..t.len() - 1], true).is_err());
        // numpy: a rank claiming 2^32-1 dims.
        let huge = [5, 0, 0, 0, 255, 255, 255, 255];
        assert!(shaped(&huge, false).is_err());
    }

    #[test]
    fn framed_headers_cut_short_are_errors() {
        assert!(framed(FRAMED_MAGIC, 0).is_err());
        let mut h = FRAMED_MAGIC.to_vec();
        h.extend_from_slice(&[1, 0]);
        assert!(framed(&h, 0).is_err());
        // One item, a frame table claiming a frame past the end.
        h.extend_from_slice(&[0, 0]);
        for w in [1u32, 256, 1, 0, 4] {
            h.extend_from_slice(&w.to_le_bytes());
        }
        h.extend_from_slice(&[0; 24]);
        assert!(framed(&h, 1).is_err());
    }

    #[test]
    fn classic_header_is_checked() {
        let mut c = 2u32.to_le_bytes().to_vec();
        for o in [16u32, 18, 20] {
            c.extend_from_slice(&o.to_le_bytes());
        }
        c.extend_from_slice(&[0; 4]);
        assert_eq!(classic(&c, 2).unwrap(), vec![(16, 18), (18, 20)]);
        assert!(
            classic(&c, 3)
                .unwrap_err()
                .message
                .contains("holds 2 items, index.json says 3")
        );
        assert!(classic(&c[..19], 2).unwrap_err().message.contains("truncated"));
        assert!(classic(&u32::MAX.to_le_bytes(), u32::MAX as u64).is_err());
    }
}
