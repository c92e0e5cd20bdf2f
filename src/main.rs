//! The `preflight` binary. The command line lives in the library
//! ([`preflight::cli`]) so that the Python wheel's `preflight` command runs
//! the same code.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(preflight::cli::main_with_args(std::env::args_os()))
}
