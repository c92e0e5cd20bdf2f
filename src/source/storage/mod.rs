//! Storage: how a file's bytes are reached, apart from what they mean.
//!
//! Formats ask for bytes here: a local file memory-mapped (with its pages
//! populated ahead of a scan and released behind it, so resident memory is
//! the work in flight, not the file) or read by position; or an object in
//! storage ([`remote`]), whose byte ranges are fetched ahead of a read and
//! then read by position like a file (`Blob`). Formats ask for bytes in
//! the shape they need and this module alone tells a local file from an
//! object: `Input` (ranges over a local map or an object), `read_whole`
//! (a small file), `head` (its first bytes), `sequential` (a read in
//! order), `seekable` (reads by position) and `stat`. What a format still decides itself is a strategy,
//! not a location: seeking a local tar or TFRecord file in place where an
//! object is read by planned ranges.

mod awsprofile;
mod blob;
mod hub;
mod input;
mod positioned;
pub mod remote;
mod seekable;

pub(crate) use blob::{Blob, Fetched};
pub(crate) use input::Input;
pub(crate) use positioned::PosReader;
pub(crate) use seekable::{Seekable, seekable};

/// Whether a file is there: a local regular file, or an object a listing
/// found (else one request for its size). Readers ask it of a sidecar (a
/// Megatron `.idx`, an `index.json`) beside the file they read.
pub(crate) fn exists(path: &std::path::Path) -> bool {
    if !remote::is_url(path) {
        return path.is_file();
    }
    remote::listed_size(path).is_some() || remote::Object::open(path).and_then(|o| o.size()).is_ok()
}

/// The whole of a small file or object, refused past `limit` bytes
/// (`too_big` says why, given the size): a local file is read into memory
/// (no map: a map costs more than a read for a label file or a mask), an
/// object fetched in one request.
pub(crate) fn read_whole(
    path: &std::path::Path,
    limit: u64,
    too_big: impl FnOnce(u64) -> crate::error::ReadError,
) -> Result<bytes::Bytes, crate::error::ReadError> {
    if remote::is_url(path) {
        let input = Input::open(path)?;
        if input.size() > limit {
            return Err(too_big(input.size()));
        }
        return input.all();
    }
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len > limit {
        return Err(too_big(len));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    std::io::Read::read_to_end(&mut std::io::Read::take(file, limit), &mut bytes)?;
    Ok(bytes.into())
}

/// Up to the first `n` bytes of a file or object (fewer when it is
/// shorter): a read, or one ranged request.
pub(crate) fn head(path: &std::path::Path, n: usize) -> Result<Vec<u8>, crate::error::ReadError> {
    if remote::is_url(path) {
        let input = Input::open(path)?;
        return Ok(input.bytes(0..input.size().min(n as u64))?.to_vec());
    }
    let mut head = Vec::with_capacity(n);
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::fs::File::open(path)?, n as u64),
        &mut head,
    )?;
    Ok(head)
}

/// A file or object read in order from its start, buffered: a local file
/// through a 256 KiB buffer, an object in ranged blocks with the next one in
/// flight ([`Input::reader`]).
pub(crate) fn sequential(path: &std::path::Path) -> Result<Box<dyn std::io::BufRead + Send>, crate::error::ReadError> {
    let raw: Box<dyn std::io::Read + Send> = if remote::is_url(path) {
        Input::open(path)?.reader()?
    } else {
        Box::new(std::fs::File::open(path)?)
    };
    Ok(Box::new(std::io::BufReader::with_capacity(256 << 10, raw)))
}

/// A file's size and modification time (an object's size from its listing
/// or one request; objects give no time): what a cache of parsed sidecars
/// keys on.
pub(crate) fn stat(path: &std::path::Path) -> Result<(u64, Option<std::time::SystemTime>), crate::error::ReadError> {
    if remote::is_url(path) {
        return Ok((Input::open(path)?.size(), None));
    }
    let meta = std::fs::metadata(path)?;
    Ok((meta.len(), meta.modified().ok()))
}

/// Maps pages of a memory-mapped file in one call rather than a fault at a
/// time (Linux 5.14 and later; elsewhere they fault in as they are read).
pub(crate) fn populate(data: &memmap2::Mmap, start: usize, len: usize) {
    #[cfg(target_os = "linux")]
    let _ = data.advise_range(memmap2::Advice::PopulateRead, start, len);
    #[cfg(not(target_os = "linux"))]
    let _ = (data, start, len);
}

/// Lets the kernel drop mapped pages already checked, so the process's
/// resident memory stays at the work in flight rather than growing to the
/// file's size.
pub(crate) fn release(data: &memmap2::Mmap, start: usize, len: usize) {
    // SAFETY: the map is read-only and file-backed: dropped pages are read
    // again from the file if touched (an array still holding them included),
    // nothing can be lost.
    let _ = unsafe { data.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, len) };
}
