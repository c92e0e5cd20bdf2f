//! Arrow IPC: the file format (`.arrow`, `.feather` v2, `.ipc`), one unit per
//! record batch, and the stream format (`.arrows`, and the `.arrow` files of
//! Hugging Face `datasets` caches and `save_to_disk` folders), read as one
//! sequential unit. Which of the two a file holds is decided by its first
//! bytes, never by its name.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use arrow::array::RecordBatch;
use arrow::ipc::reader::{FileReader, StreamReader, read_footer_length};
use arrow::ipc::{Message, root_as_footer, root_as_message};

use super::{BATCH_ROWS, Batch, ReadError, Source};

const FILE_MAGIC: &[u8; 6] = b"ARROW1";

/// The largest buffer a compressed batch may declare it decompresses to. The
/// IPC reader allocates what a buffer declares before decompressing, so a
/// hostile file could otherwise abort the process with one bogus length;
/// [`vet`] also refuses a declared size beyond what the codec can produce
/// from the buffer's compressed bytes.
const MAX_BUFFER_BYTES: i64 = 1 << 32;

/// An Arrow IPC file or stream.
pub struct IpcSource {
    path: PathBuf,
    columns: Vec<String>,
    /// `None` for a stream; for a file, the file row of each batch's first row.
    batches: Option<Vec<u64>>,
}

impl IpcSource {
    /// Opens `path` and reads its schema (and, for a file, its footer).
    pub fn open(path: &Path) -> Result<IpcSource, ReadError> {
        let mut head = [0u8; 6];
        let n = File::open(path)?.read(&mut head)?;
        if n == 6 && &head == FILE_MAGIC {
            // Vetted first: the reader allocates what the footer's blocks declare.
            let first_rows = index_file(path)?;
            let reader = FileReader::try_new(File::open(path)?, None)?;
            let columns = reader.schema().fields().iter().map(|f| f.name().clone()).collect();
            if first_rows.len() != reader.num_batches() {
                return Err(ReadError::new("the footer's record batches cannot be read"));
            }
            Ok(IpcSource {
                path: path.to_path_buf(),
                columns,
                batches: Some(first_rows),
            })
        } else {
            let reader = StreamReader::try_new(BufReader::new(File::open(path)?), None)
                .map_err(|e| ReadError::new(format!("not an Arrow IPC file or stream: {e}")))?;
            let columns = reader.schema().fields().iter().map(|f| f.name().clone()).collect();
            vet_stream(path)?;
            Ok(IpcSource {
                path: path.to_path_buf(),
                columns,
                batches: None,
            })
        }
    }
}

impl Source for IpcSource {
    fn columns(&self) -> &[String] {
        &self.columns
    }

    fn units(&self) -> usize {
        self.batches.as_ref().map_or(1, Vec::len)
    }

    fn read(
        &self,
        unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        // Readers project in file order; put the columns in the asked order.
        let (sorted, order) = super::file_order(projection);
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
        match &self.batches {
            Some(first_rows) => {
                let at = || format!("record batch {unit}");
                let mut reader = FileReader::try_new(File::open(&self.path)?, Some(sorted.clone()))?;
                let first_row = first_rows.get(unit).copied().unwrap_or(0);
                reader.set_index(unit).map_err(|e| ReadError::from(e).at(at()))?;
                match reader.next() {
                    Some(batch) => emit(first_row, batch.map_err(|e| ReadError::from(e).at(at()))?),
                    None => Err(ReadError::new("record batch is missing").at(at())),
                }
            }
            None => {
                let reader = StreamReader::try_new(BufReader::new(File::open(&self.path)?), Some(sorted.clone()))?;
                let mut row = 0u64;
                for (i, batch) in reader.enumerate() {
                    let batch = batch.map_err(|e| ReadError::from(e).at(format!("record batch {i}")))?;
                    let n = batch.num_rows() as u64;
                    emit(row, batch)?;
                    row += n;
                }
                Ok(())
            }
        }
    }
}

/// Random access to a file's bytes, bounded by its length.
struct Bytes {
    file: File,
    len: u64,
}

impl Bytes {
    fn open(path: &Path) -> Result<Bytes, ReadError> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        Ok(Bytes { file, len })
    }

    fn read_at(&mut self, offset: u64, n: u64) -> Result<Vec<u8>, ReadError> {
        let len = self.len;
        if offset.checked_add(n).is_none_or(|end| end > len) {
            return Err(ReadError::new(format!(
                "truncated: needs bytes {offset}..{} of {len}",
                offset.saturating_add(n)
            )));
        }
        let mut buf = vec![0u8; n as usize];
        self.file.seek(SeekFrom::Start(offset))?;
        self.file.read_exact(&mut buf)?;
        Ok(buf)
    }

    /// The flatbuffer of the message at `pos` and where its body starts;
    /// `meta_len` (prefix included) is known for a file's blocks, read from
    /// the prefix in a stream. `None` at the end-of-stream marker.
    fn message_at(&mut self, pos: u64, meta_len: Option<u64>) -> Result<Option<(Vec<u8>, u64)>, ReadError> {
        let word = |b: Vec<u8>| i32::from_le_bytes(b.try_into().unwrap_or([0; 4]));
        // A continuation marker and a length precede the flatbuffer (older
        // writers: the length alone).
        let first = self.read_at(pos, 4)?;
        let (flat_len, head) = if first == [0xff; 4] {
            (word(self.read_at(pos + 4, 4)?), 8)
        } else {
            (word(first), 4)
        };
        if flat_len == 0 {
            return Ok(None);
        }
        let flat_len = u64::try_from(flat_len).map_err(|_| ReadError::new("negative message length"))?;
        let total = meta_len.unwrap_or(head + flat_len);
        let flat = self.read_at(pos + head, total.saturating_sub(head))?;
        Ok(Some((flat, pos + total)))
    }

    /// Vets the compressed buffers of `message`, whose body starts at `body`.
    fn vet(&mut self, message: &Message, body: u64) -> Result<(), ReadError> {
        vet(message, &mut |offset| {
            let b = self.read_at(body.saturating_add(offset), 8)?;
            Ok(b.try_into().unwrap_or([0; 8]))
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
/// read): returns the file row of each record batch's first row (the footer
/// holds no row counts) and vets every compressed buffer. Messages are found
/// through the footer, since writers need not repeat the stream in a file.
fn index_file(path: &Path) -> Result<Vec<u64>, ReadError> {
    let mut bytes = Bytes::open(path)?;
    let len = bytes.len;
    let trailer: [u8; 10] = bytes.read_at(len.saturating_sub(10), 10)?.try_into().unwrap_or([0; 10]);
    let footer_len = read_footer_length(trailer)? as u64;
    let footer = bytes.read_at(len.saturating_sub(10).saturating_sub(footer_len), footer_len)?;
    let footer = root_as_footer(&footer).map_err(|e| ReadError::new(format!("invalid footer: {e}")))?;
    // A block (message and body) must lie inside the file.
    let block = |b: &arrow::ipc::Block| -> Result<(u64, u64), ReadError> {
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
        Ok((offset, meta))
    };
    for (i, b) in footer.dictionaries().into_iter().flatten().enumerate() {
        let (offset, meta) = block(b)?;
        if let Some((flat, body)) = bytes
            .message_at(offset, Some(meta))
            .map_err(|e| e.at(format!("dictionary {i}")))?
        {
            let message = parse(&flat).map_err(|e| e.at(format!("dictionary {i}")))?;
            bytes.vet(&message, body).map_err(|e| e.at(format!("dictionary {i}")))?;
        }
    }
    let mut first_rows = Vec::new();
    let mut next = 0u64;
    for (i, b) in footer.recordBatches().into_iter().flatten().enumerate() {
        let at = || format!("record batch {i}");
        let (offset, meta) = block(b).map_err(|e| e.at(at()))?;
        let (flat, body) = bytes
            .message_at(offset, Some(meta))
            .map_err(|e| e.at(at()))?
            .ok_or_else(|| ReadError::new("not a record batch").at(at()))?;
        let message = parse(&flat).map_err(|e| e.at(at()))?;
        bytes.vet(&message, body).map_err(|e| e.at(at()))?;
        let rows = message
            .header_as_record_batch()
            .map(|b| b.length())
            .ok_or_else(|| ReadError::new("not a record batch").at(at()))?;
        first_rows.push(next);
        next = next.saturating_add(u64::try_from(rows).map_err(|_| ReadError::new("negative row count").at(at()))?);
    }
    Ok(first_rows)
}

/// Walks an IPC stream's messages (headers only) and vets every compressed
/// buffer, before the stream reader allocates anything they declare.
fn vet_stream(path: &Path) -> Result<(), ReadError> {
    let mut bytes = Bytes::open(path)?;
    let mut pos = 0u64;
    let mut i = 0usize;
    while pos + 4 <= bytes.len {
        let at = format!("message {i}");
        let Some((flat, body)) = bytes.message_at(pos, None).map_err(|e| e.at(at.clone()))? else {
            break;
        };
        let message = parse(&flat).map_err(|e| e.at(at.clone()))?;
        bytes.vet(&message, body).map_err(|e| e.at(at.clone()))?;
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
    Ok(())
}
