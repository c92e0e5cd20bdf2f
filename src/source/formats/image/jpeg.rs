//! JPEG as Pillow decodes it: libjpeg-turbo's own decoder, driven the way
//! Pillow's `JpegDecode.c` drives it, so every pixel is the loader's.
//!
//! Pillow, torchvision (`decode_jpeg` on the CPU) and OpenCV all decode with
//! libjpeg-turbo; a different decoder (zune-jpeg, say) differs by a step
//! or two on edges, which moves the bad pixels a mask check reports. The
//! library comes from `mozjpeg-sys`, whose decoder is libjpeg-turbo 2.1's,
//! compiled with the `cc` crate: `turbojpeg` builds libjpeg-turbo 3 with
//! cmake, which neither a fresh machine nor the zig-cross-built manylinux
//! wheel has. The decoder is unchanged from 2.1 to Pillow 13's 3.2 for
//! 8-bit files (the tests compare whole arrays with Pillow's), except that
//! 3.x also reads lossless JPEG (SOF3), refused here with a message. Its x86
//! SIMD is built too (nasm): the SIMD and C IDCTs agree on valid data but
//! not on the out-of-range coefficients of corrupt data, which Pillow's
//! SIMD build decodes (with a warning) to other pixels than the C path.
//!
//! As Pillow: ISLOW IDCT and fancy upsampling (libjpeg's defaults), gray
//! files as `L`, three components as `RGB` (libjpeg's colour conversion),
//! four as `CMYK` inverted (Pillow reads every CMYK/YCCK JPEG with raw mode
//! `CMYK;I`, the Adobe convention); no EXIF rotation. The source suspends
//! when the bytes end, as Pillow's does, so a file whose decoding would
//! need more data (even only the end-of-image marker the last scan waits
//! for) is truncated; libjpeg's warnings (corrupt data it can skip) are
//! ignored and its errors are the file's error, as Pillow's are.

use std::ffi::{CStr, c_int, c_long};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use mozjpeg_sys as ffi;

use super::{Image, Kind, Mode, Samples, check_size};

const JPEG_SUSPENDED: c_int = 0;
const JPEG_HEADER_TABLES_ONLY: c_int = 2;
const APP1: c_int = 0xE1;

/// The most scans a valid progression has: each of 4 components' 64
/// coefficients in a scan of its own, first and then one refinement per
/// bit. More repeat a scan (libjpeg only warns), and each costs a pass over
/// the whole image: a small file of many scans would stall the check.
const MAX_SCANS: c_int = 4 * 64 * 14;

/// A libjpeg error, carried out of the library by unwinding.
struct Failed(String);

/// Why a decoding stopped.
enum Stop {
    /// The data ended where the decoder needed more (Pillow: "image file is
    /// truncated").
    Truncated,
    Error(String),
}

impl Stop {
    fn message(self) -> String {
        match self {
            Stop::Truncated => {
                "JPEG: the file is truncated (the decoder needs data after its end): Pillow raises \"image file is truncated\" on it".into()
            }
            // libjpeg-turbo 2.1's decoder predates lossless JPEG (SOF3),
            // which libjpeg-turbo 3 reads.
            Stop::Error(e) if e.contains("SOF type 0xc3") => {
                format!("JPEG: {e}: lossless JPEG is not read here (libjpeg-turbo 3 reads it, this is 2.1's decoder)")
            }
            Stop::Error(e) => format!("JPEG: {e}"),
        }
    }
}

unsafe extern "C-unwind" fn error_exit(cinfo: &mut ffi::jpeg_common_struct) {
    let mut buf = [0u8; 200];
    // SAFETY: `err` is the manager set up in `Decoder::new`; libjpeg writes
    // at most JMSG_LENGTH_MAX (200) bytes, NUL-terminated.
    let msg = unsafe {
        if let Some(format) = (*cinfo.err).format_message {
            format(cinfo, &*(buf.as_mut_ptr() as *const [u8; 80]));
        }
        CStr::from_bytes_until_nul(&buf).map_or_else(|_| "corrupt data".into(), |c| c.to_string_lossy().into_owned())
    };
    resume_unwind(Box::new(Failed(msg)));
}

/// Called by libjpeg before each input step: stops at [`MAX_SCANS`].
unsafe extern "C-unwind" fn progress(cinfo: &mut ffi::jpeg_common_struct) {
    // SAFETY: only decompressors are created here.
    let scans =
        unsafe { (*(cinfo as *mut ffi::jpeg_common_struct as *mut ffi::jpeg_decompress_struct)).input_scan_number };
    if scans > MAX_SCANS {
        resume_unwind(Box::new(Failed(format!(
            "more than {MAX_SCANS} scans, more than a valid progression has: refused (Pillow would decode every one)"
        ))));
    }
}

/// Warnings are dropped, as Pillow's `output` handler drops them.
unsafe extern "C-unwind" fn output_message(_: &mut ffi::jpeg_common_struct) {}

unsafe extern "C-unwind" fn init_source(_: &mut ffi::jpeg_decompress_struct) {}

/// All the data is in the buffer: asking for more suspends (Pillow's
/// `fill_input_buffer`).
unsafe extern "C-unwind" fn fill_input_buffer(_: &mut ffi::jpeg_decompress_struct) -> ffi::boolean {
    0
}

unsafe extern "C-unwind" fn skip_input_data(cinfo: &mut ffi::jpeg_decompress_struct, n: c_long) {
    // SAFETY: `src` is the manager set up in `Decoder::new`.
    let src = unsafe { &mut *cinfo.src };
    let n = usize::try_from(n).unwrap_or(0).min(src.bytes_in_buffer);
    // Skipping past the end leaves nothing, so the next read suspends.
    src.next_input_byte = src.next_input_byte.wrapping_add(n);
    src.bytes_in_buffer -= n;
}

/// A decompressor over `bytes`, destroyed when dropped.
struct Decoder<'a> {
    cinfo: Box<ffi::jpeg_decompress_struct>,
    _err: Box<ffi::jpeg_error_mgr>,
    _src: Box<ffi::jpeg_source_mgr>,
    _progress: Box<ffi::jpeg_progress_mgr>,
    _bytes: &'a [u8],
}

impl<'a> Decoder<'a> {
    fn new(bytes: &'a [u8]) -> Result<Decoder<'a>, Stop> {
        // SAFETY: zeroed structs are what libjpeg's create functions expect;
        // the boxes keep every address fixed for the decoder's life.
        unsafe {
            let mut err: Box<ffi::jpeg_error_mgr> = Box::new(std::mem::zeroed());
            ffi::jpeg_std_error(&mut err);
            err.error_exit = Some(error_exit);
            err.output_message = Some(output_message);
            let mut cinfo: Box<ffi::jpeg_decompress_struct> = Box::new(std::mem::zeroed());
            cinfo.common.err = &mut *err;
            guard(|| ffi::jpeg_create_decompress(&mut *cinfo))?;
            let mut src: Box<ffi::jpeg_source_mgr> = Box::new(std::mem::zeroed());
            src.next_input_byte = bytes.as_ptr();
            src.bytes_in_buffer = bytes.len();
            src.init_source = Some(init_source);
            src.fill_input_buffer = Some(fill_input_buffer);
            src.skip_input_data = Some(skip_input_data);
            src.resync_to_restart = Some(ffi::jpeg_resync_to_restart);
            src.term_source = Some(init_source);
            cinfo.src = &mut *src;
            let mut monitor: Box<ffi::jpeg_progress_mgr> = Box::new(std::mem::zeroed());
            monitor.progress_monitor = Some(progress);
            cinfo.common.progress = &mut *monitor;
            Ok(Decoder {
                cinfo,
                _err: err,
                _src: src,
                _progress: monitor,
                _bytes: bytes,
            })
        }
    }

    /// Reads the header up to the first scan (Pillow's state 1).
    fn read_header(&mut self) -> Result<(), Stop> {
        let cinfo = &mut *self.cinfo;
        loop {
            // SAFETY: a created decompressor with its source set.
            match guard(|| unsafe { ffi::jpeg_read_header(cinfo, 0) })? {
                JPEG_HEADER_TABLES_ONLY => continue,
                JPEG_SUSPENDED => return Err(Stop::Truncated),
                _ => return Ok(()),
            }
        }
    }
}

impl Drop for Decoder<'_> {
    fn drop(&mut self) {
        // SAFETY: destroying frees what the decompressor allocated; an
        // error inside is caught (and there is nothing left to report).
        let cinfo = &mut *self.cinfo;
        let _ = guard(|| unsafe { ffi::jpeg_destroy_decompress(cinfo) });
    }
}

/// Runs a libjpeg call, turning its error exit into an error.
fn guard<T>(f: impl FnOnce() -> T) -> Result<T, Stop> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|e| match e.downcast::<Failed>() {
        Ok(f) => Stop::Error(f.0),
        Err(other) => resume_unwind(other),
    })
}

/// Decodes a JPEG as `numpy.array(Image.open(f))` holds it.
pub(super) fn decode(bytes: &[u8]) -> Result<Image, String> {
    decode_inner(bytes).map_err(Stop::message)
}

fn decode_inner(bytes: &[u8]) -> Result<Image, Stop> {
    let mut d = Decoder::new(bytes)?;
    d.read_header()?;
    let cinfo = &mut *d.cinfo;
    let (w, h) = (cinfo.image_width as usize, cinfo.image_height as usize);
    check_size(w as u64, h as u64).map_err(Stop::Error)?;
    // Pillow's JpegImagePlugin: 1 layer is L, 3 RGB, 4 CMYK, others raise.
    let (mode, space) = match cinfo.num_components {
        1 => (Mode::L, ffi::J_COLOR_SPACE::JCS_GRAYSCALE),
        3 => (Mode::Rgb, ffi::J_COLOR_SPACE::JCS_RGB),
        4 => (Mode::Cmyk, ffi::J_COLOR_SPACE::JCS_CMYK),
        n => {
            return Err(Stop::Error(format!(
                "cannot handle {n}-layer images (Pillow reads 1, 3 or 4)"
            )));
        }
    };
    cinfo.out_color_space = space;
    cinfo.dct_method = ffi::J_DCT_METHOD::JDCT_ISLOW;
    cinfo.do_fancy_upsampling = 1;
    // SAFETY: the header has been read; start_decompress reads (for a
    // progressive file) every scan into libjpeg's own buffers, bounded by
    // the pixel count checked above.
    if guard(|| unsafe { ffi::jpeg_start_decompress(cinfo) })? == 0 {
        return Err(Stop::Truncated);
    }
    let stride = w * mode.channels();
    if cinfo.output_width as usize != w
        || cinfo.output_height as usize != h
        || cinfo.output_components as usize != mode.channels()
    {
        return Err(Stop::Error("the decoder's output does not match the header".into()));
    }
    // libjpeg writes every byte of every row: no zeroing needed.
    let mut pixels = super::plane_buffer(stride * h, false);
    while (cinfo.output_scanline as usize) < h {
        let at = cinfo.output_scanline as usize;
        let mut row = pixels[at * stride..].as_mut_ptr();
        // SAFETY: one row of `stride` bytes at `row`.
        let n = guard(|| unsafe { ffi::jpeg_read_scanlines(cinfo, &mut row, 1) })?;
        if n != 1 {
            return Err(Stop::Truncated);
        }
    }
    // Pillow finishes (reading up to the end-of-image marker) but accepts a
    // suspension here once every row is read.
    // SAFETY: every scanline has been read.
    guard(|| unsafe { ffi::jpeg_finish_decompress(cinfo) })?;
    if mode == Mode::Cmyk {
        // Raw mode CMYK;I: Pillow stores 255 - each sample.
        pixels.iter_mut().for_each(|p| *p = !*p);
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

/// What a JPEG's header says: (width, height) and its first EXIF block.
pub(super) type Header = ((u64, u64), Option<Vec<u8>>);

/// The header of the JPEG that `bytes` start with, read by libjpeg up to
/// the first scan; `Ok(None)` when the bytes end before it.
pub(super) fn header(bytes: &[u8]) -> Result<Option<Header>, String> {
    let inner = || -> Result<_, Stop> {
        let mut d = Decoder::new(bytes)?;
        {
            let cinfo = &mut *d.cinfo;
            // SAFETY: a created decompressor; APP1 markers are kept whole.
            guard(|| unsafe { ffi::jpeg_save_markers(cinfo, APP1, 0xffff) })?;
        }
        d.read_header()?;
        let cinfo = &*d.cinfo;
        let mut exif = None;
        let mut m = cinfo.marker_list;
        while !m.is_null() {
            // SAFETY: libjpeg's list of saved markers, alive until destroy.
            let marker = unsafe { &*m };
            let data = unsafe { std::slice::from_raw_parts(marker.data, marker.data_length as usize) };
            if exif.is_none() && marker.marker as c_int == APP1 && data.starts_with(b"Exif\0\0") {
                exif = Some(data[6..].to_vec());
            }
            m = marker.next;
        }
        Ok(((u64::from(cinfo.image_width), u64::from(cinfo.image_height)), exif))
    };
    match inner() {
        Ok(h) => Ok(Some(h)),
        Err(Stop::Truncated) => Ok(None),
        Err(e) => Err(e.message()),
    }
}
