//! The entry points of the fuzz targets (`fuzz/`), which drive readers one
//! file at a time as the scanner does. They live here so that the readers,
//! the layouts and the scanner stay private to the crate: this module is
//! not part of the stable API and may change with the fuzz targets.

use std::path::Path;

use crate::scan::ScanOptions;
use crate::schema::{Layout, Schema};
use crate::source::layouts::discover::{self, DataFile};
use crate::source::{self, Hints};
use crate::{Validator, scan};

/// Installs preflight's panic hook (reader panics become the file's error),
/// so that a fuzz target's own hook can wrap it.
pub fn install_panic_hook() {
    let _ = source::guarded(|| Ok(()));
}

/// Every way a run reads the file at `path` of the format its extension
/// names, each under the file boundary's guard:
/// - an image's size from its header (`pair_with`);
/// - opened with the hints of `hints` (a schema's `dtype:`, `eod_id`,
///   `coco_mapping:`, box rules), a `.txt` as a YOLO label file;
/// - its first 64 units read and checked by `validator`, their statistics
///   asked, every column read as a shape and judged by `validator`'s
///   column `judged_by`;
/// - with `scan_with`, scanned whole as a run scans it.
pub fn read_file(validator: &Validator, path: &Path, hints: &Schema, judged_by: usize, scan_with: Option<&Validator>) {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or_default();
    if matches!(ext, "png" | "tif" | "bmp" | "jpg" | "webp" | "gif" | "pgm") {
        let _ = source::guarded(|| {
            source::formats::image::header::size_of_file(path).map_err(crate::error::ReadError::new)
        });
    }
    let mut hints = Hints::from_schema(hints);
    hints.layout = (ext == "txt").then_some(Layout::Yolo);
    if let Ok(src) = source::guarded(|| source::open_with(path, &hints)) {
        let projection: Vec<usize> = (0..src.columns().len()).collect();
        for unit in 0..src.units().min(64) {
            let _ = source::guarded(|| {
                src.read(unit, &projection, &mut |batch| {
                    let _ = validator.check("fuzz", batch.first_row, &batch.batch);
                    Ok(())
                })
            });
            for &c in &projection {
                let _ = src.unit_stats(unit, c);
            }
            let shapes = vec![true; projection.len()];
            let _ = source::guarded(|| src.read_shapes(unit, &projection, &shapes, &mut |_| Ok(())));
            let judges = vec![validator.judge(judged_by); projection.len()];
            let none = vec![false; projection.len()];
            let _ = source::guarded(|| src.read_judged(unit, &projection, &none, &judges, &mut |_, _| Ok(())));
        }
    }
    if let Some(scanner) = scan_with {
        let file = DataFile {
            display: "fuzz".into(),
            ..DataFile::new(path.to_path_buf())
        };
        let _ = scan::scan(scanner, &[file], &one_job());
    }
}

/// What a directory search of `folder` reports of its dataset index
/// (MDS, LitData): listed files that are not there.
pub fn index_of(folder: &Path) {
    let _ = source::listed_but_missing(folder);
}

/// `dir` searched and checked as a run does (a lakehouse table's log
/// replayed, its live files read).
pub fn check_folder(validator: &Validator, dir: &Path) {
    let hints = Hints::from_schema(validator.schema());
    let found = discover::discover(&[dir.to_path_buf()], &hints);
    let _ = scan::scan(validator, &found.files, &one_job());
}

fn one_job() -> ScanOptions {
    ScanOptions {
        jobs: 1,
        ..ScanOptions::default()
    }
}
