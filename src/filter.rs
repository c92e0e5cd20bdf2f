//! `preflight filter`: a copy of the data without the rows that break any
//! rule, and a manifest of what was dropped.
//!
//! The data is checked as `check` checks it, every violation spilled (see
//! [`crate::violations`]); then each Parquet file is rewritten row group by
//! row group without its violating rows: the same Arrow schema (and the
//! file's key-value metadata), one row group out per row group in, each
//! column in its codec. Only Parquet is filtered: it is the format whose
//! copy can keep what the input had; other formats are refused by name
//! (use `check --violations-out` and drop the rows with your own tools).
//! A file that could not be checked completely is not written: its copy
//! might hold rows nobody checked. Inputs are never opened for writing, and
//! an output that would be an input is refused.

use std::fs::File;
use std::path::{Component, Path, PathBuf};

use arrow::array::BooleanArray;
use arrow::compute::filter_record_batch;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use serde::Serialize;

use crate::Plan;
use crate::report::{ErrorEntry, Report};
use crate::source::Format;
use crate::violations::{self, Spill};

/// The manifest's name in the output folder.
pub(crate) const MANIFEST: &str = "preflight-filter.json";

/// What a filter run did.
#[derive(Debug, Serialize)]
pub(crate) struct Manifest {
    /// Every file written, in file order.
    pub files: Vec<Filtered>,
    /// Files not written, and why.
    pub errors: Vec<ErrorEntry>,
}

/// One file copied without its bad rows.
#[derive(Debug, Serialize)]
pub(crate) struct Filtered {
    /// The input, as reports name it.
    pub file: String,
    /// The copy, relative to the output folder.
    pub output: String,
    /// Rows in the input.
    pub rows: u64,
    /// Rows kept.
    pub kept: u64,
    /// The rows dropped (0-based rows of the input), in order.
    pub dropped: Vec<u64>,
}

/// Checks the plan's data and writes the copies and the manifest to
/// `out_dir`. The check's report comes back beside the manifest.
pub(crate) fn filter(plan: &Plan, out_dir: &Path) -> Result<(Report, Manifest), Report> {
    let crate::Prepared {
        validator,
        files,
        errors: discover_errors,
        ..
    } = crate::prepare(plan)?;
    let spill = Spill::new().map_err(|e| failed(format!("cannot make a spill folder: {e}")))?;
    let mut errors = Vec::new();
    let (parquet, other): (Vec<_>, Vec<_>) = files.into_iter().partition(|f| {
        Format::from_path(&f.path).or_else(|| Format::from_content(&f.path))
            == Some(crate::source::formats::parquet::FORMAT)
    });
    for f in &other {
        errors.push(ErrorEntry {
            file: Some(f.display.clone()),
            message: "filter reads and writes Parquet only; for other formats use `check --violations-out` and drop \
                      the rows it lists"
                .into(),
            unit: 0,
        });
    }
    let mut opts = plan.scan.clone();
    opts.violations = Some(spill.clone());
    let mut partial = crate::scan::scan(&validator, &parquet, &opts);
    partial.add_errors(discover_errors);
    let report_errors = partial.errors.clone();
    let report = partial.report(&validator);
    std::fs::create_dir_all(out_dir).map_err(|e| failed(format!("cannot create {}: {e}", out_dir.display())))?;
    let mut written = Vec::new();
    for (fi, f) in parquet.iter().enumerate() {
        if report_errors
            .iter()
            .any(|e| e.file.as_deref() == Some(f.display.as_str()))
        {
            errors.push(ErrorEntry {
                file: Some(f.display.clone()),
                message: "not written: the file could not be checked completely".into(),
                unit: 0,
            });
            continue;
        }
        let output = output_path(&f.display);
        match copy_without(&f.path, &out_dir.join(&output), &spill, fi) {
            Ok((rows, dropped)) => written.push(Filtered {
                file: f.display.clone(),
                output: output.to_string_lossy().into_owned(),
                rows,
                kept: rows - dropped.len() as u64,
                dropped,
            }),
            Err(message) => errors.push(ErrorEntry {
                file: Some(f.display.clone()),
                message,
                unit: 0,
            }),
        }
    }
    let mut errors: Vec<ErrorEntry> = errors.into_iter().map(ErrorEntry::redacted).collect();
    errors.sort_by(|a, b| a.file.cmp(&b.file).then(a.message.cmp(&b.message)));
    let manifest = Manifest { files: written, errors };
    let text = serde_json::to_string_pretty(&manifest).unwrap_or_default() + "\n";
    std::fs::write(out_dir.join(MANIFEST), text)
        .map_err(|e| failed(format!("cannot write {}: {e}", out_dir.join(MANIFEST).display())))?;
    Ok((report, manifest))
}

fn failed(message: String) -> Report {
    Report::failed(vec![ErrorEntry {
        file: None,
        message,
        unit: 0,
    }])
}

/// Where the copy of `shown` goes under the output folder: the path as the
/// user named it, kept inside the folder (a root is dropped, `..` becomes
/// `__`).
fn output_path(shown: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for c in Path::new(shown).components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => out.push("__"),
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
        }
    }
    out
}

/// Copies the Parquet file `input` to `output` without the rows the spill
/// lists for file `fi`; returns (rows read, rows dropped).
fn copy_without(input: &Path, output: &Path, spill: &Spill, fi: usize) -> Result<(u64, Vec<u64>), String> {
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same(input, output) {
        return Err(format!(
            "{} is the input itself: choose another --out",
            output.display()
        ));
    }
    let dropped = violations::rows_of(spill, fi).map_err(|e| format!("cannot read the spilled violations: {e}"))?;
    let file = File::open(input).map_err(|e| e.to_string())?;
    let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(|e| e.to_string())?;
    let md = meta.metadata().clone();
    // Each column in its own codec; the file's own key-value metadata (the
    // writer adds the Arrow schema itself).
    let mut props = WriterProperties::builder().set_max_row_group_row_count(None);
    if let Some(rg) = md.row_groups().first() {
        for c in rg.columns() {
            props = props.set_column_compression(c.column_path().clone(), c.compression());
        }
    }
    let kv: Vec<KeyValue> = md
        .file_metadata()
        .key_value_metadata()
        .map(|kv| kv.iter().filter(|k| k.key != "ARROW:schema").cloned().collect())
        .unwrap_or_default();
    if !kv.is_empty() {
        props = props.set_key_value_metadata(Some(kv));
    }
    if let Some(parent) = output.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = output.with_file_name(format!(".{name}.preflight-{}.tmp", std::process::id()));
    let result = (|| -> Result<u64, String> {
        let out = File::create(&tmp).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        let mut writer =
            ArrowWriter::try_new(out, meta.schema().clone(), Some(props.build())).map_err(|e| e.to_string())?;
        let mut row = 0u64;
        for rg in 0..md.num_row_groups() {
            let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(
                File::open(input).map_err(|e| e.to_string())?,
                meta.clone(),
            )
            .with_row_groups(vec![rg])
            .with_batch_size(64 * 1024)
            .build()
            .map_err(|e| e.to_string())?;
            for batch in reader {
                let batch = batch.map_err(|e| e.to_string())?;
                let n = batch.num_rows() as u64;
                // `dropped` is sorted: the batch's bad rows are one slice of it.
                let hits = dropped.partition_point(|&r| r < row + n) - dropped.partition_point(|&r| r < row);
                if hits == 0 {
                    writer.write(&batch).map_err(|e| e.to_string())?;
                } else {
                    let keep: BooleanArray = (row..row + n)
                        .map(|r| Some(dropped.binary_search(&r).is_err()))
                        .collect();
                    let kept = filter_record_batch(&batch, &keep).map_err(|e| e.to_string())?;
                    if kept.num_rows() > 0 {
                        writer.write(&kept).map_err(|e| e.to_string())?;
                    }
                }
                row += n;
            }
            // One row group out per row group in.
            writer.flush().map_err(|e| e.to_string())?;
        }
        writer.close().map_err(|e| e.to_string())?;
        Ok(row)
    })();
    match result {
        Ok(rows) => {
            std::fs::rename(&tmp, output).map_err(|e| format!("cannot write {}: {e}", output.display()))?;
            Ok((rows, dropped))
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_stay_inside_the_folder() {
        assert_eq!(output_path("data/a.parquet"), PathBuf::from("data/a.parquet"));
        assert_eq!(output_path("/abs/a.parquet"), PathBuf::from("abs/a.parquet"));
        assert_eq!(output_path("../up/./a.parquet"), PathBuf::from("__/up/a.parquet"));
    }
}
