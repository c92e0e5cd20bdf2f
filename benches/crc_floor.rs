//! The floors of the TFRecord benchmark (benches/containers.sh): CRC-32C,
//! with the crate preflight uses, over every byte of every file under a
//! folder on N threads, and nothing else (no framing, no protobuf, no
//! check). Each way of reaching the bytes is timed in-process:
//!
//! - `mem`: the files read into memory first (untimed); the CRC alone.
//! - `map`: memory-mapped, each 16 MiB chunk populated, checksummed and
//!   released (what preflight's TFRecord reader does).
//! - `read`: `pread` into a per-thread buffer of 1 MiB (it stays in cache
//!   between the copy and the checksum).
//! - `copy`: the same `pread`s without the CRC (the page-cache copy alone).
//!
//!   cargo bench --bench crc_floor -- THREADS DIR [MODE...]

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

const CHUNK: usize = 16 << 20;
const READ_BUF: usize = 1 << 20;

/// (file index, offset, length) of every chunk.
fn chunks(sizes: &[usize], chunk: usize) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    for (i, &n) in sizes.iter().enumerate() {
        let mut off = 0;
        while off < n {
            out.push((i, off, chunk.min(n - off)));
            off += chunk;
        }
    }
    out
}

/// The work on one chunk: (file, offset, length, a per-thread buffer) -> CRC.
type Work<'a> = &'a (dyn Fn(usize, usize, usize, &mut Vec<u8>) -> u32 + Sync);

/// Runs `work` on every chunk over `threads` threads; the XOR of the CRCs.
fn par(threads: usize, jobs: &[(usize, usize, usize)], work: Work<'_>) -> u32 {
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut buf = vec![0u8; READ_BUF];
                    let mut x = 0u32;
                    loop {
                        let j = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&(f, off, len)) = jobs.get(j) else { break };
                        x ^= work(f, off, len, &mut buf);
                    }
                    x
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).fold(0, |a, b| a ^ b)
    })
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let threads: usize = args.next().and_then(|t| t.parse().ok()).unwrap_or(2);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "bench/tfr".into()));
    let mut modes: Vec<String> = args.collect();
    if modes.is_empty() {
        modes = ["mem", "map", "read", "copy"].map(String::from).to_vec();
    }
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    let files: Vec<File> = paths.iter().map(|p| File::open(p).unwrap()).collect();
    let sizes: Vec<usize> = files.iter().map(|f| f.metadata().unwrap().len() as usize).collect();
    let total: usize = sizes.iter().sum();
    for mode in &modes {
        let (secs, x) = match mode.as_str() {
            "mem" => {
                let data: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
                let jobs = chunks(&sizes, CHUNK);
                let t = Instant::now();
                let x = par(threads, &jobs, &|f, off, len, _| {
                    crc32c::crc32c(&data[f][off..off + len])
                });
                (t.elapsed().as_secs_f64(), x)
            }
            "map" => {
                let t = Instant::now();
                // SAFETY: read-only maps of files nothing writes during the run.
                let maps: Vec<memmap2::Mmap> = files
                    .iter()
                    .map(|f| unsafe { memmap2::Mmap::map(f).unwrap() })
                    .collect();
                let jobs = chunks(&sizes, CHUNK);
                let x = par(threads, &jobs, &|f, off, len, _| {
                    let m = &maps[f];
                    let _ = m.advise_range(memmap2::Advice::PopulateRead, off, len);
                    let c = crc32c::crc32c(&m[off..off + len]);
                    // SAFETY: read-only file-backed map; dropped pages read again if touched.
                    let _ = unsafe { m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, off, len) };
                    c
                });
                (t.elapsed().as_secs_f64(), x)
            }
            "read" | "copy" => {
                let crc = mode == "read";
                let t = Instant::now();
                let jobs = chunks(&sizes, READ_BUF);
                let x = par(threads, &jobs, &|f, off, len, buf| {
                    files[f].read_exact_at(&mut buf[..len], off as u64).unwrap();
                    if crc {
                        crc32c::crc32c(&buf[..len])
                    } else {
                        buf[len - 1] as u32
                    }
                });
                (t.elapsed().as_secs_f64(), x)
            }
            m => panic!("unknown mode {m} (mem, map, read, copy)"),
        };
        println!(
            "crc_floor mode={mode} threads={threads} bytes={total} secs={secs:.4} GBps={:.2} x={x:08x}",
            total as f64 / secs / 1e9
        );
    }
}
