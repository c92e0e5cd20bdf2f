//! A table's data file seen through its table: the table's column names
//! (a column-mapped file stores physical ones), partition columns (in no
//! data file) as constant columns, columns a file predates as nulls, and
//! the rows the table deleted left out.
//!
//! Why a wrapper over the file's own reader: the Parquet reader keeps its
//! statistics, dictionary and page proofs, and rows keep their place in the
//! data file (a deleted row splits a batch into the runs around it, each
//! with its own first row), so examples name the data file and row as for
//! any Parquet file.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow::datatypes::{Field, Schema};

use crate::error::ReadError;
use crate::proof::{Judge, UnitStats};
use crate::source::read::{Batch, JudgedSink, Source};

/// Where a table column's values come from.
#[derive(Debug, Clone)]
pub(super) enum Column {
    /// The data file's column at this index.
    Stored(usize),
    /// One value for every row (a partition value, or null for a column
    /// the file predates), as a one-element array.
    Constant(ArrayRef),
}

/// A data file read as its table defines its rows.
pub(super) struct TableFile {
    pub(super) inner: Box<dyn Source>,
    /// The table's column names, with where each one's values come from.
    pub(super) names: Vec<String>,
    pub(super) columns: Vec<Column>,
    /// The file rows the table deleted, ascending.
    pub(super) deleted: Vec<u64>,
}

/// Where each asked column of a batch comes from.
enum Slot {
    Inner(usize),
    Constant(ArrayRef),
}

impl TableFile {
    /// Reads through the data file's reader `read`, asked for the stored
    /// columns among `projection`, and hands `sink` the table's columns of
    /// every run of rows the table did not delete.
    fn through(
        &self,
        projection: &[usize],
        shapes: &[bool],
        judges: &[Option<Judge>],
        read: impl FnOnce(&[usize], &[bool], &[Option<Judge>], &mut JudgedSink<'_>) -> Result<(), ReadError>,
        sink: &mut JudgedSink<'_>,
    ) -> Result<(), ReadError> {
        let mut inner = Vec::new();
        let mut inner_shapes = Vec::new();
        let mut inner_judges = Vec::new();
        let mut slots = Vec::with_capacity(projection.len());
        for (j, &p) in projection.iter().enumerate() {
            match &self.columns[p] {
                Column::Stored(i) => {
                    slots.push(Slot::Inner(inner.len()));
                    inner.push(*i);
                    inner_shapes.push(shapes.get(j).copied().unwrap_or(false));
                    inner_judges.push(judges.get(j).cloned().flatten());
                }
                Column::Constant(one) => slots.push(Slot::Constant(one.clone())),
            }
        }
        // Constant columns alone: the rows come from the file's first column.
        if inner.is_empty() {
            if self.inner.columns().is_empty() {
                return Err(ReadError::new("the data file has no column to count its rows by"));
            }
            inner.push(0);
            inner_shapes.push(false);
            inner_judges.push(None);
        }
        let names: Vec<&str> = projection.iter().map(|&p| self.names[p].as_str()).collect();
        read(
            &inner,
            &inner_shapes,
            &inner_judges,
            &mut |b: Batch, proven: &[bool]| {
                let rows = b.batch.num_rows();
                let mut columns = Vec::with_capacity(slots.len());
                let mut flags = vec![false; slots.len()];
                for (j, slot) in slots.iter().enumerate() {
                    columns.push(match slot {
                        Slot::Inner(k) => {
                            flags[j] = proven.get(*k).copied().unwrap_or(false);
                            b.batch.column(*k).clone()
                        }
                        Slot::Constant(one) => repeat(one, rows)?,
                    });
                }
                let fields: Vec<Field> = names
                    .iter()
                    .zip(&columns)
                    .map(|(n, c)| Field::new(*n, c.data_type().clone(), true))
                    .collect();
                let batch = RecordBatch::try_new_with_options(
                    Arc::new(Schema::new(fields)),
                    columns,
                    &RecordBatchOptions::new().with_row_count(Some(rows)),
                )
                .map_err(|e| ReadError::new(e.to_string()))?;
                self.kept(b.first_row, batch, &flags, sink)
            },
        )
    }

    /// Hands `sink` the runs of `batch` (file rows from `first`) that the
    /// table did not delete.
    fn kept(&self, first: u64, batch: RecordBatch, flags: &[bool], sink: &mut JudgedSink<'_>) -> Result<(), ReadError> {
        let end = first + batch.num_rows() as u64;
        let lo = self.deleted.partition_point(|&d| d < first);
        let hi = self.deleted.partition_point(|&d| d < end);
        // File rows [from, to) as one batch, when not empty.
        let mut run = |from: u64, to: u64| match to > from {
            true => sink(
                Batch {
                    first_row: from,
                    batch: batch.slice((from - first) as usize, (to - from) as usize),
                },
                flags,
            ),
            false => Ok(()),
        };
        let mut start = first;
        for &d in &self.deleted[lo..hi] {
            run(start, d)?;
            start = d + 1;
        }
        run(start, end)
    }
}

/// A one-element array repeated `rows` times.
fn repeat(one: &ArrayRef, rows: usize) -> Result<ArrayRef, ReadError> {
    let zeros = UInt32Array::from(vec![0u32; rows]);
    arrow::compute::take(one.as_ref(), &zeros, None).map_err(|e| ReadError::new(e.to_string()))
}

impl Source for TableFile {
    fn columns(&self) -> &[String] {
        &self.names
    }

    fn units(&self) -> usize {
        self.inner.units()
    }

    fn read(
        &self,
        unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        self.through(
            projection,
            &[],
            &[],
            |p, _, _, s| self.inner.read(unit, p, &mut |b| s(b, &[])),
            &mut |b, _| sink(b),
        )
    }

    fn read_shapes(
        &self,
        unit: usize,
        projection: &[usize],
        shapes: &[bool],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        self.through(
            projection,
            shapes,
            &[],
            |p, sh, _, s| self.inner.read_shapes(unit, p, sh, &mut |b| s(b, &[])),
            &mut |b, _| sink(b),
        )
    }

    fn read_judged(
        &self,
        unit: usize,
        projection: &[usize],
        shapes: &[bool],
        judges: &[Option<Judge>],
        sink: &mut JudgedSink<'_>,
    ) -> Result<(), ReadError> {
        self.through(
            projection,
            shapes,
            judges,
            |p, sh, j, s| self.inner.read_judged(unit, p, sh, j, s),
            sink,
        )
    }

    fn empty(&self) -> bool {
        self.inner.empty()
    }

    /// The file's statistics, for its own columns and only while the table
    /// deleted none of its rows (they count every stored row).
    fn unit_stats(&self, unit: usize, column: usize) -> Option<UnitStats> {
        match (&self.columns[column], self.deleted.is_empty()) {
            (Column::Stored(i), true) => self.inner.unit_stats(unit, *i),
            _ => None,
        }
    }

    fn stored_type(&self, column: usize) -> Option<arrow::datatypes::DataType> {
        match &self.columns[column] {
            Column::Stored(i) => self.inner.stored_type(*i),
            Column::Constant(_) => None,
        }
    }

    fn label_names(&self, column: usize) -> Option<(Vec<Option<String>>, String)> {
        match &self.columns[column] {
            Column::Stored(i) => self.inner.label_names(*i),
            Column::Constant(_) => None,
        }
    }

    fn notes(&self) -> Vec<String> {
        self.inner.notes()
    }
}

/// What opens a data file when a check needs it.
pub(super) type Open = Box<dyn Fn() -> Result<Box<dyn Source>, ReadError> + Send + Sync>;

/// A data file seen first through its table's own metrics (a Delta log's
/// statistics, an Iceberg manifest's column metrics): its columns, their
/// stored types and, where the table keeps exact integer bounds, the
/// statistics of the whole file as one unit. A check they settle never
/// opens the file: no request for it. Anything else opens it and reads
/// every unit of it as this one.
///
/// Why: the scanner proves units by statistics before reading them, but a
/// Parquet file's own statistics are in its footer, a request per file in
/// object storage; a table's log or manifests already hold them.
pub(super) struct Summarized {
    names: Vec<String>,
    types: Vec<Option<arrow::datatypes::DataType>>,
    stats: Vec<Option<UnitStats>>,
    open: Open,
    opened: std::sync::OnceLock<Result<Box<dyn Source>, ReadError>>,
}

impl Summarized {
    /// The file at `path`, of `columns` (name, stored type, statistics),
    /// opened by `open` when read; `None` when a column the schema names
    /// (`hints`) has no statistics, so the file must be read anyway (it is
    /// then opened as itself, its units checked in parallel), or when
    /// storage lacks the file (opened, to be its error). Existence costs no
    /// request of its own: a local file's metadata, or the listings of the
    /// table's folders (waited for if still running).
    pub(super) fn new(
        columns: Vec<(String, Option<arrow::datatypes::DataType>, Option<UnitStats>)>,
        path: &std::path::Path,
        hints: &crate::source::Hints,
        open: Open,
    ) -> Option<Summarized> {
        use crate::source::storage::remote;
        let there = match remote::is_url(path) {
            true => remote::listed_size_after_listings(path).is_some(),
            false => path.is_file(),
        };
        if !there {
            return None;
        }
        let unsettled = hints
            .columns
            .iter()
            .any(|name| columns.iter().any(|(n, _, stats)| n == name && stats.is_none()));
        if unsettled {
            return None;
        }
        let mut names = Vec::with_capacity(columns.len());
        let mut types = Vec::with_capacity(columns.len());
        let mut stats = Vec::with_capacity(columns.len());
        for (n, t, s) in columns {
            names.push(n);
            types.push(t);
            stats.push(s);
        }
        Some(Summarized {
            names,
            types,
            stats,
            open,
            opened: std::sync::OnceLock::new(),
        })
    }

    fn file(&self) -> Result<&dyn Source, ReadError> {
        match self.opened.get_or_init(|| (self.open)()) {
            Ok(source) => Ok(source.as_ref()),
            Err(e) => Err(e.clone()),
        }
    }
}

impl Source for Summarized {
    fn columns(&self) -> &[String] {
        &self.names
    }

    fn units(&self) -> usize {
        1
    }

    fn read(
        &self,
        _unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        let file = self.file()?;
        (0..file.units()).try_for_each(|u| file.read(u, projection, sink))
    }

    fn read_shapes(
        &self,
        _unit: usize,
        projection: &[usize],
        shapes: &[bool],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        let file = self.file()?;
        (0..file.units()).try_for_each(|u| file.read_shapes(u, projection, shapes, sink))
    }

    fn read_judged(
        &self,
        _unit: usize,
        projection: &[usize],
        shapes: &[bool],
        judges: &[Option<Judge>],
        sink: &mut JudgedSink<'_>,
    ) -> Result<(), ReadError> {
        let file = self.file()?;
        (0..file.units()).try_for_each(|u| file.read_judged(u, projection, shapes, judges, sink))
    }

    fn unit_stats(&self, _unit: usize, column: usize) -> Option<UnitStats> {
        self.stats.get(column).cloned().flatten()
    }

    fn stored_type(&self, column: usize) -> Option<arrow::datatypes::DataType> {
        self.types.get(column).cloned().flatten()
    }

    fn label_names(&self, column: usize) -> Option<(Vec<Option<String>>, String)> {
        self.file().ok()?.label_names(column)
    }

    fn notes(&self) -> Vec<String> {
        match self.opened.get() {
            Some(Ok(file)) => file.notes(),
            _ => Vec::new(),
        }
    }
}
