//! The members of a tar stream as Python's `tarfile` lists them to
//! `webdataset` (`tar_file_iterator`): names and regular files.
//!
//! The `tar` crate frames the archive (headers, checksums, sizes, seeking
//! past data); it runs in raw mode so that the extension headers that carry
//! long names (GNU `L`, POSIX pax `x`) are read here under a size cap — the
//! crate's own handling reads them whole, so a header claiming 2^40 bytes
//! would be read until the file ends. Names follow `tarfile`: a GNU long name
//! ends at its first NUL, a pax `path` replaces the header's name, a ustar
//! prefix is joined with `/`, and an old-style regular member whose name ends
//! in `/` is a directory. Members `tarfile` does not call regular
//! (directories, links, devices) are passed over, as `webdataset` does.

use std::io::Read;

use crate::error::ReadError;

/// Largest GNU long-name or pax extension header read (names are short;
/// pax records for one member are a few hundred bytes).
const MAX_EXTENSION: u64 = 1 << 20;

/// What the visitor wants after a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    Continue,
    Stop,
}

/// One regular member, its data unread.
pub(super) struct Member<'m, 'e, R: Read> {
    /// Its name, as `tarfile` gives it (bytes: names need not be UTF-8).
    pub name: &'m [u8],
    /// Offset of its first header (extension headers included) from where
    /// the walk started.
    pub start: u64,
    /// Its data size.
    pub size: u64,
    /// Its data, to read (or leave: the next member skips it).
    pub data: &'m mut tar::Entry<'e, R>,
}

/// Calls `visit` with every regular member of `entries`, in order, until it
/// returns [`Flow::Stop`] or the archive ends. `len` is the number of bytes
/// from the walk's start to the end of the file when the walk seeks past
/// data (a seek past the end does not fail, so a member cut short is found
/// by its size). Returns where the last entry walked ends (its data padded
/// to a 512-byte block), from the walk's start.
pub(super) fn walk<R: Read>(
    entries: tar::Entries<'_, R>,
    len: Option<u64>,
    mut visit: impl FnMut(Member<'_, '_, R>) -> Result<Flow, ReadError>,
) -> Result<u64, ReadError> {
    let mut long_name: Option<Vec<u8>> = None;
    let mut pax_path: Option<Vec<u8>> = None;
    let mut pax_size: Option<u64> = None;
    let mut first_header: Option<u64> = None;
    let mut name = Vec::new();
    // Where the next header should be, to say where a bad one is.
    let mut next = 0u64;
    for entry in entries {
        let mut entry = entry.map_err(|e| {
            let e = tar_error(e);
            // At the first header, tarfile raises too; later it just stops.
            let e = if next > 0 && e.message.contains("checksum") {
                ReadError::new(format!(
                    "{} (Python's tarfile stops at such a header without an error, so webdataset would silently \
                     drop the rest of the shard)",
                    e.message
                ))
            } else {
                e
            };
            e.at(format!("tar header at byte {next}"))
        })?;
        let at = entry.raw_header_position();
        let start = *first_header.get_or_insert(at);
        let kind = entry.header().entry_type();
        let type_byte = kind.as_byte();
        let size = entry.size();
        next = entry
            .raw_file_position()
            .saturating_add(size.saturating_add(511) & !511);
        // Python's tarfile seeks past a member's data *and* its padding to
        // the next 512-byte block, and raises "unexpected end of data" when
        // the file ends before that: a member whose padding is cut off
        // fails webdataset as surely as one whose data is.
        if let Some(len) = len
            && entry
                .raw_file_position()
                .checked_add(size)
                .and_then(|end| end.checked_add((512 - size % 512) % 512))
                .is_none_or(|end| end > len)
        {
            let what = if entry.raw_file_position().saturating_add(size) > len {
                ""
            } else {
                " (its data is there, its padding to the 512-byte block is not: Python's tarfile raises \"unexpected end of data\" on it)"
            };
            return Err(ReadError::new(format!(
                "truncated tar archive: a member of {size} bytes runs past the end of the file{what}"
            ))
            .at(format!("tar header at byte {at}")));
        }
        if kind.is_gnu_longname() || kind.is_gnu_longlink() || matches!(type_byte, b'x' | b'X' | b'g') {
            if size > MAX_EXTENSION {
                return Err(ReadError::new(format!(
                    "an extension header of {size} bytes (preflight reads at most {MAX_EXTENSION})"
                ))
                .at(format!("tar header at byte {at}")));
            }
            if kind.is_gnu_longname() {
                let mut buf = Vec::with_capacity(size as usize);
                (&mut entry).take(size).read_to_end(&mut buf).map_err(tar_error)?;
                let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
                buf.truncate(end);
                long_name = Some(buf);
            } else if matches!(type_byte, b'x' | b'X') {
                let exts = entry.pax_extensions().map_err(tar_error)?;
                for ext in exts.into_iter().flatten() {
                    let ext = ext.map_err(tar_error)?;
                    match ext.key_bytes() {
                        b"path" => pax_path = Some(ext.value_bytes().to_vec()),
                        b"size" => {
                            // The crate frames members by the header's size;
                            // a pax size (members over 8 GiB) would misframe.
                            let v = std::str::from_utf8(ext.value_bytes())
                                .ok()
                                .and_then(|v| v.parse::<u64>().ok());
                            pax_size = v;
                            if v.is_some_and(|v| v > super::MAX_MEMBER) || v.is_none() {
                                return Err(ReadError::new(format!(
                                    "a pax size of {} bytes (preflight reads members of at most {} bytes)",
                                    String::from_utf8_lossy(ext.value_bytes()),
                                    super::MAX_MEMBER
                                ))
                                .at(format!("tar header at byte {at}")));
                            }
                        }
                        _ => {}
                    }
                }
            }
            continue;
        }
        first_header = None;
        if pax_size.take().is_some_and(|p| p != size) {
            return Err(
                ReadError::new("a pax size that differs from the header's size: not read by preflight")
                    .at(format!("tar header at byte {at}")),
            );
        }
        name.clear();
        match (long_name.take(), pax_path.take()) {
            (_, Some(p)) => name.extend_from_slice(&p),
            (Some(l), None) => name.extend_from_slice(&l),
            (None, None) => name.extend_from_slice(&entry.header().path_bytes()),
        }
        // tarfile: REGTYPE, AREGTYPE (unless named like a directory),
        // CONTTYPE and GNU sparse members are regular files.
        let regular = match type_byte {
            b'0' | b'7' => true,
            0 => !name.ends_with(b"/"),
            b'S' => {
                return Err(ReadError::new("a GNU sparse member: not read by preflight")
                    .at(format!("member {}", String::from_utf8_lossy(&name))));
            }
            _ => false,
        };
        if !regular {
            continue;
        }
        let flow = visit(Member {
            name: &name,
            start,
            size,
            data: &mut entry,
        })?;
        if flow == Flow::Stop {
            return Ok(next);
        }
    }
    if let Some(at) = first_header {
        return Err(
            ReadError::new("truncated tar archive: an extension header with no member after it")
                .at(format!("tar header at byte {at}")),
        );
    }
    Ok(next)
}

/// A tar framing error in words that say what is wrong with the file.
pub(super) fn tar_error(e: std::io::Error) -> ReadError {
    let msg = e.to_string();
    if e.kind() == std::io::ErrorKind::UnexpectedEof || msg.contains("failed to fill whole buffer") {
        ReadError::new("truncated tar archive: the data ends inside a member")
    } else if msg.contains("failed to read entire block") {
        ReadError::new("truncated tar archive: the data ends inside a header")
    } else {
        ReadError::new(format!("corrupt tar archive: {msg}"))
    }
}
