//! One integration binary: the real `preflight` run on real files.

mod core;
mod sample_data;
mod schema_errors;
mod util;
