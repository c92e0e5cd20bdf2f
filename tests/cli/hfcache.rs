//! Hugging Face `datasets` caches after `filter`, `shuffle`, `sort`,
//! `select` and `train_test_split`: the rows judged are the dataset's
//! (`ds[i]` for i < `len(ds)`, in that order), written by datasets itself
//! (`load_dataset` from local JSON Lines and Parquet files into a cache
//! folder), with the expected violations computed by iterating `ds`.

use serde_json::{Value, json};

use crate::util::Env;

const SCHEMA: &str = "columns:\n  label: {kind: class, num_classes: 5}\n  input_ids: {kind: index, size: 100}\n";

/// Writes `data.jsonl` and two Parquet files with bad labels and ids at
/// known rows, and the helper `want(ds, name)` that records, from the
/// dataset alone, every violation as (data file, stored row, index, column,
/// value) in dataset order, and `len(ds)`.
const PRELUDE: &str = r#"
import datasets, glob
datasets.disable_progress_bars()
rng = np.random.default_rng(7)
n = 3000
labels = (np.arange(n) % 5).tolist()
ids = [rng.integers(0, 100, int(rng.integers(1, 6))).tolist() for _ in range(n)]
for r in (3, 700, 1500, 2100, 2999): labels[r] = 5 + r % 3
for r in (10, 1499, 2800): ids[r][-1] = 100 + r
keys = rng.permutation(n).tolist()
with open('data.jsonl', 'w') as f:
    for l, i, k in zip(labels, ids, keys): f.write(json.dumps({'label': l, 'input_ids': i, 'key': k}) + '\n')
t = pa.table({'label': labels, 'input_ids': ids, 'key': keys})
pq.write_table(t.slice(0, 1800), 'p0.parquet'); pq.write_table(t.slice(1800), 'p1.parquet')

def want(ds, name):
    data = [c['filename'] for c in ds.cache_files]
    if ds._indices is not None:
        data = data[:-1]                # the mapping's own file comes last
    sizes = [datasets.Dataset.from_file(f).num_rows for f in data]
    order = ds._indices.column('indices').to_pylist() if ds._indices is not None else list(range(len(ds)))
    def place(g):
        for f, s in zip(data, sizes):
            if g < s: return os.path.relpath(f), g
            g -= s
    bad = []
    for i in range(len(ds)):
        row = ds[i]
        f, r = place(order[i])
        if not 0 <= row['label'] < 5: bad.append([f, r, i, 'label', row['label']])
        bad += [[f, r, i, 'input_ids', v] for v in row['input_ids'] if not 0 <= v < 100]
    return {'rows': len(ds), 'bad': bad, 'dir': os.path.relpath(os.path.dirname(data[0])),
            'mappings': sorted(os.path.relpath(p) for p in glob.glob(os.path.dirname(data[0]) + '/*.arrow')
                               if pa.ipc.open_stream(pa.memory_map(p)).schema.names == ['indices'])}
"#;

/// Every violation of a report as [file, row, index, column, value], from
/// `--violations-out` JSON Lines.
fn spilled(env: &Env, name: &str) -> Vec<Value> {
    std::fs::read_to_string(env.path(name))
        .expect("violations")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("json line");
            json!([v["file"], v["row"], v["index"], v["column"], v["value"]])
        })
        .collect()
}

/// The report's examples of both checks as [file, row, index, column, value].
fn examples(r: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for (column, rule) in [("label", "class"), ("input_ids", "index")] {
        let c = crate::util::check(r, column, rule);
        for e in c["examples"].as_array().expect("examples") {
            out.push(json!([e["file"], e["row"], e["index"], column, e["value"]]));
        }
    }
    out
}

/// Checks `path` as the dataset `want` describes: its rows, every
/// violation in dataset order (data file, row, index), and the examples.
fn assert_dataset(env: &Env, path: &str, want: &Value, what: &str) {
    let want_bad = want["bad"].as_array().expect("bad");
    let code = if want_bad.is_empty() { 0 } else { 1 };
    for jobs in ["1", "3"] {
        let r = env.check_json(
            &[
                "-s",
                "s.yaml",
                path,
                "-j",
                jobs,
                "--max-examples",
                "100",
                "--violations-out",
                "v.jsonl",
            ],
            code,
        );
        assert_eq!(r["rows"], want["rows"], "{what}: {r:#}");
        assert_eq!(r["files"], 1, "{what}");
        let got = spilled(env, "v.jsonl");
        // Spilled in (index, column) order; the expected list is by index
        // then label before ids, as the schema orders the columns.
        assert_eq!(json!(got), json!(want_bad), "{what} -j {jobs}");
        let by_check: Vec<Value> = want_bad
            .iter()
            .filter(|b| b[3] == "label")
            .chain(want_bad.iter().filter(|b| b[3] == "input_ids"))
            .cloned()
            .collect();
        assert_eq!(json!(examples(&r)), json!(by_check), "{what} examples");
        assert_eq!(r["violations"], want_bad.len(), "{what}");
    }
}

#[test]
fn load_dataset_caches_are_read_as_the_dataset_each_operation_leaves() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    env.python(&format!(
        r#"{PRELUDE}
out = {{}}
def load(cache, kind='json'):
    if kind == 'json':
        return datasets.load_dataset('json', data_files='data.jsonl', cache_dir=cache, split='train')
    return datasets.load_dataset('parquet', data_files=['p0.parquet', 'p1.parquet'], cache_dir=cache,
                                 split='train', num_proc=2)
ds = load('c_plain')
out['plain'] = want(ds, 'plain')
out['filter'] = want(load('c_filter').filter(lambda e, i: i % 7 != 0, with_indices=True), 'filter')
out['shuffle'] = want(load('c_shuffle').shuffle(seed=1), 'shuffle')
out['sort'] = want(load('c_sort').sort('key'), 'sort')
base = load('c_select')
sel = base.select([2999, 5, 700, 10, 2800, 2800, 3],
                  indices_cache_file_name=os.path.join(os.path.dirname(base.cache_files[0]['filename']),
                                                       'indices-select.arrow'))
out['select'] = want(sel, 'select')
pf = load('c_parquet', 'parquet')
assert len(pf.cache_files) == 2, pf.cache_files          # two shards of one split
out['parquet'] = want(pf.filter(lambda e: e['key'] % 3 != 0), 'parquet')
# A default select keeps its mapping in memory: the folder cannot show it.
before = sorted(glob.glob('c_plain/**/*.arrow', recursive=True))
ds.select([5, 3, 1])
assert sorted(glob.glob('c_plain/**/*.arrow', recursive=True)) == before
json.dump(out, open('want.json', 'w'))
"#
    ));
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("want.json")).expect("want")).expect("json");
    for case in ["plain", "filter", "shuffle", "sort", "select", "parquet"] {
        let w = &want[case];
        let maps = w["mappings"].as_array().expect("mappings");
        assert_eq!(maps.len(), usize::from(case != "plain"), "{case}: {maps:?}");
        // The cache folder, as `load_dataset`'s cache_dir or the folder itself.
        let top = format!("c_{case}");
        if case == "plain" {
            // No mapping: the data files as stored (rows named by file).
            let r = env.check_json(&["-s", "s.yaml", &top], 1);
            assert_eq!(r["rows"], w["rows"]);
            assert!(
                examples(&r).iter().all(|e| e[2].is_null()),
                "no index without a mapping"
            );
            continue;
        }
        assert_dataset(&env, &top, w, case);
        assert_dataset(&env, w["dir"].as_str().expect("dir"), w, case);
        // The mapping named as PATH: the same dataset.
        assert_dataset(&env, maps[0].as_str().expect("mapping"), w, case);
    }
    // Partial reports carry each example's data file, row and index: a
    // merge of the mapped dataset's and another file's gives the one run's.
    let (filter, plain) = (want["filter"]["mappings"][0].as_str().unwrap(), "data.jsonl");
    let full = env.run(&["check", "-s", "s.yaml", "--format", "json", filter, plain]);
    for (name, path) in [("a.json", filter), ("b.json", plain)] {
        let r = env.run(&["check", "-s", "s.yaml", "--format", "json", "--partial", path]);
        env.write(name, &r.stdout);
    }
    let merged = env.run(&["merge", "b.json", "a.json", "--format", "json"]);
    assert_eq!(merged.stdout, full.stdout);
    assert!(full.stdout.contains("\"index\""), "{}", full.stdout);
    // The filter drops planted rows: fewer rows and violations than stored.
    assert!(want["filter"]["rows"].as_u64() < want["plain"]["rows"].as_u64());
    assert!(want["filter"]["bad"].as_array().unwrap().len() < want["plain"]["bad"].as_array().unwrap().len());
    // select repeats a row: both of its indices are reported.
    assert_eq!(want["select"]["rows"], 7);
}

/// `train_test_split` writes two mappings, a filter then a shuffle two
/// more: which one the training uses is in its code, so a search of the
/// folder reads nothing there and says so (exit 2); each mapping named as
/// PATH is read as its own dataset.
#[test]
fn several_mappings_in_one_cache_folder_are_refused_until_one_is_named() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    env.python(&format!(
        r#"{PRELUDE}
ds = datasets.load_dataset('json', data_files='data.jsonl', cache_dir='c_split', split='train')
parts = ds.train_test_split(test_size=0.3, seed=0)
out = {{'train': want(parts['train'], 'train'), 'test': want(parts['test'], 'test')}}
ds = datasets.load_dataset('json', data_files='data.jsonl', cache_dir='c_chain', split='train')
kept = ds.filter(lambda e: e['key'] % 2 == 0)
out['kept'] = want(kept, 'kept')
out['chain'] = want(kept.shuffle(seed=3), 'chain')
# The mapping each dataset reads through.
for k, d in [('train', parts['train']), ('test', parts['test']), ('kept', kept)]:
    out[k]['mapping'] = os.path.relpath(d.cache_files[-1]['filename'])
json.dump(out, open('want.json', 'w'))
"#
    ));
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("want.json")).expect("want")).expect("json");
    for (dir, n) in [("c_split", 2), ("c_chain", 2)] {
        let r = env.check_json(&["-s", "s.yaml", dir], 2);
        assert_eq!(r["rows"], 0, "{dir}: nothing read: {r:#}");
        let errors = r["errors"].as_array().expect("errors");
        assert_eq!(errors.len(), 1, "{errors:#?}");
        let msg = errors[0]["message"].as_str().expect("message");
        assert!(
            msg.contains(&format!("{n} datasets index mappings here")) && msg.contains("name the mapping"),
            "{msg}"
        );
        assert!(errors[0]["file"].as_str().expect("file").starts_with(dir));
    }
    assert_eq!(
        want["train"]["rows"].as_u64().unwrap() + want["test"]["rows"].as_u64().unwrap(),
        3000
    );
    for case in ["train", "test", "kept"] {
        let w = &want[case];
        assert_dataset(&env, w["mapping"].as_str().expect("mapping"), w, case);
    }
    let chain = &want["chain"];
    let shuffle = chain["mappings"]
        .as_array()
        .expect("mappings")
        .iter()
        .find(|m| **m != want["kept"]["mapping"])
        .expect("the shuffle's mapping")
        .clone();
    assert_dataset(&env, shuffle.as_str().expect("mapping"), chain, "chain");
}

/// A mapping beside several tables (two splits) cannot say which it
/// orders: refused, named as PATH too; a mapping that points past its data
/// is an error, never a panic or a guess.
#[test]
fn a_mapping_whose_table_is_unknown_or_too_short_is_an_error() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    env.python(&format!(
        r#"{PRELUDE}
dd = datasets.load_dataset('json', data_files={{'train': 'data.jsonl', 'test': 'data.jsonl'}}, cache_dir='c_two')
sh = dd['train'].shuffle(seed=0)
json.dump({{'mapping': os.path.relpath(sh.cache_files[-1]['filename'])}}, open('want.json', 'w'))
# A mapping reaching past its table's rows, beside a one-split cache.
ds = datasets.load_dataset('json', data_files='data.jsonl', cache_dir='c_short', split='train')
d = os.path.dirname(ds.cache_files[0]['filename'])
t = pa.table({{'indices': pa.array([0, 5, 3000], pa.uint64())}})
with pa.ipc.new_stream(os.path.join(d, 'cache-bad.arrow'), t.schema) as w: w.write_table(t)
"#
    ));
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("want.json")).expect("want")).expect("json");
    let r = env.check_json(&["-s", "s.yaml", "c_two"], 2);
    let msg = r["errors"][0]["message"].as_str().expect("message").to_string();
    assert!(msg.contains("split test") && msg.contains("split train"), "{msg}");
    let mapping = want["mapping"].as_str().expect("mapping");
    let r = env.check_json(&["-s", "s.yaml", mapping], 2);
    assert_eq!(r["errors"][0]["file"], mapping);
    assert!(
        r["errors"][0]["message"].as_str().unwrap().contains("written nowhere"),
        "{r:#}"
    );
    let r = env.check_json(&["-s", "s.yaml", "c_short"], 2);
    let msg = r["errors"][0]["message"].as_str().expect("message");
    assert!(
        msg.contains("index 2 maps to row 3000, but its data files hold 3000 rows"),
        "{msg}"
    );
    // A schema that asks for `indices` reads a mapping as any table.
    env.write("i.yaml", "columns:\n  indices: {kind: index, size: 3000}\n");
    let r = env.check_json(&["-s", "i.yaml", "c_short"], 2);
    assert_eq!(r["files"], 2);
    assert_eq!(crate::util::hits(&r, "indices", "index").0, 1);
}

/// In a `save_to_disk` folder a search reads what `load_from_disk` reads
/// (the listed files); a mapping `load_from_disk(...).shuffle()` wrote
/// there, named as PATH, is read as the shuffled dataset over them, and
/// refused once a `map`'s cache file beside them could be what it orders.
#[test]
fn a_mapping_in_a_save_to_disk_folder_named_as_path() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    env.python(&format!(
        r#"{PRELUDE}
datasets.load_dataset('json', data_files='data.jsonl', split='train', cache_dir='c').save_to_disk('saved', num_shards=2)
ds = datasets.load_from_disk('saved')
sh = ds.shuffle(seed=5)
w = want(sh, 'shuffled')
w['mapping'] = os.path.relpath(sh.cache_files[-1]['filename'])
w['stored'] = want(ds, 'stored')
json.dump(w, open('want.json', 'w'))
"#
    ));
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("want.json")).expect("want")).expect("json");
    let mapping = want["mapping"].as_str().expect("mapping");
    assert!(mapping.starts_with("saved/cache-"), "{mapping}");
    assert_dataset(&env, mapping, &want, "shuffled");
    // The folder itself: the listed files as stored, the mapping skipped.
    let r = env.check_json(&["-s", "s.yaml", "saved"], 1);
    assert_eq!(r["rows"], want["stored"]["rows"]);
    assert_eq!(r["violations"], want["stored"]["bad"].as_array().expect("bad").len());
    env.python("import datasets\ndatasets.load_from_disk('saved').map(lambda e: {'label': 0})");
    let r = env.check_json(&["-s", "s.yaml", mapping], 2);
    assert!(
        r["errors"][0]["message"]
            .as_str()
            .expect("message")
            .contains("1 other data file(s) here"),
        "{r:#}"
    );
}
