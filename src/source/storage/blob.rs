//! A file's bytes as a reader reaches them by position: a local file (read
//! with `pread`, as before), or the byte ranges of a remote object fetched
//! ahead of the read (see [`super::remote`]).
//!
//! A reader written against [`Blob`] runs unchanged over both: it asks for
//! bytes at an offset, and a remote read has fetched the ranges it will ask
//! for (the Parquet footer, a row group's column chunks) in a few coalesced
//! requests before it starts. Asking for bytes that were not fetched is an
//! error, never a silent extra request: the ranges a read costs are decided
//! once, where they are fetched.

use std::fs::File;
use std::io::{self, Read};
use std::sync::Arc;

use bytes::Bytes;
use parquet::file::reader::{ChunkReader, Length};

/// Byte ranges of an object of `len` bytes, fetched: `(offset, bytes)`
/// sorted by offset, not overlapping.
#[derive(Debug, Default)]
pub(crate) struct Fetched {
    len: u64,
    parts: Vec<(u64, Bytes)>,
}

impl Fetched {
    /// No bytes yet of an object of `len` bytes.
    pub(crate) fn new(len: u64) -> Fetched {
        Fetched { len, parts: Vec::new() }
    }

    /// Adds the bytes fetched at `at` (kept sorted; an overlap keeps both,
    /// and a read takes the first part holding its start).
    pub(crate) fn add(&mut self, at: u64, bytes: Bytes) {
        let i = self.parts.partition_point(|(o, _)| *o <= at);
        self.parts.insert(i, (at, bytes));
    }

    /// The part holding offset `pos` and where `pos` lies in it.
    fn part(&self, pos: u64) -> Option<(&Bytes, usize)> {
        let i = self.parts.partition_point(|(o, _)| *o <= pos);
        self.parts[..i]
            .iter()
            .rev()
            .find(|(o, b)| pos < o + b.len() as u64)
            .map(|(o, b)| (b, (pos - o) as usize))
    }

    fn read_at(&self, dst: &mut [u8], pos: u64) -> io::Result<usize> {
        if pos >= self.len || dst.is_empty() {
            return Ok(0);
        }
        let (bytes, from) = self.part(pos).ok_or_else(|| unfetched(pos))?;
        let n = dst.len().min(bytes.len() - from);
        dst[..n].copy_from_slice(&bytes[from..from + n]);
        Ok(n)
    }
}

/// Bytes a reader asked for that the read did not fetch: the file's own
/// offsets point outside what its metadata said the read needs.
fn unfetched(pos: u64) -> io::Error {
    io::Error::other(format!(
        "byte {pos} lies outside the ranges the file's metadata says this read needs"
    ))
}

/// A file's bytes, local or fetched.
#[derive(Debug, Clone)]
pub(crate) enum Blob {
    /// A local file.
    File(Arc<File>),
    /// Ranges of a remote object, fetched.
    Fetched(Arc<Fetched>),
}

impl Blob {
    /// A local file.
    pub(crate) fn file(file: File) -> Blob {
        Blob::File(Arc::new(file))
    }

    /// The local file at `path`, opened.
    pub(crate) fn open(path: &std::path::Path) -> io::Result<Blob> {
        File::open(path).map(Blob::file)
    }

    /// The file's length in bytes.
    pub(crate) fn size(&self) -> io::Result<u64> {
        match self {
            Blob::File(f) => Ok(f.metadata()?.len()),
            Blob::Fetched(f) => Ok(f.len),
        }
    }

    /// One positioned read: fewer bytes than asked only at the end of the
    /// file or of a local read.
    pub(crate) fn read_at(&self, dst: &mut [u8], pos: u64) -> io::Result<usize> {
        match self {
            Blob::File(f) => super::positioned::read_at(f, dst, pos),
            Blob::Fetched(f) => f.read_at(dst, pos),
        }
    }

    /// Reads into `dst` from offset `pos` as far as the bytes run on: to
    /// the end of `dst`, of the file, or of a fetched part (a walk over
    /// pages fetched a prefix at a time reads a header window without
    /// running into the gap behind it). Fails only when `pos` itself is not
    /// there.
    pub(crate) fn read_upto(&self, dst: &mut [u8], pos: u64) -> io::Result<usize> {
        let mut got = 0;
        while got < dst.len() {
            match self.read_at(&mut dst[got..], pos + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(_) if got > 0 && matches!(self, Blob::Fetched(_)) => break,
                Err(e) => return Err(e),
            }
        }
        Ok(got)
    }

    /// Fills `dst` from offset `pos`, or fails.
    pub(crate) fn read_exact_at(&self, mut dst: &mut [u8], mut pos: u64) -> io::Result<()> {
        while !dst.is_empty() {
            match self.read_at(dst, pos)? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => {
                    dst = &mut dst[n..];
                    pos += n as u64;
                }
            }
        }
        Ok(())
    }
}

/// A `Read` over a [`Blob`] from an offset.
pub(crate) struct BlobRead {
    blob: Blob,
    pos: u64,
}

impl Read for BlobRead {
    fn read(&mut self, dst: &mut [u8]) -> io::Result<usize> {
        let n = self.blob.read_at(dst, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Length for Blob {
    fn len(&self) -> u64 {
        self.size().unwrap_or(0)
    }
}

impl ChunkReader for Blob {
    type T = io::BufReader<BlobRead>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(io::BufReader::new(BlobRead {
            blob: self.clone(),
            pos: start,
        }))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        // A fetched range holding the whole request is shared, not copied.
        if let Blob::Fetched(f) = self
            && let Some((bytes, from)) = f.part(start)
            && bytes.len() - from >= length
        {
            return Ok(bytes.slice(from..from + length));
        }
        let mut buf = vec![0; length];
        self.read_exact_at(&mut buf, start)?;
        Ok(buf.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetched_parts_read_and_refuse_the_rest() {
        let mut f = Fetched::new(100);
        f.add(90, Bytes::from_static(b"0123456789"));
        f.add(10, Bytes::from_static(b"abcdef"));
        let blob = Blob::Fetched(Arc::new(f));
        let mut buf = [0u8; 4];
        blob.read_exact_at(&mut buf, 12).unwrap();
        assert_eq!(&buf, b"cdef");
        assert_eq!(blob.read_at(&mut buf, 98).unwrap(), 2);
        assert_eq!(blob.read_at(&mut buf, 100).unwrap(), 0);
        assert!(blob.read_exact_at(&mut buf, 14).is_err(), "runs past a fetched part");
        assert!(blob.read_at(&mut buf, 50).is_err(), "never fetched");
        assert_eq!(&blob.get_bytes(91, 3).unwrap()[..], b"123");
        assert_eq!(blob.len(), 100);
        let mut buf = [0u8; 8];
        assert_eq!(blob.read_upto(&mut buf, 12).unwrap(), 4, "stops at the gap");
        assert_eq!(&buf[..4], b"cdef");
        assert!(blob.read_upto(&mut buf, 50).is_err());
    }
}
