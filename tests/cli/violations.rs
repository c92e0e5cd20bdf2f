//! `--violations-out`: every violation, uncapped, in examples' order, in
//! JSON Lines, CSV and Parquet; readable by DuckDB and pandas; atomic.

use serde_json::{Value, json};

use crate::util::Env;

/// Files of every table format with planted violations (labels out of
/// range, nulls, not-integers; token ids out of range and overlong rows in
/// list columns), and the schema.
const WRITE: &str = r#"
rng = np.random.default_rng(17)
n = 5000
label = rng.integers(0, 10, n)
bad = rng.choice(n, 60, replace=False); label[bad] = rng.choice([10, -1, 255, 11], 60)
ids = [list(map(int, rng.integers(0, 300, int(rng.integers(0, 40))))) for _ in range(n)]
for r in rng.choice(n, 80, replace=False):
    if ids[r]:
        ids[r][int(rng.integers(0, len(ids[r])))] = int(rng.choice([300, 301, -5]))
ids[7] = list(range(50))
lab = pa.array([None if i % 311 == 0 else int(v) for i, v in enumerate(label)], pa.int64())
t = pa.table({'label': lab, 'ids': pa.array(ids, pa.list_(pa.int32())),
              'score': pa.array(rng.random(n) * 1.02, pa.float64())})
pq.write_table(t, 'a.parquet', row_group_size=700, data_page_size=1024)
with pa.OSFile('b.arrow', 'wb') as f:
    with pa.ipc.new_file(f, t.schema) as w:
        w.write_table(t, max_chunksize=900)
df = pd.DataFrame({'label': [None if v is None else v for v in lab.to_pylist()], 'score': t['score'].to_numpy()})
df['label'] = df['label'].astype('Int64')
df.to_csv('c.csv', index=False)
with open('d.jsonl', 'w') as f:
    for i in range(n):
        f.write(json.dumps({'label': lab[i].as_py(), 'ids': ids[i], 'score': float(t['score'][i].as_py())}) + '\n')
np.save('label.npy', np.where(np.arange(n) % 311 == 0, 3, label))
"#;

const SCHEMA: &str = "version: 1\ncolumns:\n  label: {kind: class, num_classes: 10}\n  ids: {kind: index, size: 300, max_length: 40, optional: true}\n  score: {kind: range, min: 0.0, max: 1.0, optional: true}\n";

/// The report's examples of every check merged into the violations-out
/// order: (file, row, schema column, rule), stable within a row.
fn examples_in_order(report: &Value) -> Vec<Value> {
    let mut all = Vec::new();
    for (ci, c) in report["checks"].as_array().expect("checks").iter().enumerate() {
        for e in c["examples"].as_array().expect("examples") {
            all.push((
                e["file"].as_str().expect("file").to_string(),
                e["row"].as_u64().expect("row"),
                ci,
                json!({"file": e["file"], "row": e["row"], "column": c["column"], "rule": c["rule"], "value": e["value"]}),
            ));
        }
    }
    all.sort_by(|a, b| (a.0.as_bytes(), a.1, a.2).cmp(&(b.0.as_bytes(), b.1, b.2)));
    all.into_iter().map(|x| x.3).collect()
}

fn jsonl(env: &Env, name: &str) -> Vec<Value> {
    std::fs::read_to_string(env.path(name))
        .expect("violations file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn every_violation_in_examples_order_in_three_formats() {
    let env = Env::new();
    env.python(WRITE);
    env.write("s.yaml", SCHEMA);
    let files = ["a.parquet", "b.arrow", "c.csv", "d.jsonl", "label.npy"];
    let mut args = vec![
        "-s",
        "s.yaml",
        "--max-examples",
        "1000000000",
        "--violations-out",
        "all.jsonl",
    ];
    args.extend(files);
    for jobs in ["1", "2"] {
        let mut a = args.clone();
        a.extend(["-j", jobs]);
        let report = env.check_json(&a, 1);
        let want = examples_in_order(&report);
        let got: Vec<Value> = jsonl(&env, "all.jsonl")
            .into_iter()
            .map(|mut l| {
                let o = l.as_object_mut().expect("object");
                o.remove("position");
                o.remove("outer_position");
                l
            })
            .collect();
        assert_eq!(got.len() as u64, report["violations"].as_u64().expect("total"));
        assert_eq!(got, want, "-j {jobs}");
    }
    // Every file on its own has a violation of each kind it can hold.
    let lines = jsonl(&env, "all.jsonl");
    for f in files {
        assert!(lines.iter().any(|l| l["file"] == f && l["rule"] == "class"), "{f}");
    }
    // Positions of list elements: the element's index in its row, as
    // pyarrow reads the row.
    env.python(
        "t = pq.read_table('a.parquet')\n\
         ids = t['ids'].to_pylist()\n\
         out = [[r, p, v] for r, row in enumerate(ids) for p, v in enumerate(row) if v >= 300 or v < 0]\n\
         json.dump(out, open('pos.json', 'w'))",
    );
    let want: Vec<(u64, u64, i64)> =
        serde_json::from_str(&std::fs::read_to_string(env.path("pos.json")).expect("pos")).expect("json");
    let got: Vec<(u64, u64, i64)> = lines
        .iter()
        .filter(|l| l["file"] == "a.parquet" && l["rule"] == "index")
        .map(|l| {
            (
                l["row"].as_u64().expect("row"),
                l["position"].as_u64().expect("position"),
                l["value"].as_i64().expect("value"),
            )
        })
        .collect();
    assert_eq!(got, want);
    assert!(want.len() >= 70);

    // The same records as CSV and Parquet, read by pandas and DuckDB; the
    // anti-join leaves exactly the rows without a violation.
    let mut csv = args.clone();
    csv[5] = "all.csv";
    env.check_json(&csv, 1);
    let mut parquet = args.clone();
    parquet[5] = "all.parquet";
    env.check_json(&parquet, 1);
    env.python(
        "import duckdb\n\
         lines = [json.loads(l) for l in open('all.jsonl')]\n\
         for name in ['all.csv', 'all.parquet']:\n\
         \x20   df = pd.read_csv(name, keep_default_na=False, dtype=str) if name.endswith('csv') else pd.read_parquet(name)\n\
         \x20   assert len(df) == len(lines), (name, len(df))\n\
         \x20   assert list(df['file']) == [l['file'] for l in lines]\n\
         \x20   assert [int(r) for r in df['row']] == [l['row'] for l in lines]\n\
         \x20   assert list(df['rule']) == [l['rule'] for l in lines]\n\
         \x20   want = ['' if l['value'] is None else (l['value'] if isinstance(l['value'], str) else json.dumps(l['value'])) for l in lines]\n\
         \x20   got = ['' if v is None or v != v else v for v in df['value']]\n\
         \x20   assert got == want, name\n\
         bad = duckdb.sql(\"select count(distinct row) from 'all.parquet' where file = 'a.parquet'\").fetchall()[0][0]\n\
         kept = duckdb.sql(\"select count(*) from read_parquet('a.parquet', file_row_number=true) t \
         anti join (select row from 'all.parquet' where file = 'a.parquet') v on t.file_row_number = v.row\").fetchall()[0][0]\n\
         assert kept == 5000 - bad and bad > 100, (kept, bad)",
    );
}

#[test]
fn violations_out_is_atomic_and_refuses_what_it_cannot_write() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  label: {kind: class, num_classes: 3}\n",
    );
    // Every other value bad: 5M violations, seconds of work in a debug build.
    env.python("open('big.csv', 'wb').write(b'label\\n' + b'1\\n7\\n' * 2_500_000)");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_preflight"))
        .args([
            "check",
            "-s",
            "s.yaml",
            "-j",
            "1",
            "--violations-out",
            "v.parquet",
            "big.csv",
        ])
        .current_dir(env.dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let (code, _, _) = crate::hostile::interrupt(child, std::time::Duration::from_millis(400));
    assert_eq!(code, Some(130));
    let left: Vec<String> = std::fs::read_dir(env.dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!left.iter().any(|n| n.contains("v.parquet")), "no half file: {left:?}");

    // An extension it cannot write, and stdin: usage errors before any work.
    let r = env.check_json(&["-s", "s.yaml", "--violations-out", "v.txt", "big.csv"], 2);
    assert!(
        r["errors"][0]["message"]
            .as_str()
            .expect("message")
            .contains(".jsonl, .csv or .parquet")
    );
    let (code, _, _) = env.run_piped(&["check", "-s", "s.yaml", "--violations-out", "v.csv", "-"], b"");
    assert_eq!(code, 2);
    // A folder it cannot write into: an error, exit 2, the report still out.
    let r = env.check_json(&["-s", "s.yaml", "--violations-out", "no/such/dir/v.csv", "big.csv"], 2);
    assert!(r["errors"].to_string().contains("cannot write"), "{r}");
    assert_eq!(r["checks"][0]["violations"], 2_500_000);
}

/// A run with millions of violations holds none of them: memory stays at
/// the batches in flight.
#[test]
fn millions_of_violations_in_bounded_memory() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  label: {kind: class, num_classes: 3}\n",
    );
    env.python("np.save('label.npy', np.full(3_000_000, 7, np.int64))");
    let (code, kb, _) = env.peak(&[
        "check",
        "-s",
        "s.yaml",
        "--format",
        "json",
        "--violations-out",
        "v.jsonl",
        "label.npy",
    ]);
    assert_eq!(code, 1);
    let lines = std::fs::read_to_string(env.path("v.jsonl"))
        .expect("out")
        .lines()
        .count();
    assert_eq!(lines, 3_000_000);
    assert!(kb < 150 * 1024, "peak RSS {kb} KB for 3M violations");
}
