//! NumPy `.npy` and `.npz` reader.
//!
//! NumPy files are how many training pipelines store pre-tokenised ids and
//! labels, so preflight reads them without Python: the header (a Python dict
//! literal) is parsed by a small hand-written parser that evaluates nothing,
//! and pickled (object) content is refused, never loaded.
//!
//! A `.npy` file is one column named by the file's stem; an array of two or
//! more dimensions becomes a fixed-size list column whose row i holds every
//! element of `array[i]` in C order (Fortran-ordered files are reordered).
//! The file is memory-mapped and read in bounded batches; 1-D (and C-ordered)
//! native-endian numeric data is handed to Arrow zero-copy when the data is
//! suitably aligned. `.npz` members are the columns of one table and are
//! streamed (stored or deflated) in lockstep, one zip stream per member, so
//! memory stays bounded by the batch size.
//!
//! Every size taken from a header is checked against what the file actually
//! holds before anything is allocated or read.
//!
//! Objects in storage go through `storage::Input` with the same code: a
//! `.npy` unit's rows are one ranged read (a Fortran-ordered array's data
//! is read whole, once: each row spans it); a `.npz` is read by the zip
//! reader over ranged reads, its members streamed.

use std::borrow::Cow;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow::array::{
    ArrayRef, BooleanArray, FixedSizeListArray, PrimitiveArray, RecordBatch, RecordBatchOptions, StringBuilder,
};
use arrow::buffer::{BooleanBuffer, Buffer, ScalarBuffer};
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Field, FieldRef, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    Schema, SchemaRef, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use bytes::Bytes;
use memmap2::Mmap;
use zip::ZipArchive;
use zip::read::ZipFile;

use crate::error::ReadError;
use crate::source::format::Format;
use crate::source::read::{BATCH_ROWS, Batch, Source};
use crate::source::storage;
use crate::source::storage::Input;

/// A NumPy `.npy` array: one column named by the file's stem.
pub(crate) const FORMAT: Format = Format::new(
    "npy",
    |n, _| n.ext == Some("npy"),
    |path, _| Ok(Box::new(NpySource::open(path)?)),
)
.sniffed(|head| head.starts_with(b"\x93NUMPY"));

/// A NumPy `.npz` archive: one column per member.
pub(crate) const NPZ: Format = Format::new(
    "npz",
    |n, _| n.ext == Some("npz"),
    |path, _| Ok(Box::new(NpzSource::open(path)?)),
);

/// Most elements per batch: wide rows get fewer rows per batch (at least 1).
const MAX_BATCH_ELEMS: usize = 1 << 20;
/// Most data bytes per batch (matters for long string dtypes).
const MAX_BATCH_BYTES: usize = 64 << 20;
/// Roughly how many elements one `.npy` unit covers.
const UNIT_ELEMS: usize = 4 << 20;
/// Longest header accepted (NumPy itself refuses more than 10 000 bytes).
const MAX_HEADER: u64 = 1 << 20;
/// Most rows accepted when rows hold no bytes (shape `(n, 0)`): the file
/// cannot vouch for them, and reading them costs time.
const MAX_EMPTY_ROWS: u64 = u32::MAX as u64;
/// Deepest nesting accepted in a header literal.
const MAX_DEPTH: usize = 16;

// ---------------------------------------------------------------------------
// Header literal parser
// ---------------------------------------------------------------------------

/// A Python literal as found in a `.npy` header.
#[derive(Debug, Clone, PartialEq)]
enum Lit {
    Str(String),
    Int { neg: bool, val: u64 },
    Bool(bool),
    None,
    Tuple(Vec<Lit>),
    List(Vec<Lit>),
    Dict(Vec<(Lit, Lit)>),
}

/// Recursive-descent parser over the header's characters.
struct LitParser {
    s: Vec<char>,
    pos: usize,
}

fn header_err(msg: impl std::fmt::Display) -> ReadError {
    ReadError::new(format!("malformed .npy header: {msg}"))
}

impl LitParser {
    fn parse(text: &str) -> Result<Lit, ReadError> {
        let mut p = LitParser {
            s: text.chars().collect(),
            pos: 0,
        };
        let v = p.value(0)?;
        p.ws();
        if p.pos != p.s.len() {
            return Err(header_err(format!(
                "unexpected text after the dict at character {}",
                p.pos
            )));
        }
        Ok(v)
    }

    fn peek(&self) -> Option<char> {
        self.s.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Lit, ReadError> {
        if depth > MAX_DEPTH {
            return Err(header_err("nested too deeply"));
        }
        self.ws();
        let Some(c) = self.peek() else {
            return Err(header_err("unexpected end"));
        };
        match c {
            '{' => self.dict(depth),
            '(' => self.seq(')', depth).map(Lit::Tuple),
            '[' => self.seq(']', depth).map(Lit::List),
            '\'' | '"' => self.string(),
            'b' | 'B' | 'u' | 'U' if matches!(self.s.get(self.pos + 1), Some('\'' | '"')) => {
                self.pos += 1;
                self.string()
            }
            '0'..='9' | '-' | '+' => self.int(),
            c if c.is_ascii_alphabetic() || c == '_' => {
                let start = self.pos;
                while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                    self.pos += 1;
                }
                let word: String = self.s[start..self.pos].iter().collect();
                match word.as_str() {
                    "True" => Ok(Lit::Bool(true)),
                    "False" => Ok(Lit::Bool(false)),
                    "None" => Ok(Lit::None),
                    _ => Err(header_err(format!("unexpected name '{word}'"))),
                }
            }
            c => Err(header_err(format!("unexpected character {c:?} at {}", self.pos))),
        }
    }

    fn dict(&mut self, depth: usize) -> Result<Lit, ReadError> {
        self.pos += 1; // '{'
        let mut items = Vec::new();
        loop {
            self.ws();
            if self.peek() == Some('}') {
                self.pos += 1;
                return Ok(Lit::Dict(items));
            }
            let key = self.value(depth + 1)?;
            self.ws();
            if self.peek() != Some(':') {
                return Err(header_err("expected ':' in dict"));
            }
            self.pos += 1;
            let val = self.value(depth + 1)?;
            items.push((key, val));
            self.ws();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some('}') => {}
                _ => return Err(header_err("expected ',' or '}' in dict")),
            }
        }
    }

    fn seq(&mut self, close: char, depth: usize) -> Result<Vec<Lit>, ReadError> {
        self.pos += 1; // '(' or '['
        let mut items = Vec::new();
        loop {
            self.ws();
            if self.peek() == Some(close) {
                self.pos += 1;
                return Ok(items);
            }
            items.push(self.value(depth + 1)?);
            self.ws();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(c) if c == close => {}
                _ => return Err(header_err(format!("expected ',' or '{close}'"))),
            }
        }
    }

    fn string(&mut self) -> Result<Lit, ReadError> {
        let Some(quote) = self.peek() else {
            return Err(header_err("unexpected end"));
        };
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(header_err("unterminated string"));
            };
            self.pos += 1;
            if c == quote {
                return Ok(Lit::Str(out));
            }
            if c != '\\' {
                out.push(c);
                continue;
            }
            let Some(e) = self.peek() else {
                return Err(header_err("unterminated string"));
            };
            self.pos += 1;
            let hex_digits = match e {
                'x' => 2,
                'u' => 4,
                'U' => 8,
                _ => 0,
            };
            if hex_digits > 0 {
                let digits: String = self.s.iter().skip(self.pos).take(hex_digits).collect();
                let code = u32::from_str_radix(&digits, 16)
                    .ok()
                    .filter(|_| digits.len() == hex_digits)
                    .and_then(char::from_u32)
                    .ok_or_else(|| header_err("bad escape in string"))?;
                self.pos += hex_digits;
                out.push(code);
                continue;
            }
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                '\\' | '\'' | '"' => out.push(e),
                // Python keeps unknown escapes as written.
                other => {
                    out.push('\\');
                    out.push(other);
                }
            }
        }
    }

    fn int(&mut self) -> Result<Lit, ReadError> {
        let mut neg = false;
        if let Some(c @ ('-' | '+')) = self.peek() {
            neg = c == '-';
            self.pos += 1;
        }
        let start = self.pos;
        let mut val: u64 = 0;
        while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
            val = val
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(d)))
                .ok_or_else(|| header_err("integer too large"))?;
            self.pos += 1;
        }
        if self.pos == start {
            return Err(header_err("expected a number"));
        }
        // Python 2 era files write longs as `3L`.
        if matches!(self.peek(), Some('L' | 'l')) {
            self.pos += 1;
        }
        if self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '.') {
            return Err(header_err("expected an integer"));
        }
        Ok(Lit::Int { neg, val })
    }
}

// ---------------------------------------------------------------------------
// Header, dtype and layout
// ---------------------------------------------------------------------------

/// What the header says, before the dtype is judged.
#[derive(Debug, Clone)]
struct RawHeader {
    descr: Lit,
    fortran: bool,
    shape: Vec<u64>,
    /// Byte offset of the array data from the start of the file/member.
    data_offset: u64,
}

fn truncated_header(needed: u64, avail: u64) -> ReadError {
    ReadError::new(format!("truncated: header needs {needed} bytes, file holds {avail}"))
}

/// Fills `buf` from `r`, or reports how many bytes the file held.
fn read_full(r: &mut impl Read, buf: &mut [u8], needed: u64, avail: u64) -> Result<(), ReadError> {
    r.read_exact(buf).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            truncated_header(needed, avail)
        } else {
            ReadError::from(e)
        }
    })
}

/// Reads and parses the magic, version and header dict. `avail` is the size
/// of the whole file (or member), used to refuse oversized headers before
/// allocating.
fn read_header(r: &mut impl Read, avail: u64) -> Result<RawHeader, ReadError> {
    let mut pre = [0u8; 8];
    if avail < 8 {
        return Err(ReadError::new("not a NumPy .npy file: too short"));
    }
    read_full(r, &mut pre, 8, avail)?;
    if &pre[..6] != b"\x93NUMPY" {
        return Err(ReadError::new("not a NumPy .npy file: bad magic"));
    }
    let (major, minor) = (pre[6], pre[7]);
    let (len_bytes, utf8) = match major {
        1 => (2u64, false),
        2 => (4, false),
        3 => (4, true),
        _ => {
            return Err(ReadError::new(format!(
                "unsupported .npy format version {major}.{minor}"
            )));
        }
    };
    let mut len_buf = [0u8; 4];
    let len_slice = &mut len_buf[..len_bytes as usize];
    read_full(r, len_slice, 8 + len_bytes, avail)?;
    let hlen = u64::from(u32::from_le_bytes(len_buf));
    let data_offset = 8 + len_bytes + hlen;
    if data_offset > avail {
        return Err(truncated_header(data_offset, avail));
    }
    if hlen > MAX_HEADER {
        return Err(header_err(format!("header of {hlen} bytes is too long")));
    }
    let mut text = vec![0u8; hlen as usize];
    read_full(r, &mut text, data_offset, avail)?;
    let text: Cow<str> = if utf8 {
        Cow::Borrowed(std::str::from_utf8(&text).map_err(|_| header_err("version 3.0 header is not UTF-8"))?)
    } else {
        // Versions 1 and 2 are latin-1.
        Cow::Owned(text.iter().map(|&b| char::from(b)).collect())
    };
    let Lit::Dict(items) = LitParser::parse(&text)? else {
        return Err(header_err("not a dict"));
    };
    let mut descr = None;
    let mut fortran = None;
    let mut shape = None;
    for (k, v) in items {
        let Lit::Str(k) = k else {
            return Err(header_err(
                "a key that is not a string (np.load accepts exactly 'descr', 'fortran_order' and 'shape')",
            ));
        };
        match k.as_str() {
            "descr" => descr = Some(v),
            "fortran_order" => match v {
                Lit::Bool(b) => fortran = Some(b),
                _ => return Err(header_err("'fortran_order' is not True or False")),
            },
            // `np.load` requires a tuple (`shape is not valid: [3]`).
            "shape" => match v {
                Lit::Tuple(dims) => {
                    let dims = dims
                        .into_iter()
                        .map(|d| match d {
                            Lit::Int { neg: false, val } => Ok(val),
                            Lit::Int { neg: true, val: 0 } => Ok(0),
                            _ => Err(header_err("'shape' holds something other than a size")),
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    shape = Some(dims);
                }
                _ => return Err(header_err("'shape' is not a tuple")),
            },
            // `np.load` refuses a header with any other key ("Header does
            // not contain the correct keys"), so a file with one is not an
            // array its readers can load.
            other => {
                return Err(header_err(format!(
                    "unexpected key {other:?} (np.load accepts exactly 'descr', 'fortran_order' and 'shape')"
                )));
            }
        }
    }
    match (descr, fortran, shape) {
        (Some(descr), Some(fortran), Some(shape)) => Ok(RawHeader {
            descr,
            fortran,
            shape,
            data_offset,
        }),
        _ => Err(header_err("missing 'descr', 'fortran_order' or 'shape'")),
    }
}

/// Element types that become Arrow arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    F32,
    F64,
    /// `U<n>`: n UCS-4 code points.
    Unicode,
    /// `S<n>`: n bytes, read as UTF-8.
    Bytes,
}

impl Kind {
    /// Whether the stored bytes are already Arrow's native layout.
    fn zero_copy(self) -> bool {
        !matches!(self, Kind::Bool | Kind::F16 | Kind::Unicode | Kind::Bytes)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Dtype {
    kind: Kind,
    /// Stored big-endian (resolved for `=` and `|` to this machine's order).
    big: bool,
    /// Bytes per element.
    size: usize,
}

impl Dtype {
    fn from_descr(descr: &Lit) -> Result<Dtype, ReadError> {
        match descr {
            Lit::Str(s) => Dtype::parse(s),
            Lit::List(_) => Err(ReadError::new(
                "structured (record) arrays are not supported: save each field as its own array",
            )),
            _ => Err(header_err("'descr' is not a dtype string")),
        }
    }

    fn parse(descr: &str) -> Result<Dtype, ReadError> {
        let unsupported = |what: &str| ReadError::new(format!("{what} (dtype '{descr}')"));
        let mut chars = descr.chars();
        let mut order = '=';
        let mut kind = chars.next().ok_or_else(|| header_err("empty dtype"))?;
        if matches!(kind, '<' | '>' | '|' | '=') {
            order = kind;
            kind = chars.next().ok_or_else(|| header_err("empty dtype"))?;
        }
        let tail = chars.as_str();
        match kind {
            'O' => {
                return Err(unsupported(
                    "object arrays are not supported (pickled content is never loaded)",
                ));
            }
            'M' | 'm' => {
                return Err(unsupported("datetime and timedelta arrays are not supported"));
            }
            'c' => return Err(unsupported("complex arrays are not supported")),
            'V' => return Err(unsupported("void (raw bytes) arrays are not supported")),
            _ => {}
        }
        let n: usize = if tail.is_empty() && matches!(kind, 'b' | '?') {
            1
        } else {
            tail.parse().map_err(|_| unsupported("unsupported dtype"))?
        };
        let big = match order {
            '>' => true,
            '<' => false,
            _ => cfg!(target_endian = "big"),
        };
        let (kind, size) = match (kind, n) {
            ('b' | '?', 1) => (Kind::Bool, 1),
            ('i', 1) => (Kind::I8, 1),
            ('i', 2) => (Kind::I16, 2),
            ('i', 4) => (Kind::I32, 4),
            ('i', 8) => (Kind::I64, 8),
            ('u', 1) => (Kind::U8, 1),
            ('u', 2) => (Kind::U16, 2),
            ('u', 4) => (Kind::U32, 4),
            ('u', 8) => (Kind::U64, 8),
            ('f', 2) => (Kind::F16, 2),
            ('f', 4) => (Kind::F32, 4),
            ('f', 8) => (Kind::F64, 8),
            ('f', _) => return Err(unsupported("extended-precision floats are not supported")),
            ('U' | 'S' | 'a', 0) => {
                return Err(unsupported("zero-length strings are not supported"));
            }
            ('U', n) => {
                let size = n.checked_mul(4).ok_or_else(|| unsupported("string type too wide"))?;
                (Kind::Unicode, size)
            }
            ('S' | 'a', n) => (Kind::Bytes, n),
            _ => return Err(unsupported("unsupported dtype")),
        };
        Ok(Dtype { kind, big, size })
    }

    /// The type as stored: float16 stays float16 (see `arrow_type`).
    fn stored_type(&self) -> DataType {
        match self.kind {
            Kind::F16 => DataType::Float16,
            _ => self.arrow_type(),
        }
    }

    /// Arrow type of one element. float16 widens to float32, exactly.
    fn arrow_type(&self) -> DataType {
        match self.kind {
            Kind::Bool => DataType::Boolean,
            Kind::I8 => DataType::Int8,
            Kind::I16 => DataType::Int16,
            Kind::I32 => DataType::Int32,
            Kind::I64 => DataType::Int64,
            Kind::U8 => DataType::UInt8,
            Kind::U16 => DataType::UInt16,
            Kind::U32 => DataType::UInt32,
            Kind::U64 => DataType::UInt64,
            Kind::F16 | Kind::F32 => DataType::Float32,
            Kind::F64 => DataType::Float64,
            Kind::Unicode | Kind::Bytes => DataType::Utf8,
        }
    }
}

/// Sizes derived from a header's shape and dtype, all checked.
#[derive(Debug, Clone)]
struct Layout {
    dtype: Dtype,
    /// The shape, every dim known to fit in `usize`.
    shape: Vec<usize>,
    rows: u64,
    row_elems: usize,
    row_bytes: usize,
    data_bytes: u64,
    /// Rows are contiguous runs of bytes (C order, or a layout where the
    /// order makes no difference).
    contiguous: bool,
    rows_per_batch: usize,
}

fn too_large(shape: &[u64]) -> ReadError {
    ReadError::new(format!("shape {shape:?} is too large: its byte size overflows"))
}

impl Layout {
    fn new(raw: &RawHeader, dtype: Dtype) -> Result<Layout, ReadError> {
        let dims = &raw.shape;
        let Some((&rows, rest)) = dims.split_first() else {
            return Err(ReadError::new(
                "0-d arrays (shape ()) are not supported: a column needs rows",
            ));
        };
        let row_elems = rest.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
        let row_elems = row_elems.ok_or_else(|| too_large(dims))?;
        let row_bytes = row_elems
            .checked_mul(dtype.size as u64)
            .ok_or_else(|| too_large(dims))?;
        let data_bytes = rows.checked_mul(row_bytes).ok_or_else(|| too_large(dims))?;
        if !rest.is_empty() && row_elems > i32::MAX as u64 {
            return Err(ReadError::new(format!(
                "rows of {row_elems} elements are too wide for a fixed-size list (shape {dims:?})"
            )));
        }
        if row_bytes == 0 && rows > MAX_EMPTY_ROWS {
            return Err(ReadError::new(format!(
                "shape {dims:?} claims {rows} rows holding no data; refusing"
            )));
        }
        let to_usize = |v: u64| usize::try_from(v).map_err(|_| too_large(dims));
        let shape = dims.iter().map(|&d| to_usize(d)).collect::<Result<Vec<_>, _>>()?;
        let row_elems = to_usize(row_elems)?;
        let row_bytes = to_usize(row_bytes)?;
        // Order only matters when two or more axes have several elements.
        let contiguous = !raw.fortran || row_elems == 0 || dims.iter().filter(|&&d| d > 1).count() <= 1;
        let rows_per_batch = BATCH_ROWS
            .min(MAX_BATCH_ELEMS / row_elems.max(1))
            .min(MAX_BATCH_BYTES / row_bytes.max(1))
            .max(1);
        Ok(Layout {
            dtype,
            shape,
            rows,
            row_elems,
            row_bytes,
            data_bytes,
            contiguous,
            rows_per_batch,
        })
    }

    /// The column's Arrow type: the element type, or a fixed-size list of it.
    fn arrow_type(&self) -> DataType {
        let elem = self.dtype.arrow_type();
        if self.shape.len() == 1 {
            elem
        } else {
            // row_elems <= i32::MAX was checked in `new`.
            DataType::FixedSizeList(list_field(elem), self.row_elems as i32)
        }
    }

    /// Refuses data regions shorter than the header promises.
    fn check_holds(&self, avail: u64, what: &str) -> Result<(), ReadError> {
        if self.data_bytes > avail {
            return Err(ReadError::new(format!(
                "truncated: header says {} bytes of data, {what} holds {avail}",
                self.data_bytes
            )));
        }
        Ok(())
    }

    /// Wraps decoded elements of `rows` rows into the column's array.
    fn column(&self, values: ArrayRef, rows: usize) -> Result<ArrayRef, ReadError> {
        if self.shape.len() == 1 {
            return Ok(values);
        }
        let field = list_field(values.data_type().clone());
        let list = FixedSizeListArray::try_new_with_length(field, self.row_elems as i32, values, None, rows)?;
        Ok(Arc::new(list))
    }
}

/// The child field of fixed-size list columns: NumPy has no nulls.
fn list_field(elem: DataType) -> FieldRef {
    Arc::new(Field::new("item", elem, false))
}

// ---------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------

fn prim<T: ArrowPrimitiveType, const N: usize>(
    bytes: &[u8],
    big: bool,
    le: impl Fn([u8; N]) -> T::Native,
    be: impl Fn([u8; N]) -> T::Native,
) -> ArrayRef {
    let (chunks, _) = bytes.as_chunks::<N>();
    let v: Vec<T::Native> = if big {
        chunks.iter().map(|c| be(*c)).collect()
    } else {
        chunks.iter().map(|c| le(*c)).collect()
    };
    Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(v), None))
}

/// IEEE half to single precision; every half value is exactly representable.
fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let bits = match (exp, man) {
        (0, 0) => sign,
        // Subnormal: man * 2^-24, exact in f32.
        (0, m) => {
            let v = m as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -v } else { v };
        }
        (31, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// Decodes `bytes` (whole elements, C order) into an Arrow array of
/// elements. `first_row` and `row_elems` only serve error messages.
fn decode(dtype: Dtype, bytes: &[u8], first_row: u64, row_elems: usize) -> Result<ArrayRef, ReadError> {
    let big = dtype.big;
    Ok(match dtype.kind {
        Kind::Bool => {
            let buf = BooleanBuffer::collect_bool(bytes.len(), |i| bytes[i] != 0);
            Arc::new(BooleanArray::new(buf, None))
        }
        Kind::I8 => prim::<Int8Type, 1>(bytes, big, i8::from_le_bytes, i8::from_be_bytes),
        Kind::I16 => prim::<Int16Type, 2>(bytes, big, i16::from_le_bytes, i16::from_be_bytes),
        Kind::I32 => prim::<Int32Type, 4>(bytes, big, i32::from_le_bytes, i32::from_be_bytes),
        Kind::I64 => prim::<Int64Type, 8>(bytes, big, i64::from_le_bytes, i64::from_be_bytes),
        Kind::U8 => prim::<UInt8Type, 1>(bytes, big, u8::from_le_bytes, u8::from_be_bytes),
        Kind::U16 => prim::<UInt16Type, 2>(bytes, big, u16::from_le_bytes, u16::from_be_bytes),
        Kind::U32 => prim::<UInt32Type, 4>(bytes, big, u32::from_le_bytes, u32::from_be_bytes),
        Kind::U64 => prim::<UInt64Type, 8>(bytes, big, u64::from_le_bytes, u64::from_be_bytes),
        Kind::F16 => prim::<Float32Type, 2>(
            bytes,
            big,
            |b| f16_to_f32(u16::from_le_bytes(b)),
            |b| f16_to_f32(u16::from_be_bytes(b)),
        ),
        Kind::F32 => prim::<Float32Type, 4>(bytes, big, f32::from_le_bytes, f32::from_be_bytes),
        Kind::F64 => prim::<Float64Type, 8>(bytes, big, f64::from_le_bytes, f64::from_be_bytes),
        Kind::Unicode | Kind::Bytes => decode_strings(dtype, bytes, first_row, row_elems)?,
    })
}

/// Fixed-width NumPy strings to Utf8; trailing NULs are padding, as in NumPy.
fn decode_strings(dtype: Dtype, bytes: &[u8], first_row: u64, row_elems: usize) -> Result<ArrayRef, ReadError> {
    let count = bytes.len() / dtype.size;
    let mut b = StringBuilder::with_capacity(count, bytes.len() / 4);
    let mut s = String::new();
    let bad = |e: usize, what: &str| {
        let row = first_row + (e / row_elems.max(1)) as u64;
        ReadError::new(format!("row {row}: {what}"))
    };
    for (e, chunk) in bytes.chunks_exact(dtype.size).enumerate() {
        if dtype.kind == Kind::Bytes {
            let end = chunk.iter().rposition(|&x| x != 0).map_or(0, |p| p + 1);
            let text = std::str::from_utf8(&chunk[..end]).map_err(|_| bad(e, "byte string is not valid UTF-8"))?;
            b.append_value(text);
            continue;
        }
        s.clear();
        let (cps, _) = chunk.as_chunks::<4>();
        let end = cps.iter().rposition(|c| *c != [0; 4]).map_or(0, |p| p + 1);
        for cp in &cps[..end] {
            let u = if dtype.big {
                u32::from_be_bytes(*cp)
            } else {
                u32::from_le_bytes(*cp)
            };
            s.push(char::from_u32(u).ok_or_else(|| bad(e, "string holds an invalid code point"))?);
        }
        b.append_value(&s);
    }
    Ok(Arc::new(b.finish()))
}

/// Builds the Arrow array straight over `buf` (no copy). `buf` must be
/// aligned for the element type and hold whole native-endian elements.
fn zero_copy_array(kind: Kind, buf: Buffer) -> Option<ArrayRef> {
    fn mk<T: ArrowPrimitiveType>(buf: Buffer) -> ArrayRef {
        let len = buf.len() / size_of::<T::Native>();
        Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::new(buf, 0, len), None))
    }
    Some(match kind {
        Kind::I8 => mk::<Int8Type>(buf),
        Kind::I16 => mk::<Int16Type>(buf),
        Kind::I32 => mk::<Int32Type>(buf),
        Kind::I64 => mk::<Int64Type>(buf),
        Kind::U8 => mk::<UInt8Type>(buf),
        Kind::U16 => mk::<UInt16Type>(buf),
        Kind::U32 => mk::<UInt32Type>(buf),
        Kind::U64 => mk::<UInt64Type>(buf),
        Kind::F32 => mk::<Float32Type>(buf),
        Kind::F64 => mk::<Float64Type>(buf),
        Kind::Bool | Kind::F16 | Kind::Unicode | Kind::Bytes => return None,
    })
}

/// Copies rows `r0..r0+nb` of a Fortran-ordered array into `out`, each row's
/// elements in C order of the remaining axes.
fn gather_fortran(data: &[u8], layout: &Layout, r0: usize, nb: usize, out: &mut Vec<u8>) -> Result<(), ReadError> {
    let isz = layout.dtype.size;
    let n = layout.shape[0];
    let rest = &layout.shape[1..];
    let row_elems = layout.row_elems;
    // All offsets below are < data_bytes, which was checked to fit the file,
    // and with no zero axis every stride product is at most row_elems.
    out.clear();
    out.resize(nb * layout.row_bytes, 0);
    if row_elems == 0 {
        return Ok(());
    }
    // C-order strides (in elements) of the remaining axes.
    let mut cstride = vec![1usize; rest.len()];
    for k in (0..rest.len().saturating_sub(1)).rev() {
        cstride[k] = cstride[k + 1] * rest[k + 1];
    }
    let mut idx = vec![0usize; rest.len()];
    let mut c = 0usize;
    let corrupt = || ReadError::new("internal: Fortran-order offset out of range");
    for m in 0..row_elems {
        // Element (r, idx...) sits at r + n*m in column-major order.
        let start = (r0 + n * m) * isz;
        let src = data.get(start..start + nb * isz).ok_or_else(corrupt)?;
        for (i, elem) in src.chunks_exact(isz).enumerate() {
            let dst = (i * row_elems + c) * isz;
            out.get_mut(dst..dst + isz).ok_or_else(corrupt)?.copy_from_slice(elem);
        }
        // Advance the column-major counter over the remaining axes.
        for k in 0..rest.len() {
            idx[k] += 1;
            c += cstride[k];
            if idx[k] < rest[k] {
                break;
            }
            c -= cstride[k] * rest[k];
            idx[k] = 0;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Memory-mapped arrays
// ---------------------------------------------------------------------------

/// A whole `.npy` image: a local file memory-mapped, or an object read
/// a unit's rows at a time.
struct Mapped {
    input: Arc<Input>,
    layout: Layout,
    data_offset: usize,
    /// The data region as an Arrow buffer, when it can be used zero-copy.
    zero_copy: Option<Buffer>,
    /// An object's whole data, when its rows are spread over all of it
    /// (Fortran order): fetched once, by the first unit read.
    whole: std::sync::OnceLock<Bytes>,
}

impl Mapped {
    fn open(input: Input) -> Result<Mapped, ReadError> {
        if input.size() < 8 {
            return Err(ReadError::new("not a NumPy .npy file: too short"));
        }
        #[cfg(unix)]
        if let Some(map) = input.map() {
            let _ = map.advise(memmap2::Advice::Sequential);
        }
        Mapped::new(Arc::new(input))
    }

    fn new(input: Arc<Input>) -> Result<Mapped, ReadError> {
        let avail = input.size();
        // The header: its first bytes, then (rarely) as far as it says it runs.
        let mut head = input.bytes(0..avail.min(4096))?;
        if let Some(end) = header_end(&head)
            && end > head.len() as u64
        {
            head = input.bytes(0..end.min(avail).min(MAX_HEADER + 12))?;
        }
        let raw = read_header(&mut &head[..], avail)?;
        let dtype = Dtype::from_descr(&raw.descr)?;
        let layout = Layout::new(&raw, dtype)?;
        // read_header checked data_offset <= avail.
        layout.check_holds(avail - raw.data_offset, "file")?;
        let data_offset = raw.data_offset as usize;
        let data_len = layout.data_bytes as usize;
        let native = dtype.big == cfg!(target_endian = "big") || dtype.size == 1;
        let mut zero_copy = None;
        if native
            && layout.contiguous
            && data_len > 0
            && dtype.kind.zero_copy()
            && let Some(map) = input.map()
        {
            let region = map.get(data_offset..data_offset + data_len);
            if let Some(region) = region {
                let ptr = region.as_ptr();
                if (ptr as usize).is_multiple_of(dtype.size) {
                    let owner: Arc<Mmap> = Arc::clone(map);
                    // SAFETY: `ptr..ptr+data_len` lies inside the mapping,
                    // which `owner` keeps alive for the buffer's lifetime.
                    let buf = unsafe { Buffer::from_custom_allocation(NonNull::from(region).cast(), data_len, owner) };
                    zero_copy = Some(buf);
                }
            }
        }
        Ok(Mapped {
            input,
            layout,
            data_offset,
            zero_copy,
            whole: std::sync::OnceLock::new(),
        })
    }

    /// The data of rows `r0..r1` (of all rows, when their elements are
    /// spread over the data), and the row it starts at: a view of the map,
    /// or one ranged request for an object (the whole data once).
    fn load(&self, r0: u64, r1: u64) -> Result<(u64, Bytes), ReadError> {
        let l = &self.layout;
        let at = self.data_offset as u64;
        if !l.contiguous {
            let all = at..at + l.data_bytes;
            if !self.input.is_remote() {
                return Ok((0, self.input.bytes(all)?));
            }
            if let Some(b) = self.whole.get() {
                return Ok((0, b.clone()));
            }
            let b = self.input.bytes(all)?;
            return Ok((0, self.whole.get_or_init(|| b).clone()));
        }
        let rb = l.row_bytes as u64;
        Ok((r0, self.input.bytes(at + r0 * rb..at + r1 * rb)?))
    }

    /// The column array for rows `r0..r0+nb`, from `data` ([`Mapped::load`]).
    fn batch(&self, r0: usize, nb: usize, data: &(u64, Bytes), scratch: &mut Vec<u8>) -> Result<ArrayRef, ReadError> {
        let l = &self.layout;
        let (start, len) = (r0 * l.row_bytes, nb * l.row_bytes);
        if let Some(buf) = &self.zero_copy {
            let slice = buf.slice_with_length(start, len);
            if let Some(values) = zero_copy_array(l.dtype.kind, slice) {
                return l.column(values, nb);
            }
        }
        let (base, data) = (data.0 as usize, &data.1);
        let bytes = if l.contiguous {
            let from = start - base * l.row_bytes;
            let bytes = data
                .get(from..from + len)
                .ok_or_else(|| ReadError::new("internal: batch out of range"))?;
            // An object's aligned native rows go to Arrow without a copy too.
            let native = l.dtype.big == cfg!(target_endian = "big") || l.dtype.size == 1;
            if native
                && len > 0
                && l.dtype.kind.zero_copy()
                && (bytes.as_ptr() as usize).is_multiple_of(l.dtype.size)
                && let Some(values) = zero_copy_array(l.dtype.kind, Buffer::from(data.slice(from..from + len)))
            {
                return l.column(values, nb);
            }
            bytes
        } else {
            gather_fortran(data, l, r0, nb, scratch)?;
            &scratch[..]
        };
        let values = decode(l.dtype, bytes, r0 as u64, l.row_elems)?;
        l.column(values, nb)
    }
}

/// Where a `.npy` header ends, from its first 12 bytes (`None` when they
/// are not there or say no known version).
fn header_end(head: &[u8]) -> Option<u64> {
    match head.get(6)? {
        1 => Some(10 + u64::from(u16::from_le_bytes([*head.get(8)?, *head.get(9)?]))),
        2 | 3 => Some(12 + u64::from(u32::from_le_bytes(head.get(8..12)?.try_into().ok()?))),
        _ => None,
    }
}

/// Builds a batch from columns, keeping the row count when there are none.
fn record_batch(schema: &SchemaRef, cols: Vec<ArrayRef>, rows: usize) -> Result<RecordBatch, ReadError> {
    let opts = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(Arc::clone(schema), cols, &opts)?)
}

// ---------------------------------------------------------------------------
// .npy
// ---------------------------------------------------------------------------

/// A `.npy` file: one column named by the file's stem.
pub(crate) struct NpySource {
    columns: Vec<String>,
    mapped: Mapped,
    rows_per_unit: u64,
    units: usize,
}

impl NpySource {
    /// Maps the file and validates its header against its size.
    pub(crate) fn open(path: &Path) -> Result<Self, ReadError> {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mapped = Mapped::open(Input::open(path)?)?;
        let l = &mapped.layout;
        let batch_elems = (l.rows_per_batch as u64).saturating_mul(l.row_elems as u64);
        let batches_per_unit = (UNIT_ELEMS as u64 / batch_elems.max(1)).max(1);
        let rows_per_unit = (l.rows_per_batch as u64).saturating_mul(batches_per_unit);
        let units = usize::try_from(l.rows.div_ceil(rows_per_unit)).map_err(|_| ReadError::new("too many rows"))?;
        Ok(NpySource {
            columns: vec![name],
            mapped,
            rows_per_unit,
            units,
        })
    }
}

impl Source for NpySource {
    fn columns(&self) -> &[String] {
        &self.columns
    }

    fn stored_type(&self, _column: usize) -> Option<DataType> {
        Some(self.mapped.layout.dtype.stored_type())
    }

    fn units(&self) -> usize {
        self.units
    }

    fn read(
        &self,
        unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        if unit >= self.units {
            return Err(ReadError::new(format!("no unit {unit} (the file has {})", self.units)));
        }
        if let Some(&bad) = projection.iter().find(|&&c| c != 0) {
            return Err(ReadError::new(format!("no column {bad} (a .npy file has one)")));
        }
        let l = &self.mapped.layout;
        let field = Field::new(&self.columns[0], l.arrow_type(), false);
        let schema: SchemaRef = Arc::new(Schema::new(vec![field; projection.len()]));
        // unit < units, so these fit: rows <= data bytes or MAX_EMPTY_ROWS.
        let start = unit as u64 * self.rows_per_unit;
        let end = start.saturating_add(self.rows_per_unit).min(l.rows);
        let mut scratch = Vec::new();
        let data = match projection.len() {
            0 => None,
            _ => Some(self.mapped.load(start, end)?),
        };
        let mut r = start;
        while r < end {
            let nb = (end - r).min(l.rows_per_batch as u64) as usize;
            let cols = match &data {
                None => Vec::new(),
                Some(data) => {
                    let n = projection.len();
                    let col = self.mapped.batch(r as usize, nb, data, &mut scratch)?;
                    vec![col; n]
                }
            };
            sink(Batch {
                first_row: r,
                batch: record_batch(&schema, cols, nb)?,
            })?;
            r += nb as u64;
        }
        // The unit's pages were checked: the kernel may drop them, so that
        // resident memory stays at the units in flight, not the file. (Per
        // unit: releasing per batch cost a quarter of the run in TLB work.)
        if l.contiguous
            && !projection.is_empty()
            && let Some(map) = self.mapped.input.map()
        {
            let (at, len) = (start as usize * l.row_bytes, (end - start) as usize * l.row_bytes);
            storage::release(map, self.mapped.data_offset + at, len);
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// .npz
// ---------------------------------------------------------------------------

/// What the header of one `.npz` member said.
#[derive(Debug, Clone)]
struct Ready {
    layout: Layout,
    data_offset: u64,
}

#[derive(Debug, Clone)]
struct Member {
    /// Name inside the archive, e.g. `labels.npy`.
    name: String,
    /// Index inside the archive.
    index: usize,
    /// The member's layout, or why it cannot be read (reported when it is
    /// projected, so unreadable members never block the others).
    state: Result<Ready, ReadError>,
    /// Its length along axis 0, when its header says one.
    rows: Option<u64>,
}

/// A `.npz` archive: each `x.npy` member is a column `x`; rows are the
/// members' common length. Read as one unit.
pub(crate) struct NpzSource {
    path: PathBuf,
    columns: Vec<String>,
    members: Vec<Member>,
}

/// Bytes per request when an archive in storage is read.
const ZIP_BLOCK: usize = 8 << 20;

type Archive = ZipArchive<storage::Seekable>;

/// The archive at `path`; an object's read in requests of `block` bytes
/// (small to read headers, [`ZIP_BLOCK`] to stream members).
fn open_archive(path: &Path, block: usize) -> Result<Archive, ReadError> {
    let zipped = storage::seekable(path, block)?;
    ZipArchive::new(zipped).map_err(|e| ReadError::new(format!("not a valid .npz (zip) archive: {e}")))
}

fn zip_err(e: zip::result::ZipError) -> ReadError {
    ReadError::new(e.to_string())
}

fn member_at(name: &str) -> String {
    format!("member {name}")
}

impl NpzSource {
    /// Reads the archive's directory and every `.npy` member's header.
    pub(crate) fn open(path: &Path) -> Result<Self, ReadError> {
        let mut archive = open_archive(path, 64 << 10)?;
        let mut members = Vec::new();
        for index in 0..archive.len() {
            let name = match archive.name_for_index(index) {
                Some(Ok(n)) => n.into_owned(),
                Some(Err(e)) => return Err(zip_err(e)),
                None => continue,
            };
            if !name.ends_with(".npy") {
                continue;
            }
            let (state, rows) = match archive.by_index(index) {
                Ok(mut zf) => {
                    let size = zf.size();
                    match read_header(&mut zf, size) {
                        Ok(raw) => {
                            let rows = raw.shape.first().copied();
                            let state = Dtype::from_descr(&raw.descr)
                                .and_then(|d| Layout::new(&raw, d))
                                .and_then(|layout| {
                                    layout.check_holds(size - raw.data_offset, "member")?;
                                    Ok(Ready {
                                        layout,
                                        data_offset: raw.data_offset,
                                    })
                                });
                            (state, rows)
                        }
                        Err(e) => (Err(e), None),
                    }
                }
                Err(e) => (Err(zip_err(e)), None),
            };
            let state = state.map_err(|e| e.at(member_at(&name)));
            members.push(Member {
                name,
                index,
                state,
                rows,
            });
        }
        let columns = members
            .iter()
            .map(|m| m.name.strip_suffix(".npy").unwrap_or(&m.name).to_string())
            .collect();
        Ok(NpzSource {
            path: path.to_path_buf(),
            columns,
            members,
        })
    }

    /// The rows of a read of the members at `projection`: their common
    /// length along axis 0. Only the members read must agree, as
    /// `np.load(f)[name]` reads one member and never looks at the others (a
    /// flat `tokens` beside per-document `offsets` is a common layout); a
    /// read of no member (row counting) needs every member to agree.
    fn rows(&self, projection: &[usize]) -> Result<u64, ReadError> {
        let all: Vec<usize> = (0..self.members.len()).collect();
        let read = if projection.is_empty() { &all[..] } else { projection };
        let mut lengths = read
            .iter()
            .filter_map(|&c| self.members.get(c))
            .filter_map(|m| m.rows.map(|n| (&m.name, n)));
        let Some((first, rows)) = lengths.next() else {
            return Ok(0);
        };
        match lengths.find(|l| l.1 != rows) {
            Some((other, n)) => Err(ReadError::new(format!(
                "members differ in length along axis 0: {first} has {rows} rows, {other} has {n}"
            ))),
            None => Ok(rows),
        }
    }
}

/// One projected member while reading.
enum Col<'a> {
    /// Streamed in row order (C-ordered data).
    Stream {
        zf: ZipFile<'a, storage::Seekable>,
        read: u64,
        buf: Vec<u8>,
    },
    /// Spilled to a temporary file and mapped (Fortran-ordered data, whose
    /// rows are spread across the whole member).
    Mapped {
        mapped: Mapped,
        scratch: Vec<u8>,
        /// Keeps the temporary file until reading is done.
        _spill: Spill,
    },
}

/// A temporary file removed when dropped.
struct Spill {
    path: PathBuf,
}

impl Drop for Spill {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Copies a member to a temporary file and maps it.
fn spill(zf: &mut impl Read) -> Result<(Mapped, Spill), ReadError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("preflight-npz-{}-{n}.npy", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    let guard = Spill { path };
    io::copy(zf, &mut file)?;
    let mapped = Mapped::open(Input::open(&guard.path)?)?;
    // Unix keeps a mapped file alive after unlinking; elsewhere the guard
    // removes it once reading is done.
    #[cfg(unix)]
    let _ = std::fs::remove_file(&guard.path);
    Ok((mapped, guard))
}

impl Col<'_> {
    fn next(&mut self, ready: &Ready, r0: u64, nb: usize) -> Result<ArrayRef, ReadError> {
        let l = &ready.layout;
        match self {
            Col::Mapped { mapped, scratch, .. } => {
                let data = mapped.load(r0, r0 + nb as u64)?;
                mapped.batch(r0 as usize, nb, &data, scratch)
            }
            Col::Stream { zf, read, buf } => {
                let want = nb * l.row_bytes;
                buf.clear();
                buf.reserve(want.min(16 << 20));
                let got = zf.by_ref().take(want as u64).read_to_end(buf)?;
                *read += got as u64;
                if got < want {
                    return Err(ReadError::new(format!(
                        "truncated: header says {} bytes of data, member holds {read}",
                        l.data_bytes
                    )));
                }
                let values = decode(l.dtype, buf, r0, l.row_elems)?;
                l.column(values, nb)
            }
        }
    }
}

impl Source for NpzSource {
    fn columns(&self) -> &[String] {
        &self.columns
    }

    fn stored_type(&self, column: usize) -> Option<DataType> {
        let ready = self.members.get(column)?.state.as_ref().ok()?;
        Some(ready.layout.dtype.stored_type())
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
            return Err(ReadError::new(format!("no unit {unit} (a .npz file has 1)")));
        }
        let mut picked = Vec::with_capacity(projection.len());
        for &c in projection {
            let m = self
                .members
                .get(c)
                .ok_or_else(|| ReadError::new(format!("no column {c}")))?;
            let ready = m.state.as_ref().map_err(Clone::clone)?;
            picked.push((m, ready));
        }
        let rows = self.rows(projection)?;
        let fields: Vec<Field> = projection
            .iter()
            .zip(&picked)
            .map(|(&c, (_, r))| Field::new(&self.columns[c], r.layout.arrow_type(), false))
            .collect();
        let schema: SchemaRef = Arc::new(Schema::new(fields));

        // One archive per projected member, so each has its own stream.
        let mut archives = Vec::with_capacity(picked.len());
        for _ in &picked {
            archives.push(open_archive(&self.path, ZIP_BLOCK)?);
        }
        let mut cols = Vec::with_capacity(picked.len());
        for ((m, ready), archive) in picked.iter().zip(archives.iter_mut()) {
            let at = || member_at(&m.name);
            let mut zf = archive.by_index(m.index).map_err(|e| zip_err(e).at(at()))?;
            if ready.layout.contiguous {
                let skipped = io::copy(&mut zf.by_ref().take(ready.data_offset), &mut io::sink())
                    .map_err(|e| ReadError::from(e).at(at()))?;
                if skipped < ready.data_offset {
                    return Err(truncated_header(ready.data_offset, skipped).at(at()));
                }
                cols.push(Col::Stream {
                    zf,
                    read: 0,
                    buf: Vec::new(),
                });
            } else {
                let (mapped, guard) = spill(&mut zf).map_err(|e| e.at(at()))?;
                if mapped.layout.rows != rows {
                    return Err(ReadError::new("member changed while being read").at(at()));
                }
                cols.push(Col::Mapped {
                    mapped,
                    scratch: Vec::new(),
                    _spill: guard,
                });
            }
        }

        let rows_per_batch = picked
            .iter()
            .map(|(_, r)| r.layout.rows_per_batch)
            .min()
            .unwrap_or(BATCH_ROWS);
        let mut r = 0u64;
        while r < rows {
            let nb = (rows - r).min(rows_per_batch as u64) as usize;
            let mut arrays = Vec::with_capacity(cols.len());
            for (col, (m, ready)) in cols.iter_mut().zip(&picked) {
                arrays.push(col.next(ready, r, nb).map_err(|e| e.at(member_at(&m.name)))?);
            }
            sink(Batch {
                first_row: r,
                batch: record_batch(&schema, arrays, nb)?,
            })?;
            r += nb as u64;
        }
        // Drain each stream so the zip layer verifies its checksum.
        for (col, (m, _)) in cols.iter_mut().zip(&picked) {
            if let Col::Stream { zf, .. } = col {
                io::copy(zf, &mut io::sink()).map_err(|e| ReadError::from(e).at(member_at(&m.name)))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};
    use std::collections::HashMap;
    use std::process::Command;

    /// Runs numpy code in `dir`; numpy is required for these tests.
    fn py(dir: &Path, code: &str) -> String {
        let script = format!(
            "import numpy as np, os\nos.chdir({:?})\n{code}",
            dir.display().to_string()
        );
        let out = Command::new(crate::source::test_python())
            .arg("-c")
            .arg(&script)
            .output()
            .expect("numpy is required for these tests: run ./run-tests.sh");
        assert!(
            out.status.success(),
            "python failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf8")
    }

    #[derive(Debug, Clone)]
    enum Val {
        I(i128),
        F(f64),
        S(String),
    }

    impl PartialEq for Val {
        fn eq(&self, o: &Val) -> bool {
            match (self, o) {
                (Val::I(a), Val::I(b)) => a == b,
                (Val::F(a), Val::F(b)) => a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                (Val::S(a), Val::S(b)) => a == b,
                _ => false,
            }
        }
    }

    /// Parses Python `repr`s of ints, floats and bools.
    fn parse_py(tok: &str) -> Val {
        match tok {
            "True" => Val::I(1),
            "False" => Val::I(0),
            t => t
                .parse::<i128>()
                .map(Val::I)
                .unwrap_or_else(|_| Val::F(t.parse().expect(t))),
        }
    }

    /// Every leaf value of a column, in order.
    fn leaves(a: &dyn Array) -> Vec<Val> {
        macro_rules! p {
            ($t:ty, $f:expr) => {
                a.as_primitive::<$t>().values().iter().map(|&v| $f(v)).collect()
            };
        }
        match a.data_type() {
            DataType::FixedSizeList(_, size) => {
                let l = a.as_fixed_size_list();
                let n = *size as usize;
                leaves(&l.values().slice(l.offset() * n, l.len() * n))
            }
            DataType::Boolean => a
                .as_boolean()
                .iter()
                .map(|v| Val::I(v.expect("no nulls") as i128))
                .collect(),
            DataType::Int8 => p!(Int8Type, |v| Val::I(v as i128)),
            DataType::Int16 => p!(Int16Type, |v| Val::I(v as i128)),
            DataType::Int32 => p!(Int32Type, |v| Val::I(v as i128)),
            DataType::Int64 => p!(Int64Type, |v| Val::I(v as i128)),
            DataType::UInt8 => p!(UInt8Type, |v| Val::I(v as i128)),
            DataType::UInt16 => p!(UInt16Type, |v| Val::I(v as i128)),
            DataType::UInt32 => p!(UInt32Type, |v| Val::I(v as i128)),
            DataType::UInt64 => p!(UInt64Type, |v| Val::I(v as i128)),
            DataType::Float32 => p!(Float32Type, |v: f32| Val::F(v as f64)),
            DataType::Float64 => p!(Float64Type, Val::F),
            DataType::Utf8 => a
                .as_string::<i32>()
                .iter()
                .map(|v| Val::S(v.expect("no nulls").into()))
                .collect(),
            t => panic!("unexpected type {t}"),
        }
    }

    /// Reads every unit in order.
    fn read_all(src: &dyn Source, proj: &[usize]) -> Vec<Batch> {
        let mut out = Vec::new();
        for u in 0..src.units() {
            src.read(u, proj, &mut |b| {
                out.push(b);
                Ok(())
            })
            .expect("read");
        }
        out
    }

    /// Column `col` of every batch, concatenated.
    fn column_values(batches: &[Batch], col: usize) -> Vec<Val> {
        batches
            .iter()
            .flat_map(|b| leaves(b.batch.column(col).as_ref()))
            .collect()
    }

    fn ints(range: impl Iterator<Item = i128>) -> Vec<Val> {
        range.map(Val::I).collect()
    }

    fn open_err(path: &Path) -> ReadError {
        match NpySource::open(path) {
            Ok(_) => panic!("{} opened", path.display()),
            Err(e) => e,
        }
    }

    /// A hand-made `.npy` file: header text padded (or not) as given.
    fn write_npy(path: &Path, major: u8, header: &str, data: &[u8]) {
        let mut f = b"\x93NUMPY".to_vec();
        f.extend([major, 0]);
        if major == 1 {
            f.extend((header.len() as u16).to_le_bytes());
        } else {
            f.extend((header.len() as u32).to_le_bytes());
        }
        f.extend(header.as_bytes());
        f.extend(data);
        std::fs::write(path, f).expect("write");
    }

    #[test]
    fn every_dtype_round_trips() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = py(
            dir.path(),
            r#"
cases = {
  'i1': np.array([-128, -1, 0, 1, 127], '<i1'),
  'i2': np.array([-32768, -1, 0, 32767], '<i2'),
  'i4': np.array([-2**31, 0, 2**31 - 1], '<i4'),
  'i8': np.array([-2**63, -1, 0, 2**63 - 1], '<i8'),
  'u1': np.array([0, 7, 255], '|u1'),
  'u2': np.array([0, 65535], '<u2'),
  'u4': np.array([0, 2**32 - 1], '<u4'),
  'u8': np.array([0, 1, 2**63, 18446744073709551615], '<u8'),
  'f2': np.array([0.5, -2.0, 65504.0, 6e-8, -0.0, np.inf, np.nan, 0.1], '<f2'),
  'f4': np.array([0.1, -1e30, 3.5, np.inf, -np.inf, np.nan], '<f4'),
  'f8': np.array([0.1, 1e300, -5e-324, np.nan, 1e20], '<f8'),
  'b1': np.array([True, False, True]),
  'be_i2': np.array([-2, 300], '>i2'),
  'be_i4': np.array([-2, 1, 2**31 - 1]).astype('>i4'),
  'be_i8': np.array([-2**63, 5]).astype('>i8'),
  'be_u4': np.array([1, 2**32 - 1]).astype('>u4'),
  'be_u8': np.array([1, 18446744073709551615], dtype=np.uint64).astype('>u8'),
  'be_f2': np.array([0.1, -3, 6e-8]).astype('>f2'),
  'be_f4': np.array([0.1, -3]).astype('>f4'),
  'be_f8': np.array([0.1, -2.5]).astype('>f8'),
}
for name, a in cases.items():
    np.save(name + '.npy', a)
    print(name, a.dtype.str, ' '.join(repr(x) for x in a.ravel().tolist()))
"#,
        );
        let types: HashMap<&str, DataType> = [
            ("i1", DataType::Int8),
            ("i2", DataType::Int16),
            ("i4", DataType::Int32),
            ("i8", DataType::Int64),
            ("u1", DataType::UInt8),
            ("u2", DataType::UInt16),
            ("u4", DataType::UInt32),
            ("u8", DataType::UInt64),
            ("f2", DataType::Float32),
            ("f4", DataType::Float32),
            ("f8", DataType::Float64),
            ("b1", DataType::Boolean),
        ]
        .into();
        let mut seen = 0;
        for line in out.lines() {
            let mut toks = line.split(' ');
            let name = toks.next().expect("name");
            let descr = toks.next().expect("descr");
            let want: Vec<Val> = toks.map(parse_py).collect();
            let src = NpySource::open(&dir.path().join(format!("{name}.npy"))).expect(name);
            assert_eq!(src.columns(), [name.to_string()]);
            assert_eq!(src.units(), 1);
            let batches = read_all(&src, &[0]);
            assert_eq!(batches.len(), 1);
            assert_eq!(batches[0].first_row, 0);
            let col = batches[0].batch.column(0);
            let short = name.trim_start_matches("be_");
            assert_eq!(col.data_type(), &types[short], "{name}");
            assert_eq!(leaves(col.as_ref()), want, "{name} ({descr})");
            if descr.starts_with('>') {
                assert!(src.mapped.zero_copy.is_none());
            }
            seen += 1;
        }
        assert_eq!(seen, 20);
        // The largest uint64 stays itself, never -1.
        let src = NpySource::open(&dir.path().join("u8.npy")).expect("u8");
        let b = read_all(&src, &[0]);
        let v = b[0].batch.column(0).as_primitive::<UInt64Type>().value(3);
        assert_eq!(v, u64::MAX);
    }

    #[test]
    fn every_float16_widens_exactly() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = py(
            dir.path(),
            r#"
a = np.arange(65536, dtype=np.uint16).view('<f2')
np.save('h.npy', a)
np.save('hb.npy', a.astype('>f2'))
print(' '.join(str(x) for x in a.astype(np.float32).view(np.uint32).tolist()))
"#,
        );
        let want: Vec<u32> = out.split_whitespace().map(|t| t.parse().expect("u32")).collect();
        assert_eq!(want.len(), 65536);
        for file in ["h.npy", "hb.npy"] {
            let src = NpySource::open(&dir.path().join(file)).expect(file);
            let got: Vec<u32> = read_all(&src, &[0])
                .iter()
                .flat_map(|b| {
                    let a = b.batch.column(0).as_primitive::<Float32Type>().clone();
                    a.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                })
                .collect();
            assert_eq!(got, want, "{file}");
        }
    }

    #[test]
    fn strings_become_utf8() {
        let dir = tempfile::tempdir().expect("tempdir");
        py(
            dir.path(),
            r#"
np.save('u.npy', np.array(['a', 'héllo', '', '日本']))
np.save('ub.npy', np.array(['xy', 'z']).astype('>U3'))
np.save('s.npy', np.array([b'ab', b'c', b'']))
np.save('u2.npy', np.array([['a', 'bc'], ['', 'd']]))
np.save('bad.npy', np.array([b'\xff']))
"#,
        );
        let get = |f: &str| {
            let src = NpySource::open(&dir.path().join(f)).expect(f);
            let b = read_all(&src, &[0]);
            column_values(&b, 0)
        };
        let s = |v: &[&str]| v.iter().map(|s| Val::S(s.to_string())).collect::<Vec<_>>();
        assert_eq!(get("u.npy"), s(&["a", "héllo", "", "日本"]));
        assert_eq!(get("ub.npy"), s(&["xy", "z"]));
        assert_eq!(get("s.npy"), s(&["ab", "c", ""]));
        assert_eq!(get("u2.npy"), s(&["a", "bc", "", "d"]));
        let src = NpySource::open(&dir.path().join("bad.npy")).expect("bad");
        let e = src.read(0, &[0], &mut |_| Ok(())).expect_err("invalid utf-8");
        assert!(e.message.contains("row 0") && e.message.contains("UTF-8"), "{e}");
    }

    #[test]
    fn c_ordered_matrix_is_fixed_size_list() {
        let dir = tempfile::tempdir().expect("tempdir");
        py(
            dir.path(),
            "np.save('m.npy', np.arange(24, dtype=np.int32).reshape(6, 4))",
        );
        let src = NpySource::open(&dir.path().join("m.npy")).expect("open");
        let b = read_all(&src, &[0]);
        assert_eq!(b.len(), 1);
        let col = b[0].batch.column(0);
        assert_eq!(
            col.data_type(),
            &DataType::FixedSizeList(list_field(DataType::Int32), 4)
        );
        assert_eq!(col.len(), 6);
        assert_eq!(leaves(col.as_ref()), ints(0..24));
        assert!(src.mapped.zero_copy.is_some());
    }

    #[test]
    fn fortran_order_rows_come_out_in_c_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = py(
            dir.path(),
            r#"
np.save('f2.npy', np.asfortranarray(np.arange(35, dtype=np.float64).reshape(5, 7)))
np.save('f3.npy', np.asfortranarray(np.arange(60).reshape(3, 4, 5)))
np.save('fb.npy', np.asfortranarray(np.arange(12).reshape(3, 2, 2).astype('>i2')))
big = (np.arange(3000 * 700) % 30000).astype('<i2').reshape(3000, 700)
np.save('fbig.npy', np.asfortranarray(big))
for f in ['f2.npy', 'f3.npy', 'fb.npy', 'fbig.npy']:
    print(b"'fortran_order': True" in open(f, 'rb').read(200))
"#,
        );
        assert_eq!(out.split_whitespace().collect::<Vec<_>>(), ["True"; 4]);
        let check = |f: &str, size: i32, rows: usize, want: Vec<Val>| {
            let src = NpySource::open(&dir.path().join(f)).expect(f);
            assert!(src.mapped.zero_copy.is_none());
            let b = read_all(&src, &[0]);
            let got_rows: usize = b.iter().map(|b| b.batch.num_rows()).sum();
            assert_eq!(got_rows, rows, "{f}");
            match b[0].batch.column(0).data_type() {
                DataType::FixedSizeList(_, s) => assert_eq!(*s, size, "{f}"),
                t => panic!("{f}: {t}"),
            }
            assert_eq!(column_values(&b, 0), want, "{f}");
            b
        };
        let floats = (0..35).map(|v| Val::F(v as f64)).collect();
        check("f2.npy", 7, 5, floats);
        check("f3.npy", 20, 3, ints(0..60));
        check("fb.npy", 4, 3, ints(0..12));
        let b = check("fbig.npy", 700, 3000, ints((0..3000 * 700).map(|v| v % 30000)));
        // 1M elements per batch: 1497 rows of 700.
        let firsts: Vec<u64> = b.iter().map(|b| b.first_row).collect();
        assert_eq!(firsts, [0, 1497, 2994]);
    }

    #[test]
    fn large_array_is_batched_zero_copy() {
        let dir = tempfile::tempdir().expect("tempdir");
        py(
            dir.path(),
            "np.save('big.npy', np.arange(200_000, dtype=np.int64) * 7 - 5)",
        );
        let src = NpySource::open(&dir.path().join("big.npy")).expect("open");
        assert_eq!(src.units(), 1);
        let m = src.mapped.input.map().expect("mapped");
        let map = m.as_ptr() as usize..m.as_ptr() as usize + m.len();
        let b = read_all(&src, &[0]);
        let firsts: Vec<(u64, usize)> = b.iter().map(|b| (b.first_row, b.batch.num_rows())).collect();
        assert_eq!(firsts, [(0, 65536), (65536, 65536), (131072, 65536), (196608, 3392)]);
        for batch in &b {
            let a = batch.batch.column(0).as_primitive::<Int64Type>();
            assert!(map.contains(&(a.values().as_ptr() as usize)), "not zero-copy");
        }
        assert_eq!(column_values(&b, 0), ints((0..200_000).map(|v| v * 7 - 5)));
    }

    /// Reads units in reverse and checks every row comes exactly once.
    fn check_units(src: &NpySource, rows: usize, units: usize, value: impl Fn(usize) -> i128) {
        assert_eq!(src.units(), units);
        let mut seen = vec![0u8; rows];
        for u in (0..units).rev() {
            let mut last_end = None;
            src.read(u, &[0], &mut |b| {
                let first = b.first_row as usize;
                if let Some(end) = last_end {
                    assert_eq!(first, end, "batches of a unit are in row order");
                }
                let vals = leaves(b.batch.column(0).as_ref());
                let per_row = vals.len() / b.batch.num_rows();
                for (k, v) in vals.iter().enumerate() {
                    assert_eq!(*v, Val::I(value(first * per_row + k)));
                }
                for s in &mut seen[first..first + b.batch.num_rows()] {
                    *s += 1;
                }
                last_end = Some(first + b.batch.num_rows());
                Ok(())
            })
            .expect("read");
        }
        assert!(seen.iter().all(|&s| s == 1));
    }

    #[test]
    fn units_cover_every_row_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        py(
            dir.path(),
            r#"
np.save('u.npy', (np.arange(10_000_000) % 251).astype(np.uint8))
np.save('w.npy', (np.arange(5000 * 1000) % 127).astype(np.int8).reshape(5000, 1000))
"#,
        );
        let src = NpySource::open(&dir.path().join("u.npy")).expect("u");
        check_units(&src, 10_000_000, 3, |i| (i % 251) as i128);
        let src = NpySource::open(&dir.path().join("w.npy")).expect("w");
        // 1048 rows per batch, 4 batches per unit.
        check_units(&src, 5000, 2, |i| (i % 127) as i128);
        let e = src.read(2, &[0], &mut |_| Ok(())).expect_err("no unit 2");
        assert!(e.message.contains("no unit 2"), "{e}");
        let e = src.read(0, &[1], &mut |_| Ok(())).expect_err("no column 1");
        assert!(e.message.contains("no column 1"), "{e}");
    }

    #[test]
    fn header_versions_and_odd_alignment() {
        let dir = tempfile::tempdir().expect("tempdir");
        py(
            dir.path(),
            r#"
a = np.arange(10, dtype=np.int64) - 3
for v in [(1, 0), (2, 0), (3, 0)]:
    with open('v%d.npy' % v[0], 'wb') as f:
        np.lib.format.write_array(f, a, version=v)
"#,
        );
        for v in 1..=3 {
            let path = dir.path().join(format!("v{v}.npy"));
            assert_eq!(std::fs::read(&path).expect("read")[6], v as u8);
            let src = NpySource::open(&path).expect("open");
            assert_eq!(column_values(&read_all(&src, &[0]), 0), ints(-3..7));
        }
        // Data at offset 81: misaligned for i8, so copied, still exact.
        let header = format!("{:<70}\n", "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }");
        let data: Vec<u8> = [1i64, -2, i64::MAX].iter().flat_map(|v| v.to_le_bytes()).collect();
        let path = dir.path().join("odd.npy");
        write_npy(&path, 1, &header, &data);
        let src = NpySource::open(&path).expect("odd");
        assert_eq!(src.mapped.data_offset % 8, 1);
        assert!(src.mapped.zero_copy.is_none());
        assert_eq!(
            column_values(&read_all(&src, &[0]), 0),
            ints([1, -2, i64::MAX as i128].into_iter())
        );
        // Python 2 longs, double quotes, native order.
        let header = "{\"descr\": \"=u2\", \"fortran_order\": False, \"shape\": (2L, 1L)}";
        let path = dir.path().join("py2.npy");
        write_npy(&path, 1, header, &[1, 0, 0, 1]);
        let src = NpySource::open(&path).expect("py2");
        assert_eq!(column_values(&read_all(&src, &[0]), 0), ints([1, 256].into_iter()));
        // np.load refuses a header with a key beside the three ("Header does
        // not contain the correct keys") and a shape that is not a tuple.
        for (name, header) in [
            (
                "key.npy",
                "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), 'x': None}",
            ),
            ("list.npy", "{'descr': '<u2', 'fortran_order': False, 'shape': [2]}"),
        ] {
            let path = dir.path().join(name);
            write_npy(&path, 1, header, &[1, 0, 0, 1]);
            let e = NpySource::open(&path).err().expect(name);
            assert!(e.message.contains("malformed .npy header"), "{name}: {e}");
        }
    }

    #[test]
    fn zero_sized_shapes() {
        let dir = tempfile::tempdir().expect("tempdir");
        py(
            dir.path(),
            r#"
np.save('e0.npy', np.zeros((0,), np.int64))
np.save('e50.npy', np.zeros((5, 0), np.int32))
np.save('e03.npy', np.zeros((0, 3), np.float32))
np.save('scalar.npy', np.array(5))
"#,
        );
        let rows = |f: &str| {
            let src = NpySource::open(&dir.path().join(f)).expect(f);
            let b = read_all(&src, &[0]);
            b.iter().map(|b| b.batch.num_rows()).sum::<usize>()
        };
        assert_eq!(rows("e0.npy"), 0);
        assert_eq!(rows("e03.npy"), 0);
        assert_eq!(rows("e50.npy"), 5);
        let src = NpySource::open(&dir.path().join("e50.npy")).expect("e50");
        let b = read_all(&src, &[0]);
        assert_eq!(
            b[0].batch.column(0).data_type(),
            &DataType::FixedSizeList(list_field(DataType::Int32), 0)
        );
        // Fortran order with a zero axis, even a hostile one, is just empty rows.
        for (name, shape) in [
            ("fz.npy", "(5, 0, 3)"),
            ("fzz.npy", "(2, 0, 1099511627776, 1099511627776)"),
        ] {
            let header = format!("{{'descr': '<i4', 'fortran_order': True, 'shape': {shape}, }}");
            let path = dir.path().join(name);
            write_npy(&path, 1, &header, &[]);
            let src = NpySource::open(&path).expect(name);
            let b = read_all(&src, &[0]);
            assert_eq!(b.len(), 1);
            assert_eq!(b[0].batch.column(0).len(), if name == "fz.npy" { 5 } else { 2 });
            assert!(leaves(b[0].batch.column(0).as_ref()).is_empty());
        }
        let e = open_err(&dir.path().join("scalar.npy"));
        assert!(e.message.contains("0-d"), "{e}");
    }

    #[test]
    fn empty_projection_counts_rows() {
        let dir = tempfile::tempdir().expect("tempdir");
        py(dir.path(), "np.save('a.npy', np.arange(70000))");
        let src = NpySource::open(&dir.path().join("a.npy")).expect("open");
        let b = read_all(&src, &[]);
        assert_eq!(
            b.iter().map(|b| (b.first_row, b.batch.num_rows())).collect::<Vec<_>>(),
            [(0, 65536), (65536, 4464)]
        );
        assert_eq!(b[0].batch.num_columns(), 0);
        // The same column twice.
        let b = read_all(&src, &[0, 0]);
        assert_eq!(b[0].batch.num_columns(), 2);
    }

    #[test]
    fn unsupported_dtypes_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        py(
            dir.path(),
            r#"
np.save('o.npy', np.array([1, 'a'], dtype=object), allow_pickle=True)
np.save('rec.npy', np.zeros(3, dtype=[('a', '<i4'), ('b', '<f8')]))
np.save('c.npy', np.zeros(3, dtype=np.complex128))
np.save('dt.npy', np.zeros(3, dtype='datetime64[ns]'))
np.save('v.npy', np.zeros(3, dtype='V4'))
"#,
        );
        for (f, msg) in [
            (
                "o.npy",
                "object arrays are not supported (pickled content is never loaded)",
            ),
            ("rec.npy", "structured"),
            ("c.npy", "complex"),
            ("dt.npy", "datetime"),
            ("v.npy", "void"),
        ] {
            let e = open_err(&dir.path().join(f));
            assert!(e.message.contains(msg), "{f}: {e}");
        }
    }

    #[test]
    fn hostile_files_give_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        py(dir.path(), "np.save('t.npy', np.arange(100, dtype=np.int64))");
        let path = dir.path().join("t.npy");
        let full = std::fs::read(&path).expect("read");
        std::fs::write(&path, &full[..full.len() - 10]).expect("cut");
        let e = open_err(&path);
        assert_eq!(e.message, "truncated: header says 800 bytes of data, file holds 790");
        // Every prefix of a valid file fails cleanly.
        for cut in 0..full.len() - 1 {
            std::fs::write(&path, &full[..cut]).expect("cut");
            let _ = open_err(&path);
        }
        let absurd = |name: &str, major: u8, header: &str, data: &[u8]| {
            let p = dir.path().join(name);
            write_npy(&p, major, header, data);
            open_err(&p).message
        };
        let m = absurd(
            "huge.npy",
            1,
            "{'descr': '<i8', 'fortran_order': False, 'shape': (1000000000000,), }",
            &[0; 16],
        );
        assert_eq!(m, "truncated: header says 8000000000000 bytes of data, file holds 16");
        let m = absurd(
            "ovf.npy",
            1,
            "{'descr': '<i8', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904), }",
            &[],
        );
        assert!(m.contains("overflows"), "{m}");
        let m = absurd(
            "ovf2.npy",
            1,
            "{'descr': '<U4611686018427387904', 'fortran_order': False, 'shape': (2,), }",
            &[],
        );
        assert!(m.contains("too wide") || m.contains("overflows"), "{m}");
        let m = absurd(
            "big_int.npy",
            1,
            "{'descr': '<i8', 'fortran_order': False, 'shape': (99999999999999999999999,), }",
            &[],
        );
        assert!(m.contains("too large"), "{m}");
        let m = absurd(
            "empty_rows.npy",
            1,
            "{'descr': '<i8', 'fortran_order': False, 'shape': (18446744073709551615, 0), }",
            &[],
        );
        assert!(m.contains("refusing"), "{m}");
        let m = absurd(
            "wide.npy",
            1,
            "{'descr': '<i1', 'fortran_order': False, 'shape': (0, 4294967296), }",
            &[],
        );
        assert!(m.contains("too wide"), "{m}");
        let m = absurd(
            "neg.npy",
            1,
            "{'descr': '<i8', 'fortran_order': False, 'shape': (-1,), }",
            &[],
        );
        assert!(m.contains("shape"), "{m}");
        let m = absurd(
            "eval.npy",
            1,
            "{'descr': __import__('os'), 'fortran_order': False, 'shape': (1,), }",
            &[0; 8],
        );
        assert!(m.contains("malformed"), "{m}");
        let deep = format!(
            "{{'descr': '<i8', 'fortran_order': False, 'shape': {}1{}, }}",
            "(".repeat(5000),
            ")".repeat(5000)
        );
        let m = absurd("deep.npy", 1, &deep, &[]);
        assert!(m.contains("nested too deeply"), "{m}");
        // Header length past the end of the file.
        let p = dir.path().join("hlen.npy");
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend(5000u16.to_le_bytes());
        bytes.extend([b' '; 90]);
        std::fs::write(&p, &bytes).expect("write");
        assert_eq!(
            open_err(&p).message,
            "truncated: header needs 5010 bytes, file holds 100"
        );
        let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
        bytes.extend(u32::MAX.to_le_bytes());
        std::fs::write(&p, &bytes).expect("write");
        assert!(open_err(&p).message.starts_with("truncated"));
        std::fs::write(&p, b"PK\x03\x04 not numpy at all").expect("write");
        assert!(open_err(&p).message.contains("bad magic"));
        std::fs::write(&p, b"").expect("write");
        assert!(open_err(&p).message.contains("too short"));
    }

    #[test]
    fn mutated_headers_never_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        py(
            dir.path(),
            "np.save('f.npy', np.asfortranarray(np.arange(24, dtype='>i2').reshape(2, 3, 4)))",
        );
        let full = std::fs::read(dir.path().join("f.npy")).expect("read");
        let path = dir.path().join("m.npy");
        for pos in 0..128 {
            for byte in [b'0', b'9', b'(', b')', b',', b'\'', b' ', 0xff, 0x00] {
                let mut bytes = full.clone();
                bytes[pos] = byte;
                std::fs::write(&path, &bytes).expect("write");
                if let Ok(src) = NpySource::open(&path) {
                    for u in 0..src.units() {
                        let _ = src.read(u, &[0], &mut |_| Ok(()));
                    }
                }
            }
        }
    }

    #[test]
    fn header_parser_never_panics() {
        let good = "{'descr': '<i8', 'fortran_order': False, 'shape': (3, 4), }";
        for cut in 0..good.len() {
            let _ = LitParser::parse(&good[..cut]);
        }
        // A simple deterministic byte soup drawn from header characters.
        let alphabet: Vec<char> = "{}()[]',:\" \\0123456789-LTrueFalsNonxu<i8>|".chars().collect();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            let len = (state % 40) as usize;
            let s: String = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    alphabet[(state % alphabet.len() as u64) as usize]
                })
                .collect();
            if let Ok(Lit::Dict(_)) = LitParser::parse(&s) {
                // Fine: it parsed; nothing else is required.
            }
            let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
            bytes.extend((s.len() as u16).to_le_bytes());
            bytes.extend(s.as_bytes());
            let _ = read_header(&mut &bytes[..], bytes.len() as u64);
        }
        assert_eq!(
            LitParser::parse("{'a': (1L,), \"b\": [True, None], 'c': '\\x41\\u00e9\\'', }").expect("parse"),
            Lit::Dict(vec![
                (Lit::Str("a".into()), Lit::Tuple(vec![Lit::Int { neg: false, val: 1 }])),
                (Lit::Str("b".into()), Lit::List(vec![Lit::Bool(true), Lit::None])),
                (Lit::Str("c".into()), Lit::Str("Aé'".into())),
            ])
        );
        for bad in [
            "{'a': 1.5}",
            "{'a' 1}",
            "{'a': 1,,}",
            "{'a': 'x",
            "{'a': os.system}",
            "{} x",
        ] {
            assert!(LitParser::parse(bad).is_err(), "{bad}");
        }
        let d = |s: &str| Dtype::parse(s);
        assert_eq!(d("|b1").expect("b1").kind, Kind::Bool);
        assert_eq!(d("?").expect("?").kind, Kind::Bool);
        assert_eq!(d("i4").expect("i4").kind, Kind::I32);
        assert!(d(">u2").expect("u2").big);
        assert!(!d("<f8").expect("f8").big);
        assert_eq!(d("=i8").expect("=").big, cfg!(target_endian = "big"));
        for bad in [
            "",
            "<",
            "<i3",
            "<f16",
            "|O",
            "<M8[ns]",
            "<m8",
            "<c8",
            "|V8",
            "<U0",
            "int64",
            "<i8x",
            "<U99999999999999999999",
        ] {
            assert!(d(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn npz_stored_and_compressed() {
        let dir = tempfile::tempdir().expect("tempdir");
        py(
            dir.path(),
            r#"
a = np.arange(100_000, dtype=np.int64) * 3
b = (np.arange(300_000, dtype=np.float32) / 4).reshape(100_000, 3)
c = np.asfortranarray((np.arange(100_000 * 4) % 1000).astype('>i4').reshape(100_000, 4))
np.savez('s.npz', a=a, b=b, c=c)
np.savez_compressed('z.npz', a=a, b=b, c=c)
"#,
        );
        for f in ["s.npz", "z.npz"] {
            let src = NpzSource::open(&dir.path().join(f)).expect(f);
            assert_eq!(src.columns(), ["a", "b", "c"]);
            assert_eq!(src.units(), 1);
            let b = read_all(&src, &[2, 0, 1]);
            let firsts: Vec<(u64, usize)> = b.iter().map(|b| (b.first_row, b.batch.num_rows())).collect();
            assert_eq!(firsts, [(0, 65536), (65536, 34464)], "{f}");
            let names: Vec<String> = b[0].batch.schema().fields().iter().map(|f| f.name().clone()).collect();
            assert_eq!(names, ["c", "a", "b"]);
            assert_eq!(column_values(&b, 0), ints((0..400_000).map(|v| v % 1000)), "{f}");
            assert_eq!(column_values(&b, 1), ints((0..100_000).map(|v| v * 3)), "{f}");
            let want: Vec<Val> = (0..300_000).map(|v| Val::F((v as f32 / 4.0) as f64)).collect();
            assert_eq!(column_values(&b, 2), want, "{f}");
            // Projection reads only what is asked for.
            let b = read_all(&src, &[1]);
            assert_eq!(b[0].batch.num_columns(), 1);
            assert_eq!(column_values(&b, 0).len(), 300_000);
            let b = read_all(&src, &[]);
            assert_eq!(b.iter().map(|b| b.batch.num_rows()).sum::<usize>(), 100_000);
            let e = src.read(1, &[0], &mut |_| Ok(())).expect_err("unit 1");
            assert!(e.message.contains("no unit 1"), "{e}");
        }
    }

    #[test]
    fn npz_errors_name_members() {
        let dir = tempfile::tempdir().expect("tempdir");
        py(
            dir.path(),
            r#"
import zipfile, io
np.savez('m.npz', x=np.arange(3), y=np.arange(4))
np.savez('o.npz', good=np.arange(2), bad=np.array([1, 'a'], dtype=object))
buf = io.BytesIO()
np.save(buf, np.arange(100, dtype=np.int64))
with zipfile.ZipFile('t.npz', 'w', compression=zipfile.ZIP_DEFLATED) as z:
    z.writestr('cut.npy', buf.getvalue()[:-8])
    z.writestr('ok.npy', buf.getvalue())
    z.writestr('notes.txt', 'ignored')
with open('junk.npz', 'wb') as f:
    f.write(b'not a zip')
"#,
        );
        // Members of different lengths: each reads alone (np.load(f)['x']),
        // not together, nor as the row count of the whole archive.
        let src = NpzSource::open(&dir.path().join("m.npz")).expect("m");
        assert_eq!(column_values(&read_all(&src, &[0]), 0), ints(0..3));
        assert_eq!(column_values(&read_all(&src, &[1]), 0), ints(0..4));
        for projection in [&[0, 1][..], &[]] {
            let e = src.read(0, projection, &mut |_| Ok(())).expect_err("mismatch");
            assert!(
                e.message.contains("x.npy has 3 rows") && e.message.contains("y.npy has 4"),
                "{e}"
            );
        }
        let src = NpzSource::open(&dir.path().join("o.npz")).expect("o");
        assert_eq!(src.columns(), ["good", "bad"]);
        assert_eq!(column_values(&read_all(&src, &[0]), 0), ints(0..2));
        let e = src.read(0, &[0, 1], &mut |_| Ok(())).expect_err("object");
        assert_eq!(e.location.as_deref(), Some("member bad.npy"));
        assert!(e.message.contains("object arrays are not supported"), "{e}");
        let src = NpzSource::open(&dir.path().join("t.npz")).expect("t");
        assert_eq!(src.columns(), ["cut", "ok"]);
        assert_eq!(column_values(&read_all(&src, &[1]), 0), ints(0..100));
        let e = src.read(0, &[1, 0], &mut |_| Ok(())).expect_err("truncated");
        assert_eq!(e.location.as_deref(), Some("member cut.npy"));
        assert_eq!(e.message, "truncated: header says 800 bytes of data, member holds 792");
        let e = NpzSource::open(&dir.path().join("junk.npz")).err().expect("junk");
        assert!(e.message.contains("not a valid .npz"), "{e}");
    }
}
