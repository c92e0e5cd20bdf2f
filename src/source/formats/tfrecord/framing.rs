//! TFRecord framing (tensorflow/core/lib/io/record_{reader,writer}.cc):
//! each record is a little-endian u64 length, the masked CRC-32C of those 8
//! bytes, the data, and the masked CRC-32C of the data. Both checksums are
//! checked on every record read (the `tfrecord` package checks neither, so
//! a flipped length there reads garbage or dies far from the cause).

use std::io::Read;

use bytes::Bytes;

use crate::error::ReadError;

/// Largest record read from a compressed stream (a mapped file's records
/// are bounded by the file itself).
pub(super) const MAX_RECORD: u64 = 256 << 20;

/// `MaskedCrc` of crc32c.h.
pub(super) fn masked_crc(data: &[u8]) -> u32 {
    let crc = crc32c::crc32c(data);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

fn at(record: u64) -> String {
    format!("record {record}")
}

fn u32_at(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// Checks a 12-byte header; returns the data length.
fn header(h: &[u8], record: u64) -> Result<u64, ReadError> {
    let len = u64::from_le_bytes(h[..8].try_into().unwrap_or_default());
    if masked_crc(&h[..8]) != u32_at(&h[8..12]) {
        return Err(ReadError::new(format!(
            "length checksum mismatch (the length field reads {len}): not a TFRecord file, or a damaged one"
        ))
        .at(at(record)));
    }
    Ok(len)
}

fn check_data(data: &[u8], crc: &[u8], record: u64) -> Result<(), ReadError> {
    if masked_crc(data) != u32_at(crc) {
        return Err(ReadError::new("data checksum mismatch: the record is damaged").at(at(record)));
    }
    Ok(())
}

/// The data range [start, end) of the record whose header `h` (its 12
/// bytes, or fewer when the file ends sooner) is at `pos` of a file of
/// `total` bytes; its length checksum checked, its data checksum (4 bytes
/// at `end`) within the file.
pub(super) fn frame(h: &[u8], pos: usize, total: usize, record: u64) -> Result<(usize, usize), ReadError> {
    let rest = total - pos;
    if h.len() < 12 {
        return Err(ReadError::new(format!("truncated record header ({rest} bytes left)")).at(at(record)));
    }
    let len = header(h, record)?;
    if len > (rest - 12) as u64 || (rest - 12) as u64 - len < 4 {
        return Err(ReadError::new(format!(
            "length {len} runs past the end of the file ({} bytes left)",
            rest - 12
        ))
        .at(at(record)));
    }
    let start = pos + 12;
    Ok((start, start + len as usize))
}

/// Records of a memory-mapped file, from a byte offset.
pub(super) struct MapRecords {
    pub data: Bytes,
    pub pos: usize,
    pub record: u64,
    /// Whether to check the data checksum (the listing pass leaves it to
    /// the reading pass, which runs in parallel).
    pub check_data: bool,
}

impl MapRecords {
    /// The next record's (offset, data), `None` at the end of the file.
    pub(super) fn next_record(&mut self) -> Result<Option<(usize, Bytes)>, ReadError> {
        if self.pos == self.data.len() {
            return Ok(None);
        }
        let record = self.record;
        let h = self.data.get(self.pos..self.pos + 12).unwrap_or(&self.data[self.pos..]);
        let (start, end) = frame(h, self.pos, self.data.len(), record)?;
        if self.check_data {
            check_data(&self.data[start..end], &self.data[end..end + 4], record)?;
        }
        let offset = self.pos;
        self.pos = end + 4;
        self.record += 1;
        Ok(Some((offset, self.data.slice(start..end))))
    }
}

/// Records of a stream (a gzip-compressed file), both checksums checked.
pub(super) struct StreamRecords {
    pub reader: Box<dyn Read>,
    pub record: u64,
    /// The size of an uncompressed stream (an object), when known: a
    /// length past its end is then told as a local file's is.
    pub total: Option<u64>,
    /// Bytes read so far (of an uncompressed stream).
    pub pos: u64,
}

impl StreamRecords {
    pub(super) fn next_record(&mut self) -> Result<Option<Bytes>, ReadError> {
        let record = self.record;
        let mut h = [0u8; 12];
        let mut n = 0;
        while n < 12 {
            match self.reader.read(&mut h[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ReadError::new(format!("cannot decompress: {e}")).at(at(record))),
            }
        }
        if n == 0 {
            return Ok(None);
        }
        if n < 12 {
            return Err(ReadError::new(format!("truncated record header ({n} bytes left)")).at(at(record)));
        }
        let len = header(&h, record)?;
        if let Some(total) = self.total {
            let rest = total.saturating_sub(self.pos + 12);
            if len > rest || rest - len < 4 {
                return Err(ReadError::new(format!(
                    "length {len} runs past the end of the file ({rest} bytes left)"
                ))
                .at(at(record)));
            }
        }
        if len > MAX_RECORD {
            return Err(ReadError::new(format!(
                "a record of {len} bytes (preflight reads records of at most {MAX_RECORD} bytes)"
            ))
            .at(at(record)));
        }
        let mut data = Vec::new();
        (&mut self.reader)
            .take(len + 4)
            .read_to_end(&mut data)
            .map_err(|e| ReadError::new(format!("cannot decompress: {e}")).at(at(record)))?;
        if (data.len() as u64) < len + 4 {
            return Err(ReadError::new(format!("length {len} runs past the end of the data")).at(at(record)));
        }
        let crc = data.split_off(len as usize);
        check_data(&data, &crc, record)?;
        self.record += 1;
        self.pos += len + 16;
        Ok(Some(Bytes::from(data)))
    }
}
