//! Check kernels: the schema's rules applied to Arrow arrays.
//!
//! A [`Validator`] is a schema compiled for checking: each column knows the
//! report slots of its rules and how to judge one value. Batches come in from
//! any source; the kernels only see Arrow arrays, whatever the file format.
//!
//! The hot path is a primitive array of integers: the valid set of every
//! numeric rule is an interval plus at most one extra value (`ignore_index`),
//! mapped once into the array's own type so the count is a branch-free,
//! auto-vectorised loop. Positions are looked for only when the count says
//! there is something to find.

mod band;
mod boxes;
pub(crate) mod classes;
mod documents;
mod leaf;
mod list;
pub(crate) mod tally;

use arrow::array::{Array, ArrayRef, RecordBatch};
use arrow::datatypes::DataType;

use crate::check::tally::Tally;
use crate::proof::{Interval, Judge, UnitStats};
use crate::schema::{ColumnSpec, Number, Rule, Schema, ValueRule, cmp_int_float};

pub(crate) use documents::Documents;
pub(crate) use leaf::Verdict;

/// Report slots of one column's rules.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slots {
    pub value: usize,
    pub null: usize,
    pub not_integer: Option<usize>,
    pub tokenizer_size: Option<usize>,
    pub max_length: Option<usize>,
    pub min_length: Option<usize>,
    pub same_length_as: Option<usize>,
    pub empty_document: Option<usize>,
    pub pair_with: Option<usize>,
}

/// One column of a [`Validator`].
#[derive(Debug, Clone)]
pub(crate) struct ColumnCheck {
    pub spec: ColumnSpec,
    pub slots: Slots,
    /// The valid whole numbers, when they form an interval (+1 extra).
    pub interval: Option<Interval>,
    /// Sorted whole numbers allowed by a `values` rule that is no interval.
    pub allowed_whole: Vec<i128>,
}

impl ColumnCheck {
    fn new(spec: ColumnSpec, slots: Slots) -> ColumnCheck {
        let (interval, allowed_whole) = match &spec.values {
            ValueRule::Class {
                num_classes,
                ignore_index,
            } => (
                Some(Interval {
                    lo: 0,
                    hi: num_classes - 1,
                    extra: *ignore_index,
                }),
                vec![],
            ),
            // No number is a class name: an empty interval.
            ValueRule::ClassNames { .. } => (
                Some(Interval {
                    lo: 1,
                    hi: 0,
                    extra: None,
                }),
                vec![],
            ),
            ValueRule::Index { size, wrap_negative } => {
                let lo = if *wrap_negative { -size } else { 0 };
                (
                    Some(Interval {
                        lo,
                        hi: size - 1,
                        extra: None,
                    }),
                    vec![],
                )
            }
            ValueRule::Range { min, max } => {
                let lo = min.map_or(i128::MIN, ceil_whole);
                let hi = max.map_or(i128::MAX, floor_whole);
                (Some(Interval { lo, hi, extra: None }), vec![])
            }
            ValueRule::Values { numbers, .. } => {
                let mut whole: Vec<i128> = numbers.iter().filter_map(|n| n.as_whole()).collect();
                whole.sort_unstable();
                whole.dedup();
                let contiguous = !whole.is_empty() && whole[whole.len() - 1] - whole[0] == whole.len() as i128 - 1;
                if contiguous {
                    (
                        Some(Interval {
                            lo: whole[0],
                            hi: whole[whole.len() - 1],
                            extra: None,
                        }),
                        vec![],
                    )
                } else if whole.is_empty() {
                    (
                        Some(Interval {
                            lo: 1,
                            hi: 0,
                            extra: None,
                        }),
                        vec![],
                    )
                } else {
                    (None, whole)
                }
            }
            // Boxes are judged whole (`boxes`), never number by number.
            ValueRule::Box { .. } => (None, vec![]),
        };
        ColumnCheck {
            spec,
            slots,
            interval,
            allowed_whole,
        }
    }

    /// Judges a whole number.
    #[inline]
    pub(crate) fn judge_int(&self, v: i128) -> Verdict {
        let ok = match &self.interval {
            Some(i) => i.contains(v),
            None => self.allowed_whole.binary_search(&v).is_ok(),
        };
        if ok { Verdict::Ok } else { Verdict::Bad }
    }

    /// Judges a float as stored.
    pub(crate) fn judge_float(&self, v: f64) -> Verdict {
        match &self.spec.values {
            ValueRule::Class { .. } | ValueRule::Index { .. } => match crate::schema::float_to_whole(v) {
                Some(w) => self.judge_int(w),
                None if v.is_finite() && v.fract() == 0.0 => Verdict::Bad, // whole, beyond any bound
                None => Verdict::NotInteger,
            },
            ValueRule::ClassNames { .. } | ValueRule::Box { .. } => Verdict::Bad,
            ValueRule::Values { numbers, .. } => {
                let hit = numbers
                    .iter()
                    .any(|n| Number::Float(v).cmp_exact(*n) == Some(std::cmp::Ordering::Equal));
                if hit { Verdict::Ok } else { Verdict::Bad }
            }
            ValueRule::Range { min, max } => {
                let x = Number::Float(v);
                let above = min.is_none_or(|m| matches!(x.cmp_exact(m), Some(o) if o.is_ge()));
                let below = max.is_none_or(|m| matches!(x.cmp_exact(m), Some(o) if o.is_le()));
                if v.is_finite() && above && below {
                    Verdict::Ok
                } else {
                    Verdict::Bad
                }
            }
        }
    }

    /// Judges a string.
    pub(crate) fn judge_str(&self, s: &str) -> Verdict {
        match &self.spec.values {
            ValueRule::Class { .. } | ValueRule::Index { .. } => Verdict::NotInteger,
            ValueRule::ClassNames { classes } => {
                if classes.iter().any(|c| c == s) {
                    Verdict::Ok
                } else {
                    Verdict::Bad
                }
            }
            ValueRule::Values { strings, .. } => {
                if strings.iter().any(|c| c == s) {
                    Verdict::Ok
                } else {
                    Verdict::Bad
                }
            }
            ValueRule::Range { .. } | ValueRule::Box { .. } => Verdict::Bad,
        }
    }

    /// Whether this column tracks the smallest value (for the 1-indexed hint).
    pub(crate) fn tracks_min(&self) -> bool {
        matches!(self.spec.values, ValueRule::Class { .. })
    }
}

/// Smallest whole number >= n.
fn ceil_whole(n: Number) -> i128 {
    match n {
        Number::Int(i) => i,
        Number::Float(f) if f <= -8.5e37 => i128::MIN,
        Number::Float(f) if f >= 8.5e37 => i128::MAX,
        Number::Float(f) => {
            let c = f.ceil() as i128;
            // guard the exactness of the cast
            if cmp_int_float(c, f).is_some_and(|o| o.is_lt()) {
                c + 1
            } else {
                c
            }
        }
    }
}

/// Largest whole number <= n.
fn floor_whole(n: Number) -> i128 {
    match n {
        Number::Int(i) => i,
        Number::Float(f) if f <= -8.5e37 => i128::MIN,
        Number::Float(f) if f >= 8.5e37 => i128::MAX,
        Number::Float(f) => {
            let c = f.floor() as i128;
            if cmp_int_float(c, f).is_some_and(|o| o.is_gt()) {
                c - 1
            } else {
                c
            }
        }
    }
}

/// A schema compiled for checking Arrow data.
///
/// Build it once, then check batches one at a time with
/// [`Validator::check_batch`]; merge the tallies in (file, row) order.
#[derive(Debug, Clone)]
pub struct Validator {
    schema: Schema,
    columns: Vec<ColumnCheck>,
    plan: Vec<(usize, Rule)>,
    max_examples: usize,
    /// Per schema column, how many classes it counts (0: not counted);
    /// see [`Validator::counts_classes`].
    counted: Vec<usize>,
}

impl Validator {
    /// Compiles `schema`, keeping `max_examples` examples per check.
    pub fn new(schema: Schema, max_examples: usize) -> Validator {
        let mut plan = Vec::new();
        let mut columns = Vec::with_capacity(schema.columns.len());
        for (ci, spec) in schema.columns.iter().enumerate() {
            let mut slot = |rule: Rule| {
                plan.push((ci, rule));
                plan.len() - 1
            };
            let value = slot(spec.values.rule());
            let null = slot(Rule::Null);
            let not_integer = spec.values.wants_integers().then(|| slot(Rule::NotInteger));
            let tokenizer_size = spec.tokenizer_size.map(|_| slot(Rule::TokenizerSize));
            let max_length = spec.max_length.map(|_| slot(Rule::MaxLength));
            let min_length = spec.min_length.map(|_| slot(Rule::MinLength));
            let same_length_as = spec.same_length_as.map(|_| slot(Rule::SameLengthAs));
            let empty_document = spec.eod_id.map(|_| slot(Rule::EmptyDocument));
            let pair_with = spec.pair_with().map(|_| slot(Rule::PairWith));
            let slots = Slots {
                empty_document,
                value,
                null,
                not_integer,
                tokenizer_size,
                max_length,
                min_length,
                same_length_as,
                pair_with,
            };
            columns.push(ColumnCheck::new(spec.clone(), slots));
        }
        // A run with splits reports each class column's histogram (a mask
        // column's pixels are counted where images are decoded).
        let counted = schema
            .columns
            .iter()
            .map(|c| match classes::Classes::of(&c.values) {
                Some(k) if !schema.splits.is_empty() => k.len(),
                _ => 0,
            })
            .collect();
        Validator {
            schema,
            columns,
            plan,
            max_examples,
            counted,
        }
    }

    /// Whether schema column `ci`'s classes are counted (its schema names
    /// splits): every value is then read, never proven by statistics.
    pub fn counts_classes(&self, ci: usize) -> bool {
        self.counted_classes(ci) > 0
    }

    /// How many classes schema column `ci` counts (0: none).
    pub fn counted_classes(&self, ci: usize) -> usize {
        self.counted.get(ci).copied().unwrap_or(0)
    }

    /// The schema this validator checks.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The report's checks: (schema column index, rule), in report order.
    pub fn plan(&self) -> &[(usize, Rule)] {
        &self.plan
    }

    /// Schema column `ci`'s compiled rules.
    pub(crate) fn column_check(&self, ci: usize) -> &ColumnCheck {
        &self.columns[ci]
    }

    /// Why schema column `ci` cannot be stored in `t` (the type a file
    /// declares for it), if it cannot: see `band::too_narrow`.
    pub(crate) fn too_narrow(&self, ci: usize, t: &DataType) -> Option<String> {
        band::too_narrow(&self.columns[ci].spec, t)
    }

    /// The columns of a batch as a reader stored them (schema order, as
    /// [`Validator::check_columns`] takes them) whose type cannot hold
    /// their bound; also a batch a reader proved (its shape keeps the
    /// stored type). Decoded images are not stored columns: leave them out.
    pub(crate) fn stored_type_errors(&self, columns: &[Option<ArrayRef>]) -> Vec<TypeError> {
        self.columns
            .iter()
            .zip(columns)
            .filter_map(|(col, a)| {
                let message = band::too_narrow(&col.spec, a.as_ref()?.data_type())?;
                Some(TypeError {
                    column: col.spec.name.clone(),
                    message,
                })
            })
            .collect()
    }

    /// Examples kept per check.
    pub fn max_examples(&self) -> usize {
        self.max_examples
    }

    /// An empty tally to check into.
    pub fn tally(&self) -> Tally {
        let mut t = Tally::new(self.plan.len(), self.max_examples);
        if self.counted.iter().any(|&n| n > 0) {
            t.classes = self.counted.iter().map(|&n| vec![0; n]).collect();
        }
        t
    }

    /// Checks one batch whose first row is `first_row` of file number `file`.
    /// `columns[i]` is schema column i's array, `None` when the file lacks it
    /// (the caller decides whether that is an error). Returns the columns
    /// whose type their rule cannot check; the other columns are checked.
    pub fn check_columns(
        &self,
        columns: &[Option<ArrayRef>],
        rows: usize,
        file: usize,
        first_row: u64,
        tally: &mut Tally,
    ) -> Vec<TypeError> {
        self.check_columns_shaped(columns, &[], rows, file, first_row, tally)
    }

    /// [`Validator::check_columns`] where the columns flagged in `shaped`
    /// have values that statistics proved valid: only their length rules
    /// are checked, so their arrays may be shapes (list arrays of nulls).
    pub(crate) fn check_columns_shaped(
        &self,
        columns: &[Option<ArrayRef>],
        shaped: &[bool],
        rows: usize,
        file: usize,
        first_row: u64,
        tally: &mut Tally,
    ) -> Vec<TypeError> {
        tally.rows += rows as u64;
        let mut errors = Vec::new();
        let at = Place { file, first_row };
        for (ci, col) in self.columns.iter().enumerate() {
            let Some(array) = columns.get(ci).and_then(|a| a.as_ref()) else {
                continue;
            };
            let mut result = if shaped.get(ci) == Some(&true) {
                Ok(())
            } else if let ValueRule::Box { format, .. } = col.spec.values {
                boxes::check_boxes(col, format, array.as_ref(), at, tally)
            } else {
                leaf::check_values(
                    col,
                    array.as_ref(),
                    0..array.len(),
                    &|p| crate::check::tally::Spot::row(first_row + p as u64),
                    at,
                    tally,
                )
            };
            if result.is_ok()
                && shaped.get(ci) != Some(&true)
                && let Some(counts) = tally.classes.get_mut(ci).filter(|c| !c.is_empty())
                && let Some(k) = classes::Classes::of(&col.spec.values)
            {
                classes::count(&k, array.as_ref(), counts);
            }
            if result.is_ok()
                && shaped.get(ci) != Some(&true)
                && let Some(slot) = col.slots.tokenizer_size
            {
                band::check_band(col, array.as_ref(), slot, at, tally);
            }
            if let (Ok(()), Some(eod)) = (&result, col.spec.eod_id) {
                result = match tally.docs.take() {
                    Some(mut docs) => {
                        let r = documents::check_documents(col, ci, eod, array.as_ref(), &mut docs, at, tally);
                        tally.docs = Some(docs);
                        r
                    }
                    None => Err(documents::not_a_stream(array.data_type())),
                };
            } else if result.is_ok() && col.spec.has_length_rules() {
                let other = col
                    .spec
                    .same_length_as
                    .and_then(|o| columns.get(o).and_then(|a| a.as_ref()));
                result = list::check_lengths(col, array.as_ref(), other.map(|a| a.as_ref()), at, tally);
            }
            if let Err(message) = result {
                errors.push(TypeError {
                    column: col.spec.name.clone(),
                    message,
                });
            }
        }
        errors
    }

    /// Readies `tally` to follow documents across the batches of one unit
    /// of a source whose units hold whole documents (token streams read
    /// with their `eod_id`); without this, an `eod_id` column is a type
    /// error.
    pub(crate) fn start_documents(&self, tally: &mut Tally) {
        if self.columns.iter().any(|c| c.spec.eod_id.is_some()) {
            tally.docs = Some(Box::new(Documents::new(self.columns.len())));
        }
    }

    /// Judges the documents still open at the end of a unit (the tokens
    /// after a file's last end-of-document id) and stops following them.
    pub(crate) fn finish_documents(&self, file: usize, tally: &mut Tally) {
        if let Some(docs) = tally.docs.take() {
            for (ci, col) in self.columns.iter().enumerate() {
                documents::finish_documents(col, ci, &docs, file, tally);
            }
        }
    }

    /// Checks a `RecordBatch` whose columns are found by name; columns the
    /// batch lacks are skipped (use [`Validator::missing`] to find them).
    pub fn check_batch(&self, batch: &RecordBatch, file: usize, first_row: u64, tally: &mut Tally) -> Vec<TypeError> {
        let cols: Vec<Option<ArrayRef>> = self
            .columns
            .iter()
            .map(|c| batch.column_by_name(&c.spec.name).cloned())
            .collect();
        self.check_columns(&cols, batch.num_rows(), file, first_row, tally)
    }

    /// Which rows of `batch` pass every rule (true) and which break one
    /// (false): the mask that drops exactly the rows `check` reports. A
    /// column the schema requires and the batch lacks, or one whose type
    /// its rule cannot check, is an error: no row can be said to pass.
    pub fn mask(&self, batch: &RecordBatch) -> Result<arrow::array::BooleanArray, String> {
        let names: Vec<&str> = batch.schema_ref().fields().iter().map(|f| f.name().as_str()).collect();
        if let Some(column) = self.missing(&names).first() {
            return Err(format!("column `{column}` is missing (the schema requires it)"));
        }
        let mut tally = Tally::new(self.plan.len(), 0);
        tally.log = Some(Vec::new());
        if let Some(e) = self.check_batch(batch, 0, 0, &mut tally).into_iter().next() {
            return Err(e.to_string());
        }
        let mut keep = vec![true; batch.num_rows()];
        for l in tally.log.unwrap_or_default() {
            if let Some(k) = usize::try_from(l.spot.row).ok().and_then(|r| keep.get_mut(r)) {
                *k = false;
            }
        }
        Ok(arrow::array::BooleanArray::from(keep))
    }

    /// Whether metadata statistics prove schema column `ci` valid in a unit,
    /// so its values need not be decoded. Length rules always need data.
    pub fn proven_by(&self, ci: usize, stats: &UnitStats) -> bool {
        let col = &self.columns[ci];
        if self.counts_classes(ci) {
            return false;
        }
        // Length rules need the data, its own or a column comparing with it.
        if col.spec.has_length_rules()
            || col.spec.eod_id.is_some()
            || self.columns.iter().any(|c| c.spec.same_length_as == Some(ci))
        {
            return false;
        }
        self.values_proven(ci, stats)
    }

    /// The value rule of schema column `ci` as a `Judge` a reader may
    /// apply itself, when passing it is all a clean integer value does to
    /// the report (see `judge`); `None` otherwise.
    pub fn judge(&self, ci: usize) -> Option<Judge> {
        let col = &self.columns[ci];
        let spec = &col.spec;
        let plain = !col.tracks_min()
            && !self.counts_classes(ci)
            && spec.tokenizer_size.is_none()
            && spec.eod_id.is_none()
            && spec.pad_id.is_none()
            && spec.pixels.is_none();
        plain.then_some(col.interval).flatten().map(Judge::new)
    }

    /// Whether statistics prove the values of a list column valid in a unit
    /// so that its row shapes (nulls and lengths, not values) finish the
    /// check. A `pad_id` makes lengths depend on values.
    pub fn shape_suffices(&self, ci: usize, stats: &UnitStats) -> bool {
        !self.counts_classes(ci)
            && stats.repeated
            && self.columns[ci].spec.pad_id.is_none()
            && self.values_proven(ci, stats)
    }

    /// Whether statistics prove every value rule of column `ci` in a unit.
    fn values_proven(&self, ci: usize, stats: &UnitStats) -> bool {
        let col = &self.columns[ci];
        let Some(iv) = col.interval else { return false };
        let in_range = iv.lo <= stats.min && stats.max <= iv.hi;
        // Nulls are violations unless allowed; in a list column the null
        // count also counts empty lists, so only zero proves anything there.
        let nulls_ok = stats.null_count == 0 || col.spec.nullable;
        // The tokenizer band [tokenizer_size, size) is counted apart: only
        // a unit whose values all lie below it has none to count.
        let band_clear = col.spec.tokenizer_size.is_none_or(|t| stats.max < t);
        in_range && nulls_ok && band_clear
    }

    /// Notes what statistics showed of a proven column (for hints).
    /// A minimum is only written for a unit holding a value; the null count
    /// cannot tell (in a list column it also counts empty lists).
    pub fn note_proven(&self, ci: usize, stats: &UnitStats, tally: &mut Tally) {
        let col = &self.columns[ci];
        if col.tracks_min() {
            tally.checks[col.slots.value].evidence.seen_min(stats.min);
        }
    }

    /// Required schema columns that `names` lacks.
    pub fn missing<'a>(&'a self, names: &[&str]) -> Vec<&'a str> {
        self.columns
            .iter()
            .filter(|c| !c.spec.optional && !names.contains(&c.spec.name.as_str()))
            .map(|c| c.spec.name.as_str())
            .collect()
    }
}

/// A column whose Arrow type its rule cannot check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("column `{column}`: {message}")]
pub struct TypeError {
    /// The schema column.
    pub column: String,
    /// What is wrong.
    pub message: String,
}

/// Where a batch sits: the file and the file row of its first row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Place {
    pub file: usize,
    pub first_row: u64,
}

/// Describes a type for messages.
pub(crate) fn type_name(t: &DataType) -> String {
    format!("{t}")
}

#[cfg(test)]
mod tests {
    //! The kernels on hand-built arrays: every integer width at its
    //! extremes, float boundaries, nulls at every level of a list. Each
    //! case plants its violations and asserts every count of the report.

    use std::collections::BTreeMap;
    use std::path::Path;
    use std::sync::Arc;

    use arrow::array::{
        ArrayRef, Float32Array, Float64Array, Int8Array, Int16Array, Int32Array, Int64Array, ListArray, StringArray,
        UInt8Array, UInt16Array, UInt32Array, UInt64Array,
    };
    use arrow::datatypes::Int32Type;

    use super::*;

    fn validator(columns: &str) -> Validator {
        let yaml = format!("version: 1\ncolumns:\n{columns}");
        Validator::new(Schema::from_yaml(&yaml, Path::new("s.yaml")).unwrap(), 100)
    }

    /// The non-zero counts of checking `array` as the schema's one column
    /// `v`, by rule, and the rows of the examples of each.
    fn counts(v: &Validator, array: ArrayRef) -> BTreeMap<String, (u64, Vec<u64>)> {
        let batch = RecordBatch::try_from_iter([("v", array)]).unwrap();
        let mut tally = v.tally();
        let errors = v.check_batch(&batch, 0, 0, &mut tally);
        assert!(errors.is_empty(), "{errors:?}");
        v.plan()
            .iter()
            .zip(&tally.checks)
            .filter(|(_, c)| c.violations > 0)
            .map(|((_, rule), c)| {
                let rows = c.examples.iter().map(|e| e.row).collect();
                (format!("{rule:?}"), (c.violations, rows))
            })
            .collect()
    }

    fn only(rule: &str, n: u64, rows: &[u64]) -> BTreeMap<String, (u64, Vec<u64>)> {
        BTreeMap::from([(rule.to_string(), (n, rows.to_vec()))])
    }

    #[test]
    fn every_signed_width_at_its_extremes() {
        let v = validator("  v: {kind: class, num_classes: 10, ignore_index: -100}\n");
        // rows: MIN, -100 (ignored), -1, 0, 9, 10, MAX
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(Int8Array::from(vec![i8::MIN, -100, -1, 0, 9, 10, i8::MAX])),
            Arc::new(Int16Array::from(vec![i16::MIN, -100, -1, 0, 9, 10, i16::MAX])),
            Arc::new(Int32Array::from(vec![i32::MIN, -100, -1, 0, 9, 10, i32::MAX])),
            Arc::new(Int64Array::from(vec![i64::MIN, -100, -1, 0, 9, 10, i64::MAX])),
        ];
        for a in arrays {
            let t = a.data_type().clone();
            assert_eq!(counts(&v, a), only("Class", 4, &[0, 2, 5, 6]), "{t}");
        }
    }

    #[test]
    fn every_unsigned_width_at_its_extremes() {
        let v = validator("  v: {kind: class, num_classes: 10, ignore_index: 255}\n");
        // rows: 0, 9, 10, 255 (ignored), MAX
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(UInt8Array::from(vec![0, 9, 10, 255, u8::MAX - 1])),
            Arc::new(UInt16Array::from(vec![0, 9, 10, 255, u16::MAX])),
            Arc::new(UInt32Array::from(vec![0, 9, 10, 255, u32::MAX])),
            Arc::new(UInt64Array::from(vec![0, 9, 10, 255, u64::MAX])),
        ];
        for a in arrays {
            let t = a.data_type().clone();
            assert_eq!(counts(&v, a), only("Class", 2, &[2, 4]), "{t}");
        }
    }

    #[test]
    fn a_bound_past_the_type_passes_every_value_of_it() {
        // 2^40 classes: every uint32 and every non-negative int8 is valid.
        let v = validator("  v: {kind: index, size: 1099511627776}\n");
        let a: ArrayRef = Arc::new(UInt32Array::from(vec![0, u32::MAX]));
        assert!(counts(&v, a).is_empty());
        let a: ArrayRef = Arc::new(Int8Array::from(vec![i8::MIN, 0, i8::MAX]));
        assert_eq!(counts(&v, a), only("Index", 1, &[0]));
        let a: ArrayRef = Arc::new(UInt64Array::from(vec![1 << 40, (1 << 40) - 1, u64::MAX]));
        assert_eq!(counts(&v, a), only("Index", 2, &[0, 2]));
    }

    #[test]
    fn negative_indices_wrap_down_to_minus_size() {
        let v = validator("  v: {kind: index, size: 5, wrap_negative: true}\n");
        let a: ArrayRef = Arc::new(Int64Array::from(vec![-6, -5, -1, 0, 4, 5]));
        assert_eq!(counts(&v, a), only("Index", 2, &[0, 5]));
        let v = validator("  v: {kind: index, size: 5}\n");
        let a: ArrayRef = Arc::new(Int64Array::from(vec![-6, -5, -1, 0, 4, 5]));
        assert_eq!(counts(&v, a), only("Index", 4, &[0, 1, 2, 5]));
    }

    #[test]
    fn floats_in_a_class_column_are_whole_numbers_or_not_integer() {
        let v = validator("  v: {kind: class, num_classes: 3}\n");
        let a: ArrayRef = Arc::new(Float64Array::from(vec![
            0.0,
            2.0,
            -0.0,
            2.5,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            3.0,
            1e300,
            -1.0,
        ]));
        let want = BTreeMap::from([
            ("Class".to_string(), (3, vec![7, 8, 9])),
            ("NotInteger".to_string(), (4, vec![3, 4, 5, 6])),
        ]);
        assert_eq!(counts(&v, a), want);
        // float32: 2^24 + 1 is not representable; 16777216.0 is whole.
        let v = validator("  v: {kind: index, size: 16777217}\n");
        let a: ArrayRef = Arc::new(Float32Array::from(vec![16777216.0, 16777218.0, 0.5]));
        let want = BTreeMap::from([
            ("Index".to_string(), (1, vec![1])),
            ("NotInteger".to_string(), (1, vec![2])),
        ]);
        assert_eq!(counts(&v, a), want);
    }

    #[test]
    fn range_bounds_are_inclusive_and_exact() {
        let v = validator("  v: {kind: range, min: 0.5, max: 1}\n");
        let a: ArrayRef = Arc::new(Float64Array::from(vec![
            0.5,
            1.0,
            0.49999999999999994,
            1.0000000000000002,
            f64::NAN,
            f64::INFINITY,
        ]));
        assert_eq!(counts(&v, a), only("Range", 4, &[2, 3, 4, 5]));
        // Integers against fractional bounds: 1 and 2 lie in [0.5, 2.5].
        let v = validator("  v: {kind: range, min: 0.5, max: 2.5}\n");
        let a: ArrayRef = Arc::new(Int64Array::from(vec![0, 1, 2, 3, i64::MIN, i64::MAX]));
        assert_eq!(counts(&v, a), only("Range", 4, &[0, 3, 4, 5]));
    }

    #[test]
    fn values_that_are_not_an_interval() {
        let v = validator("  v: {kind: values, allowed: [-1, 3, 7]}\n");
        let a: ArrayRef = Arc::new(Int16Array::from(vec![-1, 0, 3, 4, 7, i16::MAX]));
        assert_eq!(counts(&v, a), only("Values", 3, &[1, 3, 5]));
    }

    #[test]
    fn nulls_in_nested_lists_are_counted_where_they_are() {
        let v = validator("  v: {kind: class, num_classes: 4}\n");
        // rows: [0, null, 3], null, [], [4, null, 1]
        let a: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(0), None, Some(3)]),
            None,
            Some(vec![]),
            Some(vec![Some(4), None, Some(1)]),
        ]));
        let want = BTreeMap::from([
            ("Class".to_string(), (1, vec![3])),
            ("Null".to_string(), (3, vec![0, 1, 3])),
        ]);
        assert_eq!(counts(&v, a), want);
    }

    #[test]
    fn null_scalars_and_strings_in_a_class_column() {
        let v = validator("  v: {kind: class, num_classes: 4}\n");
        let a: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None, Some(4), None]));
        let want = BTreeMap::from([
            ("Class".to_string(), (1, vec![2])),
            ("Null".to_string(), (2, vec![1, 3])),
        ]);
        assert_eq!(counts(&v, a), want);
        let a: ArrayRef = Arc::new(StringArray::from(vec![Some("1"), None]));
        let want = BTreeMap::from([
            ("NotInteger".to_string(), (1, vec![0])),
            ("Null".to_string(), (1, vec![1])),
        ]);
        assert_eq!(counts(&v, a), want);
    }

    #[test]
    fn length_rules_count_rows() {
        let v = validator("  v: {kind: index, size: 10, max_length: 2, min_length: 1}\n");
        let a: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1), Some(2)]),
            Some(vec![Some(1), Some(2), Some(3)]),
            Some(vec![]),
            None,
        ]));
        let want = BTreeMap::from([
            ("MaxLength".to_string(), (1, vec![1])),
            ("MinLength".to_string(), (1, vec![2])),
            ("Null".to_string(), (1, vec![3])),
        ]);
        assert_eq!(counts(&v, a), want);
    }

    #[test]
    fn judging_one_value_of_each_kind() {
        let v = validator("  v: {kind: class, num_classes: 3}\n");
        let c = v.column_check(0);
        assert_eq!(c.judge_int(-100), Verdict::Ok);
        assert_eq!(c.judge_int(3), Verdict::Bad);
        assert_eq!(c.judge_float(-0.0), Verdict::Ok);
        assert_eq!(c.judge_float(-100.0), Verdict::Ok);
        assert_eq!(c.judge_float(2.000000000000001), Verdict::NotInteger);
        assert_eq!(c.judge_float(1e38), Verdict::Bad);
        assert_eq!(c.judge_float(f64::NEG_INFINITY), Verdict::NotInteger);
        assert_eq!(c.judge_str("1"), Verdict::NotInteger);
        let v = validator("  v: {kind: values, allowed: [0, 1, x]}\n");
        let c = v.column_check(0);
        assert_eq!(c.judge_str("x"), Verdict::Ok);
        assert_eq!(c.judge_str("0"), Verdict::Bad);
        assert_eq!(c.judge_float(f64::NAN), Verdict::Bad);
        let v = validator("  v: {kind: range, min: 0}\n");
        assert_eq!(v.column_check(0).judge_str("1"), Verdict::Bad);
    }

    #[test]
    fn whole_bounds_of_fractional_range_limits() {
        assert_eq!(ceil_whole(Number::Float(0.5)), 1);
        assert_eq!(floor_whole(Number::Float(0.5)), 0);
        assert_eq!(ceil_whole(Number::Float(-0.5)), 0);
        assert_eq!(floor_whole(Number::Float(-0.5)), -1);
        assert_eq!(ceil_whole(Number::Float(-0.0)), 0);
        assert_eq!(floor_whole(Number::Float(-0.0)), 0);
        assert_eq!(ceil_whole(Number::Float(1e38)), i128::MAX);
        assert_eq!(floor_whole(Number::Float(-1e38)), i128::MIN);
        assert_eq!(ceil_whole(Number::Float(9.223372036854776e18)), 1 << 63);
        assert_eq!(floor_whole(Number::Int(-7)), -7);
    }

    #[test]
    fn fractional_range_bounds_on_unsigned_bytes() {
        let v = validator("  v: {kind: range, min: -0.5, max: 255.5}\n");
        let a: ArrayRef = Arc::new(UInt8Array::from(vec![0, u8::MAX]));
        assert!(counts(&v, a).is_empty());
        let v = validator("  v: {kind: range, min: 0.1, max: 254.9}\n");
        let a: ArrayRef = Arc::new(UInt8Array::from(vec![0, 1, 254, u8::MAX]));
        assert_eq!(counts(&v, a), only("Range", 2, &[0, 3]));
        let v = validator("  v: {kind: range, min: 1e300}\n");
        let a: ArrayRef = Arc::new(UInt64Array::from(vec![0, u64::MAX]));
        assert_eq!(counts(&v, a), only("Range", 2, &[0, 1]));
    }

    #[test]
    fn default_ignore_index_is_minus_100_and_null_removes_it() {
        let a: ArrayRef = Arc::new(Int64Array::from(vec![-100, -1]));
        let v = validator("  v: {kind: class, num_classes: 2}\n");
        assert_eq!(counts(&v, a.clone()), only("Class", 1, &[1]));
        let v = validator("  v: {kind: class, num_classes: 2, ignore_index: null}\n");
        assert_eq!(counts(&v, a), only("Class", 2, &[0, 1]));
    }

    #[test]
    fn gapped_values_on_u64_are_not_wrapped() {
        let v = validator("  v: {kind: values, allowed: [-1, 5]}\n");
        let a: ArrayRef = Arc::new(UInt64Array::from(vec![u64::MAX, 5, 0]));
        assert_eq!(counts(&v, a), only("Values", 2, &[0, 2]));
        let a: ArrayRef = Arc::new(Int8Array::from(vec![Some(-1), None, Some(i8::MIN)]));
        let want = BTreeMap::from([("Values".to_string(), (1, vec![2])), ("Null".to_string(), (1, vec![1]))]);
        assert_eq!(counts(&v, a), want);
    }

    #[test]
    fn class_names_fail_every_number() {
        let v = validator("  v: {kind: class, classes: [cat, dog]}\n");
        let a: ArrayRef = Arc::new(Int32Array::from(vec![0, 1]));
        assert_eq!(counts(&v, a), only("Class", 2, &[0, 1]));
        let a: ArrayRef = Arc::new(StringArray::from(vec!["dog", "cow", "Cat"]));
        assert_eq!(counts(&v, a), only("Class", 2, &[1, 2]));
    }

    #[test]
    fn examples_name_the_file_and_the_row_in_it() {
        let v = validator("  v: {kind: index, size: 3}\n");
        let batch = RecordBatch::try_from_iter([("v", Arc::new(Int32Array::from(vec![0, 3, 1])) as ArrayRef)]).unwrap();
        let mut tally = v.tally();
        assert!(v.check_batch(&batch, 7, 1000, &mut tally).is_empty());
        let e = &tally.checks[0].examples;
        assert_eq!(
            (e.len(), e[0].file, e[0].row, &e[0].value),
            (1, 7, 1001, &tally::Value::Int(3))
        );
        assert_eq!(tally.rows, 3);
    }

    #[test]
    fn the_mask_drops_exactly_the_reported_rows() {
        let v = validator("  v: {kind: class, num_classes: 4}\n");
        let a: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(0), Some(3)]),
            Some(vec![Some(4)]),
            None,
            Some(vec![]),
            Some(vec![Some(1), None]),
        ]));
        let batch = RecordBatch::try_from_iter([("v", a)]).unwrap();
        let mask = v.mask(&batch).unwrap();
        let keep: Vec<bool> = mask.iter().map(Option::unwrap).collect();
        assert_eq!(keep, [true, false, false, true, false]);
        let other = RecordBatch::try_from_iter([("w", Arc::new(Int32Array::from(vec![0])) as ArrayRef)]).unwrap();
        assert_eq!(
            v.mask(&other).unwrap_err(),
            "column `v` is missing (the schema requires it)"
        );
    }

    #[test]
    fn statistics_prove_only_what_they_bound() {
        let v = validator("  v: {kind: index, size: 10}\n  w: {kind: index, size: 10, nullable: true}\n");
        let stats = |min, max, null_count| UnitStats {
            min,
            max,
            null_count,
            rows: 5,
            repeated: false,
        };
        assert!(v.proven_by(0, &stats(0, 9, 0)));
        assert!(!v.proven_by(0, &stats(-1, 9, 0)));
        assert!(!v.proven_by(0, &stats(0, 10, 0)));
        assert!(!v.proven_by(0, &stats(0, 9, 1)));
        assert!(v.proven_by(1, &stats(0, 9, 1)));
        assert!(
            v.judge(0)
                .is_some_and(|j| j.passes(9) && !j.passes(10) && !j.passes(-1))
        );
        // Class columns track their minimum: no judge outside the kernels.
        let v = validator("  v: {kind: class, num_classes: 2}\n");
        assert!(v.judge(0).is_none());
    }

    #[test]
    fn optional_columns_are_not_missing() {
        let v = validator("  a: {kind: index, size: 1}\n  b: {kind: index, size: 1, optional: true}\n");
        assert_eq!(v.missing(&[]), ["a"]);
        assert!(v.missing(&["a"]).is_empty());
    }
}
