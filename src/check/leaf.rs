//! Value rules over one array: dispatch on the Arrow type, then a kernel.

use std::ops::Range;

use arrow::array::downcast_integer;
use arrow::array::{Array, AsArray, BooleanArray, GenericStringArray, OffsetSizeTrait, PrimitiveArray};
use arrow::datatypes::{ArrowPrimitiveType, DataType, Float16Type, Float32Type, Float64Type};

use super::{ColumnCheck, Place, list, type_name};
use crate::check::tally::{Example, Logged, Spot, Tally, Value};

/// How one non-null value fares against the column's value rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
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
