//! Windows bitmaps, hand-written: the maintained decoders (`image`'s BMP
//! module, `zune-bmp`) expand palettes to RGB, but a palette mask's values
//! are its indices, and the format is small enough to read whole here.
//! Read as Pillow's `BmpImagePlugin` does: 1/4/8-bit palette images give
//! indices (Pillow's `P`, or `1`/`L` for a gray palette, whose values are
//! the same indices — except that Pillow reads a 4/8-bit bitmap with a
//! black/white palette as packed bits, and fails on a 4-bit one with an
//! (i, i, i) palette, both followed here), 24-bit and 32-bit (`BI_RGB`, or `BI_BITFIELDS` with
//! the standard masks) give RGB(A); rows are bottom-up unless the height
//! is negative. RLE-compressed and 16-bit bitmaps are refused with a
//! message (rare for masks). The pixel data must lie inside the file before
//! anything is allocated for it.

use super::{Image, Kind, Mode, Samples, check_size};

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

pub(super) fn decode(b: &[u8]) -> Result<Image, String> {
    let short = || "BMP: the file is truncated".to_string();
    let offset = u32_at(b, 10).ok_or_else(short)? as usize;
    let header = u32_at(b, 14).ok_or_else(short)? as usize;
    let (width, height, bpp, compression, colors, entry) = if header == 12 {
        let w = i64::from(u16_at(b, 18).ok_or_else(short)?);
        let h = i64::from(u16_at(b, 20).ok_or_else(short)?);
        (w, h, u16_at(b, 24).ok_or_else(short)?, 0, 0, 3)
    } else if header >= 40 {
        let w = i64::from(u32_at(b, 18).ok_or_else(short)? as i32);
        let h = i64::from(u32_at(b, 22).ok_or_else(short)? as i32);
        let bpp = u16_at(b, 28).ok_or_else(short)?;
        let compression = u32_at(b, 30).ok_or_else(short)?;
        let colors = u32_at(b, 46).ok_or_else(short)? as usize;
        (w, h, bpp, compression, colors, 4)
    } else {
        return Err(format!("BMP: a {header}-byte header is not a bitmap header"));
    };
    let top_down = height < 0;
    let (w, h) = (width, height.unsigned_abs() as i64);
    if w <= 0 || h == 0 {
        return Err(format!("BMP: {w}x{h} is not an image size"));
    }
    let (w, h) = (w as u64, h as u64);
    check_size(w, h)?;
    let (w, h) = (w as usize, h as usize);
    let mode = match (bpp, compression) {
        (1 | 4 | 8, 0) => Mode::P,
        (24, 0) | (32, 0) => Mode::Rgb,
        (32, 3) | (32, 6) => {
            let masks: Vec<u32> = (0..4).filter_map(|i| u32_at(b, 54 + 4 * i)).collect();
            match masks.as_slice() {
                [0xff_0000, 0xff00, 0xff, 0xff00_0000] if header >= 56 => Mode::Rgba,
                [0xff_0000, 0xff00, 0xff, ..] => Mode::Rgb,
                _ => return Err("BMP: 32-bit bit fields other than 8-bit RGB(A) are not read".into()),
            }
        }
        (_, 1 | 2) => return Err("BMP: RLE-compressed bitmaps are not read; save masks as PNG".into()),
        _ => {
            return Err(format!(
                "BMP: {bpp}-bit bitmaps (compression {compression}) are not read"
            ));
        }
    };
    if mode == Mode::P && colors > 65536 {
        return Err(format!(
            "BMP: the header claims a palette of {colors} colours: Pillow refuses it (\"Unsupported BMP Palette size\"), so the loader cannot open it"
        ));
    }
    let palette = if mode == Mode::P {
        let n = if colors == 0 || colors > 1 << bpp {
            1 << bpp
        } else {
            colors
        };
        let start = 14 + header;
        (0..n)
            .map(|i| {
                let e = b.get(start + i * entry..start + i * entry + 3).ok_or_else(short)?;
                Ok([e[2], e[1], e[0]])
            })
            .collect::<Result<Vec<_>, String>>()?
    } else {
        Vec::new()
    };
    // Pillow's gray-palette shortcut: when the palette (of the header's
    // colour count) is exactly black/white for 2 colours, or (i, i, i) for
    // every index i, Pillow drops it and reads the rows with raw mode `1`
    // (2 colours) or `L` — whatever the bit depth. At 8 bits `L` gives the
    // indices; `1` reads the rows as packed bits (at 4 or 8 bits, not the
    // stored indices); `L` on 1/4-bit rows fails in Pillow's decoder.
    let mut one_bit_rows = false;
    if mode == Mode::P {
        let pillow_colors = if colors == 0 { 1usize << bpp } else { colors };
        let gray = if pillow_colors == 2 {
            palette.len() >= 2 && palette[0] == [0; 3] && palette[1] == [255; 3]
        } else {
            palette.len() >= pillow_colors && (0..pillow_colors).all(|i| palette[i] == [i as u8; 3] && i < 256)
        };
        if gray && pillow_colors <= 2 {
            one_bit_rows = bpp != 1;
        } else if gray && bpp != 8 {
            return Err(format!(
                "BMP: a {bpp}-bit bitmap with a gray palette of {pillow_colors} colours: Pillow reads it as `L` and \
                 fails (\"codec configuration error\"), so the loader cannot open it"
            ));
        }
    }
    let stride = (w * bpp as usize).div_ceil(32) * 4;
    let end = stride
        .checked_mul(h)
        .and_then(|n| n.checked_add(offset))
        .ok_or_else(short)?;
    let data = b.get(offset..end).ok_or_else(short)?;
    let channels = mode.channels();
    let mut out = Vec::with_capacity(w * h * channels);
    for y in 0..h {
        let row = if top_down { y } else { h - 1 - y };
        let row = &data[row * stride..(row + 1) * stride];
        match bpp {
            _ if one_bit_rows => out.extend((0..w).map(|x| (row[x / 8] >> (7 - x % 8)) & 1)),
            1 | 4 | 8 => {
                let bits = bpp as usize;
                let per = 8 / bits;
                let mask = ((1u16 << bits) - 1) as u8;
                out.extend((0..w).map(|x| (row[x / per] >> (8 - bits * (x % per + 1))) & mask));
            }
            24 => out.extend(row[..w * 3].chunks_exact(3).flat_map(|p| [p[2], p[1], p[0]])),
            _ => {
                for p in row[..w * 4].chunks_exact(4) {
                    out.extend_from_slice(&[p[2], p[1], p[0]]);
                    if channels == 4 {
                        out.push(p[3]);
                    }
                }
            }
        }
    }
    Ok(Image {
        width: w,
        height: h,
        mode,
        samples: Samples::U8(out),
        palette,
        kind: Kind::Bmp,
        stored_bits: bpp.min(8) as u8,
    })
}
