//! Value rules over one array: dispatch on the Arrow type, then a kernel.

use std::ops::Range;

use arrow::array::downcast_integer;
use arrow::array::{Array, AsArray, BooleanArray, GenericStringArray, OffsetSizeTrait, PrimitiveArray};
use arrow::datatypes::{ArrowPrimitiveType, DataType, Float16Type, Float32Type, Float64Type};

use super::{ColumnCheck, Place, list, type_name};
use crate::check::tally::{Example, Logged, Spot, Tally, Value};

/// How one non-null value fares against the column's value rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Passes.
    Ok,
    /// Violates the kind's own rule (`class`, `index`, `values`, `range`).
    Bad,
    /// Not a whole number where one belongs (`not_integer`).
    NotInteger,
}

/// Maps a position of the array being checked to where it sits in the file.
pub(crate) type ToRow<'a> = &'a dyn Fn(usize) -> Spot;

/// Applies the value rule (and the null rule) to `array[range]`.
pub(crate) fn check_values(
    col: &ColumnCheck,
    array: &dyn Array,
    range: Range<usize>,
    to_row: ToRow,
    at: Place,
    tally: &mut Tally,
) -> Result<(), String> {
    if range.is_empty() {
        return Ok(());
    }
    macro_rules! ints {
        ($t:ty) => {
            ints::<$t>(col, array.as_primitive::<$t>(), range, to_row, at, tally)
        };
    }
    downcast_integer! {
        array.data_type() => (ints),
        DataType::Float16 => floats(
            col,
            array.as_primitive::<Float16Type>(),
            range,
            to_row,
            at,
            tally,
            |v| v.to_f64(),
        ),
        DataType::Float32 => floats(
            col,
            array.as_primitive::<Float32Type>(),
            range,
            to_row,
            at,
            tally,
            f64::from,
        ),
        DataType::Float64 => floats(
            col,
            array.as_primitive::<Float64Type>(),
            range,
            to_row,
            at,
            tally,
            |v| v,
        ),
        DataType::Boolean => bools(col, array.as_boolean(), range, to_row, at, tally),
        DataType::Utf8 => strings(col, array.as_string::<i32>(), range, to_row, at, tally),
        DataType::LargeUtf8 => strings(col, array.as_string::<i64>(), range, to_row, at, tally),
        DataType::Utf8View => {
            let a = array.as_string_view();
            generic(
                col,
                range,
                to_row,
                at,
                tally,
                |i| a.is_null(i),
                |i| {
                    let s = a.value(i);
                    (col.judge_str(s), Value::Str(s.to_string()))
                },
            );
        }
        DataType::Null => {
            if !col.spec.nullable {
                for i in range {
                    null_hit(col, tally, at, to_row(i));
                }
            }
        }
        DataType::Dictionary(_, _) => dictionary(col, array, range, to_row, at, tally)?,
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(_, _) => {
            list::check_list_values(col, array, range, to_row, at, tally)?
        }
        DataType::Union(_, _) => {
            let u = array.as_union();
            for i in range {
                let child = u.child(u.type_id(i));
                let off = u.value_offset(i);
                check_values(col, child.as_ref(), off..off + 1, &|_| to_row(i), at, tally)?;
            }
        }
        t => {
            return Err(format!(
                "has type {}, which holds no values the `{}` rule can check",
                type_name(t),
                col.spec.values.rule().name()
            ));
        }
    }
    Ok(())
}

/// Records a null, unless the column allows nulls.
#[inline]
pub(crate) fn null_hit(col: &ColumnCheck, tally: &mut Tally, at: Place, spot: Spot) {
    if !col.spec.nullable {
        tally.hit(col.slots.null, at.file, spot, || Value::Null);
    }
}

/// Records a non-null value's verdict.
#[inline]
fn verdict_hit(col: &ColumnCheck, tally: &mut Tally, at: Place, spot: Spot, verdict: Verdict, value: Value) {
    match verdict {
        Verdict::Ok => {}
        Verdict::Bad => {
            if let Some(w) = whole_of(&value) {
                tally.checks[col.slots.value].evidence.bad_whole(w);
            }
            tally.hit(col.slots.value, at.file, spot, || value);
        }
        Verdict::NotInteger => {
            let slot = col.slots.not_integer.unwrap_or(col.slots.value);
            if matches!(value, Value::Float(f) if f.is_finite()) {
                tally.checks[slot].evidence.saw_fraction = true;
            }
            tally.hit(slot, at.file, spot, || value);
        }
    }
}

fn whole_of(v: &Value) -> Option<i128> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Float(f) => crate::schema::float_to_whole(*f),
        _ => None,
    }
}

/// The per-value path for types without a kernel of their own.
fn generic(
    col: &ColumnCheck,
    range: Range<usize>,
    to_row: ToRow,
    at: Place,
    tally: &mut Tally,
    is_null: impl Fn(usize) -> bool,
    judge: impl Fn(usize) -> (Verdict, Value),
) {
    for i in range {
        if is_null(i) {
            null_hit(col, tally, at, to_row(i));
            continue;
        }
        let (verdict, value) = judge(i);
        if verdict != Verdict::Ok {
            verdict_hit(col, tally, at, to_row(i), verdict, value);
        }
    }
}

fn floats<T: ArrowPrimitiveType>(
    col: &ColumnCheck,
    a: &PrimitiveArray<T>,
    range: Range<usize>,
    to_row: ToRow,
    at: Place,
    tally: &mut Tally,
    widen: impl Fn(T::Native) -> f64,
) {
    let vals = a.values();
    let track_min = col.tracks_min();
    let mut min: Option<i128> = None;
    generic(
        col,
        range.clone(),
        to_row,
        at,
        tally,
        |i| a.is_null(i),
        |i| {
            let v = widen(vals[i]);
            (col.judge_float(v), Value::Float(v))
        },
    );
    if track_min {
        // Only this call's range: a list's runs come one call at a time.
        for i in range {
            if a.is_valid(i)
                && let Some(w) = crate::schema::float_to_whole(widen(vals[i]))
                && Some(w) != ignore(col)
            {
                min = Some(min.map_or(w, |m| m.min(w)));
            }
        }
        if let Some(m) = min {
            tally.checks[col.slots.value].evidence.seen_min(m);
        }
    }
}

fn bools(col: &ColumnCheck, a: &BooleanArray, range: Range<usize>, to_row: ToRow, at: Place, tally: &mut Tally) {
    generic(
        col,
        range,
        to_row,
        at,
        tally,
        |i| a.is_null(i),
        |i| {
            let v = i128::from(a.value(i));
            (col.judge_int(v), Value::Int(v))
        },
    );
}

fn strings<O: OffsetSizeTrait>(
    col: &ColumnCheck,
    a: &GenericStringArray<O>,
    range: Range<usize>,
    to_row: ToRow,
    at: Place,
    tally: &mut Tally,
) {
    generic(
        col,
        range,
        to_row,
        at,
        tally,
        |i| a.is_null(i),
        |i| {
            let s = a.value(i);
            (col.judge_str(s), Value::Str(s.to_string()))
        },
    );
}

fn ignore(col: &ColumnCheck) -> Option<i128> {
    col.interval.and_then(|i| i.extra)
}

/// Native integer types, with their range as i128.
pub(crate) trait IntNative: Copy + PartialOrd + Ord + Into<i128> + TryFrom<i128> + Send + Sync {
    const MIN_I: i128;
    const MAX_I: i128;
}

macro_rules! int_native {
    ($($t:ty),*) => {$(
        impl IntNative for $t {
            const MIN_I: i128 = <$t>::MIN as i128;
            const MAX_I: i128 = <$t>::MAX as i128;
        }
    )*};
}
int_native!(i8, i16, i32, i64, u8, u16, u32, u64);

/// Narrows `v` into `N`, clamping to its range.
fn clamp<N: IntNative>(v: i128) -> N {
    let c = v.clamp(N::MIN_I, N::MAX_I);
    match N::try_from(c) {
        Ok(n) => n,
        Err(_) => unreachable!("clamped into range"),
    }
}

/// Counts values outside `lo..=hi` and not equal to `extra`: the hot loop.
///
/// 64-bit compares vectorise only from SSE4.2/AVX2 on, which the x86-64
/// baseline lacks, so x86-64 picks an AVX2 build of the same loop at run time.
pub(crate) fn count_outside<N: IntNative>(vals: &[N], lo: N, hi: N, extra: Option<N>) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { count_outside_avx2(vals, lo, hi, extra) };
        }
    }
    count_outside_body(vals, lo, hi, extra)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn count_outside_avx2<N: IntNative>(vals: &[N], lo: N, hi: N, extra: Option<N>) -> u64 {
    count_outside_body(vals, lo, hi, extra)
}

#[inline(always)]
fn count_outside_body<N: IntNative>(vals: &[N], lo: N, hi: N, extra: Option<N>) -> u64 {
    // Chunks keep the per-lane counters narrow, which vectorises better.
    let mut total = 0u64;
    match extra {
        Some(x) => {
            for chunk in vals.chunks(1 << 16) {
                let n: u32 = chunk
                    .iter()
                    .map(|&v| (!((v >= lo) & (v <= hi)) & (v != x)) as u32)
                    .sum();
                total += u64::from(n);
            }
        }
        None => {
            for chunk in vals.chunks(1 << 16) {
                let n: u32 = chunk.iter().map(|&v| !((v >= lo) & (v <= hi)) as u32).sum();
                total += u64::from(n);
            }
        }
    }
    total
}

/// The smallest value that is not `skip`, vectorised like [`count_outside`].
fn min_except<N: IntNative>(vals: &[N], skip: Option<N>, top: N) -> Option<N> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { min_except_avx2(vals, skip, top) };
        }
    }
    min_except_body(vals, skip, top)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn min_except_avx2<N: IntNative>(vals: &[N], skip: Option<N>, top: N) -> Option<N> {
    min_except_body(vals, skip, top)
}

#[inline(always)]
fn min_except_body<N: IntNative>(vals: &[N], skip: Option<N>, top: N) -> Option<N> {
    match skip {
        Some(x) => vals.iter().map(|&v| if v == x { top } else { v }).min(),
        None => vals.iter().copied().min(),
    }
}

fn ints<T>(col: &ColumnCheck, a: &PrimitiveArray<T>, range: Range<usize>, to_row: ToRow, at: Place, tally: &mut Tally)
where
    T: ArrowPrimitiveType,
    T::Native: IntNative,
{
    let vals = &a.values()[range.clone()];
    let nulls = a
        .nulls()
        .filter(|n| n.null_count() > 0)
        .map(|n| n.slice(range.start, range.len()));
    let Some(iv) = col.interval else {
        // A `values` set with gaps: judge each value.
        generic(
            col,
            range,
            to_row,
            at,
            tally,
            |i| a.is_null(i),
            |i| {
                let v: i128 = a.value(i).into();
                (col.judge_int(v), Value::Int(v))
            },
        );
        return;
    };
    // The interval in N's own domain; an empty one stays empty (lo > hi).
    let empty = iv.lo > iv.hi || iv.lo > T::Native::MAX_I || iv.hi < T::Native::MIN_I;
    let (lo, hi): (T::Native, T::Native) = if empty {
        (clamp(i128::MAX), clamp(i128::MIN))
    } else {
        (clamp(iv.lo), clamp(iv.hi))
    };
    let extra: Option<T::Native> = iv.extra.and_then(|x| T::Native::try_from(x).ok());
    let mut bad = count_outside(vals, lo, hi, extra);
    if let Some(n) = &nulls {
        // Slots under nulls hold arbitrary values: take their verdicts back.
        for (i, &v) in vals.iter().enumerate() {
            if n.is_null(i) && !((v >= lo) & (v <= hi) | (Some(v) == extra)) {
                bad -= 1;
            }
        }
        if !col.spec.nullable {
            for i in 0..vals.len() {
                if n.is_null(i) {
                    null_hit(col, tally, at, to_row(range.start + i));
                }
            }
        }
    }
    if col.tracks_min() {
        let top: T::Native = clamp(i128::MAX);
        let m = match &nulls {
            None => min_except(vals, extra, top),
            Some(n) => vals
                .iter()
                .enumerate()
                .filter(|&(i, &v)| n.is_valid(i) && Some(v) != extra)
                .map(|(_, &v)| v)
                .min(),
        };
        if let Some(m) = m
            && (extra.is_none() || Some(m) != extra)
        {
            tally.checks[col.slots.value].evidence.seen_min(m.into());
        }
    }
    if bad == 0 {
        return;
    }
    // Something is there: find positions for examples and evidence.
    let check = &mut tally.checks[col.slots.value];
    check.violations += bad;
    let room = tally.max_examples;
    let ok = |v: T::Native| (v >= lo) & (v <= hi) | (Some(v) == extra);
    // Blocks without an offending value are skipped by a branch-free test,
    // so a few bad ids in a large batch do not cost a scalar pass over it.
    const BLOCK: usize = 64;
    let offending = vals
        .chunks(BLOCK)
        .enumerate()
        .filter(|(_, block)| !block.iter().fold(true, |all, &v| all & ok(v)));
    let positions = offending.flat_map(|(b, block)| block.iter().enumerate().map(move |(i, &v)| (b * BLOCK + i, v)));
    for (i, v) in positions {
        if ok(v) {
            continue;
        }
        if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
            continue;
        }
        let w: i128 = v.into();
        check.evidence.bad_whole(w);
        let wanted = check.examples.len() < room;
        if !wanted && tally.log.is_none() {
            continue;
        }
        let spot = to_row(range.start + i);
        if wanted {
            check.examples.push(Example {
                file: at.file,
                row: spot.row,
                value: Value::Int(w),
                xy: spot.xy(),
                origin: None,
            });
        }
        if let Some(log) = tally.log.as_mut() {
            log.push(Logged {
                check: col.slots.value,
                file: at.file,
                spot,
                value: Value::Int(w),
                origin: None,
            });
        }
    }
}

/// Dictionary arrays: judge each entry once, then look up each row's key.
/// Entries no row uses are never reported.
fn dictionary(
    col: &ColumnCheck,
    array: &dyn Array,
    range: Range<usize>,
    to_row: ToRow,
    at: Place,
    tally: &mut Tally,
) -> Result<(), String> {
    let dict = array.as_any_dictionary();
    let values = dict.values();
    if values.data_type().is_nested() {
        return Err(format!(
            "is dictionary-encoded over {}, which preflight does not check",
            type_name(values.data_type())
        ));
    }
    let keys = dict.normalized_keys();
    // Judge every entry into a scratch tally, one "row" per entry.
    let mut scratch = Tally::new(tally.checks.len(), usize::MAX);
    let mut verdicts: Vec<Option<(usize, Value)>> = vec![None; values.len()];
    for (e, verdict) in verdicts.iter_mut().enumerate() {
        let before: Vec<u64> = scratch.checks.iter().map(|c| c.violations).collect();
        check_values(
            col,
            values.as_ref(),
            e..e + 1,
            &|_| Spot::row(e as u64),
            at,
            &mut scratch,
        )?;
        for (slot, c) in scratch.checks.iter().enumerate() {
            if c.violations > before[slot] {
                let value = c.examples.last().map(|x| x.value.clone()).unwrap_or(Value::Null);
                *verdict = Some((slot, value));
            }
        }
    }
    let key_nulls = dict.keys().logical_nulls();
    for i in range {
        if key_nulls.as_ref().is_some_and(|n| n.is_null(i)) {
            null_hit(col, tally, at, to_row(i));
            continue;
        }
        let Some(&k) = keys.get(i) else { continue };
        if let Some(Some((slot, value))) = verdicts.get(k) {
            let slot = *slot;
            if slot == col.slots.null {
                null_hit(col, tally, at, to_row(i));
            } else if slot == col.slots.value {
                verdict_hit(col, tally, at, to_row(i), Verdict::Bad, value.clone());
            } else {
                verdict_hit(col, tally, at, to_row(i), Verdict::NotInteger, value.clone());
            }
        } else if col.tracks_min()
            && let Some(Value::Int(w)) = value_at(values.as_ref(), k)
            && Some(w) != ignore(col)
        {
            tally.checks[col.slots.value].evidence.seen_min(w);
        }
    }
    Ok(())
}

/// The whole-number value at `i` of an integer array, for evidence.
fn value_at(a: &dyn Array, i: usize) -> Option<Value> {
    macro_rules! get {
        ($t:ty) => {
            Some(Value::Int(a.as_primitive::<$t>().value(i).into()))
        };
    }
    if a.is_null(i) {
        return None;
    }
    downcast_integer! {
        a.data_type() => (get),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use arrow::array::{
        ArrayRef, BinaryArray, BooleanArray, DictionaryArray, Float16Array, Float32Array, Float64Array, Int8Array,
        Int16Array, Int32Array, Int64Array, NullArray, StringArray, UInt8Array, UInt16Array, UInt32Array, UInt64Array,
    };
    use arrow::buffer::{NullBuffer, ScalarBuffer};
    use arrow::datatypes::Int8Type;

    use super::*;
    use crate::check::Validator;

    type F16 = <Float16Type as ArrowPrimitiveType>::Native;
    use crate::schema::Schema;

    fn validator(col: &str) -> Validator {
        let yaml = format!("version: 1\ncolumns:\n  v: {col}\n");
        Validator::new(Schema::from_yaml(&yaml, Path::new("s.yaml")).unwrap(), 100)
    }

    /// Checks `a[range]` (rows numbered from 0) into a fresh tally.
    fn run_range(v: &Validator, a: &dyn Array, range: Range<usize>) -> Tally {
        let mut t = v.tally();
        let at = Place { file: 0, first_row: 0 };
        check_values(v.column_check(0), a, range, &|p| Spot::row(p as u64), at, &mut t).unwrap();
        t
    }

    fn run(v: &Validator, a: &dyn Array) -> Tally {
        run_range(v, a, 0..a.len())
    }

    /// (rule, count, [(row, value)]) for every check with violations.
    type Hits = Vec<(String, u64, Vec<(u64, Value)>)>;

    fn hits(v: &Validator, t: &Tally) -> Hits {
        v.plan()
            .iter()
            .zip(&t.checks)
            .filter(|(_, c)| c.violations > 0)
            .map(|((_, r), c)| {
                let ex = c.examples.iter().map(|e| (e.row, e.value.clone())).collect();
                (format!("{r:?}"), c.violations, ex)
            })
            .collect()
    }

    fn one(rule: &str, n: u64, ex: &[(u64, Value)]) -> Hits {
        vec![(rule.to_string(), n, ex.to_vec())]
    }

    fn int(v: i128) -> Value {
        Value::Int(v)
    }

    #[test]
    fn each_signed_width_against_a_bound_one_past_its_max() {
        // size = MAX + 1: every non-negative value fits, every negative fails.
        let cases: Vec<(i128, ArrayRef)> = vec![
            (i8::MIN.into(), Arc::new(Int8Array::from(vec![i8::MIN, -1, 0, i8::MAX]))),
            (
                i16::MIN.into(),
                Arc::new(Int16Array::from(vec![i16::MIN, -1, 0, i16::MAX])),
            ),
            (
                i32::MIN.into(),
                Arc::new(Int32Array::from(vec![i32::MIN, -1, 0, i32::MAX])),
            ),
            (
                i64::MIN.into(),
                Arc::new(Int64Array::from(vec![i64::MIN, -1, 0, i64::MAX])),
            ),
        ];
        for (min, a) in cases {
            let max = -min - 1;
            let v = validator(&format!("{{kind: index, size: {}}}", max + 1));
            let want = one("Index", 2, &[(0, int(min)), (1, int(-1))]);
            assert_eq!(hits(&v, &run(&v, a.as_ref())), want, "{}", a.data_type());
            // size = MAX: MAX itself is out.
            let v = validator(&format!("{{kind: index, size: {max}}}"));
            assert_eq!(run(&v, a.as_ref()).checks[0].violations, 3, "{}", a.data_type());
        }
    }

    #[test]
    fn each_unsigned_width_at_zero_and_max() {
        let cases: Vec<(i128, ArrayRef)> = vec![
            (u8::MAX.into(), Arc::new(UInt8Array::from(vec![0, u8::MAX]))),
            (u16::MAX.into(), Arc::new(UInt16Array::from(vec![0, u16::MAX]))),
            (u32::MAX.into(), Arc::new(UInt32Array::from(vec![0, u32::MAX]))),
            (u64::MAX.into(), Arc::new(UInt64Array::from(vec![0, u64::MAX]))),
        ];
        for (max, a) in cases {
            let v = validator(&format!("{{kind: index, size: {}}}", max + 1));
            assert!(hits(&v, &run(&v, a.as_ref())).is_empty(), "{}", a.data_type());
            let v = validator(&format!("{{kind: index, size: {max}}}"));
            assert_eq!(hits(&v, &run(&v, a.as_ref())), one("Index", 1, &[(1, int(max))]));
        }
    }

    #[test]
    fn u64_above_i64_max_is_not_negative() {
        let v = validator("{kind: class, num_classes: 10, ignore_index: -1}");
        let a = UInt64Array::from(vec![u64::MAX, 1 << 63, 9]);
        let want = one("Class", 2, &[(0, int(u64::MAX.into())), (1, int(1 << 63))]);
        assert_eq!(hits(&v, &run(&v, &a)), want);
    }

    #[test]
    fn minus_100_ignore_index_never_matches_an_unsigned_value() {
        // 156 is -100 as a byte; torch reads uint8 targets unsigned.
        let v = validator("{kind: class, num_classes: 10}");
        let a = UInt8Array::from(vec![156, 255, 0]);
        assert_eq!(hits(&v, &run(&v, &a)), one("Class", 2, &[(0, int(156)), (1, int(255))]));
        let a = UInt64Array::from(vec![u64::MAX - 99, 9]);
        assert_eq!(run(&v, &a).checks[0].violations, 1);
    }

    #[test]
    fn ignore_index_255_in_a_signed_byte_column_is_not_minus_one() {
        let v = validator("{kind: class, num_classes: 10, ignore_index: 255}");
        let a = Int8Array::from(vec![-1, 0, 10]);
        assert_eq!(hits(&v, &run(&v, &a)), one("Class", 2, &[(0, int(-1)), (2, int(10))]));
        let a = UInt8Array::from(vec![255, 254]);
        assert_eq!(hits(&v, &run(&v, &a)), one("Class", 1, &[(1, int(254))]));
    }

    #[test]
    fn ignore_index_at_the_type_minimum_passes() {
        let v = validator("{kind: class, num_classes: 2, ignore_index: -128}");
        let a = Int8Array::from(vec![i8::MIN, -127, 1]);
        assert_eq!(hits(&v, &run(&v, &a)), one("Class", 1, &[(1, int(-127))]));
    }

    #[test]
    fn no_ignore_index_reports_minus_100() {
        let v = validator("{kind: class, num_classes: 2, ignore_index: null}");
        let a = Int64Array::from(vec![-100, 0, 1]);
        assert_eq!(hits(&v, &run(&v, &a)), one("Class", 1, &[(0, int(-100))]));
    }

    #[test]
    fn a_range_bound_of_zero() {
        let v = validator("{kind: range, min: 0, max: 0}");
        let a = Int32Array::from(vec![-1, 0, 1, i32::MIN, i32::MAX]);
        assert_eq!(run(&v, &a).checks[0].violations, 4);
        // min 0 on unsigned: everything passes, MAX included.
        let v = validator("{kind: range, min: 0}");
        assert!(hits(&v, &run(&v, &UInt64Array::from(vec![0, u64::MAX]))).is_empty());
    }

    #[test]
    fn a_range_outside_the_type_fails_every_value() {
        // max -1 on unsigned, min 256 on uint8: no value of the type passes.
        let v = validator("{kind: range, max: -1}");
        let want = one("Range", 2, &[(0, int(0)), (1, int(255))]);
        assert_eq!(hits(&v, &run(&v, &UInt8Array::from(vec![0, 255]))), want);
        let v = validator("{kind: range, min: 256}");
        assert_eq!(hits(&v, &run(&v, &UInt8Array::from(vec![0, 255]))), want);
        let v = validator("{kind: range, min: 9223372036854775808}");
        let a = Int64Array::from(vec![i64::MAX]);
        assert_eq!(run(&v, &a).checks[0].violations, 1);
    }

    #[test]
    fn a_range_at_the_u64_limits() {
        let v = validator("{kind: range, min: 18446744073709551615}");
        let a = UInt64Array::from(vec![u64::MAX, u64::MAX - 1]);
        assert_eq!(
            hits(&v, &run(&v, &a)),
            one("Range", 1, &[(1, int((u64::MAX - 1).into()))])
        );
    }

    #[test]
    fn values_under_nulls_are_not_judged() {
        // The null slots hold 99 and -5; only the nulls count.
        let vals = ScalarBuffer::from(vec![1i32, 99, 3, -5]);
        let nulls = NullBuffer::from(vec![true, false, true, false]);
        let a = Int32Array::new(vals, Some(nulls));
        let v = validator("{kind: class, num_classes: 4}");
        let want = vec![("Null".to_string(), 2, vec![(1, Value::Null), (3, Value::Null)])];
        assert_eq!(hits(&v, &run(&v, &a)), want);
        // Nor do they lower the smallest value seen (the 1-indexed hint).
        assert_eq!(run(&v, &a).checks[0].evidence.min, Some(1));
    }

    #[test]
    fn nullable_columns_report_no_nulls() {
        let v = validator("{kind: class, num_classes: 4, nullable: true}");
        let a = Int32Array::from(vec![None, Some(4), None]);
        assert_eq!(hits(&v, &run(&v, &a)), one("Class", 1, &[(1, int(4))]));
    }

    #[test]
    fn a_null_buffer_without_nulls_changes_nothing() {
        let a = Int16Array::new(ScalarBuffer::from(vec![0i16, 7, 2]), Some(NullBuffer::new_valid(3)));
        let v = validator("{kind: index, size: 3}");
        assert_eq!(hits(&v, &run(&v, &a)), one("Index", 1, &[(1, int(7))]));
        let v = validator("{kind: index, size: 8}");
        assert!(hits(&v, &run(&v, &a)).is_empty());
    }

    #[test]
    fn a_sliced_array_reports_positions_in_the_slice() {
        let full = Int32Array::from(vec![Some(50), None, Some(1), Some(99), None, Some(70)]);
        let a = full.slice(1, 4); // [null, 1, 99, null]
        let v = validator("{kind: class, num_classes: 10}");
        let want = vec![
            ("Class".to_string(), 1, vec![(2, int(99))]),
            ("Null".to_string(), 2, vec![(0, Value::Null), (3, Value::Null)]),
        ];
        assert_eq!(hits(&v, &run(&v, &a)), want);
    }

    #[test]
    fn a_sub_range_is_judged_alone_and_keeps_its_rows() {
        let a = Int64Array::from(vec![-7, 1, 20, 2, 30, -8]);
        let v = validator("{kind: index, size: 10}");
        let want = one("Index", 2, &[(2, int(20)), (4, int(30))]);
        assert_eq!(hits(&v, &run_range(&v, &a, 1..5)), want);
        assert!(hits(&v, &run_range(&v, &a, 3..3)).is_empty());
    }

    #[test]
    fn bad_values_across_blocks_are_all_found_in_order() {
        let mut vals = vec![1u32; 300];
        for i in [0, 63, 64, 127, 299] {
            vals[i] = 5;
        }
        let a = UInt32Array::from(vals);
        let v = validator("{kind: index, size: 5}");
        let rows: Vec<(u64, Value)> = [0, 63, 64, 127, 299].iter().map(|&r| (r, int(5))).collect();
        assert_eq!(hits(&v, &run(&v, &a)), one("Index", 5, &rows));
        // Examples are capped, the count is not; the log has every one.
        let yaml = "version: 1\ncolumns:\n  v: {kind: index, size: 5}\n";
        let v = Validator::new(Schema::from_yaml(yaml, Path::new("s.yaml")).unwrap(), 2);
        let mut t = v.tally();
        t.log = Some(Vec::new());
        let at = Place { file: 3, first_row: 0 };
        check_values(v.column_check(0), &a, 0..300, &|p| Spot::row(p as u64), at, &mut t).unwrap();
        assert_eq!(t.checks[0].violations, 5);
        assert_eq!(t.checks[0].examples.iter().map(|e| e.row).collect::<Vec<_>>(), [0, 63]);
        assert!(t.checks[0].examples.iter().all(|e| e.file == 3));
        let logged: Vec<u64> = t.log.unwrap().iter().map(|l| l.spot.row).collect();
        assert_eq!(logged, [0, 63, 64, 127, 299]);
    }

    #[test]
    fn evidence_of_sentinels_and_minimum() {
        let v = validator("{kind: class, num_classes: 3, ignore_index: null}");
        let t = run(&v, &Int64Array::from(vec![2, -1, -100, 255, 70000, 1]));
        let e = &t.checks[0].evidence;
        assert!(e.saw_minus_one && e.saw_minus_100 && e.saw_255);
        assert_eq!((e.bad_min, e.bad_max, e.min), (Some(-100), Some(70000), Some(-100)));
        assert_eq!(e.bad_wide, [1, 0]);
        // The ignored value is not the minimum.
        let v = validator("{kind: class, num_classes: 3}");
        let t = run(&v, &Int64Array::from(vec![2, -100, 1]));
        assert_eq!(t.checks[0].evidence.min, Some(1));
    }

    #[test]
    fn float_class_at_and_past_the_bound() {
        let v = validator("{kind: class, num_classes: 10}");
        let a = Float64Array::from(vec![9.0, 10.0, 9.5, -0.0, 9.999999999999998, -100.0, -1.0]);
        let want = vec![
            (
                "Class".to_string(),
                2,
                vec![(1, Value::Float(10.0)), (6, Value::Float(-1.0))],
            ),
            (
                "NotInteger".to_string(),
                2,
                vec![(2, Value::Float(9.5)), (4, Value::Float(9.999999999999998))],
            ),
        ];
        assert_eq!(hits(&v, &run(&v, &a)), want);
    }

    #[test]
    fn float_nan_and_infinities_are_not_integers() {
        let v = validator("{kind: index, size: 10}");
        let a = Float32Array::from(vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0]);
        let t = run(&v, &a);
        let h = hits(&v, &t);
        assert_eq!(h.len(), 1);
        assert_eq!((h[0].0.as_str(), h[0].1), ("NotInteger", 3));
        assert_eq!(
            h[0].2[1..],
            [(1, Value::Float(f64::INFINITY)), (2, Value::Float(f64::NEG_INFINITY))]
        );
        assert!(matches!(h[0].2[0], (0, Value::Float(f)) if f.is_nan()));
        // Not fractions: the fraction hint stays off.
        assert!(
            !t.checks[v.column_check(0).slots.not_integer.unwrap()]
                .evidence
                .saw_fraction
        );
    }

    #[test]
    fn a_huge_whole_float_is_out_of_range_not_a_fraction() {
        let v = validator("{kind: index, size: 10}");
        let a = Float64Array::from(vec![1e20, 1e300, f64::MAX]);
        assert_eq!(run(&v, &a).checks[0].violations, 3);
    }

    #[test]
    fn float32_fraction_sets_the_fraction_hint() {
        let v = validator("{kind: class, num_classes: 10}");
        let t = run(&v, &Float32Array::from(vec![0.5, 1.0]));
        let slot = v.column_check(0).slots.not_integer.unwrap();
        assert_eq!(t.checks[slot].violations, 1);
        assert!(t.checks[slot].evidence.saw_fraction);
    }

    #[test]
    fn float16_values_widen_exactly() {
        let v = validator("{kind: class, num_classes: 3}");
        let a = Float16Array::from(vec![
            F16::from_f32(0.0),
            F16::from_f32(-0.0),
            F16::from_f32(2.0),
            F16::from_f32(3.0),
            F16::from_f32(0.5),
            F16::NAN,
            F16::INFINITY,
            F16::from_f32(-100.0),
        ]);
        let t = run(&v, &a);
        let h = hits(&v, &t);
        assert_eq!(h[0], ("Class".to_string(), 1, vec![(3, Value::Float(3.0))]));
        assert_eq!((h[1].0.as_str(), h[1].1), ("NotInteger", 3));
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn float_range_needs_finite_values() {
        let v = validator("{kind: range}");
        let a = Float64Array::from(vec![f64::MAX, f64::MIN, f64::NAN, f64::INFINITY, f64::NEG_INFINITY]);
        assert_eq!(run(&v, &a).checks[0].violations, 3);
        let v = validator("{kind: range, min: 0}");
        let a = Float64Array::from(vec![-0.0, 0.0, -5e-324, f64::INFINITY]);
        let want = one(
            "Range",
            2,
            &[(2, Value::Float(-5e-324)), (3, Value::Float(f64::INFINITY))],
        );
        assert_eq!(hits(&v, &run(&v, &a)), want);
    }

    #[test]
    fn float32_point_one_is_above_point_one() {
        let v = validator("{kind: range, max: 0.1}");
        let a = Float32Array::from(vec![0.1f32, 0.099999994]);
        assert_eq!(
            hits(&v, &run(&v, &a)),
            one("Range", 1, &[(0, Value::Float(f64::from(0.1f32)))])
        );
        let v = validator("{kind: range, max: 0.10000000149011612}");
        assert!(hits(&v, &run(&v, &a)).is_empty());
    }

    #[test]
    fn floats_against_an_allowed_set() {
        let v = validator("{kind: values, allowed: [0, 1]}");
        let a = Float64Array::from(vec![1.0, -0.0, 0.5, f64::NAN, 2.0]);
        let t = run(&v, &a);
        assert_eq!(t.checks[0].violations, 3);
        assert_eq!(
            t.checks[0].examples.iter().map(|e| e.row).collect::<Vec<_>>(),
            [2, 3, 4]
        );
    }

    #[test]
    fn booleans_are_zero_and_one() {
        let v = validator("{kind: class, num_classes: 1}");
        let a = BooleanArray::from(vec![Some(false), Some(true), None]);
        let want = vec![
            ("Class".to_string(), 1, vec![(1, int(1))]),
            ("Null".to_string(), 1, vec![(2, Value::Null)]),
        ];
        assert_eq!(hits(&v, &run(&v, &a)), want);
    }

    #[test]
    fn strings_in_an_index_column_are_not_integers() {
        let v = validator("{kind: index, size: 10}");
        let a = StringArray::from(vec![Some("3"), None]);
        let want = vec![
            ("Null".to_string(), 1, vec![(1, Value::Null)]),
            ("NotInteger".to_string(), 1, vec![(0, Value::Str("3".into()))]),
        ];
        assert_eq!(hits(&v, &run(&v, &a)), want);
    }

    #[test]
    fn dictionary_rows_are_judged_by_their_entry() {
        // Entry 2 (77) is used by no row: never reported.
        let keys = Int8Array::from(vec![Some(0), Some(1), Some(1), None, Some(0)]);
        let values = Arc::new(Int64Array::from(vec![3, 12, 77]));
        let a = DictionaryArray::<Int8Type>::try_new(keys, values).unwrap();
        let v = validator("{kind: class, num_classes: 10}");
        let want = vec![
            ("Class".to_string(), 2, vec![(1, int(12)), (2, int(12))]),
            ("Null".to_string(), 1, vec![(3, Value::Null)]),
        ];
        assert_eq!(hits(&v, &run(&v, &a)), want);
        assert_eq!(run(&v, &a).checks[0].evidence.min, Some(3));
    }

    #[test]
    fn dictionary_of_floats_and_null_entries() {
        let keys = Int8Array::from(vec![0, 1, 2, 1]);
        let values = Arc::new(Float64Array::from(vec![Some(1.0), Some(1.5), None]));
        let a = DictionaryArray::<Int8Type>::try_new(keys, values).unwrap();
        let v = validator("{kind: class, num_classes: 10}");
        let want = vec![
            ("Null".to_string(), 1, vec![(2, Value::Null)]),
            (
                "NotInteger".to_string(),
                2,
                vec![(1, Value::Float(1.5)), (3, Value::Float(1.5))],
            ),
        ];
        assert_eq!(hits(&v, &run(&v, &a)), want);
    }

    #[test]
    fn null_typed_columns_are_all_nulls() {
        let a = NullArray::new(3);
        let v = validator("{kind: class, num_classes: 2}");
        assert_eq!(run(&v, &a).checks[v.column_check(0).slots.null].violations, 3);
        let v = validator("{kind: class, num_classes: 2, nullable: true}");
        assert!(hits(&v, &run(&v, &a)).is_empty());
    }

    #[test]
    fn unsupported_types_are_errors_naming_the_rule() {
        let v = validator("{kind: class, num_classes: 2}");
        let a = BinaryArray::from(vec![&b"x"[..]]);
        let mut t = v.tally();
        let at = Place { file: 0, first_row: 0 };
        let e = check_values(v.column_check(0), &a, 0..1, &|p| Spot::row(p as u64), at, &mut t).unwrap_err();
        assert_eq!(e, "has type Binary, which holds no values the `class` rule can check");
    }

    #[test]
    fn clean_arrays_of_every_width_pass() {
        let v = validator("{kind: values, allowed: [0, 1]}");
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(Int8Array::from(vec![0, 1])),
            Arc::new(Int16Array::from(vec![0, 1])),
            Arc::new(Int32Array::from(vec![0, 1])),
            Arc::new(Int64Array::from(vec![0, 1])),
            Arc::new(UInt8Array::from(vec![0, 1])),
            Arc::new(UInt16Array::from(vec![0, 1])),
            Arc::new(UInt32Array::from(vec![0, 1])),
            Arc::new(UInt64Array::from(vec![0, 1])),
            Arc::new(Float32Array::from(vec![0.0, 1.0])),
            Arc::new(Float64Array::from(vec![-0.0, 1.0])),
        ];
        for a in arrays {
            let t = run(&v, a.as_ref());
            assert!(t.checks.iter().all(|c| c.violations == 0), "{}", a.data_type());
        }
    }

    #[test]
    fn count_outside_with_and_without_extra() {
        let vals = [i8::MIN, -100, -1, 0, 5, i8::MAX];
        assert_eq!(count_outside(&vals, 0, 5, None), 4);
        assert_eq!(count_outside(&vals, 0, 5, Some(-100)), 3);
        assert_eq!(count_outside(&vals, i8::MIN, i8::MAX, None), 0);
        assert_eq!(count_outside::<u64>(&[], 0, 0, None), 0);
        assert_eq!(min_except(&[5u16, 0, 9], Some(0), u16::MAX), Some(5));
        assert_eq!(min_except(&[0u16], Some(0), u16::MAX), Some(u16::MAX));
    }
}
