//! GIF through the `gif` crate (image-rs), first frame only, as Pillow 13's
//! `GifImagePlugin` gives it to `np.array(Image.open(f))`: palette indices
//! in mode `P`, or `L` when the frame has no palette that is needed (none,
//! or one whose entry i is gray i: Pillow's `_is_palette_needed`; a local
//! table decides over the global one, even one that is not needed). The
//! image is the logical screen, grown to hold the frame, filled with the
//! frame's transparent index (0 without one) around the frame. Later frames
//! are never decoded. A stray byte between blocks, which Pillow skips and
//! the crate refuses, is dropped first ([`without_stray_bytes`]).

use std::io::Cursor;
use std::num::NonZeroU64;

use super::{Image, Kind, Mode, Samples, check_size};

/// Whether `head` starts a GIF (Pillow's `_accept`).
pub(super) fn sniff(head: &[u8]) -> bool {
    head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a")
}

/// Pillow's `_is_palette_needed`: anything but entry i = (i, i, i).
fn needed(p: &[u8]) -> bool {
    p.chunks(3)
        .enumerate()
        .any(|(i, c)| c.len() < 3 || c.iter().any(|&v| usize::from(v) != i))
}

/// The file without the bytes before the first image that start no block
/// (`!` extension, `,` image, `;` trailer): Pillow's `_seek` reads past
/// them one by one.
fn without_stray_bytes(b: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let Some(&flags) = b.get(10) else { return b.into() };
    let mut at = 13 + if flags & 0x80 != 0 { 3 << ((flags & 7) + 1) } else { 0 };
    let mut stray = Vec::new();
    while let Some(&c) = b.get(at) {
        match c {
            b'!' => {
                // Label, then sub-blocks up to an empty one.
                at += 2;
                while let Some(&n) = b.get(at) {
                    at += 1 + usize::from(n);
                    if n == 0 {
                        break;
                    }
                }
            }
            b',' | b';' => break,
            _ => {
                stray.push(at);
                at += 1;
            }
        }
    }
    if stray.is_empty() {
        return b.into();
    }
    b.iter()
        .enumerate()
        .filter(|(i, _)| stray.binary_search(i).is_err())
        .map(|(_, &c)| c)
        .collect::<Vec<u8>>()
        .into()
}

pub(super) fn decode(bytes: &[u8]) -> Result<Image, String> {
    let err = |e: gif::DecodingError| format!("GIF: {e}");
    let bytes = &*without_stray_bytes(bytes);
    let mut opts = gif::DecodeOptions::new();
    opts.set_color_output(gif::ColorOutput::Indexed);
    // One frame of at most Pillow's pixel limit.
    opts.set_memory_limit(gif::MemoryLimit::Bytes(
        NonZeroU64::new(super::MAX_PIXELS).unwrap_or(NonZeroU64::MIN),
    ));
    // Pillow grows the image to a frame beyond the screen.
    opts.check_frame_consistency(false);
    let mut d = opts.read_info(Cursor::new(bytes)).map_err(err)?;
    let (screen_w, screen_h) = (usize::from(d.width()), usize::from(d.height()));
    let global = d.global_palette().filter(|p| needed(p)).map(<[u8]>::to_vec);
    let frame = d
        .read_next_frame()
        .map_err(err)?
        .ok_or_else(|| "GIF: no image in the file (Pillow: image not found in GIF frame)".to_string())?;
    let (left, top) = (usize::from(frame.left), usize::from(frame.top));
    let (fw, fh) = (usize::from(frame.width), usize::from(frame.height));
    let width = screen_w.max(left + fw);
    let height = screen_h.max(top + fh);
    check_size(width as u64, height as u64)?;
    let palette = match &frame.palette {
        Some(local) => needed(local).then(|| local.clone()),
        None => global,
    };
    if frame.buffer.len() < fw * fh {
        return Err(format!(
            "GIF: {} pixels decoded for a {fw}x{fh} frame",
            frame.buffer.len()
        ));
    }
    let mut samples = vec![frame.transparent.unwrap_or(0); width * height];
    for (y, row) in frame.buffer.chunks_exact(fw.max(1)).take(fh).enumerate() {
        let at = (top + y) * width + left;
        samples[at..at + fw].copy_from_slice(&row[..fw]);
    }
    let (mode, palette) = match palette {
        Some(p) => (Mode::P, p.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect()),
        None => (Mode::L, Vec::new()),
    };
    Ok(Image {
        width,
        height,
        mode,
        samples: Samples::U8(samples),
        palette,
        kind: Kind::Gif,
        stored_bits: 8,
    })
}
