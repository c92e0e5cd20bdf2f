//! The lossy formats: JPEG through `zune-jpeg` (what the `image` crate
//! uses; not bit-exact with libjpeg-turbo, which Pillow uses, so values on
//! edges may differ by a step — the file always draws a warning anyway) and
//! WebP through `image-webp`. Pillow opens a gray JPEG as `L`, any other
//! JPEG as `RGB`, a WebP as `RGB` or `RGBA`.

use std::io::Cursor;

use zune_jpeg::JpegDecoder;
use zune_jpeg::zune_core::colorspace::ColorSpace;
use zune_jpeg::zune_core::options::DecoderOptions;

use super::{Image, Kind, Mode, Samples, check_size};

pub(super) fn jpeg(bytes: &[u8]) -> Result<Image, String> {
    let err = |e: zune_jpeg::errors::DecodeErrors| format!("JPEG: {e}");
    let mut d = JpegDecoder::new(Cursor::new(bytes));
    d.decode_headers().map_err(err)?;
    let info = d.info().ok_or("JPEG: no header")?;
    let (w, h) = (usize::from(info.width), usize::from(info.height));
    check_size(w as u64, h as u64)?;
    let (mode, out) = match d.input_colorspace() {
        Some(ColorSpace::Luma) => (Mode::L, ColorSpace::Luma),
        Some(ColorSpace::YCbCr | ColorSpace::RGB) => (Mode::Rgb, ColorSpace::RGB),
        other => return Err(format!("JPEG: {other:?} images are not read (gray or colour only)")),
    };
    let options = DecoderOptions::default()
        .jpeg_set_out_colorspace(out)
        .set_max_width(w.max(1))
        .set_max_height(h.max(1));
    // Pillow (libjpeg) raises "image file is truncated" when the data ends
    // before the decoder reaches the end-of-image marker, even when only
    // the marker is missing; zune-jpeg fills the rest in gray unless it
    // runs strict. Strict decoding decides truncation; any other complaint
    // of the strict decoder (extraneous bytes, stray markers: libjpeg
    // warns and goes on) falls back to the tolerant decoding.
    let truncated =
        |why: String| format!("JPEG: the file is truncated ({why}): Pillow raises \"image file is truncated\" on it");
    let strict = JpegDecoder::new_with_options(Cursor::new(bytes), options.set_strict_mode(true)).decode();
    let pixels = match strict {
        Err(e) if is_truncation(&e) => return Err(truncated(e.to_string())),
        Ok(p) => p,
        Err(_) => JpegDecoder::new_with_options(Cursor::new(bytes), options)
            .decode()
            .map_err(err)?,
    };
    if !has_eoi(bytes) {
        return Err(truncated("no end-of-image marker after the last scan".into()));
    }
    if pixels.len() != w * h * mode.channels() {
        return Err(format!("JPEG: {} samples decoded for a {w}x{h} image", pixels.len()));
    }
    Ok(Image {
        width: w,
        height: h,
        mode,
        samples: Samples::U8(pixels),
        palette: Vec::new(),
        kind: Kind::Jpeg,
        stored_bits: 8,
    })
}

/// Whether a strict decoding error says the data ended early.
fn is_truncation(e: &zune_jpeg::errors::DecodeErrors) -> bool {
    let text = e.to_string();
    [
        "Premature end",
        "Exhausted data",
        "No more bytes",
        "Not enough bytes",
        "end of file",
        "EOF",
    ]
    .iter()
    .any(|t| text.contains(t))
}

/// Whether an end-of-image marker (`FF D9`) follows the last start of scan.
fn has_eoi(bytes: &[u8]) -> bool {
    let last_sos = bytes.windows(2).rposition(|w| w == [0xff, 0xda]).unwrap_or(0);
    bytes[last_sos..].windows(2).any(|w| w == [0xff, 0xd9])
}

pub(super) fn webp(bytes: &[u8]) -> Result<Image, String> {
    let err = |e: image_webp::DecodingError| format!("WebP: {e}");
    let mut d = image_webp::WebPDecoder::new(Cursor::new(bytes)).map_err(err)?;
    let (w, h) = d.dimensions();
    check_size(w.into(), h.into())?;
    let mode = if d.has_alpha() { Mode::Rgba } else { Mode::Rgb };
    let size = d.output_buffer_size().ok_or("WebP: the image does not fit in memory")?;
    let mut buf = vec![0u8; size];
    d.read_image(&mut buf).map_err(err)?;
    Ok(Image {
        width: w as usize,
        height: h as usize,
        mode,
        samples: Samples::U8(buf),
        palette: Vec::new(),
        kind: Kind::WebP,
        stored_bits: 8,
    })
}
