//! IPC messages, one at a time: read from any byte stream (a stream file,
//! stdin) or from a file's blocks, and decoded into record batches by one
//! decoder, so streams, files and stdin share every rule (vetting of
//! declared sizes, big-endian data, dictionaries).

use std::collections::HashMap;
use std::io::{ErrorKind, Read};
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::buffer::Buffer;
use arrow::datatypes::SchemaRef;
use arrow::ipc::convert::try_fb_to_schema;
use arrow::ipc::reader::{RecordBatchDecoder, read_dictionary_impl};
use arrow::ipc::{MessageHeader, Schema as FbSchema};
use arrow_data::UnsafeFlag;

use super::{endian, parse, vet};
use crate::error::ReadError;

/// One IPC message as read: its exact bytes (prefix, flatbuffer, body),
/// with where the flatbuffer and the body start.
pub(crate) struct Message {
    pub bytes: Vec<u8>,
    pub flat: usize,
    pub body: usize,
    pub is_end: bool,
}

/// Turns messages into batches: the schema, then dictionaries and record
/// batches, each decoded from its own bytes as soon as it is read (a batch
/// with an empty body included).
#[derive(Default)]
pub(crate) struct Decoder {
    pub schema: Option<SchemaRef>,
    dictionaries: HashMap<i64, ArrayRef>,
    /// Columns to decode (sorted file order); `None`: all.
    projection: Option<Vec<usize>>,
    /// The data was written on a machine of the other byte order.
    foreign: bool,
}

impl Decoder {
    /// A decoder of the columns at `projection` (sorted), for a file whose
    /// schema is already known.
    pub(crate) fn with_schema(schema: FbSchema<'_>, projection: Option<Vec<usize>>) -> Result<Decoder, ReadError> {
        let mut decoder = Decoder {
            projection,
            ..Decoder::default()
        };
        decoder.set_schema(schema)?;
        Ok(decoder)
    }

    /// The same decoder, decoding only the columns at `projection` (sorted).
    pub(crate) fn project(mut self, projection: Vec<usize>) -> Decoder {
        self.projection = Some(projection);
        self
    }

    fn set_schema(&mut self, schema: FbSchema<'_>) -> Result<(), ReadError> {
        self.foreign = !schema.endianness().equals_to_target_endianness();
        let converted = if self.foreign {
            foreign_schema(schema)?
        } else {
            try_fb_to_schema(schema)?
        };
        self.schema = Some(Arc::new(converted));
        Ok(())
    }

    /// Decodes the message in `bytes` (flatbuffer at `flat`, body at `body`):
    /// `Some` batch for a record batch.
    pub(crate) fn decode(
        &mut self,
        bytes: &Buffer,
        flat: usize,
        body: usize,
    ) -> Result<Option<RecordBatch>, ReadError> {
        let message = parse(&bytes.as_slice()[flat..body])?;
        let data = bytes.slice(body);
        let version = message.version();
        // Foreign-endian buffers fail validation (or pass it with swapped
        // values) until swapped, so they are decoded unvalidated, swapped,
        // and then validated in full before anything reads them.
        let mut unvalidated = UnsafeFlag::new();
        // SAFETY: with the flag set, arrays come back unvalidated; they are
        // only passed to `endian`, which rebuilds every buffer they use and
        // validates the result in full before it leaves this function.
        unsafe { unvalidated.set(self.foreign) };
        match message.header_type() {
            MessageHeader::Schema => {
                if self.schema.is_some() {
                    return Err(ReadError::new("a second schema in one stream"));
                }
                let fb = message
                    .header_as_schema()
                    .ok_or_else(|| ReadError::new("a schema message without a schema"))?;
                self.set_schema(fb)?;
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
                if self.foreign && batch.isDelta() {
                    // A delta is appended to the dictionary before it could be
                    // swapped.
                    return Err(ReadError::new(
                        "big-endian delta dictionaries are not supported (rewrite the file little-endian)",
                    ));
                }
                read_dictionary_impl(
                    &data,
                    batch,
                    schema,
                    &mut self.dictionaries,
                    &version,
                    false,
                    unvalidated,
                )?;
                if self.foreign {
                    let id = batch.id();
                    if let Some(values) = self.dictionaries.get(&id) {
                        let native = endian::array_to_native(values)?;
                        self.dictionaries.insert(id, native);
                    }
                }
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
                let batch = RecordBatchDecoder::try_new(&data, batch, schema, &self.dictionaries, &version)?
                    .with_projection(self.projection.as_deref())
                    .with_require_alignment(false)
                    .with_skip_validation(unvalidated)
                    .read_record_batch()?;
                if self.foreign {
                    return Ok(Some(endian::batch_to_native(batch)?));
                }
                Ok(Some(batch))
            }
            MessageHeader::NONE => Ok(None),
            other => Err(ReadError::new(format!("unexpected {other:?} message in a stream"))),
        }
    }
}

/// The schema of big-endian data. arrow-rs refuses big-endian decimals in
/// its schema conversion (it cannot read their values); this decoder swaps
/// them, so the fields are converted one by one. That conversion panics on
/// a malformed field, which is caught as this file's error.
fn foreign_schema(schema: FbSchema<'_>) -> Result<arrow::datatypes::Schema, ReadError> {
    let fields = schema
        .fields()
        .ok_or_else(|| ReadError::new("IPC schema has no fields"))?;
    let fields =
        crate::source::read::guarded(|| Ok(fields.iter().map(arrow::datatypes::Field::from).collect::<Vec<_>>()))?;
    Ok(arrow::datatypes::Schema::new(fields))
}

/// A stream's end inside a message's header or flatbuffer.
const TRUNCATED: &str = "truncated: the stream ends inside a message";

/// Reads the next message of a stream, its compressed buffers vetted;
/// `None` at a clean end of input between messages.
pub(crate) fn next_message(input: &mut dyn Read) -> Result<Option<Message>, ReadError> {
    let mut bytes = Vec::new();
    let Some(first) = read_word(input, &mut bytes)? else {
        return Ok(None);
    };
    // A continuation marker and a length precede the flatbuffer (older
    // writers: the length alone).
    let len = if first == 0xffff_ffff {
        read_word(input, &mut bytes)?.ok_or_else(|| ReadError::new(TRUNCATED))?
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
    read_exactly(input, &mut bytes, body_len).map_err(|e| match e.message.as_str() {
        // Said as the walk of a local stream says it.
        TRUNCATED => ReadError::new(format!(
            "truncated: a body of {body_len} bytes runs past the end of the file"
        )),
        _ => e,
    })?;
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
            Ok(0) => return Err(ReadError::new(TRUNCATED)),
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
        return Err(ReadError::new(TRUNCATED));
    }
    Ok(())
}
