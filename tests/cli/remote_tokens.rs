//! Token shards, NumPy, Arrow IPC, MDS and LitData from object storage: the
//! same files the local tests check (the committed fixtures the real
//! writers made, NumPy and pyarrow files written here), uploaded to a
//! moto S3 behind the counting proxy, report as they do from a local disk.

use std::path::Path;

use serde_json::Value;

use crate::remote::{Servers, for_key, renamed};
use crate::util::{Env, hits};

/// Copies fixture folders (relative to tests/fixtures/tokens) under `to`.
fn copy_fixtures(env: &Env, to: &str, dirs: &[(&str, &str)]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokens");
    let pairs: Vec<String> = dirs
        .iter()
        .map(|(from, name)| {
            format!(
                "({:?}, {:?})",
                root.join(from).display().to_string(),
                format!("{to}/{name}")
            )
        })
        .collect();
    env.python(&format!(
        "import shutil\nfor a, b in [{}]:\n    shutil.copytree(a, b) if os.path.isdir(a) else (os.makedirs(os.path.dirname(b), exist_ok=True), shutil.copy(a, b))\n",
        pairs.join(", ")
    ));
}

/// The local report of `dir` and the remote one of `s3://bkt/{dir}/`, the
/// remote with its URLs turned back into the local paths: equal.
fn same_as_local(servers: &Servers, env: &Env, schema: &str, dir: &str, code: i32) -> Value {
    env.write("s.yaml", schema);
    let args = ["-s", "s.yaml", "--max-examples", "1000000000"];
    let local = servers.check(env, &[&args[..], &[dir]].concat(), code);
    let url = format!("s3://bkt/{dir}/");
    let remote = servers.check(env, &[&args[..], &[url.as_str()]].concat(), code);
    let local_text = serde_json::to_string_pretty(&local).expect("json");
    assert_eq!(renamed(&remote, &format!("s3://bkt/{dir}"), dir), local_text);
    local
}

#[test]
fn token_shards_from_s3_report_as_local_with_unit_sized_reads() {
    let env = Env::new();
    copy_fixtures(
        &env,
        "t",
        &[
            ("megatron/u16_bad.bin", "u16_bad.bin"),
            ("megatron/u16_bad.idx", "u16_bad.idx"),
            ("megatron/i32_bad.bin", "m/i32_bad.bin"),
            ("megatron/i32_bad.idx", "m/i32_bad.idx"),
            ("llmc/gpt2_bad.bin", "gpt2_bad.bin"),
            ("llmc/gpt2_ntok_too_big.bin", "gpt2_ntok_too_big.bin"),
            ("megatron/broken/bin_truncated.bin", "broken/bin_truncated.bin"),
            ("megatron/broken/bin_truncated.idx", "broken/bin_truncated.idx"),
        ],
    );
    copy_fixtures(&env, "r", &[("nanogpt/raw/u16_bad.bin", "u16_bad.bin")]);
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "t", "bkt", "t/");
    // Megatron pairs (the .idx beside the .bin), an llm.c shard; a shard
    // whose header lies and a Megatron .bin cut short are their URLs'
    // errors, the others checked.
    let r = same_as_local(
        &servers,
        &env,
        "columns:\n  tokens: {kind: index, size: 1000}\n",
        "t",
        2,
    );
    assert_eq!(
        (r["files"].as_u64(), r["errors"].as_array().map(Vec::len)),
        (Some(5), Some(2)),
        "{r}"
    );
    // u16_bad 4, i32_bad 4, gpt2_bad 3 (tests/fixtures/tokens/expected.json).
    assert_eq!(
        (hits(&r, "tokens", "index").0, r["rows"].as_u64()),
        (11, Some(84)),
        "{r}"
    );

    // A raw nanoGPT stream, `dtype:` from the schema.
    servers.upload(&env, "r", "bkt", "r/");
    let r = same_as_local(
        &servers,
        &env,
        "columns:\n  tokens: {kind: index, size: 1000, dtype: uint16}\n",
        "r",
        1,
    );
    let (n, ex) = hits(&r, "tokens", "index");
    let rows: Vec<u64> = ex.iter().map(|e| e.1).collect();
    assert_eq!((n, rows), (3, vec![0, 25, 39]), "{r}");

    // A large raw stream: each unit one ranged read of its own bytes,
    // never the whole object; one id past the vocabulary near its end.
    env.python(
        "os.makedirs('big', exist_ok=True)\nt = (np.arange((4 << 20) + 100_000) % 1000).astype(np.uint16)\nt[-7] = 4000\nt.tofile('big/big.bin')\n",
    );
    servers.upload(&env, "big", "bkt", "big/");
    servers.reset(servers.proxy);
    let r = same_as_local(
        &servers,
        &env,
        "columns:\n  tokens: {kind: index, size: 1000, dtype: uint16}\n",
        "big",
        1,
    );
    let (n, ex) = hits(&r, "tokens", "index");
    assert_eq!(n, 1, "{r}");
    assert_eq!(ex[0].1, (4 << 20) + 100_000 - 7, "{r}");
    let size: u64 = ((4 << 20) + 100_000) * 2;
    let log = servers.log(servers.proxy);
    let gets: Vec<String> = for_key(&log, "/bkt/big/big.bin")
        .into_iter()
        .filter(|q| q["method"] == "GET")
        .map(|q| q["range"].as_str().unwrap_or("").to_string())
        .collect();
    // The header (first bytes), then unit 0 (4 Mi tokens, 8 MiB) and unit 1.
    let span = |g: &str| -> u64 {
        let (a, b) = g.trim_start_matches("bytes=").split_once('-').expect("a bounded range");
        b.parse::<u64>().expect("end") + 1 - a.parse::<u64>().expect("start")
    };
    assert!(gets.iter().all(|g| g.starts_with("bytes=")), "{gets:?}");
    assert!(gets.iter().all(|g| span(g) <= 8 << 20), "{gets:?}");
    assert!(gets.iter().any(|g| g == "bytes=0-8388607"), "{gets:?}");
    assert!(
        gets.iter().any(|g| *g == format!("bytes=8388608-{}", size - 1)),
        "{gets:?}"
    );

    // With `eod_id`, units end after an end-of-document id found past each
    // 4 Mi mark by small ranged reads: the same documents as locally.
    let r = same_as_local(
        &servers,
        &env,
        "columns:\n  tokens: {kind: index, size: 5000, dtype: uint16, eod_id: 999, max_length: 1000}\n",
        "big",
        0,
    );
    assert_eq!(r["rows"].as_u64(), Some((4 << 20) + 100_000), "{r}");
}

#[test]
fn numpy_and_arrow_ipc_from_s3_report_as_local() {
    let env = Env::new();
    env.python(
        r#"
os.makedirs('n/sub', exist_ok=True)
label = (np.arange(3000) % 10).astype(np.int64)
bad = label.copy(); bad[17] = 10; bad[2999] = -1
np.save('n/label.npy', bad)
np.save('n/sub/label.npy', np.asfortranarray(np.stack([label, label], axis=1)[:, :1].ravel()))
np.savez_compressed('n/z.npz', label=bad, other=np.zeros(3000))
np.savez('n/zs.npz', label=label)
import pyarrow.feather as feather
t = pa.table({'label': pa.array(bad)})
feather.write_feather(t, 'n/x.arrow', chunksize=700)
feather.write_feather(t, 'n/u.feather', compression='uncompressed', chunksize=1000)
with pa.ipc.new_stream('n/s.arrows', t.schema) as w:
    for b in t.to_batches(max_chunksize=500):
        w.write_batch(b)
open('n/cut.arrow', 'wb').write(open('n/x.arrow', 'rb').read()[:-40])
open('n/cut.npy', 'wb').write(open('n/label.npy', 'rb').read()[:-8])
"#,
    );
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "n", "bkt", "n/");
    let r = same_as_local(
        &servers,
        &env,
        "columns:\n  label: {kind: class, num_classes: 10}\n",
        "n",
        2,
    );
    // Checked: label.npy, sub/label.npy, z.npz, zs.npz, x.arrow, u.feather,
    // s.arrows; cut short: cut.arrow and cut.npy, each its own error.
    assert_eq!(r["errors"].as_array().map(Vec::len), Some(2), "{r}");
    // Two planted in each of the five files that hold `bad`.
    assert_eq!(hits(&r, "label", "class").0, 10, "{r}");

    // A Fortran-ordered 2-D array (each row spread over the data: read
    // whole, once) and a Fortran-ordered .npz member.
    env.python(
        r#"
os.makedirs('f', exist_ok=True)
ids = (np.arange(6000).reshape(3000, 2) % 50).astype(np.int32)
ids[5, 1] = 77; ids[2998, 0] = -1
np.save('f/ids.npy', np.asfortranarray(ids))
np.savez('f/z.npz', ids=np.asfortranarray(ids))
"#,
    );
    servers.upload(&env, "f", "bkt", "f/");
    let r = same_as_local(&servers, &env, "columns:\n  ids: {kind: index, size: 50}\n", "f", 1);
    let rows: Vec<u64> = hits(&r, "ids", "index").1.iter().map(|e| e.1).collect();
    assert_eq!(rows, [5, 2998, 5, 2998], "{r}");
}

#[test]
fn mds_and_litdata_from_s3_report_as_local() {
    let env = Env::new();
    copy_fixtures(
        &env,
        "d",
        &[
            ("mds/tokens_i32", "mds"),
            ("mds/tokens_i32_zstd", "mdsz"),
            ("litdata/tokens", "lit"),
            ("litdata/tokens_zstd_chunk", "litz"),
        ],
    );
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "d", "bkt", "d/");
    let r = same_as_local(
        &servers,
        &env,
        "columns:\n  tokens: {kind: index, size: 1000}\n",
        "d",
        1,
    );
    assert_eq!(r["errors"].as_array().map(Vec::len), Some(0), "{r}");
    // Two planted in each of the four datasets (expected.json).
    assert_eq!(
        (hits(&r, "tokens", "index").0, r["rows"].as_u64()),
        (8, Some(32)),
        "{r}"
    );

    // A shard the index lists and the listing lacks: its own error.
    env.python("import shutil\nshutil.copytree('d/mds', 'm')\nos.remove('m/shard.00001.mds')\n");
    servers.upload(&env, "m", "bkt", "m/");
    let r = same_as_local(
        &servers,
        &env,
        "columns:\n  tokens: {kind: index, size: 1000}\n",
        "m",
        2,
    );
    let errors = r["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{r}");
    assert!(
        errors[0]["file"].as_str().unwrap_or("").ends_with("m/shard.00001.mds"),
        "{r}"
    );
}

/// A `save_to_disk` folder in storage is read as `load_from_disk` reads
/// it, as a local search reads it: only the files its `state.json` lists
/// (the `cache-*.arrow` a `map` of the loaded dataset wrote beside them is
/// skipped, with the same warning).
#[test]
fn save_to_disk_folders_from_s3_report_as_local() {
    let env = Env::new();
    env.python(
        r#"
import datasets
ids = [[1, 2], [300], [4, 5, 6], [7]] * 50
datasets.Dataset.from_dict({'input_ids': ids}).save_to_disk('h/saved', num_shards=2)
datasets.load_from_disk('h/saved').map(lambda e: {'input_ids': [x + 1000 for x in e['input_ids']]})
assert any(f.startswith('cache-') for f in os.listdir('h/saved'))
loaded = datasets.load_from_disk('h/saved')
json.dump(sum(v >= 100 for r in loaded['input_ids'] for v in r), open('want.json', 'w'))
"#,
    );
    let want: u64 = std::fs::read_to_string(env.path("want.json"))
        .expect("want")
        .trim()
        .parse()
        .expect("count");
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "h", "bkt", "h/");
    let r = same_as_local(
        &servers,
        &env,
        "columns:\n  input_ids: {kind: index, size: 100}\n",
        "h",
        1,
    );
    assert_eq!(r["files"], 2, "{r}");
    assert_eq!(hits(&r, "input_ids", "index").0, want, "{r}");
    assert!(
        r["warnings"].to_string().contains("that state.json does not list"),
        "{r}"
    );
}

/// A `load_dataset` cache folder in storage (no `state.json`) holding the
/// index mapping a `shuffle` wrote (`cache-*.arrow`, one `indices` column)
/// is refused whole, with an error saying why, rather than judged as its
/// stored rows; on a disk the same folder is refused too.
#[test]
fn load_dataset_cache_folders_with_a_mapping_in_s3_are_refused() {
    let env = Env::new();
    env.python(
        r#"
os.environ['HF_DATASETS_OFFLINE'] = '1'
import datasets
pq.write_table(pa.table({'label': [0, 1, 2, 7] * 50}), 'train.parquet')
ds = datasets.load_dataset('parquet', data_files={'train': 'train.parquet'}, cache_dir='c')['train']
ds.map(lambda e: {'label': e['label'] + 1})
ds.shuffle(seed=1)
names = [f for _, _, fs in os.walk('c') for f in fs if f.startswith('cache-')]
assert len(names) == 2, names
"#,
    );
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "c", "bkt", "c/");
    env.write("s.yaml", "columns:\n  label: {kind: class, num_classes: 5}\n");
    // On a disk: a mapping beside two tables (the split and the map's
    // output) names no dataset, so the folder is refused, saying why.
    let local = servers.check(&env, &["-s", "s.yaml", "c"], 2);
    assert_eq!(local["files"], 0, "{local}");
    assert!(
        local["errors"][0]["message"]
            .to_string()
            .contains("a datasets index mapping here"),
        "{local}"
    );
    // In storage a mapping is never applied: the folder is refused too,
    // and none of its stored rows is judged as the dataset's.
    let remote = servers.check(&env, &["-s", "s.yaml", "s3://bkt/c/"], 2);
    assert_eq!(remote["files"], 0, "{remote}");
    assert_eq!(remote["rows"], 0, "{remote}");
    let errors = remote["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{remote}");
    let message = errors[0]["message"].as_str().expect("message");
    assert!(message.starts_with("1 datasets index mapping(s) here"), "{message}");
}
