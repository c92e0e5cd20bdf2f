//! How often each class occurs: the histogram a run with splits reports
//! (`class_counts`), per class column.
//!
//! A separate pass after the value rule, not part of it: the rule's kernels
//! count what is wrong and stay a branch-free loop, while this one is only
//! paid for when the schema names its splits. A value counts when it is a
//! class (0 <= v < num_classes, or one of `classes`); `ignore_index`,
//! nulls and violations do not. (Mask images whose pixels never reach the
//! kernels, judged from a histogram or a colour map, are counted where they
//! are decoded, in `pixels`.)

use std::collections::HashMap;
use std::ops::Range;

use arrow::array::downcast_integer;
use arrow::array::{Array, AsArray, OffsetSizeTrait, PrimitiveArray};
use arrow::datatypes::{ArrowPrimitiveType, DataType, Float16Type, Float32Type, Float64Type};

use crate::schema::ValueRule;

/// The most classes a column may have to be counted: a histogram per
/// split and unit of work stays small.
pub(crate) const MAX_COUNTED: i128 = 1 << 20;

/// How a column's values name their class.
pub(crate) enum Classes<'a> {
    /// Whole numbers 0 <= v < n.
    Numbered(usize),
    /// Strings, one of these names (their index is the class).
    Named(&'a [String]),
}

impl<'a> Classes<'a> {
    /// The classes of a value rule, when they are counted.
    pub(crate) fn of(rule: &'a ValueRule) -> Option<Classes<'a>> {
        match rule {
            ValueRule::Class { num_classes, .. } if *num_classes <= MAX_COUNTED => {
                usize::try_from(*num_classes).ok().map(Classes::Numbered)
            }
            ValueRule::ClassNames { classes } => Some(Classes::Named(classes)),
            _ => None,
        }
    }

    /// How many classes there are.
    pub(crate) fn len(&self) -> usize {
        match self {
            Classes::Numbered(n) => *n,
            Classes::Named(names) => names.len(),
        }
    }
}

/// Adds the classes of `array` (its values, through any lists) to `counts`.
pub(crate) fn count(classes: &Classes, array: &dyn Array, counts: &mut [u64]) {
    let names: HashMap<&str, usize> = match classes {
        Classes::Named(list) => list.iter().enumerate().map(|(i, s)| (s.as_str(), i)).collect(),
        Classes::Numbered(_) => HashMap::new(),
    };
    let mut add = Adder {
        names,
        counts,
        weight: 1,
    };
    add.range(array, 0..array.len());
}

struct Adder<'a> {
    names: HashMap<&'a str, usize>,
    counts: &'a mut [u64],
    /// What one value adds: the rows using a dictionary entry.
    weight: u64,
}

impl Adder<'_> {
    fn whole(&mut self, v: i128) {
        if self.names.is_empty()
            && let Some(c) = usize::try_from(v).ok().and_then(|i| self.counts.get_mut(i))
        {
            *c += self.weight;
        }
    }

    fn range(&mut self, array: &dyn Array, range: Range<usize>) {
        macro_rules! ints {
            ($t:ty) => {
                self.ints(array.as_primitive::<$t>(), range)
            };
        }
        downcast_integer! {
            array.data_type() => (ints),
            DataType::Float16 => self.floats(array.as_primitive::<Float16Type>(), range, |v| v.to_f64()),
            DataType::Float32 => self.floats(array.as_primitive::<Float32Type>(), range, f64::from),
            DataType::Float64 => self.floats(array.as_primitive::<Float64Type>(), range, |v| v),
            DataType::Boolean => {
                let a = array.as_boolean();
                for i in range.filter(|&i| a.is_valid(i)) {
                    self.whole(i128::from(a.value(i)));
                }
            }
            DataType::Utf8 => self.strings(array.as_string::<i32>(), range),
            DataType::LargeUtf8 => self.strings(array.as_string::<i64>(), range),
            DataType::Utf8View => {
                let a = array.as_string_view();
                for i in range.filter(|&i| a.is_valid(i)) {
                    self.name(a.value(i));
                }
            }
            DataType::Dictionary(_, _) => {
                // How often each entry is used, then each used entry's class
                // once, weighted: no per-row dispatch on the values' type.
                let a = array.as_any_dictionary();
                let keys = a.normalized_keys();
                let mut used = vec![0u64; a.values().len()];
                for i in range.filter(|&i| a.keys().is_valid(i)) {
                    if let Some(n) = used.get_mut(keys[i]) {
                        *n += 1;
                    }
                }
                let weight = self.weight;
                for (k, n) in used.into_iter().enumerate().filter(|&(_, n)| n > 0) {
                    self.weight = weight.saturating_mul(n);
                    self.range(a.values().as_ref(), k..k + 1);
                }
                self.weight = weight;
            }
            DataType::List(_) => self.list(array.as_list::<i32>(), range),
            DataType::LargeList(_) => self.list(array.as_list::<i64>(), range),
            DataType::FixedSizeList(_, _) => {
                let a = array.as_fixed_size_list();
                let n = a.value_length() as usize;
                for i in range.filter(|&i| a.is_valid(i)) {
                    let start = a.value_offset_at(i);
                    self.range(a.values().as_ref(), start..start + n);
                }
            }
            DataType::Union(_, _) => {
                let u = array.as_union();
                for i in range {
                    let off = u.value_offset(i);
                    self.range(u.child(u.type_id(i)).as_ref(), off..off + 1);
                }
            }
            _ => {}
        }
    }

    fn ints<T: ArrowPrimitiveType>(&mut self, a: &PrimitiveArray<T>, range: Range<usize>)
    where
        T::Native: Into<i128>,
    {
        if !self.names.is_empty() {
            return;
        }
        let values = &a.values()[range.clone()];
        match a.nulls() {
            None => {
                for &v in values {
                    self.whole(v.into());
                }
            }
            Some(n) => {
                for (i, &v) in range.zip(values) {
                    if n.is_valid(i) {
                        self.whole(v.into());
                    }
                }
            }
        }
    }

    fn floats<T: ArrowPrimitiveType>(&mut self, a: &PrimitiveArray<T>, range: Range<usize>, f: fn(T::Native) -> f64) {
        for i in range.filter(|&i| a.is_valid(i)) {
            let v = f(a.value(i));
            if v.is_finite() && v.fract() == 0.0 && v.abs() < 2f64.powi(100) {
                self.whole(v as i128);
            }
        }
    }

    fn strings<O: OffsetSizeTrait>(&mut self, a: &arrow::array::GenericStringArray<O>, range: Range<usize>) {
        for i in range.filter(|&i| a.is_valid(i)) {
            self.name(a.value(i));
        }
    }

    fn name(&mut self, s: &str) {
        if let Some(c) = self.names.get(s).and_then(|&i| self.counts.get_mut(i)) {
            *c += self.weight;
        }
    }

    fn list<O: OffsetSizeTrait>(&mut self, a: &arrow::array::GenericListArray<O>, range: Range<usize>) {
        let offsets = a.value_offsets();
        for i in range.filter(|&i| a.is_valid(i)) {
            let (start, end) = (offsets[i].as_usize(), offsets[i + 1].as_usize());
            self.range(a.values().as_ref(), start..end);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Int64Array, ListArray, StringArray, UInt8Array};
    use arrow::datatypes::Int32Type;

    use super::*;

    fn counted(classes: &Classes, a: &dyn Array) -> Vec<u64> {
        let mut counts = vec![0; classes.len()];
        count(classes, a, &mut counts);
        counts
    }

    #[test]
    fn only_classes_count() {
        let a = Int64Array::from(vec![Some(0), Some(2), None, Some(-100), Some(3), Some(2), Some(-1)]);
        assert_eq!(counted(&Classes::Numbered(3), &a), vec![1, 0, 2]);
        let b = UInt8Array::from(vec![255, 1, 1]);
        assert_eq!(counted(&Classes::Numbered(3), &b), vec![0, 2, 0]);
    }

    #[test]
    fn lists_count_their_elements_and_null_rows_nothing() {
        let a = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1), Some(1), Some(-100)]),
            None,
            Some(vec![Some(0), None]),
        ]);
        assert_eq!(counted(&Classes::Numbered(2), &a), vec![1, 2]);
        // A slice counts only its own rows.
        let sliced: ArrayRef = Arc::new(a.slice(2, 1));
        assert_eq!(counted(&Classes::Numbered(2), sliced.as_ref()), vec![1, 0]);
    }

    #[test]
    fn names_count_by_their_index() {
        let names = vec!["cat".to_string(), "dog".to_string()];
        let a = StringArray::from(vec![Some("dog"), Some("bird"), None, Some("dog")]);
        assert_eq!(counted(&Classes::Named(&names), &a), vec![0, 2]);
        // Numbers are no class names.
        assert_eq!(
            counted(&Classes::Named(&names), &Int64Array::from(vec![0, 1])),
            vec![0, 0]
        );
    }

    #[test]
    fn dictionary_rows_count_their_entries_class() {
        use arrow::array::DictionaryArray;
        use arrow::datatypes::Int8Type;
        let keys = arrow::array::Int8Array::from(vec![Some(0), Some(2), None, Some(2), Some(1), Some(2)]);
        let values = Int64Array::from(vec![1, -100, 0]);
        let a = DictionaryArray::<Int8Type>::try_new(keys, Arc::new(values)).unwrap();
        assert_eq!(counted(&Classes::Numbered(2), &a), vec![3, 1]);
        // A slice counts only its own rows.
        assert_eq!(counted(&Classes::Numbered(2), &a.slice(3, 2)), vec![1, 0]);
        let names = vec!["cat".to_string(), "dog".to_string()];
        let d: DictionaryArray<Int8Type> = vec!["dog", "cat", "dog", "eel"].into_iter().collect();
        assert_eq!(counted(&Classes::Named(&names), &d), vec![1, 2]);
    }

    #[test]
    fn floats_count_when_whole() {
        let a = arrow::array::Float32Array::from(vec![1.0, 1.5, f32::NAN, 0.0]);
        assert_eq!(counted(&Classes::Numbered(2), &a), vec![1, 1]);
    }
}
