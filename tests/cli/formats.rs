//! Every format, written by the writers people use, with planted violations
//! at known rows: the same rules and report as Parquet.

use serde_json::json;

use crate::util::{Env, hits, rows};

const LABELS: &str = "columns:\n  label: {kind: class, num_classes: 10}\n";

/// label: 0..9 repeating over `n` rows, bad values at rows 5 (10), 77 (-1),
/// n-1 (255); -100 at row 9 (ignored).
const PLANT: &str = r#"
def labels(n):
    v = np.arange(n, dtype=np.int64) % 10
    v[5] = 10; v[77] = -1; v[n - 1] = 255; v[9] = -100
    return v
"#;

#[test]
fn arrow_ipc_file_stream_and_feather() {
    let env = Env::new();
    env.write("s.yaml", LABELS);
    env.python(&format!(
        r#"{PLANT}
import pyarrow.feather as feather, pyarrow.ipc as ipc
t = pa.table({{'x': pa.array(np.zeros(200000)), 'label': labels(200000)}})
with ipc.new_file('f.arrow', t.schema) as w:
    for b in t.to_batches(max_chunksize=30000): w.write_batch(b)
with ipc.new_stream('s.arrows', t.schema) as w:
    for b in t.to_batches(max_chunksize=30000): w.write_batch(b)
# a stream named .arrow, as Hugging Face caches are
with ipc.new_stream('hf.arrow', t.schema) as w:
    for b in t.to_batches(max_chunksize=1000): w.write_batch(b)
feather.write_feather(t, 'lz4.feather')
feather.write_feather(t, 'zstd.feather', compression='zstd', chunksize=7000)
"#
    ));
    for f in ["f.arrow", "s.arrows", "hf.arrow", "lz4.feather", "zstd.feather"] {
        let r = env.check_json(&["-s", "s.yaml", f, "--jobs", "3"], 1);
        assert_eq!(r["rows"], 200000, "{f}");
        let (n, ex) = hits(&r, "label", "class");
        assert_eq!(n, 3, "{f}");
        assert_eq!(
            ex.iter().map(|e| (e.1, e.2.clone())).collect::<Vec<_>>(),
            vec![(5, json!(10)), (77, json!(-1)), (199999, json!(255))],
            "{f}"
        );
    }
}

#[test]
fn hugging_face_save_to_disk_with_class_label() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  label: {kind: class, num_classes: 3}\n  input_ids: {kind: index, size: 100, max_length: 8}\n",
    );
    env.python(
        r#"
import datasets
feats = datasets.Features({'label': datasets.ClassLabel(names=['a', 'b', 'c']), 'input_ids': datasets.Sequence(datasets.Value('int32'))})
ids = [[1, 2, 3]] * 3000
ids[1500] = [1, 100]
ids[2999] = list(range(9))
labels = [i % 3 for i in range(3000)]
labels[42] = -1
ds = datasets.Dataset.from_dict({'label': labels, 'input_ids': ids}, features=feats)
ds.save_to_disk('saved', max_shard_size='20KB')
dd = datasets.DatasetDict({'train': ds, 'test': ds.select(range(100))})
dd.save_to_disk('dict')
"#,
    );
    let r = env.check_json(&["-s", "s.yaml", "saved"], 1);
    assert_eq!(r["rows"], 3000);
    assert!(r["files"].as_u64().unwrap() >= 2, "several shards: {}", r["files"]);
    assert_eq!(hits(&r, "label", "class").0, 1);
    assert_eq!(hits(&r, "input_ids", "index").0, 1);
    assert_eq!(hits(&r, "input_ids", "max_length").0, 1);
    let r = env.check_json(&["-s", "s.yaml", "dict"], 1);
    assert_eq!(r["rows"], 3100);
    assert_eq!(hits(&r, "label", "class").1[0].0, "dict/test/data-00000-of-00001.arrow");
    assert_eq!(hits(&r, "label", "class").0, 2);
}

/// `datasets` writes the cache files of `map`, `shuffle`, `select` beside
/// the files of a dataset loaded with `load_from_disk` (`cache-*.arrow`;
/// a shuffle's holds one `indices` column), and `load_from_disk` reads only
/// the files `state.json` lists: a directory search reads exactly those,
/// with a warning naming the folder for the cache files it skipped.
#[test]
fn save_to_disk_folders_are_read_as_load_from_disk_reads_them() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  input_ids: {kind: index, size: 100}\n");
    env.python(
        r#"
import datasets
rng = np.random.default_rng(3)
ids = [rng.integers(0, 100, int(rng.integers(1, 9))).tolist() for _ in range(300)]
ids[10][0] = 100; ids[299][-1] = 250
datasets.Dataset.from_dict({'input_ids': ids}).save_to_disk('saved', num_shards=2)
ds = datasets.load_from_disk('saved')
ds.map(lambda e: {'input_ids': [x + 1000 for x in e['input_ids']]})   # cache-*.arrow in saved/
ds.shuffle(seed=0)                                                      # cache-*.arrow: indices only
ds.select([5, 3, 1])
listed = [f['filename'] for f in json.load(open('saved/state.json'))['_data_files']]
extra = sorted(f for f in os.listdir('saved') if f.endswith('.arrow') and f not in listed)
assert len(extra) >= 2, extra
# The real reader, file by file in state.json's order.
loaded = datasets.load_from_disk('saved')
bad, g = [], 0
for f in listed:
    for r in range(datasets.Dataset.from_file('saved/' + f).num_rows):
        bad += [['saved/' + f, r, v] for v in loaded[g]['input_ids'] if v >= 100]
        g += 1
json.dump({'rows': len(loaded), 'bad': bad, 'extra': len(extra)}, open('want.json', 'w'))
"#,
    );
    let want: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("want.json")).expect("want")).expect("json");
    let r = env.check_json(&["-s", "s.yaml", "saved"], 1);
    assert_eq!(r["rows"], want["rows"]);
    assert_eq!(r["files"], 2);
    let got: Vec<serde_json::Value> = hits(&r, "input_ids", "index")
        .1
        .iter()
        .map(|(f, row, v)| json!([f, row, v]))
        .collect();
    assert_eq!(json!(got), want["bad"]);
    let warned = r["warnings"].to_string();
    assert!(
        warned.contains(&format!(
            "{} .arrow file(s) here that state.json does not list",
            want["extra"]
        )),
        "{warned}"
    );
    // A cache file named on the command line is read as named.
    let cache: Vec<String> = std::fs::read_dir(env.path("saved"))
        .expect("dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("cache-"))
        .collect();
    assert!(!cache.is_empty());
    for c in &cache {
        let named = format!("saved/{c}");
        let run = env.run(&["check", "--format", "json", "-s", "s.yaml", &named]);
        let r = run.json();
        assert_eq!(r["files"], 1, "{named}");
        assert!(
            r["rows"].as_u64().expect("rows") > 0 || run.code == 2,
            "{named} read: {r:#}"
        );
    }
    // A listed file that is missing is an error naming it; the other is checked.
    std::fs::remove_file(env.path("saved/data-00000-of-00002.arrow")).expect("rm");
    let r = env.check_json(&["-s", "s.yaml", "saved"], 2);
    let errors = r["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0]["file"], "saved/data-00000-of-00002.arrow");
    assert!(
        errors[0]["message"]
            .as_str()
            .expect("message")
            .contains("listed in state.json"),
        "{errors:#?}"
    );
    assert_eq!(r["files"], 1);
}

/// A dataset written empty (`save_to_disk` of no rows writes no data file,
/// and `load_from_disk` of datasets 5.2.0 fails on the folder with an
/// IndexError; `MDSWriter` of no samples an index.json listing no shards)
/// leaves nothing to check: exit 2 as for any folder without data, with an
/// error that says why.
#[test]
fn empty_datasets_are_named_as_such() {
    let env = Env::new();
    env.python(
        r#"
import datasets
feats = datasets.Features({'input_ids': datasets.Sequence(datasets.Value('int32'))})
datasets.Dataset.from_dict({'input_ids': []}, features=feats).save_to_disk('hf')
assert not [f for f in os.listdir('hf') if f.endswith('.arrow')]
try:                                   # datasets 5.2.0 cannot load it back
    json.dump(len(datasets.load_from_disk('hf')), open('loaded.json', 'w'))
except IndexError as e:
    json.dump(str(e), open('loaded.json', 'w'))
os.makedirs('mds')
# What streaming 0.13.0's MDSWriter leaves for no samples (made with the real writer).
open('mds/index.json', 'w').write('{"shards": [], "version": 2}')
"#,
    );
    env.write("s.yaml", "columns:\n  input_ids: {kind: index, size: 100}\n");
    for (dir, words) in [
        ("hf", "state.json (save_to_disk) lists no data files"),
        ("mds", "index.json (MDS) lists no shards"),
    ] {
        let r = env.check_json(&["-s", "s.yaml", dir], 2);
        assert_eq!(r["errors"][0]["file"], dir, "{r:#}");
        let msg = r["errors"][0]["message"].as_str().expect("message");
        assert!(msg.contains("an empty dataset") && msg.contains(words), "{dir}: {msg}");
        assert_eq!(r["rows"], 0);
    }
}

#[test]
fn numpy_npy_every_dtype_order_and_endianness() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  labels: {kind: class, num_classes: 10}\n");
    env.python(&format!(
        r#"{PLANT}
os.mkdir('d')
base = labels(300000)
for t in ['<i2', '>i2', '<i4', '>i4', '<i8', '>i8', '<f4', '>f8', '<f2']:
    os.makedirs(f'd/{{t[1:]}}{{"be" if t[0] == ">" else "le"}}', exist_ok=True)
    np.save(f'd/{{t[1:]}}{{"be" if t[0] == ">" else "le"}}/labels.npy', base.astype(t))
u = base.copy(); u[77] = 11; u[9] = 1
for t in ['u1', '>u2', '<u4', 'u8']:
    os.makedirs(f'd/{{t}}', exist_ok=True)
    np.save(f'd/{{t}}/labels.npy', u.astype(t))
"#
    ));
    let r = env.check_json(&["-s", "s.yaml", "d"], 1);
    let files = r["files"].as_u64().unwrap();
    assert_eq!(files, 13);
    assert_eq!(r["rows"], 300000 * 13);
    // Every file has 3 bad values: rows 5, 77 and 299999.
    assert_eq!(hits(&r, "labels", "class").0, 3 * 13);
    let r = env.check_json(&["-s", "s.yaml", "d/i8le/labels.npy", "--max-examples", "10"], 1);
    assert_eq!(rows(&r, "labels", "class"), vec![5, 77, 299999]);
}

#[test]
fn numpy_two_dimensional_fortran_and_npz() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  ids: {kind: index, size: 50, max_length: 6}\n  mask: {kind: class, num_classes: 2, ignore_index: 255}\n");
    env.python(
        r#"
ids = np.arange(4000 * 6, dtype=np.int64).reshape(4000, 6) % 50
ids[100, 3] = 50; ids[3999, 0] = -2
np.save('ids.npy', ids)
np.save('fortran/ids.npy' if os.makedirs('fortran') is None else '', np.asfortranarray(ids))
mask = np.zeros((4000, 2, 3), dtype=np.uint8); mask[7, 1, 2] = 3; mask[8, 0, 0] = 255
np.savez('plain.npz', ids=ids, mask=mask)
np.savez_compressed('packed.npz', ids=ids, mask=mask)
np.save('wide.npy', np.zeros((3, 7), dtype=np.int32))
"#,
    );
    env.write("i.yaml", "columns:\n  ids: {kind: index, size: 50, max_length: 6}\n");
    for f in ["ids.npy", "fortran/ids.npy"] {
        let r = env.check_json(&["-s", "i.yaml", f], 1);
        assert_eq!(
            hits(&r, "ids", "index")
                .1
                .iter()
                .map(|e| (e.1, e.2.clone()))
                .collect::<Vec<_>>(),
            vec![(100, json!(50)), (3999, json!(-2))],
            "{f}"
        );
        assert_eq!(hits(&r, "ids", "max_length").0, 0);
    }
    for f in ["plain.npz", "packed.npz"] {
        let r = env.check_json(&["-s", "s.yaml", f], 1);
        assert_eq!(r["rows"], 4000);
        assert_eq!(rows(&r, "ids", "index"), vec![100, 3999]);
        assert_eq!(
            hits(&r, "mask", "class")
                .1
                .iter()
                .map(|e| (e.1, e.2.clone()))
                .collect::<Vec<_>>(),
            vec![(7, json!(3))]
        );
    }
    env.write("w.yaml", "columns:\n  wide: {kind: index, size: 50, max_length: 6}\n");
    let r = env.check_json(&["-s", "w.yaml", "wide.npy"], 1);
    assert_eq!(
        hits(&r, "wide", "max_length")
            .1
            .iter()
            .map(|e| (e.1, e.2.clone()))
            .collect::<Vec<_>>(),
        vec![(0, json!(7)), (1, json!(7)), (2, json!(7))]
    );
}

#[test]
fn broken_files_of_every_format_give_exit_2_and_others_still_count() {
    let env = Env::new();
    env.write("s.yaml", LABELS);
    env.python(&format!(
        r#"{PLANT}
import pyarrow.feather as feather
os.mkdir('d')
np.save('d/labels.npy', labels(1000))
t = pa.table({{'label': labels(1000)}})
feather.write_feather(t, 'd/good.feather')
data = open('d/good.feather', 'rb').read()
open('d/cut.feather', 'wb').write(data[:len(data) // 2])
npy = open('d/labels.npy', 'rb').read()
os.mkdir('d/cut')
open('d/cut/labels.npy', 'wb').write(npy[:len(npy) - 100])
np.save('d/obj.npy', np.array([1, 'a'], dtype=object), allow_pickle=True)
open('d/junk.arrows', 'wb').write(b'\x00' * 64)
open('d/empty.npz', 'wb').write(b'PK not really')
"#
    ));
    env.write(
        "l.yaml",
        "columns:\n  label: {kind: class, num_classes: 10}\n  labels: {kind: class, num_classes: 10, optional: true}\n",
    );
    let r = env.check_json(&["-s", "l.yaml", "d"], 2);
    let errors: Vec<&str> = r["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["file"].as_str().unwrap())
        .collect();
    assert!(errors.contains(&"d/cut.feather"), "{errors:?}");
    assert!(errors.contains(&"d/cut/labels.npy"), "{errors:?}");
    assert!(errors.contains(&"d/obj.npy"), "{errors:?}");
    assert!(errors.contains(&"d/junk.arrows"), "{errors:?}");
    assert!(errors.contains(&"d/empty.npz"), "{errors:?}");
    // The good files are still checked: 3 bad labels in good.feather, 3 in labels.npy.
    assert_eq!(hits(&r, "label", "class").0, 3);
    assert_eq!(hits(&r, "labels", "class").0, 3);
    let obj = r["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["file"] == "d/obj.npy")
        .unwrap();
    assert!(obj["message"].as_str().unwrap().contains("object"), "{obj}");
}

#[test]
fn formats_mix_in_one_run() {
    let env = Env::new();
    env.write("s.yaml", LABELS);
    env.python(&format!(
        r#"{PLANT}
import pyarrow.feather as feather
os.mkdir('d')
t = pa.table({{'label': labels(500)}})
pq.write_table(t, 'd/a.parquet')
feather.write_feather(t, 'd/b.feather')
np.savez('d/c.npz', label=labels(500))
"#
    ));
    let r = env.check_json(&["-s", "s.yaml", "d"], 1);
    assert_eq!(r["files"], 3);
    assert_eq!(r["rows"], 1500);
    let files: Vec<String> = hits(&r, "label", "class").1.iter().map(|e| e.0.clone()).collect();
    assert_eq!(
        files,
        vec![
            "d/a.parquet",
            "d/a.parquet",
            "d/a.parquet",
            "d/b.feather",
            "d/b.feather"
        ]
    );
    assert_eq!(hits(&r, "label", "class").0, 9);
}

#[test]
fn csv_tsv_and_compressed_text_from_pandas_and_the_csv_module() {
    let env = Env::new();
    env.write("s.yaml", LABELS);
    env.python(&format!(
        r#"{PLANT}
import csv, gzip, zstandard
v = labels(150000)
df = pd.DataFrame({{'text': ['a, "quoted"\nline'] * len(v), 'label': v}})
df.to_csv('p.csv', index=False)
df.to_csv('p.tsv', index=False, sep='\t')
with gzip.open('p.csv.gz', 'wt') as f: df.to_csv(f, index=False)
open('p.csv.zst', 'wb').write(zstandard.ZstdCompressor().compress(open('p.csv', 'rb').read()))
with open('m.csv', 'w', newline='') as f:
    w = csv.writer(f)
    w.writerow(['label', 'note'])
    for row in [['3', 'ok'], ['3.0', 'whole'], ['', 'empty is null'], ['cat', 'text'], ['1e3', 'big'], ['nan', 'nan'], [' 7 ', 'spaces'], ['2.5', 'fraction'], ['18446744073709551615', 'u64']]:
        w.writerow(row)
"#
    ));
    for f in ["p.csv", "p.tsv", "p.csv.gz", "p.csv.zst"] {
        let r = env.check_json(&["-s", "s.yaml", f], 1);
        assert_eq!(r["rows"], 150000, "{f}");
        // Quoted fields span lines; rows count records.
        assert_eq!(
            hits(&r, "label", "class")
                .1
                .iter()
                .map(|e| (e.1, e.2.clone()))
                .collect::<Vec<_>>(),
            vec![(5, json!(10)), (77, json!(-1)), (149999, json!(255))],
            "{f}"
        );
    }
    let r = env.check_json(&["-s", "s.yaml", "m.csv"], 1);
    assert_eq!(rows(&r, "label", "null"), vec![2]);
    assert_eq!(
        hits(&r, "label", "not_integer")
            .1
            .iter()
            .map(|e| (e.1, e.2.clone()))
            .collect::<Vec<_>>(),
        vec![(3, json!("cat")), (5, json!("NaN")), (7, json!(2.5))]
    );
    assert_eq!(
        hits(&r, "label", "class")
            .1
            .iter()
            .map(|e| (e.1, e.2.clone()))
            .collect::<Vec<_>>(),
        vec![(4, json!(1000.0)), (8, json!(18446744073709551615u64))]
    );
}

#[test]
fn json_lines_scalars_lists_missing_keys_and_compression() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  label: {kind: class, num_classes: 3}\n  ids: {kind: index, size: 10, max_length: 3}\n",
    );
    env.python(
        r#"
import gzip, zstandard
rows = [
    {'label': 0, 'ids': [1, 2]},
    {'label': 3, 'ids': [1, 10]},
    {'ids': [1]},
    {'label': 1.5, 'ids': [[1], [2]]},
    {'label': 'b', 'ids': [1, 2, 3, 4]},
    {'label': None, 'ids': [None, 9]},
    {'label': 2, 'ids': []},
]
text = ''.join(json.dumps(r) + '\n' for r in rows)
open('a.jsonl', 'w').write(text)
with gzip.open('a.jsonl.gz', 'wt') as f: f.write(text)
open('a.ndjson.zst', 'wb').write(zstandard.ZstdCompressor().compress(text.encode()))
open('nolabel.jsonl', 'w').write(json.dumps({'ids': [1]}) + '\n')
open('broken.jsonl', 'w').write(text + '{"label": 1, "ids": [1\n')
"#,
    );
    for f in ["a.jsonl", "a.jsonl.gz", "a.ndjson.zst"] {
        let r = env.check_json(&["-s", "s.yaml", f], 1);
        assert_eq!(r["rows"], 7);
        assert_eq!(rows(&r, "label", "class"), vec![1], "{f}");
        // A missing key is null in that row.
        assert_eq!(rows(&r, "label", "null"), vec![2, 5], "{f}");
        assert_eq!(
            hits(&r, "label", "not_integer")
                .1
                .iter()
                .map(|e| (e.1, e.2.clone()))
                .collect::<Vec<_>>(),
            vec![(3, json!(1.5)), (4, json!("b"))]
        );
        assert_eq!(
            hits(&r, "ids", "index")
                .1
                .iter()
                .map(|e| (e.1, e.2.clone()))
                .collect::<Vec<_>>(),
            vec![(1, json!(10))]
        );
        assert_eq!(rows(&r, "ids", "null"), vec![5]);
        assert_eq!(rows(&r, "ids", "max_length"), vec![4]);
    }
    // A key missing from every row is a missing column; a broken line is an error.
    let r = env.check_json(&["-s", "s.yaml", "nolabel.jsonl"], 2);
    assert!(r["errors"][0]["message"].as_str().unwrap().contains("`label`"));
    let r = env.check_json(&["-s", "s.yaml", "broken.jsonl", "a.jsonl"], 2);
    assert_eq!(r["errors"][0]["file"], "broken.jsonl");
    assert!(
        r["errors"][0]["message"].as_str().unwrap().contains("line 8"),
        "{}",
        r["errors"]
    );
    // The other file is still checked.
    assert_eq!(
        hits(&r, "label", "class")
            .1
            .iter()
            .map(|e| (e.0.as_str(), e.1))
            .collect::<Vec<_>>(),
        vec![("a.jsonl", 1)]
    );
}

#[test]
fn clean_files_of_every_format_pass() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  label: {kind: class, num_classes: 10}\n  ids: {kind: index, size: 50, max_length: 4, optional: true}\n");
    env.python(
        r#"
import pyarrow.feather as feather, pyarrow.ipc as ipc
os.mkdir('d')
label = np.arange(3000) % 10
ids = [[i % 50, (i * 7) % 50] for i in range(3000)]
t = pa.table({'label': label, 'ids': pa.array(ids, pa.list_(pa.int64()))})
pq.write_table(t, 'd/a.parquet', row_group_size=500)
feather.write_feather(t, 'd/b.feather')
with ipc.new_stream('d/c.arrows', t.schema) as w: w.write_table(t)
pd.DataFrame({'label': label}).to_csv('d/e.csv', index=False)
pd.DataFrame({'label': label}).to_csv('d/f.tsv', index=False, sep='\t')
open('d/g.jsonl', 'w').write(''.join(json.dumps({'label': int(l), 'ids': x}) + '\n' for l, x in zip(label, ids)))
np.save('d/label.npy', label)
np.savez_compressed('d/h.npz', label=label, ids=np.array(ids))
"#,
    );
    let r = env.check_json(&["-s", "s.yaml", "d"], 0);
    assert_eq!(r["ok"], true);
    assert_eq!(r["files"], 8);
    assert_eq!(r["rows"], 3000 * 8);
}

#[test]
fn every_format_from_polars_duckdb_and_pandas_writers() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  label: {kind: class, num_classes: 10}\n  ids: {kind: index, size: 100, max_length: 3}\n",
    );
    // The same rows written by several writers (their own encoders,
    // statistics and row-group layouts); bad values at rows 5, 70001, 99999.
    env.python(
        r#"
import polars as pl, duckdb
n = 100000
label = (np.arange(n) % 10).astype(np.int64)
label[5] = 10; label[70001] = -1; label[99999] = 255
ids = [[i % 100, (i * 3) % 100] for i in range(n)]
ids[123] = [1, 2, 3, 4]
ids[4567] = [100]
os.mkdir('w')
df = pl.DataFrame({'label': label, 'ids': ids}, schema={'label': pl.Int64, 'ids': pl.List(pl.Int32)})
df.write_parquet('w/polars.parquet', row_group_size=30000)
df.write_parquet('w/polars_nostats.parquet', statistics=False)
con = duckdb.connect()
con.register('t', df.to_arrow())
con.execute("COPY t TO 'w/duckdb.parquet' (FORMAT parquet, ROW_GROUP_SIZE 20000)")
pd.DataFrame({'label': label, 'ids': ids}).to_parquet('w/pandas.parquet')
os.mkdir('o')
df.write_ipc('o/polars.arrow', compression='zstd')
df.write_ipc_stream('o/polars.arrows')
df.select('label').write_csv('o/polars.csv')
df.write_ndjson('o/polars.jsonl')
con.execute("COPY (SELECT label FROM t) TO 'o/duckdb.csv' (HEADER)")
con.execute("COPY t TO 'o/duckdb.jsonl' (FORMAT json)")
"#,
    );
    env.write("o.yaml", "columns:\n  label: {kind: class, num_classes: 10}\n  ids: {kind: index, size: 100, max_length: 3, optional: true}\n");
    for f in [
        "o/polars.arrow",
        "o/polars.arrows",
        "o/polars.csv",
        "o/polars.jsonl",
        "o/duckdb.csv",
        "o/duckdb.jsonl",
    ] {
        let r = env.check_json(&["-s", "o.yaml", f], 1);
        assert_eq!(r["rows"], 100000, "{f}");
        assert_eq!(rows(&r, "label", "class"), vec![5, 70001, 99999], "{f}");
        if !f.ends_with(".csv") {
            assert_eq!(rows(&r, "ids", "index"), vec![4567], "{f}");
            assert_eq!(rows(&r, "ids", "max_length"), vec![123], "{f}");
        }
    }
    for f in [
        "w/polars.parquet",
        "w/polars_nostats.parquet",
        "w/duckdb.parquet",
        "w/pandas.parquet",
    ] {
        let r = env.check_json(&["-s", "s.yaml", f, "--max-examples", "10"], 1);
        assert_eq!(r["rows"], 100000, "{f}");
        assert_eq!(
            hits(&r, "label", "class")
                .1
                .iter()
                .map(|e| (e.1, e.2.clone()))
                .collect::<Vec<_>>(),
            vec![(5, json!(10)), (70001, json!(-1)), (99999, json!(255))],
            "{f}"
        );
        assert_eq!(rows(&r, "ids", "index"), vec![4567], "{f}");
        assert_eq!(rows(&r, "ids", "max_length"), vec![123], "{f}");
        let full = env.check_json(&["-s", "s.yaml", f, "--max-examples", "10", "--full-scan"], 1);
        assert_eq!(r, full, "{f}: statistics and a full scan disagree");
    }
}

#[test]
fn ipc_buffer_declaring_a_huge_size_is_an_error_not_an_abort() {
    let env = Env::new();
    env.write("s.yaml", LABELS);
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lz4_huge_buffer.feather");
    std::fs::copy(fixture, env.path("bad.feather")).expect("copy");
    env.python(&format!(
        "{PLANT}\npq.write_table(pa.table({{'label': labels(100)}}), 'good.parquet')"
    ));
    let r = env.check_json(&["-s", "s.yaml", "bad.feather", "good.parquet"], 2);
    assert_eq!(r["errors"][0]["file"], "bad.feather");
    assert!(
        r["errors"][0]["message"].as_str().unwrap().contains("979252555488"),
        "{}",
        r["errors"]
    );
    assert_eq!(rows(&r, "label", "class"), vec![5, 77, 99]);
}

/// A memory-mapped .npy is checked in place and its pages are let go unit by
/// unit: peak RSS stays at the units in flight, not the file's 160 MB.
#[test]
fn npy_memory_stays_at_the_units_in_flight() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  label: {kind: class, num_classes: 1000}\n");
    env.python("a = np.arange(20_000_000, dtype=np.int64) % 1000; a[19_999_999] = 1000; np.save('label.npy', a)");
    let (code, kb, _) = env.peak(&["check", "-s", "s.yaml", "label.npy", "--jobs", "2"]);
    assert_eq!(code, 1);
    assert!(kb < 120 * 1024, "peak RSS {kb} KB for a 160 MB file");
}

/// A JSON number beyond f64 is an infinity, as Python's `json` reads it:
/// a violation at its row, not an unreadable file. Strings that merely look
/// like the stand-in preflight uses are left alone.
#[test]
fn json_lines_numbers_beyond_f64_are_infinities_at_their_rows() {
    let env = Env::new();
    env.python(
        r#"
lines = ['{"label": 1, "score": 0.5}', '{"label": 1e400, "score": 0.5}', '{"label": 0, "score": -1E+999}',
         '{"label": 2, "score": 1e308, "note": "\\u0001preflight:inf+"}', '{"label": -12e9999, "note": "1e400"}']
open('a.jsonl', 'w').write('\n'.join(lines) + '\n')
# Python's own reading, the oracle: infinities at rows 1, 2 and 4.
vals = [json.loads(l) for l in lines]
assert vals[1]['label'] == float('inf') and vals[2]['score'] == float('-inf') and vals[4]['label'] == float('-inf')
"#,
    );
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  label: {kind: class, num_classes: 3}\n  score: {kind: range, min: 0, max: 1, nullable: true}\n  note: {kind: values, allowed: [\"\\u0001preflight:inf+\", \"1e400\"], nullable: true}\n",
    );
    let r = env.check_json(&["-s", "s.yaml", "a.jsonl"], 1);
    assert_eq!(r["rows"], 5);
    let (n, ex) = hits(&r, "label", "not_integer");
    assert_eq!(n, 2);
    assert_eq!(
        ex.iter().map(|(_, row, v)| (*row, v.clone())).collect::<Vec<_>>(),
        vec![(1, serde_json::json!("inf")), (4, serde_json::json!("-inf"))]
    );
    let (n, ex) = hits(&r, "score", "range");
    assert_eq!(n, 2, "-inf and 1e308 are out of [0, 1]");
    assert_eq!(ex.iter().map(|(_, row, _)| *row).collect::<Vec<_>>(), vec![2, 3]);
    assert_eq!(ex[0].2, serde_json::json!("-inf"));
    // The strings are data, whatever they look like.
    assert_eq!(hits(&r, "note", "values").0, 0);
}

/// `np.load(f)[name]` reads one member of an `.npz` and never looks at the
/// others, so members the schema does not name may have any length (a flat
/// `tokens` beside per-document `offsets`) or a dtype preflight refuses (an
/// object array of metadata): the file is checked as NumPy reads it. Members
/// the schema names must still share their length, the rows of one table.
#[test]
fn npz_members_the_schema_does_not_name_may_differ_in_length() {
    let env = Env::new();
    env.python(
        r#"
rng = np.random.default_rng(11)
tokens = rng.integers(0, 1000, 5000).astype(np.uint16)
tokens[[7, 4321, 4999]] = [1000, 65535, 1003]
offsets = np.array([0, 1200, 3000, 5000], dtype=np.int64)
meta = np.array([{'source': 'web'}], dtype=object)
np.savez('stored.npz', tokens=tokens, offsets=offsets, meta=meta)
np.savez_compressed('deflated.npz', tokens=tokens, offsets=offsets, meta=meta)
want = {}
for f in ['stored.npz', 'deflated.npz']:
    t = np.load(f)['tokens']          # the real reader: allow_pickle=False, one member
    want[f] = {'rows': int(t.shape[0]),
               'bad': [[i, int(v)] for i, v in enumerate(t.tolist()) if v >= 1000]}
json.dump(want, open('want.json', 'w'))
"#,
    );
    let want: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("want.json")).expect("want")).expect("json");
    env.write("s.yaml", "columns:\n  tokens: {kind: index, size: 1000}\n");
    for f in ["stored.npz", "deflated.npz"] {
        let r = env.check_json(&["-s", "s.yaml", f, "--max-examples", "100"], 1);
        assert_eq!(r["rows"], want[f]["rows"], "{f}");
        let got: Vec<serde_json::Value> = hits(&r, "tokens", "index")
            .1
            .iter()
            .map(|(_, row, v)| json!([row, v]))
            .collect();
        assert_eq!(json!(got), want[f]["bad"], "{f}");
        assert_eq!(hits(&r, "tokens", "index").0, 3, "{f}");
    }
    // Two named members of different lengths are not one table.
    env.write(
        "both.yaml",
        "columns:\n  tokens: {kind: index, size: 1000}\n  offsets: {kind: range, min: 0, max: 5000}\n",
    );
    let r = env.check_json(&["-s", "both.yaml", "stored.npz"], 2);
    let errors = r["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0]["file"], "stored.npz");
    let msg = errors[0]["message"].as_str().expect("message");
    assert!(msg.contains("members differ in length along axis 0"), "{msg}");
    // The object member itself, when named, is refused, never unpickled.
    env.write("m.yaml", "columns:\n  meta: {kind: class, num_classes: 2}\n");
    let r = env.check_json(&["-s", "m.yaml", "deflated.npz"], 2);
    assert_eq!(r["errors"][0]["file"], "deflated.npz");
}

/// `np.load` accepts a header dict of exactly the keys `descr`,
/// `fortran_order` and `shape` (in any order, any spacing, 16- or 64-byte
/// padding) with `shape` a tuple; preflight reads what it reads and refuses
/// what it refuses, decided here by `np.load` itself.
#[test]
fn npy_headers_are_as_strict_as_np_load() {
    let env = Env::new();
    env.python(
        r#"
headers = [
    "{'descr': '<u2', 'fortran_order': False, 'shape': (4,), }",
    "{'shape': (4,), 'fortran_order': False, 'descr': '<u2', }",
    "{'descr':'<u2','fortran_order':False,'shape':(4,)}",
    "{'descr': 'u2', 'fortran_order': False, 'shape': (4,), }",
    "{'descr': '<u2', 'fortran_order': False, 'shape': [4], }",
    "{'descr': '<u2', 'fortran_order': False, 'shape': (4,), 'extra': 1}",
    "{'descr': '<u2', 'fortran_order': 0, 'shape': (4,), }",
    "{'descr': '<u2', 'fortran_order': False, 'shape': (4,), 1: 2}",
    "{'descr': '<u2', 'shape': (4,), }",
]
payload = np.array([1, 1000, 3, 2000], dtype='<u2').tobytes()
want = {}
for i, h in enumerate(headers):
    h = h.encode('latin1')
    pad = (16 - (10 + len(h) + 1) % 16) % 16     # numpy before 1.9 padded to 16 bytes
    h = h + b' ' * pad + b'\n'
    name = f'h{i}.npy'
    open(name, 'wb').write(b'\x93NUMPY\x01\x00' + len(h).to_bytes(2, 'little') + h + payload)
    try:
        a = np.load(name)
        want[name] = [[r, int(v)] for r, v in enumerate(a.tolist()) if v >= 1000]
    except (ValueError, TypeError):
        want[name] = None
json.dump(want, open('want.json', 'w'))
"#,
    );
    let want: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("want.json")).expect("want")).expect("json");
    let want = want.as_object().expect("object");
    assert_eq!(want.values().filter(|w| w.is_null()).count(), 5, "np.load refuses five");
    for (name, bad) in want {
        let stem = name.trim_end_matches(".npy");
        env.write("s.yaml", &format!("columns:\n  {stem}: {{kind: index, size: 1000}}\n"));
        if bad.is_null() {
            let r = env.check_json(&["-s", "s.yaml", name], 2);
            assert_eq!(r["errors"][0]["file"], name.as_str(), "{r:#}");
            let msg = r["errors"][0]["message"].as_str().expect("message");
            assert!(msg.contains("malformed .npy header"), "{name}: {msg}");
        } else {
            let r = env.check_json(&["-s", "s.yaml", name], 1);
            let got: Vec<serde_json::Value> = hits(&r, stem, "index")
                .1
                .iter()
                .map(|(_, row, v)| json!([row, v]))
                .collect();
            assert_eq!(&json!(got), bad, "{name}");
        }
    }
}
