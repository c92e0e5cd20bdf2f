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

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use arrow::array::{
        Array, ArrayRef, FixedSizeListArray, Int32Array, LargeListArray, ListArray, NullArray, RecordBatch, UInt8Array,
    };
    use arrow::buffer::{NullBuffer, OffsetBuffer};
    use arrow::datatypes::{Field, Int32Type, Int64Type};

    use crate::check::Validator;
    use crate::check::tally::{Spot, Tally, Value};
    use crate::schema::Schema;

    fn validator(columns: &str) -> Validator {
        let yaml = format!("version: 1\ncolumns:\n{columns}");
        Validator::new(Schema::from_yaml(&yaml, Path::new("s.yaml")).unwrap(), 100)
    }

    fn one(col: &str) -> Validator {
        validator(&format!("  v: {col}\n"))
    }

    /// Checks a batch (first row 10) with every violation logged.
    fn check(v: &Validator, cols: Vec<(&str, ArrayRef)>) -> Tally {
        let batch = RecordBatch::try_from_iter(cols).unwrap();
        let mut t = v.tally();
        t.log = Some(Vec::new());
        let errors = v.check_batch(&batch, 0, 10, &mut t);
        assert!(errors.is_empty(), "{errors:?}");
        t
    }

    /// (rule, spot, value) of every logged violation.
    fn logged(v: &Validator, t: &Tally) -> Vec<(String, Spot, Value)> {
        let log = t.log.as_ref().unwrap();
        log.iter()
            .map(|l| (format!("{:?}", v.plan()[l.check].1), l.spot, l.value.clone()))
            .collect()
    }

    fn arr(a: impl Array + 'static) -> ArrayRef {
        Arc::new(a)
    }

    fn at(row: u64, pos: Option<u64>, parent: Option<u64>) -> Spot {
        Spot { row, pos, parent }
    }

    fn hit(rule: &str, spot: Spot, value: Value) -> (String, Spot, Value) {
        (rule.to_string(), spot, value)
    }

    fn i32_lists(rows: Vec<Option<Vec<Option<i32>>>>) -> ListArray {
        ListArray::from_iter_primitive::<Int32Type, _, _>(rows)
    }

    #[test]
    fn elements_report_their_row_and_position() {
        let v = one("{kind: class, num_classes: 10}");
        let a = i32_lists(vec![
            Some(vec![Some(0), Some(12)]),
            Some(vec![]),
            Some(vec![Some(3), Some(11)]),
        ]);
        let t = check(&v, vec![("v", arr(a))]);
        let want = vec![
            hit("Class", at(10, Some(1), None), Value::Int(12)),
            hit("Class", at(12, Some(1), None), Value::Int(11)),
        ];
        assert_eq!(logged(&v, &t), want);
        assert_eq!(t.checks[0].violations, 2);
    }

    #[test]
    fn empty_lists_before_a_value_do_not_take_it() {
        let v = one("{kind: class, num_classes: 10}");
        let a = i32_lists(vec![Some(vec![]), Some(vec![]), Some(vec![Some(12)]), Some(vec![])]);
        let t = check(&v, vec![("v", arr(a))]);
        assert_eq!(logged(&v, &t), [hit("Class", at(12, Some(0), None), Value::Int(12))]);
    }

    #[test]
    fn a_null_row_hides_the_values_its_slot_covers() {
        // Row 1 is null but its offsets cover [99, 99].
        let offsets = OffsetBuffer::new(vec![0, 2, 4].into());
        let field = Arc::new(Field::new("item", arrow::datatypes::DataType::Int32, true));
        let child = Arc::new(Int32Array::from(vec![1, 2, 99, 99]));
        let a = ListArray::new(field, offsets, child, Some(NullBuffer::from(vec![true, false])));
        let v = one("{kind: class, num_classes: 10}");
        let t = check(&v, vec![("v", arr(a))]);
        assert_eq!(logged(&v, &t), [hit("Null", at(11, None, None), Value::Null)]);
        assert_eq!(t.checks[0].violations, 0);
    }

    #[test]
    fn nulls_inside_lists_count_per_element() {
        let v = one("{kind: index, size: 4}");
        let a = i32_lists(vec![Some(vec![None, None]), None, Some(vec![Some(4), None])]);
        let t = check(&v, vec![("v", arr(a))]);
        let want = vec![
            hit("Null", at(10, Some(0), None), Value::Null),
            hit("Null", at(10, Some(1), None), Value::Null),
            hit("Null", at(11, None, None), Value::Null),
            hit("Null", at(12, Some(1), None), Value::Null),
            hit("Index", at(12, Some(0), None), Value::Int(4)),
        ];
        assert_eq!(logged(&v, &t), want);
        let v = one("{kind: index, size: 4, nullable: true}");
        let a = i32_lists(vec![Some(vec![None]), None, Some(vec![Some(4)])]);
        let t = check(&v, vec![("v", arr(a))]);
        assert_eq!(logged(&v, &t), [hit("Index", at(12, Some(0), None), Value::Int(4))]);
    }

    #[test]
    fn a_sliced_list_counts_from_its_own_first_row() {
        let full = i32_lists(vec![
            Some(vec![Some(99)]),
            Some(vec![Some(1), Some(99)]),
            Some(vec![None]),
            Some(vec![Some(98)]),
        ]);
        let v = one("{kind: class, num_classes: 10}");
        let t = check(&v, vec![("v", arr(full.slice(1, 2)))]);
        // Within a run, nulls are logged before bad values.
        let want = vec![
            hit("Null", at(11, Some(0), None), Value::Null),
            hit("Class", at(10, Some(1), None), Value::Int(99)),
        ];
        assert_eq!(logged(&v, &t), want);
        assert_eq!(t.checks[0].violations, 1);
    }

    #[test]
    fn large_lists_like_lists() {
        let a = LargeListArray::from_iter_primitive::<Int64Type, _, _>(vec![
            Some(vec![Some(i64::MIN), Some(0)]),
            None,
            Some(vec![Some(i64::MAX)]),
        ]);
        let v = one("{kind: index, size: 2}");
        let t = check(&v, vec![("v", arr(a))]);
        let want = vec![
            hit("Index", at(10, Some(0), None), Value::Int(i64::MIN.into())),
            hit("Null", at(11, None, None), Value::Null),
            hit("Index", at(12, Some(0), None), Value::Int(i64::MAX.into())),
        ];
        assert_eq!(logged(&v, &t), want);
    }

    fn fixed(rows: Vec<Option<Vec<Option<i32>>>>) -> FixedSizeListArray {
        FixedSizeListArray::from_iter_primitive::<Int32Type, _, _>(rows, 2)
    }

    #[test]
    fn fixed_size_lists_and_their_slices() {
        let a = fixed(vec![
            Some(vec![Some(0), Some(1)]),
            Some(vec![Some(12), None]),
            None,
            Some(vec![Some(13), Some(1)]),
        ]);
        let v = one("{kind: class, num_classes: 10}");
        let t = check(&v, vec![("v", arr(a.clone()))]);
        let want = vec![
            hit("Null", at(11, Some(1), None), Value::Null),
            hit("Class", at(11, Some(0), None), Value::Int(12)),
            hit("Null", at(12, None, None), Value::Null),
            hit("Class", at(13, Some(0), None), Value::Int(13)),
        ];
        assert_eq!(logged(&v, &t), want);
        let t = check(&v, vec![("v", arr(a.slice(2, 2)))]);
        let want = vec![
            hit("Null", at(10, None, None), Value::Null),
            hit("Class", at(11, Some(0), None), Value::Int(13)),
        ];
        assert_eq!(logged(&v, &t), want);
    }

    /// [[[0, 5], [null]], null, [[], null], [[1]]]: list of list of i32.
    fn nested() -> ListArray {
        let inner = i32_lists(vec![
            Some(vec![Some(0), Some(5)]),
            Some(vec![None]),
            Some(vec![]),
            None,
            Some(vec![Some(1)]),
        ]);
        let field = Arc::new(Field::new("item", inner.data_type().clone(), true));
        let offsets = OffsetBuffer::new(vec![0, 2, 2, 4, 5].into());
        let nulls = NullBuffer::from(vec![true, false, true, true]);
        ListArray::new(field, offsets, Arc::new(inner), Some(nulls))
    }

    #[test]
    fn nested_lists_report_x_and_y() {
        let v = one("{kind: class, num_classes: 4}");
        let t = check(&v, vec![("v", arr(nested()))]);
        let want = vec![
            hit("Null", at(10, Some(0), Some(1)), Value::Null),
            hit("Class", at(10, Some(1), Some(0)), Value::Int(5)),
            hit("Null", at(11, None, None), Value::Null),
            hit("Null", at(12, Some(1), None), Value::Null),
        ];
        assert_eq!(logged(&v, &t), want);
        assert_eq!(t.checks[0].examples[0].xy, Some((1, 0)));
    }

    #[test]
    fn nested_lists_clean_pass() {
        let v = one("{kind: class, num_classes: 6, nullable: true}");
        let t = check(&v, vec![("v", arr(nested()))]);
        assert!(t.checks.iter().all(|c| c.violations == 0));
    }

    #[test]
    fn length_rules_on_the_outer_list_skip_null_rows() {
        let v = one("{kind: class, num_classes: 10, max_length: 1, min_length: 1}");
        let t = check(&v, vec![("v", arr(nested()))]);
        let want = vec![
            hit("Null", at(10, Some(0), Some(1)), Value::Null),
            hit("Null", at(11, None, None), Value::Null),
            hit("Null", at(12, Some(1), None), Value::Null),
            hit("MaxLength", at(10, None, None), Value::Int(2)),
            hit("MaxLength", at(12, None, None), Value::Int(2)),
        ];
        assert_eq!(logged(&v, &t), want);
    }

    #[test]
    fn lengths_of_a_sliced_list() {
        let full = i32_lists(vec![
            Some(vec![Some(1); 5]),
            Some(vec![Some(1); 3]),
            Some(vec![]),
            Some(vec![Some(1); 5]),
        ]);
        let v = one("{kind: index, size: 2, max_length: 2, min_length: 1}");
        let t = check(&v, vec![("v", arr(full.slice(1, 2)))]);
        let want = vec![
            hit("MaxLength", at(10, None, None), Value::Int(3)),
            hit("MinLength", at(11, None, None), Value::Int(0)),
        ];
        assert_eq!(logged(&v, &t), want);
    }

    #[test]
    fn fixed_size_list_lengths_are_the_size() {
        let a = fixed(vec![Some(vec![Some(0), Some(1)]), None]);
        let v = one("{kind: index, size: 2, max_length: 1}");
        let t = check(&v, vec![("v", arr(a))]);
        let want = vec![
            hit("Null", at(11, None, None), Value::Null),
            hit("MaxLength", at(10, None, None), Value::Int(2)),
        ];
        assert_eq!(logged(&v, &t), want);
    }

    #[test]
    fn pad_ids_do_not_count_toward_length() {
        let a = i32_lists(vec![
            Some(vec![Some(5), Some(1), Some(1)]),
            Some(vec![Some(5), Some(6), Some(1), Some(1)]),
            Some(vec![Some(1), Some(1)]),
        ]);
        let v = one("{kind: index, size: 10, pad_id: 1, max_length: 1, min_length: 1}");
        let t = check(&v, vec![("v", arr(a))]);
        let want = vec![
            hit("MaxLength", at(11, None, None), Value::Int(2)),
            hit("MinLength", at(12, None, None), Value::Int(0)),
        ];
        assert_eq!(logged(&v, &t), want);
        // Fixed-size lists count pads the same way.
        let a = fixed(vec![Some(vec![Some(1), Some(1)]), Some(vec![Some(2), Some(1)])]);
        let v = one("{kind: index, size: 10, pad_id: 1, min_length: 1}");
        let t = check(&v, vec![("v", arr(a))]);
        assert_eq!(logged(&v, &t), [hit("MinLength", at(10, None, None), Value::Int(0))]);
    }

    #[test]
    fn same_length_as_compares_rows_and_skips_null_rows() {
        let v = validator("  a: {kind: index, size: 9}\n  b: {kind: index, size: 9, same_length_as: a}\n");
        let a = i32_lists(vec![
            Some(vec![Some(1), Some(2)]),
            Some(vec![Some(1)]),
            None,
            Some(vec![]),
        ]);
        let b = i32_lists(vec![
            Some(vec![Some(1), Some(2)]),
            Some(vec![]),
            Some(vec![Some(1)]),
            None,
        ]);
        let t = check(&v, vec![("a", arr(a)), ("b", arr(b))]);
        let want = vec![
            hit("Null", at(12, None, None), Value::Null),
            hit("Null", at(13, None, None), Value::Null),
            hit("SameLengthAs", at(11, None, None), Value::Int(0)),
        ];
        assert_eq!(logged(&v, &t), want);
    }

    #[test]
    fn same_length_as_ignores_the_pad_rule() {
        let v = validator(
            "  a: {kind: index, size: 9}\n  b: {kind: index, size: 9, pad_id: 0, max_length: 5, same_length_as: a}\n",
        );
        let a = i32_lists(vec![Some(vec![Some(1), Some(2)])]);
        let b = i32_lists(vec![Some(vec![Some(1), Some(0)])]);
        let t = check(&v, vec![("a", arr(a)), ("b", arr(b))]);
        assert!(logged(&v, &t).is_empty());
    }

    #[test]
    fn a_null_typed_column_has_no_lengths() {
        let v = one("{kind: index, size: 9, max_length: 0, nullable: true}");
        let t = check(&v, vec![("v", arr(NullArray::new(2)))]);
        assert!(logged(&v, &t).is_empty());
    }

    #[test]
    fn length_rules_need_a_list() {
        let v = one("{kind: index, size: 9, max_length: 3}");
        let batch = RecordBatch::try_from_iter([("v", arr(UInt8Array::from(vec![1])) as ArrayRef)]).unwrap();
        let mut t = v.tally();
        let errors = v.check_batch(&batch, 0, 0, &mut t);
        assert_eq!(errors.len(), 1);
        assert_eq!(
            errors[0].message,
            "has type UInt8, but length rules (max_length, min_length, same_length_as) need a list column"
        );
    }

    #[test]
    fn pad_id_needs_integer_elements() {
        let v = one("{kind: range, pad_id: 0, max_length: 3}");
        let a = arrow::array::ListArray::from_iter_primitive::<arrow::datatypes::Float64Type, _, _>(vec![Some(vec![
            Some(1.0),
        ])]);
        let batch = RecordBatch::try_from_iter([("v", arr(a) as ArrayRef)]).unwrap();
        let mut t = v.tally();
        let errors = v.check_batch(&batch, 0, 0, &mut t);
        assert_eq!(
            errors[0].message,
            "pad_id needs a list of integers, the elements are Float64"
        );
    }

    #[test]
    fn a_clean_list_of_every_kind_passes() {
        let v = one("{kind: index, size: 2, max_length: 2, min_length: 2}");
        let lists: Vec<ArrayRef> = vec![
            Arc::new(i32_lists(vec![Some(vec![Some(0), Some(1)])])),
            Arc::new(LargeListArray::from_iter_primitive::<Int64Type, _, _>(vec![Some(
                vec![Some(1), Some(0)],
            )])),
            Arc::new(fixed(vec![Some(vec![Some(1), Some(1)])])),
        ];
        for a in lists {
            let t = check(&v, vec![("v", a)]);
            assert!(t.checks.iter().all(|c| c.violations == 0));
        }
    }
}
