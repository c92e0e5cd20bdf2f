//! Arrow IPC streams read from a pipe: `preflight check -` as one step of a
//! data pipeline, optionally passing the data on.
//!
//! The stream is read one message at a time, so memory is bounded by the
//! largest record batch, never by the stream. With pass-through, each
//! message's bytes are written out exactly as they came in, after the batch
//! they carry has been checked; the first batch with a violation or an error
//! is withheld and the stream stops there, so nothing bad flows on.

use std::io::{ErrorKind, Read, Write};

use arrow::buffer::Buffer;

use crate::check::Validator;
use crate::error::ReadError;
use crate::report::{ErrorEntry, Partial};
use crate::source::formats::ipc::message::{Decoder, next_message};
use crate::source::read::guarded;

/// What a stream check found.
#[derive(Debug)]
pub struct StreamResult {
    /// Counts, examples and errors of the batches read.
    pub partial: Partial,
    /// With pass-through: where the stream was cut, as a sentence for the
    /// report's warnings; `None` when every batch was passed on.
    pub stopped: Option<String>,
}

/// Checks the Arrow IPC stream on `input`, naming it `name` in the report.
/// With `pass`, every message of a valid batch (and the schema and
/// dictionaries before it) is copied to `pass` byte for byte; the first
/// invalid batch and everything after it are not.
pub fn check_stream(
    validator: &Validator,
    name: &str,
    input: &mut dyn Read,
    mut pass: Option<&mut dyn Write>,
) -> StreamResult {
    let mut partial = validator.partial();
    partial.files.push(name.to_string());
    let mut stopped = None;
    let fail = |partial: &mut Partial, e: ReadError| {
        partial.errors.push(ErrorEntry {
            file: Some(name.to_string()),
            message: e.to_string(),
            unit: 1,
        })
    };
    let mut decoder = Decoder::default();
    let mut row = 0u64;
    let mut index = 0usize;
    loop {
        if crate::scan::CANCELLED.load(std::sync::atomic::Ordering::Relaxed) {
            fail(&mut partial, ReadError::new("interrupted"));
            break;
        }
        let message = match next_message(input) {
            Ok(Some(m)) => m,
            // Closing the stream after its schema ends it as well as the
            // end-of-stream marker does; before any schema it is no stream.
            Ok(None) if decoder.schema.is_none() => {
                fail(&mut partial, ReadError::new("no Arrow IPC stream: the input is empty"));
                break;
            }
            Ok(None) => break,
            Err(e) => {
                fail(&mut partial, e.at(format!("message {index}")));
                break;
            }
        };
        let end = message.is_end;
        let (flat, body) = (message.flat, message.body);
        let bytes = Buffer::from_vec(message.bytes);
        let decoded = if end {
            Ok(None)
        } else {
            guarded(|| decoder.decode(&bytes, flat, body))
        };
        let batch = match decoded {
            Ok(b) => b,
            Err(e) => {
                fail(&mut partial, e.at(format!("message {index}")));
                break;
            }
        };
        index += 1;
        if let Some(batch) = &batch {
            let part = validator.check(name, row, batch);
            let bad = !part.errors.is_empty() || part.tally.checks.iter().any(|c| c.violations > 0);
            let rows = batch.num_rows() as u64;
            partial.merge(part);
            if bad && pass.is_some() {
                stopped = Some(format!(
                    "{name}: stopped at the record batch of rows {row}..{}, which was not passed on; later batches were neither checked nor passed on",
                    row + rows
                ));
                break;
            }
            row += rows;
        }
        if let Some(out) = pass.as_deref_mut() {
            let written = out.write_all(bytes.as_slice()).and_then(|_| out.flush());
            if let Err(e) = written {
                // A closed pipe downstream ends the pass-through, not the check.
                if e.kind() != ErrorKind::BrokenPipe {
                    fail(&mut partial, ReadError::new(format!("cannot write the stream on: {e}")));
                }
                pass = None;
            }
        }
        if end {
            break;
        }
    }
    StreamResult { partial, stopped }
}
