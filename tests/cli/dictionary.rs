//! Dictionary proofs (#19): a Parquet column chunk whose data pages are all
//! dictionary-encoded is bounded by its dictionary, so a file without
//! statistics can still be proven from one small page. Whatever path a
//! chunk takes, the report must be the full scan's, byte for byte.

use crate::util::{Env, hits};

/// pyarrow files without statistics: flat and list columns, nulls and
/// empty lists, every codec and page version, violations in some row groups
/// only, a dictionary with an unused out-of-range entry, one whose
/// out-of-range entry is used only in a late page, and a writer that fell
/// back from its dictionary to plain pages.
const WRITE: &str = r#"
rng = np.random.default_rng(19)
n = 12000
labels = rng.integers(0, 10, n).astype(np.int64)
labels[7000] = 10; labels[11999] = -1
lab = pa.array([None if i % 97 == 0 else int(v) for i, v in enumerate(labels)], pa.int64())
rows = []
for i in range(n):
    u = rng.random()
    rows.append(None if u < 0.02 else [] if u < 0.04 else [int(x) for x in rng.integers(0, 500, int(rng.integers(1, 20)))])
rows[9000] = [1, 2, 500]          # an id == size, in the third row group
rows[3001] = list(range(40))      # longer than max_length 32
ids = pa.array(rows, pa.list_(pa.int32()))
t = pa.table({'label': lab, 'ids': ids})
files = []
for codec in ['none', 'snappy', 'zstd', 'gzip', 'lz4']:
    for v in ['1.0', '2.0']:
        name = f'nostats_{codec}_{v}.parquet'
        pq.write_table(t, name, compression=codec, data_page_version=v, write_statistics=False,
                       row_group_size=4000, data_page_size=2048)
        files.append(name)
# A dictionary page too small for the values: pages fall back to plain.
pq.write_table(t, 'fallback.parquet', write_statistics=False, dictionary_pagesize_limit=64, row_group_size=4000)
files.append('fallback.parquet')
# Arrow dictionaries are written as they are: entry 99 is in every chunk's
# dictionary; no row uses it in the first file, the last row does in the second.
d = pa.DictionaryArray.from_arrays(pa.array([i % 2 for i in range(n)], pa.int32()), pa.array([0, 1, 99], pa.int64()))
pq.write_table(pa.table({'label': d}), 'unused_entry.parquet', write_statistics=False, row_group_size=4000)
idx = [i % 2 for i in range(n)]; idx[-1] = 2
d2 = pa.DictionaryArray.from_arrays(pa.array(idx, pa.int32()), pa.array([0, 1, 99], pa.int64()))
pq.write_table(pa.table({'label': d2}), 'late_entry.parquet', write_statistics=False, row_group_size=4000, data_page_size=1024)
pf = pq.ParquetFile('unused_entry.parquet')
assert pf.metadata.row_group(0).column(0).statistics is None
json.dump(files, open('files.json', 'w'))
"#;

#[test]
fn dictionary_proofs_give_the_full_scan_report() {
    let env = Env::new();
    env.python(WRITE);
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  label: {kind: class, num_classes: 10}\n  ids: {kind: index, size: 500, max_length: 32}\n",
    );
    let files: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(env.path("files.json")).expect("files")).expect("json");
    assert_eq!(files.len(), 11);
    for f in &files {
        let fast = env.check_json(&["-s", "s.yaml", "--max-examples", "100", f], 1);
        let full = env.check_json(&["-s", "s.yaml", "--max-examples", "100", "--full-scan", f], 1);
        assert_eq!(fast, full, "{f}");
        assert_eq!(hits(&fast, "label", "class").0, 2, "{f}");
        assert_eq!(hits(&fast, "label", "null").0, 124, "{f}");
        let (n, ex) = hits(&fast, "ids", "index");
        assert_eq!((n, ex[0].1), (1, 9000), "{f}");
        assert_eq!(hits(&fast, "ids", "max_length").1[0].1, 3001, "{f}");
        assert_eq!(hits(&fast, "ids", "null").0, rows_of_nulls(&env), "{f}");
    }
    // All files in one run, on one thread and on two: one report.
    let mut args = vec!["-s", "s.yaml", "--max-examples", "100000"];
    args.extend(files.iter().map(String::as_str));
    let mut full = args.clone();
    full.extend(["--full-scan", "-j1"]);
    assert_eq!(env.check_json(&args, 1), env.check_json(&full, 1));

    // An entry no row uses is not a value; one used in a late page is found.
    env.write(
        "c.yaml",
        "version: 1\ncolumns:\n  label: {kind: class, num_classes: 10}\n",
    );
    let unused = env.check_json(&["-s", "c.yaml", "unused_entry.parquet"], 0);
    assert_eq!(
        unused,
        env.check_json(&["-s", "c.yaml", "--full-scan", "unused_entry.parquet"], 0)
    );
    let late = env.check_json(&["-s", "c.yaml", "late_entry.parquet"], 1);
    assert_eq!(
        late,
        env.check_json(&["-s", "c.yaml", "--full-scan", "late_entry.parquet"], 1)
    );
    let (n, ex) = hits(&late, "label", "class");
    assert_eq!((n, ex[0].1, ex[0].2.clone()), (1, 11999, serde_json::json!(99)));
}

/// Null rows of the `ids` column as pyarrow reads them.
fn rows_of_nulls(env: &Env) -> u64 {
    env.python("t = pq.read_table('nostats_none_1.0.parquet')\nopen('nulls.txt', 'w').write(str(t['ids'].null_count))");
    std::fs::read_to_string(env.path("nulls.txt"))
        .expect("nulls")
        .trim()
        .parse()
        .expect("count")
}
