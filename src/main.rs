//! The `preflight` binary: parse arguments, run the library, print the
//! report, exit with the outcome's status.

mod cli;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;

use cli::{Args, Command, Format};
use preflight::report::{human, json};
use preflight::{Plan, ScanOptions};

fn main() -> ExitCode {
    let args = Args::parse();
    match args.command {
        Command::Check(a) => {
            let started = Instant::now();
            let plan = Plan {
                schema: a.schema.unwrap_or_else(|| "preflight.yaml".into()),
                paths: a.paths,
                max_examples: a.max_examples,
                scan: ScanOptions {
                    jobs: a.jobs.unwrap_or(0),
                    full_scan: a.full_scan,
                    progress: !a.no_progress && std::io::stderr().is_terminal(),
                },
            };
            let report = preflight::check(&plan);
            let text = match a.format {
                Format::Json => {
                    // Errors also go to stderr, so a person watching sees them.
                    for e in &report.errors {
                        eprintln!(
                            "preflight: {}{}",
                            e.file.as_deref().map(|f| format!("{f}: ")).unwrap_or_default(),
                            e.message
                        );
                    }
                    json::render(&report)
                }
                Format::Human => human::render(&report, started.elapsed()),
            };
            // A closed pipe ends the output, never the outcome.
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            ExitCode::from(report.outcome().exit_code())
        }
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
