//! The floor of the mask benchmark (benches/masks.sh): every `.png` under a
//! folder decoded with the PNG crate preflight uses, with identity
//! transformations, on N threads, and nothing else (no check, no report).
//! preflight's time on the same masks is compared with this one.
//!
//! Decoding as cheaply as the crate allows, so the floor is not padded: the
//! output buffer is reused per thread (as preflight reuses its plane
//! buffer), not allocated per image (a fresh 256 KiB buffer costs page
//! faults and zeroing that are not decoding), and each file is read whole
//! in one read, as preflight reads it.
//!
//!   cargo bench --bench png_floor -- THREADS DIR

use std::cell::RefCell;
use std::io::Cursor;
use std::path::PathBuf;

use rayon::prelude::*;

thread_local! {
    /// This thread's output buffer, reused image after image.
    static BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let threads: usize = args.next().and_then(|t| t.parse().ok()).unwrap_or(2);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "bench/masks".into()));
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(&dir)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .collect();
    files.sort();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let pixels: u64 = pool.install(|| {
        files
            .par_iter()
            .map(|p| {
                let bytes = std::fs::read(p).unwrap();
                let mut decoder = png::Decoder::new(Cursor::new(bytes));
                decoder.set_transformations(png::Transformations::IDENTITY);
                let mut reader = decoder.read_info().unwrap();
                let size = reader.output_buffer_size().unwrap();
                BUF.with_borrow_mut(|buf| {
                    // Grown once; the decoder writes every byte of a frame.
                    if buf.len() < size {
                        buf.resize(size, 0);
                    }
                    let info = reader.next_frame(&mut buf[..size]).unwrap();
                    // The pixels are read back (black_box) so the decode stays.
                    std::hint::black_box(&buf[..size]);
                    info.buffer_size() as u64
                })
            })
            .sum()
    });
    println!("{pixels}");
}
