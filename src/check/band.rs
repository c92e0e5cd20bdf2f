//! The tokenizer band of an `index` column: ids in [T, P), where T is the
//! tokenizer's size (`tokenizer_size`) and P the embedding's rows (`size`).
//!
//! Such ids do not crash anything: the embedding has rows for them, padded
//! (Megatron pads to a multiple of 128 × tensor parallelism, GPT-2's 50257
//! to 50304), but the tokenizer never emits them, so their rows are never
//! trained and a model fed them learns from noise. They are counted under
//! their own rule, apart from the ids >= P that the `index` rule counts.
//!
//! Also here: the range of the type a column is stored in. A type that
//! cannot hold the largest valid id is that file's error, whatever its
//! values: ids past the type wrapped when the data was written (a uint16
//! cast of a 128K vocabulary) and now look valid.

use arrow::array::downcast_integer;
use arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray};
use arrow::datatypes::{ArrowPrimitiveType, DataType, Float16Type, Float32Type, Float64Type};

use super::{ColumnCheck, Place};
use crate::check::tally::{Spot, Tally, Value};
use crate::schema::{ColumnSpec, ValueRule};

/// Counts the values of `array` in [lo, hi) into check `slot`: a column
/// of numbers, or a list (list, large list, fixed-size list) of them, whose
/// elements are counted. Nulls, fractions and other types are the other
/// rules' business and are skipped here.
pub(crate) fn check_band(col: &ColumnCheck, array: &dyn Array, slot: usize, at: Place, tally: &mut Tally) {
    let (Some(lo), ValueSize(Some(hi))) = (col.spec.tokenizer_size, ValueSize::of(col)) else {
        return;
    };
    let band = |offs, listed| Band {
        offs,
        listed,
        lo,
        hi,
        slot,
        at,
    };
    match array.data_type() {
        DataType::List(_) => {
            let l = array.as_list::<i32>();
            let offs: Vec<usize> = l.offsets().iter().map(|&o| o as usize).collect();
            leaves(l.values(), l.nulls(), &band(&offs, true), tally);
        }
        DataType::LargeList(_) => {
            let l = array.as_list::<i64>();
            let offs: Vec<usize> = l.offsets().iter().map(|&o| o as usize).collect();
            leaves(l.values(), l.nulls(), &band(&offs, true), tally);
        }
        DataType::FixedSizeList(_, n) => {
            let l = array.as_fixed_size_list();
            let n = *n as usize;
            // The child of a sliced fixed-size list is sliced with it.
            let offs: Vec<usize> = (0..=l.len()).map(|i| i * n).collect();
            leaves(l.values(), l.nulls(), &band(&offs, true), tally);
        }
        _ => {
            let offs: Vec<usize> = (0..=array.len()).collect();
            scan(array, 0..array.len(), &band(&offs, false), tally);
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

/// Where a band's values are counted: rows `offs` (row r holds elements
/// `offs[r]..offs[r+1]`; `listed` when they are list elements), the band
/// [lo, hi), and the check's slot and place in the file.
struct Band<'a> {
    offs: &'a [usize],
    listed: bool,
    lo: i128,
    hi: i128,
    slot: usize,
    at: Place,
}

fn leaves(values: &ArrayRef, rows_nulls: Option<&arrow::buffer::NullBuffer>, band: &Band, tally: &mut Tally) {
    let offs = band.offs;
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
                scan(values.as_ref(), offs[r]..offs[r + 1], band, tally);
            }
        }
        return;
    }
    scan(values.as_ref(), first..last, band, tally);
}

/// Counts elements `range` of `a` in the band.
fn scan(a: &dyn Array, range: std::ops::Range<usize>, band: &Band, tally: &mut Tally) {
    macro_rules! ints {
        ($t:ty) => {
            band_ints::<$t>(a.as_primitive::<$t>(), range, band, tally)
        };
    }
    downcast_integer! {
        a.data_type() => (ints),
        DataType::Float16 => band_floats(a.as_primitive::<Float16Type>(), range, band, tally),
        DataType::Float32 => band_floats(a.as_primitive::<Float32Type>(), range, band, tally),
        DataType::Float64 => band_floats(a.as_primitive::<Float64Type>(), range, band, tally),
        DataType::Dictionary(_, _) => band_dictionary(a, range, band, tally),
        _ => {}
    }
}

/// A dictionary column (as Arrow IPC and Parquet dictionaries read): each
/// entry judged once, then each valid row's key looked up.
fn band_dictionary(a: &dyn Array, range: std::ops::Range<usize>, band: &Band, tally: &mut Tally) {
    let d = a.as_any_dictionary();
    let values = d.values();
    let entries: Vec<Option<Value>> = (0..values.len()).map(|j| in_band(values.as_ref(), j, band)).collect();
    if entries.iter().all(Option::is_none) {
        return;
    }
    let keys = d.normalized_keys();
    for e in range {
        if a.is_valid(e)
            && let Some(Some(v)) = keys.get(e).map(|&k| entries.get(k).cloned().flatten())
        {
            hit(e, v, band, tally);
        }
    }
}

/// Entry `j` of a dictionary's values, when it is a number in the band.
fn in_band(values: &dyn Array, j: usize, band: &Band) -> Option<Value> {
    if values.is_null(j) {
        return None;
    }
    let whole = |v: f64| {
        crate::schema::float_to_whole(v)
            .filter(|w| band.lo <= *w && *w < band.hi)
            .map(|_| Value::Float(v))
    };
    macro_rules! int {
        ($t:ty) => {{
            let v: i128 = values.as_primitive::<$t>().value(j).into();
            (band.lo <= v && v < band.hi).then_some(Value::Int(v))
        }};
    }
    downcast_integer! {
        values.data_type() => (int),
        DataType::Float16 => whole(values.as_primitive::<Float16Type>().value(j).into()),
        DataType::Float32 => whole(values.as_primitive::<Float32Type>().value(j).into()),
        DataType::Float64 => whole(values.as_primitive::<Float64Type>().value(j)),
        _ => None,
    }
}

fn band_ints<T: ArrowPrimitiveType>(
    a: &PrimitiveArray<T>,
    range: std::ops::Range<usize>,
    band: &Band,
    tally: &mut Tally,
) where
    T::Native: Into<i128>,
{
    let vals = &a.values()[range.clone()];
    let inside = |v: T::Native| {
        let v: i128 = v.into();
        band.lo <= v && v < band.hi
    };
    if !vals.iter().any(|&v| inside(v)) {
        return;
    }
    for (i, &v) in vals.iter().enumerate() {
        let e = range.start + i;
        if inside(v) && a.is_valid(e) {
            hit(e, Value::Int(v.into()), band, tally);
        }
    }
}

fn band_floats<T: ArrowPrimitiveType>(
    a: &PrimitiveArray<T>,
    range: std::ops::Range<usize>,
    band: &Band,
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
            && band.lo <= w
            && w < band.hi
        {
            hit(e, Value::Float(v), band, tally);
        }
    }
}

fn hit(e: usize, value: Value, band: &Band, tally: &mut Tally) {
    let Band {
        offs, listed, slot, at, ..
    } = *band;
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

/// The largest whole number up to which `t` (or its lists' leaf type)
/// holds every whole number, and the type's NumPy name; `None` for types
/// that hold no numbers. Floats hold every integer up to 2^(mantissa + 1).
pub(crate) fn stored_limit(t: &DataType) -> Option<(i128, &'static str)> {
    Some(match t {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            return stored_limit(f.data_type());
        }
        DataType::Dictionary(_, v) => return stored_limit(v),
        DataType::Int8 => (i8::MAX.into(), "int8"),
        DataType::Int16 => (i16::MAX.into(), "int16"),
        DataType::Int32 => (i32::MAX.into(), "int32"),
        DataType::Int64 => (i64::MAX.into(), "int64"),
        DataType::UInt8 => (u8::MAX.into(), "uint8"),
        DataType::UInt16 => (u16::MAX.into(), "uint16"),
        DataType::UInt32 => (u32::MAX.into(), "uint32"),
        DataType::UInt64 => (u64::MAX.into(), "uint64"),
        DataType::Float16 => (1 << 11, "float16"),
        DataType::Float32 => (1 << 24, "float32"),
        DataType::Float64 => (1 << 53, "float64"),
        _ => return None,
    })
}

/// `n` with thousands separators: 65,536.
fn grouped(n: i128) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// The error of a `class` or `index` column stored in a type that cannot
/// hold its largest valid value (`num_classes` − 1; `tokenizer_size` − 1,
/// else `size` − 1): the larger values were wrapped, clipped or rounded
/// when the data was written, and now look valid. `t` is the type the file
/// stores (not a wider one a reader cast it to). Image masks are exempt:
/// their bit depth is each file's own (their 16-bit hint covers them).
pub(crate) fn too_narrow(spec: &ColumnSpec, t: &DataType) -> Option<String> {
    if spec.is_pixels() {
        return None;
    }
    let (top, what, ids) = match (&spec.values, spec.tokenizer_size) {
        (ValueRule::Index { .. }, Some(t)) => (t - 1, format!("tokenizer_size {t}"), true),
        (ValueRule::Index { size, .. }, None) => (size - 1, format!("size {size}"), true),
        (ValueRule::Class { num_classes, .. }, _) => (num_classes - 1, format!("num_classes {num_classes}"), false),
        _ => return None,
    };
    let (limit, name) = stored_limit(t)?;
    if top <= limit {
        return None;
    }
    let float = matches!(name, "float16" | "float32" | "float64");
    let (noun, larger, written, fix) = if ids {
        ("id", "the tokenizer's larger ids", "the shards were", "re-tokenize")
    } else {
        ("label", "the larger labels", "the data was", "rewrite the labels")
    };
    Some(if float {
        format!(
            "stored as {name}, which cannot hold {noun} {top} ({what}) exactly: {noun}s above {} cannot all be stored exactly in {name}, so {larger} were rounded when {written} written; {fix} with an integer dtype",
            grouped(limit)
        )
    } else {
        format!(
            "stored as {name}, which cannot hold {noun} {top} ({what}): {noun}s ≥ {} cannot be stored in {name}, so {larger} were wrapped or clipped when {written} written; {fix} with a wider dtype",
            grouped(limit + 1)
        )
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use arrow::array::{
        DictionaryArray, FixedSizeListArray, Float16Array, Float64Array, Int8Array, Int32Array, Int64Array, ListArray,
        RecordBatch, UInt8Array, UInt64Array,
    };
    use arrow::buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
    use arrow::datatypes::{Field, Float16Type, Int8Type, Int32Type};

    use super::*;
    use crate::check::Validator;
    use crate::schema::Schema;

    type F16 = <Float16Type as ArrowPrimitiveType>::Native;

    /// Ids 0..10 come from the tokenizer, 10..16 are padding rows.
    fn padded() -> Validator {
        let yaml = "version: 1\ncolumns:\n  v: {kind: index, size: 16, tokenizer_size: 10}\n";
        Validator::new(Schema::from_yaml(yaml, Path::new("s.yaml")).unwrap(), 100)
    }

    /// (rule, row, pos, value) of every violation, batch starting at row 10.
    fn logged(v: &Validator, a: ArrayRef) -> Vec<(String, u64, Option<u64>, Value)> {
        let batch = RecordBatch::try_from_iter([("v", a)]).unwrap();
        let mut t = v.tally();
        t.log = Some(Vec::new());
        assert!(v.check_batch(&batch, 0, 10, &mut t).is_empty());
        let log = t.log.unwrap();
        log.iter()
            .map(|l| {
                (
                    format!("{:?}", v.plan()[l.check].1),
                    l.spot.row,
                    l.spot.pos,
                    l.value.clone(),
                )
            })
            .collect()
    }

    fn band(row: u64, pos: Option<u64>, v: Value) -> (String, u64, Option<u64>, Value) {
        ("TokenizerSize".to_string(), row, pos, v)
    }

    fn index(row: u64, pos: Option<u64>, v: Value) -> (String, u64, Option<u64>, Value) {
        ("Index".to_string(), row, pos, v)
    }

    #[test]
    fn the_band_is_half_open_at_both_ends() {
        let v = padded();
        let a = Arc::new(Int64Array::from(vec![9, 10, 15, 16, -1, i64::MAX]));
        let want = vec![
            index(13, None, Value::Int(16)),
            index(14, None, Value::Int(-1)),
            index(15, None, Value::Int(i64::MAX.into())),
            band(11, None, Value::Int(10)),
            band(12, None, Value::Int(15)),
        ];
        assert_eq!(logged(&v, a), want);
    }

    #[test]
    fn each_width_extreme_is_outside_the_band() {
        let v = padded();
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(Int8Array::from(vec![i8::MIN, 10, i8::MAX])),
            Arc::new(UInt8Array::from(vec![u8::MAX, 10, 0])),
            Arc::new(UInt64Array::from(vec![u64::MAX, 10, 1 << 63])),
        ];
        for a in arrays {
            let t = a.data_type().clone();
            let bands: Vec<_> = logged(&v, a).into_iter().filter(|h| h.0 == "TokenizerSize").collect();
            assert_eq!(bands, [band(11, None, Value::Int(10))], "{t}");
        }
    }

    #[test]
    fn values_under_nulls_are_not_in_the_band() {
        let v = padded();
        let a = Int32Array::new(
            ScalarBuffer::from(vec![10, 12]),
            Some(NullBuffer::from(vec![false, true])),
        );
        let want = vec![
            ("Null".to_string(), 10, None, Value::Null),
            band(11, None, Value::Int(12)),
        ];
        assert_eq!(logged(&v, Arc::new(a)), want);
    }

    /// [[1, 12], null (covering 11), [], [13]]
    fn lists() -> ListArray {
        let field = Arc::new(Field::new("item", DataType::Int32, true));
        let offsets = OffsetBuffer::new(vec![0, 2, 3, 3, 4].into());
        let child = Arc::new(Int32Array::from(vec![1, 12, 11, 13]));
        let nulls = NullBuffer::from(vec![true, false, true, true]);
        ListArray::new(field, offsets, child, Some(nulls))
    }

    #[test]
    fn list_elements_in_the_band_report_row_and_position() {
        let want = vec![
            ("Null".to_string(), 11, None, Value::Null),
            band(10, Some(1), Value::Int(12)),
            band(13, Some(0), Value::Int(13)),
        ];
        assert_eq!(logged(&padded(), Arc::new(lists())), want);
    }

    #[test]
    fn a_sliced_list_counts_from_its_own_first_row() {
        let want = vec![
            ("Null".to_string(), 10, None, Value::Null),
            band(12, Some(0), Value::Int(13)),
        ];
        assert_eq!(logged(&padded(), Arc::new(lists().slice(1, 3))), want);
    }

    #[test]
    fn a_list_without_null_rows_is_scanned_whole() {
        let a = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(10), Some(1)]),
            Some(vec![]),
            Some(vec![Some(2), Some(11)]),
        ]);
        let want = vec![band(10, Some(0), Value::Int(10)), band(12, Some(1), Value::Int(11))];
        assert_eq!(logged(&padded(), Arc::new(a.slice(0, 3))), want);
    }

    #[test]
    fn fixed_size_lists_and_their_slices() {
        let a = FixedSizeListArray::from_iter_primitive::<Int32Type, _, _>(
            vec![Some(vec![Some(10), Some(1)]), None, Some(vec![Some(2), Some(11)])],
            2,
        );
        let want = vec![
            ("Null".to_string(), 11, None, Value::Null),
            band(10, Some(0), Value::Int(10)),
            band(12, Some(1), Value::Int(11)),
        ];
        assert_eq!(logged(&padded(), Arc::new(a.clone())), want);
        let want = vec![
            ("Null".to_string(), 10, None, Value::Null),
            band(11, Some(1), Value::Int(11)),
        ];
        assert_eq!(logged(&padded(), Arc::new(a.slice(1, 2))), want);
    }

    #[test]
    fn whole_floats_count_and_fractions_do_not() {
        let a = Float64Array::from(vec![10.0, 10.5, f64::NAN, 16.0, 9.0, -0.0]);
        let got = logged(&padded(), Arc::new(a));
        let bands: Vec<_> = got.iter().filter(|h| h.0 == "TokenizerSize").cloned().collect();
        assert_eq!(bands, [band(10, None, Value::Float(10.0))]);
        assert_eq!(got.iter().filter(|h| h.0 == "NotInteger").count(), 2);
        assert_eq!(got.iter().filter(|h| h.0 == "Index").count(), 1);
    }

    #[test]
    fn float16_ids_in_the_band_count() {
        let a = Float16Array::from(vec![F16::from_f32(10.0), F16::from_f32(1.0)]);
        assert_eq!(logged(&padded(), Arc::new(a)), [band(10, None, Value::Float(10.0))]);
    }

    #[test]
    fn dictionary_ids_in_the_band_count() {
        let keys = Int8Array::from(vec![0, 1]);
        let a = DictionaryArray::<Int8Type>::try_new(keys, Arc::new(Int64Array::from(vec![1, 12]))).unwrap();
        assert_eq!(logged(&padded(), Arc::new(a)), [band(11, None, Value::Int(12))]);
    }

    #[test]
    fn the_band_records_evidence() {
        let v = padded();
        let batch = RecordBatch::try_from_iter([("v", Arc::new(Int64Array::from(vec![15, 10])) as ArrayRef)]).unwrap();
        let mut t = v.tally();
        assert!(v.check_batch(&batch, 0, 0, &mut t).is_empty());
        let slot = v.column_check(0).slots.tokenizer_size.unwrap();
        assert_eq!(t.checks[slot].violations, 2);
        assert_eq!(
            (t.checks[slot].evidence.bad_min, t.checks[slot].evidence.bad_max),
            (Some(10), Some(15))
        );
        assert_eq!(t.checks[v.column_check(0).slots.value].violations, 0);
    }

    #[test]
    fn stored_limits_of_every_width() {
        let want: [(DataType, i128); 8] = [
            (DataType::Int8, 127),
            (DataType::Int16, 32767),
            (DataType::Int32, (1 << 31) - 1),
            (DataType::Int64, (1 << 63) - 1),
            (DataType::UInt8, 255),
            (DataType::UInt16, 65535),
            (DataType::UInt32, (1 << 32) - 1),
            (DataType::UInt64, (1 << 64) - 1),
        ];
        for (t, limit) in want {
            assert_eq!(stored_limit(&t).map(|l| l.0), Some(limit), "{t}");
        }
        let dict = DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::UInt16));
        assert_eq!(stored_limit(&dict), Some((65535, "uint16")));
        assert_eq!(stored_limit(&DataType::Float64), Some((1 << 53, "float64")));
        assert_eq!(stored_limit(&DataType::Utf8), None);
    }

    #[test]
    fn grouped_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(-1234567), "-1,234,567");
        assert_eq!(grouped(u64::MAX.into()), "18,446,744,073,709,551,615");
    }

    fn narrow(column: &str, t: DataType) -> Option<String> {
        let yaml = format!("columns:\n  c: {column}\n");
        let schema = Schema::from_yaml(&yaml, "t.yaml".as_ref()).unwrap();
        too_narrow(&schema.columns[0], &t)
    }

    #[test]
    fn a_type_holds_a_bound_exactly_up_to_its_range() {
        // uint16 holds ids 0..=65535: a size of 65536 fits, 65537 does not.
        assert_eq!(narrow("{kind: index, size: 65536}", DataType::UInt16), None);
        assert_eq!(
            narrow("{kind: index, size: 65537}", DataType::UInt16).unwrap(),
            "stored as uint16, which cannot hold id 65536 (size 65537): ids ≥ 65,536 cannot be stored in uint16, so the tokenizer's larger ids were wrapped or clipped when the shards were written; re-tokenize with a wider dtype"
        );
        // Signed types hold half: int16 to 32767, int32 to 2^31 - 1.
        assert_eq!(narrow("{kind: index, size: 32768}", DataType::Int16), None);
        assert!(narrow("{kind: index, size: 32769}", DataType::Int16).is_some());
        assert_eq!(narrow("{kind: index, size: 2147483648}", DataType::Int32), None);
        assert!(narrow("{kind: index, size: 2147483649}", DataType::Int32).is_some());
        assert_eq!(narrow("{kind: class, num_classes: 128}", DataType::Int8), None);
        assert_eq!(
            narrow("{kind: class, num_classes: 129}", DataType::Int8).unwrap(),
            "stored as int8, which cannot hold label 128 (num_classes 129): labels ≥ 128 cannot be stored in int8, so the larger labels were wrapped or clipped when the data was written; rewrite the labels with a wider dtype"
        );
        assert_eq!(narrow("{kind: class, num_classes: 256}", DataType::UInt8), None);
        assert!(narrow("{kind: class, num_classes: 257}", DataType::UInt8).is_some());
        // A list's leaf type is what counts; the tokenizer's size, when set.
        let list = DataType::List(std::sync::Arc::new(arrow::datatypes::Field::new(
            "item",
            DataType::UInt16,
            true,
        )));
        assert!(narrow("{kind: index, size: 128256}", list.clone()).is_some());
        assert_eq!(narrow("{kind: index, size: 65664, tokenizer_size: 65536}", list), None);
        // float16 holds every whole number up to 2048, float32 up to 2^24.
        assert_eq!(narrow("{kind: index, size: 2049}", DataType::Float16), None);
        assert_eq!(
            narrow("{kind: index, size: 2050}", DataType::Float16).unwrap(),
            "stored as float16, which cannot hold id 2049 (size 2050) exactly: ids above 2,048 cannot all be stored exactly in float16, so the tokenizer's larger ids were rounded when the shards were written; re-tokenize with an integer dtype"
        );
        assert_eq!(narrow("{kind: index, size: 16777217}", DataType::Float32), None);
        assert!(narrow("{kind: index, size: 16777218}", DataType::Float32).is_some());
        // Wide types, other kinds and texts never.
        assert_eq!(narrow("{kind: index, size: 128256}", DataType::UInt32), None);
        assert_eq!(narrow("{kind: range, min: 0, max: 100000}", DataType::UInt8), None);
        assert_eq!(narrow("{kind: index, size: 128256}", DataType::Utf8), None);
    }

    #[test]
    fn the_widest_types_at_their_limits() {
        assert_eq!(narrow("{kind: index, size: 4294967296}", DataType::UInt32), None);
        assert!(narrow("{kind: index, size: 4294967297}", DataType::UInt32).is_some());
        assert_eq!(
            narrow("{kind: class, num_classes: 9223372036854775807}", DataType::Int64),
            None
        );
        assert_eq!(narrow("{kind: index, size: 9007199254740993}", DataType::Float64), None);
        assert!(narrow("{kind: index, size: 9007199254740994}", DataType::Float64).is_some());
        // A dictionary is judged by its values' type.
        let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::UInt8));
        assert!(narrow("{kind: class, num_classes: 257}", dict.clone()).is_some());
        assert_eq!(narrow("{kind: class, num_classes: 256}", dict), None);
    }
}
