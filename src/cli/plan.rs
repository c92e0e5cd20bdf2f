//! `preflight plan`: the units of work of a check, as JSON, for an engine
//! to spread over workers.

use std::io::Write;
use std::path::PathBuf;

use crate::{Plan, ScanOptions};

/// Prints the units of the check `schema` and `paths` describe; a
/// table's units are pinned at the snapshot read (`snapshot` picks one).
pub(super) fn run(
    schema: Option<PathBuf>,
    paths: Vec<PathBuf>,
    split_bytes: u64,
    snapshot: &super::args::SnapshotArgs,
) -> u8 {
    let table_at = match snapshot.table_at() {
        Ok(at) => at,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let plan = Plan {
        schema: schema.unwrap_or_else(|| "preflight.yaml".into()),
        paths,
        table_at,
        max_examples: 0,
        scan: ScanOptions::default(),
    };
    match crate::plan_units(&plan, split_bytes) {
        Ok((_, units)) => {
            // A path that is not UTF-8 cannot be written in JSON.
            let units = match serde_json::to_value(&units) {
                Ok(u) => u,
                Err(e) => {
                    eprintln!("error: cannot write the plan: {e}");
                    return 2;
                }
            };
            let doc = serde_json::json!({ "units": units });
            let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
            text.push('\n');
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            0
        }
        Err(report) => {
            for e in &report.errors {
                eprintln!("error: {}", e.message);
            }
            2
        }
    }
}
