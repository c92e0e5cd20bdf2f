//! Arrow IPC streams read from a pipe: `preflight check -` as one step of a
//! data pipeline, optionally passing the data on.
//!
//! The stream is read one message at a time, so memory is bounded by the
//! largest record batch, never by the stream. With pass-through, each
//! message's bytes are written out exactly as they came in, after the batch
//! they carry has been checked; the first batch with a violation or an error
//! is withheld and the stream stops there, so nothing bad flows on.

use std::io::{ErrorKind, Read, Write};

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::buffer::Buffer;
use arrow::datatypes::SchemaRef;
use arrow::ipc::MessageHeader;
use arrow::ipc::convert::try_fb_to_schema;
use arrow::ipc::reader::{read_dictionary, read_record_batch};

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

/// One IPC message as read: its exact bytes (prefix, flatbuffer, body),
/// with where the flatbuffer and the body start.
struct Message {
    bytes: Vec<u8>,
    flat: usize,
    body: usize,
    is_end: bool,
}

/// Turns messages into batches: the schema, then dictionaries and record
/// batches, each decoded from its own bytes as soon as it is read (a batch
/// with an empty body included), so what is passed on has been checked.
#[derive(Default)]
struct Decoder {
    schema: Option<SchemaRef>,
    dictionaries: HashMap<i64, ArrayRef>,
}

impl Decoder {
    /// Decodes the message in `bytes` (flatbuffer at `flat`, body at `body`):
    /// `Some` batch for a record batch.
    fn decode(&mut self, bytes: &Buffer, flat: usize, body: usize) -> Result<Option<RecordBatch>, ReadError> {
        let message = parse(&bytes.as_slice()[flat..body])?;
        let data = bytes.slice(body);
        let version = message.version();
        match message.header_type() {
            MessageHeader::Schema => {
                if self.schema.is_some() {
                    return Err(ReadError::new("a second schema in one stream"));
                }
                let fb = message
                    .header_as_schema()
                    .ok_or_else(|| ReadError::new("a schema message without a schema"))?;
                self.schema = Some(Arc::new(try_fb_to_schema(fb)?));
                Ok(None)
            }
            MessageHeader::DictionaryBatch => {
                let schema = self
                    .schema
                    .as_ref()
                    .ok_or_else(|| ReadError::new("a dictionary before the schema"))?;
                let batch = message
                    .header_as_dictionary_batch()
                    .ok_or_else(|| ReadError::new("a dictionary message without a dictionary"))?;
                read_dictionary(&data, batch, schema, &mut self.dictionaries, &version)?;
                Ok(None)
            }
            MessageHeader::RecordBatch => {
                let schema = self
                    .schema
                    .clone()
                    .ok_or_else(|| ReadError::new("a record batch before the schema"))?;
                let batch = message
                    .header_as_record_batch()
                    .ok_or_else(|| ReadError::new("a record batch message without a batch"))?;
                Ok(Some(read_record_batch(
                    &data,
                    batch,
                    schema,
                    &self.dictionaries,
                    None,
                    &version,
                )?))
            }
            MessageHeader::NONE => Ok(None),
            other => Err(ReadError::new(format!("unexpected {other:?} message in a stream"))),
        }
    }
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
        let at = bytes.len();
        return Ok(Some(Message {
            bytes,
            flat: at,
            body: at,
            is_end: true,
        }));
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
    Ok(Some(Message {
        bytes,
        flat: flat_start,
        body: body_start,
        is_end: false,
    }))
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
