//! Detection boxes (`kind: box`): a row is one box, a list of four numbers,
//! or a list of boxes (one image's objects).
//!
//! torchvision's detection models check their targets before every step
//! and raise on a box whose right edge is not right of its left edge, or
//! whose bottom is not below its top ("All bounding boxes should have
//! positive height and width"), mid-epoch. The box is judged as that check
//! sees it: converted to corners as `box_convert` converts it, in the
//! float32 that `torch.tensor` makes of Python floats (whole numbers stay
//! integers there, so an integer column is judged exactly). A box must also
//! be four finite numbers: a NaN passes torchvision's comparison but trains
//! into NaN losses, and a wrong count fails the `[N, 4]` shape assert.

use std::ops::Range;

use arrow::array::{Array, ArrayRef, AsArray, GenericListArray, OffsetSizeTrait};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Float64Type};

use super::leaf::null_hit;
use super::{ColumnCheck, Place, type_name};
use crate::check::tally::{Spot, Tally, Value};
use crate::schema::BoxFormat;

/// Judges every box of `array` (a list column), one batch starting at file
/// row `at.first_row`.
pub(crate) fn check_boxes(
    col: &ColumnCheck,
    format: BoxFormat,
    array: &dyn Array,
    at: Place,
    tally: &mut Tally,
) -> Result<(), String> {
    let rows = Lists::of(array)?;
    let child = rows.child.as_ref();
    if is_list(child.data_type()) {
        // A list of boxes per row: the box index is the element's position.
        let boxes = Lists::of(child)?;
        let numbers = Numbers::of(boxes.child.as_ref(), array.data_type())?;
        for r in 0..rows.len() {
            let Some(span) = rows.span(r) else {
                null_hit(col, tally, at, Spot::row(at.first_row + r as u64));
                continue;
            };
            for (pos, b) in span.enumerate() {
                let spot = Spot {
                    row: at.first_row + r as u64,
                    pos: Some(pos as u64),
                    parent: None,
                };
                match boxes.span(b) {
                    None => null_hit(col, tally, at, spot),
                    Some(elements) => judge(col, format, &numbers, elements, spot, at, tally),
                }
            }
        }
    } else {
        let numbers = Numbers::of(child, array.data_type())?;
        for r in 0..rows.len() {
            let spot = Spot::row(at.first_row + r as u64);
            match rows.span(r) {
                None => null_hit(col, tally, at, spot),
                Some(elements) => judge(col, format, &numbers, elements, spot, at, tally),
            }
        }
    }
    Ok(())
}

fn is_list(t: &DataType) -> bool {
    matches!(
        t,
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..)
    )
}

/// A list array as its rows' spans in its child: row i's elements are
/// `child[spans[i]]`.
struct Lists {
    nulls: Option<NullBuffer>,
    spans: Vec<Range<usize>>,
    child: ArrayRef,
}

impl Lists {
    fn of(array: &dyn Array) -> Result<Lists, String> {
        fn offsets<O: OffsetSizeTrait>(a: &GenericListArray<O>) -> (Vec<Range<usize>>, ArrayRef) {
            let o = a.value_offsets();
            let spans = o.windows(2).map(|w| w[0].as_usize()..w[1].as_usize()).collect();
            (spans, a.values().clone())
        }
        let (spans, child) = match array.data_type() {
            DataType::List(_) => offsets(array.as_list::<i32>()),
            DataType::LargeList(_) => offsets(array.as_list::<i64>()),
            DataType::FixedSizeList(_, size) => {
                let a = array.as_fixed_size_list();
                let size = usize::try_from(*size).map_err(|_| "has a negative list size".to_string())?;
                let spans = (0..a.len())
                    .map(|i| a.value_offset_at(i))
                    .map(|s| s..s + size)
                    .collect();
                (spans, a.values().clone())
            }
            t => {
                return Err(format!(
                    "has type {}: a box rule needs a list of four numbers per box",
                    type_name(t)
                ));
            }
        };
        Ok(Lists {
            nulls: array.logical_nulls(),
            spans,
            child,
        })
    }

    fn len(&self) -> usize {
        self.spans.len()
    }

    /// Row i's element positions in the child, `None` for a null row.
    fn span(&self, i: usize) -> Option<Range<usize>> {
        if self.nulls.as_ref().is_some_and(|n| n.is_null(i)) {
            return None;
        }
        Some(self.spans[i].clone())
    }
}

/// One element of a box as written.
#[derive(Debug, Clone, PartialEq)]
enum Num {
    Null,
    Int(f64),
    Float(f64),
    /// A float32 (or float16) value, shown as one.
    Float32(f64),
    /// Text or anything else that is no number.
    Other(String),
}

/// The elements of a box column's innermost lists.
struct Numbers(Vec<Num>);

impl Numbers {
    fn of(child: &dyn Array, column: &DataType) -> Result<Numbers, String> {
        let mut out = Vec::with_capacity(child.len());
        push_all(child, 0..child.len(), column, &mut out)?;
        Ok(Numbers(out))
    }
}

/// Appends `array[range]` as box elements.
fn push_all(array: &dyn Array, range: Range<usize>, column: &DataType, out: &mut Vec<Num>) -> Result<(), String> {
    let t = array.data_type();
    if t.is_integer() || t.is_floating() || matches!(t, DataType::Null) {
        let cast = arrow::compute::cast(&array.slice(range.start, range.len()), &DataType::Float64)
            .map_err(|e| e.to_string())?;
        let f = cast.as_primitive::<Float64Type>();
        let narrow = matches!(t, DataType::Float16 | DataType::Float32);
        out.extend((0..f.len()).map(|i| match (f.is_valid(i), t.is_integer(), narrow) {
            (false, _, _) => Num::Null,
            (true, true, _) => Num::Int(f.value(i)),
            (true, false, true) => Num::Float32(f.value(i)),
            (true, false, false) => Num::Float(f.value(i)),
        }));
        return Ok(());
    }
    match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let cast = arrow::compute::cast(&array.slice(range.start, range.len()), &DataType::Utf8)
                .map_err(|e| e.to_string())?;
            let s = cast.as_string::<i32>();
            out.extend((0..s.len()).map(|i| match s.is_valid(i) {
                false => Num::Null,
                true => Num::Other(format!("{:?}", s.value(i))),
            }));
        }
        DataType::Boolean => {
            let b = array.as_boolean();
            out.extend(range.map(|i| match b.is_valid(i) {
                false => Num::Null,
                true => Num::Other(if b.value(i) { "True" } else { "False" }.into()),
            }));
        }
        // Mixed values (JSON's ints beside floats): each from its own child.
        DataType::Union(_, _) => {
            let u = array.as_union();
            for i in range {
                let off = u.value_offset(i);
                push_all(u.child(u.type_id(i)).as_ref(), off..off + 1, column, out)?;
            }
        }
        _ => {
            return Err(format!(
                "has type {}: a box's coordinates must be numbers",
                type_name(column)
            ));
        }
    }
    Ok(())
}

/// Records the box `numbers[elements]` at `spot` when it is bad.
fn judge(
    col: &ColumnCheck,
    format: BoxFormat,
    numbers: &Numbers,
    elements: Range<usize>,
    spot: Spot,
    at: Place,
    tally: &mut Tally,
) {
    let values = &numbers.0[elements];
    let number = |n: &Num| match n {
        Num::Int(v) | Num::Float(v) | Num::Float32(v) => Some(*v),
        _ => None,
    };
    let good = match values {
        [a, b, c, d] => match [a, b, c, d].map(number) {
            [Some(a), Some(b), Some(c), Some(d)] => {
                let integers = values.iter().all(|n| matches!(n, Num::Int(_)));
                if integers && format != BoxFormat::Cxcywh {
                    // An integer tensor: exact arithmetic.
                    match format {
                        BoxFormat::Xyxy => c > a && d > b,
                        _ => c > 0.0 && d > 0.0,
                    }
                } else {
                    positive(format, [a as f32, b as f32, c as f32, d as f32])
                }
            }
            _ => false,
        },
        _ => false,
    };
    if !good {
        let text = show(values);
        tally.hit(col.slots.value, at.file, spot, || Value::Str(text));
    }
}

/// Whether a float32 box is finite with positive width and height once in
/// corners, as torchvision computes them (`_box_xywh_to_xyxy`,
/// `_box_cxcywh_to_xyxy`, then `boxes[:, 2:] <= boxes[:, :2]`).
fn positive(format: BoxFormat, [a, b, c, d]: [f32; 4]) -> bool {
    if ![a, b, c, d].iter().all(|v| v.is_finite()) {
        return false;
    }
    let (x1, y1, x2, y2) = match format {
        BoxFormat::Xyxy => (a, b, c, d),
        BoxFormat::Xywh => (a, b, a + c, b + d),
        BoxFormat::Cxcywh => (a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d),
    };
    x2 > x1 && y2 > y1
}

/// The box as written: `[10, 20, 0, 5]`, floats as Python prints them
/// (`nan`, `inf`), a missing number as `null`.
fn show(values: &[Num]) -> String {
    let one = |v: &Num| match v {
        Num::Null => "null".to_string(),
        Num::Int(f) => format!("{f}"),
        Num::Float(f) | Num::Float32(f) if f.is_nan() => "nan".to_string(),
        Num::Float(f) | Num::Float32(f) if f.is_infinite() => if *f > 0.0 { "inf" } else { "-inf" }.to_string(),
        Num::Float(f) => format!("{f:?}"),
        Num::Float32(f) => format!("{:?}", *f as f32),
        Num::Other(s) => s.clone(),
    };
    format!("[{}]", values.iter().map(one).collect::<Vec<_>>().join(", "))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{FixedSizeListArray, Float32Array, Float64Array, ListArray};
    use arrow::datatypes::{Field, Float64Type, Int64Type};

    use super::*;
    use crate::check::Validator;
    use crate::check::tally::Logged;

    fn validator(rule: &str) -> Validator {
        let yaml = format!("version: 1\ncolumns:\n  bbox: {rule}\n");
        let schema = crate::schema::Schema::from_yaml(&yaml, std::path::Path::new("s.yaml")).unwrap();
        Validator::new(schema, 100)
    }

    fn logged(v: &Validator, array: ArrayRef) -> Result<Vec<Logged>, Vec<crate::check::TypeError>> {
        let mut t = v.tally();
        t.log = Some(Vec::new());
        let errors = v.check_columns(&[Some(array.clone())], array.len(), 0, 10, &mut t);
        if errors.is_empty() {
            Ok(t.log.unwrap_or_default())
        } else {
            Err(errors)
        }
    }

    fn floats(rows: Vec<Option<Vec<Option<f64>>>>) -> ArrayRef {
        Arc::new(ListArray::from_iter_primitive::<Float64Type, _, _>(rows))
    }

    fn hits(v: &Validator, log: &[Logged]) -> Vec<(u64, Option<u64>, String, String)> {
        log.iter()
            .map(|l| {
                let value = match &l.value {
                    Value::Str(s) => s.clone(),
                    other => format!("{other:?}"),
                };
                (l.spot.row, l.spot.pos, v.plan()[l.check].1.name().to_string(), value)
            })
            .collect()
    }

    #[test]
    fn xywh_boxes_need_finite_numbers_and_positive_size() {
        let v = validator("{kind: box, format: xywh}");
        let a = floats(vec![
            Some(vec![Some(1.0), Some(2.0), Some(3.0), Some(4.0)]),
            Some(vec![Some(1.0), Some(2.0), Some(0.0), Some(4.0)]),
            Some(vec![Some(1.0), Some(2.0), Some(3.0), Some(-1.0)]),
            Some(vec![Some(f64::NAN), Some(2.0), Some(3.0), Some(4.0)]),
            Some(vec![Some(1.0), Some(2.0), Some(f64::INFINITY), Some(4.0)]),
            Some(vec![Some(1.0), Some(2.0), Some(3.0)]),
            Some(vec![Some(1.0), None, Some(3.0), Some(4.0)]),
            None,
            Some(vec![]),
            // Finite in float64, infinite in float32.
            Some(vec![Some(1e300), Some(2.0), Some(3.0), Some(4.0)]),
            // A width below float32's step at x: x + w == x.
            Some(vec![Some(1000.0), Some(2.0), Some(1e-5), Some(4.0)]),
            Some(vec![Some(0.0), Some(0.0), Some(1e-30), Some(1e-30)]),
        ]);
        let got = hits(&v, &logged(&v, a).unwrap());
        let want: Vec<(u64, Option<u64>, String, String)> = [
            (11, "box", "[1.0, 2.0, 0.0, 4.0]"),
            (12, "box", "[1.0, 2.0, 3.0, -1.0]"),
            (13, "box", "[nan, 2.0, 3.0, 4.0]"),
            (14, "box", "[1.0, 2.0, inf, 4.0]"),
            (15, "box", "[1.0, 2.0, 3.0]"),
            (16, "box", "[1.0, null, 3.0, 4.0]"),
            (17, "null", ""),
            (18, "box", "[]"),
            (19, "box", "[1e300, 2.0, 3.0, 4.0]"),
            (20, "box", "[1000.0, 2.0, 1e-5, 4.0]"),
        ]
        .iter()
        .map(|(r, rule, v)| {
            let v = if *rule == "null" {
                "Null".to_string()
            } else {
                v.to_string()
            };
            (*r, None, rule.to_string(), v)
        })
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn xyxy_and_cxcywh_compare_corners_in_float32() {
        let xyxy = validator("{kind: box, format: xyxy}");
        let a = floats(vec![
            Some(vec![Some(1.0), Some(2.0), Some(3.0), Some(4.0)]),
            Some(vec![Some(3.0), Some(2.0), Some(3.0), Some(4.0)]),
            Some(vec![Some(1.0), Some(5.0), Some(3.0), Some(4.0)]),
            // Distinct in float64, one float32.
            Some(vec![Some(1.0), Some(2.0), Some(1.0 + 1e-12), Some(4.0)]),
        ]);
        let rows: Vec<u64> = hits(&xyxy, &logged(&xyxy, a).unwrap()).iter().map(|h| h.0).collect();
        assert_eq!(rows, vec![11, 12, 13]);
        let cxcywh = validator("{kind: box, format: cxcywh}");
        let a = floats(vec![
            Some(vec![Some(0.5), Some(0.5), Some(0.1), Some(0.2)]),
            Some(vec![Some(0.5), Some(0.5), Some(0.0), Some(0.2)]),
            Some(vec![Some(0.5), Some(0.5), Some(0.1), Some(-0.2)]),
        ]);
        let rows: Vec<u64> = hits(&cxcywh, &logged(&cxcywh, a).unwrap())
            .iter()
            .map(|h| h.0)
            .collect();
        assert_eq!(rows, vec![11, 12]);
    }

    #[test]
    fn integer_boxes_are_exact() {
        let v = validator("{kind: box, format: xywh}");
        let a: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int64Type, _, _>(vec![
            Some(vec![Some(16_777_217), Some(0), Some(1), Some(1)]),
            Some(vec![Some(5), Some(0), Some(0), Some(1)]),
            Some(vec![Some(5), Some(0), Some(2), Some(-1)]),
        ]));
        assert_eq!(
            hits(&v, &logged(&v, a).unwrap()),
            vec![
                (11, None, "box".into(), "[5, 0, 0, 1]".into()),
                (12, None, "box".into(), "[5, 0, 2, -1]".into())
            ]
        );
    }

    #[test]
    fn a_list_of_boxes_per_row_names_each_box_by_position() {
        let v = validator("{kind: box, format: xyxy}");
        let inner = Field::new_list_field(DataType::Float32, true);
        let boxes = Float32Array::from(vec![0.0, 0.0, 2.0, 2.0, 1.0, 1.0, 1.0, 3.0, 0.0, 0.0, 5.0, 5.0]);
        let four = FixedSizeListArray::new(Arc::new(inner), 4, Arc::new(boxes), None);
        // Row 0: boxes 0 and 1 (1 is degenerate); row 1: none; row 2: null; row 3: box 2.
        let offsets = arrow::buffer::OffsetBuffer::new(vec![0i32, 2, 2, 2, 3].into());
        let nulls = NullBuffer::from(vec![true, true, false, true]);
        let rows = ListArray::new(
            Arc::new(Field::new_list_field(four.data_type().clone(), true)),
            offsets,
            Arc::new(four),
            Some(nulls),
        );
        assert_eq!(
            hits(&v, &logged(&v, Arc::new(rows)).unwrap()),
            vec![
                (10, Some(1), "box".into(), "[1.0, 1.0, 1.0, 3.0]".into()),
                (12, None, "null".into(), "Null".into())
            ]
        );
    }

    #[test]
    fn nullable_rows_pass_and_a_sliced_list_counts_from_its_first_row() {
        let v = validator("{kind: box, format: xywh, nullable: true}");
        let a = floats(vec![
            Some(vec![Some(1.0), Some(1.0), Some(0.0), Some(1.0)]),
            None,
            Some(vec![Some(1.0), Some(1.0), Some(1.0), Some(0.0)]),
        ]);
        let sliced = a.slice(1, 2);
        assert_eq!(
            hits(&v, &logged(&v, sliced).unwrap())
                .iter()
                .map(|h| h.0)
                .collect::<Vec<_>>(),
            vec![11]
        );
    }

    #[test]
    fn text_is_a_bad_box_and_what_holds_no_numbers_a_type_error() {
        let v = validator("{kind: box, format: xywh}");
        let scalar: ArrayRef = Arc::new(Float64Array::from(vec![1.0]));
        let e = logged(&v, scalar).unwrap_err();
        assert!(e[0].message.contains("needs a list of four numbers"), "{e:?}");
        let text: ArrayRef = Arc::new(ListArray::new(
            Arc::new(Field::new_list_field(DataType::Utf8, true)),
            arrow::buffer::OffsetBuffer::new(vec![0i32, 4].into()),
            Arc::new(arrow::array::StringArray::from(vec!["1", "1", "2", "2"])),
            None,
        ));
        assert_eq!(
            hits(&v, &logged(&v, text).unwrap()),
            vec![(10, None, "box".into(), r#"["1", "1", "2", "2"]"#.into())]
        );
        let structs: ArrayRef = Arc::new(ListArray::new(
            Arc::new(Field::new_list_field(DataType::Struct(Default::default()), true)),
            arrow::buffer::OffsetBuffer::new(vec![0i32, 1].into()),
            Arc::new(arrow::array::StructArray::new_empty_fields(1, None)),
            None,
        ));
        let e = logged(&v, structs).unwrap_err();
        assert!(e[0].message.contains("must be numbers"), "{e:?}");
    }
}
