//! One integration binary: the real `preflight` run on real files.

mod core;
mod dictionary;
mod differential;
mod distributed;
mod formats;
mod hostile;
mod interop;
mod pipeline;
mod precommit;
mod property;
mod references;
mod sample_data;
mod schema_errors;
mod util;
