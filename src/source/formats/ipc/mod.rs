//! Arrow IPC: the file format (`.arrow`, `.feather` v2, `.ipc`), one unit per
//! record batch, and the stream format (`.arrows`, and the `.arrow` files of
//! Hugging Face `datasets` caches and `save_to_disk` folders), read as one
//! sequential unit. Which of the two a file holds is decided by its first
//! bytes, never by its name.
//!
//! Bytes come through `Input`: a local file's blocks are views of its map,
//! an object's are ranged reads (a file's message headers fetched together
//! when it is opened, each record batch when its unit is read; a stream
//! read in order, block by block).

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::buffer::Buffer;
use arrow::ipc::reader::read_footer_length;
use arrow::ipc::{Message, root_as_footer, root_as_message};

use crate::error::ReadError;
use crate::source::format::Format;
use crate::source::read::{BATCH_ROWS, Batch, Source};
use crate::source::storage::Input;
use message::{Decoder, next_message};

/// Arrow IPC, file or stream (decided by content). A `datasets` index
/// mapping is read as the dataset it maps ([`datasets::MappedSource`]).
pub(crate) const FORMAT: Format = Format::new(
    "ipc",
    |n, _| matches!(n.ext, Some("arrow" | "feather" | "ipc" | "arrows")),
    |path, o| match datasets::is_mapping(path, &o.hints.columns) {
        true => Ok(Box::new(datasets::MappedSource::open(path)?)),
        false => Ok(Box::new(IpcSource::open(path)?)),
    },
)
.sniffed(|head| head.starts_with(b"ARROW1") || head.starts_with(&[0xff; 4]));

pub(crate) mod datasets;
mod endian;
pub(crate) mod message;

const FILE_MAGIC: &[u8; 6] = b"ARROW1";

/// The largest buffer a compressed batch may declare it decompresses to. The
/// IPC reader allocates what a buffer declares before decompressing, so a
/// hostile file could otherwise abort the process with one bogus length;
/// [`vet`] also refuses a declared size beyond what the codec can produce
/// from the buffer's compressed bytes.
const MAX_BUFFER_BYTES: i64 = 1 << 32;

/// An Arrow IPC file or stream.
pub(crate) struct IpcSource {
    path: PathBuf,
    columns: Vec<String>,
    /// The schema's metadata (a `datasets` file's features).
    metadata: arrow::datatypes::Metadata,
    /// `None` for a stream; for a file, its footer's blocks.
    file: Option<FileIndex>,
    /// A file's bytes (a stream is opened again to be read in order).
    input: Option<Arc<Input>>,
    /// Rows, from the message headers (unknown for a stream in storage).
    rows: Option<u64>,
}

/// Where an IPC file's messages are, from its footer.
struct FileIndex {
    /// The footer's bytes (its schema is read again for each unit).
    footer: Vec<u8>,
    dictionaries: Vec<Block>,
    batches: Vec<Block>,
    /// File row of each record batch's first row.
    first_rows: Vec<u64>,
    /// Rows of all record batches.
    rows: u64,
}

/// A message of a file: where it starts, its metadata and body lengths.
#[derive(Clone, Copy)]
struct Block {
    offset: u64,
    meta: u64,
    body: u64,
}

impl IpcSource {
    /// Opens `path` and reads its schema (and, for a file, its footer).
    pub(crate) fn open(path: &Path) -> Result<IpcSource, ReadError> {
        let input = Input::open(path)?;
        let head = input.bytes(0..input.size().min(6))?;
        if head[..] == FILE_MAGIC[..] {
            let input = Arc::new(input);
            let index = index_file(Arc::clone(&input))?;
            let footer = root_as_footer(&index.footer).map_err(|e| ReadError::new(format!("invalid footer: {e}")))?;
            let schema = footer
                .schema()
                .ok_or_else(|| ReadError::new("the footer has no schema"))?;
            let decoder = Decoder::with_schema(schema, None)?;
            let (columns, metadata) = names_and_metadata(decoder.schema.as_deref());
            Ok(IpcSource {
                path: path.to_path_buf(),
                columns,
                metadata,
                rows: Some(index.rows),
                file: Some(index),
                input: Some(input),
            })
        } else {
            let (columns, metadata, rows) = vet_stream(input)?;
            Ok(IpcSource {
                path: path.to_path_buf(),
                columns,
                metadata,
                file: None,
                input: None,
                rows,
            })
        }
    }

    /// Rows of the file, as its message headers say (`None` for a stream
    /// in storage, whose headers are not read ahead).
    pub(crate) fn rows(&self) -> Option<u64> {
        self.rows
    }
}

impl Source for IpcSource {
    fn columns(&self) -> &[String] {
        &self.columns
    }

    fn label_names(&self, column: usize) -> Option<(Vec<Option<String>>, String)> {
        let names = crate::source::formats::features::class_names(&self.metadata, &self.columns[column])?;
        Some((names, crate::source::formats::features::FROM.to_string()))
    }

    fn units(&self) -> usize {
        self.file.as_ref().map_or(1, |f| f.batches.len())
    }

    fn read(
        &self,
        unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        // The decoder projects in file order; put the columns in the asked order.
        let (sorted, order) = crate::source::read::file_order(projection);
        let mut emit = |first_row: u64, batch: RecordBatch| -> Result<(), ReadError> {
            let batch = batch.project(&order)?;
            // IPC batches can be large: hand them on in bounded slices.
            let mut offset = 0;
            while offset < batch.num_rows() || (offset == 0 && batch.num_rows() == 0) {
                let len = BATCH_ROWS.min(batch.num_rows() - offset);
                sink(Batch {
                    first_row: first_row + offset as u64,
                    batch: batch.slice(offset, len),
                })?;
                offset += len.max(1);
            }
            Ok(())
        };
        match &self.file {
            Some(index) => {
                let at = || format!("record batch {unit}");
                let block = *index
                    .batches
                    .get(unit)
                    .ok_or_else(|| ReadError::new("record batch is missing").at(at()))?;
                let footer =
                    root_as_footer(&index.footer).map_err(|e| ReadError::new(format!("invalid footer: {e}")))?;
                let schema = footer
                    .schema()
                    .ok_or_else(|| ReadError::new("the footer has no schema"))?;
                let mut decoder = Decoder::with_schema(schema, Some(sorted))?;
                let input = self.input.clone().ok_or_else(|| ReadError::new("internal: no input"))?;
                let bytes = Bytes::open(input);
                for (i, d) in index.dictionaries.iter().enumerate() {
                    let (buf, flat, body) = bytes.block(d).map_err(|e| e.at(format!("dictionary {i}")))?;
                    decoder
                        .decode(&buf, flat, body)
                        .map_err(|e| e.at(format!("dictionary {i}")))?;
                }
                let (buf, flat, body) = bytes.block(&block).map_err(|e| e.at(at()))?;
                let done = match decoder.decode(&buf, flat, body).map_err(|e| e.at(at()))? {
                    Some(batch) => emit(index.first_rows[unit], batch),
                    None => Err(ReadError::new("not a record batch").at(at())),
                };
                // A local file's batch was read in place: its pages may go.
                if let Some(map) = bytes.input.map() {
                    crate::source::storage::release(map, block.offset as usize, (block.meta + block.body) as usize);
                }
                done
            }
            None => {
                let mut input = BufReader::with_capacity(1 << 20, Input::open(&self.path)?.reader()?);
                let mut decoder = Decoder::default().project(sorted);
                let (mut row, mut i) = (0u64, 0usize);
                while let Some(message) = next_message(&mut input).map_err(|e| e.at(format!("message {i}")))? {
                    if message.is_end {
                        break;
                    }
                    let (flat, body) = (message.flat, message.body);
                    let buf = Buffer::from_vec(message.bytes);
                    if let Some(batch) = decoder
                        .decode(&buf, flat, body)
                        .map_err(|e| e.at(format!("message {i}")))?
                    {
                        let n = batch.num_rows() as u64;
                        emit(row, batch)?;
                        row += n;
                    }
                    i += 1;
                }
                Ok(())
            }
        }
    }
}

/// Random access to a file's bytes, bounded by its length: views of a
/// local map, ranged requests for an object (where [`Bytes::prefetch`]
/// first fetches many small ranges at once).
struct Bytes {
    input: Arc<Input>,
    len: u64,
    /// Ranges fetched ahead, by start: reads inside one cost no request.
    fetched: Vec<(u64, bytes::Bytes)>,
}

impl Bytes {
    fn open(input: Arc<Input>) -> Bytes {
        let len = input.size();
        Bytes {
            input,
            len,
            fetched: Vec::new(),
        }
    }

    /// Fetches `ranges` (those inside the file; sorted by start) in one
    /// coalesced, parallel go for an object; a local file needs none.
    fn prefetch(&mut self, mut ranges: Vec<std::ops::Range<u64>>) -> Result<(), ReadError> {
        if !self.input.is_remote() {
            return Ok(());
        }
        ranges.retain(|r| r.start < r.end && r.end <= self.len);
        ranges.sort_by_key(|r| r.start);
        let got = self.input.ranges(&ranges)?;
        self.fetched = ranges.iter().map(|r| r.start).zip(got).collect();
        Ok(())
    }

    fn read_at(&self, offset: u64, n: u64) -> Result<bytes::Bytes, ReadError> {
        let len = self.len;
        if offset.checked_add(n).is_none_or(|end| end > len) {
            return Err(ReadError::new(format!(
                "truncated: needs bytes {offset}..{} of {len}",
                offset.saturating_add(n)
            )));
        }
        let i = self.fetched.partition_point(|(s, _)| *s <= offset);
        if let Some((s, b)) = i.checked_sub(1).map(|i| &self.fetched[i])
            && offset + n <= s + b.len() as u64
        {
            return Ok(b.slice((offset - s) as usize..(offset - s + n) as usize));
        }
        self.input.bytes(offset..offset + n)
    }

    /// The flatbuffer of the message at `pos` and where its body starts;
    /// `meta_len` (prefix included) is known for a file's blocks, read from
    /// the prefix in a stream. `None` at the end-of-stream marker.
    fn message_at(&self, pos: u64, meta_len: Option<u64>) -> Result<Option<(bytes::Bytes, u64)>, ReadError> {
        let word = |b: &[u8]| i32::from_le_bytes(b.try_into().unwrap_or([0; 4]));
        // A continuation marker and a length precede the flatbuffer (older
        // writers: the length alone).
        let first = self.read_at(pos, 4)?;
        let (flat_len, head) = if first[..] == [0xff; 4] {
            (word(&self.read_at(pos + 4, 4)?), 8)
        } else {
            (word(&first), 4)
        };
        if flat_len == 0 {
            return Ok(None);
        }
        let flat_len = u64::try_from(flat_len).map_err(|_| ReadError::new("negative message length"))?;
        let total = meta_len.unwrap_or(head + flat_len);
        let flat = self.read_at(pos + head, total.saturating_sub(head))?;
        Ok(Some((flat, pos + total)))
    }

    /// A file block's bytes (message and body), with where its flatbuffer
    /// and its body start; its compressed buffers vetted.
    fn block(&self, b: &Block) -> Result<(Buffer, usize, usize), ReadError> {
        let bytes = self.read_at(b.offset, b.meta.saturating_add(b.body))?;
        let head = if bytes.starts_with(&[0xff; 4]) { 8 } else { 4 };
        let meta = usize::try_from(b.meta).map_err(|_| ReadError::new("block too large"))?;
        if meta < head {
            return Err(ReadError::new("a block's metadata is shorter than its prefix"));
        }
        // Vetted when the file was opened, from a local file; an object's
        // blocks here, their bodies now in memory.
        if self.input.is_remote() {
            let message = parse(bytes.get(head..meta).unwrap_or_default())?;
            vet(&message, &mut |offset| {
                let at = meta.saturating_add(usize::try_from(offset).unwrap_or(usize::MAX));
                bytes
                    .get(at..at.saturating_add(8))
                    .and_then(|b| b.try_into().ok())
                    .ok_or_else(|| ReadError::new("a buffer lies outside its message body"))
            })?;
        }
        Ok((Buffer::from(bytes), head, meta))
    }

    /// Vets the compressed buffers of `message`, whose body starts at
    /// `body` (an object's when its blocks are read: see [`Bytes::block`]).
    fn vet(&self, message: &Message, body: u64) -> Result<(), ReadError> {
        if self.input.is_remote() {
            return Ok(());
        }
        vet(message, &mut |offset| {
            let b = self.read_at(body.saturating_add(offset), 8)?;
            Ok(b[..].try_into().unwrap_or([0; 8]))
        })
    }
}

/// Rejects a compressed buffer of `message` that declares more than
/// [`MAX_BUFFER_BYTES`] once decompressed: the IPC reader allocates that
/// much before decompressing. `prefix_at(offset)` reads the 8 bytes at
/// `offset` of the message body.
pub(crate) fn vet(
    message: &Message,
    prefix_at: &mut dyn FnMut(u64) -> Result<[u8; 8], ReadError>,
) -> Result<(), ReadError> {
    let batch = message
        .header_as_record_batch()
        .or_else(|| message.header_as_dictionary_batch().and_then(|d| d.data()));
    let Some((b, codec)) = batch.and_then(|b| b.compression().map(|c| (b, c.codec()))) else {
        return Ok(());
    };
    // The most a codec can expand its input: an LZ4 block at most 255 times
    // (one token byte and length bytes per 255 output bytes), a zstd frame
    // at most 32,768 times (a 4-byte RLE block for 128 KiB of output).
    let ratio: i64 = if codec == arrow::ipc::CompressionType::LZ4_FRAME {
        256
    } else {
        32_768
    };
    for buf in b.buffers().into_iter().flatten().filter(|buf| buf.length() >= 8) {
        let offset = u64::try_from(buf.offset()).map_err(|_| ReadError::new("negative buffer offset"))?;
        let declared = i64::from_le_bytes(prefix_at(offset)?);
        let can_hold = (buf.length() - 8).saturating_mul(ratio).saturating_add(64);
        if declared > MAX_BUFFER_BYTES || declared > can_hold {
            return Err(ReadError::new(format!(
                "a compressed buffer of {} bytes declares {declared} bytes once decompressed, more than {}",
                buf.length() - 8,
                if declared > MAX_BUFFER_BYTES {
                    format!("the {MAX_BUFFER_BYTES} preflight accepts")
                } else {
                    "its codec can expand it to".to_string()
                }
            )));
        }
    }
    Ok(())
}

pub(crate) fn parse(flat: &[u8]) -> Result<Message<'_>, ReadError> {
    root_as_message(flat).map_err(|e| ReadError::new(format!("invalid message: {e}")))
}

/// Reads an IPC file's footer and its messages' headers (bodies are not
/// read): where its dictionaries and record batches are, the file row of
/// each batch's first row (the footer holds no row counts), every
/// compressed buffer vetted. Messages are found through the footer, since
/// writers need not repeat the stream in a file.
fn index_file(input: Arc<Input>) -> Result<FileIndex, ReadError> {
    let mut bytes = Bytes::open(input);
    let len = bytes.len;
    let trailer: [u8; 10] = bytes.read_at(len.saturating_sub(10), 10)?[..]
        .try_into()
        .unwrap_or([0; 10]);
    let footer_len = read_footer_length(trailer)? as u64;
    let footer_bytes = bytes.read_at(len.saturating_sub(10).saturating_sub(footer_len), footer_len)?;
    let footer_bytes = footer_bytes.to_vec();
    let footer = root_as_footer(&footer_bytes).map_err(|e| ReadError::new(format!("invalid footer: {e}")))?;
    // Every message's header at once (an object's in a few requests).
    let heads = footer
        .dictionaries()
        .into_iter()
        .flatten()
        .chain(footer.recordBatches().into_iter().flatten())
        .filter_map(|b| {
            let (o, m) = (u64::try_from(b.offset()).ok()?, u64::try_from(b.metaDataLength()).ok()?);
            Some(o..o.checked_add(m)?)
        })
        .collect();
    bytes.prefetch(heads)?;
    // A block (message and body) must lie inside the file.
    let block = |b: &arrow::ipc::Block| -> Result<Block, ReadError> {
        let offset = u64::try_from(b.offset()).map_err(|_| ReadError::new("negative block offset"))?;
        let meta = u64::try_from(b.metaDataLength()).map_err(|_| ReadError::new("negative block length"))?;
        let body = u64::try_from(b.bodyLength()).map_err(|_| ReadError::new("negative body length"))?;
        if offset
            .checked_add(meta)
            .and_then(|m| m.checked_add(body))
            .is_none_or(|end| end > len)
        {
            return Err(ReadError::new(format!(
                "truncated: a block of {} bytes at offset {offset} runs past the end of the file",
                meta.saturating_add(body)
            )));
        }
        Ok(Block { offset, meta, body })
    };
    let mut dictionaries = Vec::new();
    for (i, b) in footer.dictionaries().into_iter().flatten().enumerate() {
        let at = || format!("dictionary {i}");
        let d = block(b).map_err(|e| e.at(at()))?;
        let (flat, body) = bytes
            .message_at(d.offset, Some(d.meta))
            .map_err(|e| e.at(at()))?
            .ok_or_else(|| ReadError::new("not a dictionary").at(at()))?;
        let message = parse(&flat).map_err(|e| e.at(at()))?;
        if message.header_as_dictionary_batch().is_none() {
            return Err(ReadError::new("not a dictionary").at(at()));
        }
        bytes.vet(&message, body).map_err(|e| e.at(at()))?;
        dictionaries.push(d);
    }
    let (mut batches, mut first_rows) = (Vec::new(), Vec::new());
    let mut next = 0u64;
    for (i, b) in footer.recordBatches().into_iter().flatten().enumerate() {
        let at = || format!("record batch {i}");
        let r = block(b).map_err(|e| e.at(at()))?;
        let (flat, body) = bytes
            .message_at(r.offset, Some(r.meta))
            .map_err(|e| e.at(at()))?
            .ok_or_else(|| ReadError::new("not a record batch").at(at()))?;
        let message = parse(&flat).map_err(|e| e.at(at()))?;
        bytes.vet(&message, body).map_err(|e| e.at(at()))?;
        let rows = message
            .header_as_record_batch()
            .map(|b| b.length())
            .ok_or_else(|| ReadError::new("not a record batch").at(at()))?;
        batches.push(r);
        first_rows.push(next);
        next = next.saturating_add(u64::try_from(rows).map_err(|_| ReadError::new("negative row count").at(at()))?);
    }
    Ok(FileIndex {
        footer: footer_bytes,
        dictionaries,
        batches,
        first_rows,
        rows: next,
    })
}

/// Whether the file at `path` (or object) is an index mapping that Hugging Face
/// `datasets` writes beside a dataset's cache files (`shuffle`, `select`,
/// `sort`, `train_test_split` of a dataset whose data lives in files): an
/// Arrow stream whose only column is `indices` (uint64), the row order over
/// the data files, not data. Only its first message (the schema) is read
/// (of an object, by a few small ranged requests).
pub(crate) fn is_datasets_indices(path: &Path) -> bool {
    let Ok(input) = Input::open(path) else { return false };
    let bytes = Bytes::open(Arc::new(input));
    let Ok(Some((flat, _))) = bytes.message_at(0, None) else {
        return false;
    };
    let Some(schema) = parse(&flat).ok().and_then(|m| m.header_as_schema()) else {
        return false;
    };
    let Ok(Some(schema)) = Decoder::with_schema(schema, None).map(|d| d.schema) else {
        return false;
    };
    matches!(schema.fields().as_ref(), [f] if f.name() == "indices" && *f.data_type() == arrow::datatypes::DataType::UInt64)
}

/// Walks an IPC stream's messages (headers only) and vets every compressed
/// buffer, before the decoder allocates anything they declare; returns the
/// names of the columns of the stream's schema and (for a local file) its
/// rows.
/// A schema's column names and metadata.
fn names_and_metadata(schema: Option<&arrow::datatypes::Schema>) -> (Vec<String>, arrow::datatypes::Metadata) {
    schema.map_or_else(Default::default, |s| {
        (
            s.fields().iter().map(|f| f.name().clone()).collect(),
            s.metadata().clone(),
        )
    })
}

fn vet_stream(input: Input) -> Result<(Vec<String>, arrow::datatypes::Metadata, Option<u64>), ReadError> {
    let remote = input.is_remote();
    let bytes = Bytes::open(Arc::new(input));
    let not_ipc = |e: ReadError| ReadError::new(format!("not an Arrow IPC file or stream: {}", e.message));
    let (flat, _) = bytes
        .message_at(0, None)
        .map_err(not_ipc)?
        .ok_or_else(|| not_ipc(ReadError::new("no schema")))?;
    let first = parse(&flat).map_err(not_ipc)?;
    let schema = first
        .header_as_schema()
        .ok_or_else(|| not_ipc(ReadError::new("the first message is not a schema")))?;
    let (columns, metadata) =
        names_and_metadata(Decoder::with_schema(schema, None).map_err(not_ipc)?.schema.as_deref());
    // An object's messages are vetted as the read meets them (in order:
    // hopping from header to header would be a request each).
    if remote {
        return Ok((columns, metadata, None));
    }
    let mut pos = 0u64;
    let mut i = 0usize;
    let mut rows = 0u64;
    while pos + 4 <= bytes.len {
        let at = format!("message {i}");
        let Some((flat, body)) = bytes.message_at(pos, None).map_err(|e| e.at(at.clone()))? else {
            break;
        };
        let message = parse(&flat).map_err(|e| e.at(at.clone()))?;
        bytes.vet(&message, body).map_err(|e| e.at(at.clone()))?;
        if let Some(b) = message.header_as_record_batch() {
            rows = rows.saturating_add(u64::try_from(b.length()).unwrap_or(0));
        }
        let body_len =
            u64::try_from(message.bodyLength()).map_err(|_| ReadError::new("negative body length").at(at.clone()))?;
        pos = body
            .checked_add(body_len)
            .filter(|&end| end <= bytes.len)
            .ok_or_else(|| {
                ReadError::new(format!(
                    "truncated: a body of {body_len} bytes runs past the end of the file"
                ))
                .at(at)
            })?;
        i += 1;
    }
    Ok((columns, metadata, Some(rows)))
}
