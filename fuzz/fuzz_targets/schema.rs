//! Arbitrary text as a schema: an error or a schema, never a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(schema) = preflight::Schema::from_yaml(&text, "fuzz.yaml".as_ref()) {
        // A valid schema compiles and prints.
        let _ = preflight::Validator::new(schema.clone(), 5);
        let _ = schema.to_resolved_yaml();
    }
});
