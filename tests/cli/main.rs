//! One integration binary: the real `preflight` run on real files.

mod containers;
mod core;
mod dictionary;
mod differential;
mod distributed;
mod filter;
mod formats;
mod hostile;
mod interop;
mod jpeg;
mod layouts;
mod masks;
mod mds;
mod pairing;
mod pipeline;
mod precommit;
mod property;
mod references;
mod remote;
mod remote_tokens;
mod remote_vision;
mod sample_data;
mod schema_errors;
mod tokens;
mod util;
mod violations;
