//! The `preflight` binary: parse arguments, run the library, print the
//! report, exit with the outcome's status.

mod cli;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;

use cli::{Args, CheckArgs, Command, Format};
use preflight::report::{ErrorEntry, github, human, json, junit};
use preflight::{Plan, Report, ScanOptions, Schema, Validator};

fn main() -> ExitCode {
    let args = Args::parse();
    match args.command {
        Command::Check(a) => check(a),
        Command::Init {
            paths,
            model,
            output,
            force,
        } => {
            if output.exists() && !force {
                eprintln!("error: {} exists; pass --force to overwrite it", output.display());
                return ExitCode::from(2);
            }
            let dir = output.parent().unwrap_or(std::path::Path::new("."));
            let text = match preflight::init::propose(&paths, model.as_deref(), dir) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            // What init writes must be a schema that check accepts.
            if let Err(e) = preflight::Schema::from_yaml(&text, &output) {
                eprintln!("error: the proposed schema does not validate ({e}):\n{text}");
                return ExitCode::from(2);
            }
            if let Err(e) = std::fs::write(&output, &text) {
                eprintln!("error: {}: {e}", output.display());
                return ExitCode::from(2);
            }
            eprintln!("wrote {}", output.display());
            ExitCode::SUCCESS
        }
        Command::Merge {
            reports,
            format,
            partial,
        } => merge(&reports, format, partial),
        Command::Plan {
            schema,
            paths,
            split_bytes,
        } => {
            let plan = Plan {
                schema: schema.unwrap_or_else(|| "preflight.yaml".into()),
                paths,
                max_examples: 0,
                scan: ScanOptions::default(),
            };
            match preflight::plan_units(&plan, split_bytes) {
                Ok((_, units)) => {
                    // A path that is not UTF-8 cannot be written in JSON.
                    let units = match serde_json::to_value(&units) {
                        Ok(u) => u,
                        Err(e) => {
                            eprintln!("error: cannot write the plan: {e}");
                            return ExitCode::from(2);
                        }
                    };
                    let doc = serde_json::json!({ "units": units });
                    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
                    text.push('\n');
                    let _ = std::io::stdout().lock().write_all(text.as_bytes());
                    ExitCode::SUCCESS
                }
                Err(report) => {
                    for e in &report.errors {
                        eprintln!("error: {}", e.message);
                    }
                    ExitCode::from(2)
                }
            }
        }
        Command::Schema { schema } => {
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
    }
}

/// Exit status after Ctrl-C (128 + SIGINT), as shells report it.
const INTERRUPTED: u8 = 130;

/// Ctrl-C (or SIGTERM) cancels the scan: units not started are skipped,
/// running ones stop at their next batch, and the run exits 130 without a
/// report, so no half-written output reaches stdout. A second signal, or a
/// run still busy after a second (blocked on a pipe), exits at once.
fn handle_interrupts() {
    let signals = std::sync::atomic::AtomicUsize::new(0);
    let _ = ctrlc::set_handler(move || {
        preflight::scan::CANCELLED.store(true, std::sync::atomic::Ordering::SeqCst);
        if signals.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0 {
            std::process::exit(INTERRUPTED.into());
        }
        std::thread::spawn(|| {
            std::thread::sleep(std::time::Duration::from_secs(1));
            eprintln!("preflight: interrupted");
            std::process::exit(INTERRUPTED.into());
        });
    });
}

/// `preflight check`: files, or an Arrow IPC stream on stdin (`-`).
fn check(a: CheckArgs) -> ExitCode {
    handle_interrupts();
    let started = Instant::now();
    let schema = a.schema.unwrap_or_else(|| "preflight.yaml".into());
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
    let report = if stdin && a.paths.len() > 1 {
        usage("`-` reads one Arrow IPC stream from stdin and cannot be combined with other paths")
    } else if a.pass_through && !stdin {
        usage("--pass-through needs `-` (an Arrow IPC stream on stdin) as the only path")
    } else if a.partial && a.format != Format::Json {
        usage("--partial needs --format json")
    } else if stdin {
        let (report, state) = check_stdin(&schema, a.max_examples, a.pass_through, a.partial);
        mergeable = state;
        report
    } else {
        let plan = Plan {
            schema,
            paths: a.paths,
            max_examples: a.max_examples,
            scan: ScanOptions {
                jobs: a.jobs.unwrap_or(0),
                full_scan: a.full_scan,
                progress: !a.no_progress && std::io::stderr().is_terminal(),
            },
        };
        match preflight::check_partial(&plan) {
            Ok((validator, partial)) => {
                if a.partial {
                    mergeable = Some(partial.to_json(&validator));
                }
                partial.report(&validator)
            }
            Err(report) => report,
        }
    };
    if preflight::scan::CANCELLED.load(std::sync::atomic::Ordering::SeqCst) {
        eprintln!("preflight: interrupted");
        return ExitCode::from(INTERRUPTED);
    }
    let text = render(&report, a.format, mergeable, Some(started.elapsed()));
    // Machine formats on stdout: errors also go to stderr, for whoever watches.
    if a.format != Format::Human && !passing {
        for e in &report.errors {
            let file = e.file.as_deref().map(|f| format!("{f}: ")).unwrap_or_default();
            eprintln!("preflight: {file}{}", e.message);
        }
    }
    // With pass-through, stdout carries the data, so the report goes to
    // stderr. A closed pipe ends the output, never the outcome.
    let _ = if passing {
        std::io::stderr().lock().write_all(text.as_bytes())
    } else {
        std::io::stdout().lock().write_all(text.as_bytes())
    };
    ExitCode::from(report.outcome().exit_code())
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
    let result = preflight::stream::check_stream(&validator, "<stdin>", &mut input, pass);
    let state = partial.then(|| result.partial.to_json(&validator));
    let mut report = result.partial.report(&validator);
    report.warnings.extend(result.stopped);
    (report, state)
}

/// `preflight merge`: partial reports into the report of the whole.
fn merge(paths: &[std::path::PathBuf], format: Format, keep_partial: bool) -> ExitCode {
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
    let (partial, validator) = match preflight::Partial::merge_reports(&docs) {
        Ok(merged) => merged,
        Err(message) => return merge_failed(message, format),
    };
    let state = keep_partial.then(|| partial.to_json(&validator));
    let report = partial.report(&validator);
    let _ = std::io::stdout()
        .lock()
        .write_all(render(&report, format, state, None).as_bytes());
    ExitCode::from(report.outcome().exit_code())
}

/// A merge that cannot be done: the message on stderr, and for machine
/// formats still their one document on stdout.
fn merge_failed(message: String, format: Format) -> ExitCode {
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
    ExitCode::from(2)
}

/// The report in `format`; `state` is the JSON report's `partial` key.
fn render(report: &Report, format: Format, state: Option<serde_json::Value>, elapsed: Option<Duration>) -> String {
    match format {
        Format::Human => human::render(report, elapsed),
        Format::Json => json::render_with(report, state),
        Format::Github => github::render(report),
        Format::Junit => junit::render(report),
    }
}
