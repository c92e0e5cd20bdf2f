//! `preflight._preflight`: the Rust half of the Python package.
//!
//! Arrow data crosses in through the Arrow PyCapsule interface (pyarrow
//! record batches and tables, or anything else that exports
//! `__arrow_c_array__` / `__arrow_c_stream__`) without a copy; the checks
//! run with the GIL released. Reports come back as the JSON document of the
//! CLI and as its human text, so Python sees exactly what `preflight check`
//! prints. Converting dicts of NumPy arrays and lists is the Python half's
//! job (`preflight/__init__.py`).

use std::path::Path;

use arrow::array::RecordBatch;
use arrow::pyarrow::{FromPyArrow, Table};
use pyo3::create_exception;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use preflight::report::{human, json};
use preflight::{Partial, Schema};

create_exception!(
    _preflight,
    SchemaError,
    PyValueError,
    "The schema is invalid or cannot be resolved."
);

/// A schema compiled for checking; build it once, check many batches.
#[pyclass(frozen, module = "preflight._preflight")]
struct Validator {
    inner: preflight::Validator,
}

/// A report: the JSON document and the human text of the CLI, and its exit status.
#[pyclass(frozen, get_all, module = "preflight._preflight")]
struct Outcome {
    json: String,
    human: String,
    exit_code: u8,
}

#[pymethods]
impl Validator {
    /// `schema_yaml` is the schema's text (YAML or JSON); `path` is where it
    /// lives, for messages and for resolving relative references.
    #[new]
    #[pyo3(signature = (schema_yaml, path, max_examples = 5))]
    fn new(schema_yaml: &str, path: &str, max_examples: usize) -> PyResult<Validator> {
        let schema =
            Schema::from_yaml(schema_yaml, Path::new(path)).map_err(|e| SchemaError::new_err(e.to_string()))?;
        Ok(Validator {
            inner: preflight::Validator::new(schema, max_examples),
        })
    }

    /// Checks Arrow data (a record batch, a table or a stream) that came
    /// from `source`, whose first row is row `first_row` of that source.
    #[pyo3(signature = (data, source, first_row = 0))]
    fn check(&self, py: Python<'_>, data: &Bound<'_, PyAny>, source: &str, first_row: u64) -> PyResult<Outcome> {
        let batches = batches(data)?;
        let validator = &self.inner;
        let report = py.detach(|| {
            let mut partial: Partial = validator.partial();
            partial.files.push(source.to_string());
            let mut row = first_row;
            for batch in &batches {
                partial.merge(validator.check(source, row, batch));
                row += batch.num_rows() as u64;
            }
            partial.report(validator)
        });
        Ok(Outcome {
            json: json::render(&report),
            human: human::render(&report, None),
            exit_code: report.outcome().exit_code(),
        })
    }

    /// The schema fully resolved, as YAML.
    fn resolved_schema(&self) -> String {
        self.inner.schema().to_resolved_yaml()
    }
}

/// The record batches of `data`: one batch, or every batch of a table or stream.
fn batches(data: &Bound<'_, PyAny>) -> PyResult<Vec<RecordBatch>> {
    if data.hasattr("__arrow_c_array__")? {
        return Ok(vec![RecordBatch::from_pyarrow_bound(data)?]);
    }
    if data.hasattr("__arrow_c_stream__")? {
        let (batches, _) = Table::from_pyarrow_bound(data)?.into_inner();
        return Ok(batches);
    }
    Err(PyTypeError::new_err(format!(
        "expected Arrow data (a pyarrow RecordBatch or Table, or an object with __arrow_c_array__ or __arrow_c_stream__), got {}",
        data.get_type().name()?
    )))
}

#[pymodule]
fn _preflight(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Validator>()?;
    m.add_class::<Outcome>()?;
    m.add("SchemaError", m.py().get_type::<SchemaError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
