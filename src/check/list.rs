//! List columns: value rules reach every leaf element, length rules look at
//! the outermost list of each row.
//!
//! Null rows are skipped when descending, so the values a null row's slot
//! happens to cover are never judged (Arrow allows such slots to be
//! non-empty). Child positions map back to file rows through the offsets.

use std::ops::Range;

use arrow::array::downcast_integer;
use arrow::array::{Array, AsArray, GenericListArray, OffsetSizeTrait};
use arrow::buffer::NullBuffer;
use arrow::datatypes::DataType;

use super::leaf::{ToRow, check_values, null_hit};
use super::{ColumnCheck, Place, type_name};
use crate::check::tally::{Spot, Tally, Value};

/// Value rules over the elements of the rows `range` of a list array.
pub(crate) fn check_list_values(
    col: &ColumnCheck,
    array: &dyn Array,
    range: Range<usize>,
    to_row: ToRow,
    at: Place,
    tally: &mut Tally,
) -> Result<(), String> {
    match array.data_type() {
        DataType::List(_) => offsets_values(col, array.as_list::<i32>(), range, to_row, at, tally),
        DataType::LargeList(_) => offsets_values(col, array.as_list::<i64>(), range, to_row, at, tally),
        DataType::FixedSizeList(_, size) => {
            let a = array.as_fixed_size_list();
            let size = usize::try_from(*size).map_err(|_| "has a negative list size".to_string())?;
            let child = a.values();
            // Where row 0's elements start in `child` (a sliced array may not
            // start at the child's beginning).
            let base = if a.is_empty() { 0 } else { a.value_offset_at(0) };
            let child_to_row = |c: usize| {
                let outer = to_row((c - base) / size.max(1));
                Spot {
                    row: outer.row,
                    pos: Some(((c - base) % size.max(1)) as u64),
                    parent: outer.pos,
                }
            };
            each_run(a.nulls(), range, |rows, valid| {
                if valid {
                    let start = base + rows.start * size;
                    let end = base + rows.end * size;
                    check_values(col, child.as_ref(), start..end, &child_to_row, at, tally)
                } else {
                    for r in rows {
                        null_hit(col, tally, at, to_row(r));
                    }
                    Ok(())
                }
            })
        }
        t => Err(format!("has type {}, which is not a list", type_name(t))),
    }
}

fn offsets_values<O: OffsetSizeTrait>(
    col: &ColumnCheck,
    a: &GenericListArray<O>,
    range: Range<usize>,
    to_row: ToRow,
    at: Place,
    tally: &mut Tally,
) -> Result<(), String> {
    let offsets = a.value_offsets();
    let child = a.values();
    let child_to_row = |c: usize| {
        let r = offsets.partition_point(|&o| o.as_usize() <= c).saturating_sub(1);
        let outer = to_row(r);
        Spot {
            row: outer.row,
            pos: Some((c - offsets[r].as_usize()) as u64),
            parent: outer.pos,
        }
    };
    each_run(a.nulls(), range, |rows, valid| {
        if valid {
            let start = offsets[rows.start].as_usize();
            let end = offsets[rows.end].as_usize();
            check_values(col, child.as_ref(), start..end, &child_to_row, at, tally)
        } else {
            for r in rows {
                null_hit(col, tally, at, to_row(r));
            }
            Ok(())
        }
    })
}

/// Calls `f` on maximal runs of valid rows and of null rows, in row order.
fn each_run(
    nulls: Option<&NullBuffer>,
    range: Range<usize>,
    mut f: impl FnMut(Range<usize>, bool) -> Result<(), String>,
) -> Result<(), String> {
    let Some(nulls) = nulls.filter(|n| n.null_count() > 0) else {
        return f(range, true);
    };
    let mut start = range.start;
    while start < range.end {
        let valid = nulls.is_valid(start);
        let mut end = start + 1;
        while end < range.end && nulls.is_valid(end) == valid {
            end += 1;
        }
        f(start..end, valid)?;
        start = end;
    }
    Ok(())
}

/// Row lengths of a list column: `None` for a null row.
fn row_lengths(col: &ColumnCheck, array: &dyn Array) -> Result<Vec<Option<u64>>, String> {
    let pad = col.spec.pad_id;
    let not_list = |t: &DataType| {
        format!(
            "has type {}, but length rules (max_length, min_length, same_length_as) need a list column",
            type_name(t)
        )
    };
    let lens: Vec<Option<u64>> = match array.data_type() {
        DataType::List(_) => offset_lengths(array.as_list::<i32>(), pad)?,
        DataType::LargeList(_) => offset_lengths(array.as_list::<i64>(), pad)?,
        DataType::FixedSizeList(_, size) => {
            let a = array.as_fixed_size_list();
            let size = u64::try_from(*size).map_err(|_| "has a negative list size".to_string())?;
            (0..a.len())
                .map(|i| {
                    if a.is_null(i) {
                        Ok(None)
                    } else {
                        match pad {
                            None => Ok(Some(size)),
                            Some(p) => non_pad(a.value(i).as_ref(), p).map(Some),
                        }
                    }
                })
                .collect::<Result<_, String>>()?
        }
        DataType::Null => vec![None; array.len()],
        t => return Err(not_list(t)),
    };
    Ok(lens)
}

fn offset_lengths<O: OffsetSizeTrait>(a: &GenericListArray<O>, pad: Option<i128>) -> Result<Vec<Option<u64>>, String> {
    let offsets = a.value_offsets();
    (0..a.len())
        .map(|i| {
            if a.is_null(i) {
                return Ok(None);
            }
            match pad {
                None => Ok(Some((offsets[i + 1] - offsets[i]).as_usize() as u64)),
                Some(p) => non_pad(a.value(i).as_ref(), p).map(Some),
            }
        })
        .collect()
}

/// Elements of one row that are not the pad id.
fn non_pad(row: &dyn Array, pad: i128) -> Result<u64, String> {
    macro_rules! count {
        ($t:ty) => {{
            let a = row.as_primitive::<$t>();
            let n = a.iter().filter(|v| v.map(|v| i128::from(v)) != Some(pad)).count();
            Ok(n as u64)
        }};
    }
    downcast_integer! {
        row.data_type() => (count),
        t => Err(format!(
            "pad_id needs a list of integers, the elements are {}",
            type_name(t)
        )),
    }
}

/// Length rules over every row of a batch.
pub(crate) fn check_lengths(
    col: &ColumnCheck,
    array: &dyn Array,
    other: Option<&dyn Array>,
    at: Place,
    tally: &mut Tally,
) -> Result<(), String> {
    let lens = row_lengths(col, array)?;
    let to_row = |i: usize| Spot::row(at.first_row + i as u64);
    let s = &col.slots;
    if let (Some(max), Some(slot)) = (col.spec.max_length, s.max_length) {
        for (i, len) in lens.iter().enumerate() {
            if let Some(len) = *len
                && len > max
            {
                tally.hit(slot, at.file, to_row(i), || Value::Int(len.into()));
            }
        }
    }
    if let (Some(min), Some(slot)) = (col.spec.min_length, s.min_length) {
        for (i, len) in lens.iter().enumerate() {
            if let Some(len) = *len
                && len < min
            {
                tally.hit(slot, at.file, to_row(i), || Value::Int(len.into()));
            }
        }
    }
    if let (Some(other), Some(slot)) = (other, s.same_length_as) {
        // The other column's own pad rule does not apply to this comparison.
        let plain = ColumnCheck {
            spec: crate::schema::ColumnSpec {
                pad_id: None,
                ..col.spec.clone()
            },
            ..col.clone()
        };
        let mine = if col.spec.pad_id.is_some() {
            row_lengths(&plain, array)?
        } else {
            lens
        };
        let theirs = row_lengths(&plain, other).map_err(|e| format!("same_length_as: the other column {e}"))?;
        for (i, (a, b)) in mine.iter().zip(&theirs).enumerate() {
            if let (Some(a), Some(b)) = (a, b)
                && a != b
            {
                tally.hit(slot, at.file, to_row(i), || Value::Int((*a).into()));
            }
        }
    }
    Ok(())
}
