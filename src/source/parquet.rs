//! Parquet: the footer is read once, each row group is a unit of work, and
//! only the columns the schema names are decoded.

use std::fs::File;
use std::path::{Path, PathBuf};

use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder};

use super::{BATCH_ROWS, Batch, ReadError, Source};

/// A Parquet file whose metadata has been read.
pub struct ParquetSource {
    path: PathBuf,
    meta: ArrowReaderMetadata,
    columns: Vec<String>,
    /// File row of each row group's first row.
    first_rows: Vec<u64>,
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
        Ok(ParquetSource {
            path: path.to_path_buf(),
            meta,
            columns,
            first_rows,
        })
    }
}

impl Source for ParquetSource {
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
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.meta.clone())
            .with_row_groups(vec![unit])
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(|e| ReadError::from(e).at(at()))?;
        // The reader returns projected columns in file order.
        let mut sorted: Vec<usize> = projection.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let order: Vec<usize> = projection
            .iter()
            .map(|p| sorted.binary_search(p).unwrap_or(0))
            .collect();
        let mut row = self.first_rows[unit];
        for batch in reader {
            let batch = batch.map_err(|e| ReadError::from(e).at(at()))?;
            let n = batch.num_rows() as u64;
            let batch = batch.project(&order).map_err(|e| ReadError::from(e).at(at()))?;
            sink(Batch { first_row: row, batch })?;
            row += n;
        }
        Ok(())
    }
}
