//! PNG through the `png` crate with identity transformations: palette
//! images stay indices, sub-byte rows are unpacked here, 16-bit samples are
//! big-endian. Pillow's modes: gray 1-bit `1` (0/1), 2/4-bit `L` scaled by
//! 85/17, 8-bit `L`, 16-bit `I;16`; palette `P` at any depth (indices);
//! LA/RGB/RGBA at 8 bits, and at 16 bits reduced to the high byte
//! (Pillow's `RGB;16B` raw modes). `tRNS` never changes a value.

use std::io::Cursor;

use png::{BitDepth, ColorType, Decoder, Limits, Transformations};

use super::{Image, Kind, Mode, Samples, check_size};

/// Memory the `png` crate may use for chunks besides the image (text,
/// ICC profiles): its default.
const CHUNK_LIMIT: usize = 64 << 20;

pub(super) fn decode(bytes: &[u8]) -> Result<Image, String> {
    let mut decoder = Decoder::new_with_limits(Cursor::new(bytes), Limits { bytes: CHUNK_LIMIT });
    decoder.set_transformations(Transformations::IDENTITY);
    let mut reader = decoder.read_info().map_err(|e| format!("PNG: {e}"))?;
    let info = reader.info();
    let (width, height) = (info.width as usize, info.height as usize);
    check_size(info.width.into(), info.height.into())?;
    let (color, depth) = reader.output_color_type();
    let palette: Vec<[u8; 3]> = info
        .palette
        .as_ref()
        .map(|p| p.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
        .unwrap_or_default();
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| "PNG: the image does not fit in memory".to_string())?;
    // The last plane's allocation: no fresh pages per image. Rows of a
    // progressive (interlaced) image are ORed in at sub-byte depths, so it
    // starts from zeros; otherwise every row is copied whole, and only
    // what a frame smaller than the image (an APNG `fcTL`) leaves is zeroed.
    let mut buf = crate::pixels::plane_buffer(size, info.interlaced);
    let out = reader.next_frame(&mut buf).map_err(|e| format!("PNG: {e}"))?;
    let line = out.line_size;
    let written = line.saturating_mul(out.height as usize).min(buf.len());
    buf[written..].fill(0);
    let bits = depth as u8;
    let (mode, samples) = match color {
        ColorType::Grayscale | ColorType::Indexed => {
            let indexed = color == ColorType::Indexed;
            match depth {
                BitDepth::Sixteen => {
                    let v = buf.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect();
                    (Mode::I16, Samples::U16(v))
                }
                BitDepth::Eight => (if indexed { Mode::P } else { Mode::L }, Samples::U8(buf)),
                _ => {
                    // Pillow: `P;n` keeps indices, `1` gives 0/1, `L;2`/`L;4` scale to 0..255.
                    let (mode, scale) = match (indexed, depth) {
                        (true, _) => (Mode::P, 1),
                        (false, BitDepth::One) => (Mode::One, 1),
                        (false, BitDepth::Two) => (Mode::L, 85),
                        _ => (Mode::L, 17),
                    };
                    (mode, Samples::U8(unpack(&buf, line, width, height, bits, scale)))
                }
            }
        }
        ColorType::GrayscaleAlpha | ColorType::Rgb | ColorType::Rgba => {
            let mode = match color {
                ColorType::GrayscaleAlpha => Mode::LA,
                ColorType::Rgb => Mode::Rgb,
                _ => Mode::Rgba,
            };
            let v = if depth == BitDepth::Sixteen {
                buf.chunks_exact(2).map(|c| c[0]).collect()
            } else {
                buf
            };
            (mode, Samples::U8(v))
        }
    };
    Ok(Image {
        width,
        height,
        mode,
        samples,
        palette,
        kind: Kind::Png,
        stored_bits: bits,
    })
}

/// Unpacks rows of `bits`-bit samples (most significant first, each row
/// padded to a byte) into one byte per sample, times `scale`.
fn unpack(buf: &[u8], line: usize, width: usize, height: usize, bits: u8, scale: u8) -> Vec<u8> {
    let per_byte = 8 / bits as usize;
    let mask = (1u8 << bits) - 1;
    let mut out = Vec::with_capacity(width * height);
    for row in buf.chunks(line.max(1)).take(height) {
        for x in 0..width {
            let byte = row.get(x / per_byte).copied().unwrap_or(0);
            let shift = 8 - bits as usize * (x % per_byte + 1);
            out.push(((byte >> shift) & mask) * scale);
        }
    }
    out
}
