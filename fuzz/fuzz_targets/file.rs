//! Arbitrary bytes as a data file of each format (the first byte picks the
//! format): every reader and kernel runs on it, guarded per file as in a
//! scan; see `common::install_hook` for which panics count as crashes.
#![no_main]

mod common;

use std::io::Write;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

const EXTENSIONS: [&str; 26] = [
    "parquet", "arrow", "arrows", "csv", "tsv", "jsonl", "npy", "npz", "csv.gz", "mds", "litdata", "bin", "megatron",
    "png", "tif", "bmp", "jpg", "webp", "json", "txt", "tar", "tar.gz", "tfrecord", "tfrecord.gz", "gif", "pgm",
];

fuzz_target!(|data: &[u8]| {
    static VALIDATOR: OnceLock<preflight::Validator> = OnceLock::new();
    let validator = VALIDATOR.get_or_init(|| {
        common::install_hook();
        common::validator()
    });
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let ext = EXTENSIONS[pick as usize % EXTENSIONS.len()];
    let dir = std::env::temp_dir().join(format!("preflight-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = match ext {
        // A dataset folder: u32 LE length, that many bytes of index.json,
        // then the one MDS shard or LitData chunk it lists.
        "mds" | "litdata" => {
            let Some((len, rest)) = bytes.split_first_chunk::<4>() else {
                return;
            };
            let len = (u32::from_le_bytes(*len) as usize).min(rest.len());
            let (index, data) = rest.split_at(len);
            let folder = dir.join(ext);
            let _ = std::fs::create_dir_all(&folder);
            std::fs::write(folder.join("index.json"), index).expect("write the index");
            let name = if ext == "mds" {
                "shard.00000.mds"
            } else {
                "chunk-0-0.bin"
            };
            let path = folder.join(name);
            std::fs::write(&path, data).expect("write the input");
            // What a directory search reports of the index: listed files
            // that are not there.
            preflight::fuzzing::index_of(&folder);
            path
        }
        // A Megatron-LM dataset: u32 LE length, that many bytes of the
        // .idx, then the .bin.
        "megatron" => {
            let Some((len, rest)) = bytes.split_first_chunk::<4>() else {
                return;
            };
            let len = (u32::from_le_bytes(*len) as usize).min(rest.len());
            let (index, data) = rest.split_at(len);
            std::fs::write(dir.join("tokens.idx"), index).expect("write the index");
            let path = dir.join("tokens.bin");
            std::fs::write(&path, data).expect("write the input");
            path
        }
        _ => {
            // A raw or llm.c token file (no .idx beside it).
            if ext == "bin" {
                let _ = std::fs::remove_file(dir.join("input_ids.idx"));
            }
            // An .npy file's column is named by its stem.
            let path = dir.join(format!("input_ids.{ext}"));
            std::fs::File::create(&path)
                .and_then(|mut f| f.write_all(bytes))
                .expect("write the input");
            path
        }
    };
    // Read every way a run reads it; a token stream also scanned with an
    // `eod_id` schema (units cut after an end-of-document id, documents
    // judged). Columns are judged by an index rule (`token_type_ids`).
    static EOD: OnceLock<preflight::Validator> = OnceLock::new();
    let eod = (ext == "bin").then(|| EOD.get_or_init(common::eod_validator));
    preflight::fuzzing::read_file(validator, &path, &hints(ext), 2, eod);
});

/// The schema hints a file is read with: raw token bytes take their dtype
/// from the schema (MDS and LitData record theirs, and a dtype they do not
/// record is an error before any sample is read: only their `bytes` get
/// one), token streams cut their units at an end-of-document id, `.txt` is
/// a YOLO label file, COCO ids are also read mapped and COCO boxes judged
/// against their images.
fn hints(ext: &str) -> preflight::Schema {
    let unhinted = match ext {
        "mds" | "litdata" => "tokens",
        _ => "raw",
    };
    let yaml: String = "columns:
  raw: {kind: index, size: 65536, dtype: uint16, optional: true}
  tokens: {kind: index, size: 65536, dtype: uint16, eod_id: 50256, optional: true}
  category_id: {kind: class, num_classes: 91, coco_mapping: contiguous, optional: true}
  bbox: {kind: box, format: xywh, optional: true}
"
    .lines()
    .filter(|l| !l.trim_start().starts_with(&format!("{unhinted}:")))
    .map(|l| format!("{l}\n"))
    .collect();
    preflight::Schema::from_yaml(&yaml, "fuzz.yaml".as_ref()).expect("the fuzz schema is valid")
}
