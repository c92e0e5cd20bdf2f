//! Readers that hop over most of a file's bytes (a tar shard's headers
//! between unread images, a large record's keys between its values): the
//! two shapes such a reader takes, each local or remote as storage decides.
//!
//! A local file is read by position, so skipped bytes cost nothing. An
//! object cannot skip for free: a request per hop costs more than the bytes
//! it skips, so a part is fetched in one request ([`Window`]) and a whole
//! object is streamed, skipped bytes read and dropped ([`Hops`]).

use std::io::{self, BufReader, Cursor, Read, Seek, SeekFrom};

use bytes::Bytes;

use super::PosReader;
use super::remote::Stream;

/// A reader of a local file or of an object, read and sought alike: the
/// one shape of [`Window`], [`Hops`] and [`super::Seekable`].
pub(crate) enum Either<L, R> {
    Local(L),
    Remote(R),
}

/// A part of a file, its positions counted from the part's start: a local
/// file read by position, or an object's part fetched whole.
pub(crate) type Window = Either<PosReader, Cursor<Bytes>>;

/// A whole file read from its start by a reader that seeks forward only:
/// a local file read by position, or an object streamed in order.
pub(crate) type Hops = Either<PosReader, Forward<BufReader<Stream>>>;

impl<L: Read, R: Read> Read for Either<L, R> {
    fn read(&mut self, dst: &mut [u8]) -> io::Result<usize> {
        match self {
            Either::Local(r) => r.read(dst),
            Either::Remote(r) => r.read(dst),
        }
    }
}

impl<L: Seek, R: Seek> Seek for Either<L, R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        match self {
            Either::Local(r) => r.seek(to),
            Either::Remote(r) => r.seek(to),
        }
    }
}

/// A stream that seeks forward by reading on, and past its end as a file
/// does (later reads find the end): a streamed object is walked as a local
/// file is, with the same verdicts on a cut-short one.
pub(crate) struct Forward<R> {
    inner: R,
    pos: u64,
}

impl<R> Forward<R> {
    pub(crate) fn new(inner: R) -> Forward<R> {
        Forward { inner, pos: 0 }
    }
}

impl<R: Read> Read for Forward<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: Read> Seek for Forward<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(_) => None,
        };
        match target {
            Some(t) if t >= self.pos => {
                io::copy(&mut (&mut self.inner).take(t - self.pos), &mut io::sink())?;
                self.pos = t;
                Ok(t)
            }
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a streamed file seeks forward only",
            )),
        }
    }
}
