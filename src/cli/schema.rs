//! `preflight schema`: the schema with every bound resolved.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Prints the schema resolved (warnings on stderr).
pub fn run(schema: Option<PathBuf>) -> ExitCode {
    let path = schema.unwrap_or_else(|| "preflight.yaml".into());
    match preflight::Schema::from_file(&path) {
        Ok(s) => {
            for w in &s.warnings {
                eprintln!("warning: {w}");
            }
            let _ = std::io::stdout().lock().write_all(s.to_resolved_yaml().as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
