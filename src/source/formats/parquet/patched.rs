//! The file as the parquet crate reads it, with the `is_compressed` flags of
//! v2 data page headers that old parquet-cpp wrote wrongly set right.
//!
//! parquet-cpp before the Arrow 3.0 line ("parquet-cpp version 1.x" in a
//! file's `created_by`, PyArrow up to 2.0) compressed v2 data pages but wrote
//! `is_compressed = false` in their headers (ARROW-10353). parquet-cpp reads
//! such files as compressed; the parquet crate trusts the flag and reads the
//! compressed bytes as values (ARROW-17100: a 20 where the file holds 1).
//! The flag is one byte of the page header in Thrift's compact protocol (a
//! bool's value is the field header's type nibble), so the bytes handed to
//! the parquet crate have that byte turned to `true`, nothing else.

use std::io::{self, Read};
use std::sync::Arc;

use bytes::Bytes;
use parquet::errors::Result;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::{ChunkReader, Length};

use crate::source::storage::Blob;

/// Whether the file's writer compressed v2 pages whatever their flag said:
/// parquet-cpp before 2.0.0 (parquet-cpp's own rule; the Arrow-era writer
/// calls itself `parquet-cpp-arrow`).
pub(super) fn v2_always_compressed(meta: &ParquetMetaData) -> bool {
    let Some(created_by) = meta.file_metadata().created_by() else {
        return false;
    };
    let Some((app, rest)) = created_by.split_once(" version") else {
        return false;
    };
    if app.trim() != "parquet-cpp" {
        return false;
    }
    let major = rest
        .trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|m| m.parse::<u32>().ok());
    major.is_some_and(|m| m < 2)
}

/// A file whose bytes at `flags` (sorted offsets) read as a compact-protocol
/// `true` instead of `false`.
pub(super) struct Patched {
    file: Blob,
    flags: Arc<[u64]>,
}

impl Patched {
    pub(super) fn new(file: Blob, mut flags: Vec<u64>) -> Patched {
        flags.sort_unstable();
        Patched {
            file,
            flags: flags.into(),
        }
    }
}

/// Turns the flag bytes that fall in `buf` (file bytes from `start`) true.
fn patch(flags: &[u64], start: u64, buf: &mut [u8]) {
    let first = flags.partition_point(|&f| f < start);
    for &f in &flags[first..] {
        let Some(b) = f.checked_sub(start).and_then(|i| buf.get_mut(i as usize)) else {
            break;
        };
        // Compact protocol: type 2 is a `false` bool field, 1 a `true` one.
        if *b & 0x0f == 2 {
            *b = (*b & 0xf0) | 1;
        }
    }
}

impl Length for Patched {
    fn len(&self) -> u64 {
        self.file.len()
    }
}

impl ChunkReader for Patched {
    type T = PatchedRead;

    fn get_read(&self, start: u64) -> Result<PatchedRead> {
        Ok(PatchedRead {
            inner: self.file.get_read(start)?,
            pos: start,
            flags: self.flags.clone(),
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes> {
        let mut buf = self.file.get_bytes(start, length)?.to_vec();
        if !self.flags.is_empty() {
            patch(&self.flags, start, &mut buf);
        }
        Ok(buf.into())
    }
}

/// A reader of the patched file from some offset.
pub(super) struct PatchedRead {
    inner: <Blob as ChunkReader>::T,
    pos: u64,
    flags: Arc<[u64]>,
}

impl Read for PatchedRead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if !self.flags.is_empty() {
            patch(&self.flags, self.pos, &mut buf[..n]);
        }
        self.pos += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_false_flags_in_range_change() {
        let mut buf = vec![0x12u8, 0x72, 0x15, 0x72];
        patch(&[1, 2, 3, 9], 0, &mut buf);
        // 0x72: field delta 7, false -> true; 0x15 is an i32 field, kept.
        assert_eq!(buf, vec![0x12, 0x71, 0x15, 0x71]);
        let mut tail = vec![0x72u8, 0x72];
        patch(&[1, 2, 3, 9], 3, &mut tail);
        assert_eq!(tail, vec![0x71, 0x72]);
    }
}
