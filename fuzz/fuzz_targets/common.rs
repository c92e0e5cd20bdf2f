//! A validator with a rule of every kind, for the file and stream targets.

use preflight::{Schema, Validator};

pub fn validator() -> Validator {
    let yaml = "columns:
  label: {kind: class, num_classes: 10, optional: true}
  input_ids: {kind: index, size: 1000, max_length: 16, min_length: 1, pad_id: 0, optional: true}
  token_type_ids: {kind: index, size: 2, same_length_as: input_ids, optional: true}
  attention_mask: {kind: values, allowed: [0, 1], optional: true, nullable: true}
  score: {kind: range, min: 0.0, max: 1.0, optional: true}
  name: {kind: class, classes: [cat, dog], optional: true}
  tokens: {kind: index, size: 1000, tokenizer_size: 900, max_length: 16, optional: true}
  pixels: {kind: class, num_classes: 10, ignore_index: 255, optional: true}
";
    let schema = Schema::from_yaml(yaml, "fuzz.yaml".as_ref()).expect("the fuzz schema is valid");
    Validator::new(schema, 3)
}

/// A validator judging the documents of a token stream (`eod_id`), for
/// token files run through the scanner (the file target's; the stream
/// target does not read files).
#[allow(dead_code)]
pub fn eod_validator() -> Validator {
    let yaml = "columns:
  tokens: {kind: index, size: 1000, eod_id: 7, max_length: 16, min_length: 2, dtype: uint16}
";
    let schema = Schema::from_yaml(yaml, "fuzz.yaml".as_ref()).expect("the fuzz schema is valid");
    Validator::new(schema, 3)
}

/// preflight catches panics in readers at the file boundary
/// (`preflight::fuzzing::install_panic_hook`), as the CLI does; this hook, outermost, still aborts
/// on a panic raised in preflight's own code, so the fuzzer reports it.
/// Panics inside dependencies (on hostile files) stay caught and become the
/// file's error, which is the behaviour under test.
pub fn install_hook() {
    // Installs preflight's hook first, so that this one wraps it.
    preflight::fuzzing::install_panic_hook();
    let inner = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let ours = info
            .location()
            .is_some_and(|l| !l.file().contains(".cargo/registry") && !l.file().starts_with("/rustc/"));
        if ours {
            eprintln!("panic in preflight's own code: {info}");
            std::process::abort();
        }
        inner(info);
    }));
}

/// A u32 LE length and that many bytes (fewer if the input ends), and the
/// rest: how the table targets cut one input into files.
#[allow(dead_code)]
pub fn take(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = data.split_first_chunk::<4>()?;
    let len = (u32::from_le_bytes(*len) as usize).min(rest.len());
    Some(rest.split_at(len))
}
