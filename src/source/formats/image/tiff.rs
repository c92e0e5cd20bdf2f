//! TIFF through the `tiff` crate, first image only (what `Image.open`
//! gives). Pillow's modes: 1-bit gray `1`, 8-bit `L`, uint16 `I;16`,
//! int16 `I;16S`, int32 `I`, float32 `F` (float64 is narrowed to float32,
//! as Pillow's `F;64F` raw mode does), palette `P` (indices; the colour map
//! scaled to 8 bits by `// 256` as Pillow does), 8-bit RGB/RGBA/LA.
//! WhiteIsZero gray is inverted by the crate as Pillow's `;I` raw modes do.

use std::io::Cursor;

use tiff::ColorType;
use tiff::decoder::{Decoder, DecodingResult, Limits};
use tiff::tags::Tag;

use super::{Image, Kind, Mode, Samples, check_size};

pub(super) fn decode(bytes: &[u8]) -> Result<Image, String> {
    let err = |e: tiff::TiffError| format!("TIFF: {e}");
    let mut limits = Limits::default();
    // One image's decoded samples at most as large as Pillow would load.
    limits.decoding_buffer_size = (super::MAX_PIXELS * 4) as usize;
    let mut d = Decoder::new(Cursor::new(bytes)).map_err(err)?.with_limits(limits);
    let (w, h) = d.dimensions().map_err(err)?;
    check_size(w.into(), h.into())?;
    let (width, height) = (w as usize, h as usize);
    let color = d.colortype().map_err(err)?;
    let palette = match color {
        ColorType::Palette(_) => {
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
        }
        _ => Vec::new(),
    };
    let data = d.read_image().map_err(err)?;
    let unsupported = || format!("TIFF: {color:?} images with these samples are not read (Pillow's modes only)");
    let (mode, samples) = match (color, data) {
        (ColorType::Gray(1), DecodingResult::U8(v)) => (Mode::One, Samples::U8(unpack_bits(&v, width, height))),
        (ColorType::Gray(8), DecodingResult::U8(v)) => (Mode::L, Samples::U8(v)),
        (ColorType::Palette(8), DecodingResult::U8(v)) => (Mode::P, Samples::U8(v)),
        (ColorType::Gray(16), DecodingResult::U16(v)) => (Mode::I16, Samples::U16(v)),
        (ColorType::Gray(16), DecodingResult::I16(v)) => (Mode::I16S, Samples::I16(v)),
        (ColorType::Gray(32), DecodingResult::I32(v)) => (Mode::I32, Samples::I32(v)),
        (ColorType::Gray(32), DecodingResult::F32(v)) => (Mode::F32, Samples::F32(v)),
        (ColorType::Gray(64), DecodingResult::F64(v)) => {
            (Mode::F32, Samples::F32(v.into_iter().map(|x| x as f32).collect()))
        }
        (ColorType::GrayA(8), DecodingResult::U8(v)) => (Mode::LA, Samples::U8(v)),
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

/// 1-bit rows (each padded to a byte, most significant bit first) as 0/1.
fn unpack_bits(buf: &[u8], width: usize, height: usize) -> Vec<u8> {
    let line = width.div_ceil(8);
    let mut out = Vec::with_capacity(width * height);
    for row in buf.chunks(line.max(1)).take(height) {
        for x in 0..width {
            let byte = row.get(x / 8).copied().unwrap_or(0);
            out.push((byte >> (7 - x % 8)) & 1);
        }
    }
    out
}
