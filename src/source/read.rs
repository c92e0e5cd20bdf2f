//! The reading contract every format implements: a [`Source`] reads its
//! units as [`Batch`]es of Arrow arrays. Why a module of its own: formats
//! and layouts implement it, and the registry in `source` lists them, so it
//! sits below both.

use arrow::array::RecordBatch;

use crate::check::tally::Origin;
use crate::error::ReadError;
use crate::proof::{Judge, UnitStats};

/// Rows per batch handed to the checks: large enough to amortise per-batch
/// work, small enough that a few batches per thread stay in cache and memory.
pub(crate) const BATCH_ROWS: usize = 64 * 1024;

/// A batch of projected columns and the file row of its first row.
#[derive(Debug, Clone)]
pub struct Batch {
    /// Row within the file (0-based) of the batch's first row.
    pub first_row: u64,
    /// The projected columns, in the order they were asked for.
    pub batch: RecordBatch,
}

/// Where [`Source::read_judged`] hands each batch, with which of its
/// columns the reader proved.
pub(crate) type JudgedSink<'a> = dyn FnMut(Batch, &[bool]) -> Result<(), ReadError> + 'a;

/// One data file, opened and ready to be read unit by unit.
pub trait Source: Send + Sync {
    /// Names of the file's top-level columns, in file order.
    fn columns(&self) -> &[String];

    /// How many independently readable units the file has.
    fn units(&self) -> usize;

    /// Reads unit `unit`, projected to the columns at `projection` (indices
    /// into [`Source::columns`]), calling `sink` with each batch in row order.
    /// Batch columns come in the order of `projection`.
    fn read(
        &self,
        unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError>;

    /// Like [`Source::read`], except that the projected columns flagged in
    /// `shapes` may come back as their shape alone: a list array with the
    /// exact row nulls and lengths, whose elements are nulls. The caller asks
    /// for this for list columns whose values it already knows are valid.
    /// Formats that cannot read a shape cheaply read the values.
    fn read_shapes(
        &self,
        unit: usize,
        projection: &[usize],
        shapes: &[bool],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        let _ = shapes;
        self.read(unit, projection, sink)
    }

    /// Like [`Source::read_shapes`], with the value rule of each projected
    /// column as a judge where it has one (`crate::proof::Judge`). A
    /// reader that proves a batch's values of a column pass its judge may
    /// hand that column as a shape of the stored type (exact row nulls and
    /// lengths, element values meaningless) and flag it in the slice `sink`
    /// gets (indexed like `projection`; empty or false: not proven). Only a
    /// caller that checks flagged columns for their length rules alone may
    /// call this. Formats without such proofs prove nothing.
    fn read_judged(
        &self,
        unit: usize,
        projection: &[usize],
        shapes: &[bool],
        judges: &[Option<Judge>],
        sink: &mut JudgedSink<'_>,
    ) -> Result<(), ReadError> {
        let _ = judges;
        self.read_shapes(unit, projection, shapes, &mut |b| sink(b, &[]))
    }

    /// Whether the file holds no rows and has no column list of its own (a
    /// TFRecord file of no records): no column is then missing from it, as
    /// its readers yield nothing and so never miss a feature.
    fn empty(&self) -> bool {
        false
    }

    /// Column statistics for a unit, when the format stores them (Parquet).
    /// `None` means "unknown": the unit must be read.
    fn unit_stats(&self, _unit: usize, _column: usize) -> Option<UnitStats> {
        None
    }

    /// The type column `column` is stored in, as the file declares it (its
    /// header, its schema), when known once opened: for the rule that the
    /// stored type must hold the column's bound, judged on the file's own
    /// type even where a reader widens the values (NumPy's float16) or
    /// statistics spare reading them. `None`: the batches' type is the
    /// stored type.
    fn stored_type(&self, _column: usize) -> Option<arrow::datatypes::DataType> {
        None
    }

    /// What the reader noticed about the file that does not stop its check
    /// but should reach the user as a warning (a lossy JPEG mask, a label
    /// file a loader would drop): asked once the file's units are read, so a
    /// reader may also record what it met while reading. The report sorts
    /// and deduplicates them.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// The names of column `column`'s classes as the file carries them
    /// (`names[i]` is class i's, `None` where it names none), and where
    /// they come from in words: compared with the model's `id2label`.
    fn label_names(&self, _column: usize) -> Option<(Vec<Option<String>>, String)> {
        None
    }

    /// Whether every unit but the last ends right after an end-of-document
    /// id (`Hints::eods`), so that no document crosses units: only then
    /// can the checks judge the documents of an `eod_id` column.
    fn documents(&self) -> bool {
        false
    }

    /// Each column's field id, where the file gives its columns ids
    /// (Parquet's `field_id`, which Iceberg writers set); empty when it
    /// gives none.
    fn field_ids(&self) -> Vec<Option<i32>> {
        Vec::new()
    }

    /// For a source whose rows are not stored in its own file (a
    /// `datasets` index mapping's dataset), where row `row` is stored.
    fn origin(&self, row: u64) -> Option<Origin> {
        let _ = row;
        None
    }
}

/// For readers that return projected columns in file order: the projection
/// sorted (what to ask the reader for) and, for each asked column, its
/// position in that sorted list (to put the columns back in the asked order).
pub(crate) fn file_order(projection: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let mut sorted = projection.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let order = projection
        .iter()
        .map(|p| sorted.binary_search(p).unwrap_or(0))
        .collect();
    (sorted, order)
}

thread_local! {
    /// Set while [`guarded`] runs: a panic there becomes a file's error.
    static GUARDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, turning a panic inside a reader (a dependency's bug on a
/// hostile file) into that file's error instead of a crash of the run. Such
/// a panic is not printed (it is reported as the file's error); panics
/// elsewhere still reach the previous panic hook.
pub(crate) fn guarded<T>(f: impl FnOnce() -> Result<T, ReadError>) -> Result<T, ReadError> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !GUARDED.with(|g| g.get()) {
                previous(info);
            }
        }));
    });
    let was = GUARDED.with(|g| g.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(was));
    match result {
        Ok(r) => r,
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown cause".into());
            Err(ReadError::new(format!("the reader failed on this file ({what})")))
        }
    }
}
