//! The `preflight` binary: parse arguments, run the library, print the
//! report, exit with the outcome's status.

mod cli;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Instant;

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
    let usage = |message: &str| {
        Report::failed(vec![ErrorEntry {
            file: None,
            message: message.to_string(),
        }])
    };
    let report = if stdin && a.paths.len() > 1 {
        usage("`-` reads one Arrow IPC stream from stdin and cannot be combined with other paths")
    } else if a.pass_through && !stdin {
        usage("--pass-through needs `-` (an Arrow IPC stream on stdin) as the only path")
    } else if stdin {
        check_stdin(&schema, a.max_examples, a.pass_through)
    } else {
        preflight::check(&Plan {
            schema,
            paths: a.paths,
            max_examples: a.max_examples,
            scan: ScanOptions {
                jobs: a.jobs.unwrap_or(0),
                full_scan: a.full_scan,
                progress: !a.no_progress && std::io::stderr().is_terminal(),
            },
        })
    };
    if preflight::scan::CANCELLED.load(std::sync::atomic::Ordering::SeqCst) {
        eprintln!("preflight: interrupted");
        return ExitCode::from(INTERRUPTED);
    }
    let text = match a.format {
        Format::Human => human::render(&report, Some(started.elapsed())),
        Format::Json => json::render(&report),
        Format::Github => github::render(&report),
        Format::Junit => junit::render(&report),
    };
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

fn check_stdin(schema: &std::path::Path, max_examples: usize, pass_through: bool) -> Report {
    let schema = match Schema::from_file(schema) {
        Ok(s) => s,
        Err(e) => return Report::failed(vec![ErrorEntry::from(&e)]),
    };
    let validator = Validator::new(schema, max_examples);
    let mut input = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    let pass: Option<&mut dyn Write> = if pass_through { Some(&mut stdout) } else { None };
    let result = preflight::stream::check_stream(&validator, "<stdin>", &mut input, pass);
    let mut report = result.partial.report(&validator);
    report.warnings.extend(result.stopped);
    report
}
