//! The `preflight` command line, in the library so that every way the
//! command is shipped — the cargo-built binary (`src/main.rs`) and the
//! console script of the Python wheel (`preflight._preflight.run_cli`) —
//! runs this same code: same output, same exit status, same Ctrl-C
//! handling.
//!
//! Not part of the stable API. [`main_with_args`] is for such launchers;
//! the argument types are clap's and stay private here, so clap never
//! becomes part of the library's interface. The whole module is behind the
//! default cargo feature `cli` (clap, ctrlc): a library user can build
//! without it (`default-features = false`).

mod args;
mod check;
mod filter;
mod init;
mod merge;
mod plan;
mod schema;

use std::ffi::OsString;
use std::io::Write;
use std::time::Duration;

use clap::Parser;

use crate::Report;
use crate::report::{github, human, json, junit};
use args::{Args, Command, Format};

/// Runs the command line `args` (`args[0]` is the program name, as in
/// `std::env::args_os()`) and returns its exit status: 0 clean, 1
/// violations, 2 anything that prevented a complete check (bad arguments
/// included), 130 interrupted. `check` installs a SIGINT handler for the
/// process (a second Ctrl-C, or one while blocked on a pipe, exits the
/// process with 130 directly). stdout is flushed before returning.
pub fn main_with_args<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let code = match Args::try_parse_from(args) {
        Ok(args) => run(args.command),
        Err(e) => {
            // As `Args::parse()` would: help and version on stdout (0),
            // usage errors on stderr (2).
            let _ = e.print();
            u8::try_from(e.exit_code()).unwrap_or(2)
        }
    };
    // A Rust binary flushes stdout when main returns; a library call
    // (from Python) must do it itself.
    let _ = std::io::stdout().flush();
    code
}

fn run(command: Command) -> u8 {
    match command {
        Command::Check(a) => check::run(a),
        Command::Init {
            paths,
            model,
            output,
            force,
        } => init::run(&paths, model.as_deref(), &output, force),
        Command::Merge {
            reports,
            format,
            partial,
            strict,
        } => merge::run(&reports, format, partial, strict),
        Command::Plan {
            schema,
            paths,
            split_bytes,
            snapshot,
        } => plan::run(schema, paths, split_bytes, &snapshot),
        Command::Schema { schema, json_schema } => schema::run(schema, json_schema),
        Command::Filter {
            schema,
            paths,
            out,
            jobs,
            format,
        } => filter::run(schema, paths, &out, jobs, format),
    }
}

/// With a machine format on stdout, its errors and warnings also go to
/// stderr, for whoever watches.
fn machine_stderr(report: &Report, format: Format) {
    if format != Format::Human {
        for e in &report.errors {
            let file = e.file.as_deref().map(|f| format!("{f}: ")).unwrap_or_default();
            eprintln!("preflight: {file}{}", e.message);
        }
        for w in &report.warnings {
            eprintln!("preflight: warning: {w}");
        }
    }
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
