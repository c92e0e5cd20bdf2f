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

/// Checks the CRC of every chunk before the first `IDAT`, as Pillow's
/// `PngImageFile._open` does: a mismatch there (in any chunk, ancillary
/// ones such as `tEXt` included) makes `Image.open` raise, so the loader
/// fails on the file. (The `png` crate skips ancillary chunks' CRCs; the
/// CRCs of `IDAT` and later chunks it checks, Pillow does not.)
fn header_crcs(bytes: &[u8]) -> Result<(), String> {
    let mut at = 8usize;
    while let Some(head) = bytes.get(at..at.saturating_add(8)) {
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let kind = &head[4..8];
        if kind == b"IDAT" {
            return Ok(());
        }
        let Some(data) = at.checked_add(8 + len).and_then(|end| bytes.get(at + 4..end)) else {
            return Ok(()); // cut off: the decoder says so
        };
        let Some(stored) = bytes.get(at + 8 + len..at + 12 + len) else {
            return Ok(());
        };
        let mut crc = flate2::Crc::new();
        crc.update(data);
        if crc.sum().to_be_bytes() != stored {
            return Err(format!(
                "PNG: the CRC of the `{}` chunk at byte {at} does not match its data: the file is corrupt, and Pillow refuses to open it (\"broken PNG file\")",
                String::from_utf8_lossy(kind)
            ));
        }
        at += 12 + len;
    }
    Ok(())
}

/// The `png` crate's error, its chunk type spelt out.
fn png_error(e: png::DecodingError) -> String {
    let text = e.to_string();
    if let (Some(start), true) = (text.find("ChunkType { type: "), text.starts_with("CRC error")) {
        let kind: String = text[start + 18..]
            .chars()
            .take_while(|c| c.is_ascii_alphabetic())
            .collect();
        return format!(
            "PNG: the CRC of an `{kind}` chunk does not match its data: the file is corrupt ({})",
            text.split(" while decoding").next().unwrap_or(&text)
        );
    }
    format!("PNG: {text}")
}

pub(super) fn decode(bytes: &[u8]) -> Result<Image, String> {
    header_crcs(bytes)?;
    let mut decoder = Decoder::new_with_limits(Cursor::new(bytes), Limits { bytes: CHUNK_LIMIT });
    decoder.set_transformations(Transformations::IDENTITY);
    let mut reader = decoder.read_info().map_err(png_error)?;
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
    let mut buf = super::plane_buffer(size, info.interlaced);
    let out = reader.next_frame(&mut buf).map_err(png_error)?;
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
