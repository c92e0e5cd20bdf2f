//! The binary's subcommands, one module each, over the library; clap types
//! stay in [`args`]: the library never sees them.

pub mod args;
pub mod check;
pub mod init;
pub mod merge;
pub mod plan;
pub mod schema;

use std::time::Duration;

use args::Format;
use preflight::Report;
use preflight::report::{github, human, json, junit};

/// The report in `format`; `state` is the JSON report's `partial` key.
pub fn render(report: &Report, format: Format, state: Option<serde_json::Value>, elapsed: Option<Duration>) -> String {
    match format {
        Format::Human => human::render(report, elapsed),
        Format::Json => json::render_with(report, state),
        Format::Github => github::render(report),
        Format::Junit => junit::render(report),
    }
}
