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

/// More writers and encodings for the decoder comparison: Polars, DuckDB,
/// brotli, DELTA_BINARY_PACKED, unsigned and 64-bit lists, and Arrow
/// dictionaries written without the Arrow schema (so the reader sees plain
/// integers and decodes the indices against a dictionary holding an
/// out-of-range entry: unused in one file, used only in a late page in the
/// other).
const MORE: &str = r#"
import polars as pl, duckdb
t = pq.read_table('nostats_none_1.0.parquet')
pl.from_arrow(t).write_parquet('polars.parquet', row_group_size=3000, data_page_size=4096, statistics=False)
pl.from_arrow(t).write_parquet('polars_stats.parquet', compression='snappy')
con = duckdb.connect(); con.register('t', t)
for v in ['V1', 'V2']:
    con.execute(f"COPY t TO 'duckdb_{v}.parquet' (FORMAT parquet, ROW_GROUP_SIZE 2048, PARQUET_VERSION {v})")
pq.write_table(t, 'brotli_v2.parquet', compression='brotli', data_page_version='2.0', data_page_size=1500)
pq.write_table(t, 'delta.parquet', use_dictionary=False, column_encoding={'label': 'DELTA_BINARY_PACKED', 'ids': 'DELTA_BINARY_PACKED'},
               data_page_size=1000, row_group_size=5000)
wide = pa.table({'label': t['label'].cast(pa.uint64(), safe=False), 'ids': t['ids'].cast(pa.large_list(pa.uint16()))})
pq.write_table(wide, 'unsigned.parquet', compression='zstd', data_page_size=3000)
n = 12000
d = pa.DictionaryArray.from_arrays(pa.array([i % 2 for i in range(n)], pa.int32()), pa.array([0, 1, 99], pa.int64()))
pq.write_table(pa.table({'label': d}), 'unused_noschema.parquet', store_schema=False, row_group_size=4000)
idx = [i % 2 for i in range(n)]; idx[-1] = 2
d2 = pa.DictionaryArray.from_arrays(pa.array(idx, pa.int32()), pa.array([0, 1, 99], pa.int64()))
pq.write_table(pa.table({'label': d2}), 'late_noschema.parquet', store_schema=False, row_group_size=4000, data_page_size=1024)
assert pq.read_schema('late_noschema.parquet').field('label').type == pa.int64()
"#;

/// `preflight check --format json ARGS`, with the Parquet decoder forced to
/// arrow-rs or left to preflight's own: (exit code, stdout bytes).
fn run_with_decoder(env: &Env, args: &[&str], arrow_rs: bool) -> (i32, String) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_preflight"));
    cmd.args(["check", "--format", "json"])
        .args(args)
        .current_dir(env.dir.path());
    if arrow_rs {
        cmd.env("PREFLIGHT_PARQUET_DECODER", "arrow-rs");
    } else {
        cmd.env_remove("PREFLIGHT_PARQUET_DECODER");
    }
    let out = cmd.output().expect("run preflight");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Every path on the same files gives one report: preflight's own value
/// decoding and arrow-rs's, with and without `--full-scan` (statistics,
/// dictionary proofs and levels in the run without), byte for byte.
#[test]
fn own_decoding_and_arrow_rs_give_one_report() {
    let env = Env::new();
    env.python(WRITE);
    env.python(MORE);
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  label: {kind: class, num_classes: 10}\n  ids: {kind: index, size: 500, max_length: 32}\n",
    );
    let mut files: Vec<String> = std::fs::read_dir(env.dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".parquet") && !n.contains("entry") && !n.contains("noschema"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 18);
    for f in &files {
        let args = ["-s", "s.yaml", "--max-examples", "1000", f.as_str()];
        let full = ["-s", "s.yaml", "--max-examples", "1000", "--full-scan", f.as_str()];
        let own_full = run_with_decoder(&env, &full, false);
        assert_eq!(own_full.0, 1, "{f}: {}", own_full.1);
        assert_eq!(own_full, run_with_decoder(&env, &full, true), "{f}: full scans differ");
        let own = run_with_decoder(&env, &args, false);
        assert_eq!(own, run_with_decoder(&env, &args, true), "{f}: default runs differ");
        assert_eq!(own, own_full, "{f}: the default run differs from the full scan");
        let report: serde_json::Value = serde_json::from_str(&own.1).expect("json");
        assert_eq!(hits(&report, "label", "class").0, 2, "{f}");
        let (n, ex) = hits(&report, "ids", "index");
        assert_eq!((n, ex[0].1), (1, 9000), "{f}");
    }
    env.write(
        "c.yaml",
        "version: 1\ncolumns:\n  label: {kind: class, num_classes: 10}\n",
    );
    for (f, code) in [("unused_noschema.parquet", 0), ("late_noschema.parquet", 1)] {
        let mut reports = Vec::new();
        for full in [false, true] {
            for arrow_rs in [false, true] {
                let mut args = vec!["-s", "c.yaml", f];
                if full {
                    args.push("--full-scan");
                }
                let run = run_with_decoder(&env, &args, arrow_rs);
                assert_eq!(run.0, code, "{f}: {}", run.1);
                reports.push(run.1);
            }
        }
        assert!(reports.iter().all(|r| r == &reports[0]), "{f}: {reports:#?}");
        let report: serde_json::Value = serde_json::from_str(&reports[0]).expect("json");
        let (n, ex) = hits(&report, "label", "class");
        if code == 1 {
            assert_eq!((n, ex[0].1, ex[0].2.clone()), (1, 11999, serde_json::json!(99)));
        } else {
            assert_eq!(n, 0);
        }
    }
}

/// Token lists without nulls, the case `--full-scan` proves page by page
/// where the values lie: offending ids as an RLE run of one index, bit
/// packed, at a row's start and end, in the last row; an int8 mask with a
/// bad value in one row; files from pyarrow (dictionary and PLAIN, v1 and
/// v2 pages, codecs), Polars and DuckDB, small pages and row groups.
const LISTS: &str = r#"
import polars as pl, duckdb
rng = np.random.default_rng(23)
n = 8000
rows = [[int(x) for x in rng.integers(0, 500, int(rng.integers(0, 30)))] for _ in range(n)]
rows[100] = [500] * 20
rows[2001] = rows[2001] + [501]
rows[4321] = [-1] + rows[4321]
rows[6000] = list(range(40))
rows[7999] = [499, 500]
mask = [[int(x) for x in rng.integers(0, 2, len(r))] for r in rows]
mask[3000] = [1, 2, 0]
t = pa.table({'ids': pa.array(rows, pa.list_(pa.int32())), 'mask': pa.array(mask, pa.list_(pa.int8()))})
for codec in ['none', 'zstd', 'snappy', 'gzip']:
    for v in ['1.0', '2.0']:
        for dic in [False, True]:
            pq.write_table(t, f'pa_{codec}_{v}_{dic}.parquet', compression=codec, data_page_version=v,
                           use_dictionary=dic, data_page_size=1024, row_group_size=1000, write_statistics=False)
pl.from_arrow(t).write_parquet('polars.parquet', row_group_size=1000, data_page_size=2048)
con = duckdb.connect(); con.register('t', t)
for v in ['V1', 'V2']:
    con.execute(f"COPY t TO 'duckdb_{v}.parquet' (FORMAT parquet, ROW_GROUP_SIZE 2048, PARQUET_VERSION {v})")
bad = [[i, x] for i, r in enumerate(rows) for x in r if not 0 <= x < 500]
json.dump({'ids': bad, 'long': [i for i, r in enumerate(rows) if len(r) > 32],
           'mask': [[i, x] for i, r in enumerate(mask) for x in r if x not in (0, 1)]}, open('truth.json', 'w'))
"#;

/// Every path gives one report on token lists (#19): the own decoder
/// proving pages against the rules, arrow-rs, and the default run
/// (statistics where the writer kept them), byte for byte; the violations
/// are exactly those of the values pyarrow wrote, in row order.
#[test]
fn proven_pages_give_the_arrow_rs_report() {
    let env = Env::new();
    env.python(LISTS);
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  ids: {kind: index, size: 500, max_length: 32}\n  mask: {kind: values, allowed: [0, 1]}\n",
    );
    let truth: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("truth.json")).expect("truth")).expect("json");
    let pairs = |v: &serde_json::Value| -> Vec<(u64, i64)> {
        v.as_array()
            .expect("pairs")
            .iter()
            .map(|p| (p[0].as_u64().expect("row"), p[1].as_i64().expect("value")))
            .collect()
    };
    let mut files: Vec<String> = std::fs::read_dir(env.dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".parquet"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 19);
    for f in &files {
        let full = ["-s", "s.yaml", "--max-examples", "1000", "--full-scan", f.as_str()];
        let own = run_with_decoder(&env, &full, false);
        assert_eq!(own.0, 1, "{f}: {}", own.1);
        assert_eq!(own, run_with_decoder(&env, &full, true), "{f}: full scans differ");
        let default = ["-s", "s.yaml", "--max-examples", "1000", f.as_str()];
        assert_eq!(
            own,
            run_with_decoder(&env, &default, false),
            "{f}: the default run differs"
        );
        let report: serde_json::Value = serde_json::from_str(&own.1).expect("json");
        for (column, rule, key) in [("ids", "index", "ids"), ("mask", "values", "mask")] {
            let (n, ex) = hits(&report, column, rule);
            let got: Vec<(u64, i64)> = ex.iter().map(|e| (e.1, e.2.as_i64().expect("int"))).collect();
            let want = pairs(&truth[key]);
            assert_eq!((n as usize, got), (want.len(), want), "{f} {column}");
        }
        let long: Vec<u64> = hits(&report, "ids", "max_length").1.iter().map(|e| e.1).collect();
        let want: Vec<u64> = truth["long"]
            .as_array()
            .expect("long")
            .iter()
            .map(|v| v.as_u64().expect("row"))
            .collect();
        assert_eq!(long, want, "{f}");
    }
}
