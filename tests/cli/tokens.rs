//! Token shards for language-model pre-training: Megatron-LM indexed
//! datasets, llm.c / modded-nanogpt shards and raw nanoGPT streams, checked
//! on the fixtures the real writers made (tests/fixtures/tokens, with the
//! manifest expected.json of every row and planted violation), and on files
//! written here by the published llm.c / nanoGPT writer code.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{Env, check, hits};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokens")
}

fn manifest() -> Vec<Value> {
    let text = std::fs::read_to_string(fixtures().join("expected.json")).expect("expected.json");
    let doc: Value = serde_json::from_str(&text).expect("json");
    doc["fixtures"].as_array().expect("fixtures").clone()
}

fn ours(f: &Value) -> bool {
    matches!(f["format"].as_str(), Some("megatron" | "llmc" | "raw"))
}

/// Every (row, value) of a check, from a report with every example kept.
fn pairs(report: &Value, rule: &str) -> Vec<(u64, i128)> {
    let (n, ex) = hits(report, "tokens", rule);
    assert_eq!(n as usize, ex.len(), "every example kept");
    ex.into_iter()
        .map(|(_, row, v)| (row, v.to_string().parse::<i128>().expect("integer value")))
        .collect()
}

#[test]
fn every_fixture_gives_exactly_its_planted_violations() {
    let env = Env::new();
    let mut checked = 0;
    for f in manifest().iter().filter(|f| ours(f) && f.get("error").is_none()) {
        let rel = f["path"].as_str().expect("path");
        let bound = f["vocab_bound"].as_u64().unwrap_or(1000);
        let dtype = match f["format"].as_str() {
            Some("raw") => format!(", dtype: {}", f["dtype"].as_str().expect("dtype")),
            _ => String::new(),
        };
        env.write(
            "s.yaml",
            &format!("columns:\n  tokens: {{kind: index, size: {bound}{dtype}}}\n"),
        );
        let path = fixtures().join(rel);
        let planted = f["violations"].as_array().expect("violations");
        let code = if planted.is_empty() { 0 } else { 1 };
        let report = env.check_json(
            &[
                "-s",
                "s.yaml",
                path.to_str().expect("utf-8"),
                "--max-examples",
                "1000000000",
            ],
            code,
        );
        assert_eq!(report["rows"], f["rows"], "{rel}");
        let mut want: Vec<(u64, i128)> = planted
            .iter()
            .map(|v| {
                (
                    v["row"].as_u64().expect("row"),
                    v["value"].as_i64().expect("value").into(),
                )
            })
            .collect();
        want.sort();
        let mut got = pairs(&report, "index");
        got.sort();
        assert_eq!(got, want, "{rel}");
        checked += 1;
    }
    assert_eq!(checked, 20, "every clean and bad fixture of these formats");
}

#[test]
fn megatron_rows_are_sequences_and_max_length_judges_them() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  tokens: {kind: index, size: 65536, max_length: 5, min_length: 1}\n",
    );
    for f in manifest()
        .iter()
        .filter(|f| f["format"] == "megatron" && f.get("error").is_none())
    {
        let rel = f["path"].as_str().expect("path");
        if f["dtype"] != "uint16" {
            continue;
        }
        let lengths: Vec<u64> = serde_json::from_value(f["row_lengths"].clone()).expect("lengths");
        let path = fixtures().join(rel);
        let long: Vec<(u64, i128)> = (0..lengths.len())
            .filter(|&i| lengths[i] > 5)
            .map(|i| (i as u64, lengths[i].into()))
            .collect();
        let short: Vec<(u64, i128)> = (0..lengths.len())
            .filter(|&i| lengths[i] < 1)
            .map(|i| (i as u64, 0))
            .collect();
        let code = if long.is_empty() && short.is_empty() { 0 } else { 1 };
        let report = env.check_json(
            &["-s", "s.yaml", path.to_str().expect("utf-8"), "--max-examples", "100"],
            code,
        );
        assert_eq!(pairs(&report, "max_length"), long, "{rel}");
        assert_eq!(pairs(&report, "min_length"), short, "{rel}");
    }
}

#[test]
fn broken_files_are_errors_of_their_own_and_the_others_are_checked() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  tokens: {kind: index, size: 1000, dtype: uint16}\n",
    );
    let all = manifest();
    let broken: Vec<&Value> = all.iter().filter(|f| ours(f) && f.get("error").is_some()).collect();
    assert_eq!(broken.len(), 21);
    let mut args: Vec<String> = vec!["-s".into(), "s.yaml".into()];
    args.extend(
        broken
            .iter()
            .map(|f| fixtures().join(f["path"].as_str().expect("path")).display().to_string()),
    );
    let good = fixtures().join("megatron/u16_bad.bin").display().to_string();
    args.push(good.clone());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let report = env.check_json(&args, 2);
    // The error class of the manifest, as preflight words it.
    let words = |class: &str| match class {
        "bad_magic" => "bad magic",
        "unsupported_version" => "unsupported version",
        "unknown_dtype" => "unknown dtype code 99",
        "sequence_past_bin_end" => "past the end of the .bin",
        "bin_size_mismatch" => "bin size mismatch",
        "pointer_not_contiguous" => "pointer not contiguous",
        "document_indices_not_starting_at_0" => "document indices not starting at 0",
        "document_indices_decreasing" => "document indices decreasing",
        "document_indices_end_not_sequence_count" => "not at the sequence count",
        "index_size_mismatch" => "index size mismatch",
        "legacy_tntidx" => "legacy fairseq/Megatron IndexedDataset index (TNTIDX)",
        "nemo_retrieval_index" => "NeMo retrieval index (MMIDRET)",
        "token_count_mismatch" => "token count mismatch",
        "size_not_multiple_of_dtype" => "not a whole number of uint16 tokens",
        other => panic!("unknown error class {other}"),
    };
    let errors = report["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), broken.len(), "{errors:#?}");
    for f in &broken {
        let file = fixtures().join(f["path"].as_str().expect("path")).display().to_string();
        let mine: Vec<&Value> = errors.iter().filter(|e| e["file"] == file.as_str()).collect();
        assert_eq!(mine.len(), 1, "{file}");
        let msg = mine[0]["message"].as_str().expect("message");
        let want = words(f["error"].as_str().expect("error"));
        assert!(msg.contains(want), "{file}: {msg:?} lacks {want:?}");
    }
    // The good dataset beside them was checked completely.
    assert_eq!(hits(&report, "tokens", "index").0, 4);
    assert_eq!(report["files"], broken.len() + 1);
}

#[test]
fn a_directory_search_picks_up_bin_files_only_for_a_tokens_column() {
    let env = Env::new();
    env.python(
        "os.makedirs('d/sub', exist_ok=True)\n\
         np.array([1, 2, 3000], dtype=np.uint16).tofile('d/train.bin')\n\
         np.array([4, 5], dtype=np.uint16).tofile('d/sub/val.bin')\n\
         pq.write_table(pa.table({'label': [0, 1]}), 'd/labels.parquet')\n\
         open('d/stray.idx', 'wb').write(b'MMIDIDX')",
    );
    // A schema without `tokens`: the .bin files are not data for it.
    env.write("labels.yaml", "columns:\n  label: {kind: class, num_classes: 2}\n");
    let r = env.check_json(&["-s", "labels.yaml", "d"], 0);
    assert_eq!(r["files"], 1);
    // With `tokens`, the search finds them, and a Megatron .idx is never a
    // file of its own.
    env.write(
        "tokens.yaml",
        "columns:\n  tokens: {kind: index, size: 1000, dtype: uint16, optional: true}\n",
    );
    let r = env.check_json(&["-s", "tokens.yaml", "d", "--max-examples", "10"], 1);
    assert_eq!(r["files"], 3);
    assert_eq!(r["rows"], 7);
    let (n, ex) = hits(&r, "tokens", "index");
    assert_eq!(n, 1);
    assert_eq!((ex[0].0.as_str(), ex[0].1), ("d/train.bin", 2));
    // A file named explicitly is always read; without `dtype:` a raw file is
    // an error that says what to do.
    let r = env.check_json(&["-s", "labels.yaml", "d/train.bin"], 2);
    let msg = r["errors"][0]["message"].as_str().expect("message");
    assert!(msg.contains("set `dtype:`"), "{msg}");
    let r = env.check_json(&["-s", "tokens.yaml", "d/train.bin", "d/stray.idx"], 2);
    assert_eq!(r["errors"][0]["file"], "d/stray.idx");
    let msg = r["errors"][0]["message"].as_str().expect("message");
    assert!(msg.contains("name the dataset by its .bin"), "{msg}");
}

#[test]
fn llmc_and_nanogpt_writers_run_here() {
    // llm.c dev/data/data_common.py write_datafile, nanoGPT's prepare.py
    // (openwebtext: a uint16 memmap, EOT 50256 after each document).
    let env = Env::new();
    env.python(
        r#"
def write_datafile(filename, toks, model_desc="gpt-2"):
    assert len(toks) < 2**31, "token count too large"
    if model_desc == "gpt-2":
        max_token_value = 2**16 - 1
        magic, version, dtype = 20240520, 1, np.uint16
    elif model_desc == "llama-3":
        max_token_value = 2**32 - 1
        magic, version, dtype = 20240801, 7, np.uint32
    header = np.zeros(256, dtype=np.int32)
    header[0] = magic
    header[1] = version
    header[2] = len(toks)
    toks_np = np.array(toks, dtype=dtype)
    with open(filename, "wb") as f:
        f.write(header.tobytes())
        f.write(toks_np.tobytes())

rng = np.random.default_rng(7)
gpt2 = rng.integers(0, 50257, 300_000)
gpt2[[0, 123_456, 299_999]] = [50257, 65535, 50300]
write_datafile("fineweb_train_000001.bin", gpt2.tolist())
llama = rng.integers(0, 128256, 100_000)
llama[[5, 99_999]] = [128256, 2**32 - 1]
write_datafile("llama.bin", llama.tolist(), "llama-3")

docs = [rng.integers(0, 50256, n).tolist() + [50256] for n in (5, 70_000, 3)]
ids = [t for d in docs for t in d]
ids[70_002] = 50304
arr = np.memmap("train.bin", dtype=np.uint16, mode="w+", shape=(len(ids),))
arr[:] = ids
arr.flush()
"#,
    );
    env.write(
        "gpt2.yaml",
        "columns:\n  tokens: {kind: index, size: 50257, dtype: uint16}\n",
    );
    let r = env.check_json(&["-s", "gpt2.yaml", "fineweb_train_000001.bin", "train.bin"], 1);
    let (n, ex) = hits(&r, "tokens", "index");
    assert_eq!(n, 4);
    let ex: Vec<(&str, u64, i64)> = ex
        .iter()
        .map(|(f, r, v)| (f.as_str(), *r, v.as_i64().expect("int")))
        .collect();
    assert_eq!(
        ex,
        [
            ("fineweb_train_000001.bin", 0, 50257),
            ("fineweb_train_000001.bin", 123_456, 65535),
            ("fineweb_train_000001.bin", 299_999, 50300),
            ("train.bin", 70_002, 50304),
        ]
    );
    assert_eq!(r["rows"], 300_000 + 70_011);
    env.write("llama.yaml", "columns:\n  tokens: {kind: index, size: 128256}\n");
    let r = env.check_json(&["-s", "llama.yaml", "llama.bin"], 1);
    let (n, ex) = hits(&r, "tokens", "index");
    assert_eq!(n, 2);
    assert_eq!((ex[0].1, ex[0].2.as_i64()), (5, Some(128256)));
    assert_eq!((ex[1].1, ex[1].2.as_u64()), (99_999, Some(4294967295)));
    // The report does not depend on the thread count.
    let one = env.run(&[
        "check",
        "--format",
        "json",
        "-s",
        "gpt2.yaml",
        "fineweb_train_000001.bin",
        "--jobs",
        "1",
    ]);
    let four = env.run(&[
        "check",
        "--format",
        "json",
        "-s",
        "gpt2.yaml",
        "fineweb_train_000001.bin",
        "--jobs",
        "4",
    ]);
    assert_eq!(one.stdout, four.stdout);
}

/// llm.c's `dataloader_load_shard_` asserts `ntok > 0`: a shard that
/// `write_datafile` wrote from no tokens (a 1024-byte header, count 0)
/// aborts training, so it is that file's error; the shards beside it are
/// still checked.
#[test]
fn an_llmc_shard_of_no_tokens_is_an_error() {
    let env = Env::new();
    env.python(
        r#"
def write_datafile(filename, toks, model_desc="gpt-2"):
    # llm.c dev/data/data_common.py
    assert len(toks) < 2**31, "token count too large"
    if model_desc == "gpt-2":
        magic, version, dtype = 20240520, 1, np.uint16
    elif model_desc == "llama-3":
        magic, version, dtype = 20240801, 7, np.uint32
    header = np.zeros(256, dtype=np.int32)
    header[0] = magic
    header[1] = version
    header[2] = len(toks)
    toks_np = np.array(toks, dtype=dtype)
    with open(filename, "wb") as f:
        f.write(header.tobytes())
        f.write(toks_np.tobytes())

write_datafile("empty_gpt2.bin", [])
write_datafile("empty_llama.bin", [], "llama-3")
write_datafile("good.bin", [5, 50257, 7, 60000])
header = np.fromfile("good.bin", dtype=np.int32, count=256)
toks = np.fromfile("good.bin", dtype=np.uint16, offset=1024)
assert int(header[2]) == len(toks)
json.dump([[i, int(v)] for i, v in enumerate(toks) if v >= 50257], open("want.json", "w"))
"#,
    );
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("want.json")).expect("want")).expect("json");
    env.write("s.yaml", "columns:\n  tokens: {kind: index, size: 50257}\n");
    let r = env.check_json(&["-s", "s.yaml", "empty_gpt2.bin", "empty_llama.bin", "good.bin"], 2);
    let errors = r["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 2, "{errors:#?}");
    for (e, file) in errors.iter().zip(["empty_gpt2.bin", "empty_llama.bin"]) {
        assert_eq!(e["file"], file);
        let msg = e["message"].as_str().expect("message");
        assert!(msg.contains("llm.c shard of no tokens"), "{msg}");
    }
    let got: Vec<Value> = hits(&r, "tokens", "index")
        .1
        .iter()
        .map(|(f, row, v)| {
            assert_eq!(f, "good.bin");
            serde_json::json!([row, v])
        })
        .collect();
    assert_eq!(Value::Array(got), want);
    assert_eq!(r["files"], 3);
}

#[test]
fn a_large_stream_is_a_memory_scan_with_bounded_memory() {
    // 96 MB of uint16 ids: resident memory stays at the units in flight.
    let env = Env::new();
    env.python(
        "a = (np.arange(48 << 20, dtype=np.uint32) % 50000).astype(np.uint16)\n\
         a[(48 << 20) - 1] = 60000\n\
         a.tofile('big.bin')",
    );
    env.write(
        "s.yaml",
        "columns:\n  tokens: {kind: index, size: 50257, dtype: uint16}\n",
    );
    let (code, kb, out) = env.peak(&["check", "--format", "json", "-s", "s.yaml", "big.bin", "--jobs", "2"]);
    assert_eq!(code, 1, "{out}");
    let r: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(r["rows"], 48u64 << 20);
    assert_eq!(hits(&r, "tokens", "index").1[0].1, (48 << 20) - 1);
    assert!(kb < 64 * 1024, "peak RSS {kb} KB for a 96 MB file");
    let _ = check(&r, "tokens", "null");
    // With an eod_id that never occurs, the stream is one document, one
    // unit (found by searching the whole file for a cut) and still read
    // with its pages released as it goes; it is the file's two ends at
    // once, judged by max_length only (never by min_length).
    env.write(
        "s.yaml",
        "columns:\n  tokens: {kind: index, size: 50257, dtype: uint16, eod_id: 50256, max_length: 1000, min_length: 5}\n",
    );
    let (code, kb, out) = env.peak(&["check", "--format", "json", "-s", "s.yaml", "big.bin", "--jobs", "2"]);
    assert_eq!(code, 1, "{out}");
    let r: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(hits(&r, "tokens", "max_length").1[0].1, 0);
    assert_eq!(hits(&r, "tokens", "max_length").1[0].2, 48u64 << 20);
    assert_eq!(check(&r, "tokens", "min_length")["violations"], 0);
    assert!(kb < 64 * 1024, "peak RSS {kb} KB for a 96 MB file without an EOD");
}

/// The tokenizer band counts every stored form of a number: float16
/// (Parquet's FLOAT16) and dictionary-encoded ids (Arrow IPC and Parquet
/// dictionaries, read as dictionaries), as the index rule reads them, and
/// statistics that prove the index rule do not skip the band. The expected
/// rows are the ones pyarrow reads in [10, 16).
#[test]
fn tokenizer_size_counts_float16_and_dictionary_ids() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  ids: {kind: index, size: 16, tokenizer_size: 10, nullable: true}\n",
    );
    env.python(
        "import pyarrow.feather as pf\n\
         v = [1, 12, 15, 3, None, 10, 9, 12]\n\
         pq.write_table(pa.table({'ids': pa.array([np.float16(x) if x is not None else None for x in v], pa.float16())}), 'f16.parquet')\n\
         d = pa.table({'ids': pa.array(v, pa.int64()).dictionary_encode()})\n\
         pf.write_feather(d, 'dict.arrow')\n\
         pq.write_table(d, 'dict.parquet')\n\
         pq.write_table(pa.table({'ids': pa.array(v, pa.int64())}), 'plain.parquet', use_dictionary=False)\n\
         pq.write_table(pa.table({'ids': pa.array([1, 9, None, 0], pa.int64())}), 'below.parquet')\n\
         assert pq.ParquetFile('plain.parquet').metadata.row_group(0).column(0).statistics.max == 15\n\
         for f in ('f16.parquet', 'dict.parquet'):\n\
         \x20   assert pq.read_table(f).column('ids').to_pylist() == v, f\n\
         assert pq.read_table('f16.parquet').schema.field('ids').type == pa.float16()\n\
         assert pa.types.is_dictionary(pf.read_table('dict.arrow').schema.field('ids').type)\n",
    );
    // The statistics of plain.parquet and dict.parquet (min 1, max 15, a
    // null allowed) prove the index rule but not the band.
    for file in ["f16.parquet", "dict.arrow", "dict.parquet", "plain.parquet"] {
        let r = env.check_json(&["-s", "s.yaml", file], 1);
        let (n, ex) = hits(&r, "ids", "tokenizer_size");
        assert_eq!(n, 4, "{file}: {r}");
        let rows: Vec<u64> = ex.iter().map(|e| e.1).collect();
        assert_eq!(rows, [1, 2, 5, 7], "{file}");
        assert_eq!(check(&r, "ids", "index")["violations"], 0, "{file}");
    }
    // Statistics whose maximum lies below the band prove the file.
    env.check_json(&["-s", "s.yaml", "below.parquet"], 0);
}

#[test]
fn tokenizer_size_reports_untrained_ids_apart_from_crashing_ones() {
    // GPT-2: T = 50257 ids, P = 50304 embedding rows.
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  tokens: {kind: index, size: 50304, tokenizer_size: 50257}\n",
    );
    let dir = fixtures().join("modded_nanogpt").display().to_string();
    let gpt2 = fixtures().join("llmc/gpt2_bad.bin").display().to_string();
    let r = env.check_json(&["-s", "s.yaml", &dir, &gpt2, "--max-examples", "100"], 1);
    let rules: Vec<&str> = r["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| c["rule"].as_str().expect("rule"))
        .collect();
    assert_eq!(rules, ["index", "null", "not_integer", "tokenizer_size"]);
    // 65535 crashes (index); 50257 is an untrained row (tokenizer_size);
    // 1000 is fine for GPT-2.
    let (n, ex) = hits(&r, "tokens", "index");
    assert_eq!(n, 2);
    assert!(ex.iter().all(|e| e.2 == 65535));
    let (n, ex) = hits(&r, "tokens", "tokenizer_size");
    assert_eq!(n, 2);
    let got: Vec<(String, u64)> = ex
        .iter()
        .map(|e| (e.0.rsplit('/').next().unwrap_or("").to_string(), e.1))
        .collect();
    assert_eq!(
        got,
        [
            ("gpt2_bad.bin".to_string(), 17),
            ("fineweb_val_000000.bin".to_string(), 3)
        ]
    );
    assert!(
        check(&r, "tokens", "tokenizer_size")["hint"]
            .as_str()
            .expect("hint")
            .contains("never trained")
    );
    // The clean shard passes both.
    let clean = fixtures()
        .join("modded_nanogpt/fineweb_train_000001.bin")
        .display()
        .to_string();
    env.check_json(&["-s", "s.yaml", &clean], 0);
    // Without tokenizer_size the check is not in the report at all.
    env.write("p.yaml", "columns:\n  tokens: {kind: index, size: 50304}\n");
    let r = env.check_json(&["-s", "p.yaml", &clean], 0);
    assert_eq!(r["checks"].as_array().expect("checks").len(), 3);
    // A tokenizer larger than the embedding, or on another kind, is a schema error.
    env.write(
        "bad.yaml",
        "columns:\n  tokens: {kind: index, size: 100, tokenizer_size: 101}\n",
    );
    let r = env.check_json(&["-s", "bad.yaml", &clean], 2);
    assert!(
        r["errors"][0]["message"]
            .as_str()
            .expect("m")
            .contains("tokenizer_size"),
        "{r:#}"
    );
    env.write(
        "bad2.yaml",
        "columns:\n  tokens: {kind: class, num_classes: 100, tokenizer_size: 10}\n",
    );
    env.check_json(&["-s", "bad2.yaml", &clean], 2);
}

/// The error of a file whose stored type cannot hold the bound (the
/// message after `column `tokens`: `).
fn too_narrow(t: &str, top: u64, what: &str, limit: &str) -> String {
    format!(
        "column `tokens`: stored as {t}, which cannot hold id {top} ({what}): ids ≥ {limit} cannot be stored in {t}, so the tokenizer's larger ids were wrapped or clipped when the shards were written; re-tokenize with a wider dtype"
    )
}

/// (file, message) of every error of a report.
fn errors(r: &Value) -> Vec<(String, String)> {
    r["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| {
            (
                e["file"].as_str().unwrap_or("").to_string(),
                e["message"].as_str().expect("message").to_string(),
            )
        })
        .collect()
}

#[test]
fn a_dtype_too_narrow_for_the_vocabulary_is_that_files_error() {
    // Llama 3's 128256 ids written by llm.c's write_datafile (as its
    // fineweb.py calls it, with a NumPy array: the uint16 cast wraps),
    // nanoGPT's uint16 memmap, a uint16 .npy and Parquet (pyarrow): the
    // true ids 70000 and 128255 are stored as 4464 and 62719, in range.
    let env = Env::new();
    env.python(
        r#"
def write_datafile(filename, toks, model_desc="gpt-2"):
    assert len(toks) < 2**31, "token count too large"
    if model_desc == "gpt-2":
        magic, version, dtype = 20240520, 1, np.uint16
    elif model_desc == "llama-3":
        magic, version, dtype = 20240801, 7, np.uint32
    header = np.zeros(256, dtype=np.int32)
    header[0] = magic
    header[1] = version
    header[2] = len(toks)
    toks_np = np.array(toks, dtype=dtype)
    with open(filename, "wb") as f:
        f.write(header.tobytes())
        f.write(toks_np.tobytes())

ids = np.random.default_rng(3).integers(0, 60000, 5000)
ids[[17, 4321]] = [70000, 128255]
write_datafile("gpt2_u16.bin", ids)
write_datafile("llama_u32.bin", ids, "llama-3")
ids.astype(np.uint16).tofile("raw_u16.bin")
np.save("tokens.npy", ids.astype(np.uint16))
pq.write_table(pa.table({"tokens": pa.array(ids.astype(np.uint16))}), "flat.parquet")
rows = [ids[i:i + 100].astype(np.uint16) for i in range(0, 5000, 100)]
pq.write_table(pa.table({"tokens": pa.array(rows, pa.list_(pa.uint16()))}), "lists.parquet")
os.makedirs("wide")
np.save("wide/tokens.npy", ids.astype(np.int32))
os.makedirs("i16")
pq.write_table(pa.table({"tokens": pa.array((ids % 30000).astype(np.int16))}), "i16/stats.parquet")
assert (np.fromfile("gpt2_u16.bin", np.uint16)[512:][[17, 4321]] == [4464, 62719]).all()
"#,
    );
    env.write(
        "s.yaml",
        "columns:\n  tokens: {kind: index, size: 128256, dtype: uint16}\n",
    );
    let u16 = too_narrow("uint16", 128255, "size 128256", "65,536");
    // Every uint16 file is its error, though every stored value is in range
    // (no violation) and statistics prove the Parquet files without reading.
    let files = [
        "flat.parquet",
        "gpt2_u16.bin",
        "lists.parquet",
        "raw_u16.bin",
        "tokens.npy",
    ];
    for extra in [&[][..], &["--full-scan"][..], &["--jobs", "1"][..]] {
        let mut args = vec!["-s", "s.yaml"];
        args.extend_from_slice(&files);
        args.extend_from_slice(extra);
        let r = env.check_json(&args, 2);
        let want: Vec<(String, String)> = files.iter().map(|f| (f.to_string(), u16.clone())).collect();
        assert_eq!(errors(&r), want, "{extra:?}");
        assert_eq!(check(&r, "tokens", "index")["violations"], 0);
        assert_eq!(r["rows"], 4 * 5000 + 50);
    }
    // The same report for any thread count, and merged from partials.
    let run = |extra: &[&str]| {
        let mut args = vec!["check", "--format", "json", "-s", "s.yaml"];
        args.extend_from_slice(&files);
        args.extend_from_slice(extra);
        env.run(&args)
    };
    let one = run(&["--jobs", "1"]);
    assert_eq!(one.stdout, run(&["--jobs", "3"]).stdout);
    for (i, f) in files.iter().enumerate() {
        let part = env.run(&["check", "--format", "json", "--partial", "-s", "s.yaml", f]);
        assert_eq!(part.code, 2);
        env.write(&format!("p{i}.json"), &part.stdout);
    }
    let merged = env.run(&[
        "merge", "--format", "json", "p3.json", "p0.json", "p4.json", "p2.json", "p1.json",
    ]);
    assert_eq!((merged.code, merged.stdout), (2, one.stdout));
    // An Arrow stream on stdin is judged on its batches' type.
    env.python(
        "t = pa.table({'tokens': pa.array([1, 2, 3], pa.uint16())})\n\
         with pa.ipc.new_stream('s.arrows', t.schema) as w: w.write_table(t)",
    );
    let stream = std::fs::read(env.path("s.arrows")).expect("stream");
    let (code, out, _) = env.run_piped(&["check", "--format", "json", "-s", "s.yaml", "-"], &stream);
    assert_eq!(code, 2);
    let r: Value = serde_json::from_slice(&out).expect("json");
    assert_eq!(errors(&r), [("<stdin>".to_string(), u16.clone())]);
    // Row-group statistics prove these int16 values below 40000, so the
    // file is never decoded: its type is still judged.
    env.write("i16.yaml", "columns:\n  tokens: {kind: index, size: 40000}\n");
    let r = env.check_json(&["-s", "i16.yaml", "i16/stats.parquet"], 2);
    assert_eq!(
        errors(&r),
        [(
            "i16/stats.parquet".to_string(),
            too_narrow("int16", 39999, "size 40000", "32,768")
        )]
    );
    // The committed Megatron (megatron-core's builder, dtype code 8) and
    // nanoGPT uint16 fixtures too.
    for rel in [
        "megatron/u16_clean.bin",
        "nanogpt/raw/u16_clean.bin",
        "llmc/gpt2_clean.bin",
    ] {
        let path = fixtures().join(rel).display().to_string();
        let r = env.check_json(&["-s", "s.yaml", &path], 2);
        assert_eq!(errors(&r), [(path.clone(), u16.clone())], "{rel}");
    }
    // uint32 and int32 hold the bound: the same ids pass.
    env.write("w.yaml", "columns:\n  tokens: {kind: index, size: 128256}\n");
    let i32_clean = fixtures().join("megatron/i32_clean.bin").display().to_string();
    env.check_json(&["-s", "w.yaml", "llama_u32.bin", "wide/tokens.npy", &i32_clean], 0);
    // The boundary: uint16 holds 0..=65535, so a size of 65536 fits and
    // 65537 does not; with tokenizer_size, the tokenizer's ids must fit.
    for (bound, code) in [
        ("size: 65536", 0),
        ("size: 65537", 2),
        ("size: 65664, tokenizer_size: 65536", 0),
        ("size: 65664, tokenizer_size: 65537", 2),
    ] {
        env.write("b.yaml", &format!("columns:\n  tokens: {{kind: index, {bound}}}\n"));
        let r = env.check_json(&["-s", "b.yaml", "tokens.npy"], code);
        if code == 2 {
            let (top, what) = match bound {
                "size: 65537" => (65536, "size 65537"),
                _ => (65536, "tokenizer_size 65537"),
            };
            assert_eq!(
                errors(&r),
                [("tokens.npy".to_string(), too_narrow("uint16", top, what, "65,536"))]
            );
        }
    }
}

#[test]
fn a_stored_type_is_judged_as_the_file_stores_it() {
    // NumPy float16 holds every whole number up to 2048 only; the reader
    // widens it to float32 (exactly), but the file's type is what counts.
    let env = Env::new();
    env.python(
        "np.save('f16.npy', np.arange(0, 2048, 7).astype(np.float16))\n\
         np.save('f32.npy', np.arange(0, 2048, 7).astype(np.float32))\n\
         np.savez('both.npz', tokens=np.arange(10, dtype=np.int16), labels=np.arange(10, dtype=np.int8))",
    );
    env.write("s.yaml", "columns:\n  f16: {kind: index, size: 4096}\n");
    let r = env.check_json(&["-s", "s.yaml", "f16.npy"], 2);
    assert_eq!(
        errors(&r),
        [(
            "f16.npy".to_string(),
            "column `f16`: stored as float16, which cannot hold id 4095 (size 4096) exactly: ids above 2,048 cannot all be stored exactly in float16, so the tokenizer's larger ids were rounded when the shards were written; re-tokenize with an integer dtype".to_string()
        )]
    );
    env.write("s32.yaml", "columns:\n  f32: {kind: index, size: 4096}\n");
    env.check_json(&["-s", "s32.yaml", "f32.npy"], 0);
    env.write("s2049.yaml", "columns:\n  f16: {kind: index, size: 2049}\n");
    env.check_json(&["-s", "s2049.yaml", "f16.npy"], 0);
    // Signed types hold half their width; a class bound counts the same way.
    env.write(
        "npz.yaml",
        "columns:\n  tokens: {kind: index, size: 32769}\n  labels: {kind: class, num_classes: 129}\n",
    );
    let r = env.check_json(&["-s", "npz.yaml", "both.npz"], 2);
    assert_eq!(
        errors(&r),
        [
            ("both.npz".to_string(), "column `labels`: stored as int8, which cannot hold label 128 (num_classes 129): labels ≥ 128 cannot be stored in int8, so the larger labels were wrapped or clipped when the data was written; rewrite the labels with a wider dtype".to_string()),
            ("both.npz".to_string(), too_narrow("int16", 32768, "size 32769", "32,768")),
        ]
    );
    env.write(
        "ok.yaml",
        "columns:\n  tokens: {kind: index, size: 32768}\n  labels: {kind: class, num_classes: 128}\n",
    );
    env.check_json(&["-s", "ok.yaml", "both.npz"], 0);
}

#[test]
fn wrong_dtype_reads_get_their_hint() {
    let env = Env::new();
    env.python(
        "ids = np.random.default_rng(1).integers(0, 1000, 64)\n\
         ids.astype(np.uint16).tofile('u16.bin')\n\
         ids.astype(np.int32).tofile('i32.bin')",
    );
    // A uint16 file read as uint32: two ids in every value.
    env.write(
        "u32.yaml",
        "columns:\n  tokens: {kind: index, size: 1000, dtype: uint32}\n",
    );
    let r = env.check_json(&["-s", "u32.yaml", "u16.bin"], 1);
    let h = check(&r, "tokens", "index")["hint"].as_str().expect("hint");
    assert!(h.contains("pairs of uint16 ids read as one uint32 value"), "{h}");
    // int32 read as int64 (llm-foundry#452): values >= 2^32.
    env.write(
        "i64.yaml",
        "columns:\n  tokens: {kind: index, size: 1000, dtype: int64}\n",
    );
    let r = env.check_json(&["-s", "i64.yaml", "i32.bin"], 1);
    let h = check(&r, "tokens", "index")["hint"].as_str().expect("hint");
    assert!(h.contains("int32 token data read as int64"), "{h}");
    // Read right, both are clean.
    env.write(
        "ok.yaml",
        "columns:\n  tokens: {kind: index, size: 1000, dtype: uint16}\n",
    );
    env.check_json(&["-s", "ok.yaml", "u16.bin"], 0);
}

#[test]
fn nanogpt_meta_pkl_is_a_bound_source_read_without_unpickling() {
    let env = Env::new();
    let meta = fixtures()
        .join("nanogpt/shakespeare_char/meta.pkl")
        .display()
        .to_string();
    env.write(
        "s.yaml",
        &format!("columns:\n  tokens: {{kind: index, size: {{nanogpt_meta: {meta:?}}}, dtype: uint16}}\n"),
    );
    let bad = fixtures()
        .join("nanogpt/shakespeare_char_bad/train.bin")
        .display()
        .to_string();
    let r = env.check_json(&["-s", "s.yaml", &bad], 1);
    assert_eq!(pairs(&r, "index"), [(3, 33), (10, 1000)]);
    assert_eq!(check(&r, "tokens", "index")["bound"], "0 <= v < 33 (size)");
    let clean = fixtures().join("nanogpt/shakespeare_char").display().to_string();
    let r = env.check_json(&["-s", "s.yaml", &clean], 0);
    assert_eq!(r["files"], 2);
    // A pickle that would run code is refused (exit 2), never executed.
    env.python(
        "import pickle\n\
         class Evil:\n    def __reduce__(self): return (os.system, ('touch pwned',))\n\
         open('evil.pkl', 'wb').write(pickle.dumps({'vocab_size': 33, 'x': Evil()}))",
    );
    env.write(
        "e.yaml",
        "columns:\n  tokens: {kind: index, size: {nanogpt_meta: evil.pkl}, dtype: uint16}\n",
    );
    let r = env.check_json(&["-s", "e.yaml", &bad], 2);
    assert!(
        r["errors"][0]["message"]
            .as_str()
            .expect("m")
            .contains("never unpickles"),
        "{r:#}"
    );
    assert!(!env.path("pwned").exists());
}

/// Writes an llm.c shard (EOT before each document, as `fineweb.py`) and a
/// raw nanoGPT stream (EOT after each, as `prepare.py`) whose documents have
/// planted lengths (long, short, empty; at and across the 4M-token unit
/// marks, one longer than a unit), and `expected.json`: every document
/// violation, computed here from the EOD positions NumPy finds.
fn documents_dataset(env: &Env) {
    env.python(
        r#"
EOT, UNIT, MAX, MIN = 50256, 4 << 20, 2048, 4
rng = np.random.default_rng(11)
def lengths(total):
    out, n = [], 0
    while n < total:
        k = int(rng.integers(1, 1500))
        out.append(k); n += k + 1
    return out
def stream(append, lens):
    parts = []
    for k in lens:
        d = rng.integers(0, EOT, k, dtype=np.uint16)
        parts += [d, [EOT]] if append else [[EOT], d]
    return np.concatenate([np.asarray(p, np.uint16) for p in parts])
def plant(lens):
    # long and short documents, empty ones, one longer than a unit
    for i, k in [(3, 0), (4, 0), (10, 3), (11, 1), (20, 2049), (21, 2048), (40, 70_000), (41, 0), (60, 5_000_000)]:
        lens.insert(i, k)
    return lens
def expected(a, edges):
    p = np.flatnonzero(a == EOT)
    out = {'max_length': [], 'min_length': [], 'empty_document': []}
    segs = [(0, int(p[0]), True)] + [(int(x) + 1, int(y), False) for x, y in zip(p[:-1], p[1:])] + [(int(p[-1]) + 1, len(a), True)]
    for s, e, edge in segs:
        n = e - s
        if edge:
            if n > MAX: out['max_length'].append([s, n])
        elif n == 0: out['empty_document'].append([s, 0])
        else:
            if n > MAX: out['max_length'].append([s, n])
            if n < MIN: out['min_length'].append([s, n])
    return out
# llm.c: EOT first; the shard starts mid-document (a head) and ends in one.
lens = plant(lengths(9_000_000))
llmc = np.concatenate([rng.integers(0, EOT, 2500, dtype=np.uint16), stream(False, lens), rng.integers(0, EOT, 3000, dtype=np.uint16)])
# empty documents right at the unit marks: EOT EOT across 4M and 8M
for m in (UNIT, 2 * UNIT):
    q = int(np.flatnonzero(llmc[m:] == EOT)[0]) + m
    llmc[q + 1] = EOT
header = np.zeros(256, np.int32); header[:3] = [20240520, 1, len(llmc)]
with open('llmc.bin', 'wb') as f:
    f.write(header.tobytes()); f.write(llmc.tobytes())
# nanoGPT: EOT after each document; the stream ends with one.
raw = stream(True, plant(lengths(9_000_000)))
raw.tofile('raw.bin')
json.dump({'llmc.bin': expected(llmc, True), 'raw.bin': expected(raw, True), 'rows': [len(llmc), len(raw)]}, open('expected.json', 'w'))
"#,
    );
    env.write(
        "s.yaml",
        "columns:\n  tokens: {kind: index, size: 50304, eod_id: 50256, max_length: 2048, min_length: 4, dtype: uint16}\n",
    );
}

#[test]
fn eod_id_documents_are_judged_whole_across_units_at_any_jobs() {
    let env = Env::new();
    documents_dataset(&env);
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("expected.json")).expect("read")).expect("json");
    let mut first = None;
    for jobs in ["1", "2"] {
        let report = env.check_json(
            &[
                "-s",
                "s.yaml",
                "llmc.bin",
                "raw.bin",
                "--jobs",
                jobs,
                "--max-examples",
                "100000",
            ],
            1,
        );
        for rule in ["max_length", "min_length", "empty_document"] {
            let (n, ex) = hits(&report, "tokens", rule);
            assert_eq!(n as usize, ex.len(), "{rule}: every example kept");
            for file in ["llmc.bin", "raw.bin"] {
                let got: Vec<(u64, i128)> = ex
                    .iter()
                    .filter(|(f, _, _)| f == file)
                    .map(|(_, r, v)| (*r, v.as_i64().expect("length").into()))
                    .collect();
                let expect: Vec<(u64, i128)> = serde_json::from_value(want[file][rule].clone()).expect("pairs");
                assert_eq!(got, expect, "{file} {rule}");
            }
        }
        // Planted: 3 empty documents in each stream and 2 at the llm.c
        // unit marks; 3 long ones each (2049, 70,000, 5,000,000), and the
        // llm.c shard's two ends (2500 and 3000 tokens, longer alone).
        let count = |f: &str, r: &str| want[f][r].as_array().expect("list").len();
        assert_eq!(
            (count("llmc.bin", "empty_document"), count("raw.bin", "empty_document")),
            (5, 3)
        );
        assert_eq!(
            (count("llmc.bin", "max_length"), count("raw.bin", "max_length")),
            (5, 3)
        );
        assert_eq!(
            check(&report, "tokens", "empty_document")["bound"],
            "no empty documents (two end-of-document ids 50256 in a row)"
        );
        assert_eq!(
            report["rows"],
            want["rows"][0].as_u64().unwrap() + want["rows"][1].as_u64().unwrap()
        );
        let all: usize = ["max_length", "min_length", "empty_document"]
            .iter()
            .map(|r| count("llmc.bin", r) + count("raw.bin", r))
            .sum();
        assert_eq!(report["violations"], all as u64);
        match &first {
            None => first = Some(report),
            Some(f) => assert_eq!(f, &report, "the same report for every --jobs"),
        }
    }
}

#[test]
fn eod_id_documents_reach_violations_out_in_order_and_merge_from_units() {
    let env = Env::new();
    documents_dataset(&env);
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("expected.json")).expect("read")).expect("json");
    let args = ["-s", "s.yaml", "llmc.bin", "raw.bin", "--max-examples", "7"];
    let mut with_out = args.to_vec();
    with_out.extend(["--violations-out", "v.jsonl", "--jobs", "2"]);
    let report = env.check_json(&with_out, 1);
    // Every document violation, in (file, row, rule) order.
    let text = std::fs::read_to_string(env.path("v.jsonl")).expect("violations");
    let got: Vec<(String, u64, String, i64)> = text
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("line");
            (
                v["file"].as_str().expect("file").to_string(),
                v["row"].as_u64().expect("row"),
                v["rule"].as_str().expect("rule").to_string(),
                v["value"].as_i64().expect("value"),
            )
        })
        .collect();
    let order = |r: &str| {
        ["max_length", "min_length", "empty_document"]
            .iter()
            .position(|x| *x == r)
    };
    let mut expect = Vec::new();
    for file in ["llmc.bin", "raw.bin"] {
        for rule in ["max_length", "min_length", "empty_document"] {
            let pairs: Vec<(u64, i64)> = serde_json::from_value(want[file][rule].clone()).expect("pairs");
            expect.extend(
                pairs
                    .into_iter()
                    .map(|(r, v)| (file.to_string(), r, rule.to_string(), v)),
            );
        }
    }
    expect.sort_by_key(|(f, r, rule, _)| (f.clone(), *r, order(rule)));
    assert_eq!(got, expect);
    assert_eq!(report["violations"], expect.len() as u64);

    // Planned as units (each cut after an EOD), checked apart and merged in
    // reverse order: the single run's report.
    let schema = preflight::Schema::from_file(&env.path("s.yaml")).expect("schema");
    let validator = preflight::Validator::new(schema, 7);
    let units: Vec<preflight::WorkUnit> = preflight::plan_paths(
        &[env.path("llmc.bin"), env.path("raw.bin")],
        1,
        Some(validator.schema()),
    )
    .into_iter()
    .map(|mut u| {
        u.file = u.path.file_name().expect("name").to_string_lossy().into_owned();
        u
    })
    .collect();
    assert!(units.len() >= 4, "several units per stream: {}", units.len());
    let opts = preflight::ScanOptions {
        jobs: 1,
        ..Default::default()
    };
    let mut merged = validator.partial();
    for u in units.iter().rev() {
        let part = preflight::check_units(&validator, std::slice::from_ref(u), &opts);
        let back = preflight::Partial::from_json(&part.to_json(&validator))
            .expect("partial")
            .0;
        merged.merge(back);
    }
    let single = env.run(&[
        "check",
        "--format",
        "json",
        "-s",
        "s.yaml",
        "llmc.bin",
        "raw.bin",
        "--max-examples",
        "7",
    ]);
    assert_eq!(
        preflight::report::json::render(&merged.report(&validator)),
        single.stdout
    );
}

#[test]
fn eod_id_belongs_to_flat_token_streams() {
    let env = Env::new();
    for (schema, key, says) in [
        (
            "{kind: class, num_classes: 3, eod_id: 2}",
            "eod_id",
            "does not apply to kind `class`",
        ),
        (
            "{kind: index, size: 9, eod_id: 2, max_length: 3, pad_id: 0}",
            "eod_id",
            "`pad_id` judges list rows",
        ),
        ("{kind: index, size: 9, eod_id: 2.5}", "eod_id", "not a whole number"),
    ] {
        env.write("s.yaml", &format!("columns:\n  tokens: {schema}\n"));
        let r = env.check_json(&["-s", "s.yaml", "x.bin"], 2);
        let msg = r["errors"][0]["message"].as_str().expect("message");
        assert!(msg.contains(key) && msg.contains(says), "{schema}: {msg}");
    }
    // A Megatron dataset's rows are its documents: eod_id is its error,
    // while a raw stream beside it is checked.
    env.write(
        "s.yaml",
        "columns:\n  tokens: {kind: index, size: 65536, eod_id: 7, dtype: uint16}\n",
    );
    env.python("np.array([1, 7, 7, 2], np.uint16).tofile('raw.bin')");
    let mega = fixtures().join("megatron/u16_clean.bin");
    let r = env.check_json(&["-s", "s.yaml", mega.to_str().expect("utf-8"), "raw.bin"], 2);
    let msg = r["errors"][0]["message"].as_str().expect("message");
    assert!(msg.contains("rows are sequences already"), "{msg}");
    assert_eq!(
        hits(&r, "tokens", "empty_document").1,
        [("raw.bin".to_string(), 2, Value::from(0))]
    );
}

#[test]
fn init_proposes_dtype_eod_id_and_the_model_bounds_for_token_shards() {
    let env = Env::new();
    // A GPT-2-like model: the embedding padded to 50,304 rows, a real
    // tokenizer.json (written by `tokenizers`) of 50,257 ids, EOS 50256.
    env.python(
        r#"
from tokenizers import Tokenizer, models
os.makedirs('model')
tok = Tokenizer(models.WordLevel({f't{i}': i for i in range(50256)}, unk_token='t0'))
tok.add_special_tokens(['<|endoftext|>'])
assert tok.token_to_id('<|endoftext|>') == 50256
tok.save('model/tokenizer.json')
json.dump({'model_type': 'gpt2', 'vocab_size': 50304, 'n_positions': 1024, 'eos_token_id': 50256, 'bos_token_id': 50256},
          open('model/config.json', 'w'))
rng = np.random.default_rng(5)
# nanoGPT: EOT after each document, uint16.
docs = [rng.integers(0, 50256, int(rng.integers(50, 900))).tolist() + [50256] for _ in range(300)]
docs[10] = [50256]                      # an empty document
docs[20][3] = 50300                     # an untrained row: [T, P)
docs[30][5] = 50304                     # past the embedding
os.makedirs('gpt2')
np.array(sum(docs, []), np.uint16).tofile('gpt2/train.bin')
at = lambda d, i: sum(len(x) for x in docs[:d]) + i
json.dump({'index': at(30, 5), 'tokenizer_size': at(20, 3), 'empty_document': at(10, 0)}, open('rows.json', 'w'))
# llm.c Llama 3: <|begin_of_text|> before each document, uint32 header.
toks = sum([[128000] + rng.integers(0, 128000, int(rng.integers(50, 900))).tolist() for _ in range(200)], [])
header = np.zeros(256, np.int32); header[:3] = [20240801, 7, len(toks)]
os.makedirs('llama')
with open('llama/fineweb_train_000001.bin', 'wb') as f:
    f.write(header.tobytes()); f.write(np.array(toks, np.uint32).tobytes())
# A raw uint32 stream, no EOD anywhere.
os.makedirs('wide')
rng.integers(0, 100_000, 50_000).astype(np.uint32).tofile('wide/train.bin')
"#,
    );
    let out = env.run(&["init", "gpt2", "--model", "model", "-o", "gpt2.yaml"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(env.path("gpt2.yaml")).expect("schema");
    for want in [
        "  tokens:\n    kind: index\n    size: {hf_config: model, key: vocab_size}",
        "tokenizer_size: {tokenizer: model/tokenizer.json}",
        "dtype: uint16  # raw .bin streams: the model's vocab_size 50304 fits uint16",
        "eod_id: 50256  # the model's eos_token_id: seen 300 times in ",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }
    // The proposal checks the data: the planted ids and the empty document.
    let r = env.check_json(&["-s", "gpt2.yaml", "gpt2", "--max-examples", "100"], 1);
    let rows: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("rows.json")).expect("rows")).expect("json");
    for (rule, value) in [("index", 50304), ("tokenizer_size", 50300), ("empty_document", 0)] {
        assert_eq!(
            hits(&r, "tokens", rule).1,
            [(
                "gpt2/train.bin".to_string(),
                rows[rule].as_u64().expect("row"),
                Value::from(value)
            )],
            "{rule}"
        );
    }
    assert_eq!(r["violations"], 3);

    let out = env.run(&["init", "llama", "-o", "llama.yaml"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(env.path("llama.yaml")).expect("schema");
    assert!(
        text.contains("eod_id: 128000  # Llama 3's <|begin_of_text|>: seen 200 times"),
        "{text}"
    );
    assert!(!text.contains("dtype:"), "an llm.c header names its dtype:\n{text}");
    env.check_json(&["-s", "llama.yaml", "llama"], 0);

    let out = env.run(&["init", "wide", "-o", "wide.yaml"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(env.path("wide.yaml")).expect("schema");
    assert!(
        text.contains("dtype: uint32  # raw .bin streams: guessed from the bytes"),
        "{text}"
    );
    assert!(text.contains("# no end-of-document id seen regularly"), "{text}");
    env.check_json(&["-s", "wide.yaml", "wide"], 0);
}

#[test]
fn an_empty_megatron_dataset_passes_with_a_note() {
    // megatron/empty: 0 sequences, a 0-byte .bin (tests/fixtures/tokens). It
    // holds nothing wrong, but megatron-core's default reader cannot map it.
    let env = Env::new();
    env.write("s.yaml", "columns:\n  tokens: {kind: index, size: 50257}\n");
    let bin = fixtures().join("megatron/empty.bin").display().to_string();
    let r = env.check_json(&["-s", "s.yaml", &bin], 0);
    assert_eq!(r["rows"], 0);
    let w = r["warnings"].as_array().expect("warnings");
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].as_str().expect("w").contains("cannot mmap an empty file"), "{w:?}");
}
