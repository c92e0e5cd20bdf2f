//! Images (segmentation masks): files of one row and one column, `pixels`,
//! and the decoders that turn image bytes into the values a Python loader
//! sees (docs/src/sources/masks.md).
//!
//! The reader itself does not decode: it hands the file's bytes on as a
//! one-row binary column tagged [`IMAGE_FIELD`], and the pixel transform
//! (`crate::pixels`) decodes them, exactly as it decodes encoded images
//! stored in a table's binary column. One decoding path serves image files,
//! Parquet/Arrow `Image` columns and WebDataset members alike.
//!
//! [`decode`] returns the image as Pillow opens it: the *mode* Pillow gives
//! (`1`, `L`, `P`, `I;16`, `I`, `F`, `LA`, `RGB`, `RGBA`, `CMYK`) and the samples
//! `numpy.array(Image.open(f))` holds, so raw reading is exactly the
//! loader's: palette indices (never colours), 2- and 4-bit gray scaled to
//! 0..255 as Pillow scales them, 16-bit gray as `uint16`, 16-bit colour
//! reduced to its high byte as Pillow does. Decoding goes through the
//! maintained, fuzzed image-rs crates (`png` with identity transformations,
//! `tiff`, `image-webp`, `gif`) and libjpeg-turbo, Pillow's own JPEG decoder
//! (see `jpeg`); BMP and Netpbm are hand-written (see `bmp`, `pnm`).
//!
//! Every decoder is bounded: an image of more than [`MAX_PIXELS`] pixels
//! (Pillow's own `DecompressionBombError` threshold, so nothing Pillow would
//! load is refused) is the file's error before any pixel buffer exists.

mod bmp;
mod gif;
pub(crate) mod header;
mod jpeg;
mod lossy;
mod png;
mod pnm;
mod tiff;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use arrow::array::{BinaryArray, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};

use crate::error::ReadError;
use crate::source::read::{Batch, Source};
use crate::source::storage;

pub(crate) use crate::schema::columns::PIXELS;
use crate::source::format::Format;

/// An image (`.png`, `.tif`, `.bmp`, `.gif`, `.pgm`, `.jpg`, `.webp`, ...):
/// a segmentation mask, one row with column `pixels`. Searched for only
/// when the schema has a `pixels` column.
pub(crate) const FORMAT: Format = Format::new(
    "image",
    |n, _| n.ext.is_some_and(is_image_name),
    |path, o| Ok(Box::new(ImageSource::open(path, o.len))),
)
.searched_when(|_, columns| wants_pixels(columns), wants_pixels);

fn wants_pixels(columns: &[String]) -> bool {
    columns.iter().any(|c| c == PIXELS)
}

/// Field metadata key marking a binary column as a whole image file, which
/// the pixel transform decodes even when the schema sets no `decode`.
pub(crate) const IMAGE_FIELD: &str = "preflight.image";

/// Pillow's `DecompressionBombError` threshold (2 x `MAX_IMAGE_PIXELS`):
/// larger images are refused by the loader too.
pub(crate) const MAX_PIXELS: u64 = 2 * 89_478_485;

/// Largest image file read whole.
const MAX_FILE_BYTES: u64 = 1 << 30;

/// The container an image came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// PNG.
    Png,
    /// TIFF.
    Tiff,
    /// Windows bitmap.
    Bmp,
    /// JPEG (lossy).
    Jpeg,
    /// WebP (lossy unless written lossless).
    WebP,
    /// GIF (first frame).
    Gif,
    /// Netpbm: PBM, PGM, PPM.
    Pnm,
}

impl Kind {
    /// The format's name in messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Png => "PNG",
            Kind::Tiff => "TIFF",
            Kind::Bmp => "BMP",
            Kind::Jpeg => "JPEG",
            Kind::WebP => "WebP",
            Kind::Gif => "GIF",
            Kind::Pnm => "PNM",
        }
    }

    /// The kind a file's first bytes say.
    pub(crate) fn sniff(head: &[u8]) -> Option<Kind> {
        if head.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Kind::Png)
        } else if head.starts_with(b"II*\0")
            || head.starts_with(b"MM\0*")
            || head.starts_with(b"II+\0")
            || head.starts_with(b"MM\0+")
        {
            // Classic TIFF and BigTIFF (which Pillow opens too).
            Some(Kind::Tiff)
        } else if head.starts_with(b"BM") {
            Some(Kind::Bmp)
        } else if head.starts_with(&[0xff, 0xd8, 0xff]) {
            Some(Kind::Jpeg)
        } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
            Some(Kind::WebP)
        } else if gif::sniff(head) {
            Some(Kind::Gif)
        } else if pnm::sniff(head) {
            Some(Kind::Pnm)
        } else {
            None
        }
    }
}

/// Pillow's image mode: what `numpy.array(img)` holds per pixel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// 1-bit: 0 and 1 (NumPy booleans).
    One,
    /// 8-bit gray.
    L,
    /// 8-bit palette indices (the palette is [`Image::palette`]).
    P,
    /// 16-bit unsigned gray (`I;16`).
    I16,
    /// 16-bit signed gray (`I;16S`).
    I16S,
    /// 32-bit signed gray (`I`).
    I32,
    /// 32-bit float (`F`).
    F32,
    /// Gray and alpha, 8-bit each.
    LA,
    /// Red, green, blue, 8-bit each.
    Rgb,
    /// RGB and alpha, 8-bit each.
    Rgba,
    /// Cyan, magenta, yellow, black, 8-bit each (a CMYK or YCCK JPEG).
    Cmyk,
}

impl Mode {
    /// Pillow's name of the mode.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::One => "1",
            Mode::L => "L",
            Mode::P => "P",
            Mode::I16 => "I;16",
            Mode::I16S => "I;16S",
            Mode::I32 => "I",
            Mode::F32 => "F",
            Mode::LA => "LA",
            Mode::Rgb => "RGB",
            Mode::Rgba => "RGBA",
            Mode::Cmyk => "CMYK",
        }
    }

    /// Samples per pixel.
    pub(crate) fn channels(self) -> usize {
        match self {
            Mode::LA => 2,
            Mode::Rgb => 3,
            Mode::Rgba | Mode::Cmyk => 4,
            _ => 1,
        }
    }
}

/// Pixel samples, row-major, channels interleaved.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Samples {
    /// Modes `1`, `L`, `P`, `LA`, `RGB`, `RGBA`.
    U8(Vec<u8>),
    /// `I;16`.
    U16(Vec<u16>),
    /// `I;16S`.
    I16(Vec<i16>),
    /// `I`.
    I32(Vec<i32>),
    /// `F`.
    F32(Vec<f32>),
}

/// A decoded image, as Pillow opens it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Image {
    /// Pixels per row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Pillow's mode.
    pub mode: Mode,
    /// The samples, `width * height * mode.channels()` of them.
    pub samples: Samples,
    /// Mode `P`: the palette's RGB colours.
    pub palette: Vec<[u8; 3]>,
    /// The container.
    pub kind: Kind,
    /// Bits per sample as stored (16 for a 16-bit PNG, even when Pillow
    /// keeps 8 of them).
    pub stored_bits: u8,
}

/// Refuses dimensions beyond [`MAX_PIXELS`] before anything is allocated.
pub(crate) fn check_size(width: u64, height: u64) -> Result<(), String> {
    let pixels = width.saturating_mul(height);
    if pixels > MAX_PIXELS {
        return Err(format!(
            "the image claims {width}x{height} pixels, more than {MAX_PIXELS} (Pillow refuses it as a decompression bomb)"
        ));
    }
    Ok(())
}

/// Decodes image bytes of any supported kind, as Pillow opens them.
pub(crate) fn decode(bytes: &[u8]) -> Result<Image, String> {
    match Kind::sniff(bytes) {
        Some(Kind::Png) => png::decode(bytes),
        Some(Kind::Tiff) => tiff::decode(bytes),
        Some(Kind::Bmp) => bmp::decode(bytes),
        Some(Kind::Jpeg) => jpeg::decode(bytes),
        Some(Kind::WebP) => lossy::webp(bytes),
        Some(Kind::Gif) => gif::decode(bytes),
        Some(Kind::Pnm) => pnm::decode(bytes),
        None => Err(NOT_AN_IMAGE.into()),
    }
}

/// What a file of none of the formats is.
pub(crate) const NOT_AN_IMAGE: &str = "not an image preflight reads (PNG, TIFF, BMP, JPEG, WebP, GIF, PBM/PGM/PPM)";

/// Whether a path's extension names an image format.
pub(crate) fn is_image_name(ext: &str) -> bool {
    matches!(
        ext,
        "png" | "tif" | "tiff" | "bmp" | "jpg" | "jpeg" | "webp" | "gif" | "pbm" | "pgm" | "ppm" | "pnm"
    )
}

/// An image file: one row, column `pixels`, holding the file's bytes for
/// the pixel transform to decode.
///
/// Opening does no I/O: the file is opened once, when it is read, and its
/// kind is then sniffed from the bytes read (a mask set is many small files,
/// so every system call per file counts; this is as many as reading the
/// file whole takes).
pub(crate) struct ImageSource {
    path: PathBuf,
    columns: Vec<String>,
    /// The file's size when it was listed.
    len: u64,
    /// The kind read ([`Kind`] as 1 + its position; 0 before the read).
    kind: AtomicU8,
}

const KINDS: [Kind; 7] = [
    Kind::Png,
    Kind::Tiff,
    Kind::Bmp,
    Kind::Jpeg,
    Kind::WebP,
    Kind::Gif,
    Kind::Pnm,
];

impl ImageSource {
    /// An image file of `len` bytes (as its metadata says).
    pub(crate) fn open(path: &Path, len: u64) -> ImageSource {
        ImageSource {
            path: path.to_path_buf(),
            columns: vec![PIXELS.to_string()],
            len,
            kind: AtomicU8::new(0),
        }
    }

    /// The kind the read found, if it has happened.
    fn kind(&self) -> Option<Kind> {
        let k = self.kind.load(Ordering::Relaxed) as usize;
        k.checked_sub(1).and_then(|i| KINDS.get(i)).copied()
    }
}

impl Source for ImageSource {
    fn columns(&self) -> &[String] {
        &self.columns
    }

    fn units(&self) -> usize {
        1
    }

    fn read(
        &self,
        _unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        // One open, one read (and the read that finds the end).
        if self.len > MAX_FILE_BYTES {
            return Err(ReadError::new(format!(
                "{} bytes: larger than the {MAX_FILE_BYTES} bytes an image file may have",
                self.len
            )));
        }
        // An object's size is known from the listing, or learnt by one
        // more request.
        let bytes = storage::read_whole(&self.path, MAX_FILE_BYTES, |len| {
            ReadError::new(format!(
                "{len} bytes: larger than the {MAX_FILE_BYTES} bytes an image file may have"
            ))
        })?;
        let kind = Kind::sniff(&bytes[..bytes.len().min(12)])
            .ok_or_else(|| ReadError::new(format!("{NOT_AN_IMAGE}: bad magic")))?;
        let at = KINDS.iter().position(|&k| k == kind).unwrap_or(0);
        self.kind.store(1 + at as u8, Ordering::Relaxed);
        let field = Field::new(PIXELS, DataType::Binary, false).with_metadata(
            [(IMAGE_FIELD.to_string(), kind.name().to_string())]
                .into_iter()
                .collect::<std::collections::HashMap<String, String>>(),
        );
        let array = Arc::new(BinaryArray::from_vec(vec![&bytes[..]]));
        let fields: Vec<Field> = projection.iter().map(|_| field.clone()).collect();
        let columns = projection.iter().map(|_| array.clone() as _).collect();
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?;
        sink(Batch { first_row: 0, batch })
    }

    fn notes(&self) -> Vec<String> {
        match self.kind() {
            Some(Kind::Jpeg) => vec![
                "a JPEG mask: JPEG is lossy, so class boundaries gain values that were never labels; save masks as PNG"
                    .into(),
            ],
            Some(Kind::WebP) => vec![
                "a WebP mask: lossy WebP changes pixel values (and any WebP mask reads as RGB); save masks as PNG"
                    .into(),
            ],
            _ => Vec::new(),
        }
    }
}

thread_local! {
    /// The last 8-bit plane's buffer, for the next image's decode.
    static SPARE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The largest plane buffer kept for reuse (a 4096 x 4096 mask).
const SPARE_MAX: usize = 16 << 20;

/// A buffer of `len` bytes for a decoder to fill, reusing the last plane's
/// allocation: zeros with `zero`, else whatever the last plane left there
/// (a decoder that writes every byte need not pay for zeroing them).
pub(crate) fn plane_buffer(len: usize, zero: bool) -> Vec<u8> {
    let mut v = SPARE.with(|s| std::mem::take(&mut *s.borrow_mut()));
    if zero {
        v.clear();
    }
    v.resize(len, 0);
    v.truncate(len);
    v
}

/// Keeps a plane's buffer for the next decode ([`plane_buffer`]), unless it
/// is large (one huge image does not stay allocated).
pub(crate) fn recycle_plane(v: Vec<u8>) {
    if v.capacity() <= SPARE_MAX {
        SPARE.with(|s| *s.borrow_mut() = v);
    }
}
