//! `preflight filter`: the copy holds exactly the input rows minus the
//! violating ones, keeps schema, row groups and codecs, and re-checks clean;
//! the input is never touched.

use crate::util::Env;

const WRITE: &str = r#"
rng = np.random.default_rng(5)
n = 9000
label = rng.integers(0, 10, n); label[[3, 4000, 8999]] = [10, -1, 12]
ids = [list(map(int, rng.integers(0, 100, int(rng.integers(0, 30))))) for _ in range(n)]
ids[10] = [1, 100]; ids[5000] = [None, 3]; ids[6000] = list(range(40))
t = pa.table({'label': pa.array(label, pa.int64()), 'ids': pa.array(ids, pa.list_(pa.int32())),
              'name': pa.array([f'r{i}' for i in range(n)])},
             metadata={'origin': 'test'})
pq.write_table(t, 'a.parquet', compression='zstd', row_group_size=2000)
pq.write_table(t.slice(0, 100), 'clean.parquet', compression='snappy')
t.slice(0, 50).to_pandas()[['label']].to_csv('b.csv', index=False)
# What filter must keep, computed here from pyarrow's reading.
bad = set([3, 4000, 8999, 10, 5000, 6000])
keep = [i for i in range(n) if i not in bad]
json.dump(sorted(bad), open('bad.json', 'w'))
pq.write_table(t.take(keep), 'expected.parquet')
"#;

#[test]
fn filter_drops_exactly_the_violating_rows_and_keeps_the_rest_as_it_was() {
    let env = Env::new();
    env.python(WRITE);
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  label: {kind: class, num_classes: 10}\n  ids: {kind: index, size: 100, max_length: 32}\n",
    );
    let before = std::fs::read(env.path("a.parquet")).expect("input");
    let r = env.run(&["filter", "-s", "s.yaml", "a.parquet", "clean.parquet", "--out", "out"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(
        std::fs::read(env.path("a.parquet")).expect("input"),
        before,
        "input untouched"
    );
    // The copy re-checks clean.
    env.check_json(&["-s", "s.yaml", "out/a.parquet", "out/clean.parquet"], 0);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("out/preflight-filter.json")).expect("manifest"))
            .expect("json");
    let bad: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("bad.json")).expect("bad")).expect("json");
    assert_eq!(manifest["files"][0]["file"], "a.parquet");
    assert_eq!(manifest["files"][0]["dropped"], bad);
    assert_eq!(manifest["files"][0]["kept"], 9000 - 6);
    assert_eq!(
        manifest["files"][1]["dropped"],
        serde_json::json!([3, 10]),
        "the first 100 rows hold two"
    );
    // Rows, schema (with its metadata), row groups and codecs as they were.
    env.python(
        "got = pq.read_table('out/a.parquet'); want = pq.read_table('expected.parquet')\n\
         assert got.equals(want), 'rows'\n\
         assert got.schema.equals(pq.read_table('a.parquet').schema, check_metadata=True), 'schema'\n\
         assert got.schema.metadata[b'origin'] == b'test'\n\
         m, i = pq.ParquetFile('out/a.parquet').metadata, pq.ParquetFile('a.parquet').metadata\n\
         assert m.num_row_groups == i.num_row_groups == 5, (m.num_row_groups, i.num_row_groups)\n\
         assert [m.row_group(g).num_rows for g in range(5)] == [1998, 2000, 1998, 1999, 999]\n\
         assert all(m.row_group(0).column(c).compression == 'ZSTD' for c in range(m.num_columns))\n\
         assert pq.ParquetFile('out/clean.parquet').metadata.row_group(0).column(0).compression == 'SNAPPY'",
    );
}

#[test]
fn filter_refuses_other_formats_and_writing_over_its_input() {
    let env = Env::new();
    env.python(WRITE);
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  label: {kind: class, num_classes: 10}\n",
    );
    let r = env.run(&["filter", "-s", "s.yaml", "a.parquet", "b.csv", "--out", "out"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("b.csv") && r.stderr.contains("Parquet only"),
        "{}",
        r.stderr
    );
    assert!(env.path("out/a.parquet").exists(), "the Parquet file is still written");
    let before = std::fs::read(env.path("a.parquet")).expect("input");
    let r = env.run(&["filter", "-s", "s.yaml", "a.parquet", "--out", "."]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("is the input itself"), "{}", r.stderr);
    assert_eq!(std::fs::read(env.path("a.parquet")).expect("input"), before);
}
