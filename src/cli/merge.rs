//! `preflight merge`: partial reports into the report of the whole.

use std::io::Write;

use crate::Report;
use crate::report::ErrorEntry;

use super::args::Format;
use super::render;

/// `preflight merge`: partial reports into the report of the whole.
pub(super) fn run(paths: &[std::path::PathBuf], format: Format, keep_partial: bool, strict: bool) -> u8 {
    let mut docs = Vec::with_capacity(paths.len());
    for path in paths {
        let shown = path.display().to_string();
        let text = if path.as_os_str() == "-" {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).map(|_| s)
        } else {
            std::fs::read_to_string(path)
        };
        let doc = text
            .map_err(|e| format!("{shown}: {e}"))
            .and_then(|t| serde_json::from_str(&t).map_err(|e| format!("{shown}: not JSON: {e}")));
        match doc {
            Ok(doc) => docs.push((shown, doc)),
            Err(message) => return merge_failed(message, format),
        }
    }
    let (partial, validator) = match crate::Partial::merge_reports(&docs) {
        Ok(merged) => merged,
        Err(message) => return merge_failed(message, format),
    };
    let state = keep_partial.then(|| partial.to_json(&validator));
    let mut report = partial.report(&validator);
    if strict {
        report = report.strict();
    }
    super::machine_stderr(&report, format);
    let _ = std::io::stdout()
        .lock()
        .write_all(render(&report, format, state, None).as_bytes());
    report.outcome().exit_code()
}

/// A merge that cannot be done: the message on stderr, and for machine
/// formats still their one document on stdout.
fn merge_failed(message: String, format: Format) -> u8 {
    let message = crate::redact::text(&message).into_owned();
    eprintln!("error: {message}");
    if format != Format::Human {
        let failed = Report::failed(vec![ErrorEntry {
            file: None,
            message,
            unit: 0,
        }]);
        let _ = std::io::stdout()
            .lock()
            .write_all(render(&failed, format, None, None).as_bytes());
    }
    2
}
