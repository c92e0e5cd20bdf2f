//! `preflight filter`: the data without its bad rows (see [`crate::filter`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{Plan, ScanOptions};

use super::args::Format;
use super::render;

/// Checks, writes the copies and the manifest, prints the check's report
/// and a line on what was written (stderr).
pub(super) fn run(schema: Option<PathBuf>, paths: Vec<PathBuf>, out: &Path, jobs: Option<usize>, format: Format) -> u8 {
    let plan = Plan {
        schema: schema.unwrap_or_else(|| "preflight.yaml".into()),
        paths,
        table_at: None,
        max_examples: 5,
        scan: ScanOptions {
            jobs: jobs.unwrap_or(0),
            ..ScanOptions::default()
        },
    };
    let (report, manifest) = match crate::filter::filter(&plan, out) {
        Ok(done) => done,
        Err(report) => {
            for e in &report.errors {
                eprintln!("error: {}", e.message);
            }
            let _ = std::io::stdout()
                .lock()
                .write_all(render(&report, format, None, None).as_bytes());
            return 2;
        }
    };
    let _ = std::io::stdout()
        .lock()
        .write_all(render(&report, format, None, None).as_bytes());
    let dropped: u64 = manifest.files.iter().map(|f| f.dropped.len() as u64).sum();
    eprintln!(
        "filter: {} files written to {} ({dropped} rows dropped), {} not written; manifest {}",
        manifest.files.len(),
        out.display(),
        manifest.errors.len(),
        out.join(crate::filter::MANIFEST).display()
    );
    for e in &manifest.errors {
        eprintln!("error: {}: {}", e.file.as_deref().unwrap_or("-"), e.message);
    }
    if manifest.errors.is_empty() { 0 } else { 2 }
}
