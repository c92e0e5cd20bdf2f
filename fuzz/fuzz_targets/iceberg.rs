//! Arbitrary bytes as an Apache Iceberg table: u32 LE length and that many
//! bytes of the metadata file (`metadata/v1.metadata.json`), the same for
//! the manifest list (`metadata/list.avro`) and the manifest
//! (`metadata/m0.avro`), then the data file `data/part-0.parquet`. The
//! folder is searched and checked as a run does: the metadata, manifest
//! list and manifest read by preflight's own Avro reader, the live files
//! read through the table's view. Seeds: `seeds/iceberg/`
//! (`iceberg_seeds.py`). A hostile table must be the table's error, never
//! a crash.
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
    let Some((metadata, rest)) = common::take(data) else {
        return;
    };
    let Some((list, rest)) = common::take(rest) else {
        return;
    };
    let Some((manifest, parquet)) = common::take(rest) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("preflight-fuzz-iceberg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let meta = dir.join("metadata");
    std::fs::create_dir_all(&meta).expect("make the table's metadata folder");
    std::fs::create_dir_all(dir.join("data")).expect("make the table's data folder");
    std::fs::write(meta.join("v1.metadata.json"), metadata).expect("write the metadata");
    std::fs::write(meta.join("list.avro"), list).expect("write the manifest list");
    std::fs::write(meta.join("m0.avro"), manifest).expect("write the manifest");
    std::fs::write(dir.join("data").join("part-0.parquet"), parquet).expect("write the data file");
    preflight::fuzzing::check_folder(validator, &dir);
});
