//! `preflight init`: propose a schema from the data and write it.

use std::path::{Path, PathBuf};

/// The JSON Schema of `preflight.yaml`, as init writes it beside the schema.
pub(super) const JSON_SCHEMA_FILE: &str = "preflight.schema.json";

/// Writes the proposed schema to `output` (refusing to overwrite unless
/// `force`), after checking that `check` would accept it.
pub(super) fn run(paths: &[PathBuf], model: Option<&Path>, output: &Path, force: bool) -> u8 {
    if output.exists() && !force {
        eprintln!("error: {} exists; pass --force to overwrite it", output.display());
        return 2;
    }
    let dir = output.parent().unwrap_or(std::path::Path::new("."));
    let proposal = match crate::init::propose(paths, model, dir) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    for (path, why) in &proposal.skipped {
        eprintln!("init: not used: {path}: {why}");
    }
    // Editors with yaml-language-server validate and complete the schema
    // against the JSON Schema written beside it (see `json_schema_beside`).
    let text = format!(
        "# yaml-language-server: $schema=./{JSON_SCHEMA_FILE}\n{}",
        proposal.text
    );
    // What init writes must be a schema that check accepts.
    if let Err(e) = crate::Schema::from_yaml(&text, output) {
        eprintln!("error: the proposed schema does not validate ({e}):\n{text}");
        return 2;
    }
    if let Err(e) = std::fs::write(output, &text) {
        eprintln!("error: {}: {e}", output.display());
        return 2;
    }
    if let Err(e) = json_schema_beside(dir, force) {
        eprintln!("warning: {e}");
    }
    // The model's bounds stay; where the data already breaks one, say so.
    for w in &proposal.warnings {
        eprintln!("warning: {w}");
    }
    let schema = if output == Path::new("preflight.yaml") {
        String::new()
    } else {
        format!(" -s {}", output.display())
    };
    eprintln!(
        "wrote {}; review its bounds, then `preflight check{schema}` checks the files it lists",
        output.display()
    );
    0
}

/// Writes this version's JSON Schema of `preflight.yaml` into `dir`, for the
/// `$schema` line init puts at the top of the schema: a path beside the
/// YAML works offline and matches the binary that wrote it. A file there
/// that differs (another version's) is replaced only with `force`.
fn json_schema_beside(dir: &Path, force: bool) -> Result<(), String> {
    let path = dir.join(JSON_SCHEMA_FILE);
    let ours = crate::schema::JSON_SCHEMA;
    match std::fs::read_to_string(&path) {
        Ok(there) if there == ours => return Ok(()),
        Ok(_) if !force => {
            return Err(format!(
                "{} differs from this version's JSON Schema and was left as it is; pass --force to replace it, or `preflight schema --json-schema > {}`",
                path.display(),
                path.display()
            ));
        }
        _ => {}
    }
    std::fs::write(&path, ours).map_err(|e| format!("{}: {e}", path.display()))
}
