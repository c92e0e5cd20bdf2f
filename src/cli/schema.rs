//! `preflight schema`: the schema with every bound resolved, or with
//! `--json-schema` the JSON Schema of `preflight.yaml` (or of the report)
//! that this binary was built with, for editors and validators.

use std::io::Write;
use std::path::PathBuf;

use super::args::JsonSchemaOf;

/// Prints the schema resolved (warnings on stderr), or a JSON Schema.
pub(super) fn run(schema: Option<PathBuf>, json_schema: Option<JsonSchemaOf>) -> u8 {
    if let Some(of) = json_schema {
        let text = match of {
            JsonSchemaOf::Yaml => crate::schema::JSON_SCHEMA,
            JsonSchemaOf::Report => crate::report::json::JSON_SCHEMA,
        };
        let _ = std::io::stdout().lock().write_all(text.as_bytes());
        return 0;
    }
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
