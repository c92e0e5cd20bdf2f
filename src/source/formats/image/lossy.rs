//! WebP through `image-webp` (JPEG, the other lossy format, is [`super::jpeg`]).
//! Pillow opens a WebP as `RGB` or `RGBA`.

use std::io::Cursor;

use super::{Image, Kind, Mode, Samples, check_size};

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
