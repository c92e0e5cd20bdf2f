//! A file read by position through a small buffer, for formats that hop
//! over most of their bytes (a tar shard whose images are not read): seeks
//! cost nothing, each read that misses the buffer is one positioned read,
//! and a read larger than the buffer goes straight into the caller's memory.
//! Memory-mapping such a file instead maps (and later unmaps) pages around
//! every header touched, which costs more than the reads themselves.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;
use std::sync::Arc;

/// Bytes fetched per buffered read: a tar header and a small member's data.
const BUF: usize = 4096;

/// A `Read + Seek` over a part of a file by positioned reads (`pread`), its
/// positions counted from where the part starts (so a reader started
/// mid-file sees a stream that begins there) and ending where it ends.
pub(crate) struct PosReader {
    file: Arc<File>,
    base: u64,
    end: u64,
    pos: u64,
    buf: Box<[u8; BUF]>,
    /// File offset of `buf[0]` and how many bytes of `buf` are valid.
    buf_at: u64,
    buf_len: usize,
}

impl PosReader {
    /// Reads bytes `range` of `file`; `range.start` is its position 0.
    pub(crate) fn new(file: Arc<File>, range: Range<u64>) -> PosReader {
        PosReader {
            file,
            base: range.start,
            end: range.end.max(range.start),
            pos: range.start,
            buf: Box::new([0; BUF]),
            buf_at: 0,
            buf_len: 0,
        }
    }
}

/// One positioned read (it does not move the file's own cursor).
pub(super) fn read_at(file: &File, dst: &mut [u8], at: u64) -> io::Result<usize> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_at(file, dst, at)
    }
    #[cfg(windows)]
    {
        std::os::windows::fs::FileExt::seek_read(file, dst, at)
    }
}

impl Read for PosReader {
    fn read(&mut self, dst: &mut [u8]) -> io::Result<usize> {
        let left = self.end.saturating_sub(self.pos);
        let len = usize::try_from(left).unwrap_or(usize::MAX).min(dst.len());
        let dst = &mut dst[..len];
        if dst.is_empty() {
            return Ok(0);
        }
        let in_buf = self.pos >= self.buf_at && self.pos < self.buf_at + self.buf_len as u64;
        if !in_buf {
            if dst.len() >= BUF {
                let n = read_at(&self.file, dst, self.pos)?;
                self.pos += n as u64;
                return Ok(n);
            }
            self.buf_len = 0;
            let want = usize::try_from(left).unwrap_or(usize::MAX).min(BUF);
            self.buf_len = read_at(&self.file, &mut self.buf[..want], self.pos)?;
            self.buf_at = self.pos;
            if self.buf_len == 0 {
                return Ok(0);
            }
        }
        let from = (self.pos - self.buf_at) as usize;
        let n = dst.len().min(self.buf_len - from);
        dst[..n].copy_from_slice(&self.buf[from..from + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for PosReader {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(p) => self.base.checked_add(p),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(d) => self.end.checked_add_signed(d),
        };
        match target {
            Some(t) if t >= self.base => {
                self.pos = t;
                Ok(t - self.base)
            }
            _ => Err(io::Error::new(io::ErrorKind::InvalidInput, "seek before the start")),
        }
    }
}
