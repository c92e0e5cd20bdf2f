//! The JPEG floor of the mask benchmark (benches/masks.sh with FORMAT jpg):
//! every `.jpg` under a folder decoded with the libjpeg-turbo build
//! preflight uses (`mozjpeg-sys`), with Pillow's settings (ISLOW IDCT,
//! fancy upsampling, gray out for gray files), on N threads, and nothing
//! else. The output buffer is reused per thread and each file is read whole
//! in one read, as preflight does.
//!
//!   cargo bench --bench jpeg_floor -- THREADS DIR

use std::cell::RefCell;
use std::path::PathBuf;

use mozjpeg_sys as ffi;
use rayon::prelude::*;

thread_local! {
    /// This thread's output buffer, reused image after image.
    static BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Decodes one JPEG (libjpeg's default error handler exits on an error:
/// the benchmark's files are valid).
fn decode(bytes: &[u8]) -> u64 {
    // SAFETY: the standard libjpeg sequence over an in-memory source.
    unsafe {
        let mut err: ffi::jpeg_error_mgr = std::mem::zeroed();
        let mut cinfo: ffi::jpeg_decompress_struct = std::mem::zeroed();
        cinfo.common.err = ffi::jpeg_std_error(&mut err);
        ffi::jpeg_create_decompress(&mut cinfo);
        ffi::jpeg_mem_src(&mut cinfo, bytes.as_ptr(), bytes.len() as _);
        ffi::jpeg_read_header(&mut cinfo, 1);
        cinfo.out_color_space = if cinfo.num_components == 1 {
            ffi::J_COLOR_SPACE::JCS_GRAYSCALE
        } else {
            ffi::J_COLOR_SPACE::JCS_RGB
        };
        cinfo.dct_method = ffi::J_DCT_METHOD::JDCT_ISLOW;
        cinfo.do_fancy_upsampling = 1;
        ffi::jpeg_start_decompress(&mut cinfo);
        let stride = cinfo.output_width as usize * cinfo.output_components as usize;
        let size = stride * cinfo.output_height as usize;
        BUF.with_borrow_mut(|buf| {
            if buf.len() < size {
                buf.resize(size, 0);
            }
            while cinfo.output_scanline < cinfo.output_height {
                let mut row = buf[cinfo.output_scanline as usize * stride..].as_mut_ptr();
                ffi::jpeg_read_scanlines(&mut cinfo, &mut row, 1);
            }
            // The pixels are read back (black_box) so the decode stays.
            std::hint::black_box(&buf[..size]);
        });
        ffi::jpeg_finish_decompress(&mut cinfo);
        ffi::jpeg_destroy_decompress(&mut cinfo);
        size as u64
    }
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let threads: usize = args.next().and_then(|t| t.parse().ok()).unwrap_or(2);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "bench/masks".into()));
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(&dir)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "jpg"))
        .collect();
    files.sort();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let pixels: u64 = pool.install(|| files.par_iter().map(|p| decode(&std::fs::read(p).unwrap())).sum());
    println!("{pixels}");
}
