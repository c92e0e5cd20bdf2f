//! `preflight schema`: the schema with every bound resolved.

use std::io::Write;
use std::path::PathBuf;

/// Prints the schema resolved (warnings on stderr).
pub fn run(schema: Option<PathBuf>) -> u8 {
    let path = schema.unwrap_or_else(|| "preflight.yaml".into());
    match crate::Schema::from_file(&path) {
        Ok(s) => {
            for w in &s.warnings {
                eprintln!("warning: {w}");
            }
            let _ = std::io::stdout().lock().write_all(s.to_resolved_yaml().as_bytes());
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}
