//! The tokenizer band of an `index` column: ids in [T, P), where T is the
//! tokenizer's size (`tokenizer_size`) and P the embedding's rows (`size`).
//!
//! Such ids do not crash anything: the embedding has rows for them, padded
//! (Megatron pads to a multiple of 128 × tensor parallelism, GPT-2's 50257
//! to 50304), but the tokenizer never emits them, so their rows are never
//! trained and a model fed them learns from noise. They are counted under
//! their own rule, apart from the ids >= P that the `index` rule counts.
//!
//! Also here: the capacity of a column's integer type, so that a report
//! can warn when the stored type cannot hold the largest id (ids wrapped
//! when the data was written, e.g. a uint16 cast of a 128K vocabulary).

use arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray};
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};

use super::{ColumnCheck, Place};
use crate::report::{Spot, Tally, Value};

/// Counts the values of `array` in [lo, hi) into check `slot`: a column
/// of numbers, or a list (list, large list, fixed-size list) of them, whose
/// elements are counted. Nulls, fractions and other types are the other
/// rules' business and are skipped here.
pub(crate) fn check_band(col: &ColumnCheck, array: &dyn Array, slot: usize, at: Place, tally: &mut Tally) {
    let (Some(lo), ValueSize(Some(hi))) = (col.spec.tokenizer_size, ValueSize::of(col)) else {
        return;
    };
    match array.data_type() {
        DataType::List(_) => {
            let l = array.as_list::<i32>();
            let offs: Vec<usize> = l.offsets().iter().map(|&o| o as usize).collect();
            leaves(l.values(), &offs, l.nulls(), lo, hi, slot, at, tally);
        }
        DataType::LargeList(_) => {
            let l = array.as_list::<i64>();
            let offs: Vec<usize> = l.offsets().iter().map(|&o| o as usize).collect();
            leaves(l.values(), &offs, l.nulls(), lo, hi, slot, at, tally);
        }
        DataType::FixedSizeList(_, n) => {
            let l = array.as_fixed_size_list();
            let n = *n as usize;
            // The child of a sliced fixed-size list is sliced with it.
            let offs: Vec<usize> = (0..=l.len()).map(|i| i * n).collect();
            leaves(l.values(), &offs, l.nulls(), lo, hi, slot, at, tally);
        }
        _ => {
            let offs: Vec<usize> = (0..=array.len()).collect();
            scan(array, 0..array.len(), &offs, false, lo, hi, slot, at, tally);
        }
    }
}

/// P of an index column.
struct ValueSize(Option<i128>);

impl ValueSize {
    fn of(col: &ColumnCheck) -> ValueSize {
        match &col.spec.values {
            crate::schema::ValueRule::Index { size, .. } => ValueSize(Some(*size)),
            _ => ValueSize(None),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn leaves(
    values: &ArrayRef,
    offs: &[usize],
    rows_nulls: Option<&arrow::buffer::NullBuffer>,
    lo: i128,
    hi: i128,
    slot: usize,
    at: Place,
    tally: &mut Tally,
) {
    if offs.is_empty() {
        return;
    }
    // Only one level of lists: deeper nesting is left to the index rule.
    if matches!(
        values.data_type(),
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..)
    ) {
        return;
    }
    let (first, last) = (offs[0], offs[offs.len() - 1]);
    // Rows that are null hold no elements that count.
    if let Some(n) = rows_nulls.filter(|n| n.null_count() > 0) {
        for r in 0..offs.len() - 1 {
            if n.is_valid(r) {
                scan(
                    values.as_ref(),
                    offs[r]..offs[r + 1],
                    offs,
                    true,
                    lo,
                    hi,
                    slot,
                    at,
                    tally,
                );
            }
        }
        return;
    }
    scan(values.as_ref(), first..last, offs, true, lo, hi, slot, at, tally);
}

/// Counts elements `range` of `a` in [lo, hi); `offs` maps elements to rows
/// (row r holds `offs[r]..offs[r+1]`).
#[allow(clippy::too_many_arguments)]
fn scan(
    a: &dyn Array,
    range: std::ops::Range<usize>,
    offs: &[usize],
    listed: bool,
    lo: i128,
    hi: i128,
    slot: usize,
    at: Place,
    tally: &mut Tally,
) {
    macro_rules! ints {
        ($t:ty) => {
            band_ints::<$t>(
                a.as_primitive::<$t>(),
                range,
                offs,
                listed,
                lo,
                hi,
                slot,
                at,
                tally,
            )
        };
    }
    match a.data_type() {
        DataType::Int8 => ints!(Int8Type),
        DataType::Int16 => ints!(Int16Type),
        DataType::Int32 => ints!(Int32Type),
        DataType::Int64 => ints!(Int64Type),
        DataType::UInt8 => ints!(UInt8Type),
        DataType::UInt16 => ints!(UInt16Type),
        DataType::UInt32 => ints!(UInt32Type),
        DataType::UInt64 => ints!(UInt64Type),
        DataType::Float32 => band_floats(
            a.as_primitive::<Float32Type>(),
            range,
            offs,
            listed,
            lo,
            hi,
            slot,
            at,
            tally,
        ),
        DataType::Float64 => band_floats(
            a.as_primitive::<Float64Type>(),
            range,
            offs,
            listed,
            lo,
            hi,
            slot,
            at,
            tally,
        ),
        _ => {}
    }
}

#[allow(clippy::too_many_arguments)]
fn band_ints<T: ArrowPrimitiveType>(
    a: &PrimitiveArray<T>,
    range: std::ops::Range<usize>,
    offs: &[usize],
    listed: bool,
    lo: i128,
    hi: i128,
    slot: usize,
    at: Place,
    tally: &mut Tally,
) where
    T::Native: Into<i128>,
{
    let vals = &a.values()[range.clone()];
    let inside = |v: T::Native| {
        let v: i128 = v.into();
        lo <= v && v < hi
    };
    if !vals.iter().any(|&v| inside(v)) {
        return;
    }
    for (i, &v) in vals.iter().enumerate() {
        let e = range.start + i;
        if inside(v) && a.is_valid(e) {
            hit(e, offs, listed, Value::Int(v.into()), slot, at, tally);
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn band_floats<T: ArrowPrimitiveType>(
    a: &PrimitiveArray<T>,
    range: std::ops::Range<usize>,
    offs: &[usize],
    listed: bool,
    lo: i128,
    hi: i128,
    slot: usize,
    at: Place,
    tally: &mut Tally,
) where
    T::Native: Into<f64>,
{
    for e in range {
        if a.is_null(e) {
            continue;
        }
        let v: f64 = a.value(e).into();
        if let Some(w) = crate::schema::float_to_whole(v)
            && lo <= w
            && w < hi
        {
            hit(e, offs, listed, Value::Float(v), slot, at, tally);
        }
    }
}

fn hit(e: usize, offs: &[usize], listed: bool, value: Value, slot: usize, at: Place, tally: &mut Tally) {
    let spot = if listed {
        // The row whose elements hold e (rows may be empty: the last such).
        let r = offs.partition_point(|&o| o <= e).saturating_sub(1);
        Spot {
            row: at.first_row + r as u64,
            pos: Some((e - offs[r]) as u64),
            parent: None,
        }
    } else {
        Spot::row(at.first_row + e as u64)
    };
    if let Value::Int(w) = value {
        tally.checks[slot].evidence.bad_whole(w);
    }
    tally.hit(slot, at.file, spot, || value);
}

/// The largest value an integer column's (or its lists' leaf) type holds;
/// `None` for other types.
pub(crate) fn capacity(t: &DataType) -> Option<i128> {
    Some(match t {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => return capacity(f.data_type()),
        DataType::Dictionary(_, v) => return capacity(v),
        DataType::Int8 => i8::MAX.into(),
        DataType::Int16 => i16::MAX.into(),
        DataType::Int32 => i32::MAX.into(),
        DataType::Int64 => i64::MAX.into(),
        DataType::UInt8 => u8::MAX.into(),
        DataType::UInt16 => u16::MAX.into(),
        DataType::UInt32 => u32::MAX.into(),
        DataType::UInt64 => u64::MAX.into(),
        _ => return None,
    })
}
