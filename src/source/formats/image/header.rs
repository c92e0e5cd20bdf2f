//! An image's width and height from its header only, as Pillow's
//! `Image.open(f).size` gives them (no EXIF rotation, no pixel decoded):
//! what `pair_with` compares a mask with. The file is read through a
//! buffered reader, so only the header's bytes are read.
//!
//! PNG, TIFF, JPEG and WebP go through the same maintained crates that
//! decode masks (their header readers: `png`'s `read_info`, `tiff`'s first
//! IFD, libjpeg's `jpeg_read_header`, `image-webp`'s canvas size). BMP
//! and GIF are hand-written: their sizes are fixed fields in the first 26
//! bytes (BMP: width and |height| of the info header, Pillow's
//! `BmpImagePlugin`; GIF: the logical screen, Pillow's `GifImagePlugin`),
//! not worth a decoder dependency; Netpbm's are its first text tokens. An image of more than
//! [`super::MAX_PIXELS`] pixels is an error, as Pillow's `Image.open`
//! raises `DecompressionBombError` on it.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::{Kind, check_size};

/// The (width, height) Pillow gives the image file at `path`.
pub(crate) fn size_of_file(path: &Path) -> Result<(u64, u64), String> {
    header_of_file(path).map(|h| h.size)
}

/// What pairing needs of an image's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// (width, height) as Pillow's `Image.size`.
    pub size: (u64, u64),
    /// A JPEG's EXIF orientation (1..8; 1 when absent): 5 to 8 swap width
    /// and height for readers that apply it (OpenCV's `IMREAD_COLOR`).
    pub orientation: u16,
}

/// Bytes of an object's start fetched for its header: a JPEG's EXIF block
/// and frame header lie within them in practice.
const OBJECT_HEAD: u64 = 256 << 10;

/// The header of the image file (or object) at `path`.
pub(crate) fn header_of_file(path: &Path) -> Result<Header, String> {
    crate::source::storage::parse_start(path, OBJECT_HEAD, |r| header_of(r)).map_err(|e| e.to_string())?
}

/// The header of the image `r` holds.
pub(crate) fn header_of<R: std::io::BufRead + Seek>(mut r: R) -> Result<Header, String> {
    let mut head = [0u8; 26];
    let n = read_up_to(&mut r, &mut head).map_err(|e| e.to_string())?;
    let head = &head[..n];
    r.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
    let mut orientation = 1;
    let (w, h) = {
        match Kind::sniff(head) {
            Some(Kind::Gif) => {
                let short = || "GIF: the header is truncated".to_string();
                let w = u16_at(head, 6).ok_or_else(short)?;
                let h = u16_at(head, 8).ok_or_else(short)?;
                (u64::from(w), u64::from(h))
            }
            Some(Kind::Pnm) => {
                // Width and height are the first tokens (comments allowed).
                let mut text = Vec::new();
                std::io::Read::read_to_end(&mut r.take(4096), &mut text).map_err(|e| e.to_string())?;
                super::pnm::size(&text)?
            }
            Some(Kind::Png) => png(r)?,
            Some(Kind::Tiff) => tiff(r)?,
            Some(Kind::Jpeg) => {
                let (size, o) = jpeg(r)?;
                orientation = o;
                size
            }
            Some(Kind::WebP) => webp(r)?,
            Some(Kind::Bmp) => bmp(head)?,
            None => return Err(format!("{}: bad magic", super::NOT_AN_IMAGE)),
        }
    };
    check_size(w, h)?;
    Ok(Header {
        size: (w, h),
        orientation,
    })
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn png<R: std::io::BufRead + Seek>(r: R) -> Result<(u64, u64), String> {
    // Chunks before the image data (text, ICC profiles) stay bounded.
    let mut d = ::png::Decoder::new_with_limits(r, ::png::Limits { bytes: 64 << 20 });
    d.set_transformations(::png::Transformations::IDENTITY);
    let reader = d.read_info().map_err(|e| format!("PNG: {e}"))?;
    let info = reader.info();
    Ok((info.width.into(), info.height.into()))
}

fn tiff<R: Read + Seek>(r: R) -> Result<(u64, u64), String> {
    let err = |e: ::tiff::TiffError| format!("TIFF: {e}");
    let mut d = ::tiff::decoder::Decoder::new(r).map_err(err)?;
    let (w, h) = d.dimensions().map_err(err)?;
    Ok((w.into(), h.into()))
}

fn jpeg<R: std::io::BufRead + Seek>(mut r: R) -> Result<((u64, u64), u16), String> {
    // libjpeg reads the header from the bytes so far; it asks for more
    // (a large EXIF block) by suspending, and the file is read further.
    let mut bytes = Vec::new();
    let mut want = 64 << 10;
    loop {
        let more = (&mut r)
            .take(want as u64)
            .read_to_end(&mut bytes)
            .map_err(|e| e.to_string())?;
        match super::jpeg::header(&bytes)? {
            Some((size, exif)) => {
                let orientation = exif.as_deref().and_then(exif_orientation).unwrap_or(1);
                return Ok((size, orientation));
            }
            None if more < want => {
                return Err("JPEG: the file ends before its first scan: Pillow raises on it".into());
            }
            None => want = bytes.len(),
        }
    }
}

/// The Orientation tag (0x0112) of IFD0 of EXIF data (a TIFF structure),
/// if it is there and 1..8. Hand-written: one tag of one IFD, bounded by
/// the slice.
fn exif_orientation(e: &[u8]) -> Option<u16> {
    let big = match e.get(..4)? {
        b"MM\0*" => true,
        b"II*\0" => false,
        _ => return None,
    };
    let u16_at = |at: usize| -> Option<u16> {
        let b: [u8; 2] = e.get(at..at.checked_add(2)?)?.try_into().ok()?;
        Some(if big {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        })
    };
    let u32_at = |at: usize| -> Option<u32> {
        let b: [u8; 4] = e.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    };
    let ifd = u32_at(4)? as usize;
    let count = usize::from(u16_at(ifd)?);
    (0..count).find_map(|i| {
        let entry = ifd.checked_add(2 + 12 * i)?;
        // Tag 0x0112, type SHORT (3): the value sits in the entry.
        (u16_at(entry)? == 0x0112 && u16_at(entry + 2)? == 3)
            .then(|| u16_at(entry + 8))
            .flatten()
            .filter(|o| (1..=8).contains(o))
    })
}

fn webp<R: std::io::BufRead + Seek>(r: R) -> Result<(u64, u64), String> {
    let d = image_webp::WebPDecoder::new(r).map_err(|e| format!("WebP: {e}"))?;
    let (w, h) = d.dimensions();
    Ok((w.into(), h.into()))
}

fn bmp(head: &[u8]) -> Result<(u64, u64), String> {
    let short = || "BMP: the header is truncated".to_string();
    let header = u32_at(head, 14).ok_or_else(short)?;
    if header == 12 {
        let w = u16_at(head, 18).ok_or_else(short)?;
        let h = u16_at(head, 20).ok_or_else(short)?;
        return Ok((w.into(), h.into()));
    }
    if header < 40 {
        return Err(format!("BMP: a {header}-byte header is not a bitmap header"));
    }
    let w = u32_at(head, 18).ok_or_else(short)? as i32;
    let h = u32_at(head, 22).ok_or_else(short)? as i32;
    if w <= 0 {
        return Err(format!("BMP: width {w}"));
    }
    // A negative height is a top-down bitmap of |height| rows.
    Ok((u64::from(w.unsigned_abs()), u64::from(h.unsigned_abs())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn size(b: &[u8]) -> Result<(u64, u64), String> {
        header_of(Cursor::new(b)).map(|h| h.size)
    }

    #[test]
    fn fixed_field_headers() {
        let mut gif = b"GIF89a".to_vec();
        gif.extend_from_slice(&[0x02, 0x01, 0x03, 0x00]);
        assert_eq!(size(&gif), Ok((258, 3)));
        assert!(size(&gif[..8]).unwrap_err().contains("truncated"));
        let mut bmp = vec![0u8; 26];
        bmp[..2].copy_from_slice(b"BM");
        bmp[14..18].copy_from_slice(&40u32.to_le_bytes());
        bmp[18..22].copy_from_slice(&7i32.to_le_bytes());
        bmp[22..26].copy_from_slice(&(-5i32).to_le_bytes());
        assert_eq!(size(&bmp), Ok((7, 5)));
        bmp[18..22].copy_from_slice(&100_000i32.to_le_bytes());
        bmp[22..26].copy_from_slice(&100_000i32.to_le_bytes());
        assert!(size(&bmp).unwrap_err().contains("decompression bomb"));
        assert!(size(b"").unwrap_err().contains("bad magic"));
    }

    #[test]
    fn a_jpegs_exif_orientation() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/file");
        // Pillow wrote it: 10x6, orientation 6.
        let bytes = std::fs::read(dir.join("gen-image-exif.jpg")).unwrap();
        let h = header_of(Cursor::new(&bytes[1..])).unwrap();
        assert_eq!(
            h,
            Header {
                size: (10, 6),
                orientation: 6
            }
        );
        let bytes = std::fs::read(dir.join("gen-image-l.jpg")).unwrap();
        assert_eq!(header_of(Cursor::new(&bytes[1..])).unwrap().orientation, 1);
        let mut ifd = b"MM\0*\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01\0\x08\0\0".to_vec();
        assert_eq!(exif_orientation(&ifd), Some(8));
        ifd[19] = 9;
        assert_eq!(exif_orientation(&ifd), None);
        assert_eq!(exif_orientation(&ifd[..12]), None);
        assert_eq!(exif_orientation(b"II*\0\xff\xff\xff\xff"), None);
    }

    /// Truncations and bit flips of the image seeds: a size or an error,
    /// never a panic; and the full seed's size is its decoded size.
    #[test]
    fn mutated_headers_never_panic() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/file");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if !path.file_name().unwrap().to_string_lossy().starts_with("gen-image-") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap()[1..].to_vec();
            if let Ok(img) = super::super::decode(&bytes) {
                assert_eq!(
                    size(&bytes),
                    Ok((img.width as u64, img.height as u64)),
                    "{}",
                    path.display()
                );
                seen += 1;
            }
            let mut inputs: Vec<Vec<u8>> = (0..bytes.len().min(400)).map(|n| bytes[..n].to_vec()).collect();
            for i in 0..bytes.len().min(400) {
                let mut b = bytes.clone();
                b[i] ^= 0x5a;
                inputs.push(b);
            }
            for input in inputs {
                let r = std::panic::catch_unwind(|| size(&input));
                assert!(r.is_ok(), "{}: a mutation panicked", path.display());
            }
        }
        assert!(seen >= 8);
    }
}
