//! Parquet: the footer is read once, each row group is a unit of work, and
//! only the columns the schema names are decoded.

use std::fs::File;
use std::path::{Path, PathBuf};

use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::basic::{SortOrder, Type as PhysicalType};
use parquet::file::statistics::Statistics;

use super::{Batch, ReadError, Source, UnitStats};

/// Rows per decoded batch. Small batches keep the decoder's buffers in
/// cache (measured on 3M rows of token lists: 1K rows a batch took 2.1 s and
/// 33 MB, 64K rows 8.1 s and 440 MB); list rows hold hundreds of elements.
const LIST_BATCH_ROWS: usize = 1024;
const SCALAR_BATCH_ROWS: usize = 8 * 1024;

/// A Parquet file whose metadata has been read.
pub struct ParquetSource {
    path: PathBuf,
    meta: ArrowReaderMetadata,
    columns: Vec<String>,
    /// File row of each row group's first row.
    first_rows: Vec<u64>,
    /// For each top-level column, its leaf column when it has exactly one.
    leaf_of: Vec<Option<usize>>,
}

impl ParquetSource {
    /// Opens `path` and reads its footer.
    pub fn open(path: &Path) -> Result<ParquetSource, ReadError> {
        let file = File::open(path)?;
        let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())?;
        let columns = meta.schema().fields().iter().map(|f| f.name().clone()).collect();
        let mut first_rows = Vec::with_capacity(meta.metadata().num_row_groups());
        let mut next = 0u64;
        for rg in meta.metadata().row_groups() {
            first_rows.push(next);
            let rows = u64::try_from(rg.num_rows())
                .map_err(|_| ReadError::new(format!("row group claims {} rows", rg.num_rows())))?;
            next = next
                .checked_add(rows)
                .ok_or_else(|| ReadError::new("row counts overflow"))?;
        }
        let descr = meta.parquet_schema();
        let mut leaves: Vec<Vec<usize>> = vec![Vec::new(); descr.root_schema().get_fields().len()];
        for leaf in 0..descr.num_columns() {
            if let Some(l) = leaves.get_mut(descr.get_column_root_idx(leaf)) {
                l.push(leaf);
            }
        }
        let leaf_of = leaves
            .iter()
            .map(|l| if l.len() == 1 { Some(l[0]) } else { None })
            .collect();
        Ok(ParquetSource {
            path: path.to_path_buf(),
            meta,
            columns,
            first_rows,
            leaf_of,
        })
    }
}

impl Source for ParquetSource {
    /// Exact integer statistics only: signed sort order, `min_value` /
    /// `max_value` (never the deprecated fields) marked exact, and a null count.
    fn unit_stats(&self, unit: usize, column: usize) -> Option<UnitStats> {
        let leaf = (*self.leaf_of.get(column)?)?;
        // Only plain integers (or lists of them): a decimal, date, duration
        // or struct also sorts as a signed INT32/INT64, but its statistics
        // are not the values the rules see.
        if !plain_integers(self.meta.schema().fields().get(column)?.data_type()) {
            return None;
        }
        let descr = self.meta.parquet_schema().column(leaf);
        if descr.sort_order() != SortOrder::SIGNED {
            return None;
        }
        let rg = self.meta.metadata().row_groups().get(unit)?;
        let stats = rg.column(leaf).statistics()?;
        if stats.is_min_max_deprecated() || !stats.min_is_exact() || !stats.max_is_exact() {
            return None;
        }
        let (min, max) = match (stats, descr.physical_type()) {
            (Statistics::Int32(s), PhysicalType::INT32) => (i128::from(*s.min_opt()?), i128::from(*s.max_opt()?)),
            (Statistics::Int64(s), PhysicalType::INT64) => (i128::from(*s.min_opt()?), i128::from(*s.max_opt()?)),
            _ => return None,
        };
        Some(UnitStats {
            min,
            max,
            null_count: stats.null_count_opt()?,
            rows: u64::try_from(rg.num_rows()).ok()?,
            repeated: descr.max_rep_level() > 0,
        })
    }

    fn columns(&self) -> &[String] {
        &self.columns
    }

    fn units(&self) -> usize {
        self.first_rows.len()
    }

    fn read(
        &self,
        unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        let at = || format!("row group {unit}");
        // A file handle per unit: reads of different units never share a
        // file position.
        let file = File::open(&self.path).map_err(|e| ReadError::from(e).at(at()))?;
        let mask = ProjectionMask::roots(self.meta.parquet_schema(), projection.iter().copied());
        let fields = self.meta.schema().fields();
        let lists = projection
            .iter()
            .any(|&p| fields.get(p).is_some_and(|f| f.data_type().is_nested()));
        let batch_rows = if lists { LIST_BATCH_ROWS } else { SCALAR_BATCH_ROWS };
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.meta.clone())
            .with_row_groups(vec![unit])
            .with_projection(mask)
            .with_batch_size(batch_rows)
            .build()
            .map_err(|e| ReadError::from(e).at(at()))?;
        // The reader returns projected columns in file order.
        let (_, order) = super::file_order(projection);
        let mut row = self.first_rows[unit];
        for batch in reader {
            let batch = batch.map_err(|e| ReadError::from(e).at(at()))?;
            let n = batch.num_rows() as u64;
            let batch = batch.project(&order).map_err(|e| ReadError::from(e).at(at()))?;
            sink(Batch { first_row: row, batch })?;
            row += n;
        }
        // Pages that hold fewer rows than the footer says end the reader
        // early without an error: a truncated or lying file, not a checked one.
        let said = self.meta.metadata().row_group(unit).num_rows();
        let held = row - self.first_rows[unit];
        if u64::try_from(said).ok() != Some(held) {
            return Err(ReadError::new(format!(
                "the footer says {said} rows, the pages hold {held}: the file is truncated or corrupt"
            ))
            .at(at()));
        }
        Ok(())
    }
}

/// Whether a column holds plain signed integers, possibly in lists.
fn plain_integers(t: &arrow::datatypes::DataType) -> bool {
    use arrow::datatypes::DataType as T;
    match t {
        T::Int8 | T::Int16 | T::Int32 | T::Int64 => true,
        T::List(f) | T::LargeList(f) | T::FixedSizeList(f, _) => plain_integers(f.data_type()),
        T::Dictionary(_, v) => plain_integers(v),
        _ => false,
    }
}
