//! Storage: how a file's bytes are reached, apart from what they mean.
//!
//! Formats ask for bytes in the shape they need, and this module alone
//! tells a local file from an object ([`remote`]): `Input` (ranges, a
//! window for hopping over a part, the whole read by hops or in order),
//! `Blob` (what Parquet's reads fetched), `read_whole`, `head`,
//! `sequential`, `seekable`, `parse_start`, `in_place` and `stat`. Each
//! shape has a local strategy (a memory map scanned in place, reads by
//! position that skip for free, pages released behind a scan so resident
//! memory is the work in flight) and an object strategy (ranged requests
//! planned ahead, a part fetched in one request, a stream in order); a
//! format that wants a local fast path asks for the map and gets `None`
//! for an object.

mod awsprofile;
mod blob;
mod hub;
mod input;
mod positioned;
pub(crate) mod remote;
mod seekable;
mod window;

pub(crate) use blob::{Blob, Fetched};
pub(crate) use input::Input;
pub(crate) use positioned::PosReader;
pub(crate) use seekable::{Seekable, seekable};
pub(crate) use window::Window;

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
        return remote::Object::open(path)?.whole_within(limit)?.map_err(too_big);
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

/// A local file's map, for a reader with a fast path that scans the file
/// in place; `None` for an object (read in order instead) or an empty file.
pub(crate) fn in_place(
    path: &std::path::Path,
) -> Result<Option<std::sync::Arc<memmap2::Mmap>>, crate::error::ReadError> {
    if remote::is_url(path) {
        return Ok(None);
    }
    Ok(Input::open(path)?.map().cloned())
}

/// A reader by position with a buffer: what a parser of a file's start
/// reads through.
pub(crate) trait BufSeek: std::io::BufRead + std::io::Seek {}

impl<R: std::io::BufRead + std::io::Seek> BufSeek for R {}

/// `parse` run on a file it reads near the start of (an image's header): a
/// local file through a small buffer, by position; an object's first
/// `head` bytes fetched in one request, and the whole object only when
/// `parse` fails on them. The outer error is the file's (not there, not
/// readable), the inner one `parse`'s.
pub(crate) fn parse_start<T, E>(
    path: &std::path::Path,
    head: u64,
    parse: impl Fn(&mut dyn BufSeek) -> Result<T, E>,
) -> Result<Result<T, E>, crate::error::ReadError> {
    if !remote::is_url(path) {
        let file = std::fs::File::open(path)?;
        return Ok(parse(&mut std::io::BufReader::with_capacity(16 << 10, file)));
    }
    let input = Input::open(path)?;
    let start = input.bytes(0..input.size().min(head))?;
    match parse(&mut std::io::Cursor::new(&start[..])) {
        Err(_) if input.size() > head => {
            let all = input.all()?;
            Ok(parse(&mut std::io::Cursor::new(&all[..])))
        }
        parsed => Ok(parsed),
    }
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
