//! Arbitrary bytes as a data file of each format (the first byte picks the
//! format): every reader and kernel runs on it, guarded per file as in a
//! scan; see `common::install_hook` for which panics count as crashes.
#![no_main]

mod common;

use std::io::Write;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use preflight::source;

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
            let _ = source::listed_but_missing(&folder);
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
    // An image's size from its header alone (`pair_with`), guarded as
    // pairing reads it.
    if matches!(ext, "png" | "tif" | "bmp" | "jpg" | "webp" | "gif" | "pgm") {
        let _ = source::guarded(|| {
            source::formats::image::header::size_of_file(&path).map_err(source::ReadError::new)
        });
    }
    // As the scanner does: open and read under the file boundary's guard,
    // with the schema's hints.
    let hints = hints(ext);
    let Ok(src) = source::guarded(|| source::open_with(&path, &hints)) else {
        return;
    };
    let names: Vec<String> = src.columns().to_vec();
    let projection: Vec<usize> = (0..names.len()).collect();
    for unit in 0..src.units().min(64) {
        let _ = source::guarded(|| {
            src.read(unit, &projection, &mut |batch| {
                let _ = validator.check("fuzz", batch.first_row, &batch.batch);
                Ok(())
            })
        });
        for c in 0..names.len() {
            let _ = src.unit_stats(unit, c);
        }
        // Every column as a shape (list lengths from Parquet page levels).
        let shapes = vec![true; projection.len()];
        let _ = source::guarded(|| src.read_shapes(unit, &projection, &shapes, &mut |_| Ok(())));
        // Every column judged by an index rule (`token_type_ids`): Parquet
        // pages proven where they lie, batches flagged proven.
        let judges = vec![validator.judge(2); projection.len()];
        let none = vec![false; projection.len()];
        let _ = source::guarded(|| src.read_judged(unit, &projection, &none, &judges, &mut |_, _| Ok(())));
    }
    // A token stream also goes through the scanner with an `eod_id`
    // schema: units cut after an end-of-document id, documents judged.
    if ext == "bin" {
        static EOD: OnceLock<preflight::Validator> = OnceLock::new();
        let eod = EOD.get_or_init(common::eod_validator);
        let file = source::layouts::discover::DataFile {
            display: "fuzz.bin".into(),
            ..source::layouts::discover::DataFile::new(path.clone())
        };
        let opts = preflight::scan::ScanOptions {
            jobs: 1,
            ..Default::default()
        };
        let _ = preflight::scan::scan(eod, &[file], &opts);
    }
});

/// The schema hints a file is read with: raw token bytes take their dtype
/// from the schema (MDS and LitData record theirs, and a dtype they do not
/// record is an error before any sample is read: only their `bytes` get
/// one), token streams cut their units at an end-of-document id, `.txt` is
/// a YOLO label file, COCO ids are also read mapped and COCO boxes judged
/// against their images.
fn hints(ext: &str) -> source::Hints {
    let yaml = "columns:
  raw: {kind: index, size: 65536, dtype: uint16, optional: true}
  tokens: {kind: index, size: 65536, dtype: uint16, eod_id: 50256, optional: true}
  category_id: {kind: class, num_classes: 91, coco_mapping: contiguous, optional: true}
  bbox: {kind: box, format: xywh, optional: true}
";
    let schema = preflight::schema::Schema::from_yaml(yaml, "fuzz.yaml".as_ref()).expect("the fuzz schema is valid");
    let mut hints = source::Hints::from_schema(&schema);
    let unhinted = match ext {
        "mds" | "litdata" => "tokens",
        _ => "raw",
    };
    hints.specs.retain(|c| c.name != unhinted);
    hints.layout = (ext == "txt").then_some(preflight::schema::Layout::Yolo);
    hints
}
