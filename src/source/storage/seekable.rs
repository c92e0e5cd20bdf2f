//! A file or object read by position, for readers that seek (a zip
//! archive's directory at its end, then its members): the local file
//! through a buffer, or an object in ranged requests of a chosen size.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use super::window::Either;
use super::{Input, remote};
use crate::error::ReadError;

/// A file or object read by position through a buffer: a local file
/// through a small one, an object in ranged requests of the block size
/// [`seekable`] was given, never staged to disk.
pub(crate) type Seekable = Either<BufReader<File>, BufReader<Ranged>>;

/// An object read by position, one ranged request per read.
pub(crate) struct Ranged {
    input: Arc<Input>,
    pos: u64,
}

impl Read for Ranged {
    fn read(&mut self, dst: &mut [u8]) -> io::Result<usize> {
        let end = self.input.size().min(self.pos.saturating_add(dst.len() as u64));
        if end <= self.pos {
            return Ok(0);
        }
        let got = self
            .input
            .bytes(self.pos..end)
            .map_err(|e| io::Error::other(e.message))?;
        dst[..got.len()].copy_from_slice(&got);
        self.pos += got.len() as u64;
        Ok(got.len())
    }
}

impl io::Seek for Ranged {
    fn seek(&mut self, to: io::SeekFrom) -> io::Result<u64> {
        let target = match to {
            io::SeekFrom::Start(p) => Some(p),
            io::SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            io::SeekFrom::End(d) => self.input.size().checked_add_signed(d),
        };
        self.pos = target.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        Ok(self.pos)
    }
}

/// Opens `path` for reading by position; an object is read in requests of
/// `block` bytes (small to read headers, large to stream).
pub(crate) fn seekable(path: &Path, block: usize) -> Result<Seekable, ReadError> {
    if remote::is_url(path) {
        let input = Arc::new(Input::open(path)?);
        return Ok(Either::Remote(BufReader::with_capacity(
            block,
            Ranged { input, pos: 0 },
        )));
    }
    Ok(Either::Local(BufReader::new(File::open(path)?)))
}
