//! TIFF (and BigTIFF) through the `tiff` crate, first image only (what
//! `Image.open` gives), in Pillow 13's modes (its `OPEN_INFO` table): 1-bit
//! gray `1`, 2/4-bit gray `L` scaled by 85/17, 8-bit `L` (int8 too, as its
//! unsigned bytes), uint16 `I;16`, int16/int32 `I`, little-endian uint32
//! `I` (wrapping), float32 `F`, palette `P` at 1/2/4/8 bits (indices; the
//! colour map scaled to 8 bits by `// 256` as Pillow does), 8-bit
//! RGB/RGBA, and gray with one extra sample: `L` when it is unspecified
//! (Pillow's `LX`), `LA` for alpha. WhiteIsZero is inverted up to 8 bits (Pillow's `;I` raw
//! modes) and not beyond. What Pillow has no mode for (float64, int64,
//! big-endian uint32) is an error: the loader cannot open it.
//!
//! LZMA compression (34925, libtiff's xz streams: a delta filter, then
//! LZMA2), which Pillow reads through libtiff and the `tiff` crate has no
//! codec for, is undone before the crate sees the file ([`unlzma`]): each
//! strip or tile is decompressed by `lzma-rust2` (pure Rust; the wheel is
//! cross-built with zig, so no liblzma) and the file rewritten as an
//! uncompressed one, so every other tag is read as for any TIFF.

use std::io::Cursor;

use tiff::ColorType;
use tiff::decoder::{Decoder, DecodingResult, Limits};
use tiff::tags::Tag;

use super::{Image, Kind, Mode, Samples, check_size};

/// The first image directory's tags that decide Pillow's mode, read by
/// hand: the `tiff` crate refuses palette images outright and inverts
/// WhiteIsZero samples of every depth, where Pillow inverts only up to 8
/// bits.
struct Head {
    little: bool,
    /// PhotometricInterpretation, with where its value lies in the file.
    photometric: Option<(u16, usize)>,
    bits: u16,
    samples: u16,
    format: u16,
    /// PlanarConfiguration: 1 chunky, 2 planar.
    planar: u16,
}

fn head(b: &[u8]) -> Option<Head> {
    let little = b.get(..2)? == b"II";
    let u16_at = |at: usize| -> Option<u16> {
        let x: [u8; 2] = b.get(at..at.checked_add(2)?)?.try_into().ok()?;
        Some(if little {
            u16::from_le_bytes(x)
        } else {
            u16::from_be_bytes(x)
        })
    };
    let u32_at = |at: usize| -> Option<u32> {
        let x: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if little {
            u32::from_le_bytes(x)
        } else {
            u32::from_be_bytes(x)
        })
    };
    let u64_at = |at: usize| -> Option<u64> {
        let x: [u8; 8] = b.get(at..at.checked_add(8)?)?.try_into().ok()?;
        Some(if little {
            u64::from_le_bytes(x)
        } else {
            u64::from_be_bytes(x)
        })
    };
    let big = u16_at(2)? == 43;
    let (ifd, count, entry, inline) = if big {
        let ifd = usize::try_from(u64_at(8)?).ok()?;
        (ifd, usize::try_from(u64_at(ifd)?).ok()?, 20, 8)
    } else {
        let ifd = u32_at(4)? as usize;
        (ifd, usize::from(u16_at(ifd)?), 12, 4)
    };
    let first = ifd.checked_add(if big { 8 } else { 2 })?;
    let mut h = Head {
        little,
        photometric: None,
        bits: 1,
        samples: 1,
        format: 1,
        planar: 1,
    };
    for i in 0..count.min(4096) {
        let e = first.checked_add(i * entry)?;
        let tag = u16_at(e)?;
        let typ = u16_at(e + 2)?;
        let n = if big { u64_at(e + 4)? } else { u64::from(u32_at(e + 4)?) };
        let size: u64 = match typ {
            3 => 2,
            4 => 4,
            _ => continue,
        };
        let field = e.checked_add(if big { 12 } else { 8 })?;
        let at = if n.saturating_mul(size) <= inline {
            field
        } else if big {
            usize::try_from(u64_at(field)?).ok()?
        } else {
            u32_at(field)? as usize
        };
        let value = match typ {
            3 => u16_at(at)?,
            _ => u16::try_from(u32_at(at)?).unwrap_or(u16::MAX),
        };
        match tag {
            258 => h.bits = value,
            262 if typ == 3 => h.photometric = Some((value, at)),
            277 => h.samples = value,
            339 => h.format = value,
            284 => h.planar = value,
            _ => {}
        }
    }
    Some(h)
}

/// How Pillow 13 opens a one-sample image (its `OPEN_INFO` table): `Ok`
/// with whether the PhotometricInterpretation must be rewritten to
/// BlackIsZero before the `tiff` crate reads it (palette indices; WhiteIsZero
/// samples of 16 bits or more, which Pillow does not invert), or why
/// Pillow cannot open it at all.
fn pillow_gray(h: &Head) -> Result<bool, String> {
    let photometric = h.photometric.map_or(1, |p| p.0);
    let ok = match (photometric, h.format, h.bits) {
        (3, 1, 1 | 2 | 4 | 8) => return Ok(true),
        (0, 1, 1 | 2 | 4 | 8) => return Ok(false),
        (0, 1, 16) | (0, 3, 32) => return Ok(true),
        (1, 1, 1 | 2 | 4 | 8 | 16) | (1, 2, 8 | 16 | 32) | (1, 3, 32) => true,
        // uint32 only little-endian (`I;32N`).
        (1, 1, 32) => h.little,
        _ => false,
    };
    if ok {
        return Ok(false);
    }
    let format = match h.format {
        1 => "unsigned",
        2 => "signed",
        3 => "float",
        _ => "other",
    };
    Err(format!(
        "TIFF: {}-bit {format} samples (photometric {photometric}{}): Pillow cannot open this image (no mode for it), so the loader fails on it",
        h.bits,
        if h.little { "" } else { ", big-endian" }
    ))
}

pub(super) fn decode(bytes: &[u8]) -> Result<Image, String> {
    let unpacked = unlzma(bytes)?;
    let bytes = unpacked.as_deref().unwrap_or(bytes);
    let err = |e: tiff::TiffError| format!("TIFF: {e}");
    let h = head(bytes).ok_or_else(|| "TIFF: the first image directory is cut off".to_string())?;
    let mut palette_image = false;
    let patched: Option<Vec<u8>> = if h.samples == 1 {
        palette_image = h.photometric.is_some_and(|p| p.0 == 3);
        match (pillow_gray(&h)?, h.photometric) {
            (true, Some((_, at))) => {
                let mut copy = bytes.to_vec();
                let one = if h.little {
                    1u16.to_le_bytes()
                } else {
                    1u16.to_be_bytes()
                };
                copy[at..at + 2].copy_from_slice(&one);
                Some(copy)
            }
            _ => None,
        }
    } else {
        None
    };
    let bytes = patched.as_deref().unwrap_or(bytes);
    let mut limits = Limits::default();
    // One image's decoded samples at most as large as Pillow would load.
    limits.decoding_buffer_size = (super::MAX_PIXELS * 4) as usize;
    let mut d = Decoder::new(Cursor::new(bytes)).map_err(err)?.with_limits(limits);
    let (w, ht) = d.dimensions().map_err(err)?;
    check_size(w.into(), ht.into())?;
    let (width, height) = (w as usize, ht as usize);
    let color = d.colortype().map_err(err)?;
    let palette = if palette_image {
        let map: Vec<u16> = d.get_tag_u16_vec(Tag::ColorMap).map_err(err)?;
        let n = map.len() / 3;
        (0..n)
            .map(|i| {
                [
                    (map[i] >> 8) as u8,
                    (map[n + i] >> 8) as u8,
                    (map[2 * n + i] >> 8) as u8,
                ]
            })
            .collect()
    } else {
        Vec::new()
    };
    // Pillow's `LX` / `La` / `LA`: gray with one extra sample, by its kind.
    let extra = match color {
        ColorType::Multiband {
            bit_depth: 8,
            num_samples: 2,
        } => d
            .find_tag_unsigned_vec::<u16>(Tag::ExtraSamples)
            .map_err(err)?
            .and_then(|v| v.first().copied()),
        _ => None,
    };
    // Every plane (a planar RGB image keeps each sample in a plane of its
    // own; `read_image` reads only the first), interleaved as Pillow
    // gives them.
    let mut data = DecodingResult::U8(Vec::new());
    d.read_image_to_buffer(&mut data).map_err(err)?;
    if h.planar == 2
        && h.samples > 1
        && let DecodingResult::U8(v) = &mut data
    {
        let (n, k) = (width * height, usize::from(h.samples));
        if v.len() >= n * k {
            let mut out = vec![0u8; n * k];
            for (c, plane) in v.chunks_exact(n).take(k).enumerate() {
                for (i, &x) in plane.iter().enumerate() {
                    out[i * k + c] = x;
                }
            }
            *v = out;
        }
    }
    let unsupported = || format!("TIFF: {color:?} images with these samples are not read (Pillow's modes only)");
    let (mode, samples) = match (color, data) {
        (ColorType::Gray(1), DecodingResult::U8(v)) if !palette_image => {
            (Mode::One, Samples::U8(unpack(&v, width, height, 1, 1)))
        }
        (ColorType::Gray(b @ (1 | 2 | 4)), DecodingResult::U8(v)) => {
            // Pillow: `P;n` keeps indices, `L;2`/`L;4` scale to 0..255.
            let (mode, scale) = match (palette_image, b) {
                (true, _) => (Mode::P, 1),
                (false, 2) => (Mode::L, 85),
                _ => (Mode::L, 17),
            };
            (mode, Samples::U8(unpack(&v, width, height, b, scale)))
        }
        (ColorType::Gray(8), DecodingResult::U8(v)) => (if palette_image { Mode::P } else { Mode::L }, Samples::U8(v)),
        // Pillow reads int8 samples as `L`: their bytes, unsigned.
        (ColorType::Gray(8), DecodingResult::I8(v)) => (Mode::L, Samples::U8(v.into_iter().map(|x| x as u8).collect())),
        (ColorType::Gray(16), DecodingResult::U16(v)) => (Mode::I16, Samples::U16(v)),
        (ColorType::Gray(16), DecodingResult::I16(v)) => (Mode::I16S, Samples::I16(v)),
        (ColorType::Gray(32), DecodingResult::I32(v)) => (Mode::I32, Samples::I32(v)),
        // Pillow's `I;32N`: uint32 samples as int32 (2^31 and above wrap).
        (ColorType::Gray(32), DecodingResult::U32(v)) => {
            (Mode::I32, Samples::I32(v.into_iter().map(|x| x as i32).collect()))
        }
        (ColorType::Gray(32), DecodingResult::F32(v)) => (Mode::F32, Samples::F32(v)),
        (ColorType::GrayA(8), DecodingResult::U8(v)) => (Mode::LA, Samples::U8(v)),
        (
            ColorType::Multiband {
                bit_depth: 8,
                num_samples: 2,
            },
            DecodingResult::U8(v),
        ) if extra.is_some() => match extra {
            // Unspecified: Pillow's `LX` keeps the gray sample only.
            Some(0) => (Mode::L, Samples::U8(v.chunks_exact(2).map(|p| p[0]).collect())),
            _ => (Mode::LA, Samples::U8(v)),
        },
        (ColorType::RGB(8), DecodingResult::U8(v)) => (Mode::Rgb, Samples::U8(v)),
        (ColorType::RGBA(8), DecodingResult::U8(v)) => (Mode::Rgba, Samples::U8(v)),
        _ => return Err(unsupported()),
    };
    let stored_bits = match color {
        ColorType::Gray(b) | ColorType::Palette(b) | ColorType::GrayA(b) | ColorType::RGB(b) | ColorType::RGBA(b) => b,
        _ => 8,
    };
    let expected = width * height * mode.channels();
    let len = match &samples {
        Samples::U8(v) => v.len(),
        Samples::U16(v) => v.len(),
        Samples::I16(v) => v.len(),
        Samples::I32(v) => v.len(),
        Samples::F32(v) => v.len(),
    };
    if len < expected {
        return Err(format!("TIFF: {len} samples decoded for a {width}x{height} image"));
    }
    Ok(Image {
        width,
        height,
        mode,
        samples: truncate(samples, expected),
        palette,
        kind: Kind::Tiff,
        stored_bits,
    })
}

fn truncate(s: Samples, n: usize) -> Samples {
    match s {
        Samples::U8(mut v) => {
            v.truncate(n);
            Samples::U8(v)
        }
        Samples::U16(mut v) => {
            v.truncate(n);
            Samples::U16(v)
        }
        Samples::I16(mut v) => {
            v.truncate(n);
            Samples::I16(v)
        }
        Samples::I32(mut v) => {
            v.truncate(n);
            Samples::I32(v)
        }
        Samples::F32(mut v) => {
            v.truncate(n);
            Samples::F32(v)
        }
    }
}

/// Rows of `bits`-bit samples (each row padded to a byte, most significant
/// bits first), one byte per sample, times `scale`.
fn unpack(buf: &[u8], width: usize, height: usize, bits: u8, scale: u8) -> Vec<u8> {
    let bits = usize::from(bits);
    let per_byte = 8 / bits;
    let mask = (1u8 << bits) - 1;
    let line = width.div_ceil(per_byte);
    let mut out = Vec::with_capacity(width * height);
    for row in buf.chunks(line.max(1)).take(height) {
        for x in 0..width {
            let byte = row.get(x / per_byte).copied().unwrap_or(0);
            let shift = 8 - bits * (x % per_byte + 1);
            out.push(((byte >> shift) & mask) * scale);
        }
    }
    out
}

/// libtiff's LZMA compression tag value.
const LZMA: u64 = 34925;

/// An entry of the first image directory.
struct Entry {
    tag: u16,
    /// Where the entry starts.
    at: usize,
    typ: u16,
    count: u64,
}

/// The first directory's entries, with its byte order and whether it is
/// BigTIFF.
struct Ifd {
    little: bool,
    big: bool,
    entries: Vec<Entry>,
}

impl Ifd {
    fn read(b: &[u8]) -> Option<Ifd> {
        let little = b.get(..2)? == b"II";
        let mut ifd = Ifd {
            little,
            big: false,
            entries: Vec::new(),
        };
        ifd.big = ifd.uint(b, 2, 2)? == 43;
        let (first, count, size) = if ifd.big {
            let at = usize::try_from(ifd.uint(b, 8, 8)?).ok()?;
            (at.checked_add(8)?, ifd.uint(b, at, 8)?, 20)
        } else {
            let at = usize::try_from(ifd.uint(b, 4, 4)?).ok()?;
            (at.checked_add(2)?, ifd.uint(b, at, 2)?, 12)
        };
        for i in 0..count.min(4096) as usize {
            let at = first.checked_add(i * size)?;
            let count = if ifd.big {
                ifd.uint(b, at + 4, 8)?
            } else {
                ifd.uint(b, at + 4, 4)?
            };
            ifd.entries.push(Entry {
                tag: ifd.uint(b, at, 2)? as u16,
                at,
                typ: ifd.uint(b, at + 2, 2)? as u16,
                count,
            });
        }
        Some(ifd)
    }

    /// An unsigned integer of `n` bytes at `at`.
    fn uint(&self, b: &[u8], at: usize, n: usize) -> Option<u64> {
        let bytes = b.get(at..at.checked_add(n)?)?;
        let mut v = 0u64;
        for i in 0..n {
            let byte = if self.little { bytes[n - 1 - i] } else { bytes[i] };
            v = (v << 8) | u64::from(byte);
        }
        Some(v)
    }

    /// The values of `tag` (SHORT, LONG or LONG8), if it is there.
    fn values(&self, b: &[u8], tag: u16) -> Option<Vec<u64>> {
        let e = self.entries.iter().find(|e| e.tag == tag)?;
        let size = match e.typ {
            3 => 2,
            4 => 4,
            16 => 8,
            _ => return None,
        };
        let field = e.at + if self.big { 12 } else { 8 };
        let inline = if self.big { 8 } else { 4 };
        let at = if e.count.saturating_mul(size) <= inline {
            field
        } else {
            usize::try_from(self.uint(b, field, inline as usize)?).ok()?
        };
        // No more values than the file has bytes for.
        let n = usize::try_from(e.count)
            .ok()
            .filter(|&n| n.saturating_mul(size as usize) <= b.len())?;
        (0..n)
            .map(|i| self.uint(b, at + i * size as usize, size as usize))
            .collect()
    }

    fn one(&self, b: &[u8], tag: u16) -> Option<u64> {
        self.values(b, tag).and_then(|v| v.first().copied())
    }

    /// `v` as `n` bytes in the file's order.
    fn put(&self, v: u64, n: usize) -> Vec<u8> {
        let be = &v.to_be_bytes()[8 - n..];
        if self.little {
            be.iter().rev().copied().collect()
        } else {
            be.to_vec()
        }
    }

    /// Rewrites entry `tag` to hold `values` as SHORT (`short`) or LONG
    /// (LONG8 in BigTIFF), inline or appended to `out`.
    fn rewrite(&self, out: &mut Vec<u8>, tag: u16, values: &[u64], short: bool) -> Result<(), String> {
        let e = self
            .entries
            .iter()
            .find(|e| e.tag == tag)
            .ok_or_else(|| format!("TIFF: tag {tag} is missing"))?;
        let inline = if self.big { 8 } else { 4 };
        let (typ, size) = match (short, self.big) {
            (true, _) => (3u64, 2),
            (false, true) => (16, 8),
            (false, false) => (4, 4),
        };
        let mut data = Vec::with_capacity(values.len() * size);
        for &v in values {
            if !self.big && v > u64::from(u32::MAX) {
                return Err("TIFF: more than 4 GiB once decompressed".into());
            }
            data.extend(self.put(v, size));
        }
        let field = if data.len() <= inline {
            data.resize(inline, 0);
            data
        } else {
            let at = out.len() as u64;
            out.extend(&data);
            self.put(at, inline)
        };
        let mut entry = self.put(typ, 2);
        entry.extend(self.put(values.len() as u64, if self.big { 8 } else { 4 }));
        entry.extend(field);
        out[e.at + 2..e.at + 2 + entry.len()].copy_from_slice(&entry);
        Ok(())
    }
}

/// An LZMA-compressed TIFF rewritten uncompressed (`None` for any other):
/// each strip or tile is decompressed to at most the bytes libtiff reads
/// for it, those appended to the file, the offsets, byte counts and
/// compression of the first directory pointed at them. A strip whose
/// stream ends before its rows is the file's error, as libtiff's
/// `LZMADecode` fails on it ("Not enough data").
fn unlzma(b: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let Some(ifd) = Ifd::read(b) else { return Ok(None) };
    if ifd.one(b, 259) != Some(LZMA) {
        return Ok(None);
    }
    let missing = |what: &str| format!("TIFF: an LZMA image without {what}");
    let width = ifd.one(b, 256).ok_or_else(|| missing("a width"))?;
    let height = ifd.one(b, 257).ok_or_else(|| missing("a height"))?;
    check_size(width, height)?;
    let bits = ifd.one(b, 258).unwrap_or(1);
    let samples = ifd.one(b, 277).unwrap_or(1);
    let chunk_samples = if ifd.one(b, 284) == Some(2) { 1 } else { samples };
    let tiled = ifd.entries.iter().any(|e| e.tag == 324);
    let (offsets_tag, counts_tag) = if tiled { (324, 325) } else { (273, 279) };
    let offsets = ifd.values(b, offsets_tag).ok_or_else(|| missing("strip offsets"))?;
    let counts = ifd.values(b, counts_tag).ok_or_else(|| missing("strip byte counts"))?;
    let row_bytes = |w: u64| (w.saturating_mul(bits).saturating_mul(chunk_samples)).div_ceil(8);
    // Bytes libtiff reads for one strip or tile: a strip's last rows may
    // be fewer.
    let (rows_per, per_row, full_rows) = if tiled {
        let tw = ifd.one(b, 322).ok_or_else(|| missing("a tile width"))?;
        let th = ifd.one(b, 323).ok_or_else(|| missing("a tile length"))?;
        (th, row_bytes(tw), None)
    } else {
        let rps = ifd.one(b, 278).unwrap_or(u64::from(u32::MAX)).clamp(1, height.max(1));
        (rps, row_bytes(width), Some(height))
    };
    let strips_per_plane = full_rows.map(|h| h.div_ceil(rows_per).max(1));
    if offsets.len() != counts.len() {
        return Err(format!(
            "TIFF: {} strip offsets but {} byte counts",
            offsets.len(),
            counts.len()
        ));
    }
    // Memory: as much as the decoder below may hold.
    let mut budget: u64 = super::MAX_PIXELS * 4;
    let mut out = b.to_vec();
    let mut new_offsets = Vec::with_capacity(offsets.len());
    let mut new_counts = Vec::with_capacity(offsets.len());
    for (i, (&off, &len)) in offsets.iter().zip(&counts).enumerate() {
        let rows = match (full_rows, strips_per_plane) {
            (Some(h), Some(n)) => rows_per.min(h.saturating_sub((i as u64 % n) * rows_per)),
            _ => rows_per,
        };
        let want = rows.saturating_mul(per_row);
        budget = budget
            .checked_sub(want)
            .ok_or_else(|| "TIFF: the LZMA strips decompress to more than an image of this size holds".to_string())?;
        let data = usize::try_from(off)
            .ok()
            .zip(usize::try_from(len).ok())
            .and_then(|(o, n)| b.get(o..o.checked_add(n)?))
            .ok_or_else(|| format!("TIFF: LZMA strip {i} lies past the end of the file"))?;
        // libtiff's decoder memory: a dictionary of preset 9 is 64 MiB.
        let mut xz = lzma_rust2::XzReader::new_mem_limit(data, false, 256 << 10);
        let mut chunk = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(&mut xz, want), &mut chunk).map_err(|e| {
            match e.kind() {
                std::io::ErrorKind::UnexpectedEof => {
                    format!("TIFF: LZMA strip {i} is cut short (libtiff: Not enough data)")
                }
                _ => format!("TIFF: LZMA strip {i}: {e}"),
            }
        })?;
        if (chunk.len() as u64) < want {
            return Err(format!(
                "TIFF: LZMA strip {i} holds {} of its {want} bytes (libtiff: Not enough data)",
                chunk.len()
            ));
        }
        new_offsets.push(out.len() as u64);
        new_counts.push(want);
        out.extend(chunk);
    }
    ifd.rewrite(&mut out, offsets_tag, &new_offsets, false)?;
    ifd.rewrite(&mut out, counts_tag, &new_counts, false)?;
    ifd.rewrite(&mut out, 259, &[1], true)?;
    Ok(Some(out))
}
