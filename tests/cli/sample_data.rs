//! The README's quickstart: the sample data gives exactly the planted
//! violations listed in sample_data/make.py.

use std::process::Command;

use crate::util::{hits, rows};

#[test]
fn quickstart_reports_exactly_the_planted_violations() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new(env!("CARGO_BIN_EXE_preflight"))
        .args(["check", "--schema", "sample_data/preflight.yaml", "--format", "json"])
        .current_dir(root)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(r["files"], 3);
    assert_eq!(r["rows"], 800);
    assert_eq!(r["violations"], 6);
    assert_eq!(rows(&r, "label", "class"), vec![17, 240]);
    assert_eq!(rows(&r, "input_ids", "index"), vec![42, 42]);
    assert_eq!(rows(&r, "input_ids", "max_length"), vec![199]);
    assert_eq!(rows(&r, "attention_mask", "values"), vec![77]);
    assert_eq!(hits(&r, "attention_mask", "same_length_as").0, 0);
    let clean = Command::new(env!("CARGO_BIN_EXE_preflight"))
        .args(["check", "--schema", "sample_data/preflight.yaml", "sample_data/clean"])
        .current_dir(root)
        .output()
        .expect("run");
    assert_eq!(clean.status.code(), Some(0));
}
