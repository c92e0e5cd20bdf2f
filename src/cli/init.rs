//! `preflight init`: propose a schema from the data and write it.

use std::path::{Path, PathBuf};

/// Writes the proposed schema to `output` (refusing to overwrite unless
/// `force`), after checking that `check` would accept it.
pub fn run(paths: &[PathBuf], model: Option<&Path>, output: &Path, force: bool) -> u8 {
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
    let text = &proposal.text;
    // What init writes must be a schema that check accepts.
    if let Err(e) = crate::Schema::from_yaml(text, output) {
        eprintln!("error: the proposed schema does not validate ({e}):\n{text}");
        return 2;
    }
    if let Err(e) = std::fs::write(output, text) {
        eprintln!("error: {}: {e}", output.display());
        return 2;
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
