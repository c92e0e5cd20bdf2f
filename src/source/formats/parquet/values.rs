//! preflight's own decoding of integer column chunks (flat, or a top-level
//! list of integers): pages are decompressed whole into one reused buffer,
//! their levels and values (PLAIN, dictionary indices, DELTA_BINARY_PACKED)
//! decoded straight into the buffers of the Arrow arrays the checks read.
//!
//! Why not arrow-rs's reader: its generic record reader materialises levels
//! and list offsets through several layers of buffers and was the whole cost
//! of `--full-scan` on token lists (BENCHMARKS.md). The arrays built here are
//! the ones arrow-rs builds for the same column (same data type and field,
//! same values and nulls, integer widths converted as its `coerce_i32` /
//! `coerce_i64` convert them), so the checks and the report see the same
//! thing on either path; anything this module does not specialise stays on
//! arrow-rs (see `ParquetSource::value_plan`).
//!
//! Levels are walked once, a chunk of slots at a time; a dictionary index
//! past the dictionary is an error (arrow-rs reports one too). A list page
//! with no null slot (every token page) skips the slots: its row starts
//! come from the repetition runs alone (`Hybrid::row_starts`), because
//! expanding a level per value was most of `--full-scan` once the values
//! were proven in place (BENCHMARKS.md, #19).
//!
//! With a column's judge (`proof::Judge`, list columns), each data page is
//! first proven or not: no null slot (empty lists are fine), and every value
//! passes: PLAIN values compared where they lie in the page buffer,
//! dictionary indices against a table of which entries pass (made once per
//! dictionary) and the dictionary's length. A batch whose rows lie in proven
//! pages only is handed as a shape of the stored type and flagged proven;
//! its values are skipped, never gathered. A batch that touches an unproven
//! page is built as before, its rows from proven pages holding a passing
//! stand-in value (the kernels find nothing there, as they would in the real
//! values), so everything a report shows still comes from the kernels.
//! Proving is only ever cautious: a page it cannot prove (an index past the
//! dictionary, a corrupt stream) is simply decoded as before, where any
//! error is raised. DELTA_BINARY_PACKED pages are proven by decoding them
//! (no array built); a proven one is decoded again as it is skipped.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, Int8Array, Int16Array, Int32Array, Int64Array, LargeListArray, ListArray, PrimitiveArray,
    UInt8Array, UInt16Array, UInt32Array, UInt64Array,
};
use arrow::array::{BooleanBufferBuilder, NullBufferBuilder};
use arrow::buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{DataType, FieldRef};

use super::delta::Delta;
use super::hybrid::{Hybrid, Run};
use super::pages::{LevelEncoding, PageWalker, Whole, bit_width};
use crate::error::ReadError;
use crate::proof::{Bounds, Judge};

/// Parquet's value encodings read here.
pub(super) const PLAIN: i32 = 0;
pub(super) const PLAIN_DICTIONARY: i32 = 2;
pub(super) const DELTA_BINARY_PACKED: i32 = 5;
pub(super) const RLE_DICTIONARY: i32 = 8;

/// Level slots decoded at a time.
const SLOTS: usize = 4096;

/// How one column is decoded: decided from the schemas before reading.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    pub leaf: usize,
    /// The Arrow type of the values (the list's element type for a list).
    pub target: DataType,
    pub list: Option<ListPlan>,
    pub max_rep: i16,
    pub max_def: i16,
}

#[derive(Debug, Clone)]
pub(super) struct ListPlan {
    /// Definition level of an element slot; one less is an empty list.
    pub element_def: i16,
    pub large: bool,
    pub field: FieldRef,
}

/// A physical integer type.
pub(super) trait Physical: Copy + Default + Send + 'static {
    const SIZE: usize;
    fn from_le(b: &[u8]) -> Self;
    fn wrap(v: i64) -> Self;
    /// The array arrow-rs builds from these values for `target`.
    fn array(values: Vec<Self>, nulls: Option<NullBuffer>, target: &DataType) -> Result<ArrayRef, ReadError>;
    /// The range of `target`'s values, when judges are applied here.
    fn domain(target: &DataType) -> Option<(i64, i64)>;
    /// The value `target` holds for this stored value (as `array` converts).
    fn to_target(self, target: &DataType) -> i64;
    /// Whether every PLAIN value in `bytes` passes `b` as `target`.
    fn plain_pass(bytes: &[u8], target: &DataType, b: &Bounds) -> bool;
}

/// Whether every `S`-byte value in `bytes`, read by `get`, lies in
/// `lo..=hi` or is `extra`; blocks keep the counters narrow so the loop
/// vectorises.
#[inline(always)]
fn pass_all<N: Copy + PartialOrd, const S: usize>(
    bytes: &[u8],
    get: impl Fn(&[u8]) -> N,
    lo: N,
    hi: N,
    extra: Option<N>,
) -> bool {
    bytes.chunks(S << 14).all(|block| {
        let values = block.chunks_exact(S).map(&get);
        let bad: u32 = match extra {
            None => values.map(|v| !((v >= lo) & (v <= hi)) as u32).sum(),
            Some(x) => values.map(|v| (!((v >= lo) & (v <= hi)) & (v != x)) as u32).sum(),
        };
        bad == 0
    })
}

/// [`pass_all`] over 4-byte values as `N` (a cast, as `Physical::array`).
macro_rules! pass_as {
    ($bytes:expr, $b:expr, $n:ty) => {
        pass_all::<$n, 4>(
            $bytes,
            |c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as $n,
            $b.lo as $n,
            $b.hi as $n,
            $b.extra.map(|x| x as $n),
        )
    };
}

impl Physical for i32 {
    const SIZE: usize = 4;
    fn from_le(b: &[u8]) -> Self {
        i32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
    fn wrap(v: i64) -> Self {
        v as i32
    }
    fn array(values: Vec<Self>, nulls: Option<NullBuffer>, target: &DataType) -> Result<ArrayRef, ReadError> {
        let a = Int32Array::new(ScalarBuffer::from(values), nulls);
        Ok(match target {
            DataType::Int32 => Arc::new(a),
            DataType::UInt32 => Arc::new(UInt32Array::new(a.values().inner().clone().into(), a.nulls().cloned())),
            DataType::Int8 => Arc::new(a.unary::<_, arrow::datatypes::Int8Type>(|i| i as i8) as Int8Array),
            DataType::Int16 => Arc::new(a.unary::<_, arrow::datatypes::Int16Type>(|i| i as i16) as Int16Array),
            DataType::UInt8 => Arc::new(a.unary::<_, arrow::datatypes::UInt8Type>(|i| i as u8) as UInt8Array),
            DataType::UInt16 => Arc::new(a.unary::<_, arrow::datatypes::UInt16Type>(|i| i as u16) as UInt16Array),
            t => return Err(ReadError::new(format!("INT32 values are not read as {t} here"))),
        })
    }
    fn domain(target: &DataType) -> Option<(i64, i64)> {
        Some(match target {
            DataType::Int8 => (i8::MIN.into(), i8::MAX.into()),
            DataType::Int16 => (i16::MIN.into(), i16::MAX.into()),
            DataType::Int32 => (i32::MIN.into(), i32::MAX.into()),
            DataType::UInt8 => (0, u8::MAX.into()),
            DataType::UInt16 => (0, u16::MAX.into()),
            DataType::UInt32 => (0, u32::MAX.into()),
            _ => return None,
        })
    }
    fn to_target(self, target: &DataType) -> i64 {
        match target {
            DataType::Int8 => (self as i8).into(),
            DataType::Int16 => (self as i16).into(),
            DataType::UInt8 => (self as u8).into(),
            DataType::UInt16 => (self as u16).into(),
            DataType::UInt32 => (self as u32).into(),
            _ => self.into(),
        }
    }
    fn plain_pass(bytes: &[u8], target: &DataType, b: &Bounds) -> bool {
        match target {
            DataType::Int8 => pass_as!(bytes, b, i8),
            DataType::Int16 => pass_as!(bytes, b, i16),
            DataType::UInt8 => pass_as!(bytes, b, u8),
            DataType::UInt16 => pass_as!(bytes, b, u16),
            DataType::UInt32 => pass_as!(bytes, b, u32),
            _ => pass_as!(bytes, b, i32),
        }
    }
}

impl Physical for i64 {
    const SIZE: usize = 8;
    fn from_le(b: &[u8]) -> Self {
        i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }
    fn wrap(v: i64) -> Self {
        v
    }
    fn array(values: Vec<Self>, nulls: Option<NullBuffer>, target: &DataType) -> Result<ArrayRef, ReadError> {
        let a: PrimitiveArray<arrow::datatypes::Int64Type> = Int64Array::new(ScalarBuffer::from(values), nulls);
        Ok(match target {
            DataType::Int64 => Arc::new(a),
            DataType::UInt64 => Arc::new(UInt64Array::new(a.values().inner().clone().into(), a.nulls().cloned())),
            t => return Err(ReadError::new(format!("INT64 values are not read as {t} here"))),
        })
    }
    /// UInt64 values do not fit the judges' domain: never proven here.
    fn domain(target: &DataType) -> Option<(i64, i64)> {
        matches!(target, DataType::Int64).then_some((i64::MIN, i64::MAX))
    }
    fn to_target(self, _target: &DataType) -> i64 {
        self
    }
    fn plain_pass(bytes: &[u8], _target: &DataType, b: &Bounds) -> bool {
        pass_all::<i64, 8>(
            bytes,
            |c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
            b.lo,
            b.hi,
            b.extra,
        )
    }
}

thread_local! {
    /// Stand-in arrays (see [`ValueReader::stand_ins`]): target type, value.
    static STAND_INS: std::cell::RefCell<Vec<(DataType, i64, ArrayRef)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A judge made ready for one chunk's values.
struct Proof<T> {
    bounds: Bounds,
    /// A stored value whose target value passes: the stand-in.
    good: T,
    /// Per dictionary entry: whether it passes.
    table: Vec<bool>,
    /// Every dictionary entry passes: only the indices' range matters.
    all_pass: bool,
}

/// Where the current page's values are read from.
enum Values {
    Plain { pos: usize, end: usize },
    Dict(Hybrid),
    Delta(Delta),
}

/// The current data page: its decoders over the page buffer.
struct Page {
    rep: Hybrid,
    def: Hybrid,
    values: Values,
    /// Level slots not yet decoded.
    left: usize,
    /// No null slot and every value passes the judge (see the module doc).
    proven: bool,
    /// A list page whose every slot is an element with a value: its
    /// definition levels are never walked again, and row starts come from
    /// the repetition runs alone (see [`ValueReader::walk_dense`]).
    dense: bool,
}

/// Decodes one column chunk into arrays, batch by batch.
pub(super) struct ValueReader<'f, T: Physical> {
    pages: PageWalker<'f>,
    plan: Plan,
    /// The current page, decompressed.
    buf: Vec<u8>,
    page: Option<Page>,
    dict: Vec<T>,
    has_dict: bool,
    /// Decoded levels of the current page not yet walked: `r[at..len]`.
    r: Vec<u32>,
    d: Vec<u32>,
    at: usize,
    len: usize,
    /// Every slot in `at..len` is an element with a value (`d` unfilled).
    full: bool,
    /// Scratch: dictionary indices, DELTA values, values of a chunk of slots.
    idx: Vec<u32>,
    wide: Vec<i64>,
    tmp: Vec<T>,
    /// Values in the largest batch so far: the next batch's first reservation.
    values_hint: usize,
    footer_rows: u64,
    handed: u64,
    done: bool,
    proof: Option<Proof<T>>,
}

/// One batch being built.
struct Out<T> {
    values: Vec<T>,
    /// Every value so far lies in a proven page: `values` is empty and
    /// this many were skipped.
    proven: bool,
    skipped: usize,
    /// Element offset where each row starts (lists).
    starts: Vec<i64>,
    rows: usize,
    row_nulls: NullBufferBuilder,
    /// Element validity, for lists whose elements can be null.
    elem_valid: Option<BooleanBufferBuilder>,
}

impl<'f, T: Physical> ValueReader<'f, T> {
    pub(super) fn new(pages: PageWalker<'f>, plan: Plan, footer_rows: u64, judge: Option<Judge>) -> Self {
        // Lists only: a flat column's batch is its values, nothing to spare.
        let proof = judge
            .filter(|_| plan.list.is_some())
            .and_then(|j| {
                let (min, max) = T::domain(&plan.target)?;
                j.bounds(min, max)
            })
            .map(|bounds| Proof {
                bounds,
                good: T::wrap(bounds.lo),
                table: Vec::new(),
                all_pass: false,
            });
        ValueReader {
            proof,
            pages,
            plan,
            buf: Vec::new(),
            page: None,
            dict: Vec::new(),
            has_dict: false,
            r: vec![0; SLOTS],
            d: vec![0; SLOTS],
            at: 0,
            len: 0,
            full: false,
            idx: Vec::new(),
            wide: Vec::new(),
            tmp: Vec::new(),
            values_hint: 0,
            footer_rows,
            handed: 0,
            done: false,
        }
    }

    /// Rows per batch that keep a batch's values in cache.
    pub(super) fn batch_rows(&self) -> usize {
        if self.plan.list.is_some() { 4096 } else { 64 * 1024 }
    }

    /// Decodes the next page's levels into `r`/`d`; false at the end.
    fn refill(&mut self) -> Result<bool, ReadError> {
        loop {
            if let Some(page) = self.page.as_mut()
                && page.left > 0
            {
                if page.dense {
                    self.at = 0;
                    self.len = 0;
                    return Ok(true);
                }
                let m = page.left.min(SLOTS);
                if self.plan.max_rep > 0 {
                    page.rep.decode(&self.buf, &mut self.r[..m])?;
                }
                // In a list, slots that are all elements are usually one run
                // of the top definition level: then `d` is left unfilled.
                let max_def = self.plan.max_def as u32;
                self.full = self.plan.list.is_some()
                    && matches!(page.def.run(&self.buf, m)?, Run::Repeat(v, k) if v == max_def && k == m);
                if self.full {
                    page.def.advance(m);
                } else if self.plan.max_def > 0 {
                    page.def.decode(&self.buf, &mut self.d[..m])?;
                } else {
                    self.d[..m].fill(0);
                }
                // A level above its maximum is corrupt (arrow-rs refuses it too).
                let over = |levels: &[u32], max: i16| levels.iter().copied().max().unwrap_or(0) > max as u32;
                if over(&self.r[..m], self.plan.max_rep) || (!self.full && over(&self.d[..m], self.plan.max_def)) {
                    return Err(ReadError::new("a page holds a level above its column's maximum"));
                }
                page.left -= m;
                self.at = 0;
                self.len = m;
                return Ok(true);
            }
            if !self.next_page()? {
                return Ok(false);
            }
        }
    }

    /// Moves to the next data page, reading a dictionary page on the way.
    fn next_page(&mut self) -> Result<bool, ReadError> {
        loop {
            match self.pages.next_whole_page(&mut self.buf)? {
                None => {
                    self.page = None;
                    return Ok(false);
                }
                Some(Whole::Dictionary(entries)) => {
                    let bytes = entries
                        .checked_mul(T::SIZE)
                        .filter(|&b| b <= self.buf.len())
                        .ok_or_else(|| {
                            ReadError::new(format!(
                                "the dictionary page claims {entries} entries in {} bytes",
                                self.buf.len()
                            ))
                        })?;
                    self.dict.clear();
                    self.dict
                        .extend(self.buf[..bytes].chunks_exact(T::SIZE).map(T::from_le));
                    self.has_dict = true;
                    // Each entry judged once for the whole chunk.
                    if let Some(proof) = self.proof.as_mut() {
                        let target = &self.plan.target;
                        proof.table.clear();
                        proof
                            .table
                            .extend(self.dict.iter().map(|&v| proof.bounds.passes(v.to_target(target))));
                        proof.all_pass = proof.table.iter().all(|&p| p);
                    }
                }
                Some(Whole::Data(p)) => {
                    if p.values == 0 {
                        continue;
                    }
                    let levels = |range: std::ops::Range<usize>, encoding, max: i16| {
                        if max == 0 {
                            Ok(Hybrid::zeros())
                        } else if encoding == LevelEncoding::BitPacked {
                            Ok(Hybrid::packed(range, bit_width(max), p.values))
                        } else {
                            Hybrid::new(range, bit_width(max))
                        }
                    };
                    let rep = levels(p.rep.clone(), p.rep_encoding, self.plan.max_rep)?;
                    let def = levels(p.def.clone(), p.def_encoding, self.plan.max_def)?;
                    let values = match p.encoding {
                        PLAIN => Values::Plain {
                            pos: p.body.start,
                            end: p.body.end,
                        },
                        PLAIN_DICTIONARY | RLE_DICTIONARY => {
                            if !self.has_dict {
                                return Err(ReadError::new("a dictionary-encoded page without a dictionary page"));
                            }
                            let width = *self
                                .buf
                                .get(p.body.start)
                                .ok_or_else(|| ReadError::new("a dictionary-encoded page without its bit width"))?;
                            Values::Dict(Hybrid::new(p.body.start + 1..p.body.end, u32::from(width))?)
                        }
                        DELTA_BINARY_PACKED => {
                            Values::Delta(Delta::new(&self.buf, p.body.clone(), T::SIZE as u32 * 8)?)
                        }
                        other => return Err(ReadError::new(format!("values in encoding {other} are not read here"))),
                    };
                    let mut page = Page {
                        rep,
                        def,
                        values,
                        left: p.values,
                        proven: false,
                        dense: false,
                    };
                    // Every slot at the top definition level (a stream that
                    // ends early or says otherwise leaves the page to the
                    // slot walk, which reports it).
                    page.dense = self.plan.list.is_some()
                        && self.plan.max_rep == 1
                        && matches!(
                            page.def.clone().count_only(&self.buf, p.values, self.plan.max_def as u32, None),
                            Ok(Some(n)) if n == p.values
                        );
                    // Anything unexpected only leaves the page unproven.
                    page.proven = self.prove(&page, p.values).unwrap_or(false);
                    self.page = Some(page);
                    return Ok(true);
                }
            }
        }
    }

    /// Whether the page's `slots` level slots hold no null (empty lists
    /// are fine) and every value passes the judge (see the module doc).
    fn prove(&mut self, page: &Page, slots: usize) -> Result<bool, ReadError> {
        let (Some(proof), Some(list)) = (self.proof.as_ref(), self.plan.list.as_ref()) else {
            return Ok(false);
        };
        let empty = u32::try_from(list.element_def - 1).ok();
        let n = if self.plan.max_def == 0 || page.dense {
            slots
        } else {
            match page
                .def
                .clone()
                .count_only(&self.buf, slots, self.plan.max_def as u32, empty)?
            {
                Some(n) => n,
                None => return Ok(false),
            }
        };
        Ok(match &page.values {
            Values::Plain { pos, end } => {
                let bytes = n.checked_mul(T::SIZE).filter(|&b| b <= end - pos);
                bytes.is_some_and(|b| T::plain_pass(&self.buf[*pos..pos + b], &self.plan.target, &proof.bounds))
            }
            Values::Dict(indices) => {
                let mut indices = indices.clone();
                let (len, mut left) = (self.dict.len(), n);
                while left > 0 {
                    let k = left.min(SLOTS);
                    self.idx.resize(k, 0);
                    indices.decode(&self.buf, &mut self.idx)?;
                    let pass = if proof.all_pass {
                        self.idx.iter().fold(0, |m, &i| m.max(i)) < len as u32 || len > u32::MAX as usize
                    } else {
                        self.idx.iter().all(|&i| proof.table.get(i as usize) == Some(&true))
                    };
                    if !pass {
                        return Ok(false);
                    }
                    left -= k;
                }
                true
            }
            Values::Delta(delta) => {
                let mut delta = delta.clone();
                let mut left = n;
                while left > 0 {
                    let k = left.min(SLOTS);
                    self.wide.resize(k, 0);
                    delta.decode(&self.buf, &mut self.wide)?;
                    let target = &self.plan.target;
                    if !self
                        .wide
                        .iter()
                        .all(|&v| proof.bounds.passes(T::wrap(v).to_target(target)))
                    {
                        return Ok(false);
                    }
                    left -= k;
                }
                true
            }
        })
    }

    /// Whether the current page is proven.
    fn page_proven(&self) -> bool {
        self.page.as_ref().is_some_and(|p| p.proven)
    }

    /// Puts the next `k` values of the current page into `out`: skipped
    /// while the batch and the page are proven, else taken.
    fn put(&mut self, k: usize, out: &mut Out<T>) -> Result<(), ReadError> {
        if out.proven && self.page_proven() {
            out.skipped += k;
            if k == 0 {
                return Ok(());
            }
            let page = self
                .page
                .as_mut()
                .ok_or_else(|| ReadError::new("values without a page"))?;
            return match &mut page.values {
                Values::Plain { pos, end } => {
                    *pos = k
                        .checked_mul(T::SIZE)
                        .and_then(|b| pos.checked_add(b))
                        .filter(|p| p <= end)
                        .ok_or_else(|| ReadError::new("the page holds fewer values than its levels say"))?;
                    Ok(())
                }
                Values::Dict(indices) => indices.skip(&self.buf, k),
                Values::Delta(delta) => {
                    // No skipping a DELTA stream: decoded, not kept.
                    let mut left = k;
                    while left > 0 {
                        let m = left.min(SLOTS);
                        self.wide.resize(m, 0);
                        delta.decode(&self.buf, &mut self.wide)?;
                        left -= m;
                    }
                    Ok(())
                }
            };
        }
        self.unprove(out);
        let mut values = std::mem::take(&mut out.values);
        let taken = self.take(k, &mut values);
        out.values = values;
        taken
    }

    /// The batch touches a page that is not proven: the values skipped so
    /// far become stand-ins that pass, and the rest is taken.
    fn unprove(&self, out: &mut Out<T>) {
        if out.proven {
            let good = self.proof.as_ref().map_or(T::default(), |p| p.good);
            out.values.resize(out.skipped, good);
            out.skipped = 0;
            out.proven = false;
        }
    }

    /// Appends the next `k` values of the current page to `out`.
    fn take(&mut self, k: usize, out: &mut Vec<T>) -> Result<(), ReadError> {
        if k == 0 {
            return Ok(());
        }
        let page = self
            .page
            .as_mut()
            .ok_or_else(|| ReadError::new("values without a page"))?;
        match &mut page.values {
            Values::Plain { pos, end } => {
                let bytes = k * T::SIZE;
                if *end - *pos < bytes {
                    return Err(ReadError::new("the page holds fewer values than its levels say"));
                }
                out.extend(self.buf[*pos..*pos + bytes].chunks_exact(T::SIZE).map(T::from_le));
                *pos += bytes;
            }
            Values::Dict(indices) => {
                self.idx.resize(k, 0);
                indices.decode(&self.buf, &mut self.idx)?;
                let max = self.idx.iter().copied().max().unwrap_or(0);
                if max as usize >= self.dict.len() {
                    return Err(ReadError::new(format!(
                        "dictionary index {max} is past the dictionary's {} entries",
                        self.dict.len()
                    )));
                }
                let dict = &self.dict[..];
                out.extend(self.idx.iter().map(|&i| dict[i as usize]));
            }
            Values::Delta(delta) => {
                self.wide.resize(k, 0);
                delta.decode(&self.buf, &mut self.wide)?;
                out.extend(self.wide.iter().map(|&v| T::wrap(v)));
            }
        }
        Ok(())
    }

    /// The next `n` rows as one array of the column's type, and whether
    /// they were proven (then the array is a shape: its elements are
    /// stand-ins, see the module doc).
    pub(super) fn next_rows(&mut self, n: usize) -> Result<(ArrayRef, bool), ReadError> {
        let nullable_elems = self
            .plan
            .list
            .as_ref()
            .is_some_and(|l| self.plan.max_def > l.element_def);
        let proven = self.proof.is_some();
        let mut out = Out {
            values: Vec::with_capacity(if proven { 0 } else { self.values_hint }),
            proven,
            skipped: 0,
            starts: Vec::with_capacity(if self.plan.list.is_some() { n + 1 } else { 0 }),
            rows: 0,
            row_nulls: NullBufferBuilder::new(n),
            elem_valid: nullable_elems.then(|| BooleanBufferBuilder::new(n)),
        };
        loop {
            if self.at == self.len {
                if self.page.as_ref().is_some_and(|p| p.dense && p.left > 0) {
                    if self.walk_dense(n, &mut out)? {
                        break;
                    }
                    continue;
                }
                if self.plan.list.is_none() && out.rows == n {
                    break;
                }
                if !self.refill()? {
                    self.done = true;
                    break;
                }
                continue;
            }
            let stopped = if self.plan.list.is_some() {
                self.walk_list(n, &mut out)?
            } else {
                self.walk_flat(n, &mut out)?
            };
            if stopped {
                break;
            }
        }
        if out.rows < n {
            return Err(super::fewer_rows(self.footer_rows, self.handed + out.rows as u64));
        }
        self.handed += n as u64;
        self.values_hint = self.values_hint.max(out.values.len());
        let proven = out.proven;
        Ok((self.build(out)?, proven))
    }

    /// A flat column: each slot is a row. Returns whether `n` rows are in.
    fn walk_flat(&mut self, n: usize, out: &mut Out<T>) -> Result<bool, ReadError> {
        let k = (self.len - self.at).min(n - out.rows);
        let max_def = self.plan.max_def as u32;
        let d = &self.d[self.at..self.at + k];
        let valid = d.iter().filter(|&&v| v == max_def).count();
        self.unprove(out);
        if valid == k {
            self.put(k, out)?;
            out.row_nulls.append_n_non_nulls(k);
        } else {
            let mut tmp = std::mem::take(&mut self.tmp);
            tmp.clear();
            self.take(valid, &mut tmp)?;
            let mut next = tmp.iter();
            for &v in &self.d[self.at..self.at + k] {
                if v == max_def {
                    out.values.push(*next.next().unwrap_or(&T::default()));
                    out.row_nulls.append_non_null();
                } else {
                    out.values.push(T::default());
                    out.row_nulls.append_null();
                }
            }
            self.tmp = tmp;
        }
        self.at += k;
        out.rows += k;
        Ok(out.rows == n)
    }

    /// A list column. Returns whether a row past the `n`th has started.
    fn walk_list(&mut self, n: usize, out: &mut Out<T>) -> Result<bool, ReadError> {
        let list = self.plan.list.as_ref().expect("a list plan");
        let element_def = list.element_def as u32;
        let max_def = self.plan.max_def as u32;
        if !self.page_proven() {
            self.unprove(out);
        }
        let (r, d) = (&self.r[self.at..self.len], &self.d[self.at..self.len]);
        let first = (out.values.len() + out.skipped) as i64;
        if out.starts.is_empty() && r.first().is_some_and(|&rv| rv != 0) {
            return Err(ReadError::new("the first page continues a row that never started"));
        }
        let (stop, stopped, elements, valid) = if self.full || d.iter().all(|&dv| dv == max_def) {
            // Every slot an element with a value (token lists): only the
            // row starts need looking at.
            // Blocks without a row start (most: rows are long) are passed
            // over by one branch-free test.
            const BLOCK: usize = 32;
            let (mut stop, mut stopped) = (r.len(), false);
            let mut base = 0;
            'blocks: for block in r.chunks(BLOCK) {
                if block.iter().fold(0u32, |z, &rv| z | u32::from(rv == 0)) != 0 {
                    for (j, &rv) in block.iter().enumerate() {
                        if rv == 0 {
                            if out.rows == n {
                                stop = base + j;
                                stopped = true;
                                break 'blocks;
                            }
                            out.rows += 1;
                            out.starts.push(first + (base + j) as i64);
                            out.row_nulls.append_non_null();
                        }
                    }
                }
                base += block.len();
            }
            (stop, stopped, first + stop as i64, stop)
        } else {
            Self::walk_slots(r, d, n, element_def, max_def, out, first)
        };
        let slots = (elements - first) as usize;
        if let Some(elem_valid) = out.elem_valid.as_mut()
            && valid < slots
        {
            let mut tmp = std::mem::take(&mut self.tmp);
            tmp.clear();
            self.take(valid, &mut tmp)?;
            let mut next = tmp.iter();
            for &dv in &self.d[self.at..self.at + stop] {
                if dv >= element_def {
                    if dv == max_def {
                        out.values.push(*next.next().unwrap_or(&T::default()));
                        elem_valid.append(true);
                    } else {
                        out.values.push(T::default());
                        elem_valid.append(false);
                    }
                }
            }
            self.tmp = tmp;
        } else {
            // No null element among these slots: the values go in as they are.
            self.put(valid, out)?;
            if let Some(elem_valid) = out.elem_valid.as_mut() {
                elem_valid.append_n(valid, true);
            }
        }
        self.at += stop;
        Ok(stopped)
    }

    /// A list page whose slots are all elements with values: row starts
    /// straight from the repetition runs, values put as one stretch.
    /// Returns whether a row past the `n`th has started.
    fn walk_dense(&mut self, n: usize, out: &mut Out<T>) -> Result<bool, ReadError> {
        if !self.page_proven() {
            self.unprove(out);
        }
        let first = (out.values.len() + out.skipped) as i64;
        let fresh = out.starts.is_empty();
        let page = self
            .page
            .as_mut()
            .ok_or_else(|| ReadError::new("levels without a page"))?;
        let left = page.left;
        let starts = &mut out.starts;
        let (walked, found) = page
            .rep
            .row_starts(&self.buf, left, n - out.rows, |i| starts.push(first + i as i64))?;
        if fresh && walked > 0 && out.starts.first() != Some(&first) {
            return Err(ReadError::new("the first page continues a row that never started"));
        }
        page.left -= walked;
        out.rows += found;
        out.row_nulls.append_n_non_nulls(found);
        self.put(walked, out)?;
        if let Some(elem_valid) = out.elem_valid.as_mut() {
            elem_valid.append_n(walked, true);
        }
        // Stopped before the row past the `n`th.
        Ok(walked < left)
    }

    /// The general walk over a chunk of level slots: row starts, null and
    /// empty rows, null elements. Returns (where it stopped, whether a row
    /// past the `n`th started there, elements so far, values to take).
    fn walk_slots(
        r: &[u32],
        d: &[u32],
        n: usize,
        element_def: u32,
        max_def: u32,
        out: &mut Out<T>,
        first: i64,
    ) -> (usize, bool, i64, usize) {
        let mut stop = r.len();
        let mut stopped = false;
        let mut elements = first;
        let mut valid = 0usize;
        for (i, (&rv, &dv)) in r.iter().zip(d).enumerate() {
            if rv == 0 {
                if out.rows == n {
                    stop = i;
                    stopped = true;
                    break;
                }
                out.rows += 1;
                out.starts.push(elements);
                if dv + 1 < element_def {
                    out.row_nulls.append_null();
                } else {
                    out.row_nulls.append_non_null();
                }
            }
            if dv >= element_def {
                elements += 1;
                if dv == max_def {
                    valid += 1;
                }
            }
        }
        (stop, stopped, elements, valid)
    }

    /// `n` stand-ins as an array of the target type: sliced from one array
    /// per thread, type and value, grown as needed (no buffer per batch or
    /// per row group).
    fn stand_ins(&mut self, n: usize) -> Result<ArrayRef, ReadError> {
        let target = &self.plan.target;
        let good = self
            .proof
            .as_ref()
            .ok_or_else(|| ReadError::new("a proven batch without a judge"))?
            .good;
        let key = good.to_target(target);
        // A batch of more elements than this gets its own (not kept: at
        // most 32 MB stay per thread and type).
        const KEEP: usize = 1 << 22;
        if n > KEEP {
            return T::array(vec![good; n], None, target);
        }
        STAND_INS.with(|cache| {
            let mut cache = cache.borrow_mut();
            let at = cache.iter().position(|(t, v, _)| t == target && *v == key);
            if let Some(i) = at
                && cache[i].2.len() >= n
            {
                return Ok(cache[i].2.slice(0, n));
            }
            let have = at.map_or(0, |i| cache[i].2.len());
            let fill = T::array(vec![good; n.max(have.saturating_mul(2)).min(KEEP)], None, target)?;
            match at {
                Some(i) => cache[i].2 = fill.clone(),
                None => cache.push((target.clone(), key, fill.clone())),
            }
            Ok(fill.slice(0, n))
        })
    }

    fn build(&mut self, out: Out<T>) -> Result<ArrayRef, ReadError> {
        let Out {
            values,
            proven,
            skipped,
            mut starts,
            mut row_nulls,
            elem_valid,
            ..
        } = out;
        let total = values.len() + skipped;
        let Some(list) = self.plan.list.clone() else {
            return T::array(values, row_nulls.finish(), &self.plan.target);
        };
        let items = if proven {
            self.stand_ins(skipped)?
        } else {
            let elem_nulls = elem_valid
                .map(|mut b| NullBuffer::new(b.finish()))
                .filter(|n| n.null_count() > 0);
            T::array(values, elem_nulls, &self.plan.target)?
        };
        starts.push(total as i64);
        let nulls = row_nulls.finish();
        Ok(if list.large {
            Arc::new(LargeListArray::try_new(
                list.field.clone(),
                OffsetBuffer::new(ScalarBuffer::from(starts)),
                items,
                nulls,
            )?)
        } else {
            let offsets: Vec<i32> = starts
                .iter()
                .map(|&s| i32::try_from(s))
                .collect::<Result<_, _>>()
                .map_err(|_| ReadError::new("a batch's list offsets overflow 32 bits"))?;
            Arc::new(ListArray::try_new(
                list.field.clone(),
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                items,
                nulls,
            )?)
        })
    }

    /// After the last batch: the rest of the chunk must start no further
    /// row.
    pub(super) fn finish(&mut self) -> Result<(), ReadError> {
        if !self.done && (self.at < self.len || self.refill()?) {
            return Err(super::more_rows(self.footer_rows));
        }
        if self.handed != self.footer_rows {
            return Err(super::fewer_rows(self.footer_rows, self.handed));
        }
        Ok(())
    }
}
