//! Shared parts of the text readers (CSV/TSV and JSON Lines).
//!
//! Text formats carry no schema: a cell is whatever its text says, and one
//! column may hold ints, floats, strings and lists side by side. The check
//! kernels need exact values, so nothing is coerced lossily; instead
//! [`ColumnBuilder`] collects one column's cells of one batch and turns them
//! into ONE Arrow array, as plain as the cells allow:
//!
//! - no cells, or only nulls: a `NullArray` (`DataType::Null`). Note that a
//!   `NullArray` has no validity bitmap: `nulls()` is `None` and `is_null(i)`
//!   is false; `logical_nulls()` / `logical_null_count()` say all-null.
//! - one kind of non-null cell: the plain array (`Int64`, `UInt64`,
//!   `Float64`, `Boolean`, `Utf8`, `List<…>`), nulls in its validity bitmap.
//! - only `Int64` and `UInt64` cells, all `Int64` ones non-negative: `UInt64`.
//! - anything else (ints and floats, numbers and strings, lists and scalars,
//!   negative ints and u64s, …): a dense union, laid out as follows.
//!
//! # Union layout
//!
//! `DataType::Union(fields, UnionMode::Dense)`. Each kind has a fixed type id
//! and child name, and only the kinds present in the batch are children,
//! listed in type-id order:
//!
//! | type id | child name | child type                  |
//! |---------|------------|-----------------------------|
//! | 0       | `null`     | `Null` (one slot per null)  |
//! | 1       | `int64`    | `Int64`                     |
//! | 2       | `uint64`   | `UInt64`                    |
//! | 3       | `float64`  | `Float64`                   |
//! | 4       | `bool`     | `Boolean`                   |
//! | 5       | `utf8`     | `Utf8`                      |
//! | 6       | `list`     | `List<item>` (inferred)     |
//!
//! Row `i` is `child(type_id(i))[value_offset(i)]`. Children are dense (each
//! holds exactly the rows of its kind, in row order) and have no validity
//! bitmaps of their own: a null row is a slot of the `null` child (Arrow
//! unions have no validity bitmap). Child fields are all nullable. A `list`
//! child holds no null rows; its elements may be null.
//!
//! List element types are inferred the same way over all elements of the
//! batch (a list of ints with one float is a `List<Union<int64, float64>>`).
//! Lists use `i32` offsets; the item field is `item`, nullable.
//!
//! Types are decided per batch, so two batches of one column may differ
//! (ints in one, a union of ints and strings in the next).
//!
//! This module also opens files with transparent decompression (`.gz`,
//! `.zst`, `.zstd`, by the final extension).

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, ListArray, NullArray, RecordBatch, RecordBatchOptions,
    StringArray, UInt64Array, UnionArray,
};
use arrow::buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{Field, Schema, UnionFields};

use crate::error::ReadError;
use crate::source::read::Batch;
use crate::source::storage::Input;

/// Rows whose input text adds up to this many bytes end a batch early, so a
/// batch of very wide rows stays small and its `i32` offsets cannot overflow.
pub(super) const BATCH_BYTES: usize = 64 << 20;

/// List elements (all nesting levels) that end a batch early.
pub(super) const BATCH_ELEMENTS: usize = 1 << 20;

/// The largest single record (CSV) or line (JSON Lines) accepted; larger ones
/// are an error rather than an unbounded allocation (e.g. an unbalanced quote).
pub(super) const MAX_RECORD_BYTES: usize = 256 << 20;

/// How a file is compressed, by its final extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Compression {
    /// Plain text.
    None,
    /// `.gz` (possibly several concatenated members).
    Gzip,
    /// `.zst` / `.zstd`.
    Zstd,
}

impl Compression {
    /// The compression a path's final extension names.
    pub(super) fn of(path: &Path) -> Compression {
        let path = crate::source::storage::remote::without_query(path);
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase());
        match ext.as_deref() {
            Some("gz") => Compression::Gzip,
            Some("zst" | "zstd") => Compression::Zstd,
            _ => Compression::None,
        }
    }
}

/// The lower-cased extension of the data inside: `x.tsv.gz` -> `tsv`.
pub(super) fn inner_extension(path: &Path) -> Option<String> {
    let path = crate::source::storage::remote::without_query(path);
    let path = path.as_ref();
    let inner = match Compression::of(path) {
        Compression::None => path.to_path_buf(),
        _ => path.with_extension(""),
    };
    inner
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase())
}

/// Opens a file for reading, decompressing it on the fly when its name says
/// so. The reader is unbuffered on the decompressed side; callers buffer.
/// An object in storage is read in order by ranged requests
/// ([`Input::reader`]), never staged to disk.
pub(super) fn open_decompressed(path: &Path) -> Result<Box<dyn Read + Send>, ReadError> {
    let file = Input::open(path)?.reader()?;
    Ok(match Compression::of(path) {
        Compression::None => Box::new(file),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(std::io::BufReader::with_capacity(
            64 << 10,
            file,
        ))),
        Compression::Zstd => Box::new(
            zstd::stream::read::Decoder::new(file).map_err(|e| ReadError::new(format!("not a zstd stream: {e}")))?,
        ),
    })
}

// Kind codes double as the union type ids.
const K_NULL: u8 = 0;
const K_I64: u8 = 1;
const K_U64: u8 = 2;
const K_F64: u8 = 3;
const K_BOOL: u8 = 4;
const K_STR: u8 = 5;
const K_LIST: u8 = 6;
const KINDS: usize = 7;
const KIND_NAMES: [&str; KINDS] = ["null", "int64", "uint64", "float64", "bool", "utf8", "list"];

/// A number parsed from text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Number {
    /// Fits an `i64`.
    I64(i64),
    /// Above `i64::MAX`, fits a `u64`.
    U64(u64),
    /// Anything else numeric (fractions, exponents, nan, inf, huge integers).
    F64(f64),
}

/// Parses trimmed cell text as a number: integers as `i64`, else `u64`,
/// else (fractions, exponents, `nan`, `inf`, `Infinity`, huge integers) `f64`.
pub(super) fn parse_number(t: &[u8]) -> Option<Number> {
    let first = *t.first()?;
    // The common case first: a decimal integer of at most 18 digits, which
    // no i64 overflows (what `str::parse::<i64>` accepts: a sign, leading
    // zeros).
    let (negative, digits) = match first {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    if (1..=18).contains(&digits.len()) {
        let mut v = 0i64;
        let mut whole = true;
        for &b in digits {
            let d = b.wrapping_sub(b'0');
            whole &= d <= 9;
            v = v.wrapping_mul(10).wrapping_add(i64::from(d));
        }
        if whole {
            return Some(Number::I64(if negative { -v } else { v }));
        }
    }
    // Cheap reject: almost every non-number starts with another byte.
    if !(first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'.' | b'i' | b'I' | b'n' | b'N')) {
        return None;
    }
    let s = std::str::from_utf8(t).ok()?;
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(v) = s.parse::<i64>() {
            return Some(Number::I64(v));
        }
        if let Ok(v) = s.parse::<u64>() {
            return Some(Number::U64(v));
        }
    }
    s.parse::<f64>().ok().map(Number::F64)
}

/// Collects one column's cells of one batch, then builds one Arrow array
/// (see the module doc for the types and the union layout).
#[derive(Debug, Default)]
pub(crate) struct ColumnBuilder {
    /// Kind of each row.
    kinds: Vec<u8>,
    /// Rows per kind.
    counts: [usize; KINDS],
    /// Smallest `Int64` value, to decide whether ints and u64s make `UInt64`.
    min_i64: i64,
    i64s: Vec<i64>,
    u64s: Vec<u64>,
    f64s: Vec<f64>,
    bools: Vec<bool>,
    /// End offset of each string in `str_data`.
    str_ends: Vec<usize>,
    str_data: Vec<u8>,
    /// End offset of each list in the child's rows.
    list_ends: Vec<usize>,
    /// The elements of every list, created by the first list.
    child: Option<Box<ColumnBuilder>>,
}

impl ColumnBuilder {
    /// An empty builder.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Rows pushed so far.
    pub(crate) fn len(&self) -> usize {
        self.kinds.len()
    }

    fn tag(&mut self, kind: u8) {
        self.kinds.push(kind);
        self.counts[kind as usize] += 1;
    }

    /// Appends a null.
    pub(crate) fn push_null(&mut self) {
        self.tag(K_NULL);
    }

    /// Appends an `i64`.
    pub(crate) fn push_i64(&mut self, v: i64) {
        if self.counts[K_I64 as usize] == 0 || v < self.min_i64 {
            self.min_i64 = v;
        }
        self.i64s.push(v);
        self.tag(K_I64);
    }

    /// Appends a `u64`.
    pub(crate) fn push_u64(&mut self, v: u64) {
        self.u64s.push(v);
        self.tag(K_U64);
    }

    /// Appends an `f64`.
    pub(crate) fn push_f64(&mut self, v: f64) {
        self.f64s.push(v);
        self.tag(K_F64);
    }

    /// Appends a boolean.
    pub(crate) fn push_bool(&mut self, v: bool) {
        self.bools.push(v);
        self.tag(K_BOOL);
    }

    /// Appends a string.
    pub(crate) fn push_str(&mut self, s: &str) {
        self.str_data.extend_from_slice(s.as_bytes());
        self.str_ends.push(self.str_data.len());
        self.tag(K_STR);
    }

    /// Appends a parsed number.
    pub(crate) fn push_number(&mut self, n: Number) {
        match n {
            Number::I64(v) => self.push_i64(v),
            Number::U64(v) => self.push_u64(v),
            Number::F64(v) => self.push_f64(v),
        }
    }

    /// Appends a text cell (CSV): blank is null, a number is a number, any
    /// other text is a string (kept as is; invalid UTF-8 replaced by U+FFFD).
    pub(crate) fn push_text_cell(&mut self, raw: &[u8]) {
        let t = raw.trim_ascii();
        if t.is_empty() {
            self.push_null();
        } else if let Some(n) = parse_number(t) {
            self.push_number(n);
        } else {
            let s = String::from_utf8_lossy(raw);
            self.push_str(&s);
        }
    }

    /// The builder for list elements; call [`ColumnBuilder::end_list`] after
    /// pushing a list's elements into it.
    pub(crate) fn list_child(&mut self) -> &mut ColumnBuilder {
        self.child.get_or_insert_with(Box::default)
    }

    /// Closes a list whose elements were pushed into [`Self::list_child`].
    pub(crate) fn end_list(&mut self) {
        let end = self.list_child().len();
        self.list_ends.push(end);
        self.tag(K_LIST);
    }

    /// Builds the array (see the module doc). Errors only when the batch's
    /// text or list data exceeds what `i32` offsets can address.
    pub(crate) fn finish(self) -> Result<ArrayRef, ReadError> {
        let len = self.kinds.len();
        let nulls = self.counts[K_NULL as usize];
        let present: Vec<u8> = (1..KINDS as u8).filter(|&k| self.counts[k as usize] > 0).collect();
        let validity =
            || (nulls > 0).then(|| NullBuffer::new(BooleanBuffer::from_iter(self.kinds.iter().map(|&k| k != K_NULL))));
        match present.as_slice() {
            [] => Ok(Arc::new(NullArray::new(len))),
            [K_I64] => {
                let v = spread(&self.kinds, K_I64, &self.i64s, 0);
                Ok(Arc::new(Int64Array::new(v.into(), validity())))
            }
            [K_U64] => {
                let v = spread(&self.kinds, K_U64, &self.u64s, 0);
                Ok(Arc::new(UInt64Array::new(v.into(), validity())))
            }
            [K_I64, K_U64] if self.min_i64 >= 0 => {
                // Every int is non-negative: one UInt64 column holds all exactly.
                let (mut i, mut u) = (self.i64s.iter(), self.u64s.iter());
                let v: Vec<u64> = self
                    .kinds
                    .iter()
                    .map(|&k| match k {
                        K_I64 => i.next().map_or(0, |&x| x as u64),
                        K_U64 => u.next().copied().unwrap_or(0),
                        _ => 0,
                    })
                    .collect();
                Ok(Arc::new(UInt64Array::new(v.into(), validity())))
            }
            [K_F64] => {
                let v = spread(&self.kinds, K_F64, &self.f64s, 0.0);
                Ok(Arc::new(Float64Array::new(v.into(), validity())))
            }
            [K_BOOL] => {
                let v = spread(&self.kinds, K_BOOL, &self.bools, false);
                Ok(Arc::new(BooleanArray::new(BooleanBuffer::from(v), validity())))
            }
            [K_STR] => {
                let ends = spread_ends(&self.kinds, K_STR, &self.str_ends);
                let nb = validity();
                Ok(Arc::new(string_array(&ends, self.str_data, nb)?))
            }
            [K_LIST] => {
                let ends = spread_ends(&self.kinds, K_LIST, &self.list_ends);
                let nb = validity();
                let child = self.child.map(|c| *c).unwrap_or_default();
                Ok(Arc::new(list_array(&ends, child, nb)?))
            }
            _ => self.finish_union(),
        }
    }

    /// Builds the dense union (see the module doc).
    fn finish_union(self) -> Result<ArrayRef, ReadError> {
        let ColumnBuilder {
            kinds,
            counts,
            mut i64s,
            mut u64s,
            mut f64s,
            mut bools,
            str_ends,
            mut str_data,
            list_ends,
            mut child,
            ..
        } = self;
        let mut next = [0i32; KINDS];
        let mut offsets = Vec::with_capacity(kinds.len());
        for &k in &kinds {
            offsets.push(next[k as usize]);
            next[k as usize] += 1;
        }
        let type_ids: Vec<i8> = kinds.iter().map(|&k| k as i8).collect();
        drop(kinds);

        let mut ids = Vec::new();
        let mut fields = Vec::new();
        let mut children: Vec<ArrayRef> = Vec::new();
        for k in 0..KINDS as u8 {
            if counts[k as usize] == 0 {
                continue;
            }
            let array: ArrayRef = match k {
                K_NULL => Arc::new(NullArray::new(counts[0])),
                K_I64 => Arc::new(Int64Array::from(std::mem::take(&mut i64s))),
                K_U64 => Arc::new(UInt64Array::from(std::mem::take(&mut u64s))),
                K_F64 => Arc::new(Float64Array::from(std::mem::take(&mut f64s))),
                K_BOOL => Arc::new(BooleanArray::from(std::mem::take(&mut bools))),
                K_STR => Arc::new(string_array(&str_ends, std::mem::take(&mut str_data), None)?),
                _ => {
                    let c = child.take().map(|c| *c).unwrap_or_default();
                    Arc::new(list_array(&list_ends, c, None)?)
                }
            };
            ids.push(k as i8);
            fields.push(Field::new(KIND_NAMES[k as usize], array.data_type().clone(), true));
            children.push(array);
        }
        let fields = UnionFields::try_new(ids, fields)?;
        let union = UnionArray::try_new(
            fields,
            ScalarBuffer::from(type_ids),
            Some(ScalarBuffer::from(offsets)),
            children,
        )?;
        Ok(Arc::new(union))
    }
}

/// Finishes `builders` (one per projected column, left empty for the next
/// batch) into a [`Batch`] of `rows` rows whose first row is `first_row`.
/// `names` are the projected columns' names, in projection order.
pub(super) fn take_batch(
    names: &[&str],
    builders: &mut [ColumnBuilder],
    rows: usize,
    first_row: u64,
) -> Result<Batch, ReadError> {
    let mut fields = Vec::with_capacity(builders.len());
    let mut columns = Vec::with_capacity(builders.len());
    for (name, b) in names.iter().zip(builders.iter_mut()) {
        let array = std::mem::take(b).finish()?;
        fields.push(Field::new(*name, array.data_type().clone(), true));
        columns.push(array);
    }
    // The row count is explicit so an empty projection still counts rows.
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    let batch = RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), columns, &options)?;
    Ok(Batch { first_row, batch })
}

/// Expands dense values of one kind to one value per row (`fill` elsewhere).
fn spread<T: Copy>(kinds: &[u8], kind: u8, dense: &[T], fill: T) -> Vec<T> {
    if dense.len() == kinds.len() {
        return dense.to_vec();
    }
    let mut it = dense.iter();
    kinds
        .iter()
        .map(|&k| {
            if k == kind {
                it.next().copied().unwrap_or(fill)
            } else {
                fill
            }
        })
        .collect()
}

/// Expands dense end offsets of one kind to one end per row: rows of other
/// kinds (nulls) repeat the previous end, i.e. are empty.
fn spread_ends(kinds: &[u8], kind: u8, dense: &[usize]) -> Vec<usize> {
    if dense.len() == kinds.len() {
        return dense.to_vec();
    }
    let mut it = dense.iter();
    let mut last = 0;
    kinds
        .iter()
        .map(|&k| {
            if k == kind {
                last = it.next().copied().unwrap_or(last);
            }
            last
        })
        .collect()
}

/// `i32` offsets from end offsets, or an error when they do not fit.
fn offsets(ends: &[usize]) -> Result<OffsetBuffer<i32>, ReadError> {
    let mut v = Vec::with_capacity(ends.len() + 1);
    v.push(0i32);
    for &e in ends {
        v.push(
            i32::try_from(e)
                .map_err(|_| ReadError::new("a batch holds more than 2 GiB of text or 2^31 list elements"))?,
        );
    }
    // Ends are non-decreasing by construction.
    Ok(OffsetBuffer::new(ScalarBuffer::from(v)))
}

fn string_array(ends: &[usize], data: Vec<u8>, nulls: Option<NullBuffer>) -> Result<StringArray, ReadError> {
    // Each string was pushed from a `&str`, so `try_new`'s UTF-8 check passes.
    Ok(StringArray::try_new(offsets(ends)?, Buffer::from(data), nulls)?)
}

fn list_array(ends: &[usize], child: ColumnBuilder, nulls: Option<NullBuffer>) -> Result<ListArray, ReadError> {
    let values = child.finish()?;
    let field = Arc::new(Field::new("item", values.data_type().clone(), true));
    Ok(ListArray::try_new(field, offsets(ends)?, values, nulls)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{DataType, Float64Type, Int64Type, UInt64Type, UnionMode};

    #[test]
    fn numbers_parse_exactly() {
        let p = |s: &str| parse_number(s.as_bytes());
        assert_eq!(p("3"), Some(Number::I64(3)));
        assert_eq!(p("+3"), Some(Number::I64(3)));
        assert_eq!(p("-7"), Some(Number::I64(-7)));
        assert_eq!(p("9223372036854775807"), Some(Number::I64(i64::MAX)));
        assert_eq!(p("9223372036854775808"), Some(Number::U64(1 << 63)));
        assert_eq!(p("18446744073709551615"), Some(Number::U64(u64::MAX)));
        assert_eq!(p("18446744073709551616"), Some(Number::F64(18446744073709551616.0)));
        assert_eq!(p("-9223372036854775809"), Some(Number::F64(-9223372036854775809.0)));
        assert_eq!(p("3.0"), Some(Number::F64(3.0)));
        assert_eq!(p("1e3"), Some(Number::F64(1000.0)));
        assert_eq!(p(".5"), Some(Number::F64(0.5)));
        assert_eq!(p("inf"), Some(Number::F64(f64::INFINITY)));
        assert_eq!(p("-inf"), Some(Number::F64(f64::NEG_INFINITY)));
        assert_eq!(p("Infinity"), Some(Number::F64(f64::INFINITY)));
        assert!(matches!(p("nan"), Some(Number::F64(v)) if v.is_nan()));
        assert!(matches!(p("NaN"), Some(Number::F64(v)) if v.is_nan()));
        for s in [
            "", "abc", "1,000", "0x10", "1_0", "+", "-", ".", "e5", "NA", "None", "true", "1 2", "12a", "-+1",
        ] {
            assert_eq!(p(s), None, "{s:?}");
        }
        // Every integer form agrees with the standard library's parse.
        let reference = |s: &str| {
            s.parse::<i64>()
                .map(Number::I64)
                .or_else(|_| s.parse::<u64>().map(Number::U64))
                .ok()
                .or_else(|| s.parse::<f64>().ok().map(Number::F64))
        };
        let mut seed = 1u64;
        for len in 1..=21 {
            for _ in 0..200 {
                let mut s = String::new();
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                match seed >> 62 {
                    0 => s.push('-'),
                    1 => s.push('+'),
                    _ => {}
                }
                for _ in 0..len {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let d = (seed >> 33) % 12;
                    s.push(if d < 10 {
                        char::from(b'0' + d as u8)
                    } else if d == 10 {
                        '9'
                    } else {
                        '0'
                    });
                }
                assert_eq!(p(&s), reference(&s), "{s:?}");
            }
        }
    }

    #[test]
    fn plain_arrays_with_nulls() {
        let mut b = ColumnBuilder::new();
        b.push_i64(1);
        b.push_null();
        b.push_i64(-2);
        let a = b.finish().unwrap();
        let a = a.as_primitive::<Int64Type>();
        assert_eq!(a.len(), 3);
        assert!(a.is_null(1));
        assert_eq!((a.value(0), a.value(2)), (1, -2));

        let mut b = ColumnBuilder::new();
        b.push_str("x");
        b.push_null();
        b.push_str("yz");
        let a = b.finish().unwrap();
        let a = a.as_string::<i32>();
        assert_eq!((a.value(0), a.is_null(1), a.value(2)), ("x", true, "yz"));

        let mut b = ColumnBuilder::new();
        b.push_null();
        b.push_null();
        let a = b.finish().unwrap();
        assert_eq!(a.data_type(), &DataType::Null);
        assert_eq!((a.len(), a.logical_null_count()), (2, 2));

        assert_eq!(ColumnBuilder::new().finish().unwrap().len(), 0);
    }

    #[test]
    fn ints_and_u64s() {
        let mut b = ColumnBuilder::new();
        b.push_i64(5);
        b.push_u64(u64::MAX);
        b.push_null();
        let a = b.finish().unwrap();
        let a = a.as_primitive::<UInt64Type>();
        assert_eq!((a.value(0), a.value(1), a.is_null(2)), (5, u64::MAX, true));

        let mut b = ColumnBuilder::new();
        b.push_i64(-5);
        b.push_u64(u64::MAX);
        let a = b.finish().unwrap();
        let u = a.as_union();
        assert_eq!((u.type_id(0), u.type_id(1)), (K_I64 as i8, K_U64 as i8));
        assert_eq!(u.child(K_U64 as i8).as_primitive::<UInt64Type>().value(0), u64::MAX);
    }

    #[test]
    fn union_layout() {
        let mut b = ColumnBuilder::new();
        b.push_i64(9_007_199_254_740_993); // 2^53 + 1: not a float
        b.push_f64(0.5);
        b.push_null();
        b.push_str("a");
        b.push_i64(2);
        b.push_null();
        let a = b.finish().unwrap();
        let DataType::Union(fields, UnionMode::Dense) = a.data_type() else {
            panic!("{:?}", a.data_type())
        };
        let names: Vec<_> = fields.iter().map(|(id, f)| (id, f.name().as_str())).collect();
        assert_eq!(names, [(0, "null"), (1, "int64"), (3, "float64"), (5, "utf8")]);
        let u = a.as_union();
        let ids: Vec<i8> = (0..6).map(|i| u.type_id(i)).collect();
        let offs: Vec<i32> = (0..6).map(|i| u.value_offset(i) as i32).collect();
        assert_eq!(ids, [1, 3, 0, 5, 1, 0]);
        assert_eq!(offs, [0, 0, 0, 0, 1, 1]);
        assert_eq!(
            u.child(1).as_primitive::<Int64Type>().values().to_vec(),
            [9_007_199_254_740_993, 2]
        );
        assert_eq!(u.child(3).as_primitive::<Float64Type>().value(0), 0.5);
        assert_eq!(u.child(5).as_string::<i32>().value(0), "a");
        assert_eq!(u.child(0).len(), 2);
        assert_eq!(a.logical_null_count(), 2);
    }

    #[test]
    fn lists_nested_and_mixed() {
        // [[1, 2], null, [], [3.5, null]]
        let mut b = ColumnBuilder::new();
        let c = b.list_child();
        c.push_i64(1);
        c.push_i64(2);
        b.end_list();
        b.push_null();
        b.end_list();
        let c = b.list_child();
        c.push_f64(3.5);
        c.push_null();
        b.end_list();
        let a = b.finish().unwrap();
        let l = a.as_list::<i32>();
        assert_eq!(l.value_offsets(), &[0, 2, 2, 2, 4]);
        assert!(l.is_null(1) && l.is_valid(2));
        let u = l.values().as_union();
        assert_eq!((0..4).map(|i| u.type_id(i)).collect::<Vec<_>>(), [1, 1, 3, 0]);
    }
}

/// Helpers for the readers' tests: real writers through the test venv's
/// Python (run-tests.sh installs pandas, numpy and zstandard there).
#[cfg(test)]
pub(crate) mod test_util {
    use std::path::Path;

    use crate::source::read::{Batch, Source};

    use crate::error::ReadError;
    use std::process::Command;

    /// Whether the test Python can import all of `modules`.
    pub(crate) fn py_has(modules: &str) -> bool {
        Command::new(crate::source::test_python())
            .args(["-c", &format!("import {modules}")])
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// Runs a Python script in `dir`; panics when one of `modules` is
    /// missing (run ./run-tests.sh) or the script fails. Returns true.
    pub(crate) fn python(dir: &Path, modules: &str, script: &str) -> bool {
        assert!(py_has(modules), "the test Python lacks {modules}: run ./run-tests.sh");
        let out = Command::new(crate::source::test_python())
            .current_dir(dir)
            .args(["-c", script])
            .output()
            .expect("python3 runs");
        assert!(
            out.status.success(),
            "python failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        true
    }

    /// Every batch of unit 0.
    pub(crate) fn read_all(src: &dyn Source, projection: &[usize]) -> Result<Vec<Batch>, ReadError> {
        let mut out = Vec::new();
        src.read(0, projection, &mut |b| {
            out.push(b);
            Ok(())
        })?;
        Ok(out)
    }

    /// The columns of a file that reads as exactly one batch.
    pub(crate) fn one_batch(src: &dyn Source, projection: &[usize]) -> Vec<arrow::array::ArrayRef> {
        let batches = read_all(src, projection).expect("read");
        assert_eq!(batches.len(), 1);
        assert_eq!(batches[0].first_row, 0);
        batches[0].batch.columns().to_vec()
    }

    /// Compresses a file with the zstd crate (for when `zstandard` is absent).
    pub(crate) fn zstd_file(from: &Path, to: &Path) {
        let data = std::fs::read(from).expect("read");
        let packed = zstd::encode_all(data.as_slice(), 3).expect("zstd");
        std::fs::write(to, packed).expect("write");
    }

    /// Deterministic pseudo-random bytes.
    pub(crate) fn garbage(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    }
}
