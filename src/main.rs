//! The `preflight` binary: parse arguments, run the subcommand, exit with
//! its status. Each subcommand lives in its own module under `cli/`.

mod cli;

use std::process::ExitCode;

use clap::Parser;

use cli::args::{Args, Command};

fn main() -> ExitCode {
    match Args::parse().command {
        Command::Check(a) => cli::check::run(a),
        Command::Init {
            paths,
            model,
            output,
            force,
        } => cli::init::run(&paths, model.as_deref(), &output, force),
        Command::Merge {
            reports,
            format,
            partial,
        } => cli::merge::run(&reports, format, partial),
        Command::Plan {
            schema,
            paths,
            split_bytes,
        } => cli::plan::run(schema, paths, split_bytes),
        Command::Schema { schema } => cli::schema::run(schema),
    }
}
