//! A data file wherever it lies, as the readers of every format other than
//! Parquet (which plans its own ranges over [`super::Blob`]) reach its
//! bytes: by range, whole, or in order.
//!
//! A local file is memory-mapped once and a range is a view of the map (no
//! copy, so the local fast paths stay what they were); an object in storage
//! answers a range with a ranged GET pinned to one version
//! ([`super::remote::Object`]). A reader written against [`Input`] therefore
//! has one copy of its logic for both, and a remote read costs the ranges
//! the reader asks for, no more: a header, then each unit's bytes when that
//! unit is checked, so memory is the units in flight, not the object.

use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use memmap2::Mmap;

use super::PosReader;
use super::remote::{self, Object};
use super::window::{Either, Forward, Hops, Window};
use crate::error::ReadError;

/// A data file: local (memory-mapped) or an object in storage.
pub(crate) enum Input {
    /// A local file and its map (`None` when the file is empty: an empty
    /// file cannot be mapped, and holds nothing).
    Local {
        path: PathBuf,
        file: Arc<File>,
        map: Option<Arc<Mmap>>,
    },
    /// An object in storage and its size.
    Remote { object: Object, size: u64 },
}

/// A part of a memory map owned by a [`Bytes`].
struct MapSlice {
    map: Arc<Mmap>,
    range: Range<usize>,
}

impl AsRef<[u8]> for MapSlice {
    fn as_ref(&self) -> &[u8] {
        &self.map[self.range.clone()]
    }
}

impl Input {
    /// Opens the file or object at `path`: a local file is mapped, an
    /// object's size is learnt (from its listing, or one request).
    pub(crate) fn open(path: &Path) -> Result<Input, ReadError> {
        if remote::is_url(path) {
            let object = Object::open(path)?;
            let size = object.size()?;
            return Ok(Input::Remote { object, size });
        }
        let file = File::open(path)?;
        let map = if file.metadata()?.len() == 0 {
            None
        } else {
            // SAFETY: the file is only read; like every mmap reader we rely
            // on it not being truncated while mapped.
            Some(Arc::new(unsafe { Mmap::map(&file)? }))
        };
        Ok(Input::Local {
            path: path.to_path_buf(),
            file: Arc::new(file),
            map,
        })
    }

    /// The file's length in bytes.
    pub(crate) fn size(&self) -> u64 {
        match self {
            Input::Local { map, .. } => map.as_ref().map_or(0, |m| m.len() as u64),
            Input::Remote { size, .. } => *size,
        }
    }

    /// Whether the file is an object in storage.
    pub(crate) fn is_remote(&self) -> bool {
        matches!(self, Input::Remote { .. })
    }

    /// The local file's map, for readers that hint the kernel about pages
    /// ([`super::populate`], [`super::release`]); `None` for an object (or
    /// an empty file).
    pub(crate) fn map(&self) -> Option<&Arc<Mmap>> {
        match self {
            Input::Local { map, .. } => map.as_ref(),
            Input::Remote { .. } => None,
        }
    }

    /// Bytes `range` of the file: a view of the map, or one ranged request.
    /// A range past the end is an error naming it.
    pub(crate) fn bytes(&self, range: Range<u64>) -> Result<Bytes, ReadError> {
        Ok(self.ranges(std::slice::from_ref(&range))?.pop().unwrap_or_default())
    }

    /// The bytes of several ranges: views of the map, or requests merged
    /// where ranges lie near each other and run several at once.
    pub(crate) fn ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>, ReadError> {
        let size = self.size();
        if let Some(r) = ranges.iter().find(|r| r.start > r.end || r.end > size) {
            return Err(ReadError::new(format!(
                "bytes {}..{} lie past the end of the file ({size} bytes)",
                r.start, r.end
            )));
        }
        match self {
            Input::Local { map, .. } => Ok(ranges
                .iter()
                .map(|r| match map {
                    Some(map) if r.start < r.end => Bytes::from_owner(MapSlice {
                        map: Arc::clone(map),
                        range: r.start as usize..r.end as usize,
                    }),
                    _ => Bytes::new(),
                })
                .collect()),
            Input::Remote { object, .. } => {
                let wanted: Vec<Range<u64>> = ranges.iter().filter(|r| r.start < r.end).cloned().collect();
                let mut got = object.ranges(&wanted)?.into_iter();
                ranges
                    .iter()
                    .map(|r| {
                        if r.start == r.end {
                            return Ok(Bytes::new());
                        }
                        let b = got.next().unwrap_or_default();
                        if b.len() as u64 != r.end - r.start {
                            return Err(ReadError::new(
                                "the object changed while it was read (a range came back short); \
                                 not checked as a mix of two versions",
                            ));
                        }
                        Ok(b)
                    })
                    .collect()
            }
        }
    }

    /// Bytes `range` for a reader that hops over most of them: the local
    /// file read by position (only what is touched), or the object's range
    /// in one request.
    pub(crate) fn window(&self, range: Range<u64>) -> Result<Window, ReadError> {
        match self {
            Input::Local { file, .. } => Ok(Either::Local(PosReader::new(
                Arc::clone(file),
                range.start..range.end.min(self.size()),
            ))),
            Input::Remote { .. } => Ok(Either::Remote(std::io::Cursor::new(self.bytes(range)?))),
        }
    }

    /// The whole file for a reader that skips ahead: the local file read by
    /// position, skipped bytes never read; the object streamed (as
    /// [`Input::reader`]), skipped bytes read and dropped.
    pub(crate) fn hops(&self) -> Result<Hops, ReadError> {
        match self {
            Input::Local { file, .. } => Ok(Either::Local(PosReader::new(Arc::clone(file), 0..self.size()))),
            Input::Remote { object, .. } => Ok(Either::Remote(Forward::new(std::io::BufReader::with_capacity(
                256 << 10,
                object.clone().stream()?,
            )))),
        }
    }

    /// The whole file: the map, or one request for the object.
    pub(crate) fn all(&self) -> Result<Bytes, ReadError> {
        self.bytes(0..self.size())
    }

    /// The file read in order from its start: the local file, or the object
    /// in ranged blocks with the next one in flight
    /// ([`super::remote::Stream`]); never staged to disk.
    pub(crate) fn reader(self) -> Result<Box<dyn Read + Send>, ReadError> {
        match self {
            Input::Local { path, .. } => Ok(Box::new(File::open(path)?)),
            Input::Remote { object, .. } => Ok(Box::new(object.stream()?)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_ranges_are_views_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        std::fs::write(&path, b"0123456789").unwrap();
        let input = Input::open(&path).unwrap();
        assert_eq!(input.size(), 10);
        assert!(!input.is_remote());
        assert_eq!(&input.bytes(2..5).unwrap()[..], b"234");
        let parts = input.ranges(&[0..1, 4..4, 9..10]).unwrap();
        assert_eq!(
            parts.iter().map(|b| b.to_vec()).collect::<Vec<_>>(),
            [b"0".to_vec(), vec![], b"9".to_vec()]
        );
        assert_eq!(&input.all().unwrap()[..], b"0123456789");
        let err = input.bytes(8..11).unwrap_err();
        assert!(err.message.contains("past the end"), "{}", err.message);
        let mut text = String::new();
        input.reader().unwrap().read_to_string(&mut text).unwrap();
        assert_eq!(text, "0123456789");

        // A window ends where its range ends; hops skip ahead.
        let input = Input::open(&path).unwrap();
        let mut window = input.window(2..5).unwrap();
        let mut text = String::new();
        window.read_to_string(&mut text).unwrap();
        assert_eq!(text, "234");
        assert_eq!(std::io::Seek::seek(&mut window, std::io::SeekFrom::End(-1)).unwrap(), 2);
        let mut last = [0u8; 4];
        assert_eq!(window.read(&mut last).unwrap(), 1);
        assert_eq!(last[0], b'4');
        let mut hops = input.hops().unwrap();
        std::io::Seek::seek(&mut hops, std::io::SeekFrom::Current(7)).unwrap();
        let mut text = String::new();
        hops.read_to_string(&mut text).unwrap();
        assert_eq!(text, "789");

        let empty = dir.path().join("empty.bin");
        std::fs::write(&empty, b"").unwrap();
        let input = Input::open(&empty).unwrap();
        assert_eq!(input.size(), 0);
        assert!(input.all().unwrap().is_empty());
        assert!(input.map().is_none());
    }
}
