//! Arbitrary bytes as a Delta Lake table: u32 LE length, that many bytes
//! of the first commit (`_delta_log/00000000000000000000.json`), u32 LE
//! length and that many bytes of a checkpoint of version 1, then the data
//! file `part-0.parquet`. The folder is searched and checked as a run does:
//! the log replayed by the Delta kernel, the live files read through the
//! table's view. A hostile log must be the table's error, never a crash.
#![no_main]

mod common;

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    static VALIDATOR: OnceLock<preflight::Validator> = OnceLock::new();
    let validator = VALIDATOR.get_or_init(|| {
        common::install_hook();
        common::validator()
    });
    let Some((commit, rest)) = common::take(data) else {
        return;
    };
    let Some((checkpoint, parquet)) = common::take(rest) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("preflight-fuzz-table-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let log = dir.join("_delta_log");
    std::fs::create_dir_all(&log).expect("make the table's folder");
    std::fs::write(log.join("00000000000000000000.json"), commit).expect("write the commit");
    if !checkpoint.is_empty() {
        std::fs::write(log.join("00000000000000000001.checkpoint.parquet"), checkpoint).expect("write the checkpoint");
    }
    std::fs::write(dir.join("part-0.parquet"), parquet).expect("write the data file");
    preflight::fuzzing::check_folder(validator, &dir);
});
