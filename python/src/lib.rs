//! `preflight._preflight`: the Rust half of the Python package.
//!
//! Arrow data crosses in through the Arrow PyCapsule interface (pyarrow
//! record batches and tables, or anything else that exports
//! `__arrow_c_array__` / `__arrow_c_stream__`) without a copy; the checks
//! run with the GIL released. Reports come back as the JSON document of the
//! CLI and as its human text, so Python sees exactly what `preflight check`
//! prints. Converting dicts of NumPy arrays and lists is the Python half's
//! job (`preflight/__init__.py`), but for a batch's plain NumPy arrays,
//! which `passes_numpy` reads in place (`numpy.rs`).

mod numpy;

use std::path::Path;

use arrow::array::RecordBatch;
use arrow::pyarrow::{FromPyArrow, Table, ToPyArrow};
use pyo3::create_exception;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use preflight::report::{human, json};
use preflight::{Partial, Plan, Schema};
use preflight::{ScanOptions, WorkUnit};

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
    /// `sources` names where a column's bound came from when the schema
    /// was made from something other than files (`preflight.torch`: the
    /// live module), `{column: {key: source}}`, shown by
    /// `resolved_schema()`; `warnings` are added to the schema's own.
    #[new]
    #[pyo3(signature = (schema_yaml, path, max_examples = 5, sources = None, warnings = None))]
    fn new(
        schema_yaml: &str,
        path: &str,
        max_examples: usize,
        sources: Option<std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>>,
        warnings: Option<Vec<String>>,
    ) -> PyResult<Validator> {
        let mut schema =
            Schema::from_yaml(schema_yaml, Path::new(path)).map_err(|e| SchemaError::new_err(e.to_string()))?;
        for (column, keys) in sources.unwrap_or_default() {
            let spec = schema
                .columns
                .iter_mut()
                .find(|c| c.name == column)
                .ok_or_else(|| SchemaError::new_err(format!("sources: no column {column}")))?;
            spec.bound_sources.extend(keys);
        }
        schema.warnings.extend(warnings.unwrap_or_default());
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
        let report = py.detach(|| validator.check_batches(source, first_row, &batches).report(validator));
        Ok(Outcome {
            json: json::render(&report),
            human: human::render(&report, None),
            exit_code: report.outcome().exit_code(),
        })
    }

    /// Whether every rule holds on `data`: [`Validator::check`] without
    /// rendering a report, the fast path of `validate` (a failure is then
    /// checked again for its report).
    fn passes(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<bool> {
        let batches = batches(data)?;
        let validator = &self.inner;
        Ok(py.detach(|| validator.check_batches("<batch>", 0, &batches).is_clean(validator)))
    }

    /// [`Validator::passes`] on columns given as NumPy arrays (`names`, in
    /// order), read in place; `None` when some array is not one that maps
    /// onto Arrow without a copy (see `numpy.rs`), for the caller to convert.
    fn passes_numpy(
        &self,
        py: Python<'_>,
        names: Vec<String>,
        arrays: Vec<Bound<'_, PyAny>>,
    ) -> PyResult<Option<bool>> {
        let Some(batch) = numpy::batch(&names, &arrays)? else {
            return Ok(None);
        };
        let validator = &self.inner;
        Ok(Some(
            py.detach(|| validator.check("<batch>", 0, &batch).is_clean(validator)),
        ))
    }

    /// Which rows pass every rule: a pyarrow BooleanArray over the rows of
    /// all of `data`'s batches, in order.
    fn mask(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let batches = batches(data)?;
        let validator = &self.inner;
        let masks = py.detach(|| {
            batches
                .iter()
                .map(|b| validator.mask(b))
                .collect::<Result<Vec<_>, String>>()
        });
        let masks = masks.map_err(PyValueError::new_err)?;
        let all: Vec<Option<bool>> = masks.iter().flat_map(|m| m.iter()).collect();
        let mask = arrow::array::BooleanArray::from(all);
        arrow::array::Array::to_data(&mask).to_pyarrow(py).map(|b| b.unbind())
    }

    /// [`Validator::check`] as a partial report (the JSON report with its
    /// `partial` key), to merge with others.
    #[pyo3(signature = (data, source, first_row = 0))]
    fn check_partial(&self, py: Python<'_>, data: &Bound<'_, PyAny>, source: &str, first_row: u64) -> PyResult<String> {
        let batches = batches(data)?;
        let validator = &self.inner;
        Ok(py.detach(|| partial_report(validator, validator.check_batches(source, first_row, &batches))))
    }

    /// Checks work units (a JSON list, as `plan` gives them) and returns the
    /// partial report.
    #[pyo3(signature = (units_json, jobs = 1))]
    fn check_units(&self, py: Python<'_>, units_json: &str, jobs: usize) -> PyResult<String> {
        let units: Vec<WorkUnit> =
            serde_json::from_str(units_json).map_err(|e| PyValueError::new_err(format!("not a list of units: {e}")))?;
        let validator = &self.inner;
        Ok(py.detach(|| {
            let opts = ScanOptions {
                jobs,
                ..ScanOptions::default()
            };
            partial_report(validator, preflight::check_units(validator, &units, &opts))
        }))
    }

    /// Checks a `datasets.Dataset`'s rows as its cache files store them:
    /// the data files `files` (whole, in table order; `rows` rows in all)
    /// through `indices` (Arrow data whose first column is the uint64 index
    /// mapping; `None`: every row in order), read by the scanner. The
    /// dataset is one file of the report, named `name`; examples name the
    /// data file and row of each value, and its dataset index.
    #[pyo3(signature = (files, rows, indices, name, jobs = 0))]
    fn check_dataset(
        &self,
        py: Python<'_>,
        files: Vec<String>,
        rows: u64,
        indices: Option<&Bound<'_, PyAny>>,
        name: &str,
        jobs: usize,
    ) -> PyResult<Outcome> {
        let indices = match indices {
            None => None,
            Some(data) => {
                let mut all = Vec::new();
                for b in batches(data)? {
                    let col = b
                        .columns()
                        .first()
                        .ok_or_else(|| PyValueError::new_err("indices: no column"))?;
                    let values = col
                        .as_any()
                        .downcast_ref::<arrow::array::UInt64Array>()
                        .ok_or_else(|| PyTypeError::new_err("indices: not a uint64 column"))?;
                    if arrow::array::Array::null_count(values) > 0 {
                        return Err(PyValueError::new_err("indices: holds a null"));
                    }
                    all.extend_from_slice(values.values());
                }
                Some(all)
            }
        };
        let validator = &self.inner;
        let files: Vec<std::path::PathBuf> = files.into_iter().map(Into::into).collect();
        let report = py.detach(|| {
            let opts = ScanOptions {
                jobs,
                ..ScanOptions::default()
            };
            preflight::check_dataset(validator, &files, rows, indices, name, &opts).report(validator)
        });
        Ok(Outcome {
            json: json::render(&report),
            human: human::render(&report, None),
            exit_code: report.outcome().exit_code(),
        })
    }

    /// The schema's column names, in order.
    fn columns(&self) -> Vec<String> {
        self.inner.schema().columns.iter().map(|c| c.name.clone()).collect()
    }

    /// The validator as text (an empty partial: resolved schema, warnings,
    /// bound sources, max_examples), to rebuild it elsewhere.
    fn state(&self) -> String {
        self.inner.partial().to_json(&self.inner).to_string()
    }

    /// Rebuilds a validator from [`Validator::state`].
    #[staticmethod]
    fn from_state(state: &str) -> PyResult<Validator> {
        let doc: serde_json::Value = serde_json::from_str(state).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let (_, inner) = Partial::from_json(&doc).map_err(SchemaError::new_err)?;
        Ok(Validator { inner })
    }

    /// The schema fully resolved, as YAML.
    fn resolved_schema(&self) -> String {
        self.inner.schema().to_resolved_yaml()
    }
}

/// The JSON report of `partial`, with its mergeable state under `partial`.
fn partial_report(validator: &preflight::Validator, partial: Partial) -> String {
    let state = partial.to_json(validator);
    json::render_with(&partial.report(validator), Some(state))
}

/// The units of work of a check (JSON list): `paths`, or with none the
/// `dataset.files` of the schema at `schema_path`.
#[pyfunction]
#[pyo3(signature = (paths, schema_path, split_bytes))]
fn plan(py: Python<'_>, paths: Vec<String>, schema_path: Option<String>, split_bytes: u64) -> PyResult<String> {
    let paths: Vec<std::path::PathBuf> = paths.into_iter().map(Into::into).collect();
    let units = py.detach(|| match schema_path {
        Some(schema) if paths.is_empty() => {
            let plan = Plan {
                schema: schema.into(),
                paths: Vec::new(),
                max_examples: 0,
                table_at: None,
                scan: ScanOptions::default(),
            };
            preflight::plan_units(&plan, split_bytes).map(|(_, units)| units)
        }
        _ => Ok(preflight::plan_paths(&paths, split_bytes, None)),
    });
    match units {
        Ok(units) => serde_json::to_string(&units).map_err(|e| PyValueError::new_err(e.to_string())),
        Err(report) => Err(SchemaError::new_err(
            report
                .errors
                .iter()
                .map(|e| e.message.clone())
                .collect::<Vec<_>>()
                .join("; "),
        )),
    }
}

/// Merges partial reports (JSON texts) into one; the outcome's `json` is
/// the report `preflight check --format json` gives over the same data.
#[pyfunction]
fn merge(py: Python<'_>, reports: Vec<String>) -> PyResult<Merged> {
    py.detach(|| {
        let docs = reports
            .iter()
            .enumerate()
            .map(|(i, text)| {
                serde_json::from_str(text)
                    .map(|doc| (format!("report {i}"), doc))
                    .map_err(|e| PyValueError::new_err(format!("report {i}: not JSON: {e}")))
            })
            .collect::<PyResult<Vec<_>>>()?;
        let (partial, validator) = Partial::merge_reports(&docs).map_err(PyValueError::new_err)?;
        let state = partial.to_json(&validator);
        let report = partial.report(&validator);
        Ok(Merged {
            json: json::render(&report),
            partial_json: json::render_with(&report, Some(state)),
            human: human::render(&report, None),
            exit_code: report.outcome().exit_code(),
        })
    })
}

/// A merged report: `json` as `preflight check --format json` prints it,
/// `partial_json` the same with its mergeable state, the human text and
/// the exit status.
#[pyclass(frozen, get_all, module = "preflight._preflight")]
struct Merged {
    json: String,
    partial_json: String,
    human: String,
    exit_code: u8,
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

/// Runs the `preflight` command line (`argv[0]` is the program name) with
/// the GIL released, writing to the process's own stdout and stderr, and
/// returns its exit status: the wheel's `preflight` command
/// (`preflight/__main__.py`). `check` takes over SIGINT for the process, as
/// the binary does (Ctrl-C exits 130).
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<std::ffi::OsString>) -> u8 {
    py.detach(|| preflight::cli::main_with_args(argv))
}

#[pymodule]
fn _preflight(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Validator>()?;
    m.add_class::<Outcome>()?;
    m.add_class::<Merged>()?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add("SchemaError", m.py().get_type::<SchemaError>())?;
    m.add("__version__", preflight::VERSION)?;
    m.add("__build__", preflight::LONG_VERSION)?;
    Ok(())
}
