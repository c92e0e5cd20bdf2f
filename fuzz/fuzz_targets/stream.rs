//! Arbitrary bytes as an Arrow IPC stream on stdin, with pass-through.
#![no_main]

mod common;

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    static VALIDATOR: OnceLock<preflight::Validator> = OnceLock::new();
    let validator = VALIDATOR.get_or_init(|| {
        common::install_hook();
        common::validator()
    });
    let mut input = data;
    let mut out = Vec::new();
    let result = preflight::stream::check_stream(validator, "<stdin>", &mut input, Some(&mut out));
    // What is passed on is always a prefix of the input.
    assert!(data.starts_with(&out));
    let _ = result.partial.report(validator);
});
