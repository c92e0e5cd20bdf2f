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
