//! `preflight check`: files, or an Arrow IPC stream on stdin; the report
//! on stdout and the outcome as the exit status.

use std::io::{IsTerminal, Write};
use std::time::Instant;

use crate::report::ErrorEntry;
use crate::{Plan, Report, ScanOptions, Schema, Validator};

use super::args::{CheckArgs, Format};
use super::render;

/// Exit status after Ctrl-C (128 + SIGINT), as shells report it.
const INTERRUPTED: u8 = 130;

/// Ctrl-C (or SIGTERM) cancels the scan: units not started are skipped,
/// running ones stop at their next batch, and the run exits 130 without a
/// report, so no half-written output reaches stdout. A second signal, or a
/// run still busy after a second (blocked on a pipe), exits at once.
fn handle_interrupts() {
    let signals = std::sync::atomic::AtomicUsize::new(0);
    let _ = ctrlc::set_handler(move || {
        crate::scan::CANCELLED.store(true, std::sync::atomic::Ordering::SeqCst);
        if signals.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0 {
            crate::violations::clean_up();
            std::process::exit(INTERRUPTED.into());
        }
        std::thread::spawn(|| {
            std::thread::sleep(std::time::Duration::from_secs(1));
            eprintln!("preflight: interrupted");
            crate::violations::clean_up();
            std::process::exit(INTERRUPTED.into());
        });
    });
}

/// `preflight check`: files, or an Arrow IPC stream on stdin (`-`).
pub(super) fn run(a: CheckArgs) -> u8 {
    handle_interrupts();
    let started = Instant::now();
    let schema = a.schema.clone().unwrap_or_else(|| "preflight.yaml".into());
    let stdin = a.paths.iter().any(|p| p.as_os_str() == "-");
    let passing = a.pass_through && stdin && a.paths.len() == 1;
    let mut mergeable = None;
    let usage = |message: &str| {
        Report::failed(vec![ErrorEntry {
            file: None,
            message: message.to_string(),
            unit: 0,
        }])
    };
    let report = if a.model.is_some() && a.schema.is_some() {
        usage("--schema and --model: give one (--model makes the schema from the model's bounds)")
    } else if a.model.is_some() && (stdin || a.paths.is_empty()) {
        usage("--model reads the columns from the data: name the PATHs (not `-`)")
    } else if stdin && a.paths.len() > 1 {
        usage("`-` reads one Arrow IPC stream from stdin and cannot be combined with other paths")
    } else if a.pass_through && !stdin {
        usage("--pass-through needs `-` (an Arrow IPC stream on stdin) as the only path")
    } else if a.partial && a.format != Format::Json {
        usage("--partial needs --format json")
    } else if stdin && a.violations_out.is_some() {
        usage("--violations-out reads files, not a stream on stdin")
    } else if let Some(Err(e)) = a.violations_out.as_deref().map(crate::violations::OutFormat::of) {
        usage(&e)
    } else if stdin {
        let (report, state) = check_stdin(&schema, a.max_examples, a.pass_through, a.partial);
        mergeable = state;
        report
    } else {
        let (report, state) = check_files(&a, schema);
        mergeable = state;
        report
    };
    if crate::scan::CANCELLED.load(std::sync::atomic::Ordering::SeqCst) {
        eprintln!("preflight: interrupted");
        return INTERRUPTED;
    }
    let report = if a.strict { report.strict() } else { report };
    let text = render(&report, a.format, mergeable, Some(started.elapsed()));
    // Machine formats on stdout: errors and warnings also go to stderr.
    if !passing {
        super::machine_stderr(&report, a.format);
    }
    // With pass-through, stdout carries the data, so the report goes to
    // stderr. A closed pipe ends the output, never the outcome.
    let _ = if passing {
        std::io::stderr().lock().write_all(text.as_bytes())
    } else {
        std::io::stdout().lock().write_all(text.as_bytes())
    };
    report.outcome().exit_code()
}

/// Checks the files `a` names; with `--partial`, also the mergeable state.
/// With `--violations-out`, every violation is spilled and written out.
fn check_files(a: &CheckArgs, schema: std::path::PathBuf) -> (Report, Option<serde_json::Value>) {
    let failed = |message: String| {
        Report::failed(vec![ErrorEntry {
            file: None,
            message,
            unit: 0,
        }])
    };
    let spill = match a
        .violations_out
        .as_ref()
        .map(|_| crate::violations::Spill::new())
        .transpose()
    {
        Ok(spill) => spill,
        Err(e) => {
            return (
                failed(format!("--violations-out: cannot make a spill folder: {e}")),
                None,
            );
        }
    };
    let table_at = match a.snapshot.table_at() {
        Ok(at) => at,
        Err(e) => return (failed(e), None),
    };
    let plan = Plan {
        schema,
        paths: a.paths.clone(),
        table_at,
        max_examples: a.max_examples,
        scan: ScanOptions {
            jobs: a.jobs.unwrap_or(0),
            full_scan: a.full_scan,
            progress: !a.no_progress && std::io::stderr().is_terminal(),
            violations: spill.clone(),
            cache: a.cache.clone(),
            pairing: None,
        },
    };
    let loaded = match &a.model {
        Some(model) => crate::init::model_schema(&a.paths, model).map_err(failed),
        None => Schema::from_file(&plan.schema).map_err(|e| Report::failed(vec![ErrorEntry::from(&e)])),
    };
    let used = match loaded {
        Ok(s) => s,
        Err(report) => return (report, None),
    };
    if a.print_schema {
        eprint!("{}", used.to_resolved_yaml());
    }
    let (validator, mut partial) = match crate::check_schema_partial(&plan, used) {
        Ok(checked) => checked,
        Err(report) => return (report, None),
    };
    if let (Some(out), Some(spill)) = (&a.violations_out, &spill)
        && !crate::scan::CANCELLED.load(std::sync::atomic::Ordering::SeqCst)
        && let Err(e) = crate::violations::write(spill, out, &partial.files, &validator)
    {
        partial.add_errors(vec![ErrorEntry {
            file: None,
            message: e,
            unit: 0,
        }]);
    }
    let state = a.partial.then(|| partial.to_json(&validator));
    (partial.report(&validator), state)
}

/// Checks the stream on stdin; with `partial`, also its mergeable state.
fn check_stdin(
    schema: &std::path::Path,
    max_examples: usize,
    pass_through: bool,
    partial: bool,
) -> (Report, Option<serde_json::Value>) {
    let schema = match Schema::from_file(schema) {
        Ok(s) => s,
        Err(e) => return (Report::failed(vec![ErrorEntry::from(&e)]), None),
    };
    let validator = Validator::new(schema, max_examples);
    let mut input = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    let pass: Option<&mut dyn Write> = if pass_through { Some(&mut stdout) } else { None };
    let result = crate::stream::check_stream(&validator, "<stdin>", &mut input, pass);
    let state = partial.then(|| result.partial.to_json(&validator));
    let mut report = result.partial.report(&validator);
    report.warnings.extend(result.stopped);
    (report, state)
}

/// `--as-of TIME` in milliseconds since the epoch: RFC 3339
/// (`2026-12-06T07:00:00Z`, `...+01:00`), or a date (its midnight, UTC).
pub(super) fn as_of(text: &str) -> Result<i64, String> {
    let t = text.trim();
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(t) {
        return Ok(at.timestamp_millis());
    }
    if let Ok(day) = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d")
        && let Some(midnight) = day.and_hms_opt(0, 0, 0)
    {
        return Ok(midnight.and_utc().timestamp_millis());
    }
    Err(format!(
        "--as-of {t}: not a time; write RFC 3339 (2026-12-06T07:00:00Z) or a date (2026-12-06, midnight UTC)"
    ))
}
