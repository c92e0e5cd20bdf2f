//! Netpbm images (PBM, PGM, PPM: `P1`..`P6`) as Pillow 13's
//! `PpmImagePlugin` reads them. Written by hand: the format is a few text
//! tokens and raw or decimal samples, and what matters is Pillow's own
//! reading, which no decoder crate follows: a header token ends at one
//! white-space byte (so `255\r\n` starts the data with `\n`); maxval must be
//! 1..65535; gray with maxval above 255 is mode `I`; binary samples at a
//! maxval other than 255 (and 65535 for gray) are scaled to 0..255 (0..65535
//! for `I`) as `min(out_max, round(v / maxval * out_max))`, clamped, where
//! the ASCII forms refuse a value above maxval; 16-bit colour becomes 8-bit
//! RGB; PBM's 1 is black (`False`). The ASCII forms are read as one block
//! (Pillow reads 1 MiB blocks; only a token or comment across that boundary
//! could read differently). Pillow's extensions (`Pf`, `P0CMYK`, `Py*`) are
//! not read.

use super::{Image, Kind, Mode, Samples, check_size};

/// Netpbm's white space (Pillow's `b_whitespace`).
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Whether `head` starts as a Netpbm file Pillow reads.
pub(super) fn sniff(head: &[u8]) -> bool {
    head.len() >= 2 && head[0] == b'P' && (b'1'..=b'6').contains(&head[1]) && head.get(2).is_none_or(|&c| is_space(c))
}

/// Pillow's `_read_token`: from `at`, white space and `#` comments (to a CR
/// or LF) skipped, up to 11 bytes; the byte that ends it is consumed.
fn token(b: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut t: Vec<u8> = Vec::new();
    while t.len() <= 10 {
        let Some(&c) = b.get(*at) else { break };
        *at += 1;
        if is_space(c) {
            if t.is_empty() {
                continue;
            }
            break;
        } else if c == b'#' {
            while let Some(&c) = b.get(*at) {
                *at += 1;
                if c == b'\r' || c == b'\n' {
                    break;
                }
            }
            continue;
        }
        t.push(c);
    }
    if t.is_empty() {
        return Err("PNM: the header ends early (Pillow: Reached EOF while reading header)".into());
    }
    if t.len() > 10 {
        return Err("PNM: a header token longer than 10 bytes (Pillow refuses it)".into());
    }
    python_int(&t).ok_or_else(|| format!("PNM: {:?} in the header is not a number", String::from_utf8_lossy(&t)))
}

/// Python's `int()` on an ASCII token that is not negative: digits, an
/// optional `+`, single underscores between digits; `None` otherwise (a
/// negative number is `Some` of nothing Pillow accepts: see callers).
fn python_int(t: &[u8]) -> Option<u64> {
    let digits = t.strip_prefix(b"+").unwrap_or(t);
    if digits.is_empty() || digits.starts_with(b"_") || digits.ends_with(b"_") || digits.windows(2).any(|w| w == b"__")
    {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        match c {
            b'0'..=b'9' => v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?,
            b'_' => {}
            _ => return None,
        }
    }
    Some(v)
}

/// Python's `round(v / maxval * out_max)`: the float64 quotient, ties to even.
fn scale(v: u64, maxval: u64, out_max: u64) -> u64 {
    ((v as f64 / maxval as f64) * out_max as f64).round_ties_even() as u64
}

/// The (width, height) of the header.
pub(super) fn size(b: &[u8]) -> Result<(u64, u64), String> {
    if !sniff(b) {
        return Err("PNM: not a PBM/PGM/PPM file".into());
    }
    let mut at = 2;
    Ok((token(b, &mut at)?, token(b, &mut at)?))
}

pub(super) fn decode(b: &[u8]) -> Result<Image, String> {
    if !sniff(b) {
        return Err("PNM: not a PBM/PGM/PPM file".into());
    }
    let magic = b[1] - b'0';
    let mut at = 2;
    let w = token(b, &mut at)?;
    let h = token(b, &mut at)?;
    check_size(w, h)?;
    let (width, height) = (w as usize, h as usize);
    let n = width * height;
    let truncated = || "PNM: the file is truncated (Pillow: image file is truncated)".to_string();
    let short = || "PNM: the file holds fewer samples than the image has (Pillow: not enough image data)".to_string();
    if magic == 1 || magic == 4 {
        let data = &b[at.min(b.len())..];
        // Allocated only once the file is known to hold the samples.
        let mut out = Vec::new();
        if magic == 4 {
            let stride = width.div_ceil(8);
            if data.len() < stride * height {
                return Err(truncated());
            }
            out.reserve_exact(n);
            for y in 0..height {
                let row = &data[y * stride..(y + 1) * stride];
                out.extend((0..width).map(|x| u8::from(row[x / 8] >> (7 - x % 8) & 1 == 0)));
            }
        } else {
            // Every token (one byte) of the block is checked, then the
            // first `n` kept; 0 is white (1), 1 black (0).
            for &c in ignore_comments(data).iter().filter(|c| !is_space(**c)) {
                match c {
                    b'0' | b'1' => {
                        if out.len() < n {
                            out.push(u8::from(c == b'0'));
                        }
                    }
                    _ => {
                        return Err(format!(
                            "PNM: {:?} in a plain PBM (Pillow: Invalid token for this mode)",
                            char::from(c)
                        ));
                    }
                }
            }
            if out.len() < n {
                return Err(short());
            }
        }
        return Ok(image(width, height, Mode::One, Samples::U8(out), 1));
    }
    let maxval = token(b, &mut at)?;
    if !(1..65536).contains(&maxval) {
        return Err(format!(
            "PNM: maxval {maxval} (Pillow: maxval must be greater than 0 and less than 65536)"
        ));
    }
    let color = magic == 3 || magic == 6;
    let (mode, bands) = match (color, maxval > 255) {
        (true, _) => (Mode::Rgb, 3),
        (false, false) => (Mode::L, 1),
        (false, true) => (Mode::I32, 1),
    };
    let out_max = if mode == Mode::I32 { 65535 } else { 255 };
    let stored_bits = if maxval > 255 { 16 } else { 8 };
    let count = n * bands;
    let data = &b[at.min(b.len())..];
    // The samples in the mode's type (`I`: int32).
    let mut out = if mode == Mode::I32 {
        Samples::I32(Vec::new())
    } else {
        Samples::U8(Vec::new())
    };
    let push = |out: &mut Samples, v: u64| match out {
        Samples::I32(o) => o.push(v as i32),
        Samples::U8(o) => o.push(v as u8),
        _ => {}
    };
    let len = |out: &Samples| match out {
        Samples::I32(o) => o.len(),
        Samples::U8(o) => o.len(),
        _ => 0,
    };
    if magic == 2 || magic == 3 {
        let block = ignore_comments(data);
        for t in block.split(|c| is_space(*c)).filter(|t| !t.is_empty()) {
            if len(&out) == count {
                break;
            }
            if t.len() > 10 {
                return Err("PNM: a sample token longer than 10 bytes (Pillow: Token too long found in data)".into());
            }
            let v = match t.strip_prefix(b"-") {
                Some(neg) if python_int(neg).is_some_and(|v| v > 0) => {
                    return Err(format!(
                        "PNM: sample {} is negative (Pillow: Channel value is negative)",
                        String::from_utf8_lossy(t)
                    ));
                }
                Some(neg) => python_int(neg),
                None => python_int(t),
            }
            .ok_or_else(|| format!("PNM: sample {:?} is not a number", String::from_utf8_lossy(t)))?;
            if v > maxval {
                return Err(format!(
                    "PNM: sample {v} above maxval {maxval} (Pillow: Channel value too large for this mode)"
                ));
            }
            push(&mut out, scale(v, maxval, out_max));
        }
        // Pillow checks a last token not ended by white space for length
        // before it knows the data is complete.
        if block.last().is_some_and(|c| !is_space(*c))
            && let Some(last) = block.split(|c| is_space(*c)).next_back()
            && last.len() > 10
        {
            return Err("PNM: a sample token longer than 10 bytes (Pillow: Token too long found in data)".into());
        }
        if len(&out) < count {
            return Err(short());
        }
    } else {
        let wide = maxval > 255;
        let size = if wide { 2 } else { 1 };
        if data.len() < count * size {
            return Err(if maxval == 255 || (maxval == 65535 && !color) {
                truncated()
            } else {
                short()
            });
        }
        let raw = maxval == 255 || (maxval == 65535 && !color);
        for i in 0..count {
            let v = if wide {
                u64::from(u16::from_be_bytes([data[2 * i], data[2 * i + 1]]))
            } else {
                u64::from(data[i])
            };
            push(&mut out, if raw { v } else { scale(v, maxval, out_max).min(out_max) });
        }
    }
    Ok(image(width, height, mode, out, stored_bits))
}

/// Pillow's `_ignore_comments` on one block: each `#` up to and including
/// the next CR or LF is cut out (joining what is either side of it); a
/// comment that does not end ends the block.
fn ignore_comments(block: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if !block.contains(&b'#') {
        return block.into();
    }
    let mut out = Vec::with_capacity(block.len());
    let mut rest = block;
    while let Some(start) = rest.iter().position(|&c| c == b'#') {
        out.extend_from_slice(&rest[..start]);
        match rest[start..].iter().position(|&c| c == b'\r' || c == b'\n') {
            Some(end) => rest = &rest[start + end + 1..],
            None => return out.into(),
        }
    }
    out.extend_from_slice(rest);
    out.into()
}

fn image(width: usize, height: usize, mode: Mode, samples: Samples, stored_bits: u8) -> Image {
    Image {
        width,
        height,
        mode,
        samples,
        palette: Vec::new(),
        kind: Kind::Pnm,
        stored_bits,
    }
}
