//! Token shards written by the real MosaicML Streaming and LitData writers
//! (tests/fixtures/tokens, made by its make.py): every planted bad id found
//! at its shard and row with its value, exactly as expected.json lists them,
//! clean twins passing, every compression codec giving the same report, and
//! broken shards reported as their own files' errors in bounded memory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::util::Env;

fn tokens_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokens")
}

fn manifest() -> Vec<Value> {
    let text = std::fs::read_to_string(tokens_dir().join("expected.json")).expect("expected.json");
    let v: Value = serde_json::from_str(&text).expect("json");
    v["fixtures"].as_array().expect("fixtures").clone()
}

fn fixture(path: &str) -> Value {
    manifest()
        .into_iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("{path} is not in expected.json"))
}

/// A schema checking every numeric column of an MDS fixture against V = 1000
/// (`bytes` read as uint16, as the fixtures store them).
fn mds_schema(f: &Value) -> String {
    let mut s = String::from("columns:\n");
    for (name, enc) in f["columns"].as_object().expect("columns") {
        match enc.as_str().expect("encoding") {
            "str" | "pkl" => {}
            "bytes" => s += &format!("  {name}: {{kind: index, size: 1000, dtype: uint16}}\n"),
            _ => s += &format!("  {name}: {{kind: index, size: 1000}}\n"),
        }
    }
    s
}

/// (column, file relative to tests/fixtures/tokens, row, value) of every
/// violation in a report, sorted.
fn found(report: &Value) -> Vec<(String, String, u64, Value)> {
    let root = format!("{}/", tokens_dir().display());
    let mut out = Vec::new();
    for c in report["checks"].as_array().expect("checks") {
        for e in c["examples"].as_array().expect("examples") {
            out.push((
                c["column"].as_str().expect("column").to_string(),
                e["file"].as_str().expect("file").trim_start_matches(&root).to_string(),
                e["row"].as_u64().expect("row"),
                e["value"].clone(),
            ));
        }
        let shown = c["examples"].as_array().map_or(0, |e| e.len()) as u64;
        assert_eq!(c["violations"].as_u64(), Some(shown), "every violation is an example");
    }
    out.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
    out
}

/// The same, from expected.json.
fn planted(f: &Value, default_column: &str) -> Vec<(String, String, u64, Value)> {
    let mut out: Vec<_> = f["violations"]
        .as_array()
        .expect("violations")
        .iter()
        .map(|v| {
            (
                v["column"].as_str().unwrap_or(default_column).to_string(),
                v["file"].as_str().expect("file").to_string(),
                v["row"].as_u64().expect("row"),
                v["value"].clone(),
            )
        })
        .collect();
    out.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
    out
}

fn check(env: &Env, schema: &str, paths: &[PathBuf], code: i32) -> Value {
    env.write("s.yaml", schema);
    let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let mut args = vec!["-s", "s.yaml", "--max-examples", "1000000000", "--jobs", "2"];
    args.extend(paths.iter().map(String::as_str));
    env.check_json(&args, code)
}

const MDS_SETS: [&str; 11] = [
    "mds/encodings",
    "mds/encodings_clean",
    "mds/tokens_i32",
    "mds/tokens_i32_clean",
    "mds/tokens_i32_zstd",
    "mds/tokens_i32_zstd7",
    "mds/tokens_i32_gz",
    "mds/tokens_i32_br",
    "mds/tokens_i32_bz2",
    "mds/tokens_i32_snappy",
    "mds/unsafe_pkl",
];

#[test]
fn mds_planted_violations_are_exactly_the_manifests() {
    let env = Env::new();
    let mut total = 0;
    for set in MDS_SETS {
        let f = fixture(set);
        let want = planted(&f, "tokens");
        let code = if want.is_empty() { 0 } else { 1 };
        let report = check(&env, &mds_schema(&f), &[tokens_dir().join(set)], code);
        assert_eq!(report["rows"], f["rows"], "{set}");
        assert_eq!(report["files"], f["shards"].as_array().expect("shards").len(), "{set}");
        assert_eq!(found(&report), want, "{set}");
        total += want.len();
    }
    // 8 in encodings, 2 in each of the seven tokens_i32 sets.
    assert_eq!(total, 8 + 7 * 2);
}

#[test]
fn mds_every_codec_gives_the_uncompressed_report() {
    let env = Env::new();
    let schema = "columns:\n  tokens: {kind: index, size: 1000, max_length: 15}\n  id: {kind: class, num_classes: 7}\n";
    let plain = check(&env, schema, &[tokens_dir().join("mds/tokens_i32")], 1);
    // Names differ by folder and codec suffix only.
    let strip = |r: &Value, set: &str, ext: &str| -> String {
        let text = serde_json::to_string(&json!({"checks": r["checks"], "rows": r["rows"], "errors": r["errors"]}))
            .expect("json");
        text.replace(&format!("{set}/"), "SET/").replace(ext, "")
    };
    let want = strip(&plain, "mds/tokens_i32", "\0");
    assert!(
        want.contains("max_length") && want.contains("SET/shard.00001.mds"),
        "{want}"
    );
    for (set, ext) in [
        ("mds/tokens_i32_zstd", ".zstd"),
        ("mds/tokens_i32_zstd7", ".zstd"),
        ("mds/tokens_i32_gz", ".gz"),
        ("mds/tokens_i32_br", ".br"),
        ("mds/tokens_i32_bz2", ".bz2"),
        ("mds/tokens_i32_snappy", ".snappy"),
    ] {
        let r = check(&env, schema, &[tokens_dir().join(set)], 1);
        assert_eq!(strip(&r, set, ext), want, "{set}");
    }
}

#[test]
fn mds_broken_shards_are_their_files_errors_and_the_rest_is_checked() {
    let env = Env::new();
    let schema = "columns:\n  tokens: {kind: index, size: 1000}\n";
    let dirs = [
        tokens_dir().join("mds/broken_truncated"),
        tokens_dir().join("mds/broken_count"),
        tokens_dir().join("mds/tokens_i32_clean"),
    ];
    let report = check(&env, schema, &dirs, 2);
    let errors: BTreeMap<String, String> = report["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| {
            let file = e["file"].as_str().expect("file");
            let rel = file.trim_start_matches(&format!("{}/", tokens_dir().display()));
            (rel.to_string(), e["message"].as_str().expect("message").to_string())
        })
        .collect();
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(
        errors["mds/broken_truncated/shard.00002.mds"].contains("the file is 283 bytes, index.json says 286"),
        "{errors:#?}"
    );
    assert!(
        errors["mds/broken_count/shard.00000.mds"].contains("the shard holds 4 samples, index.json says 5"),
        "{errors:#?}"
    );
    // The intact shards of both broken sets were still checked.
    let hits: Vec<(String, String, u64, Value)> = found(&report);
    assert_eq!(
        hits,
        vec![
            (
                "tokens".into(),
                "mds/broken_count/shard.00001.mds".into(),
                2,
                json!(50000)
            ),
            (
                "tokens".into(),
                "mds/broken_truncated/shard.00000.mds".into(),
                2,
                json!(1000)
            ),
            (
                "tokens".into(),
                "mds/broken_truncated/shard.00001.mds".into(),
                2,
                json!(50000)
            ),
        ]
    );
    assert_eq!(report["files"], 9);
}

#[test]
fn mds_pickle_and_untyped_bytes_are_refused_only_when_asked_for() {
    let env = Env::new();
    let pkl = tokens_dir().join("mds/unsafe_pkl");
    let r = check(
        &env,
        "columns:\n  tokens: {kind: index, size: 1000}\n",
        std::slice::from_ref(&pkl),
        0,
    );
    assert_eq!(r["rows"], 3);
    let r = check(
        &env,
        "columns:\n  tokens: {kind: index, size: 1000}\n  meta: {kind: index, size: 10}\n",
        &[pkl],
        2,
    );
    let message = r["errors"][0]["message"].as_str().expect("message");
    assert!(
        message.contains("column meta") && message.contains("`pkl`"),
        "{message}"
    );
    // `bytes` without dtype: each shard's error, with the fix in the message.
    let enc = tokens_dir().join("mds/encodings");
    let r = check(&env, "columns:\n  raw: {kind: index, size: 1000}\n", &[enc], 2);
    let errors = r["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 3);
    assert!(
        errors[0]["message"]
            .as_str()
            .expect("message")
            .contains("dtype: uint16"),
        "{errors:?}"
    );
}

/// A hostile MDS case: folder, shard bytes, the index's sample count and
/// raw size (the shard's when `None`), the encoding, the expected error.
type Lie = (&'static str, Vec<u8>, u64, Option<u64>, &'static str, String);

/// A one-shard MDS dataset of column `label` (`int`): the shard's bytes and
/// the index's claims, built by hand.
fn write_mds(env: &Env, dir: &str, shard: &[u8], samples: u64, raw_bytes: u64, encoding: &str) {
    let size = if encoding == "int" { json!(8) } else { Value::Null };
    let index = json!({"version": 2, "shards": [{
        "column_encodings": [encoding], "column_names": ["label"], "column_sizes": [size],
        "compression": null, "format": "mds", "hashes": [], "samples": samples, "size_limit": null,
        "version": 2, "raw_data": {"basename": "shard.00000.mds", "bytes": raw_bytes, "hashes": {}},
        "zip_data": null}]});
    std::fs::create_dir_all(env.path(dir)).expect("mkdir");
    std::fs::write(env.path(&format!("{dir}/index.json")), index.to_string()).expect("index");
    std::fs::write(env.path(&format!("{dir}/shard.00000.mds")), shard).expect("shard");
}

fn shard(samples: &[Vec<u8>]) -> Vec<u8> {
    let n = samples.len() as u32;
    let mut offs = vec![4 + 4 * (n + 1)];
    for s in samples {
        offs.push(offs.last().copied().unwrap_or(0) + s.len() as u32);
    }
    let mut out = n.to_le_bytes().to_vec();
    for o in offs {
        out.extend_from_slice(&o.to_le_bytes());
    }
    samples.iter().for_each(|s| out.extend_from_slice(s));
    out
}

#[test]
fn mds_lying_shards_are_errors_in_bounded_memory() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  label: {kind: index, size: 1000, max_length: 100}\n",
    );
    let ok = shard(&(0..3i64).map(|v| v.to_le_bytes().to_vec()).collect::<Vec<_>>());
    let n = ok.len() as u64;
    // A variable-size sample whose size claims 4 GiB - 1 bytes.
    let mut big = u32::MAX.to_le_bytes().to_vec();
    big.extend_from_slice(&[9, 4, 1, 7]);
    // (folder, shard, samples in the index, its raw bytes if not the shard's, encoding, error)
    let cases: Vec<Lie> = vec![
        (
            "count",
            ok.clone(),
            4,
            None,
            "int",
            "the shard holds 3 samples, index.json says 4".into(),
        ),
        (
            "size",
            ok.clone(),
            3,
            Some(n + 1),
            "int",
            format!("the file is {n} bytes, index.json says {}", n + 1),
        ),
        (
            "sample",
            shard(&[big]),
            1,
            None,
            "ndarray",
            "run past the sample".into(),
        ),
        (
            "raw_huge",
            ok.clone(),
            3,
            Some(1 << 40),
            "int",
            "cannot address more than 4 GiB".into(),
        ),
        (
            "columns",
            ok.clone(),
            3,
            None,
            "ndarray:uint16:2",
            "its encoding takes 4".into(),
        ),
    ];
    for (dir, bytes, samples, raw, enc, want) in cases {
        let raw = raw.unwrap_or(bytes.len() as u64);
        write_mds(&env, dir, &bytes, samples, raw, enc);
        let (code, kb, out) = env.peak(&["check", "--format", "json", "-s", "s.yaml", dir]);
        assert_eq!(code, 2, "{dir}: {out}");
        let r: Value = serde_json::from_str(&out).expect("json");
        let message = r["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains(&want), "{dir}: {message:?} lacks {want:?}");
        assert!(kb < 64 * 1024, "{dir}: peak RSS {kb} KB");
    }
}

#[test]
fn mds_rows_of_different_dtypes_and_text_numbers() {
    // `ndarray` without a fixed dtype: rows of u8, i64 and f32 in one batch
    // are widened together (to float64) and every value still judged.
    let env = Env::new();
    let with_size = |body: Vec<u8>| {
        let mut s = (body.len() as u32).to_le_bytes().to_vec();
        s.extend(body);
        s
    };
    let a = with_size(vec![8, 1 << 2, 2, 5, 200]);
    let b = with_size([vec![65, 1 << 2, 1], (-3i64).to_le_bytes().to_vec()].concat());
    let c = with_size([vec![34, 1 << 2, 1], 2.5f32.to_le_bytes().to_vec()].concat());
    let bytes = shard(&[a, b, c]);
    write_mds(&env, "nd", &bytes, 3, bytes.len() as u64, "ndarray");
    let r = check(
        &env,
        "columns:\n  label: {kind: index, size: 100}\n",
        &[env.path("nd")],
        1,
    );
    let hits: Vec<(String, u64, Value)> = r["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .flat_map(|c| {
            let rule = c["rule"].as_str().unwrap_or_default().to_string();
            c["examples"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |e| (rule.clone(), e["row"].as_u64().unwrap_or(u64::MAX), e["value"].clone()))
        })
        .collect();
    assert_eq!(hits.len(), 3, "{hits:?}");
    assert!(
        hits.iter()
            .any(|h| h.1 == 0 && h.2 == json!(200.0) || h.2 == json!(200)),
        "{hits:?}"
    );
    assert!(hits.iter().any(|h| h.1 == 1), "{hits:?}");
    assert!(hits.iter().any(|h| h.1 == 2 && h.0 != "index"), "{hits:?}");
    // `str_int`: decimal text read as an integer column.
    let rows: Vec<Vec<u8>> = ["7", "1000", "x"]
        .iter()
        .map(|t| with_size(t.as_bytes().to_vec()))
        .collect();
    let bytes = shard(&rows[..2]);
    write_mds(&env, "si", &bytes, 2, bytes.len() as u64, "str_int");
    let r = check(
        &env,
        "columns:\n  label: {kind: index, size: 100}\n",
        &[env.path("si")],
        1,
    );
    assert_eq!(
        found(&r).into_iter().map(|h| (h.2, h.3)).collect::<Vec<_>>(),
        vec![(1, json!(1000))]
    );
    let bytes = shard(&rows);
    write_mds(&env, "si", &bytes, 3, bytes.len() as u64, "str_int");
    let r = check(
        &env,
        "columns:\n  label: {kind: index, size: 100}\n",
        &[env.path("si")],
        2,
    );
    let message = r["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("row 2") && message.contains("not an integer"),
        "{message}"
    );
}

/// A `json` column holding lists of token ids (`MDSWriter(columns={'tokens':
/// 'json'})`): the reader's `json.loads` gives a Python list, whose ids a
/// collate turns into a tensor; each id is judged, not the row's text. Any
/// other JSON value is that shard's error, and the other shards are checked.
#[test]
fn mds_json_lists_of_ids_are_judged_id_by_id() {
    let env = Env::new();
    // streaming 0.13.0's JSON encoding (`encodings.py`): json.dumps(obj,
    // sort_keys=True) in UTF-8; a shard: u32 n, u32 offsets[n + 1], then each
    // sample as a u32 size (one variable column) and its bytes.
    env.python(
        r#"
import struct
def shard(objs):
    samples = [json.dumps(o, sort_keys=True).encode('utf-8') for o in objs]
    samples = [struct.pack('<I', len(s)) + s for s in samples]
    off = [4 + 4 * (len(samples) + 1)]
    for s in samples:
        off.append(off[-1] + len(s))
    return struct.pack('<I', len(samples)) + struct.pack(f'<{len(off)}I', *off) + b''.join(samples)
sets = {'good': [[1, 2, 300], [4], [], [99, 100, 2**40], [0] * 5],
        'bad': [[1], {'ids': [500]}]}
os.makedirs('d', exist_ok=True)
shards = []
for i, name in enumerate(['good', 'bad']):
    data = shard(sets[name])
    base = f'shard.{i:05}.mds'
    open('d/' + base, 'wb').write(data)
    shards.append({'column_encodings': ['json'], 'column_names': ['tokens'], 'column_sizes': [None],
                   'compression': None, 'format': 'mds', 'hashes': [], 'samples': len(sets[name]),
                   'size_limit': 1 << 26, 'version': 2,
                   'raw_data': {'basename': base, 'bytes': len(data), 'hashes': {}}, 'zip_data': None})
json.dump({'version': 2, 'shards': shards}, open('d/index.json', 'w'))
# The reader's decode of the good shard: json.loads of each sample.
raw = open('d/shard.00000.mds', 'rb').read()
n = struct.unpack_from('<I', raw)[0]
off = struct.unpack_from(f'<{n + 1}I', raw, 4)
bad, long = [], []
for r in range(n):
    ids = json.loads(raw[off[r] + 4:off[r + 1]])
    bad += [[r, v] for v in ids if v >= 100]
    long += [[r, len(ids)] for _ in [0] if len(ids) > 3]
json.dump({'bad': bad, 'long': long, 'rows': n}, open('want.json', 'w'))
"#,
    );
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("want.json")).expect("want")).expect("json");
    let r = check(
        &env,
        "columns:\n  tokens: {kind: index, size: 100, max_length: 3}\n",
        &[env.path("d")],
        2,
    );
    let pairs = |rule: &str| -> Value {
        let c = r["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .find(|c| c["rule"] == rule)
            .expect("check");
        assert_eq!(
            c["violations"].as_u64(),
            Some(c["examples"].as_array().expect("examples").len() as u64)
        );
        for e in c["examples"].as_array().expect("examples") {
            assert_eq!(e["file"], env.path("d/shard.00000.mds").display().to_string());
        }
        Value::Array(
            c["examples"]
                .as_array()
                .expect("examples")
                .iter()
                .map(|e| json!([e["row"], e["value"]]))
                .collect(),
        )
    };
    assert_eq!(pairs("index"), want["bad"]);
    assert_eq!(pairs("max_length"), want["long"]);
    assert_eq!(pairs("not_integer"), json!([]));
    assert_eq!(r["rows"], want["rows"]);
    let errors = r["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0]["file"], env.path("d/shard.00001.mds").display().to_string());
    let msg = errors[0]["message"].as_str().expect("message");
    assert!(msg.contains("only lists of numbers"), "{msg}");
}

// ---------------------------------------------------------------------------
// LitData
// ---------------------------------------------------------------------------

const LITDATA_SETS: [(&str, &str); 10] = [
    ("litdata/pytree", PYTREE),
    ("litdata/pytree_clean", PYTREE),
    ("litdata/pytree_zstd_chunk", PYTREE),
    ("litdata/pytree_zstd_batch", PYTREE),
    ("litdata/pytree_zstd_sample", PYTREE),
    ("litdata/tokens", TOKENS),
    ("litdata/tokens_zstd_chunk", TOKENS),
    ("litdata/tokens_np_u16", TOKENS),
    ("litdata/arrow_rows", ROWS),
    ("litdata/json_rows", ROWS),
];

const PYTREE: &str = "columns:
  label: {kind: class, num_classes: 8}
  tokens: {kind: index, size: 1000}
  tokens_i32: {kind: index, size: 1000}
  mat: {kind: index, size: 1000}
  ten2d: {kind: index, size: 1000}
  text: {kind: values, allowed: ['item 0', 'item 1', 'item 2', 'item 3', 'item 4', 'item 5', 'item 6', 'item 7']}
";
const TOKENS: &str = "columns:\n  tokens: {kind: index, size: 1000}\n";
const ROWS: &str = "columns:\n  input_ids: {kind: index, size: 1000}\n  label: {kind: class, num_classes: 3}\n";

#[test]
fn litdata_planted_violations_are_exactly_the_manifests() {
    let env = Env::new();
    let mut total = 0;
    for (set, schema) in LITDATA_SETS {
        let f = fixture(set);
        let want = planted(&f, "tokens");
        let code = if want.is_empty() { 0 } else { 1 };
        let report = check(&env, schema, &[tokens_dir().join(set)], code);
        assert_eq!(report["rows"], f["rows"], "{set}");
        assert_eq!(report["files"], f["chunks"].as_array().expect("chunks").len(), "{set}");
        assert_eq!(found(&report), want, "{set}");
        total += want.len();
    }
    assert_eq!(total, 4 * 5 + 2 + 2 + 1 + 2 + 2);
}

#[test]
fn litdata_compressed_chunks_give_the_uncompressed_report() {
    let env = Env::new();
    let schema = "columns:\n  tokens: {kind: index, size: 1000, max_length: 5}\n  ten2d: {kind: index, size: 1000}\n";
    let strip = |r: &Value, set: &str| -> String {
        serde_json::to_string(&json!({"checks": r["checks"], "rows": r["rows"], "errors": r["errors"]}))
            .expect("json")
            .replace(&format!("{set}/"), "SET/")
            .replace(".zstd.bin", ".bin")
    };
    let want = strip(
        &check(&env, schema, &[tokens_dir().join("litdata/pytree")], 1),
        "litdata/pytree",
    );
    assert!(want.contains("max_length"), "{want}");
    for set in [
        "litdata/pytree_zstd_chunk",
        "litdata/pytree_zstd_batch",
        "litdata/pytree_zstd_sample",
    ] {
        assert_eq!(
            strip(&check(&env, schema, &[tokens_dir().join(set)], 1), set),
            want,
            "{set}"
        );
    }
    // TokensLoader: a row is an item as written, so max_length judges the
    // original sequences (5..12 tokens).
    let schema = "columns:\n  tokens: {kind: index, size: 100000, max_length: 10}\n";
    let a = check(&env, schema, &[tokens_dir().join("litdata/tokens")], 1);
    let b = check(&env, schema, &[tokens_dir().join("litdata/tokens_zstd_chunk")], 1);
    assert_eq!(strip(&a, "litdata/tokens"), strip(&b, "litdata/tokens_zstd_chunk"));
    let long: Vec<(String, u64, Value)> = crate::util::hits(&a, "tokens", "max_length")
        .1
        .into_iter()
        .map(|(f, r, v)| (f.rsplit('/').next().unwrap_or_default().to_string(), r, v))
        .collect();
    assert_eq!(
        long,
        vec![
            ("chunk-0-1.bin".into(), 2, json!(11)),
            ("chunk-0-2.bin".into(), 0, json!(12))
        ]
    );
}

/// A one-chunk LitData dataset: `config` and the chunk entry as given.
fn write_litdata(env: &Env, dir: &str, name: &str, chunk: &[u8], entry: Value, config: Value) {
    std::fs::create_dir_all(env.path(dir)).expect("mkdir");
    let index = json!({"chunks": [entry], "config": config, "updated_at": "0"});
    std::fs::write(env.path(&format!("{dir}/index.json")), index.to_string()).expect("index");
    std::fs::write(env.path(&format!("{dir}/{name}")), chunk).expect("chunk");
}

/// The classic chunk layout: u32 count, absolute u32 offsets, items.
fn classic_chunk(items: &[Vec<u8>]) -> Vec<u8> {
    shard(items)
}

#[test]
fn litdata_lying_chunks_are_errors_in_bounded_memory() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  tokens: {kind: index, size: 1000}\n");
    let tokens_cfg = json!({"compression": null, "compression_level": null, "data_format": ["no_header_numpy:5"],
        "data_spec": null, "encryption": null, "item_loader": "TokensLoader"});
    let leaf = r#"{"type": null, "context": null, "children_spec": []}"#;
    let tree_cfg = |formats: Value| {
        json!({"compression": null, "compression_level": null, "data_format": formats,
            "data_spec": format!(r#"[1, {{"type": "builtins.dict", "context": "[\"tokens\"]", "children_spec": [{leaf}]}}]"#),
            "encryption": null, "item_loader": "PyTreeLoader"})
    };
    let items: Vec<Vec<u8>> = vec![vec![1, 0, 2, 0], vec![3, 0]];
    let good = classic_chunk(&items);
    let n = good.len() as u64;
    let entry = |size: u64, bytes: u64, dim: Value| json!({"chunk_bytes": bytes, "chunk_size": size, "dim": dim, "filename": "chunk-0-0.bin"});
    // A tensor leaf whose header claims 2^32-1 dims.
    let mut lie = vec![12, 0, 0, 0];
    lie.extend_from_slice(&[0, 0, 0, 16, 255, 255, 255, 255, 0, 0, 0, 1]);
    let lie = classic_chunk(&[lie]);
    let cases: Vec<(&str, Vec<u8>, Value, Value, String)> = vec![
        (
            "count",
            good.clone(),
            entry(3, n, json!(3)),
            tokens_cfg.clone(),
            "the chunk holds 2 items, index.json says 3".into(),
        ),
        (
            "size",
            good[..n as usize - 1].to_vec(),
            entry(2, n, json!(3)),
            tokens_cfg.clone(),
            format!("the file is {} bytes, index.json says {n}", n - 1),
        ),
        (
            "dim",
            good.clone(),
            entry(2, n, json!(4)),
            tokens_cfg.clone(),
            "the chunk holds 3 tokens, index.json says 4 (dim)".into(),
        ),
        (
            "count_2e32",
            u32::MAX.to_le_bytes().to_vec(),
            entry(u32::MAX as u64, 4, Value::Null),
            tokens_cfg.clone(),
            "run past the end".into(),
        ),
        (
            "tensor",
            lie.clone(),
            entry(1, lie.len() as u64, Value::Null),
            tree_cfg(json!(["tensor"])),
            "dims run past the leaf".into(),
        ),
        (
            "pickle",
            good.clone(),
            entry(2, n, Value::Null),
            tree_cfg(json!(["pickle"])),
            "never loads".into(),
        ),
        (
            "encrypted",
            good.clone(),
            entry(2, n, Value::Null),
            json!({"encryption": {"type": "fernet"}, "data_format": ["int"], "item_loader": "PyTreeLoader"}),
            "encrypted".into(),
        ),
        (
            "parquet",
            good.clone(),
            entry(2, n, Value::Null),
            json!({"data_format": ["int"], "item_loader": "ParquetLoader"}),
            "`ParquetLoader` is not supported".into(),
        ),
    ];
    for (dir, bytes, entry, config, want) in cases {
        write_litdata(&env, dir, "chunk-0-0.bin", &bytes, entry, config);
        let (code, kb, out) = env.peak(&["check", "--format", "json", "-s", "s.yaml", dir]);
        assert_eq!(code, 2, "{dir}: {out}");
        let r: Value = serde_json::from_str(&out).expect("json");
        let message = r["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains(&want), "{dir}: {message:?} lacks {want:?}");
        assert!(kb < 64 * 1024, "{dir}: peak RSS {kb} KB");
    }
}

#[test]
fn mds_a_decompressed_twin_is_checked_once() {
    // A reader's cache keeps shard.N.mds beside shard.N.mds.zstd: a search
    // checks the raw one only, so no sample counts twice.
    let env = Env::new();
    let dir = env.path("cache");
    std::fs::create_dir_all(&dir).expect("mkdir");
    for entry in std::fs::read_dir(tokens_dir().join("mds/tokens_i32_zstd")).expect("dir") {
        let p = entry.expect("entry").path();
        std::fs::copy(&p, dir.join(p.file_name().expect("name"))).expect("copy");
    }
    let zipped = std::fs::read(dir.join("shard.00001.mds.zstd")).expect("shard");
    let raw = zstd::decode_all(&zipped[..]).expect("zstd");
    std::fs::write(dir.join("shard.00001.mds"), raw).expect("write");
    let r = check(&env, "columns:\n  tokens: {kind: index, size: 1000}\n", &[dir], 1);
    assert_eq!(r["files"], 3);
    assert_eq!(r["rows"], 8);
    let files: Vec<String> = found(&r)
        .into_iter()
        .map(|h| h.1.rsplit('/').next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(files, vec!["shard.00000.mds.zstd", "shard.00001.mds"]);
}

#[test]
fn a_schema_dtype_must_agree_with_the_recorded_one() {
    // `dtype:` says how raw bytes are stored; where the shard or chunk
    // records a type, a different one is the file's error (the dtype flag
    // that was not propagated), per sample for per-sample dtypes.
    let env = Env::new();
    let schema = "columns:\n  tokens: {kind: index, size: 1000, dtype: uint16}\n";
    let r = check(
        &env,
        schema,
        &[tokens_dir().join("mds/tokens_i32"), tokens_dir().join("litdata/tokens")],
        2,
    );
    let errors = r["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 6, "{errors:#?}");
    assert!(errors.iter().all(|e| {
        let m = e["message"].as_str().unwrap_or_default();
        m.contains("stored as int32") && m.contains("dtype: uint16")
    }));
    // The matching dtype passes through to the checks.
    let r = check(&env, schema, &[tokens_dir().join("litdata/tokens_np_u16")], 1);
    assert_eq!(found(&r).len(), 1);
    let r = check(
        &env,
        "columns:\n  dyn: {kind: index, size: 1000000000, dtype: uint16}\n",
        &[tokens_dir().join("mds/encodings")],
        2,
    );
    // (uint16 cannot hold that bound either: that is its own error.)
    let messages = r["errors"].to_string();
    assert!(messages.contains("row 1: column dyn: int32 values"), "{messages}");
    assert!(messages.contains("column `dyn`: stored as uint16"), "{messages}");
}

#[test]
fn mds_a_shard_whose_config_disagrees_with_its_index_is_an_error() {
    // An index rewritten by hand (or a shard from another dataset): the
    // shard's own config names its columns.
    let env = Env::new();
    let dir = env.path("renamed");
    std::fs::create_dir_all(&dir).expect("mkdir");
    for entry in std::fs::read_dir(tokens_dir().join("mds/tokens_i32_clean")).expect("dir") {
        let p = entry.expect("entry").path();
        std::fs::copy(&p, dir.join(p.file_name().expect("name"))).expect("copy");
    }
    let index = std::fs::read_to_string(dir.join("index.json")).expect("index");
    std::fs::write(dir.join("index.json"), index.replace("\"tokens\"", "\"tokenz\"")).expect("index");
    let r = check(&env, "columns:\n  tokenz: {kind: index, size: 1000}\n", &[dir], 2);
    let errors = r["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 3);
    let message = errors[0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("the shard's own config has column_names [\"id\",\"tokens\"], index.json [\"id\",\"tokenz\"]"),
        "{message}"
    );
}

#[test]
fn mds_rows_past_one_batch_keep_their_numbers() {
    // 70,000 samples: more than one batch (64 Ki rows); bad ids planted at
    // the first, across the batch boundary and the last sample.
    let env = Env::new();
    let bad = [0usize, 65535, 65536, 69999];
    let samples: Vec<Vec<u8>> = (0..70_000usize)
        .map(|i| {
            let v: i64 = if bad.contains(&i) {
                1000 + i as i64
            } else {
                (i % 1000) as i64
            };
            v.to_le_bytes().to_vec()
        })
        .collect();
    let bytes = shard(&samples);
    write_mds(&env, "big", &bytes, 70_000, bytes.len() as u64, "int");
    let r = check(
        &env,
        "columns:\n  label: {kind: index, size: 1000}\n",
        &[env.path("big")],
        1,
    );
    assert_eq!(r["rows"], 70_000);
    let hits: Vec<(u64, Value)> = found(&r).into_iter().map(|h| (h.2, h.3)).collect();
    let want: Vec<(u64, Value)> = bad.iter().map(|&i| (i as u64, json!(1000 + i))).collect();
    assert_eq!(hits, want);
}

/// Copies fixture folders into the environment (as `d/NAME`).
fn copy_fixture(env: &Env, rel: &str, to: &str) {
    let from = tokens_dir().join(rel);
    std::fs::create_dir_all(env.path(to)).expect("mkdir");
    for e in std::fs::read_dir(&from).expect("fixture") {
        let e = e.expect("entry");
        std::fs::copy(e.path(), env.path(to).join(e.file_name())).expect("copy");
    }
}

#[test]
fn shards_and_chunks_listed_but_missing_are_errors_naming_them() {
    let env = Env::new();
    copy_fixture(&env, "mds/tokens_i32_clean", "d/mds");
    copy_fixture(&env, "mds/tokens_i32_zstd", "d/zstd");
    copy_fixture(&env, "litdata/tokens", "d/lit");
    env.write("s.yaml", "columns:\n  tokens: {kind: index, size: 100000}\n");
    let clean = env.run(&["check", "--format", "json", "-s", "s.yaml", "d"]).json();
    assert!(clean["errors"].as_array().expect("errors").is_empty(), "{clean:#}");
    for gone in [
        "d/mds/shard.00001.mds",
        "d/zstd/shard.00002.mds.zstd",
        "d/lit/chunk-0-1.bin",
    ] {
        std::fs::remove_file(env.path(gone)).expect("remove");
    }
    let r = env.check_json(&["-s", "s.yaml", "d"], 2);
    let errors: Vec<(String, String)> = r["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| {
            (
                e["file"].as_str().expect("file").into(),
                e["message"].as_str().expect("message").into(),
            )
        })
        .collect();
    let samples = |rel: &str, i: usize| {
        let index: Value =
            serde_json::from_str(&std::fs::read_to_string(tokens_dir().join(rel).join("index.json")).expect("index"))
                .expect("json");
        index["shards"][i]["samples"].as_u64().expect("samples")
    };
    assert_eq!(
        errors,
        [
            (
                "d/lit/chunk-0-1.bin".to_string(),
                "listed in index.json (chunk 1, 3 items) but missing from the folder".to_string()
            ),
            (
                "d/mds/shard.00001.mds".to_string(),
                format!(
                    "listed in index.json (shard 1, {} samples) but missing from the folder",
                    samples("mds/tokens_i32_clean", 1)
                )
            ),
            (
                "d/zstd/shard.00002.mds.zstd".to_string(),
                format!(
                    "listed in index.json (shard 2, {} samples) but missing from the folder",
                    samples("mds/tokens_i32_zstd", 2)
                )
            ),
        ]
    );
    // The shards that are there are still checked.
    let lost = samples("mds/tokens_i32_clean", 1) + samples("mds/tokens_i32_zstd", 2) + 3;
    assert_eq!(
        r["rows"].as_u64().expect("rows") + lost,
        clean["rows"].as_u64().expect("rows")
    );
    // An index naming a file outside its folder is an error, never a path
    // followed.
    let mut index: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("d/lit/index.json")).expect("index")).expect("json");
    index["chunks"][0]["filename"] = json!("../../etc/passwd");
    env.write("d/lit/index.json", &index.to_string());
    let r = env.check_json(&["-s", "s.yaml", "d/lit"], 2);
    let text = r["errors"].to_string();
    assert!(
        text.contains("lists chunk 0 as `../../etc/passwd`, which is not a file name in its folder"),
        "{text}"
    );
}

#[test]
fn mds_index_hashes_are_verified_in_every_algorithm_streaming_names() {
    let env = Env::new();
    // Written by MDSWriter(hashes=["sha1", "xxh64"]): raw and zip digests.
    copy_fixture(&env, "mds/tokens_i32_zstd", "zstd");
    // Every algorithm of streaming's get_hashes(), computed as its
    // get_hash does (hashlib / xxhash hexdigest), in an index of the raw
    // shards; one unknown name.
    copy_fixture(&env, "mds/tokens_i32_clean", "all");
    env.python(
        r#"
import hashlib, xxhash
algos = ['md5', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512', 'sha3_224', 'sha3_256', 'sha3_384', 'sha3_512',
         'blake2b', 'blake2s', 'xxh32', 'xxh64', 'xxh3_64', 'xxh3_128', 'xxh128']
def get_hash(a, data):
    return (getattr(hashlib, a) if hasattr(hashlib, a) else getattr(xxhash, a))(data).hexdigest()
idx = json.load(open('all/index.json'))
for s in idx['shards']:
    data = open('all/' + s['raw_data']['basename'], 'rb').read()
    s['hashes'] = algos + ['whirlpool']
    s['raw_data']['hashes'] = {a: get_hash(a, data) for a in algos}
    s['raw_data']['hashes']['whirlpool'] = '00'
json.dump(idx, open('all/index.json', 'w'))
"#,
    );
    env.write("s.yaml", "columns:\n  tokens: {kind: index, size: 100000}\n");
    let r = env.check_json(&["-s", "s.yaml", "zstd", "all"], 0);
    let warnings = r["warnings"].to_string();
    assert!(
        warnings.contains("all/shard.00000.mds: index.json lists a `whirlpool` hash, an algorithm preflight does not know: not verified"),
        "{warnings}"
    );
    // One byte changed in place (same size): each file's own error, the
    // algorithm named; the other shards still pass.
    let flip = |rel: &str, at: usize| {
        let p = env.path(rel);
        let mut b = std::fs::read(&p).expect("read");
        let at = b.len() - at;
        b[at] ^= 1;
        std::fs::write(&p, b).expect("write");
    };
    flip("all/shard.00001.mds", 1);
    flip("zstd/shard.00002.mds.zstd", 5);
    let r = env.check_json(&["-s", "s.yaml", "zstd", "all"], 2);
    let errors = r["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert_eq!(errors[0]["file"], "all/shard.00001.mds");
    let m = errors[0]["message"].as_str().expect("message");
    // (the first listed, by name)
    assert!(
        m.starts_with("blake2b of the file is ") && m.contains("index.json's raw_data says"),
        "{m}"
    );
    assert_eq!(errors[1]["file"], "zstd/shard.00002.mds.zstd");
    let m = errors[1]["message"].as_str().expect("message");
    assert!(
        m.starts_with("sha1 of the file is ") && m.contains("index.json's zip_data says"),
        "{m}"
    );
    // A decompressed twin (a reader's cache) is checked against raw_data.
    env.python(
        r#"
import zstandard
open('zstd/shard.00000.mds', 'wb').write(zstandard.ZstdDecompressor().decompress(open('zstd/shard.00000.mds.zstd', 'rb').read()))
"#,
    );
    flip("zstd/shard.00000.mds", 1);
    let r = env.check_json(&["-s", "s.yaml", "zstd/shard.00000.mds"], 2);
    let m = r["errors"][0]["message"].as_str().expect("message");
    assert!(
        m.starts_with("sha1 of the file is ") && m.contains("raw_data says"),
        "{m}"
    );
}

#[test]
fn mds_and_litdata_columns_stored_too_narrow_are_each_shards_error() {
    // MDSWriter's own shards (ids < 1000): `ndarray:uint16`, a `uint16`
    // scalar and `bytes` read as uint16 cannot hold these bounds, whatever
    // the values; `ndarray:int32` can.
    let env = Env::new();
    let dir = tokens_dir().join("mds/encodings_clean");
    let schema = "columns:\n  tokens: {kind: index, size: 128256}\n  tokens_i32: {kind: index, size: 128256}\n  \
                  u16: {kind: class, num_classes: 65537}\n  raw: {kind: index, size: 65537, dtype: uint16}\n";
    let r = check(&env, schema, std::slice::from_ref(&dir), 2);
    let tail = "so the tokenizer's larger ids were wrapped or clipped when the shards were written; re-tokenize with a wider dtype";
    let mut want = Vec::new();
    for shard in ["shard.00000.mds", "shard.00001.mds", "shard.00002.mds"] {
        let file = dir.join(shard).display().to_string();
        want.push(json!({"file": file, "message": format!("column `raw`: stored as uint16, which cannot hold id 65536 (size 65537): ids ≥ 65,536 cannot be stored in uint16, {tail}")}));
        want.push(json!({"file": file, "message": format!("column `tokens`: stored as uint16, which cannot hold id 128255 (size 128256): ids ≥ 65,536 cannot be stored in uint16, {tail}")}));
        want.push(json!({"file": file, "message": "column `u16`: stored as uint16, which cannot hold label 65536 (num_classes 65537): labels ≥ 65,536 cannot be stored in uint16, so the larger labels were wrapped or clipped when the data was written; rewrite the labels with a wider dtype"}));
    }
    assert_eq!(r["errors"], Value::Array(want));
    assert_eq!(r["rows"], 10);
    // Bounds the types hold pass.
    let ok = "columns:\n  tokens: {kind: index, size: 65536}\n  tokens_i32: {kind: index, size: 128256}\n  \
              u16: {kind: class, num_classes: 65536}\n  raw: {kind: index, size: 65536, dtype: uint16}\n";
    check(&env, ok, &[dir], 0);
    // LitData's TokensLoader chunks of uint16 (its writer's own files).
    let lit = tokens_dir().join("litdata/tokens_np_u16");
    let r = check(
        &env,
        "columns:\n  tokens: {kind: index, size: 128256}\n",
        std::slice::from_ref(&lit),
        2,
    );
    let messages: Vec<&str> = r["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["message"].as_str().expect("message"))
        .collect();
    assert_eq!(messages.len(), 3, "one error per chunk");
    for m in messages {
        assert_eq!(
            m,
            format!(
                "column `tokens`: stored as uint16, which cannot hold id 128255 (size 128256): ids ≥ 65,536 cannot be stored in uint16, {tail}"
            )
        );
    }
    check(&env, "columns:\n  tokens: {kind: index, size: 65536}\n", &[lit], 0);
}
