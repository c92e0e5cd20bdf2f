//! Storage: how a file's bytes are reached, apart from what they mean.
//!
//! Formats ask for bytes here: a local file memory-mapped (with its pages
//! populated ahead of a scan and released behind it, so resident memory is
//! the work in flight, not the file) or read by position; or an object in
//! storage ([`remote`]), whose byte ranges are fetched ahead of a read and
//! then read by position like a file ([`Blob`]). Every format but Parquet
//! reaches its bytes through [`Input`]: ranges, the whole file, or a read
//! in order, over a local map or an object alike.

mod awsprofile;
mod blob;
mod hub;
mod input;
mod positioned;
pub mod remote;

pub(crate) use blob::{Blob, Fetched};
pub(crate) use input::Input;
pub(crate) use positioned::PosReader;

/// Whether a file is there: a local regular file, or an object a listing
/// found (else one request for its size). Readers ask it of a sidecar (a
/// Megatron `.idx`, an `index.json`) beside the file they read.
pub(crate) fn exists(path: &std::path::Path) -> bool {
    if !remote::is_url(path) {
        return path.is_file();
    }
    remote::listed_size(path).is_some() || remote::Object::open(path).and_then(|o| o.size()).is_ok()
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
