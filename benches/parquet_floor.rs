//! The floor of a Parquet full scan (`--full-scan` in BENCHMARKS.md): every
//! page of the named columns read and decompressed by the parquet crate's
//! page reader (the same codec crates preflight's own decoder uses: zstd,
//! snap, lz4_flex, flate2, brotli), row groups on N threads, and nothing
//! else: no level or value decoding, no check, no report.
//!
//!   cargo bench --bench parquet_floor -- THREADS FILE [COLUMN...]

use std::fs::File;

use parquet::file::reader::{FileReader, SerializedFileReader};
use rayon::prelude::*;

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let threads: usize = args.next().and_then(|t| t.parse().ok()).unwrap_or(2);
    let path = args.next().expect("a Parquet file");
    let wanted: Vec<String> = args.collect();
    let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
    let meta = reader.metadata().clone();
    let schema = meta.file_metadata().schema_descr();
    let leaves: Vec<usize> = (0..schema.num_columns())
        .filter(|&i| {
            let root = schema.get_column_root(i).name().to_string();
            wanted.is_empty() || wanted.contains(&root)
        })
        .collect();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let start = std::time::Instant::now();
    let bytes: usize = pool.install(|| {
        (0..meta.num_row_groups())
            .into_par_iter()
            .map(|rg| {
                let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
                let group = reader.get_row_group(rg).unwrap();
                let mut total = 0;
                for &leaf in &leaves {
                    let mut pages = group.get_column_page_reader(leaf).unwrap();
                    while let Some(page) = pages.get_next_page().unwrap() {
                        total += page.buffer().len();
                    }
                }
                total
            })
            .sum()
    });
    let took = start.elapsed().as_secs_f64();
    println!(
        "{path}: {} row groups, {} columns, {:.0} MB decompressed in {took:.3} s on {threads} threads ({:.2} GB/s)",
        meta.num_row_groups(),
        leaves.len(),
        bytes as f64 / 1e6,
        bytes as f64 / took / 1e9
    );
}
