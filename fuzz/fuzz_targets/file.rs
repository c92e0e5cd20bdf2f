//! Arbitrary bytes as a data file of each format (the first byte picks the
//! format): every reader and kernel runs on it, guarded per file as in a
//! scan; see `common::install_hook` for which panics count as crashes.
#![no_main]

mod common;

use std::io::Write;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use preflight::source;

const EXTENSIONS: [&str; 9] = ["parquet", "arrow", "arrows", "csv", "tsv", "jsonl", "npy", "npz", "csv.gz"];

fuzz_target!(|data: &[u8]| {
    static VALIDATOR: OnceLock<preflight::Validator> = OnceLock::new();
    let validator = VALIDATOR.get_or_init(|| {
        common::install_hook();
        common::validator()
    });
    let Some((&pick, bytes)) = data.split_first() else { return };
    let ext = EXTENSIONS[pick as usize % EXTENSIONS.len()];
    let dir = std::env::temp_dir().join(format!("preflight-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    // An .npy file's column is named by its stem.
    let path = dir.join(format!("input_ids.{ext}"));
    std::fs::File::create(&path).and_then(|mut f| f.write_all(bytes)).expect("write the input");
    // As the scanner does: open and read under the file boundary's guard.
    let Ok(src) = source::guarded(|| source::open(&path)) else { return };
    let names: Vec<String> = src.columns().to_vec();
    let projection: Vec<usize> = (0..names.len()).collect();
    for unit in 0..src.units().min(64) {
        let _ = source::guarded(|| {
            src.read(unit, &projection, &mut |batch| {
                let _ = validator.check("fuzz", batch.first_row, &batch.batch);
                Ok(())
            })
        });
        for c in 0..names.len() {
            let _ = src.unit_stats(unit, c);
        }
        // Every column as a shape (list lengths from Parquet page levels).
        let shapes = vec![true; projection.len()];
        let _ = source::guarded(|| src.read_shapes(unit, &projection, &shapes, &mut |_| Ok(())));
    }
});
