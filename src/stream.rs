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
use arrow::ipc::reader::StreamDecoder;

use crate::check::Validator;
use crate::report::{ErrorEntry, Partial};
use crate::source::ipc::{parse, vet};
use crate::source::{ReadError, guarded};

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
    let mut decoder = StreamDecoder::new();
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
            Ok(None) if decoder.schema().is_none() => {
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
        let bytes = Buffer::from_vec(message.bytes);
        let decoded = guarded(|| Ok(decoder.decode(&mut bytes.clone())?));
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

/// One IPC message as read: its exact bytes (prefix, flatbuffer, body).
struct Message {
    bytes: Vec<u8>,
    is_end: bool,
}

/// Reads the next message; `None` at a clean end of input between messages.
fn next_message(input: &mut dyn Read) -> Result<Option<Message>, ReadError> {
    let mut bytes = Vec::new();
    let Some(first) = read_word(input, &mut bytes)? else {
        return Ok(None);
    };
    // A continuation marker and a length precede the flatbuffer (older
    // writers: the length alone).
    let len = if first == 0xffff_ffff {
        read_word(input, &mut bytes)?.ok_or_else(|| ReadError::new("truncated: the stream ends inside a message"))?
    } else {
        first
    };
    if len == 0 {
        return Ok(Some(Message { bytes, is_end: true }));
    }
    let len = i32::try_from(len).map_err(|_| ReadError::new("negative message length"))?;
    read_exactly(input, &mut bytes, len as u64)?;
    let flat_start = bytes.len() - len as usize;
    let message = parse(&bytes[flat_start..])?;
    let body_len = u64::try_from(message.bodyLength()).map_err(|_| ReadError::new("negative body length"))?;
    let body_start = bytes.len();
    // The body is read before it is vetted, but only as far as the input
    // really holds bytes: a lying length costs no more than the input.
    read_exactly(input, &mut bytes, body_len)?;
    let message = parse(&bytes[flat_start..body_start])?;
    let body = &bytes[body_start..];
    vet(&message, &mut |offset| {
        let at = usize::try_from(offset).unwrap_or(usize::MAX);
        body.get(at..at.saturating_add(8))
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| ReadError::new("a buffer lies outside its message body"))
    })?;
    Ok(Some(Message { bytes, is_end: false }))
}

/// Reads a little-endian u32 onto `bytes`; `None` at end of input before it.
fn read_word(input: &mut dyn Read, bytes: &mut Vec<u8>) -> Result<Option<u32>, ReadError> {
    let mut word = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match input.read(&mut word[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(ReadError::new("truncated: the stream ends inside a message")),
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    bytes.extend_from_slice(&word);
    Ok(Some(u32::from_le_bytes(word)))
}

/// Appends exactly `n` bytes of `input` to `bytes`, growing only as they come.
fn read_exactly(input: &mut dyn Read, bytes: &mut Vec<u8>, n: u64) -> Result<(), ReadError> {
    let before = bytes.len() as u64;
    input.take(n).read_to_end(bytes)?;
    if bytes.len() as u64 - before != n {
        return Err(ReadError::new("truncated: the stream ends inside a message"));
    }
    Ok(())
}
