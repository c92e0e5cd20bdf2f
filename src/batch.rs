//! One Arrow batch through the pipeline's stages, for callers that hold
//! batches rather than files (the library, the stdin stream, Python): the
//! pixel transform for encoded images, then the kernels, into a [`Partial`].
//!
//! Why here and not in `check/`: the kernels see decoded arrays only; the
//! pixel stage reads image formats, which sit above them.

use arrow::array::{ArrayRef, RecordBatch};

use crate::check::Validator;
use crate::error::{Error, ReadError};
use crate::report::{ErrorEntry, Partial};

impl Validator {
    /// Checks one Arrow batch that came from `file` (any name: a path, a
    /// shard, `<stdin>`), whose first row is row `first_row` of that file.
    ///
    /// Required columns the batch lacks and columns of a type their rule
    /// cannot check are the partial's errors; everything else is checked.
    /// Merge the partials of all batches ([`Partial::merge`], in any order)
    /// and call [`Partial::report`] for the report `preflight check` gives.
    pub fn check(&self, file: &str, first_row: u64, batch: &RecordBatch) -> Partial {
        let mut partial = Partial::empty(self.plan().len(), self.max_examples());
        partial.files.push(file.to_string());
        let names: Vec<&str> = batch.schema_ref().fields().iter().map(|f| f.name().as_str()).collect();
        for column in self.missing(&names) {
            partial.errors.push(ErrorEntry::from(&Error::MissingColumn {
                path: file.to_string(),
                column: column.to_string(),
            }));
        }
        // Encoded images (columns whose schema sets `decode`) go through the
        // pixel transform first, as in a scan.
        let positions: Vec<Option<usize>> = self
            .schema()
            .columns
            .iter()
            .map(|c| batch.schema_ref().index_of(&c.name).ok())
            .collect();
        let mut cols: Vec<Option<ArrayRef>> = positions.iter().map(|p| p.map(|p| batch.column(p).clone())).collect();
        let undecoded = crate::pixels::check_batch(
            self,
            batch,
            &positions,
            &mut cols,
            crate::pixels::Site {
                file: 0,
                row: first_row,
                pair: None,
            },
            &mut partial.tally,
        );
        for (row, _, message) in undecoded {
            partial.errors.push(ErrorEntry::from(&Error::Read {
                path: file.to_string(),
                source: ReadError::new(message).at(format!("row {row}")),
            }));
        }
        let mut errors = self.stored_type_errors(&cols);
        errors.extend(self.check_columns(&cols, batch.num_rows(), 0, first_row, &mut partial.tally));
        for e in errors {
            partial.errors.push(ErrorEntry::from(&Error::ColumnType {
                path: file.to_string(),
                column: e.column,
                message: e.message,
            }));
        }
        partial
    }

    /// [`Validator::check`] over consecutive batches of one source, the
    /// first starting at row `first_row`. The source counts as a file even
    /// when it holds no batch.
    pub fn check_batches<'a>(
        &self,
        file: &str,
        first_row: u64,
        batches: impl IntoIterator<Item = &'a RecordBatch>,
    ) -> Partial {
        let mut partial = self.partial();
        partial.files.push(file.to_string());
        let mut row = first_row;
        for batch in batches {
            partial.merge(self.check(file, row, batch));
            row += batch.num_rows() as u64;
        }
        partial
    }

    /// An empty partial result to merge others into.
    pub fn partial(&self) -> Partial {
        Partial::empty(self.plan().len(), self.max_examples())
    }
}
